//! [`Handlers`]: a value whose methods are tools, prompts and resources.

use std::sync::Arc;

use crate::ServerBuilder;

/// A value whose methods are a server's tools, prompts and resources, sharing its state
/// through `&self`. Implemented by `#[server]` on an `impl` block; registered with
/// [`ServerBuilder::handlers`].
pub trait Handlers: Send + Sync + 'static {
    /// Adds every tool, prompt, resource and template of `self` to `builder`.
    fn register(self: Arc<Self>, builder: ServerBuilder) -> ServerBuilder;
}

impl ServerBuilder {
    /// Adds the tools, prompts and resources of a `#[server]` value.
    pub fn handlers<H: Handlers>(self, handlers: H) -> Self {
        Arc::new(handlers).register(self)
    }

    /// [`ServerBuilder::handlers`] for a value shared with other code.
    pub fn handlers_arc<H: Handlers>(self, handlers: Arc<H>) -> Self {
        handlers.register(self)
    }
}
