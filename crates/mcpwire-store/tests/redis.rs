//! The Redis store against a real `redis-server` (skipped with a message when it is not
//! installed; a failure under `CI`): values with expiry, GCRA shared by two connections
//! (two replicas) and atomic under concurrency, and an outage survived without a restart.

use std::sync::Arc;
use std::time::Duration;

use mcpwire_store::testing::RedisServer;
use mcpwire_store::{
    Gcra, LOG_MAX_ENTRIES, LogAppend, RateCheck, RateOutcome, RedisConfig, RedisStore, Store,
    StoreError,
};
use mcpwire_testkit::wait::{wait_for_async, wait_until_async};

async fn store(server: &RedisServer, prefix: &str) -> RedisStore {
    let mut config = RedisConfig::new(server.url());
    config.prefix = prefix.to_owned();
    RedisStore::connect(config).await.expect("connects")
}

#[tokio::test]
async fn values_live_until_their_expiry() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let s = store(&server, "t1:").await;
    assert_eq!(s.get("a").await.unwrap(), None);
    s.put("a", b"hello", Duration::from_secs(60)).await.unwrap();
    assert_eq!(s.get("a").await.unwrap().as_deref(), Some(&b"hello"[..]));
    assert!(s.touch("a", Duration::from_secs(60)).await.unwrap());
    assert!(!s.touch("missing", Duration::from_secs(60)).await.unwrap());
    assert!(s.remove("a").await.unwrap());
    assert!(!s.remove("a").await.unwrap());
    // Expiry is the server's: a short one passes.
    s.put("b", b"x", Duration::from_millis(1)).await.unwrap();
    let expired = async || s.get("b").await.unwrap().is_none();
    wait_until_async(Duration::from_secs(2), "the value expired", expired).await;
    // Lists: the newest entries, taken once.
    for v in [b"1", b"2", b"3"] {
        s.push("q", v, 2, Duration::from_secs(60)).await.unwrap();
    }
    assert_eq!(
        s.take("q").await.unwrap(),
        vec![b"2".to_vec(), b"3".to_vec()]
    );
    assert!(s.take("q").await.unwrap().is_empty());
    // Another prefix is another namespace.
    s.put("c", b"1", Duration::from_secs(60)).await.unwrap();
    assert_eq!(store(&server, "t2:").await.get("c").await.unwrap(), None);
    assert!(s.describe().starts_with("redis://127.0.0.1:"));
}

/// A replay log written by one replica is read by another: bounded by the writer's
/// `keep_from` and the store's own cap, read after a point, and expiring.
#[tokio::test]
async fn a_log_written_by_one_replica_is_read_by_another() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let a = store(&server, "l:").await;
    let b = store(&server, "l:").await;
    let entry = |seq: u64, keep_from: u64| LogAppend {
        key: "log".to_owned(),
        seq,
        data: format!("event {seq}").into_bytes(),
        keep_from,
        ttl: Duration::from_secs(60),
    };
    assert_eq!(b.log_read("log", 0, 10).await.unwrap(), None);
    let batch: Vec<LogAppend> = (1..=5).map(|n| entry(n, n.saturating_sub(2))).collect();
    a.log_append(&batch).await.unwrap();
    let got = b.log_read("log", 0, 10).await.unwrap().unwrap();
    assert_eq!(got.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![3, 4, 5]);
    assert_eq!(got[0].data, b"event 3");
    assert!(mcpwire_store::log_gap(1, &got));
    let after = b.log_read("log", 4, 10).await.unwrap().unwrap();
    assert_eq!(after.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![5]);
    assert!(b.log_read("log", 5, 10).await.unwrap().unwrap().is_empty());
    // An entry that is not after the last is refused, not reordered.
    assert!(a.log_append(&[entry(5, 0)]).await.is_err());
    // The store's own bound holds even when the writer keeps everything.
    let many: Vec<LogAppend> = (6..6 + LOG_MAX_ENTRIES as u64 + 10)
        .map(|n| entry(n, 0))
        .collect();
    a.log_append(&many).await.unwrap();
    let all = b.log_read("log", 0, usize::MAX).await.unwrap().unwrap();
    assert_eq!(all.len(), LOG_MAX_ENTRIES);
    // Expiry is the server's.
    let mut short = entry(1, 0);
    short.key = "short".into();
    short.ttl = Duration::from_millis(1);
    a.log_append(&[short]).await.unwrap();
    let expired = async || b.log_read("short", 0, 1).await.unwrap().is_none();
    wait_until_async(Duration::from_secs(2), "the log expired", expired).await;
}

#[tokio::test]
async fn one_budget_across_two_replicas_even_when_they_race() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let a = Arc::new(store(&server, "r:").await);
    let b = Arc::new(store(&server, "r:").await);
    // 10 per hour in bursts of 10: nothing comes back during the test.
    let limit = Gcra::new(10, Duration::from_secs(3600), 10);
    let mut checks = Vec::new();
    for i in 0..40 {
        let s = if i % 2 == 0 { a.clone() } else { b.clone() };
        checks.push(tokio::spawn(
            async move { s.rate(&[check("k", limit)]).await },
        ));
    }
    let mut allowed = 0;
    for c in checks {
        match c.await.unwrap().unwrap() {
            RateOutcome::Allowed => allowed += 1,
            RateOutcome::Refused { index, retry_after } => {
                assert_eq!(index, 0);
                assert!(retry_after > Duration::ZERO && retry_after <= Duration::from_secs(360));
            }
        }
    }
    assert_eq!(allowed, 10, "exactly the burst, whichever replica asked");
    // Another key has its own budget.
    assert_eq!(
        b.rate(&[check("other", limit)]).await.unwrap(),
        RateOutcome::Allowed
    );
    // Several keys in one step: the first refusal names its key; the earlier keys counted.
    let tight = Gcra::new(1, Duration::from_secs(3600), 1);
    let pair = [check("wide", limit), check("tight", tight)];
    assert_eq!(a.rate(&pair).await.unwrap(), RateOutcome::Allowed);
    assert!(matches!(
        b.rate(&pair).await.unwrap(),
        RateOutcome::Refused { index: 1, .. }
    ));
    for _ in 0..8 {
        assert_eq!(
            a.rate(&[check("wide", limit)]).await.unwrap(),
            RateOutcome::Allowed
        );
    }
    assert!(
        matches!(
            a.rate(&[check("wide", limit)]).await.unwrap(),
            RateOutcome::Refused { .. }
        ),
        "wide counted 2 (the refused pair too) + 8: its burst of 10 is spent"
    );
}

fn check(key: &str, limit: Gcra) -> RateCheck {
    RateCheck {
        key: key.to_owned(),
        limit,
    }
}

#[tokio::test]
async fn an_outage_fails_clearly_and_heals_without_a_restart() {
    let Some(mut server) = RedisServer::start() else {
        return;
    };
    let s = store(&server, "o:").await;
    s.put("a", b"1", Duration::from_secs(60)).await.unwrap();
    let limit = Gcra::new(100, Duration::from_secs(1), 100);
    assert_eq!(
        s.rate(&[check("k", limit)]).await.unwrap(),
        RateOutcome::Allowed
    );

    server.stop();
    let down = s.get("a").await.unwrap_err();
    assert!(matches!(down, StoreError::Unavailable { .. }), "{down:?}");
    assert!(down.is_transient());
    assert!(down.to_string().contains("unavailable"), "{down}");
    let down = s.rate(&[check("k", limit)]).await.unwrap_err();
    assert!(matches!(down, StoreError::Unavailable { .. }), "{down:?}");

    server.start_again().unwrap();
    // The connection comes back by itself (bounded wait: 100 tries); the restarted server
    // is empty, and the rate script is loaded again.
    let healed = async || s.get("a").await.ok();
    let v = wait_for_async(Duration::from_secs(10), "the store reconnected", healed).await;
    assert_eq!(v, None, "nothing was persisted");
    assert_eq!(
        s.rate(&[check("k", limit)]).await.unwrap(),
        RateOutcome::Allowed
    );
}

#[tokio::test]
async fn a_server_that_is_not_there_is_a_clear_startup_error() {
    // A port nothing listens on (bound and released).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let e = RedisStore::connect(RedisConfig::new(format!("redis://127.0.0.1:{port}/0")))
        .await
        .unwrap_err();
    assert!(matches!(e, StoreError::Unavailable { .. }), "{e:?}");
    let e = RedisStore::connect(RedisConfig::new("http://x"))
        .await
        .unwrap_err();
    assert!(matches!(e, StoreError::Config(_)), "{e:?}");
}

/// Two replicas' stores: what one publishes reaches the other's subscription (on its
/// channel only), and a subscription survives a Redis restart by subscribing again.
#[tokio::test]
async fn published_messages_cross_replicas_and_subscriptions_survive_a_restart() {
    let Some(mut server) = RedisServer::start() else {
        return;
    };
    let a = store(&server, "p:").await;
    let b = store(&server, "p:").await;
    let mut on_b = b.subscribe(&["to-b".to_owned()]).await.unwrap();
    assert_eq!(a.publish("to-c", b"nobody").await.unwrap(), 0);
    assert_eq!(a.publish("to-b", b"hello").await.unwrap(), 1);
    assert_eq!(on_b.recv().await.unwrap(), b"hello");

    server.stop();
    assert!(matches!(
        a.publish("to-b", b"lost").await,
        Err(StoreError::Unavailable { .. })
    ));
    server.start_again().unwrap();
    // Bounded: tried until the subscription is back and a message gets through.
    let delivered = async || a.publish("to-b", b"again").await.unwrap_or(0) == 1;
    let what = "the subscription came back by itself";
    wait_until_async(Duration::from_secs(10), what, delivered).await;
    assert_eq!(on_b.recv().await.unwrap(), b"again");
}
