//! Starting the backends a configuration names: native servers (by their registered
//! name), tool processes, upstream MCP servers, OpenAPI and gRPC services.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use mcpwire_model::types::Implementation;
use mcpwire_process::{Launch, ProcessBackend, ProcessConfig};
use mcpwire_router::{Backend, Server};

use crate::config::{BackendSource, BackendSpec, ServerOptions};
use crate::upstream::{UpstreamBackend, UpstreamConfig};
use mcpwire_client::Target;
use mcpwire_client::auth::PendingConsents;

type MakeServer = Arc<dyn Fn() -> Arc<Server> + Send + Sync>;

/// The native servers a program offers to configurations by name (`native = "demo"`):
/// the `mcpwire` binary registers its built-in example as `demo`; a program embedding the
/// gateway registers its own.
#[derive(Clone, Default)]
pub struct Natives {
    servers: BTreeMap<String, MakeServer>,
}

impl fmt::Debug for Natives {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.servers.keys()).finish()
    }
}

impl Natives {
    /// No native server.
    pub fn new() -> Natives {
        Natives::default()
    }

    /// Offers the server `make` builds under `name` (called once per backend started).
    pub fn with(
        mut self,
        name: impl Into<String>,
        make: impl Fn() -> Arc<Server> + Send + Sync + 'static,
    ) -> Natives {
        self.servers.insert(name.into(), Arc::new(make));
        self
    }

    /// The registered names.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.servers.keys().map(String::as_str)
    }

    fn make(&self, name: &str) -> Option<Arc<Server>> {
        self.servers.get(name).map(|make| make())
    }
}

/// A backend that is running.
#[derive(Clone)]
pub struct Started {
    /// What the configuration said.
    pub spec: BackendSpec,
    /// The backend.
    pub backend: Arc<dyn Backend>,
    /// Who it says it is (`serverInfo` when it is served alone).
    pub server_info: Implementation,
    /// Its instructions for the model.
    pub instructions: Option<String>,
    /// Reads its description again (an OpenAPI document) when the configuration is
    /// reloaded and the backend itself did not change; `None`: nothing to re-read.
    pub reread: Option<Reread>,
    /// Its era and restarts as the console shows them; `None`: it has none to tell.
    pub status: Option<crate::console::BackendStatus>,
}

/// An OpenAPI backend's era as the console shows it: the version its document follows
/// now (`openapi 3.1.0`; a re-read document may change it).
fn openapi_status(backend: &Arc<mcpwire_openapi::OpenApiBackend>) -> crate::console::BackendStatus {
    let weak = Arc::downgrade(backend);
    Arc::new(move || match weak.upgrade() {
        Some(b) => serde_json::json!({ "era": format!("openapi {}", b.openapi_version()) }),
        None => serde_json::Value::Null,
    })
}

/// Starts re-reading a backend's description (returns at once; the backend announces a
/// changed list itself).
pub type Reread = Arc<dyn Fn() + Send + Sync>;

impl fmt::Debug for Started {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Started")
            .field("name", &self.spec.name)
            .field("kind", &self.spec.source.kind())
            .finish()
    }
}

/// Why a backend did not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("backend `{backend}`: {reason}")]
pub struct StartFailure {
    /// The backend's name.
    pub backend: String,
    /// Why.
    pub reason: String,
    /// The configuration asks for something this build cannot do (retrying will not help).
    pub unsupported: bool,
}

/// Whether this program can serve `spec` at all: a native server must be registered, a
/// command's program found and executable, a tool file present. Otherwise the key
/// concerned (`""`: the backend itself) and why not.
pub fn supported(spec: &BackendSpec, natives: &Natives) -> Result<(), (&'static str, String)> {
    match &spec.source {
        BackendSource::Native { server: name } if !natives.servers.contains_key(name) => {
            let known: Vec<&str> = natives.names().collect();
            let offer = if known.is_empty() {
                "this program has none".to_owned()
            } else {
                format!("this program has {}", known.join(", "))
            };
            Err(("", format!("no native server named `{name}` ({offer})")))
        }
        BackendSource::Upstream(up) => match &up.target {
            Target::Command { argv } => {
                if let Some(dir) = &up.cwd
                    && !dir.is_dir()
                {
                    return Err(("cwd", format!("{} is not a directory", dir.display())));
                }
                let program = argv.first().map_or("", String::as_str);
                crate::program::find(program, up.cwd.as_deref(), &up.env)
                    .map(|_| ())
                    .map_err(|why| ("command", why))
            }
            _ => Ok(()),
        },
        BackendSource::OpenApi(o) => match &o.source {
            mcpwire_openapi::Source::File(f) if !f.is_file() => Err((
                "openapi",
                format!("the OpenAPI document {} does not exist", f.display()),
            )),
            _ => Ok(()),
        },
        BackendSource::Grpc(g) => match &g.descriptors {
            Some(f) if !f.is_file() => Err((
                "descriptors",
                format!("the descriptor set {} does not exist", f.display()),
            )),
            _ => Ok(()),
        },
        BackendSource::Process(p) if !p.file.is_file() => Err((
            "process",
            format!("the tool file {} does not exist", p.file.display()),
        )),
        _ => Ok(()),
    }
}

/// Starts the backend `spec` describes; a tool process is ready (handshake done, catalog
/// known) when this returns.
/// Users' consent to an upstream's OAuth goes through `consents` (`consent = "elicit"`).
pub async fn start(
    spec: &BackendSpec,
    server: &ServerOptions,
    natives: &Natives,
    consents: &Arc<PendingConsents>,
) -> Result<Started, StartFailure> {
    let fail = |reason: String, unsupported| StartFailure {
        backend: spec.name.clone(),
        reason,
        unsupported,
    };
    match &spec.source {
        BackendSource::Native { server: name } => {
            let Some(native) = natives.make(name) else {
                let known: Vec<&str> = natives.names().collect();
                let offer = if known.is_empty() {
                    "this program has none".to_owned()
                } else {
                    format!("this program has {}", known.join(", "))
                };
                return Err(fail(
                    format!("no native server named `{name}` ({offer})"),
                    true,
                ));
            };
            Ok(Started {
                spec: spec.clone(),
                server_info: native.server_info().clone(),
                instructions: native.instructions().map(str::to_owned),
                reread: None,
                status: None,
                backend: native,
            })
        }
        BackendSource::Process(p) => {
            let mut config = ProcessConfig::new(Launch {
                file: p.file.clone(),
                runtime: p.runtime.clone(),
            });
            config.watch = p.watch;
            config.handshake_timeout = p.handshake_timeout;
            config.max_raw = p.max_result_bytes;
            config.max_envelope = server.max_message_bytes;
            config.name = Some(spec.name.clone());
            let backend = ProcessBackend::start(config).await.map_err(|e| {
                fail(
                    format!(
                        "starting {} as a protomcp tool process: {e}",
                        p.file.display()
                    ),
                    false,
                )
            })?;
            tracing::info!(backend = %spec.name, tools = ?backend.tool_names(), "tool process ready");
            let weak = Arc::downgrade(&backend);
            let status: crate::console::BackendStatus = Arc::new(move || match weak.upgrade() {
                Some(b) => serde_json::json!({ "era": "protomcp", "restarts": b.restarts() }),
                None => serde_json::Value::Null,
            });
            Ok(Started {
                spec: spec.clone(),
                server_info: backend.server_info(),
                instructions: None,
                reread: None,
                status: Some(status),
                backend,
            })
        }
        BackendSource::OpenApi(o) => {
            let backend = crate::openapi::start(&spec.name, o, consents)
                .await
                .map_err(|e| fail(e, false))?;
            tracing::info!(backend = %spec.name, tools = backend.tool_names().len(), "OpenAPI backend ready");
            Ok(Started {
                spec: spec.clone(),
                server_info: backend.server_info(),
                instructions: None,
                reread: Some(crate::openapi::rereader(&backend)),
                status: Some(openapi_status(&backend)),
                backend,
            })
        }
        BackendSource::Grpc(g) => {
            let backend = crate::grpc::start(&spec.name, g, consents)
                .await
                .map_err(|e| fail(e, false))?;
            tracing::info!(backend = %spec.name, tools = ?backend.tool_names(), "gRPC backend ready");
            Ok(Started {
                spec: spec.clone(),
                server_info: backend.server_info(),
                instructions: None,
                reread: None,
                status: None,
                backend,
            })
        }
        BackendSource::Upstream(up) => {
            let mut target = up.target.clone();
            if let (Target::Mcpb { token, .. }, Some(bearer)) =
                (&mut target, up.credentials.bearer())
            {
                *token = Some(bearer.to_owned());
            }
            let mut config = UpstreamConfig::new(spec.name.clone(), target);
            if matches!(up.target, Target::Url(_))
                && (!up.credentials.headers.is_empty() || up.credentials.oauth.is_some())
            {
                let auth = up
                    .credentials
                    .to_auth(&spec.name, &up.tls, consents)
                    .map_err(|e| fail(format!("its credentials: {e}"), false))?;
                config.auth = Some(auth);
                config.consents = Some(consents.clone());
            }
            config.handshake_timeout = up.handshake_timeout;
            config.call_timeout = up.call_timeout;
            config.relay = up.relay;
            config.era = up.era;
            config.shared = up.is_shared();
            config.max_sessions = up.max_sessions;
            config.session_idle = up.session_idle;
            config.tls = up.tls.clone();
            config.busy_poll = server.busy_poll;
            config.child.env = up.env.clone().into_iter().collect();
            config.child.cwd = up.cwd.clone();
            let backend = UpstreamBackend::connect(config)
                .await
                .map_err(|e| fail(format!("connecting to the upstream server: {e}"), false))?;
            tracing::info!(backend = %spec.name, peer = %backend.peer(), "upstream ready");
            let weak = Arc::downgrade(&backend);
            let status: crate::console::BackendStatus = Arc::new(move || {
                let Some(b) = weak.upgrade() else {
                    return serde_json::Value::Null;
                };
                let (era, restarts) = b.status();
                serde_json::json!({ "era": era, "restarts": restarts })
            });
            Ok(Started {
                status: Some(status),
                spec: spec.clone(),
                server_info: backend.server_info().clone(),
                instructions: backend.instructions().map(str::to_owned),
                reread: None,
                backend,
            })
        }
    }
}
