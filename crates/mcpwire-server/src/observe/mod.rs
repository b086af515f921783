//! Metrics: the names every listener records under, the Prometheus recorder behind the
//! admin listener's `/metrics`, and the recording helpers the shell shares
//! (`docs/design/operations.md`).
//!
//! Recording goes through the `metrics` facade: until [`prometheus`] installs the
//! recorder (the admin listener does, once per process), every recording is a no-op, so a
//! server without an admin listener pays nothing for it.

mod calls;
mod handles;
mod logs;
#[cfg(feature = "mcpb")]
mod mcpb;
mod spans;
mod trace;
mod wire_label;

#[cfg(feature = "admin")]
use std::sync::OnceLock;
use std::time::Duration;

#[cfg(feature = "admin")]
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

pub(crate) use calls::{CallMetrics, relayed_outcome};
pub use logs::{
    ANNOUNCE_DIRECTIVE, ANNOUNCE_TARGET, LogFormat, announce, log_format, set_log_format,
};
#[cfg(feature = "mcpb")]
pub(crate) use mcpb::{Counted, Direction, FrameKind, McpbMetrics, ProtocolError};
pub use spans::REQUEST_TARGET;
pub(crate) use spans::{finish_span, finish_span_as, relayed_span, request_span};
pub use trace::outgoing as outgoing_trace;
pub use trace::{
    Propagation, TRACEPARENT, TRACESTATE, TelemetryConfig, TraceParent, active as tracing_active,
    install_propagation, set_active as set_tracing_active,
};
pub(crate) use wire_label::WireLabel;

/// MCPB connections accepted (`mcp_gateway_tcp_connections_total`).
pub const TCP_CONNECTIONS_TOTAL: &str = "mcp_gateway_tcp_connections_total";
/// MCPB connections open now.
pub const TCP_CONNECTIONS_ACTIVE: &str = "mcp_gateway_tcp_connections_active";
/// MCPB frames by `type` and `direction`.
pub const TCP_MESSAGES_TOTAL: &str = "mcp_gateway_tcp_messages_total";
/// MCPB bytes by `direction`.
pub const TCP_BYTES_TOTAL: &str = "mcp_gateway_tcp_bytes_total";
/// MCPB protocol errors by `type`.
pub const TCP_PROTOCOL_ERRORS_TOTAL: &str = "mcp_gateway_tcp_protocol_errors_total";
/// Time an MCPB listener spends on one inbound frame.
pub const TCP_MESSAGE_DURATION: &str = "mcp_gateway_tcp_message_duration_seconds";
/// Requests answered, by `wire`, `method` and `outcome`.
pub const REQUESTS_TOTAL: &str = "mcpwire_requests_total";
/// Requests being answered now, by `wire`.
pub const REQUESTS_IN_FLIGHT: &str = "mcpwire_requests_in_flight";
/// Request durations, by `wire` and `method`.
pub const REQUEST_DURATION: &str = "mcpwire_request_duration_seconds";
/// Tool calls answered, by `wire`, `tool` and `outcome`.
pub const TOOL_CALLS_TOTAL: &str = "mcpwire_tool_calls_total";
/// Tool call durations, by `wire` and `tool`.
pub const TOOL_CALL_DURATION: &str = "mcpwire_tool_call_duration_seconds";
/// Refused credentials, by `reason`.
pub const AUTH_FAILURES_TOTAL: &str = "mcpwire_auth_failures_total";
/// Requests and connections a limit refused, by `wire` and `limit` (`identity`, `ip`,
/// `tool`, `connections`).
pub const RATE_LIMITED_TOTAL: &str = "mcpwire_rate_limited_total";
/// TLS handshakes that failed, by `reason` (`error`: refused or not TLS, `timeout`,
/// `per_ip`: too many in progress from the address); counted by `tls` itself, which
/// depends on nothing here (so `observe` may use `fetch`, which uses `tls`).
pub use crate::tls::HANDSHAKE_FAILURES_TOTAL as TLS_HANDSHAKE_FAILURES_TOTAL;
/// Whether a backend answers its lists (1) or not (0), by `backend` and `fail`.
pub const BACKEND_UP: &str = "mcpwire_backend_up";
/// Sessions a backend holds open for downstream sessions (an upstream's per-session
/// children or sessions), by `backend`.
pub const BACKEND_SESSIONS: &str = "mcpwire_backend_sessions";

/// Cluster session events by `event` (`mcpwire_cluster_sessions_total`): `started` (a sealed
/// id minted here), `resumed` (a session continued here from a sealed id), `refused` (a
/// sealed id that did not open or named another caller), `ended` (`DELETE`).
pub const CLUSTER_SESSIONS_TOTAL: &str = "mcpwire_cluster_sessions_total";
/// Cluster store operations that failed (`mcpwire_cluster_store_errors_total`), by `use`
/// (`session`, `rate`, `task`, `relay`, `replay`: a stream event not logged for other
/// replicas, or a log that could not be read).
pub const CLUSTER_STORE_ERRORS_TOTAL: &str = "mcpwire_cluster_store_errors_total";
/// Client messages relayed between replicas (`mcpwire_cluster_relayed_total`), by `event`:
/// `sent` (published for another replica), `delivered` (taken from another replica into a
/// session held here), `resumed` (a stream another replica wrote resumed here from its
/// replay log).
pub const CLUSTER_RELAYED_TOTAL: &str = "mcpwire_cluster_relayed_total";

/// Histogram buckets for durations, in seconds: 100 µs to 60 s.
#[cfg(feature = "admin")]
const DURATION_BUCKETS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0, 30.0, 60.0,
];

/// Histogram buckets for the gateway's tool searches (`mcpwire_search_*`, recorded by
/// `mcpwire-federation`), in seconds: 10 µs to 100 ms — a lexical search takes tens of
/// microseconds.
#[cfg(feature = "admin")]
pub const SEARCH_DURATION_BUCKETS: &[f64] = &[
    0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
    0.1,
];

/// The prefix of the histograms [`SEARCH_DURATION_BUCKETS`] applies to.
#[cfg(feature = "admin")]
pub const SEARCH_METRICS_PREFIX: &str = "mcpwire_search_";

/// How often histogram samples are folded into their buckets between scrapes (keeps the
/// recorder's pending samples bounded when nobody scrapes).
#[cfg(feature = "admin")]
pub(crate) const UPKEEP_EVERY: Duration = Duration::from_secs(5);

#[cfg(feature = "admin")]
static RECORDER: OnceLock<Option<PrometheusHandle>> = OnceLock::new();

#[cfg(feature = "admin")]
/// The process's Prometheus recorder, installed on first use (`None`: another global
/// `metrics` recorder was installed first, e.g. by an embedding application).
pub fn prometheus() -> Option<&'static PrometheusHandle> {
    RECORDER
        .get_or_init(|| {
            let recorder = PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), DURATION_BUCKETS)
                .ok()?
                .set_buckets_for_metric(
                    Matcher::Prefix(SEARCH_METRICS_PREFIX.into()),
                    SEARCH_DURATION_BUCKETS,
                )
                .ok()?
                .build_recorder();
            let handle = recorder.handle();
            metrics::set_global_recorder(recorder).ok()?;
            describe();
            calls::enable();
            Some(handle)
        })
        .as_ref()
}

#[cfg(feature = "admin")]
fn describe() {
    use metrics::{Unit, describe_counter, describe_gauge, describe_histogram};
    describe_counter!(TCP_CONNECTIONS_TOTAL, "MCPB connections accepted");
    describe_gauge!(TCP_CONNECTIONS_ACTIVE, "MCPB connections open now");
    describe_counter!(TCP_MESSAGES_TOTAL, "MCPB frames by type and direction");
    describe_counter!(TCP_BYTES_TOTAL, Unit::Bytes, "MCPB bytes by direction");
    describe_counter!(TCP_PROTOCOL_ERRORS_TOTAL, "MCPB protocol errors by type");
    describe_histogram!(
        TCP_MESSAGE_DURATION,
        Unit::Seconds,
        "Time the MCPB listener spends on one inbound frame"
    );
    describe_counter!(
        REQUESTS_TOTAL,
        "Requests answered by wire, method and outcome"
    );
    describe_gauge!(REQUESTS_IN_FLIGHT, "Requests being answered now by wire");
    describe_histogram!(
        REQUEST_DURATION,
        Unit::Seconds,
        "Request durations by wire and method"
    );
    describe_counter!(
        TOOL_CALLS_TOTAL,
        "Tool calls answered by wire, tool and outcome"
    );
    describe_histogram!(
        TOOL_CALL_DURATION,
        Unit::Seconds,
        "Tool call durations by wire and tool"
    );
    describe_counter!(AUTH_FAILURES_TOTAL, "Refused credentials by reason");
    describe_counter!(
        RATE_LIMITED_TOTAL,
        "Requests and connections refused by a limit, by wire and limit"
    );
    describe_counter!(
        TLS_HANDSHAKE_FAILURES_TOTAL,
        "Failed TLS handshakes on the listeners by reason"
    );
    describe_gauge!(BACKEND_UP, "1 when the backend answers its lists, else 0");
    describe_gauge!(
        BACKEND_SESSIONS,
        "Sessions a backend holds open for downstream sessions (per-session upstream children)"
    );
    describe_counter!(
        CLUSTER_SESSIONS_TOTAL,
        "Replica-set session events by event (started, resumed, refused, ended)"
    );
    describe_counter!(
        CLUSTER_STORE_ERRORS_TOTAL,
        "Shared store operations that failed, by use"
    );
    describe_counter!(
        CLUSTER_RELAYED_TOTAL,
        "Client messages relayed to or from another replica, by event (sent, delivered)"
    );
}

/// Counts one replica-set session event (see [`CLUSTER_SESSIONS_TOTAL`]).
pub(crate) fn replica_session(event: &'static str) {
    metrics::counter!(CLUSTER_SESSIONS_TOTAL, "event" => event).increment(1);
}

/// Counts one client message or stream relayed between replicas (see
/// [`CLUSTER_RELAYED_TOTAL`]).
pub fn replica_relayed(event: &'static str) {
    metrics::counter!(CLUSTER_RELAYED_TOTAL, "event" => event).increment(1);
}

/// Counts one failed store operation (see [`CLUSTER_STORE_ERRORS_TOTAL`]).
pub fn store_error(used_for: &'static str) {
    metrics::counter!(CLUSTER_STORE_ERRORS_TOTAL, "use" => used_for).increment(1);
}

/// Counts one refused credential (`reason`: the failure's kind).
pub(crate) fn auth_failure(reason: &'static str) {
    metrics::counter!(AUTH_FAILURES_TOTAL, "reason" => reason).increment(1);
}

/// Counts one refusal by a rate or connection limit (see [`RATE_LIMITED_TOTAL`]); `limit`
/// is the refusal's `data.limit`, any other text counts as `other`.
pub(crate) fn rate_limited(wire: WireLabel, limit: &str) {
    let limit = match limit {
        "identity" => "identity",
        "ip" => "ip",
        "tool" => "tool",
        "connections" => "connections",
        _ => "other",
    };
    metrics::counter!(RATE_LIMITED_TOTAL, "wire" => wire.as_str(), "limit" => limit).increment(1);
}
