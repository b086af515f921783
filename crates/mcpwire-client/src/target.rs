//! What `mcpwire list|call TARGET` names: a stdio server's command line or a URL.

use std::fmt;

use crate::ClientError;

/// A server to connect to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A command line that starts a stdio server (split like a POSIX shell would).
    Command {
        /// Program and arguments.
        argv: Vec<String>,
    },
    /// An `http://` or `https://` URL of a Streamable HTTP endpoint.
    Url(String),
    /// An MCPB server (`mcpb://[TOKEN@]host:port`, over TLS `mcpbs://…` or the MCPB
    /// spec's `tcps://…`).
    Mcpb {
        /// `host:port`.
        addr: String,
        /// The token to authenticate with, if the URL carries one.
        token: Option<String>,
        /// Whether the connection is TLS (`mcpbs://`, `tcps://`).
        tls: bool,
    },
}

impl Target {
    /// Reads a target: a URL with an `http`, `https` or `mcpb` scheme, or a command line.
    /// Refuses what would otherwise run as a surprising command: another scheme (`ws://…`)
    /// or an address without its scheme (`127.0.0.1:8000/mcp`).
    pub fn parse(target: &str) -> Result<Target, ClientError> {
        let text = target.trim();
        let lower = text.to_ascii_lowercase();
        if lower.starts_with("http://") || lower.starts_with("https://") {
            return Target::url(text);
        }
        for (scheme, tls) in [("mcpb://", false), ("mcpbs://", true), ("tcps://", true)] {
            if lower.starts_with(scheme) {
                return parse_mcpb(&text[scheme.len()..], tls);
            }
        }
        if let Some((scheme, _)) = text.split_once("://")
            && !scheme.is_empty()
            && !scheme.contains(char::is_whitespace)
        {
            return Err(ClientError::Target(format!(
                "`{text}`: {scheme}:// URLs are not supported; give an http:// or https:// URL \
                 of a Streamable HTTP endpoint, an mcpb://host:port address, or the command \
                 line of a stdio server"
            )));
        }
        let first = text.split_whitespace().next().unwrap_or_default();
        if looks_like_address(first) {
            return Err(ClientError::Target(format!(
                "`{text}` looks like a URL without its scheme; did you mean http://{first}? \
                 (a target is an http(s):// URL or the command line of a stdio server)"
            )));
        }
        let argv = shlex::split(text).ok_or_else(|| {
            ClientError::Target(format!("`{text}`: unbalanced quotes in the command line"))
        })?;
        if argv.is_empty() {
            return Err(ClientError::Target(
                "empty target: give a command line or an http(s):// URL".into(),
            ));
        }
        Ok(Target::Command { argv })
    }
}

impl Target {
    /// An `http://` or `https://` URL, its host and port checked (a port is 1 to 65535),
    /// so a mistyped address is refused here rather than failing later to connect.
    pub fn url(url: &str) -> Result<Target, ClientError> {
        let text = url.trim();
        let bad = |why: &str| ClientError::Target(format!("`{text}` is not a usable URL: {why}"));
        let lower = text.to_ascii_lowercase();
        let rest = ["http://", "https://"]
            .iter()
            .find_map(|s| lower.starts_with(s).then(|| &text[s.len()..]))
            .ok_or_else(|| bad("give an http:// or https:// URL"))?;
        let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
        let hostport = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
            let (addr, after) = v6
                .split_once(']')
                .ok_or_else(|| bad("an IPv6 address needs its closing `]`"))?;
            if addr.parse::<std::net::Ipv6Addr>().is_err() {
                return Err(bad(&format!("`{addr}` is not an IPv6 address")));
            }
            match after.strip_prefix(':') {
                Some(p) => (v6, Some(p)),
                None if after.is_empty() => (v6, None),
                None => return Err(bad("text after the IPv6 address")),
            }
        } else {
            match hostport.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (hostport, None),
            }
        };
        if host.is_empty() || host.contains(char::is_whitespace) {
            return Err(bad("it has no host"));
        }
        if let Some(port) = port
            && !port.parse::<u16>().is_ok_and(|p| p != 0)
        {
            return Err(bad(&format!("port `{port}` is not 1 to 65535")));
        }
        Ok(Target::Url(text.to_owned()))
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Command { argv } => f.write_str(
                &shlex::try_join(argv.iter().map(String::as_str))
                    .unwrap_or_else(|_| argv.join(" ")),
            ),
            Target::Url(url) => f.write_str(url),
            // The token stays out of what is printed.
            Target::Mcpb { addr, tls, .. } => {
                write!(f, "mcpb{}://{addr}", if *tls { "s" } else { "" })
            }
        }
    }
}

/// `[TOKEN@]host:port` after `mcpb://` (`mcpbs://` or `tcps://` when `tls`).
fn parse_mcpb(rest: &str, tls: bool) -> Result<Target, ClientError> {
    let rest = rest.trim_end_matches('/');
    let (token, addr) = match rest.rsplit_once('@') {
        Some((t, a)) => (Some(t.to_owned()).filter(|t| !t.is_empty()), a),
        None => (None, rest),
    };
    let port_ok = addr
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok_and(|p| p != 0));
    if !looks_like_address(addr) || addr.contains('/') || !port_ok {
        let s = if tls { "s" } else { "" };
        return Err(ClientError::Target(format!(
            "`mcpb{s}://{addr}`: an MCPB target is mcpb{s}://[TOKEN@]host:port"
        )));
    }
    Ok(Target::Mcpb {
        addr: addr.to_owned(),
        token,
        tls,
    })
}

/// `host:port` or `host:port/path` where host is `localhost`, a dotted name or address, or
/// a bracketed IPv6 address: what a URL less its scheme looks like (a program name never
/// has this shape).
fn looks_like_address(word: &str) -> bool {
    let authority = word.split('/').next().unwrap_or_default();
    let Some((host, port)) = authority.rsplit_once(':') else {
        return false;
    };
    let port_ok = !port.is_empty() && port.len() <= 5 && port.bytes().all(|b| b.is_ascii_digit());
    let host_ok = host == "localhost"
        || (host.starts_with('[') && host.ends_with(']'))
        || (host.contains('.')
            && host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-'));
    port_ok && host_ok
}

#[cfg(test)]
mod tests {
    use super::Target;

    #[test]
    fn targets() {
        let cmd = |s: &[&str]| Target::Command {
            argv: s.iter().map(|x| (*x).to_owned()).collect(),
        };
        assert_eq!(
            Target::parse("mcpwire demo").unwrap(),
            cmd(&["mcpwire", "demo"])
        );
        assert_eq!(
            Target::parse("python3 'my server.py' --port 8000").unwrap(),
            cmd(&["python3", "my server.py", "--port", "8000"])
        );
        assert_eq!(
            Target::parse("HTTPS://example.com/mcp").unwrap(),
            Target::Url("HTTPS://example.com/mcp".into())
        );
        for bad in [
            "127.0.0.1:8000/mcp",
            "localhost:8000",
            "[::1]:8000/mcp",
            "example.com:443/mcp",
            "ws://127.0.0.1/mcp",
            "",
            "  ",
            "python3 'unclosed",
        ] {
            assert!(Target::parse(bad).is_err(), "{bad}");
        }
        // a program with a colon in its path is still a program
        assert!(Target::parse("./bin:x serve").is_ok());
        assert_eq!(
            Target::parse("mcpb://s3cret@127.0.0.1:9000").unwrap(),
            Target::Mcpb {
                addr: "127.0.0.1:9000".into(),
                token: Some("s3cret".into()),
                tls: false,
            }
        );
        for tls in ["mcpbs://localhost:9443", "TCPS://localhost:9443"] {
            assert_eq!(
                Target::parse(tls).unwrap().to_string(),
                "mcpbs://localhost:9443"
            );
        }
        assert_eq!(
            Target::parse("mcpb://s3cret@localhost:9000")
                .unwrap()
                .to_string(),
            "mcpb://localhost:9000"
        );
        assert!(Target::parse("mcpb://127.0.0.1").is_err());
    }

    #[test]
    fn urls_are_checked() {
        for good in [
            "http://127.0.0.1:8000/mcp",
            "https://example.com/mcp",
            "http://[::1]:1/mcp",
            "http://user:pw@host:65535",
            "http://host?x=1",
        ] {
            assert!(Target::parse(good).is_ok(), "{good}");
        }
        for (bad, says) in [
            (
                "http://127.0.0.1:99999/mcp",
                "port `99999` is not 1 to 65535",
            ),
            ("http://127.0.0.1:0/mcp", "port `0`"),
            ("http://host:x/mcp", "port `x`"),
            ("http:///mcp", "no host"),
            ("http://[::1/mcp", "closing"),
            ("http://[zz]:1/mcp", "not an IPv6"),
        ] {
            let e = Target::parse(bad).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
        assert!(Target::parse("mcpb://127.0.0.1:99999").is_err());
    }
}
