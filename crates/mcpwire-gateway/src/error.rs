//! [`ConfigError`]: a configuration refused, with where (file, line, column, key — or the
//! command-line flag) and why. [`Origin`] turns a [`KeyPath`] into a place.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use crate::key_path::KeyPath;
use crate::position;

/// Where a configuration came from.
#[derive(Debug, Clone, PartialEq)]
pub enum Origin {
    /// A TOML file, and its text as read.
    File {
        /// The file as named.
        path: PathBuf,
        /// Its text (to place errors).
        text: Arc<str>,
        /// Command-line flags that added to it (`--listen`, `--upstream`, … with
        /// `--config`): which flag declared the entry at each path.
        flags: Vec<(KeyPath, String)>,
    },
    /// Command-line flags: which flag declared the entry at each path.
    Flags(Vec<(KeyPath, String)>),
}

impl Origin {
    /// Command-line flags that declared nothing yet.
    pub fn flags() -> Origin {
        Origin::Flags(Vec::new())
    }

    /// An error about the value at `key`.
    pub fn error_at(&self, key: &KeyPath, message: impl Into<String>) -> ConfigError {
        let message = message.into();
        match self {
            Origin::File { flags, .. } if let Some(flag) = flag_of(flags, key) => ConfigError {
                place: flag,
                key: None,
                message,
            },
            Origin::File { path, text, .. } => {
                let at =
                    position::span_of(text, key).map(|span| position::line_col(text, span.start));
                ConfigError {
                    place: place(path, at),
                    key: (!key.segs().is_empty()).then(|| key.to_string()),
                    message,
                }
            }
            Origin::Flags(flags) => ConfigError {
                place: flag_of(flags, key).unwrap_or_else(|| "command line".into()),
                key: None,
                message,
            },
        }
    }

    /// Records that `flag` declared what is at `key`.
    pub(crate) fn note_flag(&mut self, key: &KeyPath, flag: String) {
        match self {
            Origin::File { flags, .. } | Origin::Flags(flags) => flags.push((key.clone(), flag)),
        }
    }

    /// The TOML parser's or deserializer's error, placed.
    pub(crate) fn toml_error(
        path: &std::path::Path,
        text: &str,
        e: &toml::de::Error,
    ) -> ConfigError {
        let span = e.span();
        let at = span.as_ref().map(|s| position::line_col(text, s.start));
        let key = span
            .and_then(|s| position::path_at(text, s.start))
            .filter(|k| !k.segs().is_empty())
            .map(|k| k.to_string());
        ConfigError {
            place: place(path, at),
            key,
            message: e.message().trim().to_owned(),
        }
    }
}

/// The flag that declared `key` (or what holds it), if a flag did.
fn flag_of(flags: &[(KeyPath, String)], key: &KeyPath) -> Option<String> {
    flags
        .iter()
        .filter(|(p, _)| key.starts_with(p))
        .max_by_key(|(p, _)| p.segs().len())
        .map(|(_, f)| f.clone())
}

fn place(path: &std::path::Path, at: Option<(usize, usize)>) -> String {
    match at {
        Some((line, col)) => format!("{}:{line}:{col}", path.display()),
        None => path.display().to_string(),
    }
}

/// A configuration refused: `mcpwire.toml:12:7: listen[1].url: …`, or `--listen …: …`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ConfigError {
    /// `FILE:LINE:COLUMN` (or just `FILE`), or the command-line flag.
    pub place: String,
    /// The key concerned, when there is one.
    pub key: Option<String>,
    /// What is wrong, and what to do.
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.key {
            Some(key) => write!(f, "{}: {key}: {}", self.place, self.message),
            None => write!(f, "{}: {}", self.place, self.message),
        }
    }
}
