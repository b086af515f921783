//! Fixture resources and the resource template (conformance §5).

use base64::Engine;
use mcpwire::prelude::*;
use mcpwire::router::ServerBuilder;

use crate::IMG;

pub(crate) fn register(b: ServerBuilder) -> ServerBuilder {
    let png = base64::engine::general_purpose::STANDARD
        .decode(IMG)
        .unwrap_or_default();
    b.handlers(Resources).resource(
        // Fixed bytes stay on the builder, which also lists their size.
        ResourceDef::blob("test://static-binary", "static-binary", "image/png", &png)
            .title("Static Binary Resource")
            .description("A static binary resource (a 1x1 PNG) for testing"),
    )
}

/// The resource fixtures; no state of their own.
struct Resources;

#[server]
impl Resources {
    /// A static text resource for testing
    #[resource(
        "test://static-text",
        name = "static-text",
        title = "Static Text Resource",
        mime = "text/plain"
    )]
    fn static_text() -> &'static str {
        "This is the content of the static text resource."
    }

    /// A resource clients may subscribe to
    #[resource(
        "test://watched-resource",
        name = "watched-resource",
        title = "Watched Resource",
        mime = "text/plain"
    )]
    fn watched() -> &'static str {
        "Watched resource content"
    }

    /// A resource template with an {id} parameter
    #[resource(
        "test://template/{id}/data",
        name = "template",
        title = "Template Resource",
        mime = "application/json"
    )]
    fn template(#[complete("1", "2", "3")] id: String) -> String {
        format!(
            r#"{{"id":{},"templateTest":true,"data":{}}}"#,
            serde_json::Value::from(id.as_str()),
            serde_json::Value::from(format!("Data for ID: {id}")),
        )
    }
}
