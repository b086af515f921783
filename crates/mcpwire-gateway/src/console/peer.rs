//! A console call's client: progress and logs go to the page as events; elicitation and
//! sampling requests are asked in the page and answered there; roots are none.

use mcpwire_model::types::ClientCapabilities;
use mcpwire_model::{CallEvent, ClientAsk, McpError, Raw};
use mcpwire_router::Peer;
use mcpwire_server::admin::console::asks::PageLink;
use serde_json::{Value, json};

/// The page a console call reports to and asks.
pub(super) struct ConsolePeer {
    pub(super) page: PageLink,
}

/// What the console says it can answer: form elicitation and sampling (by a person
/// typing), and roots (none).
pub(super) fn capabilities() -> ClientCapabilities {
    ClientCapabilities {
        roots: Some(json!({})),
        sampling: Some(json!({})),
        elicitation: Some(json!({ "form": {} })),
        ..ClientCapabilities::default()
    }
}

impl Peer for ConsolePeer {
    fn event(&self, event: CallEvent) {
        let v = match event {
            CallEvent::Progress(p) => json!({
                "kind": "progress",
                "progress": p.progress,
                "total": p.total,
                "message": p.message,
            }),
            CallEvent::Log(l) => json!({
                "kind": "log",
                "level": l.level,
                "logger": l.logger,
                "data": serde_json::from_str::<Value>(l.data.get()).unwrap_or(Value::Null),
            }),
        };
        // A page that lags loses events rather than growing a queue.
        self.page.event(v);
    }

    fn ask(&self, ask: ClientAsk) -> mcpwire_router::BoxFuture<'static, Result<Raw, McpError>> {
        let page = self.page.clone();
        Box::pin(async move {
            let method = ask.method.as_ref();
            if method == "roots/list" {
                return to_raw(&json!({ "roots": [] }));
            }
            if !matches!(method, "elicitation/create" | "sampling/createMessage") {
                return Err(McpError::MethodNotFound(method.to_owned()));
            }
            let params = match &ask.params {
                Some(p) => serde_json::from_str(p.get()).unwrap_or(Value::Null),
                None => Value::Null,
            };
            let answer = page
                .ask(method, params)
                .await
                .map_err(McpError::InvalidRequest)?;
            to_raw(&answer)
        })
    }
}

fn to_raw(v: &Value) -> Result<Raw, McpError> {
    serde_json::value::to_raw_value(v).map_err(|e| McpError::InvalidRequest(e.to_string()))
}
