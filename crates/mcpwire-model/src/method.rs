//! MCP method names as a closed enum with an escape hatch.

use std::fmt;

macro_rules! methods {
    ($($(#[$doc:meta])* $variant:ident => $name:literal,)*) => {
        /// An MCP method name. Unknown names are kept in [`Method::Other`].
        #[derive(Clone, Debug, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum Method {
            $($(#[$doc])* $variant,)*
            /// A method this model does not name.
            Other(Box<str>),
        }

        impl Method {
            /// Parses a wire method name.
            pub fn parse(s: &str) -> Method {
                match s {
                    $($name => Method::$variant,)*
                    other => Method::Other(other.into()),
                }
            }

            /// The wire name of this method.
            pub fn as_str(&self) -> &str {
                match self {
                    $(Method::$variant => $name,)*
                    Method::Other(s) => s,
                }
            }
        }
    };
}

methods! {
    /// `initialize`
    Initialize => "initialize",
    /// `ping`
    Ping => "ping",
    /// `server/discover` (2026-07-28)
    ServerDiscover => "server/discover",
    /// `tools/list`
    ToolsList => "tools/list",
    /// `tools/call`
    ToolsCall => "tools/call",
    /// `resources/list`
    ResourcesList => "resources/list",
    /// `resources/templates/list`
    ResourcesTemplatesList => "resources/templates/list",
    /// `resources/read`
    ResourcesRead => "resources/read",
    /// `resources/subscribe`
    ResourcesSubscribe => "resources/subscribe",
    /// `resources/unsubscribe`
    ResourcesUnsubscribe => "resources/unsubscribe",
    /// `prompts/list`
    PromptsList => "prompts/list",
    /// `prompts/get`
    PromptsGet => "prompts/get",
    /// `completion/complete`
    CompletionComplete => "completion/complete",
    /// `logging/setLevel`
    LoggingSetLevel => "logging/setLevel",
    /// `sampling/createMessage` (server → client)
    SamplingCreateMessage => "sampling/createMessage",
    /// `elicitation/create` (server → client)
    ElicitationCreate => "elicitation/create",
    /// `roots/list` (server → client)
    RootsList => "roots/list",
    /// `notifications/initialized`
    NotificationsInitialized => "notifications/initialized",
    /// `notifications/cancelled`
    NotificationsCancelled => "notifications/cancelled",
    /// `notifications/progress`
    NotificationsProgress => "notifications/progress",
    /// `notifications/message`
    NotificationsMessage => "notifications/message",
    /// `notifications/roots/list_changed`
    NotificationsRootsListChanged => "notifications/roots/list_changed",
    /// `notifications/tools/list_changed`
    NotificationsToolsListChanged => "notifications/tools/list_changed",
    /// `notifications/resources/list_changed`
    NotificationsResourcesListChanged => "notifications/resources/list_changed",
    /// `notifications/resources/updated`
    NotificationsResourcesUpdated => "notifications/resources/updated",
    /// `notifications/prompts/list_changed`
    NotificationsPromptsListChanged => "notifications/prompts/list_changed",
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::Method;

    #[test]
    fn parses_known_and_unknown() {
        assert_eq!(Method::parse("tools/call"), Method::ToolsCall);
        assert_eq!(Method::parse("x/y"), Method::Other("x/y".into()));
        assert_eq!(Method::parse("tools/call").as_str(), "tools/call");
    }
}
