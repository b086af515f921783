//! The gateway's side of users' consent to upstream OAuth (`consent = "elicit"`): the
//! redirect URI of each such upstream (by default `/oauth/callback` on the first HTTP
//! listener), the one table of pending authorizations its upstreams and listeners share,
//! and the paths the listeners serve the redirect endpoint at. Decisions:
//! `docs/design/upstream-auth.md` (*Consent*).

use std::sync::Arc;

use crate::config::{BackendSource, BackendSpec, GatewayConfig};
use crate::credentials::ConsentMode;
use crate::listen::{ListenerSpec, Scheme};
use mcpwire_client::auth::{MAX_PENDING_CONSENTS, PendingConsents};

/// `consent = "elicit"` (the default of the authorization-code grant): the redirect URI is
/// the gateway's own redirect endpoint, by default `/oauth/callback` on the origin of the
/// first HTTP listener (whose port must then be fixed; behind a proxy, give `redirect_uri`
/// as the users' browsers reach it — its path is where the listeners serve the endpoint).
pub(super) fn redirect_to_the_gateway(
    b: &mut BackendSpec,
    listeners: &[ListenerSpec],
) -> Result<(), String> {
    let BackendSource::Upstream(up) = &mut b.source else {
        return Ok(());
    };
    let Some(oauth) = up.credentials.oauth.as_mut() else {
        return Ok(());
    };
    if oauth.consent != Some(ConsentMode::Elicit) {
        return Ok(());
    }
    let http = listeners.iter().find(|l| l.scheme == Scheme::Http);
    let Some(http) = http else {
        return Err(
            "the authorization_code grant asks users' consent through the gateway \
                    (consent = \"elicit\"), which needs an http:// listener to receive the \
                    authorization server's redirect; add one, or set consent = \
                    \"follow_redirect\" for an authorization server that approves the \
                    gateway without a page"
                .into(),
        );
    };
    match &oauth.redirect_uri {
        Some(uri) => {
            let Some(path) = redirect_path(uri) else {
                return Err(format!("`{uri}` is not an http(s) URL with a path"));
            };
            if listeners
                .iter()
                .any(|l| l.path.as_deref() == Some(path.as_str()))
            {
                return Err(format!(
                    "the redirect endpoint's path {path} is a listener's MCP endpoint: \
                     choose another"
                ));
            }
        }
        None => {
            let addr = http.addr.filter(|a| a.port() != 0).ok_or_else(|| {
                "the redirect URI defaults to /oauth/callback on the first http:// listener, \
                 whose port is 0 (chosen at start): give redirect_uri, or a fixed port"
                    .to_owned()
            })?;
            let scheme = if http.tls.is_some() { "https" } else { "http" };
            oauth.redirect_uri = Some(format!("{scheme}://{addr}{DEFAULT_CALLBACK_PATH}"));
        }
    }
    Ok(())
}

/// Where the gateway's redirect endpoint is served unless `redirect_uri` says otherwise.
pub const DEFAULT_CALLBACK_PATH: &str = "/oauth/callback";

/// The path of an `http(s)` redirect URI (`None`: not one).
pub(crate) fn redirect_path(uri: &str) -> Option<String> {
    let rest = uri
        .strip_prefix("https://")
        .or_else(|| uri.strip_prefix("http://"))?;
    let path = &rest[rest.find('/')?..];
    let path = path.split(['?', '#']).next().unwrap_or(path);
    (path.len() > 1).then(|| path.to_owned())
}

/// The pending authorizations of a gateway running `config`, served at the paths of its
/// upstreams' redirect URIs (none: the listeners serve no redirect endpoint).
pub(super) fn pending_consents(config: &GatewayConfig) -> Arc<PendingConsents> {
    let mut paths: Vec<String> = config
        .backends
        .iter()
        .filter_map(|b| match &b.source {
            BackendSource::Upstream(up) => up.credentials.oauth.as_ref(),
            _ => None,
        })
        .filter(|o| o.consent == Some(ConsentMode::Elicit))
        .filter_map(|o| o.redirect_uri.as_deref().and_then(redirect_path))
        .collect();
    paths.sort();
    paths.dedup();
    PendingConsents::new(MAX_PENDING_CONSENTS, paths)
}

#[cfg(test)]
mod tests {
    use super::{pending_consents, redirect_path};
    use crate::{BackendSource, ConsentMode, GatewayConfig};

    fn load(listen: &str, oauth: &str) -> Result<GatewayConfig, String> {
        let text = format!(
            "{listen}[backends.up]\nurl = \"https://up.example/mcp\"\n\
             [backends.up.oauth]\ngrant = \"authorization_code\"\n{oauth}"
        );
        GatewayConfig::from_toml(std::path::Path::new("/etc/mcpwire.toml"), &text)
            .map_err(|e| e.to_string())
    }

    fn redirect(c: &GatewayConfig) -> (Option<ConsentMode>, Option<String>) {
        match &c.backends[0].source {
            BackendSource::Upstream(u) => {
                let o = u.credentials.oauth.as_ref().unwrap();
                (o.consent, o.redirect_uri.clone())
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn elicit_is_the_default_and_redirects_to_the_first_http_listener() {
        let http = "[[listen]]\nurl = \"grpc://127.0.0.1:7000\"\n\
                    [[listen]]\nurl = \"http://127.0.0.1:8000/mcp\"\n";
        let c = load(http, "").unwrap();
        assert_eq!(
            redirect(&c),
            (
                Some(ConsentMode::Elicit),
                Some("http://127.0.0.1:8000/oauth/callback".into())
            )
        );
        assert_eq!(pending_consents(&c).paths(), ["/oauth/callback"]);
        let c = load(http, "redirect_uri = \"https://gw.example/auth/back\"\n").unwrap();
        assert_eq!(pending_consents(&c).paths(), ["/auth/back"]);
        let c = load(http, "consent = \"follow_redirect\"\n").unwrap();
        assert_eq!(redirect(&c).0, Some(ConsentMode::FollowRedirect));
        assert!(pending_consents(&c).paths().is_empty());
    }

    #[test]
    fn elicit_refusals_name_the_fix() {
        let e = load("", "").unwrap_err();
        assert!(
            e.contains("http:// listener") && e.contains("follow_redirect"),
            "{e}"
        );
        let e = load("[[listen]]\nurl = \"http://127.0.0.1:0/mcp\"\n", "").unwrap_err();
        assert!(e.contains("port is 0") && e.contains("redirect_uri"), "{e}");
        let e = load(
            "[[listen]]\nurl = \"http://127.0.0.1:8000/mcp\"\n",
            "redirect_uri = \"http://127.0.0.1:8000/mcp\"\n",
        )
        .unwrap_err();
        assert!(e.contains("MCP endpoint"), "{e}");
        let e = load(
            "[[listen]]\nurl = \"http://127.0.0.1:8000/mcp\"\n",
            "consent = \"elicit\"\n",
        );
        assert!(e.is_ok());
    }

    #[test]
    fn redirect_paths() {
        let p = |u| redirect_path(u);
        assert_eq!(
            p("https://gw.example/oauth/callback?x=1").as_deref(),
            Some("/oauth/callback")
        );
        assert_eq!(p("http://127.0.0.1:8000/cb").as_deref(), Some("/cb"));
        assert_eq!(p("http://127.0.0.1:8000/"), None);
        assert_eq!(p("ftp://x/cb"), None);
    }
}
