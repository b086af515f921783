//! An OpenAPI document read from bytes (JSON or YAML), its version checked, within
//! [`Limits`].

use serde_json::Value;

use crate::OpenApiError;

/// Bounds on what a document may make the gateway do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Largest document accepted, in bytes.
    pub max_document_bytes: usize,
    /// Most operations turned into tools.
    pub max_operations: usize,
    /// How many `$ref`s deep a schema is followed; a deeper (or recursive) reference
    /// becomes `{}` (any value).
    pub max_ref_depth: usize,
    /// Most JSON nodes one tool's schema may have once resolved.
    pub max_schema_nodes: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_document_bytes: 16 << 20,
            max_operations: 2000,
            max_ref_depth: 16,
            max_schema_nodes: 20_000,
        }
    }
}

/// The OpenAPI version a document declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// 3.0.x: JSON Schema draft-04-ish with `nullable` and boolean exclusive bounds.
    V30,
    /// 3.1.x: JSON Schema 2020-12.
    V31,
}

/// A parsed document: its JSON tree and its version.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// The whole document as JSON.
    pub root: Value,
    /// Its `openapi` version.
    pub version: Version,
}

impl Document {
    /// Parses `bytes` as JSON (when it starts with `{`) or YAML.
    pub fn parse(bytes: &[u8], limits: &Limits) -> Result<Document, OpenApiError> {
        if bytes.len() > limits.max_document_bytes {
            return Err(OpenApiError::TooLarge {
                size: bytes.len(),
                max: limits.max_document_bytes,
            });
        }
        let json = bytes
            .iter()
            .find(|b| !b.is_ascii_whitespace())
            .is_some_and(|b| *b == b'{');
        let root: Value = if json {
            serde_json::from_slice(bytes).map_err(|e| OpenApiError::Syntax(e.to_string()))?
        } else {
            serde_norway::from_slice(bytes).map_err(|e| OpenApiError::Syntax(e.to_string()))?
        };
        Document::from_value(root)
    }

    /// Checks a JSON tree's version.
    pub fn from_value(root: Value) -> Result<Document, OpenApiError> {
        if !root.is_object() {
            return Err(OpenApiError::Syntax("the document is not an object".into()));
        }
        let version = match root.get("openapi").and_then(Value::as_str) {
            Some(v) if v.starts_with("3.0") => Version::V30,
            Some(v) if v.starts_with("3.1") => Version::V31,
            Some(v) => return Err(OpenApiError::Version(format!("`openapi: {v}`"))),
            None if root.get("swagger").is_some() => {
                return Err(OpenApiError::Version(
                    "a Swagger 2.0 document (convert it to OpenAPI 3 first)".into(),
                ));
            }
            None => return Err(OpenApiError::Version("no `openapi` field".into())),
        };
        if !root.get("paths").is_none_or(Value::is_object) {
            return Err(OpenApiError::Invalid("`paths` is not an object".into()));
        }
        Ok(Document { root, version })
    }

    /// The first `servers` entry's URL with its variables' defaults, if any.
    pub fn server_url(&self) -> Option<String> {
        let server = self.root.get("servers")?.as_array()?.first()?;
        let mut url = server.get("url")?.as_str()?.to_owned();
        if let Some(vars) = server.get("variables").and_then(Value::as_object) {
            for (name, var) in vars {
                if let Some(default) = var.get("default").and_then(Value::as_str) {
                    url = url.replace(&format!("{{{name}}}"), default);
                }
            }
        }
        Some(url)
    }

    /// `info.title`, `info.version`.
    pub fn info(&self) -> (String, String) {
        let get = |k: &str| {
            self.root
                .pointer(&format!("/info/{k}"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        (get("title"), get("version"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_and_json_and_versions() {
        let l = Limits::default();
        let y = Document::parse(
            b"openapi: 3.0.3\ninfo: {title: t, version: '1'}\npaths: {}\n",
            &l,
        );
        assert_eq!(y.map(|d| d.version), Ok(Version::V30));
        let j = Document::parse(br#" {"openapi":"3.1.0","paths":{}}"#, &l);
        assert_eq!(j.map(|d| d.version), Ok(Version::V31));
        assert!(matches!(
            Document::parse(b"swagger: '2.0'\n", &l),
            Err(OpenApiError::Version(_))
        ));
        assert!(matches!(
            Document::parse(b"{not json", &l),
            Err(OpenApiError::Syntax(_))
        ));
        let small = Limits {
            max_document_bytes: 4,
            ..l
        };
        assert!(matches!(
            Document::parse(b"openapi: 3.1.0", &small),
            Err(OpenApiError::TooLarge { .. })
        ));
    }

    #[test]
    fn server_variables_take_their_defaults() {
        let d = Document::parse(
            b"openapi: 3.1.0\nservers:\n- url: https://{host}/v1\n  variables: {host: {default: api.example.com}}\n",
            &Limits::default(),
        )
        .map(|d| d.server_url());
        assert_eq!(d, Ok(Some("https://api.example.com/v1".into())));
    }
}
