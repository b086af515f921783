//! Fault tests: a scripted tool process (`envelope-test-peer`) misbehaves in every way the
//! host must survive — garbage frames, oversize declared lengths, no handshake, log floods,
//! exits mid-call, oversize raw results, decompression bombs.

use std::time::Duration;

use mcpwire_process::{Launch, ProcessBackend, ProcessConfig};
use mcpwire_router::Router;

mod common;
use common::{call, is_error, start, text};

#[tokio::test]
async fn many_calls_in_flight_are_correlated() {
    let backend = start("echo", |_| {}).await.expect("starts");
    assert_eq!(backend.tool_names(), ["echo"]);
    let router = Router::new(backend);
    let calls = (0..64).map(|i| {
        let router = router.clone();
        async move { (i, call(&router, &format!("msg {i}")).await) }
    });
    for (i, r) in futures::future::join_all(calls).await {
        assert!(!is_error(&r), "{r}");
        assert_eq!(text(&r), format!("msg {i}"));
    }
}

#[tokio::test]
async fn garbage_frame_is_skipped_and_the_stream_stays_in_sync() {
    let router = Router::new(start("garbage", |_| {}).await.expect("starts"));
    for i in 0..3 {
        let r = call(&router, &format!("after garbage {i}")).await;
        assert_eq!(text(&r), format!("after garbage {i}"));
    }
}

#[tokio::test]
async fn oversize_answer_fails_its_call_only_and_the_process_serves_on() {
    let router = Router::new(
        start("oversize", |c| c.max_envelope = 1 << 20)
            .await
            .expect("starts"),
    );
    for i in 0..2 {
        let r = call(&router, "big").await;
        assert!(is_error(&r), "{r}");
        assert!(text(&r).contains("over the 1048576-byte limit"), "{r}");
        // Same process, same connection: the next call is answered normally.
        let r = call(&router, &format!("small {i}")).await;
        assert_eq!(text(&r), format!("small {i}"));
    }
}

#[tokio::test]
async fn a_process_that_never_completes_the_handshake_is_an_error() {
    let err = start("no-handshake", |c| {
        c.handshake_timeout = Duration::from_millis(500)
    })
    .await
    .expect_err("must not start");
    assert!(err.to_string().contains("handshake"), "{err}");
}

#[tokio::test]
async fn a_file_that_is_not_runnable_is_an_error() {
    let cfg = ProcessConfig::new(Launch {
        file: "/nonexistent/tool".into(),
        runtime: None,
    });
    let err = ProcessBackend::start(cfg)
        .await
        .expect_err("must not start");
    assert!(err.to_string().contains("/nonexistent/tool"), "{err}");
}

#[tokio::test]
async fn a_log_flood_does_not_stop_the_answer() {
    let router = Router::new(start("log-flood", |_| {}).await.expect("starts"));
    let r = call(&router, "after the flood").await;
    assert_eq!(text(&r), "after the flood");
}

#[tokio::test]
async fn exit_mid_call_answers_restarts_and_then_reports_a_crash_loop() {
    let backend = start("exit", |_| {}).await.expect("starts");
    let router = Router::new(backend.clone());
    assert_eq!(backend.restarts(), 0);
    let first = call(&router, "x").await;
    assert!(
        is_error(&first) && text(&first).contains("exited"),
        "{first}"
    );
    // Every restarted process exits on its call too: after a few restarts the host stops
    // trying and answers with the crash-loop reason at once.
    let mut saw_loop = false;
    for _ in 0..10 {
        let r = call(&router, "x").await;
        assert!(is_error(&r), "{r}");
        if text(&r).contains("failed 5 times") {
            saw_loop = true;
            break;
        }
    }
    assert!(saw_loop, "no crash-loop report");
    assert!(backend.restarts() >= 4, "{} restarts", backend.restarts());
}

#[tokio::test]
async fn raw_result_over_the_limit_is_refused_and_the_stream_continues() {
    let router = Router::new(
        start("raw-big", |c| c.max_raw = 1 << 20)
            .await
            .expect("starts"),
    );
    for _ in 0..2 {
        let r = call(&router, "x").await;
        assert!(is_error(&r), "{r}");
        assert!(text(&r).contains("over the"), "{r}");
    }
}

#[tokio::test]
async fn raw_result_within_the_limit_arrives_whole() {
    let router = Router::new(start("raw-big", |_| {}).await.expect("starts"));
    let r = call(&router, "x").await;
    assert_eq!(text(&r), "z".repeat(2 << 20));
}

#[tokio::test]
async fn a_zstd_result_that_understates_its_size_is_refused() {
    let router = Router::new(start("raw-bomb", |_| {}).await.expect("starts"));
    let r = call(&router, "x").await;
    assert!(is_error(&r), "{r}");
    assert!(text(&r).contains("header says"), "{r}");
}

#[tokio::test]
async fn chunked_results_are_reassembled_or_refused_over_the_limit() {
    let router = Router::new(start("chunked", |_| {}).await.expect("starts"));
    for i in 0..2 {
        let r = call(&router, &format!("part {i} ")).await;
        assert_eq!(text(&r), format!("part {i} {}", "c".repeat(300_000)));
    }
    let router = Router::new(
        start("chunked", |c| c.max_raw = 100_000)
            .await
            .expect("starts"),
    );
    for _ in 0..2 {
        let r = call(&router, "x").await;
        assert!(is_error(&r) && text(&r).contains("over the"), "{r}");
    }
}
