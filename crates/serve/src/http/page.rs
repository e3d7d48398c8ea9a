//! `GET /`: one self-contained page (no external scripts, fonts or styles)
//! to submit tasks and watch them: the task list, a chosen task's subtask
//! graph coloured by status and updated from its event stream, each
//! subtask's rounds, the result, and a cancel button.

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};

use super::App;

const PAGE: &str = include_str!("page.html");

pub(super) async fn page(State(app): State<App>) -> Response {
    let trace_ui = app.trace_ui.as_deref().unwrap_or("");
    let escaped = trace_ui
        .replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;");
    let html = if trace_ui.is_empty() {
        PAGE.to_string()
    } else {
        PAGE.replace("{{TRACE_UI}}", &escaped)
    };
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], html).into_response()
}
