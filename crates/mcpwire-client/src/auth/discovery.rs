//! Finding the authorization server of a protected MCP server, in the order MCP 2025-11-25
//! gives: the protected-resource metadata (RFC 9728) at the challenge's
//! `resource_metadata`, then at the well-known URIs (path-based, then root); then the
//! authorization server's metadata (RFC 8414, then OpenID Connect Discovery, with path
//! insertion before path appending). Metadata whose `issuer` is not the one the URL was
//! built from is refused (RFC 8414 §3.3). A server without protected-resource metadata is
//! treated as 2025-03-26 did: its origin is the authorization server, with `/authorize`,
//! `/token` and `/register` when it publishes no metadata either.

use hyper::Uri;
use serde::Deserialize;

use super::challenge::Challenge;
use crate::ClientError;
use crate::fetch::{Outgoing, Reach, send_via};

/// Protected-resource metadata (RFC 9728 §2), the fields used.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ResourceMetadata {
    /// The resource identifier, sent as `resource` exactly as published.
    pub(crate) resource: Option<String>,
    /// Issuers of the authorization servers that serve it.
    #[serde(default)]
    pub(crate) authorization_servers: Vec<String>,
    /// Scopes the resource knows.
    pub(crate) scopes_supported: Option<Vec<String>>,
}

/// Authorization-server metadata (RFC 8414 §2), the fields used.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ServerMetadata {
    /// Its issuer identifier.
    pub(crate) issuer: String,
    /// Where users authorize.
    pub(crate) authorization_endpoint: Option<String>,
    /// Where codes and credentials become tokens.
    pub(crate) token_endpoint: String,
    /// Dynamic client registration (RFC 7591).
    pub(crate) registration_endpoint: Option<String>,
    /// Scopes it knows (`offline_access` among them means refresh tokens on request).
    pub(crate) scopes_supported: Option<Vec<String>>,
    /// PKCE methods; absent means no PKCE, which MCP clients must refuse.
    pub(crate) code_challenge_methods_supported: Option<Vec<String>>,
    /// How clients authenticate at the token endpoint (default `client_secret_basic`).
    pub(crate) token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// Client ID metadata documents are accepted as client ids.
    #[serde(default)]
    pub(crate) client_id_metadata_document_supported: bool,
    /// RFC 9207: authorization responses carry `iss`.
    #[serde(default)]
    pub(crate) authorization_response_iss_parameter_supported: bool,
    /// RFC 9449 §5.1: DPoP proof algorithms it takes.
    pub(crate) dpop_signing_alg_values_supported: Option<Vec<String>>,
}

impl ServerMetadata {
    /// What a 2025-03-26 server without metadata is assumed to offer at `origin`.
    pub(crate) fn legacy_defaults(origin: &str) -> ServerMetadata {
        ServerMetadata {
            issuer: origin.to_owned(),
            authorization_endpoint: Some(format!("{origin}/authorize")),
            token_endpoint: format!("{origin}/token"),
            registration_endpoint: Some(format!("{origin}/register")),
            scopes_supported: None,
            code_challenge_methods_supported: Some(vec!["S256".into()]),
            token_endpoint_auth_methods_supported: None,
            client_id_metadata_document_supported: false,
            authorization_response_iss_parameter_supported: false,
            dpop_signing_alg_values_supported: None,
        }
    }

    /// Whether the token endpoint accepts `method` (absent list: `client_secret_basic`).
    pub(crate) fn accepts_auth(&self, method: &str) -> bool {
        match &self.token_endpoint_auth_methods_supported {
            Some(list) => list.iter().any(|m| m == method),
            None => method == "client_secret_basic",
        }
    }
}

/// `scheme://authority` and the path without its trailing `/` (empty for the root).
pub(crate) fn split(url: &str) -> Result<(String, String), ClientError> {
    let uri: Uri = url
        .parse()
        .map_err(|e| ClientError::Invalid(format!("`{url}` is not a URL: {e}")))?;
    let (Some(scheme), Some(authority)) = (uri.scheme_str(), uri.authority()) else {
        return Err(ClientError::Invalid(format!(
            "`{url}` is not an absolute URL"
        )));
    };
    if !matches!(scheme, "http" | "https") {
        return Err(ClientError::Invalid(format!(
            "`{url}` is not an http(s) URL"
        )));
    }
    let path = uri.path().trim_end_matches('/').to_owned();
    Ok((format!("{scheme}://{authority}"), path))
}

/// Where to look for the protected-resource metadata of the MCP endpoint `server`, in
/// order: the challenge's URL, the path-based well-known URI, the root one.
pub(crate) fn resource_metadata_urls(
    challenged: Option<&str>,
    server: &str,
) -> Result<Vec<String>, ClientError> {
    let (origin, path) = split(server)?;
    let mut urls: Vec<String> = challenged.map(str::to_owned).into_iter().collect();
    const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";
    if !path.is_empty() {
        urls.push(format!("{origin}{WELL_KNOWN}{path}"));
    }
    urls.push(format!("{origin}{WELL_KNOWN}"));
    urls.dedup();
    Ok(urls)
}

/// Where to look for the metadata of the authorization server `issuer`, in the order MCP
/// 2025-11-25 gives.
pub(crate) fn server_metadata_urls(issuer: &str) -> Result<Vec<String>, ClientError> {
    let (origin, path) = split(issuer)?;
    Ok(if path.is_empty() {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server"),
            format!("{origin}/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
            format!("{origin}{path}/.well-known/openid-configuration"),
        ]
    })
}

/// Whether the protected resource `resource` (from its metadata) covers the MCP endpoint
/// `server`: same origin, and its path is the endpoint's path or a parent of it. A
/// mismatch means the metadata is for another resource, and no token is asked for.
pub(crate) fn resource_covers(resource: &str, server: &str) -> bool {
    let (Ok((r_origin, r_path)), Ok((s_origin, s_path))) = (split(resource), split(server)) else {
        return false;
    };
    if !r_origin.eq_ignore_ascii_case(&s_origin) || resource.contains('#') {
        return false;
    }
    s_path == r_path || s_path.starts_with(&format!("{r_path}/"))
}

/// What discovery found for one MCP endpoint.
pub(crate) struct Found {
    /// The authorization server.
    pub(crate) server: ServerMetadata,
    /// The `resource` to ask tokens for.
    pub(crate) resource: Option<String>,
    /// The protected resource's `scopes_supported`.
    pub(crate) scopes_supported: Option<Vec<String>>,
}

/// The largest metadata document read.
const MAX_METADATA: usize = 256 * 1024;

/// The authorization server and resource of the MCP endpoint `server`.
pub(crate) async fn discover(
    challenge: &Challenge,
    server: &str,
    issuer_override: Option<&str>,
    reach: &Reach,
) -> Result<Found, ClientError> {
    let mut prm: Option<ResourceMetadata> = None;
    for url in resource_metadata_urls(challenge.resource_metadata.as_deref(), server)? {
        if let Some(m) = fetch_json::<ResourceMetadata>(&url, reach).await? {
            prm = Some(m);
            break;
        }
    }
    let Some(prm) = prm else {
        // 2025-03-26: no protected-resource metadata; the server's origin is the
        // authorization server, with default endpoints when it publishes no metadata.
        let (origin, _) = split(server)?;
        let issuer = issuer_override.map_or(origin, str::to_owned);
        let metadata = match server_metadata(&issuer, reach).await? {
            Some(m) => m,
            None => ServerMetadata::legacy_defaults(&issuer),
        };
        return Ok(Found {
            server: metadata,
            resource: Some(server.split('#').next().unwrap_or(server).to_owned()),
            scopes_supported: None,
        });
    };
    if let Some(r) = &prm.resource
        && !resource_covers(r, server)
    {
        return Err(ClientError::Auth(format!(
            "the protected-resource metadata of {server} is for {r}, another resource: \
             no token is asked for it"
        )));
    }
    let issuer = match (issuer_override, prm.authorization_servers.first()) {
        (Some(i), _) => i.to_owned(),
        (None, Some(i)) => i.clone(),
        (None, None) => {
            return Err(ClientError::Auth(format!(
                "the protected-resource metadata of {server} names no authorization server"
            )));
        }
    };
    let metadata = server_metadata(&issuer, reach).await?.ok_or_else(|| {
        ClientError::Auth(format!(
            "the authorization server {issuer} publishes no metadata at any of {}",
            server_metadata_urls(&issuer).unwrap_or_default().join(", ")
        ))
    })?;
    Ok(Found {
        server: metadata,
        resource: prm.resource,
        scopes_supported: prm.scopes_supported,
    })
}

/// The metadata of `issuer` from the first well-known URL that has it; metadata naming
/// another issuer is refused.
async fn server_metadata(
    issuer: &str,
    reach: &Reach,
) -> Result<Option<ServerMetadata>, ClientError> {
    for url in server_metadata_urls(issuer)? {
        if let Some(m) = fetch_json::<ServerMetadata>(&url, reach).await? {
            if m.issuer != issuer {
                return Err(ClientError::Auth(format!(
                    "the metadata at {url} names the issuer {}, not {issuer}: refused \
                     (RFC 8414 §3.3)",
                    m.issuer
                )));
            }
            return Ok(Some(m));
        }
    }
    Ok(None)
}

/// GETs `url` as JSON: `None` when it is not there (any 4xx, or not the JSON sought).
async fn fetch_json<T: serde::de::DeserializeOwned>(
    url: &str,
    reach: &Reach,
) -> Result<Option<T>, ClientError> {
    let answer = send_via(Outgoing::get(url), reach, MAX_METADATA)
        .await
        .map_err(ClientError::Auth)?;
    if !answer.status.is_success() {
        tracing::debug!(%url, status = %answer.status, "no OAuth metadata here");
        return Ok(None);
    }
    match serde_json::from_slice(&answer.body) {
        Ok(v) => Ok(Some(v)),
        Err(e) => {
            tracing::debug!(%url, error = %e, "not the OAuth metadata sought");
            Ok(None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_metadata_order() {
        assert_eq!(
            resource_metadata_urls(
                Some("https://m.example/custom.json"),
                "https://m.example/api/mcp"
            )
            .unwrap(),
            vec![
                "https://m.example/custom.json",
                "https://m.example/.well-known/oauth-protected-resource/api/mcp",
                "https://m.example/.well-known/oauth-protected-resource",
            ]
        );
        assert_eq!(
            resource_metadata_urls(None, "http://127.0.0.1:9/").unwrap(),
            vec!["http://127.0.0.1:9/.well-known/oauth-protected-resource"]
        );
    }

    #[test]
    fn server_metadata_order() {
        assert_eq!(
            server_metadata_urls("https://auth.example.com/tenant1").unwrap(),
            vec![
                "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
                "https://auth.example.com/.well-known/openid-configuration/tenant1",
                "https://auth.example.com/tenant1/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            server_metadata_urls("https://auth.example.com").unwrap(),
            vec![
                "https://auth.example.com/.well-known/oauth-authorization-server",
                "https://auth.example.com/.well-known/openid-configuration",
            ]
        );
        assert!(server_metadata_urls("urn:x").is_err());
    }

    #[test]
    fn resource_must_cover_the_endpoint() {
        assert!(resource_covers("http://l:1/mcp", "http://l:1/mcp"));
        assert!(resource_covers("http://l:1", "http://l:1/mcp"));
        assert!(resource_covers("http://l:1/", "http://l:1/mcp"));
        assert!(resource_covers("http://L:1/api", "http://l:1/api/mcp"));
        assert!(!resource_covers(
            "https://evil.example.com/mcp",
            "http://l:1/mcp"
        ));
        assert!(!resource_covers("http://l:1/mc", "http://l:1/mcp"));
        assert!(!resource_covers("http://l:2/mcp", "http://l:1/mcp"));
        assert!(!resource_covers("http://l:1/mcp/x", "http://l:1/mcp"));
    }
}
