//! [`Gateway`]: a configuration started — its backends running, the service over them —
//! and served on every listener at once.

use std::sync::Arc;
use std::time::Duration;

use mcpwire_model::types::Implementation;
use mcpwire_proto_mcp::ProtoToolSchemas;
use mcpwire_router::{Backend, Router, TaskConfig};
use tokio_util::sync::CancellationToken;

use super::backends::{self, Natives, StartFailure, Started};
use super::config::{GatewayConfig, ServerOptions};
use super::error::{ConfigError, KeyPath};
use crate::Service;

/// Why the gateway could not start or serve.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GatewayError {
    /// The configuration is refused.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A backend did not start.
    #[error(transparent)]
    Start(#[from] StartFailure),
    /// A listener could not listen, or failed.
    #[error("{0}")]
    Serve(#[source] std::io::Error),
}

/// A started gateway: every backend running and the service in front of them.
pub struct Gateway {
    config: GatewayConfig,
    natives: Natives,
    members: Vec<Started>,
    service: Service,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("members", &self.members)
            .finish_non_exhaustive()
    }
}

impl Gateway {
    /// Starts every backend of `config` (native ones from `natives`) and builds the
    /// service in front of them. A backend that cannot start fails the start; one this
    /// build cannot serve is refused as a configuration error naming it.
    pub async fn start(config: GatewayConfig, natives: Natives) -> Result<Gateway, GatewayError> {
        config.validate()?;
        let mut members = Vec::with_capacity(config.backends.len());
        for spec in &config.backends {
            let started = backends::start(spec, &config.server, &natives)
                .await
                .map_err(|f| refusal(&config, &spec.key, f))?;
            members.push(started);
        }
        let service = match members.as_slice() {
            [one] => service_over(
                &config,
                one.backend.clone(),
                one.server_info.clone(),
                one.instructions.clone(),
            )?,
            _ => {
                return Err(config
                    .error_at(
                        &KeyPath::root().key("backends"),
                        "serving several backends at once needs the federation, which this \
                         build does not have yet",
                    )
                    .into());
            }
        };
        Ok(Gateway {
            config,
            natives,
            members,
            service,
        })
    }

    /// The configuration it was started from.
    pub fn config(&self) -> &GatewayConfig {
        &self.config
    }

    /// The service every listener serves.
    pub fn service(&self) -> &Service {
        &self.service
    }

    /// The native servers it may start.
    pub fn natives(&self) -> &Natives {
        &self.natives
    }

    /// Serves every listener at once until the first ends (stdio: stdin closed) or fails,
    /// or `shutdown` is cancelled (`None`: SIGTERM or Ctrl-C); MCPB connections get their
    /// grace period. The backends stop with it (tool processes and their process groups
    /// end).
    pub async fn serve(self, shutdown: Option<CancellationToken>) -> Result<(), GatewayError> {
        let listeners = self
            .config
            .listeners
            .iter()
            .map(|l| (self.service.clone(), l.wire()))
            .collect();
        let served = crate::wires::serve_listeners(listeners, shutdown).await;
        let processes = self
            .members
            .iter()
            .any(|m| matches!(m.spec.source, super::BackendSource::Process(_)));
        drop(self);
        if processes {
            // Give the supervisors a moment to end the process groups politely.
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        served.map_err(GatewayError::Serve)
    }
}

/// A start failure the configuration is to blame for becomes a configuration error at the
/// backend's key; others stay start failures.
fn refusal(config: &GatewayConfig, key: &KeyPath, failure: StartFailure) -> GatewayError {
    if failure.unsupported {
        config.error_at(key, failure.reason).into()
    } else {
        failure.into()
    }
}

/// The service over `backend`: tasks, limits and proto-mcp schemas from the server options.
fn service_over(
    config: &GatewayConfig,
    backend: Arc<dyn Backend>,
    info: Implementation,
    instructions: Option<String>,
) -> Result<Service, GatewayError> {
    let ServerOptions {
        max_message_bytes,
        max_in_flight,
        busy_poll,
        call_timeout,
        schema_registry,
        ..
    } = &config.server;
    let router = Router::new(backend).with_tasks(TaskConfig::default());
    let mut service = Service::new(router, info, instructions);
    service.limits.max_message_bytes = *max_message_bytes;
    service.busy_poll = *busy_poll;
    let limits = &mut Arc::make_mut(&mut service.config).limits;
    limits.max_in_flight = *max_in_flight;
    limits.request_timeout = *call_timeout;
    if let Some(dir) = schema_registry {
        let converter = crate::proto_mcp::converter_with_registry(dir).map_err(|e| {
            config.error_at(
                &KeyPath::root().key("server").key("schema_registry"),
                format!("loading the schema registry {}: {e}", dir.display()),
            )
        })?;
        service.proto = Arc::new(ProtoToolSchemas::new(converter));
    }
    Ok(service)
}
