//! `/v1/tasks`: submit, list, show and cancel tasks.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::{StatusCode, Uri};
use axum::response::Response;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{body_error, json_response, ApiError, App};
use crate::record::{TaskSpec, TaskState};

/// The body of `POST /v1/tasks`; any other field is an error.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SubmitBody {
    goal: String,
    #[serde(default)]
    timeout_secs: Option<u64>,
    #[serde(default)]
    max_replans: Option<u32>,
    #[serde(default)]
    workspace: Option<String>,
    #[serde(default)]
    token_budget: Option<u64>,
    #[serde(default)]
    call_budget: Option<u64>,
}

pub(super) async fn submit(
    State(app): State<App>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let body = body.map_err(body_error)?;
    let parsed: SubmitBody = serde_json::from_slice(&body)
        .map_err(|e| ApiError::bad_request(format!("invalid task: {e}")))?;
    let accepted = app.service.accept(TaskSpec {
        goal: parsed.goal,
        timeout_secs: parsed.timeout_secs,
        max_replans: parsed.max_replans,
        workspace: parsed.workspace,
        token_budget: parsed.token_budget,
        call_budget: parsed.call_budget,
    })?;
    Ok(json_response(StatusCode::ACCEPTED, &accepted))
}

pub(super) async fn list(State(app): State<App>, uri: Uri) -> Result<Response, ApiError> {
    let mut status = None;
    for pair in uri.query().unwrap_or_default().split('&') {
        match pair.split_once('=') {
            Some(("status", name)) => {
                status = Some(TaskState::parse(name).ok_or_else(|| {
                    ApiError::bad_request(format!(
                        "status `{name}`: expected one of queued, running, finished, failed, timeout, error, cancelled"
                    ))
                })?);
            }
            _ if pair.is_empty() => {}
            _ => {
                return Err(ApiError::bad_request(format!(
                    "unknown query parameter `{pair}`; only `status` is known"
                )))
            }
        }
    }
    let rows: Vec<Value> = app
        .service
        .tasks(status)?
        .iter()
        .map(|t| t.summary())
        .collect();
    Ok(json_response(StatusCode::OK, &Value::Array(rows)))
}

pub(super) async fn show(
    State(app): State<App>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    Ok(json_response(
        StatusCode::OK,
        &app.service.task(&id)?.detail(),
    ))
}

pub(super) async fn cancel(
    State(app): State<App>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    app.service.cancel(&id)?;
    Ok(json_response(
        StatusCode::OK,
        &json!({"id": id, "status": "cancelled"}),
    ))
}
