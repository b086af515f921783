//! [`ForwardedCall`]: a `tools/call` whose params can go to another server exactly as they
//! came — the gateway's fast path past parsing (`Backend::forward_tool_call`).
//!
//! A call qualifies when its params are nothing but a `name` (a string written without
//! escapes) and, maybe, an `arguments` object: then parsing them into a
//! [`BackendRequest::CallTool`](crate::BackendRequest) and writing them out again would
//! give the same JSON. Anything else (`_meta`, a `task`, a member the general path would
//! drop, a name the general path would unescape, a key written with escapes) is not one,
//! and takes the general path. The rule is `mcpwire_wire::json_frame::plain_params`, the
//! one the stdio relay reads calls with.

use std::ops::Range;

use mcpwire_model::Raw;
use mcpwire_wire::json_frame::{MAX_NESTING, plain_params};
use serde_json::value::RawValue;

use crate::CallCtx;
use crate::request::BackendRequest;

/// A `tools/call` to forward with its params as received.
#[derive(Debug)]
pub struct ForwardedCall {
    /// The call's context.
    pub ctx: CallCtx,
    /// The request's params: `{"name": …}` or `{"name": …, "arguments": {…}}`.
    pub params: Raw,
    /// Where the tool's name sits in `params`.
    name: Range<usize>,
}

impl ForwardedCall {
    /// The call in `ctx` with `params`, when they qualify (see the module docs); the
    /// params back otherwise.
    pub fn new(ctx: CallCtx, params: Raw) -> Result<ForwardedCall, (CallCtx, Raw)> {
        match plain_name(&params) {
            Some(name) => Ok(ForwardedCall { ctx, params, name }),
            None => Err((ctx, params)),
        }
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        self.params.get().get(self.name.clone()).unwrap_or_default()
    }

    /// The call's parts back.
    pub fn into_parts(self) -> (CallCtx, Raw) {
        (self.ctx, self.params)
    }

    /// The call as the general path would give it to [`Backend::call`](crate::Backend::call)
    /// (a layer that took a forwarded call and must run it the general way after all).
    pub fn into_request(self) -> (CallCtx, BackendRequest) {
        #[derive(serde::Deserialize)]
        struct Arguments {
            arguments: Option<Raw>,
        }
        let name = self.name().to_owned();
        // The params qualified (see `plain_name`): they parse, and `arguments` is an object.
        let arguments = serde_json::from_str::<Arguments>(self.params.get())
            .ok()
            .and_then(|a| a.arguments);
        (self.ctx, BackendRequest::CallTool { name, arguments })
    }
}

/// Where the name sits in `params` when they are only a plain `name` and an `arguments`
/// object (`mcpwire_wire::json_frame::plain_params`).
fn plain_name(params: &RawValue) -> Option<Range<usize>> {
    plain_params(params.get().as_bytes(), MAX_NESTING).map(|p| p.name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcpwire_model::Revision;
    use tokio_util::sync::CancellationToken;

    fn call(params: &str) -> Result<String, String> {
        let ctx = CallCtx::new(
            Revision::LATEST_STATEFUL,
            Default::default(),
            CancellationToken::new(),
            None,
        );
        let raw = RawValue::from_string(params.to_owned()).unwrap();
        match ForwardedCall::new(ctx, raw) {
            Ok(c) => Ok(c.name().to_owned()),
            Err((_, p)) => Err(p.get().to_owned()),
        }
    }

    #[test]
    fn plain_calls_qualify_and_name_their_tool() {
        assert_eq!(
            call(r#"{"name":"echo","arguments":{"text":"hi"}}"#),
            Ok("echo".into())
        );
        assert_eq!(
            call(r#"{ "arguments" : {} , "name" : "a-b" }"#),
            Ok("a-b".into())
        );
        assert_eq!(call(r#"{"name":"only"}"#), Ok("only".into()));
        assert_eq!(call(r#"{"name":"é"}"#), Ok("é".into()));
    }

    #[test]
    fn a_forwarded_call_becomes_the_general_request() {
        let ctx = CallCtx::new(
            Revision::LATEST_STATEFUL,
            Default::default(),
            CancellationToken::new(),
            None,
        );
        let raw = RawValue::from_string(r#"{"arguments":{"a":[1,2]},"name":"echo"}"#.into());
        let call = ForwardedCall::new(ctx, raw.unwrap()).unwrap();
        match call.into_request().1 {
            BackendRequest::CallTool { name, arguments } => {
                assert_eq!(name, "echo");
                assert_eq!(
                    arguments.map(|a| a.get().to_owned()).as_deref(),
                    Some(r#"{"a":[1,2]}"#)
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn anything_the_general_path_would_change_does_not() {
        for p in [
            r#"{"name":"echo","_meta":{"progressToken":1}}"#,
            r#"{"name":"echo","task":{"ttl":1}}"#,
            r#"{"name":"echo","extra":1}"#,
            r#"{"name":"e\u0063ho"}"#,
            r#"{"name":"echo","arguments":[1]}"#,
            r#"{"name":"echo","arguments":"x"}"#,
            r#"{"name":"echo","arguments":null}"#,
            r#"{"name":"echo","name":"other"}"#,
            r#"{"arguments":{}}"#,
            r#"{"name":1}"#,
        ] {
            assert_eq!(call(p), Err(p.to_owned()), "{p}");
        }
    }
}
