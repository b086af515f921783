//! The error table, written out: every variant × dialect → JSON-RPC code (with the keys of
//! its `data`), HTTP status and gRPC status. The same table is in `docs/design/errors.md`;
//! `the_design_doc_shows_this_table` keeps them identical (`MCPWIRE_BLESS=1` rewrites the
//! doc's copy).

use super::*;
use crate::Revision;

/// One row: a sample of the variant, its cells for bb-1.0, the stateful MCP revisions
/// (2024-11-05 … 2025-11-25, which must agree), 2026-07-28 and proto-mcp, then the HTTP
/// status and the gRPC code.
struct Row {
    error: McpError,
    bb: &'static str,
    stateful: &'static str,
    stateless: &'static str,
    proto: &'static str,
    http: u16,
    grpc: GrpcCode,
}

fn row(
    error: McpError,
    [bb, stateful, stateless, proto]: [&'static str; 4],
    http: u16,
    grpc: GrpcCode,
) -> Row {
    Row {
        error,
        bb,
        stateful,
        stateless,
        proto,
        http,
        grpc,
    }
}

fn s(v: &str) -> String {
    v.to_owned()
}

fn table() -> Vec<Row> {
    use GrpcCode::*;
    let same = |c: &'static str| [c, c, c, c];
    let tool = || McpError::InvalidToolParams {
        tool: s("t"),
        message: s("m"),
    };
    let failed = || McpError::ToolFailed {
        tool: s("t"),
        message: s("m"),
    };
    let version = McpError::UnsupportedVersion {
        requested: s("9"),
        supported: vec![s("1")],
    };
    let capability = McpError::MissingCapability {
        capability: s("sampling"),
        required: serde_json::json!({ "sampling": {} }),
    };
    vec![
        row(
            McpError::ParseError(s("x")),
            same("-32700"),
            400,
            InvalidArgument,
        ),
        row(
            McpError::InvalidRequest(s("x")),
            same("-32600"),
            400,
            InvalidArgument,
        ),
        row(
            McpError::DuplicateRequestId,
            same("-32600"),
            400,
            InvalidArgument,
        ),
        row(
            McpError::AlreadyInitialized,
            same("-32600"),
            400,
            FailedPrecondition,
        ),
        row(
            McpError::InvalidParams(s("x")),
            same("-32602"),
            400,
            InvalidArgument,
        ),
        row(
            McpError::MethodNotFound(s("x")),
            same("-32601"),
            404,
            Unimplemented,
        ),
        row(
            McpError::NotInitialized,
            same("-32003"),
            400,
            FailedPrecondition,
        ),
        row(
            McpError::ToolNotFound(s("t")),
            ["-32000 {tool}", "-32602", "-32602", "-32602"],
            400,
            NotFound,
        ),
        row(
            tool(),
            [
                "-32002 {error,tool}",
                "-32602",
                "-32602",
                "-33001 {error,tool}",
            ],
            400,
            InvalidArgument,
        ),
        row(
            McpError::ResourceNotFound(s("u")),
            [
                "-32602 {uri}",
                "-32002 {uri}",
                "-32602 {uri}",
                "-32002 {uri}",
            ],
            400,
            NotFound,
        ),
        row(
            McpError::PromptNotFound(s("p")),
            same("-32602"),
            400,
            NotFound,
        ),
        row(
            McpError::SchemaUnresolved(s("x")),
            ["-32602", "-32602", "-32602", "-33000"],
            400,
            FailedPrecondition,
        ),
        row(
            version,
            [
                "-32602 {requested,supported}",
                "-32602 {requested,supported}",
                "-32022 {requested,supported}",
                "-33002 {requested,supported}",
            ],
            400,
            FailedPrecondition,
        ),
        row(
            capability,
            [
                "-32600 {requiredCapabilities}",
                "-32600 {requiredCapabilities}",
                "-32021 {requiredCapabilities}",
                "-32600 {requiredCapabilities}",
            ],
            400,
            FailedPrecondition,
        ),
        row(
            McpError::HeaderMismatch(s("x")),
            ["-32600", "-32600", "-32020", "-32600"],
            400,
            InvalidArgument,
        ),
        row(
            McpError::BadHeader(s("x")),
            same("-32600"),
            400,
            InvalidArgument,
        ),
        row(
            McpError::SessionRequired,
            same("-32600"),
            400,
            InvalidArgument,
        ),
        row(McpError::SessionNotFound, same("-32600"), 404, NotFound),
        row(
            McpError::Forbidden(s("Origin")),
            same("-32600"),
            403,
            PermissionDenied,
        ),
        row(
            McpError::UnsupportedMediaType(s("x")),
            same("-32600"),
            415,
            InvalidArgument,
        ),
        row(
            McpError::NotAcceptable(s("x")),
            same("-32600"),
            406,
            InvalidArgument,
        ),
        row(
            McpError::MethodNotAllowed(s("x")),
            same("-32600"),
            405,
            Unimplemented,
        ),
        row(
            McpError::MessageTooLarge { max: 1 },
            same("-32600"),
            413,
            ResourceExhausted,
        ),
        row(
            McpError::BodyTimeout { secs: 1.0 },
            same("-32600"),
            408,
            DeadlineExceeded,
        ),
        row(
            McpError::Unauthenticated(s("x")),
            same("-32600"),
            401,
            Unauthenticated,
        ),
        row(
            McpError::InsufficientScope(s("x")),
            same("-32600"),
            403,
            PermissionDenied,
        ),
        row(
            McpError::Unavailable(s("x")),
            same("-32603"),
            503,
            Unavailable,
        ),
        row(
            McpError::LimitExceeded(s("x")),
            same("-32600"),
            400,
            ResourceExhausted,
        ),
        row(
            McpError::RateLimited {
                limit: s("ip"),
                retry_after_secs: 1,
            },
            same("-32600 {limit,retryAfter}"),
            429,
            ResourceExhausted,
        ),
        row(
            McpError::Timeout,
            ["-32603", "-32001", "-32001", "-33003"],
            200,
            DeadlineExceeded,
        ),
        row(
            failed(),
            ["-32001 {error,tool}", "-32603", "-32603", "-32603"],
            200,
            Unknown,
        ),
        row(
            McpError::Cancelled,
            ["-32603", "-32001", "-32001", "-32001"],
            200,
            Cancelled,
        ),
        row(McpError::InputRequired, same("-32603"), 500, Internal),
        row(
            McpError::UrlElicitationRequired {
                message: s("authorize"),
                elicitations: Vec::new(),
            },
            same("-32042 {elicitations}"),
            200,
            FailedPrecondition,
        ),
        row(
            McpError::Wire(McpError::InvalidParams(s("x")).to_wire(Revision::V2025_11_25)),
            same("-32602"),
            400,
            InvalidArgument,
        ),
        row(
            McpError::ConnectionClosed(s("x")),
            same("-32603"),
            502,
            Unavailable,
        ),
        row(
            McpError::BadPeerMessage(s("x")),
            same("-32603"),
            502,
            Internal,
        ),
        row(McpError::Internal(s("x")), same("-32603"), 500, Internal),
    ]
}

/// The variant's name, and its index among the variants: the match is exhaustive, so a new
/// variant does not compile until it is named here, and `VARIANTS` makes the test fail until
/// it has a row.
fn variant(e: &McpError) -> (&'static str, usize) {
    match e {
        McpError::ParseError(_) => ("ParseError", 0),
        McpError::InvalidRequest(_) => ("InvalidRequest", 1),
        McpError::DuplicateRequestId => ("DuplicateRequestId", 2),
        McpError::AlreadyInitialized => ("AlreadyInitialized", 3),
        McpError::InvalidParams(_) => ("InvalidParams", 4),
        McpError::MethodNotFound(_) => ("MethodNotFound", 5),
        McpError::NotInitialized => ("NotInitialized", 6),
        McpError::ToolNotFound(_) => ("ToolNotFound", 7),
        McpError::InvalidToolParams { .. } => ("InvalidToolParams", 8),
        McpError::ResourceNotFound(_) => ("ResourceNotFound", 9),
        McpError::PromptNotFound(_) => ("PromptNotFound", 10),
        McpError::SchemaUnresolved(_) => ("SchemaUnresolved", 11),
        McpError::UnsupportedVersion { .. } => ("UnsupportedVersion", 12),
        McpError::MissingCapability { .. } => ("MissingCapability", 13),
        McpError::HeaderMismatch(_) => ("HeaderMismatch", 14),
        McpError::BadHeader(_) => ("BadHeader", 15),
        McpError::SessionRequired => ("SessionRequired", 16),
        McpError::SessionNotFound => ("SessionNotFound", 17),
        McpError::Forbidden(_) => ("Forbidden", 18),
        McpError::UnsupportedMediaType(_) => ("UnsupportedMediaType", 19),
        McpError::NotAcceptable(_) => ("NotAcceptable", 20),
        McpError::MethodNotAllowed(_) => ("MethodNotAllowed", 21),
        McpError::MessageTooLarge { .. } => ("MessageTooLarge", 22),
        McpError::BodyTimeout { .. } => ("BodyTimeout", 23),
        McpError::Unauthenticated(_) => ("Unauthenticated", 24),
        McpError::Unavailable(_) => ("Unavailable", 25),
        McpError::LimitExceeded(_) => ("LimitExceeded", 26),
        McpError::Timeout => ("Timeout", 27),
        McpError::ToolFailed { .. } => ("ToolFailed", 28),
        McpError::Cancelled => ("Cancelled", 29),
        McpError::InputRequired => ("InputRequired", 30),
        McpError::Wire(_) => ("Wire", 31),
        McpError::Internal(_) => ("Internal", 32),
        McpError::ConnectionClosed(_) => ("ConnectionClosed", 33),
        McpError::BadPeerMessage(_) => ("BadPeerMessage", 34),
        McpError::InsufficientScope(_) => ("InsufficientScope", 35),
        McpError::RateLimited { .. } => ("RateLimited", 36),
        McpError::UrlElicitationRequired { .. } => ("UrlElicitationRequired", 37),
    }
}

const VARIANTS: usize = 38;

/// Variants raised before a revision is known (codecs, HTTP handlers before a session):
/// every revision must spell them the same.
fn unnegotiated(e: &McpError) -> bool {
    matches!(
        e,
        McpError::ParseError(_)
            | McpError::InvalidRequest(_)
            | McpError::BadHeader(_)
            | McpError::SessionRequired
            | McpError::SessionNotFound
            | McpError::Forbidden(_)
            | McpError::UnsupportedMediaType(_)
            | McpError::NotAcceptable(_)
            | McpError::MethodNotAllowed(_)
            | McpError::MessageTooLarge { .. }
            | McpError::BodyTimeout { .. }
            | McpError::Unauthenticated(_)
            | McpError::InsufficientScope(_)
            | McpError::Unavailable(_)
            | McpError::RateLimited { .. }
            | McpError::Internal(_)
    )
}

/// A code and the keys of its data: `-32002 {error,tool}`.
fn cell(o: &ErrorObject) -> String {
    let keys = o
        .data
        .as_ref()
        .and_then(|d| {
            serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(d.get()).ok()
        })
        .map(|m| m.keys().cloned().collect::<Vec<_>>().join(","));
    match keys {
        Some(k) => format!("{} {{{k}}}", o.code),
        None => o.code.to_string(),
    }
}

const STATEFUL: [Revision; 4] = [
    Revision::V2024_11_05,
    Revision::V2025_03_26,
    Revision::V2025_06_18,
    Revision::V2025_11_25,
];

#[test]
fn every_variant_on_every_revision() {
    let rows = table();
    let mut seen = [false; VARIANTS];
    for r in &rows {
        let (name, i) = variant(&r.error);
        assert!(!seen[i], "{name} has two rows");
        seen[i] = true;
        let got = |rev: Revision| cell(&r.error.to_wire(rev));
        assert_eq!(got(Revision::Bb1_0), r.bb, "{name} in bb-1.0");
        for rev in STATEFUL {
            assert_eq!(got(rev), r.stateful, "{name} in {rev}");
        }
        assert_eq!(
            got(Revision::V2026_07_28),
            r.stateless,
            "{name} in 2026-07-28"
        );
        assert_eq!(got(Revision::ProtoMcp1), r.proto, "{name} in proto-mcp");
        assert_eq!(r.error.http_status(), r.http, "{name}: HTTP status");
        assert_eq!(r.error.grpc_code(), r.grpc, "{name}: gRPC code");
        for rev in Revision::ALL {
            // The statuses travel with the error object, whatever the revision.
            let wire = r.error.to_wire(rev);
            assert_eq!(
                wire.http_status(),
                r.http,
                "{name} in {rev}: carried HTTP status"
            );
            assert_eq!(
                wire.grpc_code(),
                r.grpc,
                "{name} in {rev}: carried gRPC code"
            );
        }
        if unnegotiated(&r.error) {
            let first = r.error.to_wire(Revision::ALL[0]);
            for rev in Revision::ALL {
                assert_eq!(r.error.to_wire(rev), first, "{name} differs in {rev}");
            }
            assert_eq!(r.error.to_wire_unnegotiated(), first);
        }
    }
    if let Some(i) = seen.iter().position(|s| !s) {
        panic!("variant #{i} has no row in the error table");
    }
}

#[test]
fn bb_keeps_its_messages_and_data() {
    let b = Revision::Bb1_0;
    let failed = McpError::ToolFailed {
        tool: s("t"),
        message: s("boom"),
    }
    .to_wire(b);
    assert_eq!(failed.message, "Tool execution failed");
    assert_eq!(failed.data.unwrap().get(), r#"{"error":"boom","tool":"t"}"#);
    let missing = McpError::ToolNotFound(s("x")).to_wire(b);
    assert_eq!(missing.message, "Tool not found");
    assert_eq!(missing.data.unwrap().get(), r#"{"tool":"x"}"#);
    assert_eq!(
        McpError::InvalidToolParams {
            tool: s("t"),
            message: s("m")
        }
        .to_wire(b)
        .message,
        "Invalid tool params"
    );
}

#[test]
fn a_peers_error_passes_through_unchanged() {
    let peer: ErrorObject =
        serde_json::from_str(r#"{"code":-32042,"message":"go there","data":{"u":1}}"#).unwrap();
    let wire = McpError::Wire(peer.clone()).to_wire(Revision::Bb1_0);
    assert_eq!(wire, peer);
    assert_eq!(wire.http_status(), 200);
    assert_eq!(wire.grpc_code(), GrpcCode::Unknown);
}

#[test]
fn tool_result_errors_by_revision() {
    let bad = McpError::InvalidToolParams {
        tool: s("t"),
        message: s("m"),
    };
    let failed = McpError::ToolFailed {
        tool: s("t"),
        message: s("m"),
    };
    for r in [Revision::V2025_11_25, Revision::V2026_07_28] {
        assert!(bad.is_tool_result_error(r), "{r:?}");
        assert!(failed.is_tool_result_error(r), "{r:?}");
    }
    // Before SEP-1303 invalid arguments were a protocol error (−32602).
    for r in [
        Revision::V2024_11_05,
        Revision::V2025_03_26,
        Revision::V2025_06_18,
    ] {
        assert!(!bad.is_tool_result_error(r), "{r:?}");
        assert!(failed.is_tool_result_error(r), "{r:?}");
    }
    assert!(!bad.is_tool_result_error(Revision::ProtoMcp1));
    assert!(failed.is_tool_result_error(Revision::ProtoMcp1));
    assert!(!failed.is_tool_result_error(Revision::Bb1_0));
}

/// The table as markdown, one row per variant.
fn markdown() -> String {
    let mut out = String::from(
        "| Variant | bb-1.0 | 2024-11-05 … 2025-11-25 | 2026-07-28 | proto-mcp | HTTP | gRPC |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for r in table() {
        let (name, _) = variant(&r.error);
        out.push_str(&format!(
            "| `{name}` | {} | {} | {} | {} | {} | {:?} |\n",
            r.bb, r.stateful, r.stateless, r.proto, r.http, r.grpc
        ));
    }
    out
}

const BEGIN: &str = "<!-- error-table:begin (generated by mcpwire-model's error tests) -->\n";
const END: &str = "<!-- error-table:end -->";

#[test]
fn the_design_doc_shows_this_table() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/design/errors.md");
    let doc = std::fs::read_to_string(path).expect("docs/design/errors.md");
    let (head, rest) = doc.split_once(BEGIN).expect("the doc has the begin marker");
    let (shown, tail) = rest.split_once(END).expect("the doc has the end marker");
    let want = markdown();
    if shown != want {
        if std::env::var_os("MCPWIRE_BLESS").is_some() {
            std::fs::write(path, format!("{head}{BEGIN}{want}{END}{tail}")).expect("write doc");
            return;
        }
        panic!(
            "docs/design/errors.md is out of date (run with MCPWIRE_BLESS=1); the table is:\n{want}"
        );
    }
}

#[test]
fn a_peers_standard_error_keeps_its_statuses() {
    let peer = |code: i64| -> ErrorObject {
        serde_json::from_str(&format!(r#"{{"code":{code},"message":"m"}}"#)).unwrap()
    };
    assert_eq!(peer(-32601).http_status(), 404);
    assert_eq!(peer(-32601).grpc_code(), GrpcCode::Unimplemented);
    assert_eq!(peer(-32602).http_status(), 400);
    assert_eq!(peer(-32020).http_status(), 400);
    assert_eq!(peer(-32603).http_status(), 500);
    // A code whose meaning only the peer knows stays an ordinary answer.
    assert_eq!(peer(-32000).http_status(), 200);
    assert_eq!(peer(-32000).grpc_code(), GrpcCode::Unknown);
}
