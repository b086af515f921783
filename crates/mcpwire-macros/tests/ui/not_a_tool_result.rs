extern crate mcpwire_router as mcpwire;
use mcpwire::tool;

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Sum {
    sum: f64,
}

/// Adds.
#[tool]
fn add(a: f64, b: f64) -> Sum {
    Sum { sum: a + b }
}

fn main() {}
