//! `POST /v1/tasks/{id}/approvals/{call_id}`: a person's answer to an
//! `approval_needed` event. Only that call, with the args the event
//! showed, runs on a yes.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde::Deserialize;

use super::{body_error, json_response, ApiError, App};

/// The body; any other field is an error.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Answer {
    approve: bool,
    #[serde(default)]
    note: Option<String>,
}

pub(super) async fn answer(
    State(app): State<App>,
    Path((id, call_id)): Path<(String, String)>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let body = body.map_err(body_error)?;
    let answer: Answer = serde_json::from_slice(&body)
        .map_err(|e| ApiError::bad_request(format!("invalid answer: {e}")))?;
    let record = app
        .service
        .answer(&id, &call_id, answer.approve, answer.note)?;
    Ok(json_response(StatusCode::OK, &record))
}
