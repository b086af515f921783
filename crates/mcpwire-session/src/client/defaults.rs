//! SEP-1034 (2025-11-25): a client that declares `elicitation.form.applyDefaults` fills the
//! `default` of every field of a form elicitation's `requestedSchema` that an accepting answer
//! leaves out, before the answer goes back to the server. The session keeps each pending form
//! elicitation's defaults (bounded by the pending server requests) and applies them in
//! [`ClientSession::answer`](super::ClientSession::answer).

use mcpwire_model::types::ClientCapabilities;
use mcpwire_model::{Raw, to_raw};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// The defaults of one form elicitation, by field name.
pub(super) type FormDefaults = Box<Map<String, Value>>;

/// Whether the client promised to apply defaults: `elicitation.form.applyDefaults`, or the
/// same flag directly under `elicitation` (as the TypeScript SDK's examples declare it).
pub(super) fn promised(caps: &ClientCapabilities) -> bool {
    let Some(e) = &caps.elicitation else {
        return false;
    };
    let flag = |v: Option<&Value>| v.and_then(Value::as_bool) == Some(true);
    flag(e.pointer("/form/applyDefaults")) || flag(e.get("applyDefaults"))
}

/// The `default` of each property of a form elicitation's `requestedSchema` (None: a URL
/// elicitation, or no defaults).
pub(super) fn of_request(params: Option<&RawValue>) -> Option<FormDefaults> {
    let params: Value = serde_json::from_str(params?.get()).ok()?;
    if params.get("mode").and_then(Value::as_str) == Some("url") {
        return None;
    }
    let props = params.pointer("/requestedSchema/properties")?.as_object()?;
    let defaults: Map<String, Value> = props
        .iter()
        .filter_map(|(name, schema)| Some((name.clone(), schema.get("default")?.clone())))
        .collect();
    (!defaults.is_empty()).then(|| Box::new(defaults))
}

/// `result` with the defaults filled in, when it accepts; otherwise unchanged.
pub(super) fn apply(result: Raw, defaults: &Map<String, Value>) -> Raw {
    let Ok(Value::Object(mut answer)) = serde_json::from_str::<Value>(result.get()) else {
        return result;
    };
    if answer.get("action").and_then(Value::as_str) != Some("accept") {
        return result;
    }
    let content = answer
        .entry("content")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(content) = content else {
        return result;
    };
    for (name, value) in defaults {
        content.entry(name.clone()).or_insert_with(|| value.clone());
    }
    to_raw(&answer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn accepted_forms_get_defaults_for_what_they_leave_out() {
        let params = to_raw(
            &json!({"message": "m", "requestedSchema": {"type": "object",
            "properties": {"name": {"type": "string", "default": "Ann"},
                           "age": {"type": "integer", "default": 30},
                           "note": {"type": "string"}}}}),
        );
        let d = of_request(Some(&params)).unwrap();
        let filled = apply(
            to_raw(&json!({"action": "accept", "content": {"age": 7}})),
            &d,
        );
        let filled: Value = serde_json::from_str(filled.get()).unwrap();
        assert_eq!(filled["content"], json!({"name": "Ann", "age": 7}));
        let no_content = apply(to_raw(&json!({"action": "accept"})), &d);
        let no_content: Value = serde_json::from_str(no_content.get()).unwrap();
        assert_eq!(no_content["content"], json!({"name": "Ann", "age": 30}));
        let declined = apply(to_raw(&json!({"action": "decline"})), &d);
        assert_eq!(declined.get(), r#"{"action":"decline"}"#);
        let url = to_raw(&json!({"mode": "url", "url": "https://x", "elicitationId": "1"}));
        assert!(of_request(Some(&url)).is_none());
    }

    #[test]
    fn the_promise_is_read_from_either_place() {
        let mut caps = ClientCapabilities::default();
        assert!(!promised(&caps));
        caps.elicitation = Some(json!({"form": {"applyDefaults": true}}));
        assert!(promised(&caps));
        caps.elicitation = Some(json!({"applyDefaults": true}));
        assert!(promised(&caps));
        caps.elicitation = Some(json!({}));
        assert!(!promised(&caps));
    }
}
