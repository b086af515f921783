//! The configuration file's cross-cutting sections, each read here and built into what it
//! configures: `[auth]` (one authenticator for every network listener), `[cluster]` (this
//! gateway as one replica of several), `[limits]` (rates and connections per IP) and
//! `[policy]` (what each caller may see and call).

pub(crate) mod auth;
pub(crate) mod cluster;
pub(crate) mod limits;
pub(crate) mod policy;
