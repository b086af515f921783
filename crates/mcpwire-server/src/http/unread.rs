//! `Connection: close` on an answer given before its request's body was read (a 401 for a
//! missing token, a 413, a 415, a rate-limit refusal…). hyper then cannot reuse the
//! connection — it drains only a body that is already buffered — and would close it right
//! after the answer, while the client, seeing a keep-alive answer, may already be sending its
//! next request there: that request would get no answer at all. Saying `close` makes the
//! client open a new connection instead. An unread body is never read here: an
//! unauthenticated client must not make the server take its bytes.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use axum::body::Body;
use axum::extract::Request;
use axum::http::HeaderValue;
use axum::http::header::CONNECTION;
use axum::middleware::Next;
use axum::response::Response;
use hyper::body::{Body as HttpBody, Bytes, Frame, SizeHint};

/// The middleware: answers whose request body was not read to its end say `close`.
pub(crate) async fn close_if_unread(req: Request, next: Next) -> Response {
    if req.body().is_end_stream() {
        return next.run(req).await;
    }
    let read = Arc::new(AtomicBool::new(false));
    let req = req.map(|inner| {
        Body::new(Tracked {
            body: Watched::new(inner),
            read: read.clone(),
        })
    });
    let response = next.run(req).await;
    close_unless(read.load(Ordering::Acquire), response)
}

/// `response`, saying `close` unless its request's body was `read` to its end.
pub(crate) fn close_unless(read: bool, mut response: Response) -> Response {
    if !read {
        response
            .headers_mut()
            .insert(CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

/// A request body that says afterwards whether it was read to its end: borrowed by its
/// handler for a `POST` to the endpoint (called without the router: [`super::endpoint`]),
/// inside [`Tracked`] for the router's middleware.
pub(crate) struct Watched<B> {
    inner: B,
    read: bool,
}

impl<B: HttpBody> Watched<B> {
    /// `inner`, not read yet (an empty body counts as read).
    pub(crate) fn new(inner: B) -> Watched<B> {
        let read = inner.is_end_stream();
        Watched { inner, read }
    }

    /// Whether the body was read to its end.
    pub(crate) fn read(&self) -> bool {
        self.read
    }
}

impl<B: HttpBody + Unpin> HttpBody for Watched<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if matches!(polled, Poll::Ready(None)) || self.inner.is_end_stream() {
            self.read = true;
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A request body handed to a handler it cannot be taken back from: [`Watched`], saying
/// through a shared flag when it was read to its end.
struct Tracked {
    body: Watched<Body>,
    read: Arc<AtomicBool>,
}

impl HttpBody for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let polled = Pin::new(&mut self.body).poll_frame(cx);
        if self.body.read() {
            self.read.store(true, Ordering::Release);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::routing::post;
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    fn app() -> axum::Router {
        axum::Router::new()
            .route("/refuse", post(|| async { "refused unread" }))
            .route(
                "/read",
                post(|body: Bytes| async move { format!("{} bytes", body.len()) }),
            )
            .layer(axum::middleware::from_fn(close_if_unread))
    }

    async fn send(path: &str, body: &'static str) -> Response {
        let req = Request::post(path).body(Body::from(body)).expect("request");
        app().oneshot(req).await.expect("answer")
    }

    #[tokio::test]
    async fn an_answer_before_the_body_was_read_says_close() {
        let r = send("/refuse", "{\"jsonrpc\":\"2.0\"}").await;
        assert_eq!(
            r.headers().get(CONNECTION).map(|v| v.as_bytes()),
            Some(&b"close"[..])
        );
    }

    #[tokio::test]
    async fn an_answer_after_the_body_was_read_keeps_the_connection() {
        let r = send("/read", "{\"jsonrpc\":\"2.0\"}").await;
        assert!(r.headers().get(CONNECTION).is_none());
        let text = r.into_body().collect().await.expect("body").to_bytes();
        assert_eq!(&text[..], b"17 bytes");
        // No body at all: nothing to leave unread.
        let r = send("/refuse", "").await;
        assert!(r.headers().get(CONNECTION).is_none());
    }
}
