//! Answering requests from a catalog snapshot: lists from pages, everything else sent to
//! the one member that owns it, names, URIs and task ids mapped on the way in and out.
//! Arguments stay raw and the caller's `CallCtx` goes through unchanged, so progress,
//! cancellation and asks reach the downstream client.

use std::sync::{Arc, RwLock};

use mcpwire_model::types::{CompleteParams, CompletionRef};
use mcpwire_model::{McpError, Raw, Reply, to_raw};
use mcpwire_router::{
    BackendRequest, BoxFuture, CallCtx, ForwardedCall, RelayCaller, RelayDecision,
};
use serde_json::{Map, Value};

use crate::catalog::{Catalog, CatalogMember, Entry, RelayedAs, Scope};
use crate::listing::Kind;
use crate::pages;
use crate::subset::Sight;
use crate::tool_index::{self, QUERY_LIST_LIMIT, ToolIndex, tool_items, tools_page};

/// Separates the member name from the member's own id in an exposed task id. Member names
/// never contain it, so the first one splits.
const TASK_SEPARATOR: char = '.';

/// Names the member answering on the current request's span (`backend`, see
/// `mcpwire::observe::REQUEST_TARGET`); a no-op without one.
fn record_member(name: &str) {
    tracing::Span::current().record("backend", name);
}

fn ready<T: Send + 'static>(v: T) -> BoxFuture<'static, T> {
    Box::pin(std::future::ready(v))
}

/// Answers `req` from the catalog as `sight` shows it; `tools/list` with a `query`
/// (SEP-1821) searches `index`.
pub(crate) fn answer(
    sight: &Sight,
    index: &Arc<RwLock<ToolIndex>>,
    ctx: CallCtx,
    req: BackendRequest,
) -> BoxFuture<'static, Result<Reply, McpError>> {
    let catalog = sight.catalog.clone();
    let scope = sight.scope();
    let list = |kind: Kind, cursor: Option<String>| {
        if let Some(refusal) = &catalog.refusal {
            return ready(Err(McpError::Unavailable(refusal.clone())));
        }
        let pages = match sight.pages() {
            Some(p) => &p[kind.index()],
            None => &catalog.kind(kind).pages,
        };
        ready(pages::page(pages, cursor.as_deref()).map(Reply::Complete))
    };
    match req {
        BackendRequest::ListTools {
            query: Some(query), ..
        } => {
            if let Some(refusal) = &catalog.refusal {
                return ready(Err(McpError::Unavailable(refusal.clone())));
            }
            let search = tool_index::search(index, sight.clone(), query, QUERY_LIST_LIMIT);
            Box::pin(async move {
                let (sight, found) = search.await;
                Ok(Reply::Complete(tools_page(&tool_items(
                    &sight.catalog,
                    &found,
                ))))
            })
        }
        BackendRequest::ListTools { cursor, .. } => list(Kind::Tools, cursor),
        BackendRequest::ListPrompts { cursor } => list(Kind::Prompts, cursor),
        BackendRequest::ListResources { cursor } => list(Kind::Resources, cursor),
        BackendRequest::ListResourceTemplates { cursor } => list(Kind::Templates, cursor),
        BackendRequest::CallTool { name, arguments } => {
            let Some((member, original)) = named(&catalog, scope, Kind::Tools, &name) else {
                return ready(Err(McpError::ToolNotFound(name)));
            };
            let m = &catalog.members[member];
            record_member(&m.name);
            let tasks = m.offers_tasks.then(|| m.name.clone());
            let uris = m.renamed_uris.then(|| catalog.clone());
            let req = BackendRequest::CallTool {
                name: original.clone(),
                arguments,
            };
            let fut = m.backend.call(ctx, req);
            Box::pin(async move {
                match fut.await {
                    Ok(reply) => {
                        let reply = match tasks {
                            Some(member) => expose_task_ids(reply, &member),
                            None => reply,
                        };
                        Ok(match uris {
                            Some(catalog) => expose_result_uris(reply, &catalog, member),
                            None => reply,
                        })
                    }
                    Err(e) => Err(exposed_error(e, &original, &name)),
                }
            })
        }
        BackendRequest::GetPrompt { name, arguments } => {
            let Some((member, original)) = named(&catalog, scope, Kind::Prompts, &name) else {
                return ready(Err(McpError::PromptNotFound(name)));
            };
            let req = BackendRequest::GetPrompt {
                name: original.clone(),
                arguments,
            };
            forward(&catalog, member, ctx, req, original, name)
        }
        BackendRequest::ReadResource { uri } => {
            let Some((member, original)) = catalog.route_uri(&uri, scope) else {
                return ready(Err(McpError::ResourceNotFound(uri)));
            };
            let req = BackendRequest::ReadResource {
                uri: original.clone(),
            };
            record_member(&catalog.members[member].name);
            let fut = catalog.members[member].backend.call(ctx, req);
            Box::pin(async move {
                match fut.await {
                    Ok(Reply::Complete(raw)) if original != uri => {
                        Ok(Reply::Complete(expose_contents(raw, &original, &uri)))
                    }
                    Ok(reply) => Ok(reply),
                    Err(e) => Err(exposed_error(e, &original, &uri)),
                }
            })
        }
        BackendRequest::Subscribe { uri } => subscription(&catalog, scope, ctx, uri, true),
        BackendRequest::Unsubscribe { uri } => subscription(&catalog, scope, ctx, uri, false),
        BackendRequest::Complete(p) => complete(&catalog, scope, ctx, p),
        BackendRequest::Other { method, params } => {
            if method.as_str().starts_with("tasks/") {
                return task_request(&catalog, scope, ctx, method, params);
            }
            // Nothing says which member a method without a name or URI is for: only a
            // federation of one can pass it on without fanning out.
            match catalog.members.as_slice() {
                [only] if only.listed && scope.sees_member(0) => only
                    .backend
                    .call(ctx, BackendRequest::Other { method, params }),
                _ => ready(Err(McpError::MethodNotFound(method.to_string()))),
            }
        }
        _ => ready(Err(McpError::MethodNotFound(
            "a request this federation does not know".into(),
        ))),
    }
}

/// A `tools/call` sent on with its params as they came (`Backend::forward_tool_call`):
/// only for a tool the caller sees (`sight`), to a member that serves it under the same
/// name and whose task ids and URIs need no mapping, so its answer is what [`answer`] would
/// give; the call back otherwise.
pub(crate) fn forward_tool_call(
    sight: &Sight,
    call: ForwardedCall,
) -> Result<BoxFuture<'static, Result<Reply, McpError>>, ForwardedCall> {
    let Some(m) = plain_member(sight, call.name()) else {
        return Err(call);
    };
    let fut = m.backend.forward_tool_call(call)?;
    record_member(&m.name);
    Ok(fut)
}

/// Where a `tools/call` of `name` by `caller` may go as a raw frame
/// (`Backend::relay_route`): to the member serving it whose task ids and URIs need no
/// mapping, when the caller sees it and that member offers a route — under the member's
/// own name when the tool is exposed renamed or prefixed (written into the frame in place
/// of the exposed one: the answer names no tool, so it comes back as it came).
/// `catalog` as the caller sees it (`scope`), borrowed: nothing shared by every call is
/// cloned.
pub(crate) fn relay_route(
    catalog: &Catalog,
    scope: &dyn Scope,
    name: &str,
    caller: &RelayCaller<'_>,
) -> RelayDecision {
    let Some((m, e)) = member_entry(catalog, scope, name) else {
        return RelayDecision::General;
    };
    let sent_as = match &e.relayed_as {
        RelayedAs::Exposed => None,
        RelayedAs::Original(original) => Some(original),
        RelayedAs::Never => return RelayDecision::General,
    };
    match m.backend.relay_route(&e.original, caller) {
        RelayDecision::Relay(route) => {
            let route = route.through(&m.name_shared);
            RelayDecision::Relay(match sent_as {
                Some(original) => route.sent_as(original),
                None => route,
            })
        }
        other => other,
    }
}

/// The member serving tool `name`, when the caller sees it and the member serves it under
/// that very name with nothing to map in its answers (task ids, URIs): a call of it may be
/// passed on as it came.
fn plain_member<'a>(sight: &'a Sight, name: &str) -> Option<&'a CatalogMember> {
    member_entry(&sight.catalog, sight.scope(), name)
        .filter(|(_, e)| e.original == name)
        .map(|(m, _)| m)
}

/// The member serving tool `name` and its entry, when the caller sees it and the member's
/// answers need nothing mapped (task ids, URIs).
fn member_entry<'a>(
    catalog: &'a Catalog,
    scope: &dyn Scope,
    name: &str,
) -> Option<(&'a CatalogMember, &'a Entry)> {
    let (i, e) = catalog.kind(Kind::Tools).get(name)?;
    let m = &catalog.members[e.member];
    let plain = !m.offers_tasks && !m.renamed_uris;
    (plain && scope.sees(Kind::Tools, i)).then_some((m, e))
}

/// `(member, original name)` of the visible tool or prompt exposed as `name`.
fn named(catalog: &Catalog, scope: &dyn Scope, kind: Kind, name: &str) -> Option<(usize, String)> {
    let (i, e) = catalog.kind(kind).get(name)?;
    scope.sees(kind, i).then(|| (e.member, e.original.clone()))
}

/// Sends `req` to `member`, naming the exposed item in errors.
fn forward(
    catalog: &Catalog,
    member: usize,
    ctx: CallCtx,
    req: BackendRequest,
    original: String,
    exposed: String,
) -> BoxFuture<'static, Result<Reply, McpError>> {
    record_member(&catalog.members[member].name);
    let fut = catalog.members[member].backend.call(ctx, req);
    Box::pin(async move { fut.await.map_err(|e| exposed_error(e, &original, &exposed)) })
}

/// `resources/subscribe` (or `unsubscribe`) for the member owning `uri`.
fn subscription(
    catalog: &Catalog,
    scope: &dyn Scope,
    ctx: CallCtx,
    uri: String,
    subscribe: bool,
) -> BoxFuture<'static, Result<Reply, McpError>> {
    let Some((member, original)) = catalog.route_uri(&uri, scope) else {
        return ready(Err(McpError::ResourceNotFound(uri)));
    };
    let req = if subscribe {
        BackendRequest::Subscribe {
            uri: original.clone(),
        }
    } else {
        BackendRequest::Unsubscribe {
            uri: original.clone(),
        }
    };
    forward(catalog, member, ctx, req, original, uri)
}

/// `completion/complete`, routed by the prompt or template (or resource) it refers to.
fn complete(
    catalog: &Catalog,
    scope: &dyn Scope,
    ctx: CallCtx,
    mut p: CompleteParams,
) -> BoxFuture<'static, Result<Reply, McpError>> {
    let (member, original, exposed) = match &mut p.reference {
        CompletionRef::Prompt { name } => {
            let Some((member, original)) = named(catalog, scope, Kind::Prompts, name) else {
                return ready(Err(McpError::InvalidParams(format!(
                    "unknown prompt {name}"
                ))));
            };
            let exposed = std::mem::replace(name, original.clone());
            (member, original, exposed)
        }
        CompletionRef::Resource { uri } => {
            let templates = catalog.kind(Kind::Templates);
            let target = match templates.get(uri) {
                Some((i, e)) if scope.sees(Kind::Templates, i) => {
                    Some((e.member, e.original.clone()))
                }
                _ => catalog.route_uri(uri, scope),
            };
            let Some((member, original)) = target else {
                return ready(Err(McpError::InvalidParams(format!(
                    "unknown resource template {uri}"
                ))));
            };
            let exposed = std::mem::replace(uri, original.clone());
            (member, original, exposed)
        }
    };
    forward(
        catalog,
        member,
        ctx,
        BackendRequest::Complete(p),
        original,
        exposed,
    )
}

/// `tasks/*` with a `taskId`: to the member that created the task, under its own id.
fn task_request(
    catalog: &Catalog,
    scope: &dyn Scope,
    ctx: CallCtx,
    method: mcpwire_model::Method,
    params: Option<Raw>,
) -> BoxFuture<'static, Result<Reply, McpError>> {
    let mut map: Map<String, Value> = match params.as_deref().map(|p| serde_json::from_str(p.get()))
    {
        Some(Ok(m)) => m,
        None => Map::new(),
        Some(Err(e)) => return ready(Err(McpError::InvalidParams(e.to_string()))),
    };
    let Some(Value::String(id)) = map.get("taskId") else {
        return ready(Err(McpError::MethodNotFound(method.to_string())));
    };
    let target = id.split_once(TASK_SEPARATOR).and_then(|(member, own)| {
        let m = catalog.member_named(member)?;
        (catalog.members[m].listed && scope.sees_member(m)).then(|| (m, own.to_owned()))
    });
    let Some((member, own)) = target else {
        return ready(Err(McpError::InvalidParams(format!("unknown task {id}"))));
    };
    map.insert("taskId".into(), Value::String(own));
    let name = catalog.members[member].name.clone();
    let req = BackendRequest::Other {
        method,
        params: Some(to_raw(&map)),
    };
    let fut = catalog.members[member].backend.call(ctx, req);
    Box::pin(async move { fut.await.map(|r| expose_task_ids(r, &name)) })
}

/// The exposed form of member `member`'s task id `own`.
pub(crate) fn exposed_task_id(member: &str, own: &str) -> String {
    format!("{member}{TASK_SEPARATOR}{own}")
}

/// `reply` with every task id (`taskId`, `task.taskId`, `tasks[].taskId`) in exposed
/// form. Results without the key are passed through unparsed.
fn expose_task_ids(reply: Reply, member: &str) -> Reply {
    let Reply::Complete(raw) = reply else {
        return reply;
    };
    if !raw.get().contains("\"taskId\"") {
        return Reply::Complete(raw);
    }
    let Ok(mut v) = serde_json::from_str::<Value>(raw.get()) else {
        return Reply::Complete(raw);
    };
    let fix = |o: &mut Value| {
        if let Some(Value::String(id)) = o.get_mut("taskId") {
            *id = exposed_task_id(member, id);
        }
    };
    fix(&mut v);
    if let Some(task) = v.get_mut("task") {
        fix(task);
    }
    if let Some(Value::Array(tasks)) = v.get_mut("tasks") {
        tasks.iter_mut().for_each(fix);
    }
    Reply::Complete(to_raw(&v))
}

/// A `tools/call` result of `member` with the URIs of its resource links
/// (`{"type": "resource_link", "uri"}`) and embedded resources (`{"type": "resource",
/// "resource": {"uri"}}`) shown as the catalog exposes them.
fn expose_result_uris(reply: Reply, catalog: &Catalog, member: usize) -> Reply {
    let Reply::Complete(raw) = reply else {
        return reply;
    };
    if !raw.get().contains("\"uri\"") {
        return Reply::Complete(raw);
    }
    let Ok(mut v) = serde_json::from_str::<Value>(raw.get()) else {
        return Reply::Complete(raw);
    };
    let mut changed = false;
    if let Some(Value::Array(content)) = v.get_mut("content") {
        for c in content {
            let slot = match c.get("type").and_then(Value::as_str) {
                Some("resource_link") => c.get_mut("uri"),
                Some("resource") => c.get_mut("resource").and_then(|r| r.get_mut("uri")),
                _ => None,
            };
            if let Some(slot) = slot
                && let Some(original) = slot.as_str()
                && let Some(exposed) = catalog.expose_uri(member, original)
                && exposed != original
            {
                *slot = Value::String(exposed);
                changed = true;
            }
        }
    }
    Reply::Complete(if changed { to_raw(&v) } else { raw })
}

/// A `resources/read` result with `contents[].uri` equal to `original` shown as `exposed`.
fn expose_contents(raw: Raw, original: &str, exposed: &str) -> Raw {
    let Ok(mut v) = serde_json::from_str::<Value>(raw.get()) else {
        return raw;
    };
    if let Some(Value::Array(contents)) = v.get_mut("contents") {
        for c in contents {
            if let Some(uri) = c.get_mut("uri")
                && uri.as_str() == Some(original)
            {
                *uri = Value::from(exposed);
            }
        }
    }
    to_raw(&v)
}

/// `e` naming the exposed item instead of the member's own name for it.
fn exposed_error(e: McpError, original: &str, exposed: &str) -> McpError {
    if original == exposed {
        return e;
    }
    let fix = |s: String| {
        if s == original { exposed.to_owned() } else { s }
    };
    match e {
        McpError::ToolNotFound(n) => McpError::ToolNotFound(fix(n)),
        McpError::PromptNotFound(n) => McpError::PromptNotFound(fix(n)),
        McpError::ResourceNotFound(u) => McpError::ResourceNotFound(fix(u)),
        McpError::InvalidToolParams { tool, message } => McpError::InvalidToolParams {
            tool: fix(tool),
            message,
        },
        McpError::ToolFailed { tool, message } => McpError::ToolFailed {
            tool: fix(tool),
            // A message naming the tool first, in backquotes, names the exposed one.
            message: match message.strip_prefix(&format!("`{original}`")) {
                Some(rest) => format!("`{exposed}`{rest}"),
                None => message,
            },
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_ids_are_exposed_under_the_member() {
        let raw = to_raw(
            &serde_json::json!({"resultType": "task", "taskId": "abc", "status": "working"}),
        );
        let Reply::Complete(r) = expose_task_ids(Reply::Complete(raw), "fs") else {
            panic!()
        };
        let v: Value = serde_json::from_str(r.get()).unwrap();
        assert_eq!(v["taskId"], "fs.abc");
        let raw = to_raw(&serde_json::json!({"content": []}));
        let Reply::Complete(r) = expose_task_ids(Reply::Complete(raw), "fs") else {
            panic!()
        };
        assert_eq!(r.get(), r#"{"content":[]}"#);
    }

    #[test]
    fn errors_name_the_exposed_item() {
        let e = exposed_error(McpError::ToolNotFound("read".into()), "read", "fs_read");
        assert_eq!(e, McpError::ToolNotFound("fs_read".into()));
        let e = exposed_error(
            McpError::ToolFailed {
                tool: "read".into(),
                message: "boom".into(),
            },
            "read",
            "fs_read",
        );
        assert!(matches!(e, McpError::ToolFailed { tool, .. } if tool == "fs_read"));
    }
}
