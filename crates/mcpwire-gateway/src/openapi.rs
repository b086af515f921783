//! OpenAPI backends (`[backends.NAME] openapi = "FILE" | "https://…"`): the validated
//! configuration, and starting one — its credentials as request headers, its document
//! watched (a file) or re-read every `refresh_secs`, a change announced as
//! `notifications/tools/list_changed`. The conversion and the calls are
//! `mcpwire-openapi`'s; decisions in `docs/design/backends-openapi-grpc.md`.

use std::sync::{Arc, Weak};
use std::time::Duration;

use mcpwire_client::auth::{PendingConsents, UpstreamAuth};
use mcpwire_federation::Glob;
use mcpwire_openapi::{Credentials, OpInfo, OpenApiBackend, OpenApiConfig, Source};
use mcpwire_router::BoxFuture;
use mcpwire_server::tls::ClientTls;
use tokio_util::sync::CancellationToken;

use crate::credentials::CredentialsSpec;

/// How long a changed document must be quiet before it is read again.
const REREAD_DEBOUNCE: Duration = Duration::from_millis(300);

/// An OpenAPI backend, as configured.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenApiSpec {
    /// The document as written (a path relative to the configuration file, or a URL).
    pub document: String,
    /// Where it is read from.
    pub source: Source,
    /// Where requests go (`base_url`; default: the document's first server).
    pub base_url: Option<String>,
    /// `https`: the CA to trust and a client certificate (`ca`, `client_cert`, `client_key`).
    pub tls: ClientTls,
    /// Headers and OAuth the gateway sends (its own, never a client's token).
    pub credentials: CredentialsSpec,
    /// One call's deadline (`call_timeout_secs`, default 30).
    pub call_timeout: Duration,
    /// Largest answer read (`max_response_bytes`, default 4 MiB).
    pub max_response_bytes: usize,
    /// Re-read the document this often (`refresh_secs`; a file is also watched).
    pub refresh: Option<Duration>,
    /// Which operations become tools.
    pub select: OpenApiSelection,
}

/// Which operations become tools: by tag, path and `operationId` (globs for the last
/// two); an exclusion wins over an inclusion, and an empty inclusion list includes all.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OpenApiSelection {
    /// `tags`: operations with one of these tags.
    pub tags: Vec<String>,
    /// `exclude_tags`.
    pub exclude_tags: Vec<String>,
    /// `paths`: operations whose path template matches one of these.
    pub paths: Vec<Glob>,
    /// `exclude_paths`.
    pub exclude_paths: Vec<Glob>,
    /// `operations`: operations whose `operationId` matches one of these.
    pub operations: Vec<Glob>,
    /// `exclude_operations`.
    pub exclude_operations: Vec<Glob>,
}

impl OpenApiSelection {
    /// Whether `op` becomes a tool.
    pub fn keeps(&self, op: &OpInfo<'_>) -> bool {
        let tagged = |tags: &[String]| op.tags.iter().any(|t| tags.contains(t));
        let id = op.operation_id.unwrap_or("");
        let path = |g: &[Glob]| g.iter().any(|g| g.matches(op.path));
        let ids = |g: &[Glob]| g.iter().any(|g| g.matches(id));
        (self.tags.is_empty() || tagged(&self.tags))
            && (self.paths.is_empty() || path(&self.paths))
            && (self.operations.is_empty() || ids(&self.operations))
            && !tagged(&self.exclude_tags)
            && !path(&self.exclude_paths)
            && !ids(&self.exclude_operations)
    }
}

/// A backend's credentials as request headers (OpenAPI) or call metadata (gRPC).
pub(crate) struct Auth(pub(crate) UpstreamAuth);

impl Credentials for Auth {
    fn headers<'a>(
        &'a self,
        method: &'a str,
        url: &'a str,
    ) -> BoxFuture<'a, Result<Vec<(hyper::header::HeaderName, hyper::header::HeaderValue)>, String>>
    {
        Box::pin(async move {
            self.0
                .request_headers(method, url)
                .await
                .map(|(headers, _)| headers)
                .map_err(|e| e.to_string())
        })
    }
}

/// Starts the backend `spec` describes: its document read, its tools planned.
pub(crate) async fn start(
    name: &str,
    spec: &OpenApiSpec,
    consents: &Arc<PendingConsents>,
) -> Result<Arc<OpenApiBackend>, String> {
    let mut config = OpenApiConfig::new(name, spec.source.clone());
    config.base_url = spec.base_url.clone();
    config.tls = spec.tls.clone();
    config.call_timeout = spec.call_timeout;
    config.max_response_bytes = spec.max_response_bytes;
    let select = spec.select.clone();
    config.select = Arc::new(move |op| select.keeps(op));
    if spec.credentials != CredentialsSpec::default() {
        let auth = spec
            .credentials
            .to_auth(name, &spec.tls, consents)
            .map_err(|e| format!("its credentials: {e}"))?;
        config.credentials = Some(Arc::new(Auth(auth)));
    }
    let backend = OpenApiBackend::load(config)
        .await
        .map_err(|e| format!("reading the OpenAPI document {}: {e}", spec.document))?;
    for s in backend.skipped() {
        tracing::warn!(backend = %name, operation = %s.operation, "not a tool: {}", s.reason);
    }
    follow(&backend, spec);
    Ok(backend)
}

/// Re-reads the document when its file changes and every `refresh`, for as long as the
/// backend lives.
fn follow(backend: &Arc<OpenApiBackend>, spec: &OpenApiSpec) {
    let weak = Arc::downgrade(backend);
    if let Source::File(path) = &spec.source {
        let weak = weak.clone();
        mcpwire_process::watch::watch_file(
            path,
            REREAD_DEBOUNCE,
            CancellationToken::new(),
            move || reread(&weak),
        );
    }
    if let Some(every) = spec.refresh {
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.tick().await;
            loop {
                tick.tick().await;
                if !reread(&weak) {
                    break;
                }
            }
        });
    }
}

/// What re-reads `backend`'s document on a configuration reload.
/// (`backends::Reread`, spelt out: this module does not depend on `backends`).
pub(crate) fn rereader(backend: &Arc<OpenApiBackend>) -> Arc<dyn Fn() + Send + Sync> {
    let weak = Arc::downgrade(backend);
    Arc::new(move || {
        reread(&weak);
    })
}

/// Starts a re-read if the backend still lives; whether it does.
fn reread(weak: &Weak<OpenApiBackend>) -> bool {
    let Some(backend) = weak.upgrade() else {
        return false;
    };
    tokio::spawn(async move {
        if let Err(e) = backend.reload().await {
            tracing::warn!(backend = %mcpwire_router::Backend::info(&*backend).name, "the OpenAPI document could not be read again (the tools stay as they were): {e}");
        }
    });
    true
}
