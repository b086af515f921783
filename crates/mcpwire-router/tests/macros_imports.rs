//! Importing the attributes used only inside a `#[server]` block counts as using them.
#![deny(unused_imports)]

extern crate mcpwire_router as mcpwire;

use mcpwire_router::{prompt, server, tool};

struct Only;

#[server]
impl Only {
    /// A tool.
    #[tool]
    fn one() -> String {
        String::new()
    }

    /// A prompt.
    #[prompt]
    fn two() -> String {
        String::new()
    }

    /// Another tool.
    #[mcpwire::tool]
    fn three() -> String {
        String::new()
    }
}

#[test]
fn compiles_without_unused_imports() {
    let s = mcpwire_router::Server::builder(mcpwire_router::model::types::Implementation::new(
        "t", "1",
    ))
    .handlers(Only)
    .build();
    assert_eq!(s.tool_names(), ["one", "three"]);
}
