//! 2026-07-28 multi-round-trip input: asks become `inputRequests`, answers come back as
//! `inputResponses`, and earlier answers ride along in a sealed `requestState`.
//!
//! A call is re-run from the start on every round. Its asks are keyed by name when the
//! tool gives one, else by order (`ask-0`, `ask-1`, …), so a re-run asks the same
//! questions under the same keys and gets the answers the client already gave.

use std::collections::BTreeMap;
use std::sync::Arc;

use mcpwire_model::types::ClientCapabilities;
use mcpwire_model::{ClientAsk, McpError, Raw, to_raw};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::StateKey;

/// The answers known so far and the asks still open, for one call.
#[derive(Debug, Default)]
pub(crate) struct InputRound {
    answers: BTreeMap<String, Raw>,
    next: usize,
    pending: Vec<(String, ClientAsk)>,
    caps: Arc<ClientCapabilities>,
    key: Option<StateKey>,
}

#[derive(Deserialize)]
struct InputFields {
    #[serde(rename = "inputResponses", default)]
    input_responses: Option<BTreeMap<String, Raw>>,
    #[serde(rename = "requestState", default)]
    request_state: Option<String>,
}

/// −32021 unless the client declared the capability `ask` needs.
pub(crate) fn check_capability(c: &ClientCapabilities, ask: &ClientAsk) -> Result<(), McpError> {
    let Some(cap) = ask.required_capability() else {
        return Ok(());
    };
    let has = match cap {
        "sampling" => c.sampling.is_some(),
        "elicitation" => c.elicitation.is_some(),
        _ => c.roots.is_some(),
    };
    if has {
        return Ok(());
    }
    Err(missing_capability(cap, serde_json::json!({ cap: {} })))
}

/// The client lacks capability `what`; `required` is shaped like the client's `capabilities`
/// (`data.requiredCapabilities`).
pub(crate) fn missing_capability(what: &str, required: serde_json::Value) -> McpError {
    McpError::MissingCapability {
        capability: what.to_owned(),
        required,
    }
}

impl InputRound {
    /// Reads `inputResponses` and `requestState` from a request's raw params.
    pub(crate) fn from_params(
        params: Option<&RawValue>,
        caps: Arc<ClientCapabilities>,
        key: StateKey,
    ) -> Result<InputRound, McpError> {
        // Every field named: a defaulted one would make an empty capability set to drop.
        let mut round = InputRound {
            answers: BTreeMap::new(),
            next: 0,
            pending: Vec::new(),
            caps,
            key: Some(key),
        };
        let Some(p) = params else { return Ok(round) };
        if !p.get().contains("\"inputResponses\"") && !p.get().contains("\"requestState\"") {
            return Ok(round);
        }
        let f: InputFields = match serde_json::from_str(p.get()) {
            Ok(f) => f,
            // Malformed responses are treated as absent: the client is asked again.
            Err(_) => return Ok(round),
        };
        if let Some(state) = f.request_state {
            let bad = || McpError::InvalidParams("requestState integrity check failed".into());
            let key = round.key.as_ref().ok_or_else(bad)?;
            let bytes = key.open(&state).ok_or_else(bad)?;
            let earlier: BTreeMap<String, Raw> =
                serde_json::from_slice(&bytes).map_err(|_| bad())?;
            round.answers.extend(earlier);
        }
        if let Some(responses) = f.input_responses {
            round.answers.extend(responses);
        }
        Ok(round)
    }

    /// The answer to an ask under `key` (or the next ordinal key), or records the ask and
    /// returns [`McpError::InputRequired`]. Returns the key used.
    pub(crate) fn ask(
        &mut self,
        key: Option<&str>,
        ask: ClientAsk,
    ) -> (String, Result<Raw, McpError>) {
        let key = match key {
            Some(k) => k.to_owned(),
            None => {
                let k = format!("ask-{}", self.next);
                self.next += 1;
                k
            }
        };
        if let Err(e) = check_capability(&self.caps, &ask) {
            return (key, Err(e));
        }
        if let Some(answer) = self.answers.get(&key) {
            return (key, Ok(answer.clone()));
        }
        self.pending.push((key.clone(), ask));
        (key, Err(McpError::InputRequired))
    }

    /// The keys answered so far.
    pub(crate) fn answered_keys(&self) -> Vec<String> {
        self.answers.keys().cloned().collect()
    }

    /// The client's answer under `key` was unusable: forget it and ask again.
    pub(crate) fn reask(&mut self, key: String, ask: ClientAsk) {
        self.answers.remove(&key);
        self.pending.push((key, ask));
    }

    /// The `input_required` result asking for what is still open.
    pub(crate) fn into_result(self) -> Result<Raw, McpError> {
        if self.pending.is_empty() {
            return Err(McpError::Internal(
                "input required but nothing was asked".into(),
            ));
        }
        #[derive(Serialize)]
        struct Req<'a> {
            method: &'a str,
            #[serde(skip_serializing_if = "Option::is_none")]
            params: Option<&'a RawValue>,
        }
        let requests: BTreeMap<&str, Req<'_>> = self
            .pending
            .iter()
            .map(|(k, a)| {
                (
                    k.as_str(),
                    Req {
                        method: &a.method,
                        params: a.params.as_deref(),
                    },
                )
            })
            .collect();
        let state =
            serde_json::to_vec(&self.answers).map_err(|e| McpError::Internal(e.to_string()))?;
        let sealed = self.key.as_ref().map(|k| k.seal(&state));
        let mut out = serde_json::json!({
            "resultType": "input_required",
            "inputRequests": requests,
        });
        if let Some(s) = sealed {
            out["requestState"] = s.into();
        }
        Ok(to_raw(&out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask() -> ClientAsk {
        ClientAsk {
            method: "roots/list".into(),
            params: None,
        }
    }

    fn caps() -> Arc<ClientCapabilities> {
        Arc::new(ClientCapabilities {
            roots: Some(serde_json::json!({})),
            ..Default::default()
        })
    }

    fn round(params: serde_json::Value, key: &StateKey) -> Result<InputRound, McpError> {
        InputRound::from_params(Some(&to_raw(&params)), caps(), key.clone())
    }

    #[test]
    fn asks_in_order_and_carries_earlier_answers() {
        let key = StateKey::random();
        let mut r = round(serde_json::json!({}), &key).unwrap();
        assert!(matches!(r.ask(None, ask()).1, Err(McpError::InputRequired)));
        let result: serde_json::Value =
            serde_json::from_str(r.into_result().unwrap().get()).unwrap();
        assert_eq!(result["inputRequests"]["ask-0"]["method"], "roots/list");

        let mut r = round(
            serde_json::json!({"inputResponses": {"ask-0": {"roots": []}}}),
            &key,
        )
        .unwrap();
        assert_eq!(r.ask(None, ask()).1.unwrap().get(), r#"{"roots":[]}"#);
        assert!(r.ask(None, ask()).1.is_err());
        let result: serde_json::Value =
            serde_json::from_str(r.into_result().unwrap().get()).unwrap();
        let state = result["requestState"].as_str().unwrap().to_owned();

        let mut r = round(
            serde_json::json!({"inputResponses": {"ask-1": {"roots": []}}, "requestState": state}),
            &key,
        )
        .unwrap();
        assert!(r.ask(None, ask()).1.is_ok());
        assert!(r.ask(None, ask()).1.is_ok());

        let tampered = serde_json::json!({"requestState": format!("{state}-TAMPERED")});
        assert!(round(tampered, &key).is_err());
    }

    #[test]
    fn missing_capability_is_refused() {
        let mut r = InputRound::from_params(None, Arc::default(), StateKey::random()).unwrap();
        let (_, res) = r.ask(Some("k"), ask());
        let Err(McpError::MissingCapability { capability, .. }) = res else {
            panic!("expected a missing capability")
        };
        assert_eq!(capability, "roots");
    }
}
