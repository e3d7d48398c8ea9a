//! `/v1/roles`: list the executor roles and register new ones (stored,
//! so they come back after a restart).

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use hermes_actors::Role;
use serde_json::{json, Value};

use crate::record::role_summary;

use super::{body_error, json_response, ApiError, App};

pub(super) async fn list(State(app): State<App>) -> Response {
    let roles: Vec<Value> = app
        .service
        .roles()
        .into_iter()
        .map(|r| role_summary(&r))
        .collect();
    json_response(StatusCode::OK, &Value::Array(roles))
}

/// A role as TOML (`application/toml`, `text/plain`, or no type) or as
/// JSON (`application/json`) with the same fields.
pub(super) async fn register(
    State(app): State<App>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let body = body.map_err(body_error)?;
    let text = std::str::from_utf8(&body)
        .map_err(|_| ApiError::bad_request("the role is not UTF-8 text"))?;
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/toml");
    let role: Role = if content_type.starts_with("application/json") {
        serde_json::from_str(text)
            .map_err(|e| ApiError::bad_request(format!("invalid role: {e}")))?
    } else if content_type.starts_with("application/toml") || content_type.starts_with("text/plain")
    {
        hermes_actors::roles::parse_role(text)
            .map_err(|e| ApiError::bad_request(format!("invalid role: {e}")))?
    } else {
        return Err(ApiError(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!("Content-Type `{content_type}`: send the role as application/toml, text/plain or application/json"),
        ));
    };
    let name = role.name.clone();
    app.service.register_role(role)?;
    Ok(json_response(StatusCode::CREATED, &json!({ "name": name })))
}
