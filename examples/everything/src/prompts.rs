//! Fixture prompts (conformance §5).

use mcpwire::prelude::*;
use mcpwire::router::ServerBuilder;

use crate::IMG;

pub(crate) fn register(b: ServerBuilder) -> ServerBuilder {
    b.handlers(Prompts)
}

/// The prompt fixtures; no state of their own.
struct Prompts;

fn user(content: Content) -> PromptMessage {
    PromptMessage {
        role: Role::User,
        content,
    }
}

#[server]
impl Prompts {
    /// A simple prompt without arguments
    #[prompt]
    fn test_simple_prompt() -> &'static str {
        "This is a simple prompt for testing."
    }

    /// A prompt with two required arguments
    #[prompt]
    fn test_prompt_with_arguments(
        /// First test argument
        #[complete("test1", "test2", "testing")]
        arg1: String,
        /// Second test argument
        arg2: String,
    ) -> String {
        format!("Prompt with arguments: arg1='{arg1}', arg2='{arg2}'")
    }

    /// A prompt that embeds the resource at resourceUri
    #[prompt]
    fn test_prompt_with_embedded_resource(
        /// URI of the resource to embed
        #[serde(rename = "resourceUri")]
        resource_uri: String,
    ) -> Vec<PromptMessage> {
        vec![
            user(Content::resource(ResourceContents::text(
                resource_uri,
                "text/plain",
                "Embedded resource content for testing.",
            ))),
            PromptMessage::user("Please process the embedded resource above."),
        ]
    }

    /// A prompt containing an image
    #[prompt]
    fn test_prompt_with_image() -> Vec<PromptMessage> {
        vec![
            user(Content::image(IMG, "image/png")),
            PromptMessage::user("Please analyze the image above."),
        ]
    }
}
