//! What the relay reads of a frame without decoding it: a downstream `tools/call` that may
//! go upstream as it came ([`scan_call`]), an upstream answer that may come back as it came
//! ([`scan_result`]). Each is one borrowed serde pass (the frame is checked to be JSON, the
//! members found by where serde borrowed them); anything the general path would read
//! differently is `None`, and the frame is decoded as usual.

use std::ops::Range;

use mcpwire_model::RequestId;
use serde::Deserialize;
use serde_json::value::RawValue;

/// A client's request id as it was written (a plain integer, or a string without
/// escapes), kept inline: what the relay writes back into the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IdText {
    len: u8,
    bytes: [u8; IdText::MAX],
}

impl IdText {
    /// The longest id text relayed (longer ones go the general path).
    pub(crate) const MAX: usize = 40;

    fn new(text: &str) -> Option<IdText> {
        let len = text.len();
        if len > IdText::MAX {
            return None;
        }
        let mut bytes = [0; IdText::MAX];
        bytes[..len].copy_from_slice(text.as_bytes());
        Some(IdText {
            len: len as u8,
            bytes,
        })
    }

    /// The id's JSON text.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

/// A downstream `tools/call` frame the relay may send on as it came.
#[derive(Debug)]
pub(crate) struct RelayableCall<'a> {
    /// The client's id.
    pub(crate) request_id: RequestId,
    /// Its text, to restore in the answer.
    pub(crate) id_text: IdText,
    /// Where the id sits in the frame.
    pub(crate) id_at: Range<usize>,
    /// The tool called.
    pub(crate) tool: &'a str,
}

/// `line` as a `tools/call` that may be relayed: nothing but `jsonrpc` `"2.0"`, an `id`
/// (an integer written as the general path writes it back, or a string without escapes),
/// `method` `"tools/call"` and params that qualify for forwarding as they came
/// (`mcpwire_router::plain_tool_name`). The caller checked nesting and UTF-8.
pub(crate) fn scan_call(line: &str) -> Option<RelayableCall<'_>> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct CallFrame<'a> {
        jsonrpc: &'a str,
        #[serde(borrow)]
        id: &'a RawValue,
        method: &'a str,
        #[serde(borrow)]
        params: &'a RawValue,
    }
    let frame: CallFrame<'_> = serde_json::from_str(line).ok()?;
    if frame.jsonrpc != "2.0" || frame.method != "tools/call" {
        return None;
    }
    let params = frame.params.get();
    let name = mcpwire_router::plain_tool_name(params)?;
    let tool = params.get(name)?;
    let id = frame.id.get();
    let request_id = request_id(id)?;
    Some(RelayableCall {
        request_id,
        id_text: IdText::new(id)?,
        id_at: at(line, id)?,
        tool,
    })
}

/// The id `text` as the session reads it, when writing it back gives the same text.
fn request_id(text: &str) -> Option<RequestId> {
    match text.as_bytes().first()? {
        b'"' => {
            let inner = text.get(1..text.len() - 1)?;
            (!inner.contains('\\')).then(|| RequestId::Str(inner.into()))
        }
        _ => {
            let n: i64 = text.parse().ok()?;
            // `-0`, `007`: read as a number the general path writes differently.
            let canonical = !(text.starts_with("-0") || (text.starts_with('0') && text.len() > 1));
            canonical.then_some(RequestId::Int(n))
        }
    }
}

/// An upstream answer the relay may hand back as it came: nothing but `jsonrpc` `"2.0"`,
/// an integer `id` and a `result` (what the general path writes as
/// `{"jsonrpc":"2.0","id":…,"result":…}` with the result's bytes as they came). The upstream
/// id and where it sits. The caller checked nesting and UTF-8.
pub(crate) fn scan_result(line: &str) -> Option<(u64, Range<usize>)> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct ResultFrame<'a> {
        jsonrpc: &'a str,
        #[serde(borrow)]
        id: &'a RawValue,
        #[serde(borrow)]
        #[allow(dead_code)]
        result: &'a RawValue,
    }
    let frame: ResultFrame<'_> = serde_json::from_str(line).ok()?;
    if frame.jsonrpc != "2.0" {
        return None;
    }
    let id = frame.id.get();
    Some((id.parse().ok()?, at(line, id)?))
}

/// Where `part` (borrowed from `whole`) sits in it.
fn at(whole: &str, part: &str) -> Option<Range<usize>> {
    let start = (part.as_ptr() as usize).checked_sub(whole.as_ptr() as usize)?;
    (start + part.len() <= whole.len()).then(|| start..start + part.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(line: &str) -> Option<(String, String, String)> {
        let c = scan_call(line)?;
        Some((
            format!("{:?}", c.request_id),
            line[c.id_at].to_owned(),
            c.tool.to_owned(),
        ))
    }

    #[test]
    fn plain_calls_are_found_with_their_id_and_tool() {
        let got = call(
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"id":1}}}"#,
        );
        assert_eq!(got, Some(("Int(7)".into(), "7".into(), "echo".into())));
        let got = call(
            r#"{ "params" : {"name":"e"} , "method":"tools/call", "id" : "a-1", "jsonrpc":"2.0" }"#,
        );
        assert_eq!(got.map(|g| g.1), Some(r#""a-1""#.to_owned()));
    }

    #[test]
    fn what_the_general_path_reads_differently_is_not_relayed() {
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","_meta":{"progressToken":1}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e\u0063"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"e"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e"},"x":1}"#,
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"e"}}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"e"}}"#,
            r#"{"jsonrpc":"2.0","id":1.0,"method":"tools/call","params":{"name":"e"}}"#,
            r#"{"jsonrpc":"2.0","id":-0,"method":"tools/call","params":{"name":"e"}}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"e"}}"#,
            r#"{"jsonrpc":"2.0","id":"a\"b","method":"tools/call","params":{"name":"e"}}"#,
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"e"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e"}"#,
        ] {
            assert_eq!(call(line), None, "{line}");
        }
    }

    #[test]
    fn plain_results_are_found_and_the_rest_is_decoded() {
        let line = r#"{"result":{"content":[]},"jsonrpc":"2.0","id":12}"#;
        let (id, at) = scan_result(line).unwrap();
        assert_eq!((id, &line[at]), (12, "12"));
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{},"_meta":{}}"#,
            r#"{"jsonrpc":"2.0","id":"1","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"x","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}"#,
        ] {
            assert_eq!(scan_result(line), None, "{line}");
        }
    }
}
