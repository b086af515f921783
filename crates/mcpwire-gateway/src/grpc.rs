//! gRPC backends (`[backends.NAME] grpc = "http(s)://host:port"`): the validated
//! configuration, and starting one with its credentials as call metadata. Descriptors,
//! schemas and calls are `mcpwire-grpc`'s; decisions in
//! `docs/design/backends-openapi-grpc.md`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use mcpwire_client::auth::PendingConsents;
use mcpwire_grpc::{Descriptors, GrpcBackend, GrpcConfig};
use mcpwire_server::tls::ClientTls;

use crate::credentials::CredentialsSpec;

/// A gRPC backend, as configured.
#[derive(Debug, Clone, PartialEq)]
pub struct GrpcSpec {
    /// `http://host:port` or `https://host:port`.
    pub url: String,
    /// A descriptor-set file (`descriptors`); `None`: server reflection.
    pub descriptors: Option<PathBuf>,
    /// Only these services (`services`, full names; empty: all).
    pub services: Vec<String>,
    /// `https`: the CA to trust and a client certificate.
    pub tls: ClientTls,
    /// Metadata the gateway sends (its own credentials).
    pub credentials: CredentialsSpec,
    /// One call's deadline (`call_timeout_secs`, default 30; sent as `grpc-timeout`).
    pub call_timeout: Duration,
    /// Most messages of one server stream (`max_stream_messages`, default 1000).
    pub max_stream_messages: usize,
}

/// Starts the backend `spec` describes: descriptors read, tools planned.
pub(crate) async fn start(
    name: &str,
    spec: &GrpcSpec,
    consents: &Arc<PendingConsents>,
) -> Result<Arc<GrpcBackend>, String> {
    let mut config = GrpcConfig::new(name, spec.url.clone());
    config.descriptors = match &spec.descriptors {
        Some(file) => Descriptors::File(file.clone()),
        None => Descriptors::Reflection,
    };
    config.services = spec.services.clone();
    config.tls = spec.tls.clone();
    config.call_timeout = spec.call_timeout;
    config.max_stream_messages = spec.max_stream_messages;
    if spec.credentials != CredentialsSpec::default() {
        let auth = spec
            .credentials
            .to_auth(name, &spec.tls, consents)
            .map_err(|e| format!("its credentials: {e}"))?;
        config.credentials = Some(Arc::new(crate::openapi::Auth(auth)));
    }
    let backend = GrpcBackend::start(config)
        .await
        .map_err(|e| format!("describing the gRPC service {}: {e}", spec.url))?;
    for s in backend.skipped() {
        tracing::warn!(backend = %name, method = %s.operation, "not a tool: {}", s.reason);
    }
    Ok(backend)
}
