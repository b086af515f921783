extern crate mcpwire_router as mcpwire;
use mcpwire::{server, tool};

struct Counter {
    n: u64,
}

#[server]
impl Counter {
    /// Counts.
    #[tool]
    fn bump(&mut self) -> String {
        self.n += 1;
        self.n.to_string()
    }
}

fn main() {}
