//! Who may reach the listeners: the authenticator built from `[auth]` (read in
//! `section/auth.rs`), given to every network listener that does not opt out by
//! `stack.rs`.

use std::sync::Arc;

use crate::auth::Authenticator;

use crate::config::GatewayConfig;
use crate::error::ConfigError;
use crate::key_path::KeyPath;

/// The authenticator of `config`'s `[auth]` (`None` without one), its key sets loaded.
pub(crate) async fn authenticator(
    config: &GatewayConfig,
) -> Result<Option<Arc<Authenticator>>, ConfigError> {
    let Some(auth) = &config.auth else {
        return Ok(None);
    };
    let at = KeyPath::root().key("auth");
    let authenticator = Authenticator::new(auth.clone()).map_err(|e| config.error_at(&at, e.0))?;
    authenticator.prefetch().await;
    Ok(Some(Arc::new(authenticator)))
}
