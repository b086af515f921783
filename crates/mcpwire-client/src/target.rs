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
            return Ok(Target::Url(text.to_owned()));
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
    if !looks_like_address(addr) || addr.contains('/') {
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
}
