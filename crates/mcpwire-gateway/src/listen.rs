//! Listeners as the configuration names them: a URL (`stdio`, `http://HOST:PORT/PATH`,
//! `ws://…`, `grpc://HOST:PORT`, `mcpb://HOST:PORT`, and with TLS `https://`, `wss://`,
//! `grpcs://`, `mcpbs://` — or the MCPB spec's `tcps://`) and the options of its wire,
//! checked (an option of another wire is refused; a TLS URL needs `tls`, and `tls` needs a
//! TLS URL), turned into a [`Wire`].

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::key_path::KeyPath;
use mcpwire_server::http::{Guard, HttpConfig};
use mcpwire_server::mcpb::McpbConfig;
use mcpwire_server::tls::{ClientAuth, TlsConfig};
use mcpwire_server::wires::{GrpcWire, McpbWire, Wire, WsWire};

/// The wire of a listener URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// `stdio`.
    Stdio,
    /// `http://` (Streamable HTTP).
    Http,
    /// `ws://` (WebSocket, proto-mcp and JSON-RPC).
    Ws,
    /// `grpc://` (gRPC proto-mcp).
    Grpc,
    /// `mcpb://` (MCPB).
    Mcpb,
}

impl Scheme {
    fn name(self) -> &'static str {
        match self {
            Scheme::Stdio => "stdio",
            Scheme::Http => "http",
            Scheme::Ws => "ws",
            Scheme::Grpc => "grpc",
            Scheme::Mcpb => "mcpb",
        }
    }
}

/// A listener's entry as written (`[[listen]]`): its URL and its wire's options, each
/// unset unless given.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListenOptions {
    /// `stdio`, `http://HOST:PORT/PATH`, `ws://HOST:PORT/PATH`, `grpc://HOST:PORT` or
    /// `mcpb://HOST:PORT`.
    pub url: String,
    /// Serve this view (`[views.NAME]`) instead of the whole catalog.
    pub view: Option<String>,
    /// What `tools/list` shows this listener's clients (`None`: the view's setting, else
    /// `[server] catalog`).
    pub catalog: Option<mcpwire_federation::CatalogMode>,
    /// `false`: this listener does not authenticate even though `[auth]` is configured
    /// (e.g. a loopback-only one for local tools).
    pub auth: Option<bool>,
    /// HTTP: `Origin` headers accepted besides none (default: loopback on any port).
    pub allowed_origins: Option<Vec<String>>,
    /// HTTP: `Host` headers accepted (default: loopback on any port).
    pub allowed_hosts: Option<Vec<String>>,
    /// HTTP: stateful sessions alive at once.
    pub max_sessions: Option<usize>,
    /// HTTP: seconds after which an idle session ends.
    pub session_idle_secs: Option<u64>,
    /// HTTP: seconds a client may take to send headers, then its body.
    pub read_timeout_secs: Option<u64>,
    /// HTTP: threads of its own, each a single-threaded runtime, the listener serves its
    /// connections on (`None`: `[server] http_threads`; 0 or 1: the gateway's runtime).
    pub threads: Option<usize>,
    /// MCPB: tokens clients may authenticate with (none: authentication off).
    pub tokens: Option<Vec<String>>,
    /// MCPB: every request must carry a valid `auth_token` wrapper.
    pub per_message_auth: Option<bool>,
    /// MCPB: also answer health checks (only) on this port of the same host.
    pub health_port: Option<u16>,
    /// MCPB: seconds an authenticated session lives.
    pub session_ttl_secs: Option<u64>,
    /// MCPB: milliseconds to negotiate the version and authenticate.
    pub handshake_timeout_ms: Option<u64>,
    /// MCPB: seconds of quiet before the server pings.
    pub idle_ping_secs: Option<u64>,
    /// MCPB: seconds connections get to finish their calls on shutdown.
    pub shutdown_grace_secs: Option<u64>,
    /// MCPB and WebSocket: connections served at once.
    pub max_connections: Option<usize>,
    /// TLS, for `https://`, `wss://`, `grpcs://` and `mcpbs://` (`tcps://`) URLs.
    pub tls: Option<TlsOptions>,
}

/// A listener's `tls = { cert = "…", key = "…" }` as written.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsOptions {
    /// The certificate chain, leaf first (PEM).
    pub cert: PathBuf,
    /// Its private key (PEM).
    pub key: PathBuf,
    /// Clients must present a certificate signed by a CA of this file (PEM).
    pub client_ca: Option<PathBuf>,
    /// With `client_ca`: `"required"` (the default) or `"optional"`.
    pub client_auth: Option<String>,
    /// Seconds between checks of the files for a new certificate (default 10).
    pub reload_secs: Option<u64>,
}

impl TlsOptions {
    /// The same, with relative paths made relative to `base` (the configuration file's
    /// directory).
    pub fn relative_to(mut self, base: &Path) -> TlsOptions {
        self.cert = base.join(&self.cert);
        self.key = base.join(&self.key);
        self.client_ca = self.client_ca.map(|p| base.join(p));
        self
    }

    /// The library's TLS configuration; the error names the option at fault.
    fn check(&self) -> Result<TlsConfig, String> {
        let client_auth = match self.client_auth.as_deref() {
            None | Some("required") => ClientAuth::Required,
            Some("optional") => ClientAuth::Optional,
            Some(other) => {
                return Err(format!(
                    "`tls.client_auth` is \"required\" or \"optional\", not {other:?}"
                ));
            }
        };
        if self.client_auth.is_some() && self.client_ca.is_none() {
            return Err(
                "`tls.client_auth` needs `tls.client_ca` (the CA client certificates \
                        must be signed by)"
                    .into(),
            );
        }
        if self.reload_secs == Some(0) {
            return Err("`tls.reload_secs` must be at least 1".into());
        }
        Ok(TlsConfig {
            cert: self.cert.clone(),
            key: self.key.clone(),
            client_ca: self.client_ca.clone(),
            client_auth,
            reload_every: self.reload_secs.map_or(
                mcpwire_server::tls::DEFAULT_RELOAD_EVERY,
                Duration::from_secs,
            ),
        })
    }
}

/// A listener, checked: where it listens and with which options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerSpec {
    /// Its wire.
    pub scheme: Scheme,
    /// The address to bind (none for stdio).
    pub addr: Option<SocketAddr>,
    /// The endpoint's path (HTTP and WebSocket).
    pub path: Option<String>,
    /// TLS, checked (set exactly when the URL's scheme is a TLS one).
    pub tls: Option<TlsConfig>,
    /// The entry as written.
    pub options: ListenOptions,
    /// Where it was declared (`listen[N]`), for messages.
    pub key: KeyPath,
}

impl ListenerSpec {
    /// A listener on `url` with its wire's default options.
    pub fn parse(url: &str) -> Result<ListenerSpec, String> {
        ListenerSpec::with_options(ListenOptions {
            url: url.to_owned(),
            ..ListenOptions::default()
        })
        .map_err(|(_, message)| message)
    }

    /// Whether `url` names a TLS listener (`https://`, `wss://`, `grpcs://`, `mcpbs://`,
    /// `tcps://`); false for anything that is not a listener URL.
    pub fn is_tls_url(url: &str) -> bool {
        parse_url(url).is_ok_and(|(_, secure, _, _)| secure)
    }

    /// A listener from its entry; on error, the option at fault (`url` or another) and why.
    pub fn with_options(options: ListenOptions) -> Result<ListenerSpec, (&'static str, String)> {
        let (scheme, secure, addr, path) = parse_url(&options.url).map_err(|m| ("url", m))?;
        let tls = match (&options.tls, secure) {
            (Some(t), true) => Some(t.check().map_err(|m| ("tls", m))?),
            (None, false) => None,
            (None, true) => {
                return Err((
                    "url",
                    format!(
                        "`{}` is a TLS listener: give its certificate and key, \
                         tls = {{ cert = \"cert.pem\", key = \"key.pem\" }} \
                         (--tls-cert and --tls-key on the command line)",
                        options.url.trim()
                    ),
                ));
            }
            (Some(_), false) => {
                return Err((
                    "tls",
                    format!(
                        "`tls` is set but `{}` is not a TLS URL: write {}",
                        options.url.trim(),
                        tls_schemes(scheme)
                    ),
                ));
            }
        };
        for (option, set, applies) in option_table(&options) {
            if set && !applies.contains(&scheme) {
                let wires: Vec<String> =
                    applies.iter().map(|s| format!("{}://", s.name())).collect();
                return Err((
                    option,
                    format!(
                        "`{option}` is an option of {} listeners, not of {}",
                        wires.join(" and "),
                        scheme_words(scheme)
                    ),
                ));
            }
        }
        let positive = [
            ("max_sessions", options.max_sessions.map(|v| v as u64)),
            ("read_timeout_secs", options.read_timeout_secs),
            ("threads", options.threads.map(|v| v as u64)),
            ("session_ttl_secs", options.session_ttl_secs),
            ("handshake_timeout_ms", options.handshake_timeout_ms),
            ("idle_ping_secs", options.idle_ping_secs),
            ("max_connections", options.max_connections.map(|v| v as u64)),
        ];
        if let Some((option, _)) = positive.iter().find(|(_, v)| *v == Some(0)) {
            return Err((option, format!("`{option}` must be at least 1")));
        }
        Ok(ListenerSpec {
            scheme,
            addr,
            path,
            tls,
            options,
            key: KeyPath::root(),
        })
    }

    /// The URL, normalized (`http://127.0.0.1:8000/mcp`, `mcpbs://127.0.0.1:9443`).
    pub fn url(&self) -> String {
        match (self.scheme, self.addr) {
            (Scheme::Stdio, _) | (_, None) => "stdio".into(),
            (scheme, Some(addr)) => format!(
                "{}{}://{addr}{}",
                scheme.name(),
                if self.tls.is_some() { "s" } else { "" },
                self.path.as_deref().unwrap_or("")
            ),
        }
    }

    /// Whether this is the stdio listener.
    pub fn is_stdio(&self) -> bool {
        self.scheme == Scheme::Stdio
    }

    /// What it occupies: `stdio` or the address.
    pub fn address(&self) -> String {
        self.addr.map_or_else(|| "stdio".into(), |a| a.to_string())
    }

    /// Whether `self` and `other` cannot both listen (stdio twice; one fixed address twice).
    pub fn clashes_with(&self, other: &ListenerSpec) -> bool {
        match (self.addr, other.addr) {
            (None, None) => true,
            (Some(a), Some(b)) => a == b && a.port() != 0,
            _ => false,
        }
    }

    /// The listener as the library serves it; an HTTP listener without `threads` of its own
    /// serves on `http_threads` (0 or 1: the caller's runtime).
    pub fn wire(&self, http_threads: usize) -> Wire {
        let o = &self.options;
        let addr = self
            .addr
            .unwrap_or(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)));
        let path = self.path.clone().unwrap_or_else(|| "/mcp".into());
        match self.scheme {
            Scheme::Stdio => Wire::Stdio,
            Scheme::Http => {
                let d = HttpConfig::default();
                Wire::Http(HttpConfig {
                    bind: addr,
                    path,
                    max_sessions: o.max_sessions.unwrap_or(d.max_sessions),
                    session_idle: o
                        .session_idle_secs
                        .map_or(d.session_idle, Duration::from_secs),
                    guard: Guard {
                        allowed_origins: o.allowed_origins.clone(),
                        allowed_hosts: o.allowed_hosts.clone(),
                    },
                    read_timeout: o
                        .read_timeout_secs
                        .map_or(d.read_timeout, Duration::from_secs),
                    tls: self.tls.clone(),
                    threads: o.threads.unwrap_or(http_threads),
                })
            }
            Scheme::Ws => Wire::Ws(WsWire {
                max_connections: o.max_connections.unwrap_or(1024),
                tls: self.tls.clone(),
                ..WsWire::new(addr, path)
            }),
            Scheme::Grpc => Wire::Grpc(GrpcWire {
                addr,
                tls: self.tls.clone(),
            }),
            Scheme::Mcpb => {
                let d = McpbConfig::default();
                let config = McpbConfig {
                    tokens: o
                        .tokens
                        .iter()
                        .flatten()
                        .filter(|t| !t.is_empty())
                        .cloned()
                        .collect(),
                    per_message_auth: o.per_message_auth.unwrap_or(d.per_message_auth),
                    session_ttl: o
                        .session_ttl_secs
                        .map_or(d.session_ttl, Duration::from_secs),
                    handshake_timeout: o
                        .handshake_timeout_ms
                        .map_or(d.handshake_timeout, Duration::from_millis),
                    idle_ping: o.idle_ping_secs.map_or(d.idle_ping, Duration::from_secs),
                    shutdown_grace: o
                        .shutdown_grace_secs
                        .map_or(d.shutdown_grace, Duration::from_secs),
                    max_connections: o.max_connections.unwrap_or(d.max_connections),
                    tls: self.tls.clone(),
                };
                Wire::Mcpb(McpbWire {
                    config,
                    health: o.health_port.map(|p| SocketAddr::new(addr.ip(), p)),
                    ..McpbWire::new(addr)
                })
            }
        }
    }
}

/// Each option: its name, whether it is set, and the wires it applies to.
fn option_table(o: &ListenOptions) -> [(&'static str, bool, &'static [Scheme]); 14] {
    const HTTP: &[Scheme] = &[Scheme::Http];
    const MCPB: &[Scheme] = &[Scheme::Mcpb];
    [
        ("allowed_origins", o.allowed_origins.is_some(), HTTP),
        ("allowed_hosts", o.allowed_hosts.is_some(), HTTP),
        ("max_sessions", o.max_sessions.is_some(), HTTP),
        ("session_idle_secs", o.session_idle_secs.is_some(), HTTP),
        ("read_timeout_secs", o.read_timeout_secs.is_some(), HTTP),
        ("threads", o.threads.is_some(), HTTP),
        ("tokens", o.tokens.is_some(), MCPB),
        ("per_message_auth", o.per_message_auth.is_some(), MCPB),
        ("health_port", o.health_port.is_some(), MCPB),
        ("session_ttl_secs", o.session_ttl_secs.is_some(), MCPB),
        (
            "handshake_timeout_ms",
            o.handshake_timeout_ms.is_some(),
            MCPB,
        ),
        ("idle_ping_secs", o.idle_ping_secs.is_some(), MCPB),
        ("shutdown_grace_secs", o.shutdown_grace_secs.is_some(), MCPB),
        (
            "max_connections",
            o.max_connections.is_some(),
            &[Scheme::Mcpb, Scheme::Ws],
        ),
    ]
}

fn scheme_words(scheme: Scheme) -> String {
    match scheme {
        Scheme::Stdio => "stdio".into(),
        s => format!("{}://", s.name()),
    }
}

/// The TLS spelling(s) of a wire's URL.
fn tls_schemes(scheme: Scheme) -> &'static str {
    match scheme {
        Scheme::Stdio => "a network listener (stdio has no TLS)",
        Scheme::Http => "https://",
        Scheme::Ws => "wss://",
        Scheme::Grpc => "grpcs://",
        Scheme::Mcpb => "mcpbs:// (or tcps://)",
    }
}

const EXAMPLES: &str = "stdio, http://127.0.0.1:8000/mcp, ws://127.0.0.1:8001/mcp, \
                        grpc://127.0.0.1:50051 or mcpb://127.0.0.1:9000 (with TLS: https://, \
                        wss://, grpcs://, mcpbs://)";

/// A listener URL read: its wire, whether it is TLS, its address and path.
type ParsedUrl = (Scheme, bool, Option<SocketAddr>, Option<String>);

/// Reads a listener URL: its wire, whether it is TLS, address and path.
fn parse_url(url: &str) -> Result<ParsedUrl, String> {
    let text = url.trim();
    if text.eq_ignore_ascii_case("stdio") {
        return Ok((Scheme::Stdio, false, None, None));
    }
    let Some((scheme, rest)) = text.split_once("://") else {
        return Err(format!("`{text}` is not a listener URL: give {EXAMPLES}"));
    };
    let (scheme, secure) = match scheme.to_ascii_lowercase().as_str() {
        "http" => (Scheme::Http, false),
        "ws" => (Scheme::Ws, false),
        "grpc" => (Scheme::Grpc, false),
        "mcpb" => (Scheme::Mcpb, false),
        "https" => (Scheme::Http, true),
        "wss" => (Scheme::Ws, true),
        "grpcs" => (Scheme::Grpc, true),
        "mcpbs" | "tcps" => (Scheme::Mcpb, true),
        other => {
            return Err(format!(
                "`{text}`: {other}:// is not a wire mcpwire listens on: give {EXAMPLES}"
            ));
        }
    };
    if rest.contains(['?', '#']) {
        return Err(format!("`{text}`: a listener URL has no query or fragment"));
    }
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let addr = parse_authority(authority).map_err(|why| format!("`{text}`: {why}"))?;
    let path = match scheme {
        Scheme::Http | Scheme::Ws => Some(if path.is_empty() || path == "/" {
            "/mcp".to_owned()
        } else {
            path.to_owned()
        }),
        _ if path.is_empty() || path == "/" => None,
        _ => {
            return Err(format!(
                "`{text}`: {}:// listeners have no path; give {}://HOST:PORT",
                scheme.name(),
                scheme.name()
            ));
        }
    };
    Ok((scheme, secure, Some(addr), path))
}

/// `HOST:PORT` where HOST is an IP address (IPv6 in brackets) or `localhost`.
fn parse_authority(authority: &str) -> Result<SocketAddr, String> {
    if let Ok(addr) = authority.parse::<SocketAddr>() {
        return Ok(addr);
    }
    let Some((host, port)) = authority.rsplit_once(':') else {
        return Err(format!(
            "give the port to listen on, e.g. {authority}:8000 (0 picks a free one)"
        ));
    };
    let port: u16 = port
        .parse()
        .map_err(|_| format!("`{port}` is not a port number (0 to 65535)"))?;
    let ip = if host.eq_ignore_ascii_case("localhost") {
        IpAddr::V4(Ipv4Addr::LOCALHOST)
    } else {
        return Err(format!(
            "`{host}` is not an IP address to listen on (e.g. 127.0.0.1, 0.0.0.0 or [::1])"
        ));
    };
    Ok(SocketAddr::new(ip, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let url = |s: &str| ListenerSpec::parse(s).map(|l| l.url());
        assert_eq!(url("stdio").unwrap(), "stdio");
        assert_eq!(
            url("http://127.0.0.1:8000").unwrap(),
            "http://127.0.0.1:8000/mcp"
        );
        assert_eq!(
            url("http://localhost:0/x/y").unwrap(),
            "http://127.0.0.1:0/x/y"
        );
        assert_eq!(url("ws://[::1]:9/ws").unwrap(), "ws://[::1]:9/ws");
        assert_eq!(url("grpc://0.0.0.0:50051").unwrap(), "grpc://0.0.0.0:50051");
        assert_eq!(
            url("MCPB://127.0.0.1:9000/").unwrap(),
            "mcpb://127.0.0.1:9000"
        );
        for (bad, says) in [
            ("https://127.0.0.1:1/mcp", "tls = { cert"),
            ("tcps://127.0.0.1:1", "tls = { cert"),
            ("127.0.0.1:8000", "not a listener URL"),
            ("ftp://127.0.0.1:1", "not a wire"),
            ("http://127.0.0.1/mcp", "give the port"),
            ("http://example.com:80/mcp", "not an IP address"),
            ("http://127.0.0.1:99999/mcp", "not a port"),
            ("grpc://127.0.0.1:1/x", "no path"),
            ("http://127.0.0.1:1/mcp?x=1", "no query"),
        ] {
            let e = url(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn options_belong_to_their_wire() {
        let with = |url: &str, f: fn(&mut ListenOptions)| {
            let mut o = ListenOptions {
                url: url.into(),
                ..ListenOptions::default()
            };
            f(&mut o);
            ListenerSpec::with_options(o)
        };
        let (key, msg) = with("http://127.0.0.1:1/mcp", |o| o.tokens = Some(vec![])).unwrap_err();
        assert_eq!(key, "tokens");
        assert!(
            msg.contains("mcpb://") && msg.contains("not of http://"),
            "{msg}"
        );
        assert!(with("ws://127.0.0.1:1/mcp", |o| o.max_connections = Some(3)).is_ok());
        let (key, _) = with("mcpb://127.0.0.1:1", |o| o.idle_ping_secs = Some(0)).unwrap_err();
        assert_eq!(key, "idle_ping_secs");
        let Wire::Mcpb(w) = with("mcpb://127.0.0.1:7", |o| {
            o.tokens = Some(vec!["t".into(), String::new()]);
            o.health_port = Some(8);
        })
        .unwrap()
        .wire(0) else {
            panic!("an MCPB wire")
        };
        assert_eq!(w.config.tokens, vec!["t".to_string()]);
        assert_eq!(w.health, Some("127.0.0.1:8".parse().unwrap()));
    }
}
