//! Questions a tool run from the console asks its client (elicitation, sampling), answered
//! in the page: each is sent to the page as an `ask` event on the call's stream and waits
//! in a bounded table until the page POSTs its answer (`/ui/api/answer`), the call's
//! stream closes, or [`ASK_TIMEOUT`] passes.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

/// Questions waiting for the page at most (every console call together).
pub const MAX_ASKS: usize = 16;
/// How long a question waits for its answer.
pub const ASK_TIMEOUT: Duration = Duration::from_secs(300);

/// An answer: the result object, or why the page declined to give one.
pub type Answer = Result<Value, String>;

/// The questions waiting for an answer, by id.
#[derive(Default)]
pub struct Asks {
    next: AtomicU64,
    waiting: Mutex<HashMap<u64, oneshot::Sender<Answer>>>,
}

impl Asks {
    /// A new question's id and where its answer arrives; `None` when [`MAX_ASKS`] wait.
    fn open(&self) -> Option<(u64, oneshot::Receiver<Answer>)> {
        let mut waiting = self.waiting.lock().ok()?;
        if waiting.len() >= MAX_ASKS {
            return None;
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let (tx, rx) = oneshot::channel();
        waiting.insert(id, tx);
        Some((id, rx))
    }

    /// Answers question `id`; false when no such question waits.
    pub fn answer(&self, id: u64, answer: Answer) -> bool {
        let tx = self.waiting.lock().ok().and_then(|mut w| w.remove(&id));
        tx.is_some_and(|tx| tx.send(answer).is_ok())
    }

    fn forget(&self, id: u64) {
        if let Ok(mut w) = self.waiting.lock() {
            w.remove(&id);
        }
    }

    /// Questions waiting now.
    pub fn len(&self) -> usize {
        self.waiting.lock().map(|w| w.len()).unwrap_or(0)
    }

    /// Whether none waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What a console call reaches the page with: its event stream and the questions table.
#[derive(Clone)]
pub struct PageLink {
    events: mpsc::Sender<Value>,
    asks: Arc<Asks>,
}

/// Forgets a question when its asker stops waiting, answered or not.
struct Forget<'a>(&'a Asks, u64);

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        self.0.forget(self.1);
    }
}

impl PageLink {
    /// A link sending events to `events`, questions waiting in `asks`.
    pub fn new(events: mpsc::Sender<Value>, asks: Arc<Asks>) -> PageLink {
        PageLink { events, asks }
    }

    /// Sends a progress or log event; dropped when the page lags behind.
    pub fn event(&self, event: Value) {
        let _ = self.events.try_send(event);
    }

    /// Asks the page `method` (`elicitation/create`, `sampling/createMessage`) with
    /// `params` and waits for its answer.
    pub async fn ask(&self, method: &str, params: Value) -> Answer {
        let (id, rx) = self
            .asks
            .open()
            .ok_or_else(|| "too many questions wait for the console".to_owned())?;
        let _forget = Forget(&self.asks, id);
        let event = json!({ "kind": "ask", "id": id, "method": method, "params": params });
        self.events
            .send(event)
            .await
            .map_err(|_| "the console page went away".to_owned())?;
        match tokio::time::timeout(ASK_TIMEOUT, rx).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Err("the question was dropped".into()),
            Err(_) => Err("the console did not answer in time".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_question_is_answered_then_forgotten() {
        let asks = Arc::new(Asks::default());
        let (tx, mut rx) = mpsc::channel(4);
        let link = PageLink::new(tx, asks.clone());
        let asking = tokio::spawn(async move { link.ask("elicitation/create", json!({})).await });
        let event = rx.recv().await.expect("the ask event");
        let id = event["id"].as_u64().expect("an id");
        assert_eq!(asks.len(), 1);
        assert!(asks.answer(id, Ok(json!({ "action": "accept" }))));
        let got = asking.await.expect("joined").expect("answered");
        assert_eq!(got["action"], "accept");
        assert!(asks.is_empty());
        assert!(!asks.answer(id, Ok(Value::Null)), "answered once only");
    }

    #[tokio::test]
    async fn the_table_stays_bounded() {
        let asks = Asks::default();
        let held: Vec<_> = (0..MAX_ASKS * 3).filter_map(|_| asks.open()).collect();
        assert_eq!(held.len(), MAX_ASKS);
        assert_eq!(asks.len(), MAX_ASKS);
    }

    #[tokio::test]
    async fn a_closed_page_ends_the_question() {
        let asks = Arc::new(Asks::default());
        let (tx, rx) = mpsc::channel(4);
        drop(rx);
        let link = PageLink::new(tx, asks.clone());
        assert!(link.ask("sampling/createMessage", json!({})).await.is_err());
        assert!(asks.is_empty());
    }
}
