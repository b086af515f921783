extern crate mcpwire_router as mcpwire;
use mcpwire::resource;

/// One note.
#[resource("notes://{id}")]
fn note(note_id: u64) -> String {
    format!("note {note_id}")
}

fn main() {}
