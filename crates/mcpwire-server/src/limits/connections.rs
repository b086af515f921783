//! Connections per client IP, for every network listener.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use mcpwire_model::McpError;

use super::Rejections;
use crate::observe::WireLabel;

/// At most `per_ip` open connections from one IP address. The map holds only addresses
/// with a connection open (an entry goes when its last connection closes), so its size is
/// bounded by the open connections.
#[derive(Debug)]
pub struct ConnectionLimits {
    /// The limit; `u32::MAX`: none (connections are still counted, so a limit set by a
    /// reload sees the connections already open).
    per_ip: AtomicU32,
    open: Mutex<HashMap<IpAddr, u32>>,
    rejections: Arc<Rejections>,
}

/// One accepted connection's slot; dropping it (the connection ended) gives it back.
#[derive(Debug)]
pub struct ConnectionPermit {
    limits: Arc<ConnectionLimits>,
    ip: IpAddr,
}

/// Seconds a refused connection is told to wait: connections have no schedule to compute
/// from, so a short fixed pause.
const CONNECTION_RETRY_SECS: u64 = 1;

impl ConnectionLimits {
    /// At most `per_ip` connections per address, refusals counted in `rejections`.
    pub fn new(per_ip: u32, rejections: Arc<Rejections>) -> Arc<ConnectionLimits> {
        Arc::new(ConnectionLimits {
            per_ip: AtomicU32::new(per_ip.max(1)),
            open: Mutex::new(HashMap::new()),
            rejections,
        })
    }

    /// A slot for one more connection from `ip`, or the refusal to answer it with.
    pub fn acquire(self: &Arc<Self>, ip: IpAddr) -> Result<ConnectionPermit, McpError> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let n = open.entry(ip).or_insert(0);
        if *n >= self.per_ip.load(Ordering::Relaxed) {
            drop(open);
            self.rejections.connections.fetch_add(1, Ordering::Relaxed);
            return Err(McpError::RateLimited {
                limit: "connections".to_owned(),
                retry_after_secs: CONNECTION_RETRY_SECS,
            });
        }
        *n += 1;
        Ok(ConnectionPermit {
            limits: self.clone(),
            ip,
        })
    }

    /// [`ConnectionLimits::acquire`] for a connection accepted on `wire`, a refusal counted
    /// in `mcpwire_rate_limited_total{wire, limit="connections"}`.
    pub(crate) fn admit(
        self: &Arc<Self>,
        ip: IpAddr,
        wire: WireLabel,
    ) -> Result<ConnectionPermit, McpError> {
        let admitted = self.acquire(ip);
        if admitted.is_err() {
            crate::observe::rate_limited(wire, "connections");
        }
        admitted
    }

    /// Changes the limit (a reload of `[limits] connections_per_ip`; `None`: no limit).
    /// Connections already open stay; an address over a lowered limit gets no new one
    /// until enough of its connections close.
    pub fn set_per_ip(&self, per_ip: Option<u32>) {
        let per_ip = per_ip.map_or(u32::MAX, |n| n.max(1));
        self.per_ip.store(per_ip, Ordering::Relaxed);
    }

    /// Connections open from `ip` now.
    pub fn open_from(&self, ip: IpAddr) -> u32 {
        let open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        open.get(&ip).copied().unwrap_or(0)
    }

    /// Addresses with a connection open now.
    pub fn addresses(&self) -> usize {
        self.open.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

impl Drop for ConnectionPermit {
    fn drop(&mut self) {
        let mut open = self.limits.open.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = open.get_mut(&self.ip) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                open.remove(&self.ip);
            }
        }
    }
}
