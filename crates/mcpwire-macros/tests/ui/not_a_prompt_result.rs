extern crate mcpwire_router as mcpwire;
use mcpwire::prompt;

/// Counts words.
#[prompt]
fn words(text: String) -> usize {
    text.split_whitespace().count()
}

fn main() {}
