extern crate mcpwire_router as mcpwire;
use mcpwire::tool;

/// Adds a pair.
#[tool]
fn add((a, b): (f64, f64)) -> String {
    (a + b).to_string()
}

fn main() {}
