use std::net::{IpAddr, Ipv4Addr};
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use mcpwire_model::McpError;
use mcpwire_router::Identity;

use super::{Rate, RateLimits, Rejections};

fn rate(n: u32, secs: u64) -> Rate {
    Rate::new(NonZeroU32::new(n).unwrap(), Duration::from_secs(secs))
}

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
fn rates_parse_and_refuse_nonsense() {
    assert_eq!(Rate::parse("100/min").unwrap(), rate(100, 60));
    assert_eq!(Rate::parse("5/s").unwrap(), rate(5, 1));
    assert_eq!(Rate::parse("2/hour").unwrap(), rate(2, 3600));
    for bad in ["100", "0/s", "x/s", "5/week", "-1/s"] {
        assert!(Rate::parse(bad).is_err(), "{bad}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_burst_then_one_per_interval_on_the_paused_clock() {
    let rejections = Arc::new(Rejections::default());
    let limits = RateLimits::new(Some(rate(2, 10)), None, None, 100, rejections.clone());
    let alice = Identity::api_key("alice", vec![]);
    assert!(limits.check(Some(&alice), None, None).is_ok());
    assert!(limits.check(Some(&alice), None, None).is_ok());
    let (limit, secs) = retry(limits.check(Some(&alice), None, None).unwrap_err());
    assert_eq!((limit.as_str(), secs), ("identity", 5));
    // Another caller has its own bucket; the anonymous caller shares one.
    let bob = Identity::api_key("bob", vec![]);
    assert!(limits.check(Some(&bob), None, None).is_ok());
    assert!(limits.check(None, None, None).is_ok());
    tokio::time::advance(Duration::from_millis(4_900)).await;
    assert!(limits.check(Some(&alice), None, None).is_err());
    tokio::time::advance(Duration::from_millis(100)).await;
    assert!(limits.check(Some(&alice), None, None).is_ok());
    assert!(limits.check(Some(&alice), None, None).is_err());
    assert_eq!(rejections.snapshot().identity, 3);
}

#[tokio::test(start_paused = true)]
async fn ip_and_tool_limits_name_themselves() {
    let rejections = Arc::new(Rejections::default());
    let limits = RateLimits::new(
        None,
        Some(rate(1, 1)),
        Some(rate(1, 60)),
        100,
        rejections.clone(),
    );
    assert!(limits.check(None, Some(ip(1)), Some("echo")).is_ok());
    assert_eq!(
        retry(limits.check(None, Some(ip(1)), None).unwrap_err()).0,
        "ip"
    );
    // Another address may call, but not the same tool within the minute.
    let (limit, secs) = retry(limits.check(None, Some(ip(2)), Some("echo")).unwrap_err());
    assert_eq!((limit.as_str(), secs), ("tool", 60));
    assert!(limits.check(None, Some(ip(3)), Some("add")).is_ok());
    // stdio has no address: the IP limit does not apply.
    assert!(limits.check(None, None, None).is_ok());
    let counts = rejections.snapshot();
    assert_eq!((counts.ip, counts.tool), (1, 1));
}

#[tokio::test(start_paused = true)]
async fn a_flood_of_addresses_stays_within_the_key_bound() {
    let rejections = Arc::new(Rejections::default());
    let limits = RateLimits::new(None, Some(rate(1, 1)), None, 64, rejections.clone());
    for round in 0..20u32 {
        for n in 0..1_000u32 {
            let _ = limits.check(None, Some(ip(round * 1_000 + n)), None);
        }
        assert!(limits.keys_held().1 <= 64, "{:?}", limits.keys_held());
        tokio::time::advance(Duration::from_millis(500)).await;
    }
    // Once the flood is over and the buckets refilled, new addresses get their own keys again.
    tokio::time::advance(Duration::from_secs(2)).await;
    assert!(limits.check(None, Some(ip(999_999)), None).is_ok());
    assert!(limits.keys_held().1 <= 64);
}

mod layer {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use mcpwire_model::types::{ClientCapabilities, Implementation};
    use mcpwire_model::{CallEvent, ClientAsk, McpError, Raw, Revision};
    use mcpwire_router::{
        Backend, BackendRequest, BoxFuture, CallCtx, ForwardedCall, NoArgs, Peer, ToolError, tool,
    };
    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::limits::Limited;

    struct Client;

    impl Peer for Client {
        fn event(&self, _: CallEvent) {}
        fn ask(&self, _: ClientAsk) -> BoxFuture<'static, Result<Raw, McpError>> {
            Box::pin(async { Err(McpError::Internal("no asks here".into())) })
        }
    }

    fn from_client(ip: u32) -> CallCtx {
        CallCtx::new(
            Revision::LATEST_STATEFUL,
            Arc::new(ClientCapabilities::default()),
            CancellationToken::new(),
            Some(Arc::new(Client)),
        )
        .with_client_ip(Some(super::ip(ip)))
    }

    fn call(name: &str) -> BackendRequest {
        BackendRequest::CallTool {
            name: name.into(),
            arguments: None,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn refused_requests_never_reach_the_backend_and_internal_calls_are_not_counted() {
        let ran = Arc::new(AtomicUsize::new(0));
        let counter = ran.clone();
        let server = mcpwire_router::Server::builder(Implementation::new("t", "1"))
            .tool(tool("count", move |_c: CallCtx, _: NoArgs| {
                let counter = counter.clone();
                async move {
                    counter.fetch_add(1, Ordering::Relaxed);
                    Ok::<_, ToolError>("counted")
                }
            }))
            .build();
        let limits = Arc::new(RateLimits::new(
            None,
            Some(rate(2, 60)),
            None,
            100,
            Arc::new(Rejections::default()),
        ));
        let limited = Limited::new(server, limits);
        // The server's own calls (no client) are not counted.
        for _ in 0..5 {
            assert!(
                limited
                    .call(CallCtx::detached(), call("count"))
                    .await
                    .is_ok()
            );
        }
        assert!(limited.call(from_client(1), call("count")).await.is_ok());
        assert!(limited.call(from_client(1), call("count")).await.is_ok());
        let refused = limited.call(from_client(1), call("count")).await;
        assert!(
            matches!(refused, Err(McpError::RateLimited { .. })),
            "{refused:?}"
        );
        assert_eq!(
            ran.load(Ordering::Relaxed),
            7,
            "the refused call did not run"
        );
        // Another address is served.
        assert!(limited.call(from_client(2), call("count")).await.is_ok());
        tokio::time::advance(Duration::from_secs(30)).await;
        assert!(limited.call(from_client(1), call("count")).await.is_ok());
    }

    /// Forwards calls of `fast`, gives every other call back; counts what it forwarded.
    struct Forwarding {
        info: mcpwire_router::BackendInfo,
        forwarded: AtomicUsize,
        called: AtomicUsize,
    }

    impl Backend for Forwarding {
        fn info(&self) -> &mcpwire_router::BackendInfo {
            &self.info
        }
        fn call(
            &self,
            _: CallCtx,
            _: BackendRequest,
        ) -> BoxFuture<'static, Result<mcpwire_model::Reply, McpError>> {
            self.called.fetch_add(1, Ordering::Relaxed);
            Box::pin(async {
                Ok(mcpwire_model::Reply::Complete(mcpwire_model::to_raw(
                    &"general",
                )))
            })
        }
        fn forwards_tool_calls(&self) -> bool {
            true
        }
        fn forward_tool_call(
            &self,
            call: ForwardedCall,
        ) -> Result<BoxFuture<'static, Result<mcpwire_model::Reply, McpError>>, ForwardedCall>
        {
            if call.name() != "fast" {
                return Err(call);
            }
            self.forwarded.fetch_add(1, Ordering::Relaxed);
            Ok(Box::pin(async {
                Ok(mcpwire_model::Reply::Complete(mcpwire_model::to_raw(
                    &"forwarded",
                )))
            }))
        }
    }

    fn forwarded(ctx: CallCtx, name: &str) -> ForwardedCall {
        let params = serde_json::value::RawValue::from_string(format!(
            r#"{{"name":"{name}","arguments":{{}}}}"#
        ))
        .unwrap();
        ForwardedCall::new(ctx, params).map_err(|_| ()).unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn forwarded_calls_stay_fast_behind_the_limits_and_are_counted_once() {
        let inner = Arc::new(Forwarding {
            info: mcpwire_router::BackendInfo {
                name: "f".into(),
                capabilities: Default::default(),
            },
            forwarded: AtomicUsize::new(0),
            called: AtomicUsize::new(0),
        });
        let limits = Arc::new(RateLimits::new(
            None,
            Some(rate(3, 60)),
            None,
            100,
            Arc::new(Rejections::default()),
        ));
        let limited = Limited::new(inner.clone(), limits);
        assert!(limited.forwards_tool_calls());
        // Forwarded as it came: one token each.
        for _ in 0..2 {
            let answer = limited.forward_tool_call(forwarded(from_client(1), "fast"));
            assert!(answer.map_err(|_| ()).unwrap().await.is_ok());
        }
        // Given back by the inner backend: run the general way, still one token.
        let answer = limited.forward_tool_call(forwarded(from_client(1), "slow"));
        assert!(answer.map_err(|_| ()).unwrap().await.is_ok());
        assert_eq!(inner.forwarded.load(Ordering::Relaxed), 2);
        assert_eq!(inner.called.load(Ordering::Relaxed), 1);
        // The fourth call from the address is refused and reaches nothing.
        let refused = limited.forward_tool_call(forwarded(from_client(1), "fast"));
        let refused = refused.map_err(|_| ()).unwrap().await;
        assert!(
            matches!(refused, Err(McpError::RateLimited { .. })),
            "{refused:?}"
        );
        assert_eq!(inner.forwarded.load(Ordering::Relaxed), 2);
        // The server's own calls pass straight through, uncounted.
        let own = limited.forward_tool_call(forwarded(CallCtx::detached(), "fast"));
        assert!(own.map_err(|_| ()).unwrap().await.is_ok());
    }
}

#[tokio::test(start_paused = true)]
async fn limits_in_a_shared_store_are_one_budget_for_every_holder() {
    let store: Arc<dyn mcpwire_store::Store> = Arc::new(mcpwire_store::MemoryStore::new(100));
    let rejections = Arc::new(Rejections::default());
    // Two replicas' limits over one store.
    let a = RateLimits::in_store(
        Some(rate(2, 60)),
        Some(rate(100, 60)),
        Some(rate(3, 60)),
        store.clone(),
        rejections.clone(),
    );
    let b = RateLimits::in_store(
        Some(rate(2, 60)),
        Some(rate(100, 60)),
        Some(rate(3, 60)),
        store,
        rejections.clone(),
    );
    assert!(a.is_stored());
    let alice = Identity::api_key("alice", vec![]);
    let bob = Identity::api_key("bob", vec![]);
    a.check_stored(Some(&alice), Some(ip(1)), Some("t"))
        .await
        .unwrap();
    b.check_stored(Some(&alice), Some(ip(2)), Some("t"))
        .await
        .unwrap();
    let refused = a.check_stored(Some(&alice), Some(ip(1)), None).await;
    let (limit, secs) = retry(refused.unwrap_err());
    assert_eq!(limit, "identity");
    assert!((1..=30).contains(&secs), "{secs}");
    // The tool's budget is shared by every caller: bob uses its last call.
    b.check_stored(Some(&bob), None, Some("t")).await.unwrap();
    let (limit, _) = retry(
        a.check_stored(Some(&bob), None, Some("t"))
            .await
            .unwrap_err(),
    );
    assert_eq!(limit, "tool");
    let counts = rejections.snapshot();
    assert_eq!((counts.identity, counts.tool, counts.ip), (1, 1, 0));
    // The synchronous local check has nothing to say about stored limits.
    assert!(a.check(Some(&alice), Some(ip(1)), None).is_ok());
    tokio::time::advance(Duration::from_secs(30)).await;
    a.check_stored(Some(&alice), None, None).await.unwrap();
}
