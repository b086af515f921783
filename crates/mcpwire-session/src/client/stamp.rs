//! Putting the client's `_meta` entries (progress token, the 2026-07-28 envelope) into a
//! request's raw params without parsing the rest.

use std::collections::BTreeMap;

use mcpwire_model::Raw;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::splice::join_objects;

/// `params` with `meta`'s entries in its `_meta` (ours win over the caller's). Params that
/// carry no `_meta` yet are spliced, not parsed: the common case costs one copy.
pub(crate) fn with_meta(
    params: Option<&RawValue>,
    meta: &Map<String, Value>,
) -> Result<Option<Raw>, String> {
    if meta.is_empty() {
        return Ok(params.map(RawValue::to_owned));
    }
    #[derive(serde::Serialize)]
    struct Ours<'a> {
        #[serde(rename = "_meta")]
        meta: &'a Map<String, Value>,
    }
    let ours = serde_json::value::to_raw_value(&Ours { meta }).map_err(|e| e.to_string())?;
    let Some(params) = params else {
        return Ok(Some(ours));
    };
    let text = params.get().trim_start();
    if !text.contains("\"_meta\"") {
        return join_objects(&ours, params)
            .map(Some)
            .ok_or_else(|| "params must be a JSON object".into());
    }
    if !text.starts_with('{') {
        return Err("params must be a JSON object".into());
    }
    // The caller sent `_meta` of its own (or a string mentions it): merge properly.
    let mut fields: BTreeMap<String, Raw> =
        serde_json::from_str(text).map_err(|e| format!("params: {e}"))?;
    let mut merged: Map<String, Value> = match fields.remove("_meta") {
        Some(m) => serde_json::from_str(m.get()).unwrap_or_default(),
        None => Map::new(),
    };
    merged.extend(meta.iter().map(|(k, v)| (k.clone(), v.clone())));
    let merged = serde_json::value::to_raw_value(&merged).map_err(|e| e.to_string())?;
    fields.insert("_meta".into(), merged);
    serde_json::value::to_raw_value(&fields)
        .map(Some)
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn meta() -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("progressToken".into(), json!(7));
        m
    }

    fn stamp(p: Option<&str>) -> Value {
        let p = p.map(|s| RawValue::from_string(s.to_owned()).unwrap());
        let out = with_meta(p.as_deref(), &meta()).unwrap().unwrap();
        serde_json::from_str(out.get()).unwrap()
    }

    #[test]
    fn splices_or_merges() {
        assert_eq!(stamp(None), json!({"_meta": {"progressToken": 7}}));
        assert_eq!(stamp(Some("{}")), json!({"_meta": {"progressToken": 7}}));
        assert_eq!(stamp(Some(" { } ")), json!({"_meta": {"progressToken": 7}}));
        assert_eq!(
            stamp(Some(r#"{"name":"x","arguments":{"a":[1]}}"#)),
            json!({"_meta": {"progressToken": 7}, "name": "x", "arguments": {"a": [1]}})
        );
        assert_eq!(
            stamp(Some(
                r#"{"name":"x","_meta":{"progressToken":1,"other":true}}"#
            )),
            json!({"_meta": {"progressToken": 7, "other": true}, "name": "x"})
        );
        assert_eq!(
            stamp(Some(r#"{"text":"say \"_meta\""}"#)),
            json!({"_meta": {"progressToken": 7}, "text": "say \"_meta\""})
        );
        let arr = RawValue::from_string("[1]".into()).unwrap();
        assert!(with_meta(Some(&arr), &meta()).is_err());
        let p = RawValue::from_string("{\"a\":1}".into()).unwrap();
        assert_eq!(
            with_meta(Some(&p), &Map::new()).unwrap().unwrap().get(),
            "{\"a\":1}"
        );
    }
}
