extern crate mcpwire_router as mcpwire;
use mcpwire::resource;

/// One note.
#[resource("notes://{id")]
fn note(id: u64) -> String {
    format!("note {id}")
}

fn main() {}
