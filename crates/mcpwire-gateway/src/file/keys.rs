//! Every key the configuration file accepts, read from the parser's own types (serde's
//! field lists), section by section — what `docs/config.md` must document; and the check
//! that it does, and that its TOML examples load.

use crate::serde_fields::fields_of;

/// The tables of the file: the heading `docs/config.md` gives each, and its keys.
pub(crate) fn sections() -> Vec<(&'static str, &'static [&'static str])> {
    let mut all = vec![
        ("the file", fields_of::<super::RawFile>()),
        ("`[server]`", fields_of::<super::RawServer>()),
        (
            "`[telemetry]`",
            fields_of::<mcpwire_server::observe::TelemetryConfig>(),
        ),
        ("`[[listen]]`", fields_of::<crate::listen::ListenOptions>()),
        (
            "`[[listen]]` `tls`",
            fields_of::<crate::listen::TlsOptions>(),
        ),
        (
            "`[backends.NAME]`",
            fields_of::<super::backend::RawBackend>(),
        ),
        (
            "`[backends.NAME.oauth]`",
            fields_of::<crate::credentials::RawOAuth>(),
        ),
        ("`[views.NAME]`", fields_of::<super::RawView>()),
        ("`[admin]`", fields_of::<super::RawAdmin>()),
        (
            "`[limits]`",
            fields_of::<crate::section::limits::RawLimits>(),
        ),
        (
            "`[cluster]`",
            fields_of::<crate::section::cluster::RawCluster>(),
        ),
    ];
    all.extend(crate::section::auth::doc_sections());
    all.extend(crate::section::policy::doc_sections());
    all
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::sections;
    use crate::config::GatewayConfig;

    fn config_md() -> (PathBuf, String) {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/config.md");
        let text = std::fs::read_to_string(&path).expect("docs/config.md");
        (path, text)
    }

    /// The text under the heading containing `title`, to the next heading of its level or
    /// above.
    fn section<'a>(text: &'a str, title: &str) -> Option<&'a str> {
        let lines: Vec<&str> = text.lines().collect();
        let level = |l: &str| l.chars().take_while(|c| *c == '#').count();
        let start = lines
            .iter()
            .position(|l| level(l) > 0 && l.trim_start_matches('#').trim() == title)?;
        let own = level(lines[start]);
        let end = lines[start + 1..]
            .iter()
            .position(|l| (1..=own).contains(&level(l)))
            .map_or(lines.len(), |e| start + 1 + e);
        let from = text.find(lines[start]).unwrap_or(0);
        let to = if end < lines.len() {
            text[from..]
                .find(lines[end])
                .map_or(text.len(), |e| from + e)
        } else {
            text.len()
        };
        Some(&text[from..to])
    }

    #[test]
    fn every_key_the_parser_accepts_is_documented() {
        let (_, text) = config_md();
        let mut missing = Vec::new();
        for (title, keys) in sections() {
            let Some(body) = section(&text, title) else {
                missing.push(format!("the heading `## {title}`"));
                continue;
            };
            for key in keys {
                if !body.contains(&format!("`{key}`")) {
                    missing.push(format!("{title}: `{key}`"));
                }
            }
        }
        assert!(
            missing.is_empty(),
            "docs/config.md does not document (write each key in backticks under its \
             section's heading):\n  {}",
            missing.join("\n  ")
        );
    }

    #[test]
    fn every_toml_example_in_the_reference_loads() {
        let (path, text) = config_md();
        let mut blocks = 0;
        let mut rest = text.as_str();
        while let Some(start) = rest.find("```toml\n") {
            let body = &rest[start + "```toml\n".len()..];
            let end = body.find("\n```").expect("a closed ```toml block");
            let example = &body[..end];
            // Examples name files beside the configuration (key files, tool files): they
            // are read relative to docs/.
            if let Err(e) = GatewayConfig::from_toml(&path, example) {
                panic!("an example of docs/config.md does not load: {e}\n{example}");
            }
            blocks += 1;
            rest = &body[end..];
        }
        assert!(blocks >= 10, "only {blocks} examples found");
    }
}
