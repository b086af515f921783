//! 2026-07-28 `input_required` results (SEP-2322): what the server needs before it can
//! finish a `tools/call`, `prompts/get` or `resources/read`, and the params of the retry.

use std::collections::BTreeMap;

use mcpwire_model::{Method, Raw};
use serde::Deserialize;
use serde_json::value::RawValue;

/// One embedded request of an `input_required` result: `{method, params}` without an id.
#[derive(Debug, Clone)]
pub struct InputRequest {
    /// The key the answer goes under in `inputResponses`.
    pub key: String,
    /// `sampling/createMessage`, `elicitation/create` or `roots/list`.
    pub method: Method,
    /// Its params, raw.
    pub params: Option<Raw>,
}

/// An `input_required` result: answer its requests and call again with
/// [`InputRequired::retry_params`] (a new request, as the protocol asks).
#[derive(Debug, Clone)]
pub struct InputRequired {
    /// `inputRequests`, in key order.
    pub input_requests: Vec<InputRequest>,
    /// `requestState`, echoed unchanged in the retry.
    pub request_state: Option<String>,
    /// The result as received.
    pub raw: Raw,
}

#[derive(Deserialize)]
struct Kind<'a> {
    #[serde(rename = "resultType", borrow, default)]
    result_type: Option<std::borrow::Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Embedded {
    method: String,
    #[serde(default)]
    params: Option<Raw>,
}

#[derive(Deserialize)]
struct Wire {
    #[serde(rename = "inputRequests", default)]
    input_requests: BTreeMap<String, Embedded>,
    #[serde(rename = "requestState", default)]
    request_state: Option<String>,
}

impl InputRequired {
    /// `Some` when `raw` is an `input_required` result (`Err` when it is one that cannot be
    /// read: neither `inputRequests` nor `requestState`, or malformed ones).
    pub(crate) fn detect(raw: &RawValue) -> Option<Result<InputRequired, String>> {
        if !raw.get().contains("input_required") {
            return None;
        }
        let kind: Kind<'_> = serde_json::from_str(raw.get()).ok()?;
        if kind.result_type.as_deref() != Some("input_required") {
            return None;
        }
        Some(match serde_json::from_str::<Wire>(raw.get()) {
            Ok(w) if w.input_requests.is_empty() && w.request_state.is_none() => {
                Err("an input_required result with neither inputRequests nor requestState".into())
            }
            Ok(w) => Ok(InputRequired {
                input_requests: w
                    .input_requests
                    .into_iter()
                    .map(|(key, e)| InputRequest {
                        key,
                        method: Method::parse(&e.method),
                        params: e.params,
                    })
                    .collect(),
                request_state: w.request_state,
                raw: raw.to_owned(),
            }),
            Err(e) => Err(format!("an unreadable input_required result: {e}")),
        })
    }

    /// The params of the retry: the original request's `params` with `inputResponses` (key →
    /// the bare result of each input request) and this result's `requestState`, replacing
    /// those of an earlier round. The session stamps `_meta` afresh when it sends the retry.
    pub fn retry_params(
        &self,
        original: Option<&RawValue>,
        responses: impl IntoIterator<Item = (String, Raw)>,
    ) -> Result<Raw, String> {
        let mut fields: BTreeMap<String, Raw> = match original {
            Some(p) => serde_json::from_str(p.get()).map_err(|e| format!("params: {e}"))?,
            None => BTreeMap::new(),
        };
        fields.remove("requestState");
        let answers: BTreeMap<String, Raw> = responses.into_iter().collect();
        let answers = serde_json::value::to_raw_value(&answers).map_err(|e| e.to_string())?;
        fields.insert("inputResponses".into(), answers);
        if let Some(state) = &self.request_state {
            let state = serde_json::value::to_raw_value(state).map_err(|e| e.to_string())?;
            fields.insert("requestState".into(), state);
        }
        serde_json::value::to_raw_value(&fields).map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn raw(v: Value) -> Raw {
        serde_json::value::to_raw_value(&v).unwrap()
    }

    #[test]
    fn detects_and_retries() {
        assert!(InputRequired::detect(&raw(json!({"content": []}))).is_none());
        assert!(
            InputRequired::detect(&raw(
                json!({"resultType": "complete", "x": "input_required"})
            ))
            .is_none()
        );
        assert!(
            InputRequired::detect(&raw(json!({"resultType": "input_required"})))
                .unwrap()
                .is_err()
        );
        let r = InputRequired::detect(&raw(json!({
            "resultType": "input_required", "requestState": "s1",
            "inputRequests": {"e1": {"method": "elicitation/create", "params": {"message": "?"}},
                              "r1": {"method": "roots/list"}}
        })))
        .unwrap()
        .unwrap();
        assert_eq!(r.input_requests.len(), 2);
        assert_eq!(r.input_requests[0].key, "e1");
        assert_eq!(r.input_requests[0].method, Method::ElicitationCreate);
        assert!(r.input_requests[1].params.is_none());
        let original = raw(json!({"name": "t", "arguments": {}, "requestState": "old",
                                  "inputResponses": {"x": {}}}));
        let retry = r
            .retry_params(
                Some(&original),
                [("e1".to_owned(), raw(json!({"action": "decline"})))],
            )
            .unwrap();
        let v: Value = serde_json::from_str(retry.get()).unwrap();
        assert_eq!(
            v,
            json!({"name": "t", "arguments": {}, "requestState": "s1",
                   "inputResponses": {"e1": {"action": "decline"}}})
        );
    }
}
