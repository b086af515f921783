extern crate mcpwire_router as mcpwire;
use mcpwire::tool;

/// Echoes.
#[tool(readonly)]
fn echo(text: String) -> String {
    text
}

fn main() {}
