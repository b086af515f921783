//! What `#[tool]`, `#[prompt]` and `#[resource]` functions may return.
//!
//! Each kind has two traits: one for the value itself (`IntoToolResult`,
//! [`IntoPromptResult`], [`IntoResourceContents`]) and one for what a function returns,
//! which adds `Result<T, E>` with any displayable `E` (and `Option<T>` for resources). An
//! [`McpError`] or [`ToolError`] inside the `Err` keeps its meaning, so `?` on a client ask
//! still ends the call with `input_required` in 2026-07-28.

use std::any::Any;
use std::error::Error as StdError;
use std::fmt::Display;

use base64::Engine;
use mcpwire_model::McpError;
use mcpwire_model::types::{GetPromptResult, PromptMessage, ResourceContents};
use schemars::JsonSchema;
use serde::Serialize;

use crate::{IntoToolResult, Json, ToolError};

/// What a `#[tool]` function may return: a tool result (`String`, `Content`,
/// `Vec<Content>`, `CallToolResult`, `Json<T>`, `()`), or a `Result` of one whose error is
/// displayable.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from a tool",
    label = "not a tool result",
    note = "return String, Content, Vec<Content>, CallToolResult, Json<T> or (), or a Result of one whose error implements Display",
    note = "wrap serializable data in `Json(..)` to return structured content with an output schema"
)]
pub trait IntoToolOutput {
    /// The successful result.
    type Output: IntoToolResult;
    /// Splits into a result or a tool error.
    fn into_tool_output(self) -> Result<Self::Output, ToolError>;
}

impl<T: IntoToolResult> IntoToolOutput for T {
    type Output = T;
    fn into_tool_output(self) -> Result<T, ToolError> {
        Ok(self)
    }
}

impl<T: IntoToolResult, E: Display + 'static> IntoToolOutput for Result<T, E> {
    type Output = T;
    fn into_tool_output(self) -> Result<T, ToolError> {
        self.map_err(tool_error)
    }
}

/// A displayable error as a [`ToolError`]: a `ToolError` or [`McpError`] (also boxed)
/// keeps its meaning, anything else becomes a failed tool result with its message.
pub fn tool_error<E: Display + 'static>(e: E) -> ToolError {
    let mut slot = Some(e);
    let any: &mut dyn Any = &mut slot;
    if let Some(t) = any
        .downcast_mut::<Option<ToolError>>()
        .and_then(Option::take)
    {
        return t;
    }
    if let Some(m) = any
        .downcast_mut::<Option<McpError>>()
        .and_then(Option::take)
    {
        return ToolError::from(m);
    }
    type Boxed = Box<dyn StdError + Send + Sync>;
    if let Some(b) = any.downcast_mut::<Option<Boxed>>().and_then(Option::take) {
        return ToolError::from(b);
    }
    match slot {
        Some(e) => ToolError::new(e.to_string()),
        None => ToolError::new("error"),
    }
}

/// A displayable error as an [`McpError`]: an `McpError` (also inside a [`ToolError`])
/// keeps its meaning, anything else becomes `otherwise(message)`.
fn mcp_error<E: Display + 'static>(e: E, otherwise: impl FnOnce(String) -> McpError) -> McpError {
    let mut slot = Some(e);
    let any: &mut dyn Any = &mut slot;
    if let Some(m) = any
        .downcast_mut::<Option<McpError>>()
        .and_then(Option::take)
    {
        return m;
    }
    if let Some(t) = any
        .downcast_mut::<Option<ToolError>>()
        .and_then(Option::take)
    {
        return t.into_mcp_or(otherwise);
    }
    match slot {
        Some(e) => otherwise(e.to_string()),
        None => otherwise("error".into()),
    }
}

/// A prompt's messages: `GetPromptResult`, `Vec<PromptMessage>`, one `PromptMessage`, or
/// text (one user message).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from a prompt",
    label = "not a prompt result",
    note = "return String, PromptMessage, Vec<PromptMessage> or GetPromptResult, or a Result of one whose error implements Display"
)]
pub trait IntoPromptResult {
    /// Converts into a `prompts/get` result.
    fn into_prompt_result(self) -> GetPromptResult;
}

impl IntoPromptResult for GetPromptResult {
    fn into_prompt_result(self) -> GetPromptResult {
        self
    }
}

impl IntoPromptResult for Vec<PromptMessage> {
    fn into_prompt_result(self) -> GetPromptResult {
        GetPromptResult {
            description: None,
            messages: self,
        }
    }
}

impl IntoPromptResult for PromptMessage {
    fn into_prompt_result(self) -> GetPromptResult {
        vec![self].into_prompt_result()
    }
}

impl IntoPromptResult for String {
    fn into_prompt_result(self) -> GetPromptResult {
        PromptMessage::user(self).into_prompt_result()
    }
}

impl IntoPromptResult for &'static str {
    fn into_prompt_result(self) -> GetPromptResult {
        PromptMessage::user(self).into_prompt_result()
    }
}

/// What a `#[prompt]` function may return: a prompt result, or a `Result` of one. An error
/// that is not an [`McpError`] answers −32602 (invalid params) with its message: a prompt
/// that fails almost always failed on its arguments.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from a prompt",
    label = "not a prompt result",
    note = "return String, PromptMessage, Vec<PromptMessage> or GetPromptResult, or a Result of one whose error implements Display"
)]
pub trait IntoPromptOutput {
    /// Converts into a `prompts/get` result or its error.
    fn into_prompt_output(self) -> Result<GetPromptResult, McpError>;
}

impl<T: IntoPromptResult> IntoPromptOutput for T {
    fn into_prompt_output(self) -> Result<GetPromptResult, McpError> {
        Ok(self.into_prompt_result())
    }
}

impl<T: IntoPromptResult, E: Display + 'static> IntoPromptOutput for Result<T, E> {
    fn into_prompt_output(self) -> Result<GetPromptResult, McpError> {
        self.map(IntoPromptResult::into_prompt_result)
            .map_err(|e| mcp_error(e, McpError::InvalidParams))
    }
}

/// A resource's contents, given the URI that was read and the declared MIME type: text
/// (`text/plain` unless declared), bytes (base64 blob, `application/octet-stream` unless
/// declared), `Json<T>` (`application/json`), or `ResourceContents` as they are.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from a resource",
    label = "not resource contents",
    note = "return String, Vec<u8>, Json<T>, ResourceContents or Vec<ResourceContents>, an Option of one (None: not found), or a Result of one whose error implements Display"
)]
pub trait IntoResourceContents {
    /// Converts into the contents of `uri`.
    fn into_contents(self, uri: &str, mime: Option<&str>) -> Vec<ResourceContents>;
}

impl IntoResourceContents for String {
    fn into_contents(self, uri: &str, mime: Option<&str>) -> Vec<ResourceContents> {
        vec![ResourceContents::text(
            uri,
            mime.unwrap_or("text/plain"),
            self,
        )]
    }
}

impl IntoResourceContents for &'static str {
    fn into_contents(self, uri: &str, mime: Option<&str>) -> Vec<ResourceContents> {
        self.to_owned().into_contents(uri, mime)
    }
}

impl IntoResourceContents for Vec<u8> {
    fn into_contents(self, uri: &str, mime: Option<&str>) -> Vec<ResourceContents> {
        let b64 = base64::engine::general_purpose::STANDARD.encode(self);
        vec![ResourceContents::blob(
            uri,
            mime.unwrap_or("application/octet-stream"),
            b64,
        )]
    }
}

impl<T: Serialize + JsonSchema> IntoResourceContents for Json<T> {
    fn into_contents(self, uri: &str, mime: Option<&str>) -> Vec<ResourceContents> {
        let text = serde_json::to_string(&self.0)
            .unwrap_or_else(|e| format!("{{\"error\":{:?}}}", e.to_string()));
        vec![ResourceContents::text(
            uri,
            mime.unwrap_or("application/json"),
            text,
        )]
    }
}

impl IntoResourceContents for ResourceContents {
    fn into_contents(self, _uri: &str, _mime: Option<&str>) -> Vec<ResourceContents> {
        vec![self]
    }
}

impl IntoResourceContents for Vec<ResourceContents> {
    fn into_contents(self, _uri: &str, _mime: Option<&str>) -> Vec<ResourceContents> {
        self
    }
}

/// What a `#[resource]` function may return: contents, `Option` of them (`None` answers
/// "resource not found"), or a `Result` of either. An error that is not an [`McpError`]
/// answers −32603 (internal error) with its message.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from a resource",
    label = "not resource contents",
    note = "return String, Vec<u8>, Json<T>, ResourceContents or Vec<ResourceContents>, an Option of one (None: not found), or a Result of one whose error implements Display"
)]
pub trait IntoResourceOutput {
    /// Converts into the contents of `uri` or the read's error.
    fn into_resource_output(
        self,
        uri: &str,
        mime: Option<&str>,
    ) -> Result<Vec<ResourceContents>, McpError>;
}

impl<T: IntoResourceContents> IntoResourceOutput for T {
    fn into_resource_output(
        self,
        uri: &str,
        mime: Option<&str>,
    ) -> Result<Vec<ResourceContents>, McpError> {
        Ok(self.into_contents(uri, mime))
    }
}

impl<T: IntoResourceContents> IntoResourceOutput for Option<T> {
    fn into_resource_output(
        self,
        uri: &str,
        mime: Option<&str>,
    ) -> Result<Vec<ResourceContents>, McpError> {
        match self {
            Some(t) => Ok(t.into_contents(uri, mime)),
            None => Err(McpError::ResourceNotFound(uri.to_owned())),
        }
    }
}

impl<T: IntoResourceOutput, E: Display + 'static> IntoResourceOutput for Result<T, E> {
    fn into_resource_output(
        self,
        uri: &str,
        mime: Option<&str>,
    ) -> Result<Vec<ResourceContents>, McpError> {
        match self {
            Ok(t) => t.into_resource_output(uri, mime),
            Err(e) => Err(mcp_error(e, McpError::Internal)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_keep_their_meaning() {
        let r: Result<String, McpError> = Err(McpError::InputRequired);
        let e = r.into_tool_output().err().map(|e| e.into_mcp("t"));
        assert!(matches!(e, Some(McpError::InputRequired)));

        let r: Result<String, &str> = Err("nope");
        let e = r.into_tool_output().err().map(|e| e.into_mcp("t"));
        assert!(matches!(e, Some(McpError::ToolFailed { message, .. }) if message == "nope"));

        let r: Result<String, ToolError> = Err(McpError::Cancelled.into());
        let e = r.into_prompt_output().err();
        assert!(matches!(e, Some(McpError::Cancelled)));

        let r: Result<String, String> = Err("bad topic".into());
        let e = r.into_prompt_output().err();
        assert!(matches!(e, Some(McpError::InvalidParams(m)) if m == "bad topic"));
    }

    #[test]
    fn resource_outputs() {
        let none: Option<String> = None;
        assert!(matches!(
            none.into_resource_output("x://1", None),
            Err(McpError::ResourceNotFound(u)) if u == "x://1"
        ));
        let ok: Result<Option<String>, String> = Ok(Some("hi".into()));
        let c = ok.into_resource_output("x://1", None).unwrap_or_default();
        assert_eq!(
            serde_json::to_value(&c).unwrap_or_default(),
            serde_json::json!([{ "uri": "x://1", "mimeType": "text/plain", "text": "hi" }])
        );
        let failed: Result<String, String> = Err("disk".into());
        assert!(matches!(
            failed.into_resource_output("x://1", None),
            Err(McpError::Internal(m)) if m == "disk"
        ));
    }
}
