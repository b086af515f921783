//! The Redis store against a real `redis-server` (skipped with a message when it is not
//! installed; a failure under `CI`): values with expiry, GCRA shared by two connections
//! (two replicas) and atomic under concurrency, and an outage survived without a restart.

use std::sync::Arc;
use std::time::Duration;

use mcpwire_store::testing::RedisServer;
use mcpwire_store::{Gcra, RateCheck, RateOutcome, RedisConfig, RedisStore, Store, StoreError};

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
    for _ in 0..100 {
        if s.get("b").await.unwrap().is_none() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(s.get("b").await.unwrap(), None);
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
    let mut healed = false;
    for _ in 0..100 {
        if let Ok(v) = s.get("a").await {
            assert_eq!(v, None, "nothing was persisted");
            healed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(healed, "the store reconnected");
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
