extern crate mcpwire_router as mcpwire;
use mcpwire::tool;

struct Greeter;

impl Greeter {
    /// Greets.
    #[tool]
    fn greet(&self, name: String) -> String {
        format!("hi {name}")
    }
}

fn main() {}
