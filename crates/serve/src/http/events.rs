//! `GET /v1/tasks/{id}/events`: a task's events as server-sent events.
//! A late client gets every past event first; `Last-Event-ID: N` resumes
//! after event N; the stream closes after `task_ended`. A client that goes
//! away stops only its own stream: the task goes on.

use std::convert::Infallible;

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::Stream;

use super::{ApiError, App};
use crate::feed::Feed;

pub(super) async fn stream(
    State(app): State<App>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let after = match headers.get("last-event-id") {
        None => 0,
        Some(value) => value
            .to_str()
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .ok_or_else(|| ApiError::bad_request("Last-Event-ID: expected an event number"))?,
    };
    let feed = app.service.feed(&id, after)?;
    Ok(Sse::new(events(feed))
        .keep_alive(KeepAlive::default())
        .into_response())
}

fn events(feed: Feed) -> impl Stream<Item = Result<Event, Infallible>> {
    futures::stream::unfold(feed, |mut feed| async move {
        let event = feed.next().await?;
        let sse = Event::default()
            .id(event.id.to_string())
            .event(event.kind)
            .data(event.data.to_string());
        Some((Ok(sse), feed))
    })
}
