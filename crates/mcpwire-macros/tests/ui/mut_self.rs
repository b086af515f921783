extern crate mcpwire_router as mcpwire;
use mcpwire::server;

struct Counter {
    n: u64,
}

#[server]
impl Counter {
    /// Counts.
    #[mcpwire::tool]
    fn bump(&mut self) -> String {
        self.n += 1;
        self.n.to_string()
    }
}

fn main() {}
