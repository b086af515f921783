//! [`WireLabel`]: which wire a call or a refusal came in on, as the metrics' `wire` label.

/// The wire a call came in on: the `wire` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WireLabel {
    Stdio,
    Http,
    WebSocket,
    Grpc,
    Mcpb,
}

impl WireLabel {
    /// How many wires there are (the variants index arrays of handles).
    pub(crate) const COUNT: usize = 5;

    /// The label value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            WireLabel::Stdio => "stdio",
            WireLabel::Http => "http",
            WireLabel::WebSocket => "websocket",
            WireLabel::Grpc => "grpc",
            WireLabel::Mcpb => "mcpb",
        }
    }
}
