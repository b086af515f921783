//! An HTTP answer → a `tools/call` result (sans-IO): a 2xx JSON answer as text and
//! `structuredContent` (checked against the output schema), an image as image content,
//! text as text; a non-2xx answer, an oversized or binary one as an `isError` result that
//! says what came back.

use base64::Engine;
use serde_json::{Value, json};

use crate::operation::{Operation, Output, is_json};

/// How much of an error answer's body a result quotes, in bytes.
pub const MAX_ERROR_EXCERPT: usize = 2048;

/// What the service answered.
#[derive(Debug, Clone, Copy)]
pub struct Answer<'a> {
    /// The status code.
    pub status: u16,
    /// Its `Content-Type`.
    pub content_type: Option<&'a str>,
    /// The body (at most the backend's limit).
    pub body: &'a [u8],
    /// Whether the body was cut at the limit.
    pub truncated: bool,
}

/// The `tools/call` result for `answer` to a call of `op`. `check` says what is wrong with
/// a structured result according to the tool's output schema (`None`: nothing).
pub fn result(
    op: &Operation,
    answer: Answer<'_>,
    check: &dyn Fn(&Value) -> Option<String>,
) -> Value {
    let what = format!("{} {}", op.method, op.path);
    if !(200..300).contains(&answer.status) {
        return error(format!(
            "{what} answered HTTP {}{}: {}",
            answer.status,
            reason(answer.status),
            excerpt(answer.body, answer.truncated)
        ));
    }
    if answer.truncated {
        return error(format!(
            "{what} answered HTTP {} with a body over the limit of {} bytes",
            answer.status,
            answer.body.len()
        ));
    }
    let media = answer.content_type.unwrap_or("");
    let lower = media.to_ascii_lowercase();
    if lower.starts_with("image/") {
        let data = base64::engine::general_purpose::STANDARD.encode(answer.body);
        let mime = lower
            .split(';')
            .next()
            .unwrap_or("image/png")
            .trim()
            .to_owned();
        return json!({"content": [{"type": "image", "data": data, "mimeType": mime}]});
    }
    let Ok(text) = std::str::from_utf8(answer.body) else {
        return error(format!(
            "{what} answered {} bytes of `{media}`: binary answers are not returned as tool results",
            answer.body.len()
        ));
    };
    let parsed = if is_json(media) || op.output != Output::None {
        serde_json::from_str::<Value>(text).ok()
    } else {
        None
    };
    let structured = match (op.output, parsed) {
        (Output::None, _) => None,
        (Output::Object, Some(v @ Value::Object(_))) => Some(v),
        (Output::Wrapped, Some(v)) => Some(json!({ "result": v })),
        (_, _) if text.trim().is_empty() => None,
        (_, _) => {
            return error(format!(
                "{what} answered HTTP {} with a body that is not the JSON its document describes: {}",
                answer.status,
                excerpt(answer.body, false)
            ));
        }
    };
    let mut out = json!({"content": [{"type": "text", "text": text}]});
    if let Some(s) = structured {
        if let Some(problem) = check(&s) {
            return error(format!(
                "{what} answered HTTP {} with a body that does not match its documented schema ({problem}): {}",
                answer.status,
                excerpt(answer.body, false)
            ));
        }
        out["structuredContent"] = s;
    }
    out
}

/// An `isError` result saying `text`.
pub fn error(text: String) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": true})
}

fn excerpt(body: &[u8], truncated: bool) -> String {
    if body.is_empty() {
        return "(no body)".into();
    }
    let cut = body.len().min(MAX_ERROR_EXCERPT);
    let mut s = String::from_utf8_lossy(&body[..cut]).into_owned();
    if truncated || cut < body.len() {
        s.push_str(" …(truncated)");
    }
    s
}

fn reason(status: u16) -> String {
    hyper::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .map(|r| format!(" {r}"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operation::Body;

    fn op(output: Output) -> Operation {
        Operation {
            method: "GET".into(),
            path: "/pets".into(),
            params: vec![],
            body: Body::None,
            content_type: None,
            output,
        }
    }

    fn answer(status: u16, body: &[u8]) -> Answer<'_> {
        Answer {
            status,
            content_type: Some("application/json"),
            body,
            truncated: false,
        }
    }

    #[test]
    fn success_shapes() {
        let ok = |_: &Value| None;
        let r = result(&op(Output::Wrapped), answer(200, b"[1,2]"), &ok);
        assert_eq!(r["structuredContent"], json!({"result": [1, 2]}));
        let r = result(&op(Output::Object), answer(200, br#"{"a":1}"#), &ok);
        assert_eq!(r["structuredContent"], json!({"a": 1}));
        assert!(r.get("isError").is_none());
        let r = result(&op(Output::None), answer(200, br#"{"a":1}"#), &ok);
        assert!(r.get("structuredContent").is_none());
    }

    #[test]
    fn failures_are_tool_errors() {
        let ok = |_: &Value| None;
        let r = result(&op(Output::Object), answer(404, br#"{"detail":"no"}"#), &ok);
        assert_eq!(r["isError"], json!(true));
        let text = r["content"][0]["text"].as_str().unwrap_or_default();
        assert!(
            text.contains("HTTP 404 Not Found") && text.contains("detail"),
            "{text}"
        );
        let big = vec![b'x'; MAX_ERROR_EXCERPT * 2];
        let r = result(&op(Output::None), answer(500, &big), &ok);
        let text = r["content"][0]["text"].as_str().unwrap_or_default();
        assert!(text.ends_with("…(truncated)") && text.len() < MAX_ERROR_EXCERPT + 100);
        let bad = |_: &Value| Some("wrong".to_owned());
        let r = result(&op(Output::Object), answer(200, br#"{"a":1}"#), &bad);
        assert_eq!(r["isError"], json!(true));
        let bin = Answer {
            content_type: Some("application/octet-stream"),
            ..answer(200, &[0xff, 0xfe])
        };
        assert_eq!(result(&op(Output::None), bin, &ok)["isError"], json!(true));
    }
}
