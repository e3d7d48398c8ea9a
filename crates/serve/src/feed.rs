//! Reading a task's events in order, exactly once each, from the store
//! and then live: what the event stream and the MCP server's waiting
//! `submit_task` both follow.

use std::collections::VecDeque;

use tokio::sync::broadcast::error::RecvError;
use tokio::sync::broadcast::Receiver;

use crate::record::TaskEventRecord;
use crate::service::{Service, ServiceError};

/// A reader of one task's events in order, each once: the stored events
/// still to give, the live feed, the last event number given. A reader
/// that falls behind the live feed catches up from the store.
pub struct Feed {
    service: Service,
    task: String,
    past: VecDeque<TaskEventRecord>,
    live: Option<Receiver<TaskEventRecord>>,
    last: u64,
    done: bool,
}

impl Feed {
    /// The next event after the last one given, or `None` after
    /// `task_ended` (or when the task has no more events).
    pub async fn next(&mut self) -> Option<TaskEventRecord> {
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

impl Service {
    /// A reader of task `id`'s events numbered above `after`.
    pub fn feed(&self, id: &str, after: u64) -> Result<Feed, ServiceError> {
        let subscription = self.subscribe(id, after)?;
        Ok(Feed {
            service: self.clone(),
            task: id.to_string(),
            past: subscription.past.into(),
            live: subscription.live,
            last: after,
            done: false,
        })
    }
}
