//! The call context: what a running request can do besides returning a result.

use std::sync::{Arc, Mutex, OnceLock};

use mcpwire_model::types::{
    ClientCapabilities, CreateMessageParams, CreateMessageResult, ElicitParams, ElicitResult,
    ListRootsResult, LoggingLevel,
};
use mcpwire_model::{
    CallEvent, ClientAsk, LogEntry, McpError, ProgressUpdate, Raw, RequestId, Revision, to_raw,
};
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

use crate::BoxFuture;
use crate::identity::Identity;
use crate::input::InputRound;
use crate::session_scope::SessionScope;
use crate::tasks::TaskEntry;

/// The connection a call came from, as the call sees it. Implemented by the shell.
pub trait Peer: Send + Sync + 'static {
    /// Sends a progress or log event for this call.
    fn event(&self, event: CallEvent);
    /// Asks the client something (sampling, elicitation, roots) for this call.
    fn ask(&self, ask: ClientAsk) -> BoxFuture<'static, Result<Raw, McpError>>;

    /// Closes the connection showing this call's messages, keeping the call running (see
    /// [`CallCtx::close_stream`]). Wires without resumable streams ignore it.
    fn close_stream(&self) {}
}

struct Inner {
    revision: Revision,
    progress_token: Option<RequestId>,
    client_capabilities: Arc<ClientCapabilities>,
    cancel: CancellationToken,
    peer: Option<Arc<dyn Peer>>,
    session: Option<SessionScope>,
    identity: Option<Identity>,
    /// The network address the request came from (`None` on stdio).
    client_ip: Option<std::net::IpAddr>,
    /// The request's `_meta`, as the client sent it.
    meta: Option<Arc<RawValue>>,
    /// The listener a request without a session came through (a session's own is in
    /// its [`SessionScope`]).
    listener: Option<Arc<str>>,
    input: Option<Mutex<InputRound>>,
    /// Set when the call became a task: asks and progress go to the task from then on.
    task: OnceLock<Arc<TaskEntry>>,
    /// Signalled by [`CallCtx::run_as_task`].
    wants_task: tokio::sync::Notify,
}

/// What a tool (or any backend) can do while answering: report progress, log, ask the
/// client, notice cancellation. Cheap to clone.
#[derive(Clone)]
pub struct CallCtx {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for CallCtx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallCtx")
            .field("revision", &self.inner.revision)
            .field("cancelled", &self.inner.cancel.is_cancelled())
            .finish()
    }
}

impl CallCtx {
    /// A context for a request answered in `revision`.
    ///
    /// `peer` is `None` where nothing can reach the client (tests, fire-and-forget).
    pub fn new(
        revision: Revision,
        client_capabilities: Arc<ClientCapabilities>,
        cancel: CancellationToken,
        peer: Option<Arc<dyn Peer>>,
    ) -> CallCtx {
        CallCtx {
            inner: Arc::new(Inner {
                revision,
                progress_token: None,
                client_capabilities,
                cancel,
                peer,
                session: None,
                identity: None,
                client_ip: None,
                meta: None,
                listener: None,
                input: None,
                task: OnceLock::new(),
                wants_task: tokio::sync::Notify::new(),
            }),
        }
    }

    /// A context detached from any client (for tests and internal calls).
    pub fn detached() -> CallCtx {
        CallCtx::new(
            Revision::LATEST_STATEFUL,
            Arc::new(ClientCapabilities::default()),
            CancellationToken::new(),
            None,
        )
    }

    /// The same context with 2026-07-28 input round `round`.
    pub(crate) fn with_input(self, round: InputRound) -> CallCtx {
        self.edited(|inner| inner.input = Some(Mutex::new(round)))
    }

    /// The same context under another cancellation token (before [`CallCtx::with_input`]).
    pub(crate) fn with_cancel(self, cancel: CancellationToken) -> CallCtx {
        self.edited(|inner| {
            inner.cancel = cancel;
            inner.input = None;
        })
    }

    /// This context with `change` made: in place when nothing else holds it yet and it is
    /// no task (the router's case — a 2026-07-28 call's context was copied on every call),
    /// else on a copy with no input round and a task slot of its own.
    fn edited(mut self, change: impl FnOnce(&mut Inner)) -> CallCtx {
        if let Some(inner) = Arc::get_mut(&mut self.inner)
            && inner.task.get().is_none()
        {
            change(inner);
            return self;
        }
        let mut inner = Inner {
            revision: self.inner.revision,
            progress_token: self.inner.progress_token.clone(),
            client_capabilities: self.inner.client_capabilities.clone(),
            cancel: self.inner.cancel.clone(),
            peer: self.inner.peer.clone(),
            session: self.inner.session.clone(),
            identity: self.inner.identity.clone(),
            client_ip: self.inner.client_ip,
            meta: self.inner.meta.clone(),
            listener: self.inner.listener.clone(),
            input: None,
            task: OnceLock::new(),
            wants_task: tokio::sync::Notify::new(),
        };
        change(&mut inner);
        CallCtx {
            inner: Arc::new(inner),
        }
    }

    /// Lets the router turn this call into a task now, when the tool supports tasks and the
    /// client declared the extension (see [`crate::TaskConfig`]); otherwise only yields.
    /// Asks made after this go to the task's `inputRequests` instead of `input_required`.
    pub async fn run_as_task(&self) {
        self.inner.wants_task.notify_one();
        tokio::task::yield_now().await;
    }

    /// Completes when the call asked to become a task.
    pub(crate) async fn task_wanted(&self) {
        self.inner.wants_task.notified().await
    }

    /// Whether the call is running as a task.
    pub fn is_task(&self) -> bool {
        self.inner.task.get().is_some()
    }

    /// From now on the call runs as `task`.
    pub(crate) fn attach_task(&self, task: Arc<TaskEntry>) {
        let _ = self.inner.task.set(task);
    }

    pub(crate) fn take_input_round(&self) -> Option<InputRound> {
        self.inner
            .input
            .as_ref()
            .and_then(|m| m.lock().ok().map(|mut g| std::mem::take(&mut *g)))
    }

    /// Sets the request's progress token (done by the shell when dispatching).
    pub fn with_progress_token(mut self, token: Option<RequestId>) -> CallCtx {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.progress_token = token;
        }
        self
    }

    /// Sets the downstream session the request came in (done by the shell when dispatching).
    pub fn with_session(mut self, session: Option<SessionScope>) -> CallCtx {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.session = session;
        }
        self
    }

    /// Sets the listener a request without a session came through (done by the shell when
    /// dispatching a stateless request; a session names its listener in its
    /// [`SessionScope`]).
    pub fn with_listener(mut self, listener: Option<Arc<str>>) -> CallCtx {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.listener = listener;
        }
        self
    }

    /// The listener the request came through (its URL), when the shell named it: the
    /// request's own, else its session's. `None` for in-process calls.
    pub fn listener(&self) -> Option<&str> {
        match &self.inner.listener {
            Some(l) => Some(l),
            None => self.inner.session.as_ref().and_then(SessionScope::listener),
        }
    }

    /// Sets who is calling, as the wire's authentication layer established it (done by the
    /// shell when dispatching).
    pub fn with_identity(mut self, identity: Option<Identity>) -> CallCtx {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.identity = identity;
        }
        self
    }

    /// Sets the network address the request came from (done by the shell when dispatching).
    pub fn with_client_ip(mut self, ip: Option<std::net::IpAddr>) -> CallCtx {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.client_ip = ip;
        }
        self
    }

    /// Whether a client made this call (`false` for the server's own calls made with
    /// [`CallCtx::detached`], which rate limits do not count).
    pub fn has_client(&self) -> bool {
        self.inner.peer.is_some()
    }

    /// The network address the request came from: `None` on stdio and in-process calls.
    pub fn client_ip(&self) -> Option<std::net::IpAddr> {
        self.inner.client_ip
    }

    /// Sets the request's `_meta` (done by the router when it parses the request).
    pub(crate) fn with_meta(mut self, meta: Option<Arc<RawValue>>) -> CallCtx {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.meta = meta;
        }
        self
    }

    /// Who is calling: `None` when the listener does not authenticate (stdio, or a network
    /// listener without `[auth]`).
    pub fn identity(&self) -> Option<&Identity> {
        self.inner.identity.as_ref()
    }

    /// The request's `_meta` object as the client sent it (progress token and, in
    /// 2026-07-28, the protocol envelope included), for backends that forward requests.
    pub fn request_meta(&self) -> Option<&RawValue> {
        self.inner.meta.as_deref()
    }

    /// The downstream session the request came in; `None` for a stateless request.
    pub fn session(&self) -> Option<&SessionScope> {
        self.inner.session.as_ref()
    }

    /// The progress token the client sent with this request, if any.
    pub fn progress_token(&self) -> Option<&RequestId> {
        self.inner.progress_token.as_ref()
    }

    /// Whether this call can ask its client anything (it has a connection to one, or a
    /// 2026-07-28 input round); a detached context (a catalog listing) cannot.
    pub fn can_ask(&self) -> bool {
        self.inner.peer.is_some() || self.inner.input.is_some()
    }

    /// The protocol revision the request is answered in.
    pub fn revision(&self) -> Revision {
        self.inner.revision
    }

    /// What the client supports.
    pub fn client_capabilities(&self) -> &ClientCapabilities {
        &self.inner.client_capabilities
    }

    /// The client's capabilities, shared (an input round keeps them).
    pub(crate) fn shared_capabilities(&self) -> Arc<ClientCapabilities> {
        self.inner.client_capabilities.clone()
    }

    /// Whether the client cancelled this request.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancel.is_cancelled()
    }

    /// Completes when the client cancels this request.
    pub async fn cancelled(&self) {
        self.inner.cancel.cancelled().await
    }

    /// The cancellation token of this request.
    pub fn cancellation_token(&self) -> &CancellationToken {
        &self.inner.cancel
    }

    /// Reports progress (dropped unless the client sent a progress token).
    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<String>) {
        if let Some(task) = self.inner.task.get() {
            task.progress(message);
            return;
        }
        if let Some(p) = &self.inner.peer {
            p.event(CallEvent::Progress(ProgressUpdate {
                progress,
                total,
                message,
            }));
        }
    }

    /// Sends a log message to the client (dropped below the client's level).
    pub fn log(&self, level: LoggingLevel, data: impl serde::Serialize) {
        if let Some(p) = &self.inner.peer {
            p.event(CallEvent::Log(LogEntry {
                level,
                logger: None,
                data: to_raw(&data),
            }));
        }
    }

    /// Closes the HTTP SSE connection carrying this request's messages without ending the
    /// request ("SSE polling", 2025-11-25): the client reconnects with `GET` and
    /// `Last-Event-ID` and receives the rest, the result included. Frees the connection
    /// during long waits. A no-op on other wires and once the call became a task.
    pub fn close_stream(&self) {
        if self.inner.task.get().is_some() {
            return;
        }
        if let Some(p) = &self.inner.peer {
            p.close_stream();
        }
    }

    /// Sends a log entry as it is (its logger kept) to the client; dropped below the
    /// client's level. For backends forwarding another server's logs.
    pub fn log_entry(&self, entry: LogEntry) {
        if let Some(p) = &self.inner.peer {
            p.event(CallEvent::Log(entry));
        }
    }

    /// Sends an `info` log message.
    pub fn info(&self, message: impl Into<String>) {
        self.log(LoggingLevel::Info, message.into());
    }

    /// Asks the client for an LLM completion with these exact params
    /// (`sampling/createMessage`), under a fixed `inputRequests` key in 2026-07-28 when
    /// `key` is given. [`CallCtx::sample`] builds the params for you.
    pub async fn sample_with(
        &self,
        key: Option<&str>,
        params: CreateMessageParams,
    ) -> Result<CreateMessageResult, McpError> {
        self.ask_typed(key, "sampling/createMessage", Some(to_raw(&params)))
            .await
    }

    /// Asks the user with these exact params (`elicitation/create`), under a fixed
    /// `inputRequests` key in 2026-07-28 when `key` is given. [`CallCtx::elicit`] derives
    /// the form from a Rust type instead.
    pub async fn elicit_with(
        &self,
        key: Option<&str>,
        params: ElicitParams,
    ) -> Result<ElicitResult, McpError> {
        self.ask_typed(key, "elicitation/create", Some(to_raw(&params)))
            .await
    }

    /// Asks the client for its roots (`roots/list`).
    pub async fn list_roots(&self) -> Result<ListRootsResult, McpError> {
        self.list_roots_as(None).await
    }

    /// [`CallCtx::list_roots`] under a fixed `inputRequests` key (2026-07-28).
    pub async fn list_roots_as(&self, key: Option<&str>) -> Result<ListRootsResult, McpError> {
        self.ask_typed(key, "roots/list", None).await
    }

    /// Sends any request to the client and returns its raw result.
    ///
    /// In 2026-07-28 there are no server→client requests: the first time a call asks, the
    /// ask is recorded and this returns [`McpError::InputRequired`]; propagate it with `?`
    /// and the router answers `input_required`. When the client calls again with the
    /// answers, the same ask (by key, or by order) returns the client's answer.
    pub async fn ask(&self, ask: ClientAsk) -> Result<Raw, McpError> {
        self.ask_keyed(None, ask).await.1
    }

    /// [`CallCtx::ask`] under a fixed `inputRequests` key in 2026-07-28 (`None`: by order).
    pub async fn ask_as(&self, key: Option<&str>, ask: ClientAsk) -> Result<Raw, McpError> {
        self.ask_keyed(key, ask).await.1
    }

    /// 2026-07-28: the keys the client has answered so far in this call's input rounds
    /// (`inputResponses` and the sealed `requestState`); empty in other revisions.
    pub fn answered_keys(&self) -> Vec<String> {
        self.inner
            .input
            .as_ref()
            .and_then(|m| m.lock().ok().map(|g| g.answered_keys()))
            .unwrap_or_default()
    }

    async fn ask_keyed(
        &self,
        key: Option<&str>,
        ask: ClientAsk,
    ) -> (Option<String>, Result<Raw, McpError>) {
        if let Some(task) = self.inner.task.get() {
            if let Err(e) = crate::input::check_capability(&self.inner.client_capabilities, &ask) {
                return (None, Err(e));
            }
            return (None, task.ask(key, ask).await);
        }
        if let Some(input) = &self.inner.input {
            let Ok(mut round) = input.lock() else {
                return (None, Err(McpError::Internal("input round poisoned".into())));
            };
            let (k, r) = round.ask(key, ask);
            return (Some(k), r);
        }
        let r = match &self.inner.peer {
            Some(p) => {
                let fut = p.ask(ask);
                tokio::select! {
                    r = fut => r,
                    _ = self.inner.cancel.cancelled() => Err(McpError::Cancelled),
                }
            }
            None => Err(McpError::InvalidRequest(
                "no client connection to ask".into(),
            )),
        };
        (None, r)
    }

    pub(crate) async fn ask_typed<T: DeserializeOwned>(
        &self,
        key: Option<&str>,
        method: &'static str,
        params: Option<Raw>,
    ) -> Result<T, McpError> {
        let ask = ClientAsk {
            method: method.into(),
            params,
        };
        let (used_key, raw) = self.ask_keyed(key, ask.clone()).await;
        let raw = raw?;
        match serde_json::from_str(raw.get()) {
            Ok(v) => Ok(v),
            Err(e) => match (used_key, &self.inner.input) {
                // 2026-07-28: an unusable answer is asked for again.
                (Some(k), Some(input)) => {
                    if let Ok(mut round) = input.lock() {
                        round.reask(k, ask);
                    }
                    Err(McpError::InputRequired)
                }
                _ => Err(McpError::InvalidParams(format!(
                    "client answered {method} with an invalid result: {e}"
                ))),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_calls_listener_is_its_own_else_its_sessions() {
        assert_eq!(CallCtx::detached().listener(), None);
        let session = SessionScope::new();
        session.set_listener(Arc::from("ws://127.0.0.1:1/"));
        let in_session = CallCtx::detached().with_session(Some(session));
        assert_eq!(in_session.listener(), Some("ws://127.0.0.1:1/"));
        let stateless = CallCtx::detached().with_listener(Some(Arc::from("http://h/mcp")));
        assert_eq!(stateless.listener(), Some("http://h/mcp"));
        let kept = stateless.with_cancel(CancellationToken::new());
        assert_eq!(kept.listener(), Some("http://h/mcp"), "kept by a copy");
    }
}
