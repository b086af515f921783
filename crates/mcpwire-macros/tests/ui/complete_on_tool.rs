extern crate mcpwire_router as mcpwire;
use mcpwire::tool;

/// Picks a colour.
#[tool]
fn pick(#[complete("red", "green")] colour: String) -> String {
    colour
}

fn main() {}
