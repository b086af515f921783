//! Tools the catalog lists that a downstream session's own upstream session does not
//! offer. The catalog session declares sampling, elicitation and roots; a client that
//! declares fewer gets an upstream session declaring only its own, and an upstream may
//! leave out the tools that need what is missing (server-everything registers
//! `trigger-sampling-request` only for a client with sampling). Such a call is answered by
//! the upstream with "not found" under its own name; the gateway says why instead, as a
//! tool error under the exposed name (the federation renames `ToolFailed`).

use mcpwire_model::types::ClientCapabilities;
use mcpwire_model::{McpError, Reply};

/// The asks the catalog session declares that `caps` does not, in a fixed order.
pub(crate) fn lacking(caps: &ClientCapabilities) -> Vec<&'static str> {
    [
        (caps.sampling.is_none(), "sampling"),
        (caps.elicitation.is_none(), "elicitation"),
        (caps.roots.is_none(), "roots"),
    ]
    .into_iter()
    .filter_map(|(missing, name)| missing.then_some(name))
    .collect()
}

/// `answer` to a `tools/call` of `tool` on an upstream session whose client lacks `lacks`:
/// an upstream's "tool not found" (as a tool error result or as a JSON-RPC error) becomes
/// a [`McpError::ToolFailed`] saying why, its message starting with the tool's name in
/// backquotes (the federation puts the exposed name there); anything else is kept.
pub(crate) fn explained(
    answer: Result<Reply, McpError>,
    lacks: &[&'static str],
    backend: &str,
    tool: &str,
) -> Result<Reply, McpError> {
    if lacks.is_empty() {
        return answer;
    }
    let absent = match &answer {
        Ok(Reply::Complete(raw)) => is_error_result(raw.get()) && says_not_found(raw.get(), tool),
        Err(McpError::ToolNotFound(name)) => name == tool,
        Err(McpError::Wire(obj)) => says_not_found(&obj.message, tool),
        _ => false,
    };
    if !absent {
        return answer;
    }
    Err(McpError::ToolFailed {
        tool: tool.to_owned(),
        message: format!(
            "`{tool}` is not offered in this session: the upstream `{backend}` lists it for a \
             client that declares sampling, elicitation and roots, and this client does not \
             declare {lacks} (the catalog shows what the upstream offers a client declaring \
             all of them)",
            lacks = either(lacks),
        ),
    })
}

/// `a`, `a or b`, `a, b or c`.
fn either(words: &[&str]) -> String {
    match words {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

fn is_error_result(raw: &str) -> bool {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Result {
        #[serde(default)]
        is_error: bool,
    }
    serde_json::from_str::<Result>(raw).is_ok_and(|r| r.is_error)
}

/// Whether `text` says tool `tool` is unknown (the SDKs' wordings: "Tool X not found",
/// "Unknown tool: X").
fn says_not_found(text: &str, tool: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    text.contains(tool) && (lower.contains("not found") || lower.contains("unknown tool"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcpwire_model::to_raw;

    #[test]
    fn an_upstreams_not_found_says_what_the_client_lacks() {
        let caps = ClientCapabilities {
            elicitation: Some(serde_json::json!({})),
            ..ClientCapabilities::default()
        };
        let lacks = lacking(&caps);
        assert_eq!(lacks, ["sampling", "roots"]);
        let not_found = Ok(Reply::Complete(to_raw(&serde_json::json!({
            "content": [{"type": "text", "text": "MCP error -32602: Tool sample not found"}],
            "isError": true,
        }))));
        match explained(not_found, &lacks, "ev", "sample") {
            Err(McpError::ToolFailed { tool, message }) => {
                assert_eq!(tool, "sample");
                assert!(message.starts_with("`sample` is not offered"), "{message}");
                assert!(message.contains("`ev`") && message.contains("sampling or roots"));
            }
            other => panic!("{other:?}"),
        }
        // Another tool's words, a success, or a client lacking nothing: kept.
        let other = Ok(Reply::Complete(to_raw(&serde_json::json!({
            "content": [{"type": "text", "text": "Tool sample not found"}],
        }))));
        assert!(explained(other, &lacks, "ev", "sample").is_ok());
        let e = Err(McpError::ToolNotFound("sample".into()));
        assert!(matches!(
            explained(e, &[], "ev", "sample"),
            Err(McpError::ToolNotFound(_))
        ));
        let e = Err(McpError::ToolNotFound("sample".into()));
        assert!(matches!(
            explained(e, &lacks, "ev", "sample"),
            Err(McpError::ToolFailed { .. })
        ));
    }
}
