//! Helpers for tests of tasks over HTTP: a 2026-07-28 client declaring the tasks extension,
//! bounded requests and polling, and a guard telling when a tool ended by cancellation.

use std::sync::Arc;
use std::time::Duration;

use mcpwire_client::{Client, ClientOptions, EraChoice, Target};
use mcpwire_model::types::ClientCapabilities;
use mcpwire_router::{CallCtx, TASKS_EXTENSION};
use mcpwire_testkit::wait::wait_for_async;
use serde_json::{Value, json};
use tokio::sync::Notify;

/// How long any one step may take before the test gives up (a bound, not a timing).
pub const STEP: Duration = Duration::from_secs(20);

/// Notifies when dropped with its call cancelled: the tool ended because of the
/// cancellation (its future is dropped, or returns, once it is cancelled).
pub struct EndsOnCancel(pub CallCtx, pub Arc<Notify>);

impl Drop for EndsOnCancel {
    fn drop(&mut self) {
        if self.0.is_cancelled() {
            self.1.notify_one();
        }
    }
}

/// A 2026-07-28 client declaring the tasks extension.
pub async fn client(url: &str) -> Client {
    let mut opts = ClientOptions::with_handshake_timeout(STEP);
    opts.era = EraChoice::Stateless;
    opts.capabilities = ClientCapabilities {
        extensions: Some(json!({ TASKS_EXTENSION: {} })),
        ..ClientCapabilities::default()
    };
    let (c, _events) = Client::connect(&Target::Url(url.to_owned()), &opts)
        .await
        .expect("connect");
    c
}

/// One request, answered within [`STEP`] and successfully.
pub async fn request(c: &Client, method: &str, params: Value) -> Value {
    tokio::time::timeout(STEP, c.request(method, params))
        .await
        .unwrap_or_else(|_| panic!("{method} was not answered"))
        .unwrap_or_else(|e| panic!("{method}: {e}"))
}

/// Polls `tasks/get` until the task is in `status` (bounded: 10 s).
pub async fn wait_for(c: &Client, id: &str, status: &str) -> Value {
    let what = format!("task {id} reaches {status}");
    wait_for_async(Duration::from_secs(10), &what, async || {
        let last = request(c, "tasks/get", json!({ "taskId": id })).await;
        (last["status"] == status).then_some(last)
    })
    .await
}
