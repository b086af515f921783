//! Fixture prompts (conformance §5).

use mcpwire_model::types::{Content, GetPromptResult, PromptMessage, ResourceContents, Role};
use mcpwire_router::{PromptDef, ServerBuilder};

use crate::IMG;

/// Values offered when completing `arg1` of `test_prompt_with_arguments`.
const ARG1_VALUES: [&str; 3] = ["test1", "test2", "testing"];

fn user(content: Content) -> PromptMessage {
    PromptMessage {
        role: Role::User,
        content,
    }
}

fn messages(messages: Vec<PromptMessage>) -> GetPromptResult {
    GetPromptResult {
        description: None,
        messages,
    }
}

pub(crate) fn register(b: ServerBuilder) -> ServerBuilder {
    b.prompt(
        PromptDef::new("test_simple_prompt", |_ctx, _args| async {
            Ok(messages(vec![PromptMessage::user(
                "This is a simple prompt for testing.",
            )]))
        })
        .description("A simple prompt without arguments"),
    )
    .prompt(
        PromptDef::new("test_prompt_with_arguments", |_ctx, args| async move {
            let arg = |k: &str| args.get(k).cloned().unwrap_or_default();
            Ok(messages(vec![PromptMessage::user(format!(
                "Prompt with arguments: arg1='{}', arg2='{}'",
                arg("arg1"),
                arg("arg2")
            ))]))
        })
        .description("A prompt with two required arguments")
        .argument("arg1", "First test argument", true)
        .argument("arg2", "Second test argument", true)
        .complete("arg1", |typed, _context| {
            ARG1_VALUES
                .iter()
                .filter(|v| v.starts_with(typed))
                .map(|v| (*v).to_owned())
                .collect()
        }),
    )
    .prompt(
        PromptDef::new(
            "test_prompt_with_embedded_resource",
            |_ctx, args| async move {
                let uri = args.get("resourceUri").cloned().unwrap_or_default();
                Ok(messages(vec![
                    user(Content::resource(ResourceContents::text(
                        uri,
                        "text/plain",
                        "Embedded resource content for testing.",
                    ))),
                    PromptMessage::user("Please process the embedded resource above."),
                ]))
            },
        )
        .description("A prompt that embeds the resource at resourceUri")
        .argument("resourceUri", "URI of the resource to embed", true),
    )
    .prompt(
        PromptDef::new("test_prompt_with_image", |_ctx, _args| async {
            Ok(messages(vec![
                user(Content::image(IMG, "image/png")),
                PromptMessage::user("Please analyze the image above."),
            ]))
        })
        .description("A prompt containing an image"),
    )
}
