extern crate mcpwire_router as mcpwire;
use mcpwire::tool;

/// Counts characters.
#[tool]
fn count(text: &str) -> String {
    text.chars().count().to_string()
}

fn main() {}
