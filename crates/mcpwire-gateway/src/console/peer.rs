//! A console call's client: progress and logs go to the page as events; elicitation (form
//! and URL mode) and sampling requests are asked in the page and answered there; roots are
//! none.

use mcpwire_model::types::ClientCapabilities;
use mcpwire_model::{CallEvent, ClientAsk, McpError, Raw};
use mcpwire_router::Peer;
use mcpwire_server::admin::console::asks::PageLink;
use serde_json::{Value, json};

/// The page a console call reports to and asks.
pub(super) struct ConsolePeer {
    pub(super) page: PageLink,
}

/// What the console says it can answer: form and URL-mode elicitation and sampling (by a
/// person typing, or following a link), and roots (none).
pub(super) fn capabilities() -> ClientCapabilities {
    ClientCapabilities {
        roots: Some(json!({})),
        sampling: Some(json!({})),
        elicitation: Some(json!({ "form": {}, "url": {} })),
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
            let mut params = match &ask.params {
                Some(p) => serde_json::from_str(p.get()).unwrap_or(Value::Null),
                None => Value::Null,
            };
            mark_openable(&mut params);
            let answer = page
                .ask(method, params)
                .await
                .map_err(McpError::InvalidRequest)?;
            to_raw(&answer)
        })
    }
}

/// A URL-mode elicitation's `params` get `openable`: whether the page may offer its URL
/// as a link ([`openable`]). The page shows the URL as text either way and never opens it
/// by itself.
fn mark_openable(params: &mut Value) {
    if params.get("mode").and_then(Value::as_str) != Some("url") {
        return;
    }
    let ok = params
        .get("url")
        .and_then(Value::as_str)
        .is_some_and(openable);
    if let Value::Object(o) = params {
        o.insert("openable".into(), ok.into());
    }
}

/// Whether `url` may be offered as a link: an absolute `http` or `https` URL with a host,
/// no credentials before it (`https://bank@evil`), and nothing a browser reads loosely
/// (whitespace, control characters, backslashes).
pub(super) fn openable(url: &str) -> bool {
    if url.len() > 8192
        || url
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || c == '\\')
    {
        return false;
    }
    let Some((scheme, rest)) = url.split_once("://") else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    (scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https"))
        && !authority.is_empty()
        && !authority.contains('@')
}

fn to_raw(v: &Value) -> Result<Raw, McpError> {
    serde_json::value::to_raw_value(v).map_err(|e| McpError::InvalidRequest(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_web_urls_are_offered_as_links() {
        assert!(openable("https://example.test/authorize?state=1"));
        assert!(openable("HTTP://127.0.0.1:8080"));
        for bad in [
            "javascript:alert(1)",
            "JavaScript://example.test/%0aalert(1)",
            "data:text/html,<script>1</script>",
            "file:///etc/passwd",
            "https://",
            "https:///path",
            "https://bank.test@evil.test/",
            "https://example.test/a b",
            "https://example.test\\@evil.test",
            "//example.test/",
            "https://exa\nmple.test",
        ] {
            assert!(!openable(bad), "{bad}");
        }
    }

    #[test]
    fn a_url_mode_question_says_whether_its_url_is_openable() {
        let mut form = json!({ "message": "m", "requestedSchema": {} });
        mark_openable(&mut form);
        assert!(form.get("openable").is_none(), "forms are untouched");
        let mut good = json!({ "mode": "url", "url": "https://a.test/x", "elicitationId": "e" });
        mark_openable(&mut good);
        assert_eq!(good["openable"], true);
        let mut bad = json!({ "mode": "url", "url": "javascript:alert(1)", "elicitationId": "e" });
        mark_openable(&mut bad);
        assert_eq!(bad["openable"], false);
        let mut none = json!({ "mode": "url" });
        mark_openable(&mut none);
        assert_eq!(none["openable"], false);
    }

    #[test]
    fn the_console_takes_url_mode_elicitation() {
        let caps = capabilities();
        let e = caps.elicitation.expect("elicitation");
        assert!(e.get("form").is_some() && e.get("url").is_some());
    }
}
