//! The MCP authorization spec's resource-server side of HTTP: the protected resource
//! metadata document (RFC 9728) and the `WWW-Authenticate` challenges (RFC 6750) that
//! point to it.

use serde_json::{Value, json};

use super::failure::AuthFailure;

/// The RFC 9728 well-known path prefix.
pub const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// One HTTP listener as a protected resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceServer {
    /// The canonical URI of the resource (`resource` in the metadata).
    pub resource: String,
    /// Issuer URLs of the authorization servers.
    pub authorization_servers: Vec<String>,
    /// Scopes the resource knows.
    pub scopes_supported: Vec<String>,
    /// Scopes every request needs (the challenge's `scope`).
    pub required_scopes: Vec<String>,
    /// A human-readable name.
    pub resource_name: Option<String>,
}

impl ResourceServer {
    /// The metadata's path on this server: the well-known prefix followed by the resource
    /// URI's path (RFC 9728 § 3.1), e.g. `/.well-known/oauth-protected-resource/mcp`.
    pub fn metadata_path(&self) -> String {
        let path = path_of(&self.resource).trim_end_matches('/');
        format!("{WELL_KNOWN}{path}")
    }

    /// The metadata's URL, as `resource_metadata` in challenges names it.
    pub fn metadata_url(&self) -> String {
        format!("{}{}", origin_of(&self.resource), self.metadata_path())
    }

    /// The metadata document.
    pub fn document(&self) -> Value {
        let mut doc = json!({
            "resource": self.resource,
            "authorization_servers": self.authorization_servers,
            "bearer_methods_supported": ["header"],
        });
        let scopes = if self.scopes_supported.is_empty() {
            &self.required_scopes
        } else {
            &self.scopes_supported
        };
        if !scopes.is_empty() {
            doc["scopes_supported"] = json!(scopes);
        }
        if let Some(name) = &self.resource_name {
            doc["resource_name"] = json!(name);
        }
        doc
    }

    /// The `WWW-Authenticate` value refusing a request for `failure`: the metadata's URL,
    /// the scopes needed, and (unless no credential came) the RFC 6750 error.
    pub fn challenge(&self, failure: &AuthFailure) -> String {
        challenge(Some(&self.metadata_url()), &self.required_scopes, failure)
    }
}

/// A Bearer challenge (RFC 6750 § 3) for `failure`: `resource_metadata` when there is a
/// metadata document, `scope` (the scopes needed), and the error unless no credential came.
pub fn challenge(metadata_url: Option<&str>, required: &[String], failure: &AuthFailure) -> String {
    let mut params = Vec::new();
    if let Some(url) = metadata_url {
        params.push(format!("resource_metadata=\"{}\"", quote(url)));
    }
    let scopes = match failure {
        AuthFailure::InsufficientScope { required } => required.as_slice(),
        _ => required,
    };
    if !scopes.is_empty() {
        params.push(format!("scope=\"{}\"", quote(&scopes.join(" "))));
    }
    if let Some(code) = failure.bearer_error() {
        params.push(format!("error=\"{code}\""));
        params.push(format!(
            "error_description=\"{}\"",
            quote(&failure.to_string())
        ));
    }
    if params.is_empty() {
        "Bearer".to_owned()
    } else {
        format!("Bearer {}", params.join(", "))
    }
}

/// `scheme://authority` of a URI.
fn origin_of(uri: &str) -> &str {
    let start = uri.find("://").map_or(0, |i| i + 3);
    match uri[start..].find(['/', '?', '#']) {
        Some(i) => &uri[..start + i],
        None => uri,
    }
}

/// The path of a URI (without query or fragment).
fn path_of(uri: &str) -> &str {
    let rest = &uri[origin_of(uri).len()..];
    match rest.find(['?', '#']) {
        Some(i) => &rest[..i],
        None => rest,
    }
}

/// `s` safe inside a quoted-string (RFC 9110): no `"` or `\`, no control characters.
fn quote(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '"' | '\\' => '\'',
            c if c.is_control() => ' ',
            c => c,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rs(resource: &str) -> ResourceServer {
        ResourceServer {
            resource: resource.into(),
            authorization_servers: vec!["https://as.example".into()],
            scopes_supported: vec![],
            required_scopes: vec!["mcp:tools".into()],
            resource_name: None,
        }
    }

    #[test]
    fn metadata_lives_at_the_path_suffixed_well_known_uri() {
        let r = rs("https://mcp.example.com/public/mcp");
        assert_eq!(
            r.metadata_url(),
            "https://mcp.example.com/.well-known/oauth-protected-resource/public/mcp"
        );
        assert_eq!(
            rs("https://mcp.example.com").metadata_url(),
            "https://mcp.example.com/.well-known/oauth-protected-resource"
        );
        assert_eq!(
            rs("http://127.0.0.1:8/").metadata_path(),
            "/.well-known/oauth-protected-resource"
        );
        let doc = r.document();
        assert_eq!(doc["resource"], "https://mcp.example.com/public/mcp");
        assert_eq!(doc["scopes_supported"], json!(["mcp:tools"]));
    }

    #[test]
    fn challenges() {
        let r = rs("https://m.example/mcp");
        assert_eq!(
            r.challenge(&AuthFailure::Missing),
            "Bearer resource_metadata=\"https://m.example/.well-known/oauth-protected-resource/mcp\", scope=\"mcp:tools\""
        );
        let c = r.challenge(&AuthFailure::InsufficientScope {
            required: vec!["a".into(), "b".into()],
        });
        assert!(c.contains("scope=\"a b\"") && c.contains("error=\"insufficient_scope\""));
        assert!(
            r.challenge(&AuthFailure::Expired)
                .contains("error=\"invalid_token\"")
        );
    }
}
