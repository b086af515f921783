//! Connections per client IP, for every network listener.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use mcpwire_model::McpError;

use super::Rejections;
use crate::observe::Wire;

/// At most `per_ip` open connections from one IP address. The map holds only addresses
/// with a connection open (an entry goes when its last connection closes), so its size is
/// bounded by the open connections.
#[derive(Debug)]
pub struct ConnectionLimits {
    per_ip: u32,
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
            per_ip: per_ip.max(1),
            open: Mutex::new(HashMap::new()),
            rejections,
        })
    }

    /// A slot for one more connection from `ip`, or the refusal to answer it with.
    pub fn acquire(self: &Arc<Self>, ip: IpAddr) -> Result<ConnectionPermit, McpError> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let n = open.entry(ip).or_insert(0);
        if *n >= self.per_ip {
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
        wire: Wire,
    ) -> Result<ConnectionPermit, McpError> {
        let admitted = self.acquire(ip);
        if admitted.is_err() {
            crate::observe::rate_limited(wire, "connections");
        }
        admitted
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
