//! Shaping results for 2026-07-28: `resultType`, caching hints and the server's info in
//! `_meta`, spliced into the raw result without re-serializing it when possible.

use mcpwire_model::types::META_SERVER_INFO;
use mcpwire_model::{Method, Raw};
use serde_json::Value;
use serde_json::value::RawValue;

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

/// Adds `resultType: "complete"` (unless present), caching hints for cacheable methods and
/// `_meta[serverInfo]` to a raw result object.
pub(crate) fn decorate_modern(result: Raw, method: &Method, server_info_json: &RawValue) -> Raw {
    let s = result.get().trim();
    if !(s.starts_with('{') && s.ends_with('}')) {
        return result;
    }
    let cacheable = is_cacheable(method);
    if s.contains("\"_meta\"") || s.contains("\"resultType\"") {
        return decorate_parsed(&result, cacheable, server_info_json).unwrap_or(result);
    }
    const COMPLETE: &str = "{\"resultType\":\"complete\",";
    const CACHING: &str = "\"ttlMs\":0,\"cacheScope\":\"private\",";
    const META: &str = "\"_meta\":{\"";
    // Exactly what is written (a capacity short of it grew the string once per result).
    let len = COMPLETE.len()
        + if cacheable { CACHING.len() } else { 0 }
        + META.len()
        + META_SERVER_INFO.len()
        + 2
        + server_info_json.get().len()
        + 1
        + s.len();
    let mut out = String::with_capacity(len);
    out.push_str(COMPLETE);
    if cacheable {
        out.push_str(CACHING);
    }
    out.push_str(META);
    out.push_str(META_SERVER_INFO);
    out.push_str("\":");
    out.push_str(server_info_json.get());
    out.push('}');
    let inner = s[1..s.len() - 1].trim();
    if !inner.is_empty() {
        out.push(',');
        out.push_str(inner);
    }
    out.push('}');
    RawValue::from_string(out).unwrap_or(result)
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
        let info = raw(r#"{"name":"s","version":"1"}"#);
        let out = decorate_modern(raw(r#"{"tools":[]}"#), &Method::ToolsList, &info);
        let v: Value = serde_json::from_str(out.get()).unwrap();
        assert_eq!(v["resultType"], "complete");
        assert_eq!(v["ttlMs"], 0);
        assert_eq!(v["cacheScope"], "private");
        assert_eq!(v["tools"], serde_json::json!([]));
        assert_eq!(v["_meta"][META_SERVER_INFO]["name"], "s");
        let out = decorate_modern(raw("{}"), &Method::ToolsCall, &info);
        let v: Value = serde_json::from_str(out.get()).unwrap();
        assert_eq!(v["resultType"], "complete");
        assert!(v.get("ttlMs").is_none());
    }

    #[test]
    fn merges_existing_meta() {
        let info = raw(r#"{"name":"s","version":"1"}"#);
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
