//! Native prompts.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use mcpwire_model::McpError;
use mcpwire_model::types::{GetPromptResult, Prompt, PromptArgument};

use crate::resource::Completer;
use crate::{BoxFuture, CallCtx};

type GetFn = dyn Fn(CallCtx, BTreeMap<String, String>) -> BoxFuture<'static, Result<GetPromptResult, McpError>>
    + Send
    + Sync;

/// A prompt: its definition, argument completers and the function producing its messages.
#[derive(Clone)]
pub struct PromptDef {
    pub(crate) prompt: Prompt,
    pub(crate) get: Arc<GetFn>,
    pub(crate) completers: BTreeMap<String, Arc<Completer>>,
}

impl fmt::Debug for PromptDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PromptDef")
            .field("prompt", &self.prompt)
            .finish()
    }
}

impl PromptDef {
    /// A prompt whose messages are produced by `f(ctx, arguments)`; required arguments are
    /// checked before `f` runs.
    pub fn new<F, Fut>(name: impl Into<String>, f: F) -> PromptDef
    where
        F: Fn(CallCtx, BTreeMap<String, String>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<GetPromptResult, McpError>> + Send + 'static,
    {
        PromptDef {
            prompt: Prompt {
                name: name.into(),
                title: None,
                description: None,
                arguments: None,
                icons: None,
            },
            get: Arc::new(move |ctx, args| Box::pin(f(ctx, args))),
            completers: BTreeMap::new(),
        }
    }

    /// Sets the description.
    pub fn description(mut self, d: impl Into<String>) -> Self {
        self.prompt.description = Some(d.into());
        self
    }

    /// Sets the display title.
    pub fn title(mut self, t: impl Into<String>) -> Self {
        self.prompt.title = Some(t.into());
        self
    }

    /// Declares an argument.
    pub fn argument(
        mut self,
        name: impl Into<String>,
        description: impl Into<String>,
        required: bool,
    ) -> Self {
        self.prompt
            .arguments
            .get_or_insert_with(Vec::new)
            .push(PromptArgument {
                name: name.into(),
                title: None,
                description: Some(description.into()),
                required: Some(required),
            });
        self
    }

    /// Completes argument `arg` with `f(typed, context)`.
    pub fn complete(
        mut self,
        arg: impl Into<String>,
        f: impl Fn(&str, &BTreeMap<String, String>) -> Vec<String> + Send + Sync + 'static,
    ) -> Self {
        self.completers.insert(arg.into(), Arc::new(f));
        self
    }

    /// The definition as listed.
    pub fn definition(&self) -> &Prompt {
        &self.prompt
    }

    pub(crate) fn check_required(&self, args: &BTreeMap<String, String>) -> Result<(), McpError> {
        for a in self.prompt.arguments.iter().flatten() {
            if a.required == Some(true) && !args.contains_key(&a.name) {
                return Err(McpError::InvalidParams(format!(
                    "prompt {} needs argument {}",
                    self.prompt.name, a.name
                )));
            }
        }
        Ok(())
    }
}
