//! `GET /v1/tasks/{id}/events`: a task's events as server-sent events.
//! A late client gets every past event first; `Last-Event-ID: N` resumes
//! after event N; the stream closes after `task_ended`. A client that goes
//! away stops only its own stream: the task goes on.

use std::collections::VecDeque;
use std::convert::Infallible;

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::Stream;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::broadcast::Receiver;

use super::{ApiError, App};
use crate::record::TaskEventRecord;
use crate::service::Service;

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
    let subscription = app.service.subscribe(&id, after)?;
    let feed = Feed {
        service: app.service.clone(),
        task: id,
        past: subscription.past.into(),
        live: subscription.live,
        last: after,
        done: false,
    };
    Ok(Sse::new(events(feed))
        .keep_alive(KeepAlive::default())
        .into_response())
}

/// Where a stream is: the stored events still to send, the live feed, the
/// last event number sent.
struct Feed {
    service: Service,
    task: String,
    past: VecDeque<TaskEventRecord>,
    live: Option<Receiver<TaskEventRecord>>,
    last: u64,
    done: bool,
}

impl Feed {
    async fn next(&mut self) -> Option<TaskEventRecord> {
        loop {
            if self.done {
                return None;
            }
            if let Some(event) = self.past.pop_front() {
                if event.id <= self.last {
                    continue;
                }
                return Some(self.sent(event));
            }
            let live = self.live.as_mut()?;
            match live.recv().await {
                Ok(event) if event.id <= self.last => {}
                Ok(event) => return Some(self.sent(event)),
                // Fell behind, or the feed closed: the store has it all
                // (events arriving live again later are skipped by number).
                Err(closed) => {
                    if closed == RecvError::Closed {
                        self.live = None;
                    }
                    self.past = self
                        .service
                        .store()
                        .events_after(&self.task, self.last)
                        .unwrap_or_default()
                        .into();
                    if self.past.is_empty() && self.live.is_none() {
                        return None;
                    }
                }
            }
        }
    }

    fn sent(&mut self, event: TaskEventRecord) -> TaskEventRecord {
        self.last = event.id;
        self.done = event.kind == "task_ended";
        event
    }
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
