//! `[server] search_model`: the sentence-embedding model that re-ranks tool searches,
//! loaded once at start from the operator's files (never downloaded). A directory that is
//! missing or does not hold a usable model — or a build without the `semantic` feature —
//! is a configuration error naming the key.

use std::sync::Arc;

use mcpwire_federation::Embed;

use crate::config::GatewayConfig;
use crate::error::ConfigError;
use crate::key_path::KeyPath;

/// Loads `config.server.search_model`, if set.
pub(crate) fn load(config: &GatewayConfig) -> Result<Option<Arc<dyn Embed>>, ConfigError> {
    let Some(dir) = &config.server.search_model else {
        return Ok(None);
    };
    let key = KeyPath::root().key("server").key("search_model");
    load_dir(dir)
        .map(Some)
        .map_err(|message| config.error_at(&key, message))
}

#[cfg(feature = "semantic")]
fn load_dir(dir: &std::path::Path) -> Result<Arc<dyn Embed>, String> {
    let started = std::time::Instant::now();
    let model = mcpwire_search::semantic::Embedder::load(dir)
        .map_err(|e| format!("search model {}: {e}", dir.display()))?;
    tracing::info!(
        dir = %dir.display(),
        dimensions = model.dimensions(),
        ms = started.elapsed().as_millis() as u64,
        "search model loaded"
    );
    Ok(Arc::new(model))
}

#[cfg(not(feature = "semantic"))]
fn load_dir(dir: &std::path::Path) -> Result<Arc<dyn Embed>, String> {
    Err(format!(
        "search model {}: this mcpwire was built without the `semantic` feature \
         (cargo build --release -p mcpwire-cli --features semantic)",
        dir.display()
    ))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn no_model_is_none_and_a_missing_one_is_a_configuration_error() {
        let none = GatewayConfig::from_toml(
            Path::new("mcpwire.toml"),
            "[backends.demo]\nnative = \"demo\"\n",
        )
        .unwrap();
        assert!(load(&none).unwrap().is_none());
        let text = "[server]\nsearch_model = \"/nonexistent/model\"\n\n[backends.demo]\nnative = \"demo\"\n";
        let missing = GatewayConfig::from_toml(Path::new("mcpwire.toml"), text).unwrap();
        let e = load(&missing).unwrap_err().to_string();
        assert!(e.contains("search model /nonexistent/model"), "{e}");
        assert!(e.contains("mcpwire.toml:2"), "the key's line: {e}");
    }
}
