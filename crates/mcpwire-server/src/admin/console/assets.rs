//! The page, its script and its style, embedded in the binary.

use axum::http::header;
use axum::response::{IntoResponse, Response};

use super::api::secured;

const INDEX: &str = include_str!("assets/index.html");
const SCRIPT: &str = include_str!("assets/app.js");
const STYLE: &str = include_str!("assets/app.css");

pub(super) async fn index() -> Response {
    secured(([(header::CONTENT_TYPE, "text/html; charset=utf-8")], INDEX).into_response())
}

pub(super) async fn script() -> Response {
    secured(
        (
            [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
            SCRIPT,
        )
            .into_response(),
    )
}

pub(super) async fn style() -> Response {
    secured(([(header::CONTENT_TYPE, "text/css; charset=utf-8")], STYLE).into_response())
}
