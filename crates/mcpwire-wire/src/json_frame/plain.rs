//! Plain calls and results: the JSON-RPC frames a relay may send on as they came, with only
//! their id rewritten — because decoding and re-encoding them would give the same JSON.

use std::ops::Range;

use bytes::{BufMut, Bytes, BytesMut};
use mcpwire_model::RequestId;

use super::cursor::{Cursor, Nested, Span, Spans};

/// A request id as it was written — a plain integer, or a string without escapes — kept
/// inline: what a relay writes back into the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdText {
    len: u8,
    bytes: [u8; IdText::MAX],
}

impl IdText {
    /// The longest id text kept (a longer id is not plain).
    pub const MAX: usize = 40;

    fn new(text: &[u8]) -> Option<IdText> {
        let len = text.len();
        let mut bytes = [0; IdText::MAX];
        bytes.get_mut(..len)?.copy_from_slice(text);
        Some(IdText {
            len: u8::try_from(len).ok()?,
            bytes,
        })
    }

    /// The id's JSON text.
    pub fn as_bytes(&self) -> &[u8] {
        self.bytes.get(..usize::from(self.len)).unwrap_or_default()
    }
}

/// A `tools/call` frame that may be sent on as it came (see [`plain_call`]), split around
/// its id.
#[derive(Debug)]
pub struct PlainCall<'a> {
    request_id: RequestId,
    id_text: IdText,
    before_id: &'a [u8],
    after_id: &'a [u8],
    tool: &'a str,
    /// Where the tool's name is in the frame (between its quotes).
    tool_at: Range<usize>,
    /// The name written in place of the tool's when the frame is sent on
    /// ([`PlainCall::sent_as`]).
    sent_as: Option<&'a str>,
    arguments: Option<Range<usize>>,
}

impl<'a> PlainCall<'a> {
    /// The id, as a session reads it.
    pub fn request_id(&self) -> &RequestId {
        &self.request_id
    }

    /// The id as it was written (what the answer must carry).
    pub fn id_text(&self) -> IdText {
        self.id_text
    }

    /// Where the id is in the frame.
    pub fn id_at(&self) -> Range<usize> {
        let start = self.before_id.len();
        start..start + self.id_text.as_bytes().len()
    }

    /// The tool called (written without escapes, so this is its name), as the frame names
    /// it (not what [`PlainCall::sent_as`] gave).
    pub fn tool(&self) -> &'a str {
        self.tool
    }

    /// The call, sent on with its tool named `name` (a gateway that exposes the tool under
    /// another name calls it upstream by its own): `None` when `name` would need escapes
    /// in JSON (see [`writes_as_is`]), as a relay writes it between the quotes as it is.
    pub fn sent_as<'b>(&self, name: &'b str) -> Option<PlainCall<'b>>
    where
        'a: 'b,
    {
        writes_as_is(name).then(|| PlainCall {
            request_id: self.request_id.clone(),
            sent_as: Some(name),
            tool_at: self.tool_at.clone(),
            arguments: self.arguments.clone(),
            ..*self
        })
    }

    /// Where the `arguments` object is in the frame, when there is one.
    pub fn arguments(&self) -> Option<Range<usize>> {
        self.arguments.clone()
    }

    /// Writes the frame with `id` (an integer) in place of its own — and the name
    /// [`PlainCall::sent_as`] gave in place of the tool's — then a newline: the line a
    /// relay sends on.
    pub fn write_line_with_id(&self, id: u64, out: &mut BytesMut) {
        let mut digits = itoa::Buffer::new();
        let id = digits.format(id).as_bytes();
        let Some(name) = self.sent_as else {
            splice_line(self.before_id, id, self.after_id, out);
            return;
        };
        // The name is on one side of the id: that side is written in three pieces.
        let tool = self.tool_at.clone();
        let id_end = self.before_id.len() + self.id_text.as_bytes().len();
        let (before, after) = (self.before_id, self.after_id);
        out.reserve(before.len() + id.len() + after.len() + name.len() + 1);
        if tool.start >= id_end {
            let (at, end) = (tool.start - id_end, tool.end - id_end);
            out.put_slice(before);
            out.put_slice(id);
            put_renamed(after, at..end, name, out);
        } else {
            put_renamed(before, tool, name, out);
            out.put_slice(id);
            out.put_slice(after);
        }
        out.put_u8(b'\n');
    }
}

/// `bytes` with `name` in place of its range `at`.
fn put_renamed(bytes: &[u8], at: Range<usize>, name: &str, out: &mut BytesMut) {
    out.put_slice(bytes.get(..at.start).unwrap_or_default());
    out.put_slice(name.as_bytes());
    out.put_slice(bytes.get(at.end..).unwrap_or_default());
}

/// Whether `text` is written in a JSON string as it is — no quote, backslash or control
/// character to escape — so a relay may put it between quotes without an encoder.
pub fn writes_as_is(text: &str) -> bool {
    !text.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20)
}

/// A [`PlainCall`] together with the frame it was found in, kept as where its parts are:
/// what a listener that checked a frame hands to the session that relays it, so that the
/// frame is scanned once.
#[derive(Debug, Clone)]
pub struct PlainFrame {
    frame: Bytes,
    at: Located,
}

impl PlainFrame {
    /// `frame` when it is a [`plain_call`] (nothing deeper than `max_depth`); else the
    /// frame back.
    pub fn new(frame: Bytes, max_depth: usize) -> Result<PlainFrame, Bytes> {
        match locate(&frame, max_depth) {
            Some(at) => Ok(PlainFrame { frame, at }),
            None => Err(frame),
        }
    }

    /// The call's id, as a session reads it.
    pub fn request_id(&self) -> &RequestId {
        &self.at.request_id
    }

    /// The frame as it came.
    pub fn bytes(&self) -> &Bytes {
        &self.frame
    }

    /// The call, read again from where its parts are (no scan).
    pub fn call(&self) -> Option<PlainCall<'_>> {
        self.at.call(&self.frame)
    }
}

/// Where a plain call's parts are in its frame (see [`plain_call`]).
#[derive(Debug, Clone)]
struct Located {
    request_id: RequestId,
    id_text: IdText,
    /// The id's text and the tool's name, as ranges of the frame.
    id: Range<usize>,
    tool: Range<usize>,
    /// Where the frame ends, whitespace after it left out.
    end: usize,
    arguments: Option<Range<usize>>,
}

impl Located {
    fn call<'a>(&self, frame: &'a [u8]) -> Option<PlainCall<'a>> {
        let frame = frame.get(..self.end)?;
        Some(PlainCall {
            request_id: self.request_id.clone(),
            id_text: self.id_text,
            before_id: frame.get(..self.id.start)?,
            after_id: frame.get(self.id.end..)?,
            tool: std::str::from_utf8(frame.get(self.tool.clone())?).ok()?,
            tool_at: self.tool.clone(),
            sent_as: None,
            arguments: self.arguments.clone(),
        })
    }
}

/// Where the name and arguments of a call's params are (see [`plain_params`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlainParams {
    /// The tool's name: the text between its quotes, without escapes.
    pub name: Range<usize>,
    /// The `arguments` object, when there is one.
    pub arguments: Option<Range<usize>>,
}

/// An answer that may be handed back as it came (see [`plain_result`]), split around its id.
#[derive(Debug)]
pub struct PlainResult<'a> {
    id: u64,
    before_id: &'a [u8],
    after_id: &'a [u8],
    id_len: usize,
}

impl PlainResult<'_> {
    /// The id it answers.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Where the id is in the frame.
    pub fn id_at(&self) -> Range<usize> {
        let start = self.before_id.len();
        start..start + self.id_len
    }

    /// Writes the frame with the id `id` (the text a call's id was written with) in place
    /// of its own, then a newline: the line a relay hands back.
    pub fn write_line_with_id(&self, id: &IdText, out: &mut BytesMut) {
        splice_line(self.before_id, id.as_bytes(), self.after_id, out);
    }
}

fn splice_line(before: &[u8], id: &[u8], after: &[u8], out: &mut BytesMut) {
    out.reserve(before.len() + id.len() + after.len() + 1);
    out.put_slice(before);
    out.put_slice(id);
    out.put_slice(after);
    out.put_u8(b'\n');
}

/// Members of a call's params at most (`name`, `arguments`; more is not plain anyway).
const PARAMS_MEMBERS: usize = 2;

/// `frame` as a `tools/call` that may be sent on as it came: a frame the scan reads
/// (`json_frame` module docs; nothing deeper than `max_depth`) whose members are exactly
/// `jsonrpc` (the string `"2.0"`), `id`, `method` (the string `"tools/call"`, without
/// escapes) and `params` that are [plain](plain_params); and whose id is an integer written
/// as a session writes it back (no `-0`, within `i64`) or a string without escapes, at most
/// [`IdText::MAX`] bytes. The frame is one line: whitespace after it is left out, and a
/// frame with a line break inside (a pretty-printed body on HTTP or MCPB) is not plain, as
/// the relay's upstream reads lines. Anything else is `None`.
pub fn plain_call(frame: &[u8], max_depth: usize) -> Option<PlainCall<'_>> {
    locate(frame, max_depth)?.call(frame)
}

/// Where the parts of `frame` are when it is a [`plain_call`].
fn locate(frame: &[u8], max_depth: usize) -> Option<Located> {
    let end = frame
        .iter()
        .rposition(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        .map_or(0, |at| at + 1);
    let frame = frame.get(..end)?;
    if memchr::memchr2(b'\n', b'\r', frame).is_some() {
        return None;
    }
    let mut params = Nested::<PARAMS_MEMBERS> {
        key: b"params",
        spans: Spans::new(),
        found: false,
    };
    let mut cursor = Cursor::new(frame);
    let spans: Spans<4> = cursor.object(1, max_depth, Some(&mut params))?;
    if !cursor.at_end() || spans.len != 4 || !params.found {
        return None;
    }
    let (mut jsonrpc, mut id, mut method) = (false, None, false);
    for Span { key, value } in spans.as_slice() {
        let value_bytes = frame.get(value.clone())?;
        match frame.get(key.clone())? {
            b"jsonrpc" => jsonrpc = value_bytes == b"\"2.0\"",
            b"method" => method = value_bytes == b"\"tools/call\"",
            b"id" => id = Some(value.clone()),
            b"params" => {}
            _ => return None,
        }
    }
    let id = id.filter(|_| jsonrpc && method)?;
    let PlainParams { name, arguments } = plain_members(frame, params.spans.as_slice())?;
    let id_bytes = frame.get(id.clone())?;
    std::str::from_utf8(frame.get(name.clone())?).ok()?;
    Some(Located {
        request_id: request_id(id_bytes)?,
        id_text: IdText::new(id_bytes)?,
        id,
        tool: name,
        end,
        arguments,
    })
}

/// The params `params` of a `tools/call` as they may be sent on as they came: an object the
/// scan reads (`json_frame` module docs) whose members are a `name` — a string without
/// escapes — and, maybe, an `arguments` object (not `null`); nothing else (a `_meta`, a
/// `task`). Parsing such params and writing them out again gives the same JSON.
pub fn plain_params(params: &[u8], max_depth: usize) -> Option<PlainParams> {
    let mut cursor = Cursor::new(params);
    let spans: Spans<PARAMS_MEMBERS> = cursor.object(1, max_depth, None::<&mut Nested<'_, 0>>)?;
    if !cursor.at_end() {
        return None;
    }
    plain_members(params, spans.as_slice())
}

/// [`PlainParams`] from the spans of the params' members.
fn plain_members(frame: &[u8], spans: &[Span]) -> Option<PlainParams> {
    let (mut name, mut arguments) = (None, None);
    for Span { key, value } in spans {
        let bytes = frame.get(value.clone())?;
        match frame.get(key.clone())? {
            b"name" => {
                let text = bytes.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
                if text.contains(&b'\\') {
                    return None;
                }
                name = Some(value.start + 1..value.end - 1);
            }
            b"arguments" if bytes.first() == Some(&b'{') => arguments = Some(value.clone()),
            _ => return None,
        }
    }
    Some(PlainParams {
        name: name?,
        arguments,
    })
}

/// The id `text` as a session reads it, when writing it back gives the same text.
fn request_id(text: &[u8]) -> Option<RequestId> {
    match text.first()? {
        b'"' => {
            let inner = text.get(1..text.len() - 1)?;
            if inner.contains(&b'\\') {
                return None;
            }
            Some(RequestId::Str(std::str::from_utf8(inner).ok()?.into()))
        }
        _ => {
            // `-0` reads as the number 0, which is written back as `0`.
            if text == b"-0" {
                return None;
            }
            Some(RequestId::Int(
                std::str::from_utf8(text).ok()?.parse().ok()?,
            ))
        }
    }
}

/// `frame` as an answer that may be handed back as it came: a frame the scan reads
/// (`json_frame` module docs; nothing deeper than `max_depth`) whose members are exactly
/// `jsonrpc` (the string `"2.0"`), `id` (an integer from 0 to `u64::MAX`) and `result` —
/// what a session writes as `{"jsonrpc":"2.0","id":…,"result":…}` with the result's bytes
/// as they came. Anything else (an error, an unknown member) is `None`.
pub fn plain_result(frame: &[u8], max_depth: usize) -> Option<PlainResult<'_>> {
    let mut cursor = Cursor::new(frame);
    let spans: Spans<3> = cursor.object(1, max_depth, None::<&mut Nested<'_, 0>>)?;
    if !cursor.at_end() || spans.len != 3 {
        return None;
    }
    let (mut jsonrpc, mut id, mut result) = (false, None, false);
    for Span { key, value } in spans.as_slice() {
        match frame.get(key.clone())? {
            b"jsonrpc" => jsonrpc = frame.get(value.clone())? == b"\"2.0\"",
            b"id" => id = Some(value.clone()),
            b"result" => result = true,
            _ => return None,
        }
    }
    let at = id.filter(|_| jsonrpc && result)?;
    let text = frame.get(at.clone())?;
    Some(PlainResult {
        id: std::str::from_utf8(text).ok()?.parse().ok()?,
        before_id: frame.get(..at.start)?,
        after_id: frame.get(at.end..)?,
        id_len: text.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(line: &str) -> Option<(String, String, String)> {
        let c = plain_call(line.as_bytes(), 64)?;
        Some((
            format!("{:?}", c.request_id()),
            line[c.id_at()].to_owned(),
            c.tool().to_owned(),
        ))
    }

    #[test]
    fn a_plain_frame_reads_back_the_call_it_found_without_scanning_again() {
        let line = "{\"jsonrpc\":\"2.0\",\"id\":\"a-1\",\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"x\":[1]}}}  \r\n";
        let frame = PlainFrame::new(Bytes::from_static(line.as_bytes()), 64).unwrap();
        let (again, scanned) = (
            frame.call().unwrap(),
            plain_call(line.as_bytes(), 64).unwrap(),
        );
        assert_eq!(frame.request_id(), scanned.request_id());
        assert_eq!(again.tool(), "echo");
        assert_eq!(again.id_at(), scanned.id_at());
        assert_eq!(again.arguments(), scanned.arguments());
        let (mut a, mut b) = (BytesMut::new(), BytesMut::new());
        again.write_line_with_id(9, &mut a);
        scanned.write_line_with_id(9, &mut b);
        assert_eq!(a, b);
        assert!(
            a.ends_with(b"}}}\n"),
            "whitespace after the frame is left out"
        );
        let not_plain =
            Bytes::from_static(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}");
        assert_eq!(
            PlainFrame::new(not_plain.clone(), 64).unwrap_err(),
            not_plain
        );
    }

    #[test]
    fn a_call_sent_as_another_name_has_that_name_on_either_side_of_the_id() {
        let cases = [
            (
                r#"{"jsonrpc":"2.0","id":"c-1","method":"tools/call","params":{"name":"a_echo","arguments":{"name":"a_echo"}}}"#,
                r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{"name":"a_echo"}}}"#,
            ),
            (
                r#"{"params":{"arguments":{},"name":"a_echo"},"id":12,"method":"tools/call","jsonrpc":"2.0"}"#,
                r#"{"params":{"arguments":{},"name":"echo"},"id":5,"method":"tools/call","jsonrpc":"2.0"}"#,
            ),
        ];
        for (line, sent) in cases {
            let call = plain_call(line.as_bytes(), 64).unwrap();
            let renamed = call.sent_as("echo").unwrap();
            assert_eq!(
                renamed.tool(),
                "a_echo",
                "the frame's name, for spans and limits"
            );
            let mut out = BytesMut::new();
            renamed.write_line_with_id(5, &mut out);
            assert_eq!(out, format!("{sent}\n").as_bytes());
        }
        let call = plain_call(cases[0].0.as_bytes(), 64).unwrap();
        for needs_escapes in ["a\"b", "a\\b", "tab\there", "\u{1}"] {
            assert!(call.sent_as(needs_escapes).is_none(), "{needs_escapes:?}");
        }
        assert!(writes_as_is("ünï/cödé tool.name-1"));
    }

    #[test]
    fn plain_calls_are_found_with_their_id_tool_and_arguments() {
        let line = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"id":1}}}"#;
        let got = call(line);
        assert_eq!(got, Some(("Int(7)".into(), "7".into(), "echo".into())));
        let c = plain_call(line.as_bytes(), 64).unwrap();
        assert_eq!(&line[c.arguments().unwrap()], r#"{"id":1}"#);
        let got = call(
            r#"{ "params" : {"name":"e"} , "method":"tools/call", "id" : "a-1", "jsonrpc":"2.0" }"#,
        );
        assert_eq!(got.map(|g| g.1), Some(r#""a-1""#.to_owned()));
    }

    #[test]
    fn what_the_general_path_reads_differently_is_not_plain() {
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","_meta":{"progressToken":1}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e\u0063"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","arguments":null}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","arguments":[]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":["e",{}]}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"e"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"e"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e"},"x":1}"#,
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"e"}}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"e"}}"#,
            r#"{"jsonrpc":"2.0","id":1.0,"method":"tools/call","params":{"name":"e"}}"#,
            r#"{"jsonrpc":"2.0","id":-0,"method":"tools/call","params":{"name":"e"}}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"e"}}"#,
            r#"{"jsonrpc":"2.0","id":9223372036854775808,"method":"tools/call","params":{"name":"e"}}"#,
            r#"{"jsonrpc":"2.0","id":"a\"b","method":"tools/call","params":{"name":"e"}}"#,
            r#"{"jsonrpc":"2.0","id":"0123456789012345678901234567890123456789","method":"tools/call","params":{"name":"e"}}"#,
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"e"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e"}"#,
            r#"["2.0",1,"tools/call",{"name":"e"}]"#,
        ] {
            assert_eq!(call(line), None, "{line}");
        }
    }

    #[test]
    fn a_frame_is_one_line() {
        let line = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e"}}"#;
        // Whitespace after the frame is not part of it: the line sent on has one newline.
        let padded = format!("{line} \r\n\n");
        let c = plain_call(padded.as_bytes(), 64).unwrap();
        let mut out = BytesMut::new();
        c.write_line_with_id(5, &mut out);
        assert_eq!(
            &out[..],
            format!("{}\n", line.replace(":1,", ":5,")).as_bytes()
        );
        // A line break inside would split it on a line-framed upstream.
        for pretty in [
            "{\"jsonrpc\":\"2.0\",\n\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"e\"}}",
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"e\"}\r}",
        ] {
            assert_eq!(call(pretty), None, "{pretty}");
        }
    }

    #[test]
    fn an_id_spliced_in_keeps_every_other_byte() {
        let line =
            r#"{"jsonrpc":"2.0","id":"client-7","method":"tools/call","params":{"name":"e"}}"#;
        let c = plain_call(line.as_bytes(), 64).unwrap();
        let mut out = BytesMut::new();
        c.write_line_with_id(42, &mut out);
        let want = line.replace(r#""client-7""#, "42") + "\n";
        assert_eq!(&out[..], want.as_bytes());
        let answer = r#"{"result":{"content":[]},"jsonrpc":"2.0","id":42}"#;
        let r = plain_result(answer.as_bytes(), 64).unwrap();
        assert_eq!((r.id(), &answer[r.id_at()]), (42, "42"));
        let mut out = BytesMut::new();
        r.write_line_with_id(&c.id_text(), &mut out);
        let want = answer.replace("42", r#""client-7""#) + "\n";
        assert_eq!(&out[..], want.as_bytes());
    }

    #[test]
    fn only_plain_results_are_found() {
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{},"_meta":{}}"#,
            r#"{"jsonrpc":"2.0","id":"1","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":-1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"x","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}"#,
        ] {
            assert!(plain_result(line.as_bytes(), 64).is_none(), "{line}");
        }
    }
}
