//! Shaping results for 2026-07-28: `resultType`, caching hints and the server's info in
//! `_meta`, spliced into the raw result without parsing it when possible.

use mcpwire_model::types::{Implementation, META_SERVER_INFO};
use mcpwire_model::{Method, Raw, to_raw};
use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::splice::join_objects;

/// Whether 2026-07-28 results of `method` carry `ttlMs` and `cacheScope`.
pub(crate) fn is_cacheable(method: &Method) -> bool {
    matches!(
        method,
        Method::ServerDiscover
            | Method::ToolsList
            | Method::PromptsList
            | Method::ResourcesList
            | Method::ResourcesTemplatesList
            | Method::ResourcesRead
    )
}

/// What a 2026-07-28 result is given, made once per [`crate::SessionConfig`]: the
/// server's info, and the members put in front of a result that has neither `_meta` nor
/// `resultType` (with and without the caching hints).
#[derive(Debug)]
pub(crate) struct Decorations {
    /// `serverInfo` as JSON.
    pub(crate) server_info: Raw,
    /// `{"resultType":"complete","_meta":{serverInfo}}`.
    plain: Raw,
    /// As `plain`, with `ttlMs` and `cacheScope` after `resultType`.
    cacheable: Raw,
}

impl Decorations {
    /// The decorations of a server that calls itself `server_info`.
    pub(crate) fn new(server_info: &Implementation) -> Decorations {
        #[derive(Serialize)]
        struct Added<'a> {
            #[serde(rename = "resultType")]
            result_type: &'static str,
            #[serde(rename = "ttlMs", skip_serializing_if = "Option::is_none")]
            ttl_ms: Option<u32>,
            #[serde(rename = "cacheScope", skip_serializing_if = "Option::is_none")]
            cache_scope: Option<&'static str>,
            #[serde(rename = "_meta")]
            meta: Meta<'a>,
        }
        #[derive(Serialize)]
        struct Meta<'a> {
            #[serde(rename = "io.modelcontextprotocol/serverInfo")]
            server_info: &'a RawValue,
        }
        let server_info = to_raw(server_info);
        let added = |caching: bool| {
            to_raw(&Added {
                result_type: "complete",
                ttl_ms: caching.then_some(0),
                cache_scope: caching.then_some("private"),
                meta: Meta {
                    server_info: &server_info,
                },
            })
        };
        Decorations {
            plain: added(false),
            cacheable: added(true),
            server_info,
        }
    }
}

/// Adds `resultType: "complete"` (unless present), caching hints for cacheable methods and
/// `_meta[serverInfo]` to a raw result object.
pub(crate) fn decorate_modern(result: Raw, method: &Method, decorations: &Decorations) -> Raw {
    let s = result.get();
    if !s.trim_start().starts_with('{') {
        return result;
    }
    let cacheable = is_cacheable(method);
    if s.contains("\"_meta\"") || s.contains("\"resultType\"") {
        return decorate_parsed(&result, cacheable, &decorations.server_info).unwrap_or(result);
    }
    let added = if cacheable {
        &decorations.cacheable
    } else {
        &decorations.plain
    };
    join_objects(added, &result).unwrap_or(result)
}

fn decorate_parsed(result: &RawValue, cacheable: bool, server_info: &RawValue) -> Option<Raw> {
    let mut map: serde_json::Map<String, Value> = serde_json::from_str(result.get()).ok()?;
    map.entry("resultType")
        .or_insert_with(|| Value::from("complete"));
    if cacheable {
        map.entry("ttlMs").or_insert_with(|| Value::from(0));
        map.entry("cacheScope")
            .or_insert_with(|| Value::from("private"));
    }
    let info: Value = serde_json::from_str(server_info.get()).ok()?;
    match map
        .entry("_meta")
        .or_insert_with(|| Value::Object(Default::default()))
    {
        Value::Object(meta) => {
            meta.insert(META_SERVER_INFO.to_owned(), info);
        }
        _ => return None,
    }
    serde_json::value::to_raw_value(&map).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(s: &str) -> Raw {
        RawValue::from_string(s.to_owned()).unwrap()
    }

    #[test]
    fn splices_into_plain_results() {
        let info = Decorations::new(&Implementation::new("s", "1"));
        let out = decorate_modern(raw(r#"{"tools":[]}"#), &Method::ToolsList, &info);
        // The members put in front, in the order the spliced text always had.
        assert_eq!(
            out.get(),
            r#"{"resultType":"complete","ttlMs":0,"cacheScope":"private","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}},"tools":[]}"#
        );
        let v: Value = serde_json::from_str(out.get()).unwrap();
        assert_eq!(v["resultType"], "complete");
        assert_eq!(v["ttlMs"], 0);
        assert_eq!(v["cacheScope"], "private");
        assert_eq!(v["tools"], serde_json::json!([]));
        assert_eq!(v["_meta"][META_SERVER_INFO]["name"], "s");
        let out = decorate_modern(raw(" { } "), &Method::ToolsCall, &info);
        let v: Value = serde_json::from_str(out.get()).unwrap();
        assert_eq!(v["resultType"], "complete");
        assert!(v.get("ttlMs").is_none());
        // Not an object: left as it is.
        let out = decorate_modern(raw("[1]"), &Method::ToolsCall, &info);
        assert_eq!(out.get(), "[1]");
    }

    #[test]
    fn merges_existing_meta() {
        let info = Decorations::new(&Implementation::new("s", "1"));
        let out = decorate_modern(
            raw(r#"{"content":[],"_meta":{"x":1}}"#),
            &Method::ToolsCall,
            &info,
        );
        let v: Value = serde_json::from_str(out.get()).unwrap();
        assert_eq!(v["_meta"]["x"], 1);
        assert_eq!(v["_meta"][META_SERVER_INFO]["version"], "1");
        assert_eq!(v["resultType"], "complete");
    }
}
