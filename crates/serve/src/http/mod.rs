//! The HTTP face of a [`Service`]: the `/v1` API, `/healthz`, `/metrics`
//! and the web page, on axum. Every error is `{"error": "…"}` with the
//! status its cause calls for; bodies over 1 MiB are refused (413).

mod approvals;
mod events;
mod page;
mod roles;
mod tasks;

use std::sync::Arc;

use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde_json::json;

use crate::record::TaskState;
use crate::service::{Service, ServiceError};

/// Largest request body accepted.
pub const MAX_BODY_BYTES: usize = 1 << 20;

/// What every handler shares.
#[derive(Clone)]
pub(crate) struct App {
    pub service: Service,
    /// The bearer token `/v1/…` and `/metrics` require, when set.
    pub token: Option<Arc<str>>,
    /// A trace viewer's address the page links trace ids to.
    pub trace_ui: Option<Arc<str>>,
}

/// The router of a service: give it to `axum::serve`.
pub fn router(service: Service, token: Option<String>, trace_ui: Option<String>) -> Router {
    let app = App {
        service,
        token: token.map(Into::into),
        trace_ui: trace_ui.map(Into::into),
    };
    let api = Router::new()
        .route("/v1/tasks", get(tasks::list).post(tasks::submit))
        .route("/v1/tasks/{id}", get(tasks::show).delete(tasks::cancel))
        .route("/v1/tasks/{id}/events", get(events::stream))
        .route(
            "/v1/tasks/{id}/approvals/{call_id}",
            post(approvals::answer),
        )
        .route("/v1/roles", get(roles::list).post(roles::register))
        .route("/metrics", get(metrics))
        .layer(middleware::from_fn_with_state(app.clone(), authorize));
    Router::new()
        .route("/healthz", get(healthz))
        .route("/", get(page::page))
        .merge(api)
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(app)
}

/// Serves `router` on `listener` until `stop` completes, then lets open
/// requests end (event streams close with the connection).
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router)
        .with_graceful_shutdown(stop)
        .await
}

/// An error as the API answers it: a status and `{"error": message}`.
pub(crate) struct ApiError(pub StatusCode, pub String);

impl ApiError {
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self(StatusCode::BAD_REQUEST, message.into())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        json_response(self.0, &json!({ "error": self.1 }))
    }
}

/// `value` as a JSON response with `status`.
pub(crate) fn json_response(status: StatusCode, value: &serde_json::Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        value.to_string(),
    )
        .into_response()
}

impl From<ServiceError> for ApiError {
    fn from(e: ServiceError) -> Self {
        let status = match &e {
            ServiceError::Invalid(_) => StatusCode::BAD_REQUEST,
            ServiceError::NotFound(_) => StatusCode::NOT_FOUND,
            ServiceError::Conflict(_) => StatusCode::CONFLICT,
            ServiceError::ShuttingDown => StatusCode::SERVICE_UNAVAILABLE,
            ServiceError::Store(_) => StatusCode::INTERNAL_SERVER_ERROR,
        };
        Self(status, e.to_string())
    }
}

/// A body that could not be read: too large (413) or broken (400).
pub(crate) fn body_error(e: axum::extract::rejection::BytesRejection) -> ApiError {
    let status = e.status();
    if status == StatusCode::PAYLOAD_TOO_LARGE {
        ApiError(
            status,
            format!("the body is larger than {MAX_BODY_BYTES} bytes"),
        )
    } else {
        ApiError(status, format!("the body could not be read: {e}"))
    }
}

async fn authorize(State(app): State<App>, request: Request, next: Next) -> Response {
    let Some(token) = &app.token else {
        return next.run(request).await;
    };
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    match given {
        Some(given) if same(given.as_bytes(), token.as_bytes()) => next.run(request).await,
        Some(_) => {
            ApiError(StatusCode::UNAUTHORIZED, "the bearer token is wrong".into()).into_response()
        }
        None => ApiError(
            StatusCode::UNAUTHORIZED,
            "this server needs `Authorization: Bearer TOKEN`".into(),
        )
        .into_response(),
    }
}

/// Compares two secrets in time that depends only on their lengths.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn healthz(State(app): State<App>) -> Response {
    json_response(
        StatusCode::OK,
        &json!({"status": "ok", "tasks_running": app.service.running()}),
    )
}

async fn metrics(State(app): State<App>) -> Result<Response, ApiError> {
    let tasks = app.service.tasks(None)?;
    let counts: Vec<(TaskState, u64)> = TaskState::ALL
        .iter()
        .map(|&s| (s, tasks.iter().filter(|t| t.status == s).count() as u64))
        .collect();
    let text = app.service.metrics().render(&counts);
    Ok(([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response())
}

async fn not_found(request: Request) -> ApiError {
    ApiError(
        StatusCode::NOT_FOUND,
        format!("no route for {} {}", request.method(), request.uri().path()),
    )
}
