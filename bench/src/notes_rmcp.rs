//! The notes server of `examples/notes`, written with rmcp 3.x's macros, for comparing
//! what the same server takes in each SDK (`bench/tests/notes_listing.rs` compares the two
//! `tools/list` answers; `docs/design/macros.md` the line counts). Same tools, prompt,
//! resource template and completions, and nothing more.

use std::sync::{Arc, RwLock};

use rmcp::handler::server::router::prompt::PromptRouter;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::model::{
    CompleteRequestParams, CompleteResult, CompletionInfo, ListResourceTemplatesResult,
    PaginatedRequestParams, PromptMessage, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, Reference, ResourceContents, ResourceTemplate, Role, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{
    ErrorData, RoleServer, ServerHandler, prompt, prompt_handler, prompt_router, schemars, tool,
    tool_handler, tool_router,
};
use serde::{Deserialize, Serialize};

/// A note.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Note {
    /// The note's id, counting from 1.
    pub id: u64,
    /// What the note says.
    pub text: String,
    /// Labels to find the note by.
    pub tags: Vec<String>,
}

/// Notes, as the `list` and `search` tools return them.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct NoteList {
    /// The notes, oldest first.
    pub notes: Vec<Note>,
}

/// Arguments of `add`.
#[derive(Deserialize, schemars::JsonSchema)]
pub struct AddArgs {
    /// What the note says.
    pub text: String,
    /// Labels to find the note by.
    #[serde(default)]
    pub tags: Vec<String>,
}

/// Arguments of `search`.
#[derive(Deserialize, schemars::JsonSchema)]
pub struct SearchArgs {
    /// What to look for.
    pub query: String,
    /// The most notes to return (default 10).
    pub limit: Option<u32>,
}

/// Arguments of the `summarize` prompt.
#[derive(Deserialize, schemars::JsonSchema)]
pub struct SummarizeArgs {
    /// The tag whose notes to summarize.
    pub tag: String,
}

/// The server's state: every note added so far.
#[derive(Clone)]
pub struct Notes {
    notes: Arc<RwLock<Vec<Note>>>,
    pub tool_router: ToolRouter<Self>,
    pub prompt_router: PromptRouter<Self>,
}

impl Default for Notes {
    fn default() -> Self {
        Self::new()
    }
}

#[tool_router]
impl Notes {
    /// An empty notes server.
    pub fn new() -> Self {
        Self {
            notes: Arc::default(),
            tool_router: Self::tool_router(),
            prompt_router: Self::prompt_router(),
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Vec<Note>> {
        self.notes.read().unwrap_or_else(|p| p.into_inner())
    }

    #[tool(description = "Adds a note and returns it with its id.")]
    fn add(&self, Parameters(args): Parameters<AddArgs>) -> Json<Note> {
        let mut notes = self.notes.write().unwrap_or_else(|p| p.into_inner());
        let note = Note {
            id: notes.len() as u64 + 1,
            text: args.text,
            tags: args.tags,
        };
        notes.push(note.clone());
        Json(note)
    }

    #[tool(
        description = "Lists every note, oldest first.",
        annotations(read_only_hint = true)
    )]
    fn list(&self) -> Json<NoteList> {
        Json(NoteList {
            notes: self.read().clone(),
        })
    }

    #[tool(
        description = "Finds the notes whose text or tags contain the query, ignoring case.",
        annotations(read_only_hint = true)
    )]
    fn search(&self, Parameters(args): Parameters<SearchArgs>) -> Json<NoteList> {
        let query = args.query.to_lowercase();
        let notes = self
            .read()
            .iter()
            .filter(|n| {
                n.text.to_lowercase().contains(&query)
                    || n.tags.iter().any(|t| t.to_lowercase().contains(&query))
            })
            .take(args.limit.unwrap_or(10) as usize)
            .cloned()
            .collect();
        Json(NoteList { notes })
    }
}

#[prompt_router]
impl Notes {
    #[prompt(description = "Asks the model to summarize the notes with a tag.")]
    fn summarize(&self, Parameters(args): Parameters<SummarizeArgs>) -> Vec<PromptMessage> {
        let lines: Vec<String> = self
            .read()
            .iter()
            .filter(|n| n.tags.contains(&args.tag))
            .map(|n| format!("- {}", n.text))
            .collect();
        vec![PromptMessage::new_text(
            Role::User,
            format!(
                "Summarize my notes tagged \"{}\" in one paragraph:\n{}",
                args.tag,
                lines.join("\n")
            ),
        )]
    }
}

#[tool_handler(router = self.tool_router)]
#[prompt_handler(router = self.prompt_router)]
impl ServerHandler for Notes {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_prompts()
                .enable_resources()
                .enable_completions()
                .build(),
        )
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::with_all_items(vec![
            ResourceTemplate::new("notes://{id}", "note")
                .with_description("One note's text.")
                .with_mime_type("text/plain"),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let id = request
            .uri
            .strip_prefix("notes://")
            .and_then(|id| id.parse::<u64>().ok());
        let text = id.and_then(|id| {
            self.read()
                .iter()
                .find(|n| n.id == id)
                .map(|n| n.text.clone())
        });
        match text {
            Some(text) => {
                Ok(ReadResourceResult::new(vec![ResourceContents::text(text, request.uri)]).into())
            }
            None => Err(ErrorData::resource_not_found(
                format!("no note at {}", request.uri),
                None,
            )),
        }
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let typed = &request.argument.value;
        let notes = self.read();
        let mut values: Vec<String> = match (&request.r#ref, request.argument.name.as_str()) {
            (Reference::Prompt(p), "tag") if p.name == "summarize" => notes
                .iter()
                .flat_map(|n| n.tags.iter())
                .filter(|t| t.starts_with(typed.as_str()))
                .cloned()
                .collect(),
            (Reference::Resource(r), "id") if r.uri == "notes://{id}" => notes
                .iter()
                .map(|n| n.id.to_string())
                .filter(|id| id.starts_with(typed.as_str()))
                .collect(),
            _ => Vec::new(),
        };
        values.sort();
        values.dedup();
        let completion =
            CompletionInfo::new(values).map_err(|e| ErrorData::internal_error(e, None))?;
        Ok(CompleteResult::new(completion))
    }
}
