//! The gateway behind `mcpwire serve`: one process, many listeners, many backends.
//!
//! **Is:** the configuration ([`GatewayConfig`], from a TOML file or built from flags, with
//! errors that name file, line and key), building the serving graph from it (backends →
//! one service per listener), `--check` and hot reload of the configuration file.
//!
//! **Is not:** the catalog merging (that is the federation), the listeners (`wires`) or
//! flag parsing (the CLI).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod access;
pub mod auth;
mod backends;
mod check;
pub mod cluster;
mod config;
mod consent;
mod console;
mod credentials;
mod error;
pub(crate) mod file;
mod grpc;
mod import;
mod key_path;
mod late;
pub mod limits;
mod listen;
mod openapi;
#[cfg(feature = "otel")]
pub mod otel;
mod position;
mod program;
mod recorded;
mod redirect;
mod reload;
mod search_model;
mod section;
#[cfg(test)]
mod serde_fields;
mod serving;
mod stack;
pub mod upstream;

pub use backends::{Natives, Reread, StartFailure, Started, supported};
pub use check::{BackendCheck, CheckCaller, CheckReport, ListenerCheck, ViewCheck};
pub use late::LateBackend;
pub use reload::{ReloadPlan, plan};
pub use serving::{Gateway, GatewayError};

pub use config::{
    Additions, AdminConfig, BackendSource, BackendSpec, CatalogMode, FailMode, GatewayConfig,
    MemberOptions, PrefixMode, ProcessSpec, ServerOptions, UpstreamSpec, mcpb_target,
};
pub use consent::DEFAULT_CALLBACK_PATH;
pub use credentials::{ConsentMode, CredentialsSpec, OAuthSpec};
pub use error::{ConfigError, Origin};
pub use grpc::GrpcSpec;
pub use import::mcp_servers;
pub use key_path::{KeyPath, Seg};
pub use listen::{ListenOptions, ListenerSpec, Scheme, TlsOptions};
pub use openapi::{OpenApiSelection, OpenApiSpec};
pub use section::limits::LimitsConfig;
