//! `mcpwire_wire::json_frame` (the validating scan the relay, the forwarding path and the
//! metrics read frames with) on arbitrary bytes: input `[depth][frame]`.
//!
//! Invariants: no panic and no stack overflow, at any depth asked for; every claim the scan
//! makes — members and where their values are, a plain call (id, id text, tool, arguments),
//! plain params, a plain result, a string member, a member that cannot be there — agrees
//! with `serde_json` (and the model's decoder) reading the same bytes; a member replaced, and
//! an id spliced into a plain call or result, give JSON serde reads with the new value and
//! every other member as it was (the shared oracle, `crates/mcpwire-wire/tests/support/`).
//! The frame is also tried as a call's params, a call's id and a result, so structure the
//! fuzzer finds in one place is tried in the others; and as a request's method and params,
//! where `encode_request_line` must write what the codec writes.
#![no_main]

#[path = "../../crates/mcpwire-wire/tests/support/json_frame_oracle.rs"]
mod oracle;

use libfuzzer_sys::fuzz_target;
use mcpwire_model::RequestId;
use mcpwire_wire::json_frame::MAX_NESTING;
use serde_json::value::RawValue;

fuzz_target!(|data: &[u8]| {
    let Some((&depth, frame)) = data.split_first() else {
        return;
    };
    // Mostly small depths (where the limit bites), sometimes the cap.
    let depth = if depth == 0xff {
        MAX_NESTING
    } else {
        usize::from(depth % 12)
    };
    oracle::check(frame, depth);
    let wrapped = |before: &[u8], after: &[u8]| [before, frame, after].concat();
    let as_params = wrapped(
        br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"#,
        b"}",
    );
    oracle::check(&as_params, depth + 1);
    let as_id = wrapped(
        br#"{"jsonrpc":"2.0","id":"#,
        br#","method":"tools/call","params":{"name":"t","arguments":{}}}"#,
    );
    oracle::check(&as_id, depth.max(3));
    let as_result = wrapped(br#"{"id":7,"jsonrpc":"2.0","result":"#, b"}");
    oracle::check(&as_result, depth + 1);
    if let Ok(text) = std::str::from_utf8(frame) {
        let params = RawValue::from_string(text.to_owned()).ok();
        let id = RequestId::Int(i64::try_from(depth).unwrap_or_default() - 6);
        oracle::check_request_line(&id, text, params.as_deref());
        oracle::check_request_line(&RequestId::Str(text.into()), "tools/call", None);
    }
});
