//! notes: a small stateful MCP server written with mcpwire's macros.
//!
//! **Is:** [`Notes`] (tools `add`, `list`, `search`; prompt `summarize`; resource template
//! `notes://{id}`) and [`server()`]. The `notes` binary serves it over stdio.
//!
//! **Is not:** persistent: notes live in memory for as long as the server runs.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::sync::{Arc, RwLock};

use mcpwire::prelude::*;
use schemars::JsonSchema;
use serde::Serialize;

/// A note.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Note {
    /// The note's id, counting from 1.
    pub id: u64,
    /// What the note says.
    pub text: String,
    /// Labels to find the note by.
    pub tags: Vec<String>,
}

/// Notes, as the `list` and `search` tools return them.
#[derive(Debug, Serialize, JsonSchema)]
pub struct NoteList {
    /// The notes, oldest first.
    pub notes: Vec<Note>,
}

/// The server's state: every note added so far.
#[derive(Default)]
pub struct Notes {
    notes: RwLock<Vec<Note>>,
}

#[server]
impl Notes {
    /// Adds a note and returns it with its id.
    #[tool]
    fn add(
        &self,
        /// What the note says.
        text: String,
        /// Labels to find the note by.
        #[serde(default)]
        tags: Vec<String>,
    ) -> Json<Note> {
        let mut notes = self.notes.write().unwrap_or_else(|p| p.into_inner());
        let note = Note {
            id: notes.len() as u64 + 1,
            text,
            tags,
        };
        notes.push(note.clone());
        Json(note)
    }

    /// Lists every note, oldest first.
    #[tool(read_only)]
    fn list(&self) -> Json<NoteList> {
        Json(NoteList {
            notes: self.read().clone(),
        })
    }

    /// Finds the notes whose text or tags contain the query, ignoring case.
    #[tool(read_only)]
    fn search(
        &self,
        /// What to look for.
        query: String,
        /// The most notes to return (default 10).
        limit: Option<u32>,
    ) -> Json<NoteList> {
        let query = query.to_lowercase();
        let notes = self
            .read()
            .iter()
            .filter(|n| {
                n.text.to_lowercase().contains(&query)
                    || n.tags.iter().any(|t| t.to_lowercase().contains(&query))
            })
            .take(limit.unwrap_or(10) as usize)
            .cloned()
            .collect();
        Json(NoteList { notes })
    }

    /// Asks the model to summarize the notes with a tag.
    #[prompt]
    fn summarize(
        &self,
        /// The tag whose notes to summarize.
        #[complete(tags_starting)]
        tag: String,
    ) -> String {
        let lines: Vec<String> = self
            .read()
            .iter()
            .filter(|n| n.tags.contains(&tag))
            .map(|n| format!("- {}", n.text))
            .collect();
        format!(
            "Summarize my notes tagged \"{tag}\" in one paragraph:\n{}",
            lines.join("\n")
        )
    }

    /// One note's text.
    #[resource("notes://{id}", mime = "text/plain")]
    fn note(&self, #[complete(ids_starting)] id: u64) -> Option<String> {
        self.read()
            .iter()
            .find(|n| n.id == id)
            .map(|n| n.text.clone())
    }

    /// The tags in use that start with `typed`.
    fn tags_starting(&self, typed: &str) -> Vec<String> {
        let mut tags: Vec<String> = self
            .read()
            .iter()
            .flat_map(|n| n.tags.iter())
            .filter(|t| t.starts_with(typed))
            .cloned()
            .collect();
        tags.sort();
        tags.dedup();
        tags
    }

    /// The note ids that start with `typed`.
    fn ids_starting(&self, typed: &str) -> Vec<String> {
        self.read()
            .iter()
            .map(|n| n.id.to_string())
            .filter(|id| id.starts_with(typed))
            .collect()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Vec<Note>> {
        self.notes.read().unwrap_or_else(|p| p.into_inner())
    }
}

/// The notes server, empty.
pub fn server() -> Arc<Server> {
    Server::builder(Implementation::new("notes", env!("CARGO_PKG_VERSION")))
        .handlers(Notes::default())
        .build()
}
