//! Fixture resources and the resource template (conformance §5).

use base64::Engine;
use mcpwire_model::types::ResourceContents;
use mcpwire_router::{ResourceDef, ServerBuilder, TemplateDef};

use crate::IMG;

/// Values offered when completing the template's `id`.
const TEMPLATE_IDS: [&str; 3] = ["1", "2", "3"];

pub(crate) fn register(b: ServerBuilder) -> ServerBuilder {
    let png = base64::engine::general_purpose::STANDARD
        .decode(IMG)
        .unwrap_or_default();
    b.resource(
        ResourceDef::text(
            "test://static-text",
            "static-text",
            "text/plain",
            "This is the content of the static text resource.",
        )
        .title("Static Text Resource")
        .description("A static text resource for testing"),
    )
    .resource(
        ResourceDef::blob("test://static-binary", "static-binary", "image/png", &png)
            .title("Static Binary Resource")
            .description("A static binary resource (a 1x1 PNG) for testing"),
    )
    .resource(
        ResourceDef::text(
            "test://watched-resource",
            "watched-resource",
            "text/plain",
            "Watched resource content",
        )
        .title("Watched Resource")
        .description("A resource clients may subscribe to"),
    )
    .template(
        TemplateDef::new(
            "test://template/{id}/data",
            "template",
            |_ctx, uri, vars| async move {
                let id = vars.get("id").cloned().unwrap_or_default();
                let text = format!(
                    r#"{{"id":{},"templateTest":true,"data":{}}}"#,
                    serde_json::Value::from(id.as_str()),
                    serde_json::Value::from(format!("Data for ID: {id}")),
                );
                Ok(vec![ResourceContents::text(uri, "application/json", text)])
            },
        )
        .title("Template Resource")
        .description("A resource template with an {id} parameter")
        .mime_type("application/json")
        .complete("id", |typed, _context| {
            TEMPLATE_IDS
                .iter()
                .filter(|v| v.starts_with(typed))
                .map(|v| (*v).to_owned())
                .collect()
        }),
    )
}
