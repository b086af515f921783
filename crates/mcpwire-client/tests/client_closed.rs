//! A client's connection that ends fails the requests in flight, and says it ended before
//! they fail: an owner (the gateway's upstream link) that saw a request fail because the
//! server went away must not send its next request into the same, closed connection.

use std::time::Duration;

use mcpwire_client::{Client, ClientOptions, EraChoice, Target};
use serde_json::json;

/// A stdio server that completes the handshake, then exits on the first request.
const DIES_ON_FIRST_CALL: &str = r#"
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("method") == "initialize":
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {
            "protocolVersion": msg["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "dies", "version": "1"}}}), flush=True)
    elif "id" in msg:
        sys.exit(3)
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_that_failed_with_the_connection_sees_it_closed() {
    let target = Target::Command {
        argv: vec!["python3".into(), "-c".into(), DIES_ON_FIRST_CALL.into()],
    };
    let mut opts = ClientOptions::with_handshake_timeout(Duration::from_secs(20));
    opts.era = EraChoice::Handshake;
    let (client, _events) = Client::connect(&target, &opts).await.expect("connect");
    assert!(!client.is_closed());
    let failed = tokio::time::timeout(
        Duration::from_secs(20),
        client.call_tool("anything", json!({}), false),
    )
    .await
    .expect("bounded");
    let err = failed.expect_err("the server exited instead of answering");
    assert!(err.to_string().contains("before answering"), "{err}");
    // No yield between the failure and this check: the flag was set first.
    assert!(client.is_closed(), "the connection is known to be closed");
}
