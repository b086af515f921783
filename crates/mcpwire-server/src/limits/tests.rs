use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

use mcpwire_model::McpError;

use super::{ConnectionLimits, Rejections};

fn ip(n: u32) -> IpAddr {
    IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + n))
}

fn retry(e: McpError) -> (String, u64) {
    match e {
        McpError::RateLimited {
            limit,
            retry_after_secs,
        } => (limit, retry_after_secs),
        other => panic!("not a rate limit: {other:?}"),
    }
}

#[test]
fn connections_per_address_are_counted_and_given_back() {
    let rejections = Arc::new(Rejections::default());
    let limits = ConnectionLimits::new(2, rejections.clone());
    let a = limits.acquire(ip(1)).unwrap();
    let _b = limits.acquire(ip(1)).unwrap();
    assert_eq!(retry(limits.acquire(ip(1)).unwrap_err()).0, "connections");
    let _other = limits.acquire(ip(2)).unwrap();
    drop(a);
    let _c = limits.acquire(ip(1)).unwrap();
    assert_eq!(rejections.snapshot().connections, 1);
    drop((_b, _c, _other));
    assert_eq!(limits.addresses(), 0);
}

#[test]
fn a_changed_connection_limit_counts_the_connections_already_open() {
    let limits = ConnectionLimits::new(u32::MAX, Arc::new(Rejections::default()));
    limits.set_per_ip(None);
    let open: Vec<_> = (0..3).map(|_| limits.acquire(ip(1)).unwrap()).collect();
    // Lowered below what is open: the open ones stay, a new one waits for two to close.
    limits.set_per_ip(Some(2));
    assert!(limits.acquire(ip(1)).is_err());
    let mut open = open.into_iter();
    drop(open.next());
    assert!(limits.acquire(ip(1)).is_err());
    drop(open.next());
    let _again = limits.acquire(ip(1)).unwrap();
    // Lifted: no limit.
    limits.set_per_ip(None);
    let _more: Vec<_> = (0..10).map(|_| limits.acquire(ip(1)).unwrap()).collect();
    assert_eq!(limits.open_from(ip(1)), 12);
}
