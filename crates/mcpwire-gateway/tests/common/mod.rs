//! Helpers shared by the gateway's integration tests (the wires and raw clients are
//! testkit's).

#[allow(dead_code)] // each test binary uses its own part
pub mod cluster;
#[allow(dead_code)] // each test binary uses its own part
pub mod tasks;

/// A native server `name` with tools `{name}_one` and `{name}_two`.
#[allow(dead_code)] // the reload tests' backends
pub fn native(name: &'static str) -> std::sync::Arc<mcpwire_router::Server> {
    use mcpwire_model::types::Implementation;
    use mcpwire_router::{CallCtx, NoArgs, Server, ToolError, tool};
    let t = |tool_name: String| {
        tool(tool_name, move |_: CallCtx, _: NoArgs| async move {
            Ok::<_, ToolError>(name.to_string())
        })
    };
    Server::builder(Implementation::new(name, "1"))
        .tool(t(format!("{name}_one")))
        .tool(t(format!("{name}_two")))
        .build()
}
