//! [`ServerTls`]: a listener's current rustls configuration, replaced when its files change.
//!
//! A task re-reads the files every `reload_every` (tokio's clock, so tests advance it) and
//! compares their bytes with the last ones it tried: a change builds a new configuration,
//! which new handshakes use; connections already up keep theirs. A change that does not
//! build (a half-written file, a key that is not the certificate's) is refused with an
//! error log naming the file, the previous configuration keeps serving, and the next change
//! is tried again. Reading is synchronous (a few KiB per check) so the clock is never
//! advanced past a read in progress.

use std::sync::{Arc, Mutex, RwLock, Weak};

use tokio_rustls::TlsAcceptor;

use super::TlsError;
use super::config::TlsConfig;
use super::server::Files;

/// A listener's TLS: its configuration now, and how to rebuild it.
pub(crate) struct ServerTls {
    config: TlsConfig,
    alpn: Vec<&'static [u8]>,
    current: RwLock<TlsAcceptor>,
    /// The files last tried (built or refused).
    tried: Mutex<Files>,
}

/// What a check of the files found.
#[derive(Debug)]
pub(crate) enum Checked {
    /// The same bytes as last time.
    Unchanged,
    /// New files, now serving new handshakes.
    Reloaded,
    /// New files that do not make a configuration; the previous one keeps serving.
    Refused(TlsError),
}

impl ServerTls {
    /// Loads `config`'s files (offering `alpn` to clients) and starts watching them; the
    /// watch ends when the returned handle is dropped.
    pub(crate) fn load(
        config: &TlsConfig,
        alpn: &[&'static [u8]],
    ) -> Result<Arc<ServerTls>, TlsError> {
        let files = config.read()?;
        let built = config.build(&files, alpn)?;
        let tls = Arc::new(ServerTls {
            config: config.clone(),
            alpn: alpn.to_vec(),
            current: RwLock::new(TlsAcceptor::from(Arc::new(built))),
            tried: Mutex::new(files),
        });
        tokio::spawn(watch(Arc::downgrade(&tls), config.reload_every));
        Ok(tls)
    }

    /// The acceptor for a new handshake.
    pub(crate) fn acceptor(&self) -> TlsAcceptor {
        self.current
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Re-reads the files and, if they changed, rebuilds the configuration.
    pub(crate) fn check(&self) -> Checked {
        let files = match self.config.read() {
            Ok(f) => f,
            // A file being replaced may be missing for a moment: refused, retried.
            Err(e) => return Checked::Refused(e),
        };
        let mut tried = self
            .tried
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if *tried == files {
            return Checked::Unchanged;
        }
        let built = self.config.build(&files, &self.alpn);
        *tried = files;
        match built {
            Ok(config) => {
                *self
                    .current
                    .write()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) =
                    TlsAcceptor::from(Arc::new(config));
                Checked::Reloaded
            }
            Err(e) => Checked::Refused(e),
        }
    }
}

/// Checks `tls`'s files every `every` while it exists. A refusal is logged once per change
/// of the files (an unreadable file at every check until it is back).
async fn watch(tls: Weak<ServerTls>, every: std::time::Duration) {
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticks.tick().await;
    loop {
        ticks.tick().await;
        let Some(tls) = tls.upgrade() else { return };
        let cert = tls.config.cert.display();
        match tls.check() {
            Checked::Unchanged => {}
            Checked::Reloaded => tracing::info!(%cert, "TLS certificate reloaded"),
            Checked::Refused(e) => tracing::error!(
                %cert,
                error = %e,
                "TLS files changed but cannot be used; the previous certificate keeps serving"
            ),
        }
    }
}
