//! The console's JSON API: login, session, backends, catalog, tool calls, CSP reports.

use axum::body::{Body, Bytes};
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::asks::PageLink;
use super::session::Session;
use super::{ConsoleState, EVENTS_BUFFERED, MAX_VIOLATIONS};

/// The session cookie's name.
const COOKIE: &str = "mcpwire_console";
/// The Content-Security-Policy of every answer.
pub(super) const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; \
     img-src 'self'; connect-src 'self'; object-src 'none'; frame-ancestors 'none'; \
     base-uri 'none'; form-action 'self'";
/// Largest request body read.
const MAX_BODY: usize = 1 << 20;

/// `resp` with the console's security headers.
pub(super) fn secured(mut resp: Response) -> Response {
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

fn answer(status: StatusCode, body: Value) -> Response {
    secured(
        (
            status,
            [(header::CONTENT_TYPE, "application/json")],
            body.to_string(),
        )
            .into_response(),
    )
}

/// Why a request is refused: its status and a message.
type Refusal = (StatusCode, &'static str);

fn refuse(status: StatusCode, why: &str) -> Response {
    answer(status, json!({ "error": why }))
}

/// The session cookie's token in `headers`.
fn cookie_token(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|c| c.trim().strip_prefix(COOKIE)?.strip_prefix('='))
}

/// The caller's session, or the answer refusing it. `post`: the CSRF token must match.
fn authorized(st: &ConsoleState, headers: &HeaderMap, post: bool) -> Result<Session, Refusal> {
    let unauthorized = || (StatusCode::UNAUTHORIZED, "log in first");
    let token = cookie_token(headers).ok_or_else(unauthorized)?;
    let session = st
        .sessions
        .lock()
        .map_err(|_| (StatusCode::INTERNAL_SERVER_ERROR, "sessions unavailable"))?
        .get(token)
        .cloned()
        .ok_or_else(unauthorized)?;
    if post {
        let sent = headers
            .get("x-csrf-token")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        if !csrf_matches(sent, &session.csrf) {
            return Err((StatusCode::FORBIDDEN, "missing or wrong CSRF token"));
        }
    }
    Ok(session)
}

/// Compares in time independent of where the strings differ.
pub(super) fn csrf_matches(sent: &str, expected: &str) -> bool {
    sent.len() == expected.len()
        && sent
            .bytes()
            .zip(expected.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

/// An action's POST: its session (logged in, CSRF token checked) and its JSON body.
fn authorized_post(
    st: &ConsoleState,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<(Session, Value), Refusal> {
    let session = authorized(st, headers, true)?;
    Ok((session, json_body(headers, body)?))
}

/// A JSON object body (`application/json` only: a cross-site form cannot send one
/// without the browser asking first).
fn json_body(headers: &HeaderMap, body: &Bytes) -> Result<Value, Refusal> {
    let is_json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !is_json {
        return Err((
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "expected application/json",
        ));
    }
    if body.len() > MAX_BODY {
        return Err((StatusCode::PAYLOAD_TOO_LARGE, "body too large"));
    }
    serde_json::from_slice(body).map_err(|_| (StatusCode::BAD_REQUEST, "invalid JSON"))
}

pub(super) async fn login(
    State(st): State<ConsoleState>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let body = match json_body(&headers, &body) {
        Ok(b) => b,
        Err((status, why)) => return refuse(status, why),
    };
    let secret = body.get("secret").and_then(Value::as_str).unwrap_or("");
    let Some(admin) = st.source.login(secret).await else {
        tracing::warn!("console: a login with a wrong credential");
        return refuse(StatusCode::UNAUTHORIZED, "not an admin credential");
    };
    let opened = match st.sessions.lock() {
        Ok(mut s) => s.open(admin),
        Err(_) => None,
    };
    let Some((token, session)) = opened else {
        return refuse(StatusCode::SERVICE_UNAVAILABLE, "no session available");
    };
    tracing::info!(admin = %session.admin, "console: logged in");
    let mut resp = answer(
        StatusCode::OK,
        json!({ "admin": session.admin, "csrf": session.csrf }),
    );
    let cookie = format!("{COOKIE}={token}; Path=/ui; HttpOnly; SameSite=Strict");
    if let Ok(v) = HeaderValue::from_str(&cookie) {
        resp.headers_mut().insert(header::SET_COOKIE, v);
    }
    resp
}

pub(super) async fn logout(State(st): State<ConsoleState>, headers: HeaderMap) -> Response {
    if let Err((status, why)) = authorized(&st, &headers, true) {
        return refuse(status, why);
    }
    if let (Some(token), Ok(mut s)) = (cookie_token(&headers), st.sessions.lock()) {
        s.close(token);
    }
    let mut resp = answer(StatusCode::OK, json!({}));
    resp.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_static(
            "mcpwire_console=; Path=/ui; HttpOnly; SameSite=Strict; Max-Age=0",
        ),
    );
    resp
}

pub(super) async fn session(State(st): State<ConsoleState>, headers: HeaderMap) -> Response {
    match authorized(&st, &headers, false) {
        Ok(s) => answer(StatusCode::OK, json!({ "admin": s.admin, "csrf": s.csrf })),
        Err((status, why)) => refuse(status, why),
    }
}

pub(super) async fn backends(State(st): State<ConsoleState>, headers: HeaderMap) -> Response {
    if let Err((status, why)) = authorized(&st, &headers, false) {
        return refuse(status, why);
    }
    let facts = st.source.backend_facts();
    let figures = st.calls.figures();
    let backends: Vec<Value> = (st.probe)()
        .into_iter()
        .map(|b| {
            let mut v = json!(b);
            if let Value::Object(o) = &mut v {
                if let Some(Value::Object(f)) = facts.get(&b.name) {
                    o.extend(f.clone());
                }
                if let Some(f) = figures.get(&b.name) {
                    o.insert("figures".into(), json!(f));
                }
            }
            v
        })
        .collect();
    answer(StatusCode::OK, json!({ "backends": backends }))
}

pub(super) async fn config(State(st): State<ConsoleState>, headers: HeaderMap) -> Response {
    if let Err((status, why)) = authorized(&st, &headers, false) {
        return refuse(status, why);
    }
    answer(StatusCode::OK, st.source.config())
}

pub(super) async fn callers(State(st): State<ConsoleState>, headers: HeaderMap) -> Response {
    if let Err((status, why)) = authorized(&st, &headers, false) {
        return refuse(status, why);
    }
    answer(StatusCode::OK, json!({ "callers": st.source.callers() }))
}

/// `as=CALLER` from the query string (percent-decoded).
fn caller_of(query: Option<&str>) -> String {
    param(query, "as").unwrap_or_else(|| "anonymous".into())
}

/// Parameter `key` of the query string (percent-decoded).
fn param(query: Option<&str>, key: &str) -> Option<String> {
    query
        .unwrap_or("")
        .split('&')
        .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
        .map(percent_decode)
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                let hex = std::str::from_utf8(&b[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(v) => {
                        out.push(v);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

pub(super) async fn catalog(
    State(st): State<ConsoleState>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Response {
    if let Err((status, why)) = authorized(&st, &headers, false) {
        return refuse(status, why);
    }
    let caller = caller_of(query.as_deref());
    match st.source.catalog(&caller).await {
        Ok(v) => answer(StatusCode::OK, v),
        Err(e) => refuse(StatusCode::BAD_REQUEST, &e),
    }
}

pub(super) async fn call(
    State(st): State<ConsoleState>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let (session, body) = match authorized_post(&st, &headers, &body) {
        Ok(p) => p,
        Err((status, why)) => return refuse(status, why),
    };
    let caller = body
        .get("as")
        .and_then(Value::as_str)
        .unwrap_or("anonymous");
    let Some(name) = body.get("name").and_then(Value::as_str) else {
        return refuse(StatusCode::BAD_REQUEST, "name missing");
    };
    tracing::info!(admin = %session.admin, %caller, tool = %name, "console: tool call");
    let arguments = body.get("arguments").cloned();
    let (tx, rx) = tokio::sync::mpsc::channel(EVENTS_BUFFERED);
    let page = PageLink::new(tx.clone(), st.asks.clone());
    let running = st
        .source
        .call_tool(caller, name.to_owned(), arguments, page);
    tokio::spawn(async move {
        let last = match running.await {
            Ok(v) => json!({ "kind": "result", "result": v }),
            Err(e) => json!({ "kind": "error", "error": e }),
        };
        let _ = tx.send(last).await;
    });
    secured(
        (
            [
                (header::CONTENT_TYPE, "text/event-stream"),
                (header::CACHE_CONTROL, "no-cache"),
            ],
            Body::from_stream(events_of(rx)),
        )
            .into_response(),
    )
}

/// The call's events as server-sent events, ending with its result or error.
fn events_of(
    rx: tokio::sync::mpsc::Receiver<Value>,
) -> impl futures::Stream<Item = Result<Bytes, std::convert::Infallible>> {
    futures::stream::unfold((rx, false), |(mut rx, done)| async move {
        if done {
            return None;
        }
        let event = rx.recv().await?;
        let last = matches!(
            event.get("kind").and_then(Value::as_str),
            Some("result" | "error")
        );
        let frame = Bytes::from(format!("data: {event}\n\n"));
        Some((Ok(frame), (rx, last)))
    })
}

/// The page's answer to a tool's question: `{id, result}` or `{id, error}`.
pub(super) async fn answer_ask(
    State(st): State<ConsoleState>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let body = match authorized_post(&st, &headers, &body) {
        Ok((_, body)) => body,
        Err((status, why)) => return refuse(status, why),
    };
    let Some(id) = body.get("id").and_then(Value::as_u64) else {
        return refuse(StatusCode::BAD_REQUEST, "id missing");
    };
    let given = match (body.get("result"), body.get("error")) {
        (Some(r @ Value::Object(_)), _) => Ok(r.clone()),
        (_, Some(Value::String(e))) => Err(e.clone()),
        _ => return refuse(StatusCode::BAD_REQUEST, "a result object or an error"),
    };
    if st.asks.answer(id, given) {
        answer(StatusCode::OK, json!({}))
    } else {
        refuse(StatusCode::NOT_FOUND, "no such question waits")
    }
}

pub(super) async fn calls(State(st): State<ConsoleState>, headers: HeaderMap) -> Response {
    if let Err((status, why)) = authorized(&st, &headers, false) {
        return refuse(status, why);
    }
    answer(StatusCode::OK, json!({ "calls": st.calls.read() }))
}

/// One backend's calls second by second over the last minute (`?backend=NAME`), for its
/// charts: at most [`super::stats::SLOTS`] points, none when its calls were not recorded.
pub(super) async fn series(
    State(st): State<ConsoleState>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Response {
    if let Err((status, why)) = authorized(&st, &headers, false) {
        return refuse(status, why);
    }
    let Some(backend) = param(query.as_deref(), "backend") else {
        return refuse(StatusCode::BAD_REQUEST, "backend missing");
    };
    let points = st.calls.series(&backend).unwrap_or_default();
    answer(
        StatusCode::OK,
        json!({ "backend": backend, "points": points }),
    )
}

pub(super) async fn csp_report(
    State(st): State<ConsoleState>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let body = match authorized_post(&st, &headers, &body) {
        Ok((_, body)) => body,
        Err((status, why)) => return refuse(status, why),
    };
    tracing::warn!(report = %body, "console: Content-Security-Policy violation");
    if let Ok(mut v) = st.violations.lock()
        && v.len() < MAX_VIOLATIONS
    {
        v.push(body);
    }
    answer(StatusCode::OK, json!({}))
}

pub(super) async fn csp_reports(State(st): State<ConsoleState>, headers: HeaderMap) -> Response {
    if let Err((status, why)) = authorized(&st, &headers, false) {
        return refuse(status, why);
    }
    let v = st.violations.lock().map(|v| v.clone()).unwrap_or_default();
    answer(StatusCode::OK, json!({ "violations": v }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csrf_compares_whole_tokens() {
        assert!(csrf_matches("abc", "abc"));
        assert!(!csrf_matches("abd", "abc"));
        assert!(!csrf_matches("ab", "abc"));
        assert!(!csrf_matches("", "abc"));
    }

    #[test]
    fn cookie_is_found_among_others() {
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; mcpwire_console=tok; b=2"),
        );
        assert_eq!(cookie_token(&h), Some("tok"));
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("mcpwire_consolex=tok"),
        );
        assert_eq!(cookie_token(&h), None);
    }

    #[test]
    fn caller_query_is_decoded() {
        assert_eq!(caller_of(Some("as=key%3Aci")), "key:ci");
        assert_eq!(caller_of(None), "anonymous");
        assert_eq!(caller_of(Some("as=%zz")), "%zz");
        assert_eq!(
            param(Some("x=1&backend=up%20one"), "backend").as_deref(),
            Some("up one")
        );
        assert_eq!(param(Some("backends=x"), "backend"), None);
    }
}
