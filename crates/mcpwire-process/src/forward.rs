//! Forwarding MCP requests to the process: tool calls (with middleware), reads, prompts,
//! completions, and the run-time definitions whose handlers do it. A [`Forwarder`] finds
//! the current generation through [`Current`]; it knows nothing of the host itself.

use std::collections::BTreeMap;

use mcpwire_model::types::{CallToolResult, CompleteParams, CompletionRef, ResourceContents};
use mcpwire_model::{McpError, Reply, to_raw};
use mcpwire_router::{
    CallCtx, PromptDef, ResourceDef, TaskSupport, TemplateDef, ToolDef, ToolError, UriTemplate,
};
use serde_json::Value;

use crate::channel::Answer;
use crate::current::Current;
use crate::pb::{self, envelope::Msg};
use crate::{convert, sideband};

/// Why a catalog request to the process failed.
fn unexpected(what: &str, a: Answer) -> McpError {
    match a {
        Answer::Failed(r) => McpError::Internal(r),
        _ => McpError::Internal(format!("tool process answered {what} with something else")),
    }
}

/// A request the process could not take: a connection that ended is the tool's failure (an
/// `isError` result); a limit is the protocol's error.
fn refused(e: McpError) -> ToolError {
    match e {
        McpError::Internal(reason) => ToolError::new(reason),
        other => other.into(),
    }
}

/// Where forwarded requests go: the current generation. Cheap to clone (every run-time
/// definition holds one).
#[derive(Clone)]
pub(crate) struct Forwarder {
    current: Current,
    /// Largest raw (and decompressed) result accepted.
    max_raw: u64,
}

impl Forwarder {
    /// Forwards to the generation `current` names.
    pub(crate) fn new(current: Current, max_raw: u64) -> Forwarder {
        Forwarder { current, max_raw }
    }

    /// Calls tool `name`, with the process's middleware before and after.
    pub(crate) async fn call_tool(
        &self,
        ctx: CallCtx,
        name: String,
        args: Value,
    ) -> Result<CallToolResult, ToolError> {
        let channel = self.current.channel(&ctx).await.map_err(ToolError::new)?;
        let mut args_json = args.to_string();
        let mut mws = channel.middleware.clone();
        mws.sort_by_key(|m| m.1);
        for (mw, _) in &mws {
            let req = pb::MiddlewareInterceptRequest {
                middleware_name: mw.clone(),
                phase: "before".into(),
                tool_name: name.clone(),
                arguments_json: args_json.clone(),
                ..Default::default()
            };
            if let Answer::Env(Msg::MiddlewareInterceptResponse(r)) = channel
                .request(|_| Msg::MiddlewareIntercept(req), None, false)
                .map_err(refused)?
                .wait()
                .await
            {
                if r.reject {
                    return Ok(CallToolResult::error(r.reject_reason));
                }
                if !r.arguments_json.is_empty() {
                    args_json = r.arguments_json;
                }
            }
        }
        let progress = ctx.progress_token().is_some();
        let tool = name.clone();
        let pc = channel
            .request(
                move |id| {
                    Msg::CallTool(pb::CallToolRequest {
                        name: tool,
                        arguments_json: args_json,
                        progress_token: if progress {
                            id.to_owned()
                        } else {
                            String::new()
                        },
                    })
                },
                Some(ctx.clone()),
                true,
            )
            .map_err(refused)?;
        let mut answer = pc.wait().await;
        if let Answer::TaskCreated { task_id, pushed } = answer {
            answer = crate::task::follow(&channel, &ctx, task_id, pushed).await?;
        }
        let mut result = self.tool_result(answer)?;
        for (mw, _) in mws.iter().rev() {
            let req = pb::MiddlewareInterceptRequest {
                middleware_name: mw.clone(),
                phase: "after".into(),
                tool_name: name.clone(),
                result_json: to_raw(&result).get().to_owned(),
                is_error: result.is_error == Some(true),
                ..Default::default()
            };
            if let Answer::Env(Msg::MiddlewareInterceptResponse(r)) = channel
                .request(|_| Msg::MiddlewareIntercept(req), None, false)
                .map_err(refused)?
                .wait()
                .await
                && let Ok(replaced) = serde_json::from_str::<CallToolResult>(&r.result_json)
            {
                result = replaced;
            }
        }
        Ok(result)
    }

    /// A call's answer (or a process task's `task_result` answer) as a tool result.
    fn tool_result(&self, answer: Answer) -> Result<CallToolResult, ToolError> {
        match answer {
            Answer::Env(Msg::CallResult(r)) => Ok(convert::call_result(r)),
            Answer::Raw { header, payload } => {
                let text = sideband::decode_result(&header, &payload, self.max_raw)?;
                Ok(CallToolResult::new(convert::content_blocks(text)))
            }
            Answer::InputRequired => Err(McpError::InputRequired.into()),
            Answer::Failed(reason) => Err(ToolError::new(reason)),
            Answer::Env(_) | Answer::TaskCreated { .. } => Err(ToolError::new(
                "tool process answered the call with something else",
            )),
        }
    }

    /// Reads resource `uri`.
    pub(crate) async fn read(
        &self,
        ctx: CallCtx,
        uri: String,
    ) -> Result<Vec<ResourceContents>, McpError> {
        let channel = self
            .current
            .channel(&ctx)
            .await
            .map_err(McpError::Internal)?;
        let pc = channel.request(
            |_| Msg::ReadResourceRequest(pb::ReadResourceRequest { uri }),
            Some(ctx),
            false,
        )?;
        match pc.wait().await {
            Answer::Env(Msg::ReadResourceResponse(r)) => Ok(convert::contents(r)),
            other => Err(unexpected("resources/read", other)),
        }
    }

    /// Gets prompt `name` with `args`.
    pub(crate) async fn get_prompt(
        &self,
        ctx: CallCtx,
        name: String,
        args: BTreeMap<String, String>,
    ) -> Result<mcpwire_model::types::GetPromptResult, McpError> {
        let channel = self
            .current
            .channel(&ctx)
            .await
            .map_err(McpError::Internal)?;
        let arguments_json = serde_json::to_string(&args).unwrap_or_else(|_| "{}".into());
        let pc = channel.request(
            |_| {
                Msg::GetPromptRequest(pb::GetPromptRequest {
                    name,
                    arguments_json,
                })
            },
            Some(ctx),
            false,
        )?;
        match pc.wait().await {
            Answer::Env(Msg::GetPromptResponse(r)) => Ok(convert::prompt(r)),
            other => Err(unexpected("prompts/get", other)),
        }
    }

    /// Asks the process for completions.
    pub(crate) async fn complete(
        &self,
        ctx: CallCtx,
        p: CompleteParams,
    ) -> Result<Reply, McpError> {
        let channel = self
            .current
            .channel(&ctx)
            .await
            .map_err(McpError::Internal)?;
        let (ref_type, ref_name) = match p.reference {
            CompletionRef::Prompt { name } => ("ref/prompt", name),
            CompletionRef::Resource { uri } => ("ref/resource", uri),
        };
        let req = pb::CompletionRequest {
            ref_type: ref_type.into(),
            ref_name,
            argument_name: p.argument.name,
            argument_value: p.argument.value,
        };
        let pc = channel.request(|_| Msg::CompletionRequest(req), Some(ctx), false)?;
        match pc.wait().await {
            Answer::Env(Msg::CompletionResponse(r)) => {
                Ok(Reply::Complete(to_raw(&convert::completion(r))))
            }
            other => Err(unexpected("completion/complete", other)),
        }
    }
}

/// The run-time definitions of the process's catalog, whose handlers forward.
impl Forwarder {
    /// A tool that calls the process.
    pub(crate) fn tool_def(&self, d: &pb::ToolDefinition) -> ToolDef {
        let t = convert::tool(d);
        let fwd = self.clone();
        let name = t.name.clone();
        let mut def = ToolDef::raw(t.name.clone(), t.input_schema.clone(), move |ctx, args| {
            let fwd = fwd.clone();
            let name = name.clone();
            async move { fwd.call_tool(ctx, name, args).await }
        });
        if let Some(d) = t.description {
            def = def.description(d);
        }
        if let Some(title) = t.title {
            def = def.title(title);
        }
        if let Some(a) = t.annotations {
            def = def.annotations(a);
        }
        if let Some(o) = t.output_schema {
            def = def.output_schema(o);
        }
        if d.task_support {
            // The router's tasks layer runs it as an MCP task: the process sees an ordinary call,
            // unless it answers with `create_task` (crate::task).
            def = def.task_support(TaskSupport::Optional);
        }
        def
    }

    /// A resource read from the process.
    pub(crate) fn resource_def(&self, r: pb::ResourceDefinition) -> ResourceDef {
        let fwd = self.clone();
        let mut def = ResourceDef::new(r.uri, r.name, move |ctx, uri| {
            let fwd = fwd.clone();
            async move { fwd.read(ctx, uri).await }
        });
        if !r.description.is_empty() {
            def = def.description(r.description);
        }
        if !r.mime_type.is_empty() {
            def = def.mime_type(r.mime_type);
        }
        def
    }

    /// A resource template read from the process (`None` when the template is invalid).
    pub(crate) fn template_def(&self, t: pb::ResourceTemplateDefinition) -> Option<TemplateDef> {
        if let Err(e) = UriTemplate::parse(&t.uri_template) {
            tracing::warn!(template = %t.uri_template, "skipping an invalid resource template: {e}");
            return None;
        }
        let fwd = self.clone();
        let mut def = TemplateDef::new(t.uri_template, t.name, move |ctx, uri, _vars| {
            let fwd = fwd.clone();
            async move { fwd.read(ctx, uri).await }
        });
        if !t.description.is_empty() {
            def = def.description(t.description);
        }
        if !t.mime_type.is_empty() {
            def = def.mime_type(t.mime_type);
        }
        Some(def)
    }

    /// A prompt got from the process.
    pub(crate) fn prompt_def(&self, p: pb::PromptDefinition) -> PromptDef {
        let fwd = self.clone();
        let name = p.name.clone();
        let mut def = PromptDef::new(p.name, move |ctx, args| {
            let fwd = fwd.clone();
            let name = name.clone();
            async move { fwd.get_prompt(ctx, name, args).await }
        });
        if !p.description.is_empty() {
            def = def.description(p.description);
        }
        for a in p.arguments {
            def = def.argument(a.name, a.description, a.required);
        }
        def
    }
}
