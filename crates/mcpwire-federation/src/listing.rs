//! Listing one member: every page of the lists it offers, bounded in items, pages and time.

use std::sync::Arc;
use std::time::Duration;

use mcpwire_model::types::{ClientCapabilities, ServerCapabilities};
use mcpwire_model::{McpError, Reply, Revision};
use mcpwire_router::{Backend, BackendRequest, CallCtx};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

/// One listed item (a tool, prompt, resource or template) as the member sent it: fields
/// mcpwire does not know survive untouched.
pub(crate) type Item = Map<String, Value>;

/// Most pages read from one list of one member (a member whose cursor never ends).
const MAX_PAGES: usize = 1000;

/// The four lists of a catalog.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    Tools,
    Prompts,
    Resources,
    Templates,
}

impl Kind {
    pub(crate) const ALL: [Kind; 4] =
        [Kind::Tools, Kind::Prompts, Kind::Resources, Kind::Templates];

    /// Position in per-kind arrays.
    pub(crate) fn index(self) -> usize {
        self as usize
    }

    /// The result field holding the list.
    pub(crate) fn field(self) -> &'static str {
        match self {
            Kind::Tools => "tools",
            Kind::Prompts => "prompts",
            Kind::Resources => "resources",
            Kind::Templates => "resourceTemplates",
        }
    }

    /// The item field that identifies it.
    pub(crate) fn key(self) -> &'static str {
        match self {
            Kind::Tools | Kind::Prompts => "name",
            Kind::Resources => "uri",
            Kind::Templates => "uriTemplate",
        }
    }

    /// What people call one item.
    pub(crate) fn noun(self) -> &'static str {
        match self {
            Kind::Tools => "tool",
            Kind::Prompts => "prompt",
            Kind::Resources => "resource",
            Kind::Templates => "resource template",
        }
    }

    fn request(self, cursor: Option<String>) -> BackendRequest {
        match self {
            Kind::Tools => BackendRequest::ListTools {
                cursor,
                query: None,
            },
            Kind::Prompts => BackendRequest::ListPrompts { cursor },
            Kind::Resources => BackendRequest::ListResources { cursor },
            Kind::Templates => BackendRequest::ListResourceTemplates { cursor },
        }
    }

    /// The lists a backend with `caps` offers.
    pub(crate) fn offered(caps: &ServerCapabilities) -> Vec<Kind> {
        let mut kinds = Vec::new();
        if caps.tools.is_some() {
            kinds.push(Kind::Tools);
        }
        if caps.prompts.is_some() {
            kinds.push(Kind::Prompts);
        }
        if caps.resources.is_some() {
            kinds.extend([Kind::Resources, Kind::Templates]);
        }
        kinds
    }
}

/// What a member lists, per kind (empty for kinds it does not offer).
#[derive(Debug, Clone, Default)]
pub(crate) struct Listing {
    pub lists: [Vec<Item>; 4],
}

impl Listing {
    /// The items of `kind`.
    pub(crate) fn of(&self, kind: Kind) -> &[Item] {
        &self.lists[kind.index()]
    }
}

/// Bounds on listing one member.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ListLimits {
    pub timeout: Duration,
    pub max_items: usize,
}

/// Lists `kinds` of `backend` (concurrently), each to its last page. A kind the member
/// answers "method not found" for is empty; any other failure, a timeout or more than
/// `max_items` items fails the whole listing with a reason for people.
pub(crate) async fn list(
    backend: &Arc<dyn Backend>,
    kinds: &[Kind],
    limits: ListLimits,
) -> Result<Vec<(Kind, Vec<Item>)>, String> {
    let cancel = CancellationToken::new();
    let ctx = CallCtx::new(
        Revision::LATEST_STATEFUL,
        Arc::new(ClientCapabilities::default()),
        cancel.clone(),
        None,
    );
    let ctx = &ctx;
    let all = futures::future::try_join_all(kinds.iter().map(|&k| async move {
        list_kind(backend, ctx, k, limits.max_items)
            .await
            .map(|l| (k, l))
    }));
    let result = tokio::time::timeout(limits.timeout, all).await;
    cancel.cancel();
    match result {
        Ok(r) => r,
        Err(_) => Err(format!(
            "listing did not finish within {:?}",
            limits.timeout
        )),
    }
}

async fn list_kind(
    backend: &Arc<dyn Backend>,
    ctx: &CallCtx,
    kind: Kind,
    max_items: usize,
) -> Result<Vec<Item>, String> {
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let reply = backend
            .call(ctx.clone(), kind.request(cursor.clone()))
            .await;
        let raw = match reply {
            Ok(Reply::Complete(raw)) => raw,
            Ok(Reply::InputRequired(_)) => {
                return Err(format!("{} asked for input", kind.field()));
            }
            Err(McpError::MethodNotFound(_)) => return Ok(items),
            Err(e) => return Err(format!("{}: {e}", kind.field())),
        };
        let mut page: Map<String, Value> = serde_json::from_str(raw.get())
            .map_err(|e| format!("{}: not a list result: {e}", kind.field()))?;
        let list = match page.remove(kind.field()) {
            Some(Value::Array(list)) => list,
            None | Some(Value::Null) => Vec::new(),
            Some(_) => return Err(format!("{}: not a list", kind.field())),
        };
        for item in list {
            match item {
                Value::Object(o) if o.get(kind.key()).is_some_and(Value::is_string) => {
                    items.push(o)
                }
                other => tracing::warn!(
                    "skipping a {} without a string {:?}: {}",
                    kind.noun(),
                    kind.key(),
                    truncated(&other.to_string())
                ),
            }
        }
        if items.len() > max_items {
            return Err(format!("lists more than {max_items} {}s", kind.noun()));
        }
        let next = match page.remove("nextCursor") {
            Some(Value::String(c)) => Some(c),
            _ => None,
        };
        if next.is_none() {
            return Ok(items);
        }
        if next == cursor {
            return Err(format!("{}: the cursor does not advance", kind.field()));
        }
        cursor = next;
    }
    Err(format!("{}: more than {MAX_PAGES} pages", kind.field()))
}

/// At most 200 bytes of `s`, for logs.
fn truncated(s: &str) -> &str {
    let mut end = s.len().min(200);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}
