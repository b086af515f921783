extern crate mcpwire_router as mcpwire;
use mcpwire::tool;

/// Shows anything.
#[tool]
fn show<T: std::fmt::Display>(value: T) -> String {
    value.to_string()
}

fn main() {}
