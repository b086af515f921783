//! Requests and tool calls, recorded once for every wire by the driver core's call runner,
//! through handles kept per `method` and per `tool` (`handles.rs`).

use std::borrow::Cow;
use std::sync::{LazyLock, OnceLock};
use std::time::Instant;

use mcpwire_model::{McpError, Method, Raw, Reply};
use mcpwire_router::McpReply;
use mcpwire_wire::json_frame::{self, MemberProbe};
use metrics::Gauge;
use serde::Deserialize;

use super::handles::{Family, LabelTable, Outcome, Series};
use super::wire_label::WireLabel;
use super::{
    REQUEST_DURATION, REQUESTS_IN_FLIGHT, REQUESTS_TOTAL, TOOL_CALL_DURATION, TOOL_CALLS_TOTAL,
};

/// Slots for `method` values: the model's methods and `other`, with room to spare.
const METHOD_SLOTS: usize = 64;
/// Slots for `tool` values: names answered as known tools. A catalog with more (or a
/// crowded table) records the rest through the `metrics` facade, with the same labels.
pub(crate) const TOOL_SLOTS: usize = 1024;
/// The `tool` label of a call answered "unknown tool" (hidden tools included).
const UNKNOWN_TOOL: &str = "(unknown)";

/// The handles calls record through, made once the recorder is installed (until then
/// nothing is measured).
struct CallHandles {
    requests: LabelTable,
    tools: LabelTable,
    in_flight: [OnceLock<Gauge>; WireLabel::COUNT],
}

static HANDLES: OnceLock<CallHandles> = OnceLock::new();

/// Starts measuring calls (the recorder is installed).
pub(crate) fn enable() {
    HANDLES.get_or_init(|| CallHandles {
        requests: LabelTable::new(
            Family {
                counter: REQUESTS_TOTAL,
                histogram: REQUEST_DURATION,
                label: "method",
            },
            METHOD_SLOTS,
        ),
        tools: LabelTable::new(
            Family {
                counter: TOOL_CALLS_TOTAL,
                histogram: TOOL_CALL_DURATION,
                label: "tool",
            },
            TOOL_SLOTS,
        ),
        in_flight: Default::default(),
    });
}

/// Whether calls are measured (the recorder is installed).
pub(crate) fn enabled() -> bool {
    HANDLES.get().is_some()
}

impl CallHandles {
    fn in_flight(&self, wire: WireLabel) -> &Gauge {
        self.in_flight[wire as usize]
            .get_or_init(|| metrics::gauge!(REQUESTS_IN_FLIGHT, "wire" => wire.as_str()))
    }
}

/// A label value: held in its table, or (not there yet, or no room) its text.
enum Label {
    Held(&'static Series),
    Named(Box<str>),
}

/// One request being measured, from its dispatch to its answer. Dropped unanswered (its
/// connection went away), it counts as `cancelled`.
pub(crate) struct CallMetrics {
    handles: &'static CallHandles,
    /// Whether the answer was recorded.
    finished: bool,
    wire: WireLabel,
    started: Instant,
    /// The method's wire name; `other` for methods the model does not name (a client's
    /// made-up names must not make new series).
    method: Label,
    /// `tools/call`: the tool's name as requested.
    tool: Option<Label>,
}

#[derive(Deserialize)]
struct ToolName<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
}

#[derive(Deserialize)]
struct IsError {
    #[serde(rename = "isError", default)]
    is_error: bool,
}

impl CallMetrics {
    /// Starts measuring a request (`None` while metrics are off).
    pub(crate) fn start(wire: WireLabel, method: &Method, params: Option<&Raw>) -> Option<Self> {
        let handles = HANDLES.get()?;
        Some(Self::started(
            handles,
            wire,
            method,
            tool_name(method, params),
        ))
    }

    /// Starts measuring a `tools/call` of `tool` relayed as a raw frame (`mcpwire_relay`):
    /// the same series and labels as [`CallMetrics::start`] gives the same call (`None`
    /// while metrics are off).
    pub(crate) fn start_tool_call(wire: WireLabel, tool: &str) -> Option<Self> {
        let handles = HANDLES.get()?;
        let method = &Method::ToolsCall;
        Some(Self::started(
            handles,
            wire,
            method,
            Some(Cow::Borrowed(tool)),
        ))
    }

    fn started(
        handles: &'static CallHandles,
        wire: WireLabel,
        method: &Method,
        tool: Option<Cow<'_, str>>,
    ) -> Self {
        // A tool enters its table only once answered as known (`record`): here it is only
        // looked up, so a made-up name takes no slot.
        let tool = tool.map(|t| match handles.tools.get(&t) {
            Some(series) => Label::Held(series),
            None => Label::Named(t.into()),
        });
        let name = match method {
            Method::Other(_) => "other",
            m => m.as_str(),
        };
        let method = match handles.requests.get_or_insert(name) {
            Some(series) => Label::Held(series),
            None => Label::Named(name.into()),
        };
        handles.in_flight(wire).increment(1.0);
        CallMetrics {
            handles,
            finished: false,
            wire,
            started: Instant::now(),
            method,
            tool,
        }
    }

    /// Records the answer (`None`: the call was cancelled).
    pub(crate) fn finish(mut self, reply: Option<&McpReply>) {
        self.record(reply);
    }

    /// Records a relayed call's answer, whose outcome [`relayed_outcome`] read.
    pub(crate) fn finish_relayed(mut self, outcome: Outcome) {
        self.record_outcome(outcome, None);
    }

    fn record(&mut self, reply: Option<&McpReply>) {
        self.record_outcome(outcome(reply), reply);
    }

    /// Records `outcome`; `reply`, when there is one, says more (a rate limit; an unknown
    /// tool).
    fn record_outcome(&mut self, outcome: Outcome, reply: Option<&McpReply>) {
        self.finished = true;
        let seconds = self.started.elapsed().as_secs_f64();
        let (wire, handles) = (self.wire, self.handles);
        match &self.method {
            Label::Held(series) => handles.requests.record(series, wire, outcome, seconds),
            Label::Named(name) => {
                let family = handles.requests.family();
                family.record_uncached(wire, name, outcome, seconds);
            }
        }
        if let Some(Err(McpError::RateLimited { limit, .. })) = reply {
            super::rate_limited(wire, limit);
        }
        let Some(tool) = self.tool.take() else { return };
        // Unknown (or hidden) tools share one series: names a client makes up must not
        // grow the registry (nor the table).
        let unknown = matches!(
            reply,
            Some(Err(McpError::ToolNotFound(_)
                | McpError::InvalidParams(_)
                | McpError::MethodNotFound(_),))
        );
        let tools = &handles.tools;
        let series = match &tool {
            _ if unknown => tools.get_or_insert(UNKNOWN_TOOL),
            Label::Held(series) => Some(*series),
            Label::Named(name) => tools.get_or_insert(name),
        };
        match series {
            Some(series) => tools.record(series, wire, outcome, seconds),
            None => {
                let name = if unknown {
                    UNKNOWN_TOOL
                } else {
                    match &tool {
                        Label::Held(series) => series.value(),
                        Label::Named(name) => name,
                    }
                };
                tools.family().record_uncached(wire, name, outcome, seconds);
            }
        }
    }
}

impl Drop for CallMetrics {
    fn drop(&mut self) {
        if !self.finished {
            self.record(None);
        }
        self.handles.in_flight(self.wire).decrement(1.0);
    }
}

/// The tool a `tools/call` names (`None` for other methods or unreadable params), borrowed
/// from the params unless it holds escapes.
pub(super) fn tool_name<'a>(method: &Method, params: Option<&'a Raw>) -> Option<Cow<'a, str>> {
    if *method != Method::ToolsCall {
        return None;
    }
    let text = params?.get();
    // Most names: found by a scan that skips the other members (a stateless request's
    // `_meta`, the arguments) without decoding them, and written without escapes, so the
    // text between the quotes is the name; the rest are decoded.
    if let Some(name) =
        json_frame::plain_string_member(text.as_bytes(), "name", json_frame::MAX_NESTING)
    {
        return Some(Cow::Borrowed(name));
    }
    serde_json::from_str::<ToolName<'a>>(text)
        .ok()
        .map(|t| t.name)
}

/// `ok`, `tool_error` (a result with `isError: true`), `input_required`, `error` (a
/// JSON-RPC error) or `cancelled`.
pub(super) fn outcome(reply: Option<&McpReply>) -> Outcome {
    match reply {
        None => Outcome::Cancelled,
        Some(Err(_)) => Outcome::Error,
        Some(Ok(Reply::InputRequired(_))) => Outcome::InputRequired,
        Some(Ok(Reply::Complete(raw))) if is_error(raw.get()) => Outcome::ToolError,
        Some(Ok(Reply::Complete(_))) => Outcome::Ok,
    }
}

/// The outcome of a relayed call's answer `line` (a JSON-RPC response with a `result`):
/// `tool_error` when the result says `isError: true` (read like [`is_error`], from the
/// `result` member), else `ok`.
/// Whether a result may say `isError` (`json_frame::may_have_member`), prepared once.
static IS_ERROR: LazyLock<MemberProbe<'static>> = LazyLock::new(|| MemberProbe::new("isError"));

pub(crate) fn relayed_outcome(line: &[u8]) -> Outcome {
    #[derive(Deserialize)]
    struct Response {
        #[serde(default)]
        result: Option<IsError>,
    }
    // Most answers cannot say it: found so on the bytes, not decoded.
    if !IS_ERROR.may_be_in(line) {
        return Outcome::Ok;
    }
    match serde_json::from_slice::<Response>(line) {
        Ok(Response {
            result: Some(IsError { is_error: true }),
        }) => Outcome::ToolError,
        _ => Outcome::Ok,
    }
}

/// Whether a result says `isError: true`. A result that cannot have an `isError` member
/// (`json_frame::may_have_member`) is not parsed: most results.
fn is_error(result: &str) -> bool {
    if !IS_ERROR.may_be_in(result.as_bytes()) {
        return false;
    }
    matches!(
        serde_json::from_str::<IsError>(result),
        Ok(IsError { is_error: true })
    )
}

#[cfg(test)]
mod tests {
    use super::{is_error, tool_name};
    use mcpwire_model::{Method, Raw};

    #[test]
    fn the_tool_name_of_a_call_scanned_or_decoded() {
        let name = |method: &Method, params: &str| {
            let raw: Raw =
                serde_json::value::RawValue::from_string(params.to_owned()).expect("json");
            tool_name(method, Some(&raw)).map(|n| n.into_owned())
        };
        let call = Method::ToolsCall;
        for (params, expected) in [
            (r#"{"name":"echo","arguments":{}}"#, Some("echo")),
            (
                r#"{"arguments":{"name":"x"},"_meta":{"a":[1,{"name":"y"}]},"name":"add"}"#,
                Some("add"),
            ),
            (r#"{ "name" : "spaced" }"#, Some("spaced")),
            (r#"{"name":"café"}"#, Some("café")),
            (r#"{"name":"escaped_key"}"#, Some("escaped_key")),
            (r#"{"name":"a\"b"}"#, Some("a\"b")),
            (r#"{"name":7}"#, None),
            (r#"{"name":"a","name":"b"}"#, None),
            (r#"{"arguments":{}}"#, None),
        ] {
            assert_eq!(name(&call, params).as_deref(), expected, "{params}");
        }
        assert_eq!(name(&Method::PromptsGet, r#"{"name":"p"}"#), None);
    }

    #[test]
    fn is_error_reads_the_top_level_flag_only() {
        for (result, expected) in [
            (r#"{"content":[]}"#, false),
            (r#"{"content":[],"isError":true}"#, true),
            (r#"{"content":[],"isError":false}"#, false),
            (r#"{"content":[{"type":"text","text":"isError"}]}"#, false),
            (r#"{"structuredContent":{"isError":true}}"#, false),
            (r#"{"is\u0045rror":true}"#, true),
            (r#"{"text":"caf\u00e9"}"#, false),
            ("not json isError", false),
        ] {
            assert_eq!(is_error(result), expected, "{result}");
        }
    }
}
