//! DNS-rebinding protection: which `Origin` and `Host` headers a request may carry.
//!
//! By default only loopback names are accepted (`localhost`, `127.0.0.1`, `[::1]`, any
//! port), so a web page that got a browser to resolve its own name to 127.0.0.1 cannot
//! talk to a local server. A request without `Origin` (not a browser) passes the origin
//! check; a request without `Host` passes the host check.

use axum::http::HeaderMap;
use axum::http::header::{HOST, ORIGIN};
use axum::response::Response;
use mcpwire_model::McpError;

use super::reply;

const LOOPBACK: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// The accepted `Origin` and `Host` values.
#[derive(Debug, Clone, Default)]
pub struct Guard {
    /// Accepted origins (`scheme://host[:port]` exactly, or a bare host matching any scheme
    /// and port; `*` accepts any). `None`: loopback origins only.
    pub allowed_origins: Option<Vec<String>>,
    /// Accepted hosts (`host:port` exactly, or a bare host matching any port; `*` accepts
    /// any). `None`: loopback hosts only.
    pub allowed_hosts: Option<Vec<String>>,
}

/// Which header a request was refused for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    Origin,
    Host,
}

impl Guard {
    /// Checks a request's headers; `Err` names the offending header.
    pub(crate) fn check(&self, headers: &HeaderMap) -> Result<(), Refused> {
        if let Some(origin) = headers.get(ORIGIN) {
            let ok = origin
                .to_str()
                .is_ok_and(|o| origin_allowed(self.allowed_origins.as_deref(), o.trim()));
            if !ok {
                return Err(Refused::Origin);
            }
        }
        if let Some(host) = headers.get(HOST) {
            let ok = host
                .to_str()
                .is_ok_and(|h| host_allowed(self.allowed_hosts.as_deref(), h.trim()));
            if !ok {
                return Err(Refused::Host);
            }
        }
        Ok(())
    }
}

/// `None` when `guard` accepts the request, else the 403 to answer with.
pub(crate) fn refuse(guard: &Guard, headers: &HeaderMap) -> Option<Response> {
    guard.check(headers).err().map(|which| {
        let header = match which {
            Refused::Origin => "Origin",
            Refused::Host => "Host",
        };
        tracing::debug!(header, "request refused by the origin/host guard");
        reply::refuse(None, McpError::Forbidden(header.to_owned()))
    })
}

fn origin_allowed(allowed: Option<&[String]>, origin: &str) -> bool {
    let Some((_scheme, authority)) = origin.split_once("://") else {
        return false; // includes the opaque origin "null"
    };
    let host = host_of(authority);
    match allowed {
        None => is_loopback(host),
        Some(list) => list
            .iter()
            .any(|a| a == "*" || a.eq_ignore_ascii_case(origin) || a.eq_ignore_ascii_case(host)),
    }
}

fn host_allowed(allowed: Option<&[String]>, authority: &str) -> bool {
    let host = host_of(authority);
    match allowed {
        None => is_loopback(host),
        Some(list) => list
            .iter()
            .any(|a| a == "*" || a.eq_ignore_ascii_case(authority) || a.eq_ignore_ascii_case(host)),
    }
}

fn is_loopback(host: &str) -> bool {
    LOOPBACK.iter().any(|l| l.eq_ignore_ascii_case(host))
}

/// The host part of `host[:port]` (IPv6 literals keep their brackets).
fn host_of(authority: &str) -> &str {
    if authority.starts_with('[') {
        return match authority.find(']') {
            Some(end) => &authority[..=end],
            None => authority,
        };
    }
    match authority.rsplit_once(':') {
        Some((h, port)) if port.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => authority,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn loopback_by_default() {
        let g = Guard::default();
        for ok in ["localhost:8080", "127.0.0.1", "[::1]:3000", "LOCALHOST"] {
            assert_eq!(g.check(&headers(&[("host", ok)])), Ok(()), "{ok}");
        }
        for bad in [
            "evil.example.com",
            "evil.example.com:80",
            "127.0.0.2",
            "[::2]",
        ] {
            assert_eq!(
                g.check(&headers(&[("host", bad)])),
                Err(Refused::Host),
                "{bad}"
            );
        }
        let o = |v| headers(&[("host", "localhost"), ("origin", v)]);
        assert_eq!(g.check(&o("http://localhost:5173")), Ok(()));
        assert_eq!(g.check(&o("http://[::1]")), Ok(()));
        assert_eq!(
            g.check(&o("https://evil.example.com")),
            Err(Refused::Origin)
        );
        assert_eq!(g.check(&o("null")), Err(Refused::Origin));
        assert_eq!(g.check(&HeaderMap::new()), Ok(()));
    }

    #[test]
    fn configured_lists() {
        let g = Guard {
            allowed_origins: Some(vec!["https://app.example.com".into()]),
            allowed_hosts: Some(vec!["mcp.example.com".into(), "10.0.0.1:9000".into()]),
        };
        let h = |host, origin| headers(&[("host", host), ("origin", origin)]);
        assert_eq!(
            g.check(&h("mcp.example.com:443", "https://app.example.com")),
            Ok(())
        );
        assert_eq!(
            g.check(&h("10.0.0.1:9000", "https://app.example.com")),
            Ok(())
        );
        assert_eq!(
            g.check(&h("10.0.0.1:9001", "https://app.example.com")),
            Err(Refused::Host)
        );
        assert_eq!(
            g.check(&h("mcp.example.com", "http://localhost")),
            Err(Refused::Origin)
        );
    }
}
