//! Who may reach the listeners: the authenticator built from `[auth]` (read in
//! `section/auth.rs`) and given to every network listener that does not opt out.

use std::sync::Arc;

use crate::auth::Authenticator;
use mcpwire_server::Service;

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

/// `services` (one per listener, in order) with authentication on every network listener
/// that does not opt out.
pub(crate) fn apply(
    config: &GatewayConfig,
    auth: Option<&Arc<Authenticator>>,
    services: Vec<Service>,
) -> Vec<Service> {
    let Some(auth) = auth else {
        return services;
    };
    services
        .into_iter()
        .zip(&config.listeners)
        .map(|(service, l)| {
            if l.is_stdio() || l.options.auth == Some(false) {
                service
            } else {
                service.with_auth(auth.clone())
            }
        })
        .collect()
}
