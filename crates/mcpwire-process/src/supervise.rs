//! The supervisor: starts process generations, restarts them with backoff, reports crash
//! loops, swaps in reloads and retires the old generation.

use std::collections::VecDeque;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use mcpwire_model::McpError;
use mcpwire_router::CatalogEdit;

use crate::backend::{Gen, Shared, State};
use crate::conn::{Answer, Conn, Hooks, handshake};
use crate::forward::{prompt_def, resource_def, template_def};
use crate::pb::{self, envelope::Msg};
use crate::spawn::spawn;

/// Failed starts within [`CRASH_WINDOW`] that make a crash loop.
pub(crate) const CRASH_LOOP_STARTS: usize = 5;
pub(crate) const CRASH_WINDOW: Duration = Duration::from_secs(60);
pub(crate) const BACKOFF_START: Duration = Duration::from_millis(100);
pub(crate) const BACKOFF_MAX: Duration = Duration::from_secs(10);
/// How long a crash loop waits before trying again (a file change in `dev` retries at once).
pub(crate) const CRASH_LOOP_RETRY: Duration = Duration::from_secs(30);
/// How long a process gets between SIGTERM and SIGKILL.
pub(crate) const KILL_GRACE: Duration = Duration::from_secs(2);

/// Runs process generations: start, serve until exit, restart with backoff; reloads.
pub(crate) async fn supervise(shared: Arc<Shared>) {
    let mut failures: VecDeque<Instant> = VecDeque::new();
    let mut backoff = BACKOFF_START;
    let mut gen_no = 0u64;
    let mut ever_ready = false;
    loop {
        gen_no += 1;
        let started = Instant::now();
        let last_error = match start_generation(&shared, gen_no).await {
            Ok(g) => {
                ever_ready = true;
                let reason = serve_generation(&shared, g, &mut gen_no).await;
                let Some(reason) = reason else { return };
                if started.elapsed() > CRASH_WINDOW {
                    failures.clear();
                    backoff = BACKOFF_START;
                }
                reason
            }
            Err(e) if !ever_ready => {
                shared.state.send_replace(State::Failed(e));
                return;
            }
            Err(e) => e,
        };
        tracing::warn!("tool process ended: {last_error}; restarting");
        failures.push_back(Instant::now());
        failures.retain(|t| t.elapsed() < CRASH_WINDOW);
        if failures.len() >= CRASH_LOOP_STARTS {
            let reason = format!(
                "the tool process failed {} times within {}s; last: {last_error}",
                failures.len(),
                CRASH_WINDOW.as_secs()
            );
            tracing::error!("{reason}");
            shared.state.send_replace(State::Failed(reason));
            tokio::select! {
                _ = shared.shutdown.cancelled() => return,
                _ = tokio::time::sleep(CRASH_LOOP_RETRY) => {}
                _ = shared.reload.notified() => {}
            }
            failures.clear();
            backoff = BACKOFF_START;
            continue;
        }
        tokio::select! {
            _ = shared.shutdown.cancelled() => return,
            _ = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(BACKOFF_MAX);
    }
}

/// Serves one generation (and the reloads that replace it) until it ends; `None` on shutdown,
/// else why it ended.
async fn serve_generation(shared: &Arc<Shared>, mut g: Gen, gen_no: &mut u64) -> Option<String> {
    shared.activate(&g.conn).await;
    loop {
        tokio::select! {
            _ = shared.shutdown.cancelled() => {
                g.conn.close("mcpwire is shutting down");
                g.child.shutdown(KILL_GRACE).await;
                return None;
            }
            status = g.child.wait() => {
                let status = status.map(|s| s.to_string()).unwrap_or_else(|e| e.to_string());
                let reason = format!("tool process exited ({status}){}", g.child.stderr_tail());
                shared.state.send_replace(State::Starting);
                g.conn.close(&reason);
                return Some(reason);
            }
            _ = g.conn.done.cancelled() => {
                shared.state.send_replace(State::Starting);
                let status = tokio::time::timeout(Duration::from_secs(1), g.child.wait()).await;
                let tail = g.child.stderr_tail();
                g.child.shutdown(KILL_GRACE).await;
                return Some(match status {
                    Ok(Ok(s)) => format!("tool process exited ({s}){tail}"),
                    _ => "tool process connection failed".to_string(),
                });
            }
            _ = shared.reload.notified() => {
                *gen_no += 1;
                match start_generation(shared, *gen_no).await {
                    Ok(new) => {
                        let old = std::mem::replace(&mut g, new);
                        shared.activate(&g.conn).await;
                        tracing::info!(generation = *gen_no, "tool process reloaded");
                        tokio::spawn(retire(old, shared.config.reload_grace));
                    }
                    Err(e) => tracing::warn!("reload failed, keeping the running process: {e}"),
                }
            }
        }
    }
}

/// Lets a replaced generation finish its calls (bounded by `grace`), then ends it.
async fn retire(g: Gen, grace: Duration) {
    let deadline = Instant::now() + grace;
    while g.conn.in_flight() > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    g.conn
        .close("the tool process was reloaded during the call");
    g.child.shutdown(KILL_GRACE).await;
}

async fn start_generation(shared: &Arc<Shared>, gen_no: u64) -> Result<Gen, String> {
    let cfg = &shared.config;
    let deadline = cfg.handshake_timeout;
    let (mut child, stream) = spawn(&cfg.launch, &gen_no.to_string(), deadline)
        .await
        .map_err(|e| e.to_string())?;
    let (mut r, mut w) = Conn::framed(stream, cfg.max_envelope, cfg.max_raw);
    let hs = tokio::select! {
        hs = tokio::time::timeout(deadline, handshake(&mut r, &mut w, &shared.ids)) => hs,
        _ = child.wait() => Ok(Err("tool process exited during the handshake".into())),
    };
    let hs = match hs {
        Ok(Ok(hs)) => hs,
        Ok(Err(e)) => {
            let tail = child.stderr_tail();
            child.shutdown(KILL_GRACE).await;
            return Err(format!("{e}{tail}"));
        }
        Err(_) => {
            child.shutdown(KILL_GRACE).await;
            return Err(format!(
                "tool process did not complete its handshake within {deadline:?}"
            ));
        }
    };
    let hooks: Weak<dyn Hooks> = Arc::downgrade(shared) as Weak<Shared>;
    let conn = Conn::start(gen_no, (r, w), hs, shared.ids.clone(), hooks);
    Ok(Gen { conn, child })
}

impl Shared {
    /// Fetches the rest of a new generation's catalog, publishes it and makes it current.
    pub(crate) async fn activate(self: &Arc<Self>, conn: &Arc<Conn>) {
        let t = self.config.handshake_timeout;
        let ask = |m: Msg| {
            let conn = conn.clone();
            async move {
                let pc = conn.request(|_| m, None, false)?;
                tokio::time::timeout(t, pc.wait())
                    .await
                    .map_err(|_| McpError::Internal("tool process did not answer in time".into()))
            }
        };
        let resources = match ask(Msg::ListResourcesRequest(pb::ListResourcesRequest {})).await {
            Ok(Answer::Env(Msg::ResourceListResponse(l))) => l.resources,
            other => log_fetch("resources", other),
        };
        let templates = match ask(Msg::ListResourceTemplatesRequest(
            pb::ListResourceTemplatesRequest {},
        ))
        .await
        {
            Ok(Answer::Env(Msg::ResourceTemplateListResponse(l))) => l.templates,
            other => log_fetch("resource templates", other),
        };
        let prompts = match ask(Msg::ListPromptsRequest(pb::ListPromptsRequest {})).await {
            Ok(Answer::Env(Msg::PromptListResponse(l))) => l.prompts,
            other => log_fetch("prompts", other),
        };
        let weak = Arc::downgrade(self);
        let edit = CatalogEdit {
            tools: Some(self.tool_defs(conn)),
            resources: Some(
                resources
                    .into_iter()
                    .map(|r| resource_def(&weak, r))
                    .collect(),
            ),
            templates: Some(
                templates
                    .into_iter()
                    .filter_map(|t| template_def(&weak, t))
                    .collect(),
            ),
            prompts: Some(prompts.into_iter().map(|p| prompt_def(&weak, p)).collect()),
        };
        self.server.replace_catalog(edit);
        self.state.send_replace(State::Ready(conn.clone()));
    }
}

fn log_fetch<T>(what: &str, got: Result<Answer, McpError>) -> Vec<T> {
    match got {
        Ok(Answer::Failed(r)) => tracing::warn!("listing the tool process's {what} failed: {r}"),
        Err(e) => tracing::warn!("listing the tool process's {what} failed: {e}"),
        Ok(_) => tracing::warn!("the tool process answered the {what} listing with something else"),
    }
    Vec::new()
}
