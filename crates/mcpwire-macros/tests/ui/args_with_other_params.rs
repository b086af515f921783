extern crate mcpwire_router as mcpwire;
use mcpwire::tool;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    a: f64,
    b: f64,
}

/// Adds and scales.
#[tool]
fn add(#[args] args: Add, scale: f64) -> String {
    ((args.a + args.b) * scale).to_string()
}

fn main() {}
