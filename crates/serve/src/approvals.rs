//! Approvals under `hermes serve`: a call the policy names becomes an
//! `approval_needed` event and waits for `POST
//! /v1/tasks/{id}/approvals/{call_id}`. Questions and answers are stored,
//! so a question pending at a crash waits again after the restart (the
//! resumed subtask asks the same call, with the same call id) and an
//! answer given meanwhile is kept.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use hermes_core::approval::{
    ApprovalPolicy, ApprovalRequest, Approvals, ApproveAll, Approver, NobodyToAsk, Verdict,
};
use serde_json::{json, Value};
use tokio::sync::oneshot;

use crate::record::now;
use crate::service::{Service, ServiceError};

/// How a service answers approval questions.
#[derive(Debug, Clone)]
pub struct ApprovalSettings {
    /// The command line's rules (roles add theirs).
    pub policy: ApprovalPolicy,
    /// How long a call waits for an answer.
    pub timeout: Duration,
    /// Who answers.
    pub answerer: Answerer,
}

/// Who answers a service's approval questions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answerer {
    /// HTTP clients (`approval_needed` events, `POST …/approvals/…`).
    Http,
    /// Yes to everything without asking (`--approve-all`).
    ApproveAll,
    /// Nobody can answer (no HTTP server: `hermes mcp serve`): refused.
    Nobody,
}

impl Default for ApprovalSettings {
    fn default() -> Self {
        Self {
            policy: ApprovalPolicy::default(),
            timeout: hermes_core::approval::DEFAULT_APPROVAL_TIMEOUT,
            answerer: Answerer::Http,
        }
    }
}

/// Asks the service's HTTP clients about one task's calls.
struct HttpApprover {
    service: Service,
    task: String,
}

#[async_trait]
impl Approver for HttpApprover {
    async fn decide(&self, request: &ApprovalRequest) -> Verdict {
        self.service.ask(&self.task, request).await
    }
}

/// Marks a question expired if its wait is dropped (timeout, cancel)
/// before an answer came.
struct Expire {
    service: Service,
    task: String,
    call_id: String,
    /// The stored question while it waits; `None` once answered.
    question: Option<Value>,
}

impl Drop for Expire {
    fn drop(&mut self) {
        let Some(question) = self.question.take() else {
            return;
        };
        let key = (self.task.clone(), self.call_id.clone());
        // Still pending in the store too: an answer stored just now wins.
        let unanswered = || {
            let stored = self.service.store().approval(&self.task, &self.call_id);
            matches!(stored, Ok(Some(s)) if s["state"] == "pending")
        };
        if self.service.pending().remove(&key).is_some() && unanswered() {
            self.service.settle(
                &self.task,
                &self.call_id,
                question,
                "expired",
                "timeout",
                Some("no answer in time, or the task stopped".into()),
            );
        }
    }
}

/// A stored question's answer, when it has one.
fn answered(stored: &Value) -> Option<Verdict> {
    let by = stored["by"].as_str().unwrap_or("http").to_string();
    let note = stored["note"].as_str().map(str::to_string);
    match stored["state"].as_str()? {
        "approved" => Some(Verdict {
            approved: true,
            by,
            note,
        }),
        "denied" | "expired" => Some(Verdict {
            approved: false,
            by,
            note: note.or_else(|| Some("refused".into())),
        }),
        _ => None,
    }
}

impl Service {
    /// The approvals of task `id`: its questions go to HTTP clients (or
    /// are all answered yes under `--approve-all`).
    pub(crate) fn approvals_for(&self, id: &str) -> Approvals {
        let settings = &self.config().approvals;
        let approver: Arc<dyn Approver> = match settings.answerer {
            Answerer::ApproveAll => Arc::new(ApproveAll),
            Answerer::Nobody => Arc::new(NobodyToAsk),
            Answerer::Http => Arc::new(HttpApprover {
                service: self.clone(),
                task: id.to_string(),
            }),
        };
        Approvals::new(settings.policy.clone(), approver, settings.timeout)
    }

    /// Asks about `request` in task `id` and waits for the answer.
    async fn ask(&self, id: &str, request: &ApprovalRequest) -> Verdict {
        let key = (id.to_string(), request.call_id.clone());
        let (tx, rx) = oneshot::channel();
        // Waiting first, then looking: an answer stored between the two is
        // seen by the look.
        self.pending().insert(key.clone(), tx);
        let question = match self.store().approval(id, &request.call_id) {
            Ok(Some(stored)) => {
                if let Some(verdict) = answered(&stored) {
                    self.pending().remove(&key);
                    return verdict;
                }
                // Still pending from before a restart: wait again, quietly.
                stored
            }
            Ok(None) => {
                let stored = json!({"request": request, "state": "pending"});
                if let Err(e) = self.store().put_approval(id, &request.call_id, &stored) {
                    self.pending().remove(&key);
                    return Verdict::no("server", format!("the question could not be stored: {e}"));
                }
                self.emit(
                    id,
                    "approval_needed",
                    json!({
                        "subtask": request.subtask,
                        "role": request.role,
                        "call_id": request.call_id,
                        "tool": request.tool,
                        "args": request.args,
                        "args_hash": request.args_hash,
                        "round": request.round,
                        "reason": request.reason,
                    }),
                );
                stored
            }
            Err(e) => {
                self.pending().remove(&key);
                return Verdict::no("server", format!("the question could not be read: {e}"));
            }
        };
        let mut expire = Expire {
            service: self.clone(),
            task: id.to_string(),
            call_id: request.call_id.clone(),
            question: Some(question),
        };
        let verdict = rx
            .await
            .unwrap_or_else(|_| Verdict::no("server", "the question was dropped"));
        expire.question = None;
        verdict
    }

    /// Answers question `call_id` of task `id` (`POST
    /// /v1/tasks/{id}/approvals/{call_id}`): the stored record as it now
    /// stands. 404 for an unknown task or question, 409 when it was
    /// already answered or expired.
    pub fn answer(
        &self,
        id: &str,
        call_id: &str,
        approve: bool,
        note: Option<String>,
    ) -> Result<Value, ServiceError> {
        self.task(id)?;
        let stored = self.store().approval(id, call_id)?.ok_or_else(|| {
            ServiceError::NotFound(format!("task `{id}` has no approval `{call_id}`"))
        })?;
        if let Some(state) = stored["state"].as_str().filter(|s| *s != "pending") {
            return Err(ServiceError::Conflict(format!(
                "approval `{call_id}` of task `{id}` is already {state}"
            )));
        }
        // Stored first, then handed to the waiting call: a call that starts
        // waiting after the store was written reads the answer there (see
        // `ask`); one that starts before is handed it here. In the other
        // order, a call resumed after a restart could begin waiting between
        // the two and wait for an answer that was already given.
        let state = if approve { "approved" } else { "denied" };
        let record = self.settle(id, call_id, stored, state, "http", note.clone());
        let waiting = self
            .pending()
            .remove(&(id.to_string(), call_id.to_string()));
        if let Some((_, tx)) = waiting {
            let _ = tx.send(Verdict {
                approved: approve,
                by: "http".into(),
                note: note.or_else(|| (!approve).then(|| "declined".into())),
            });
        }
        // No one waiting (a restart in between): the answer is stored and
        // the call gets it when it asks again.
        Ok(record)
    }

    /// Stores the end of question `stored` (as it was read or written)
    /// and tells the stream.
    fn settle(
        &self,
        id: &str,
        call_id: &str,
        mut stored: Value,
        state: &str,
        by: &str,
        note: Option<String>,
    ) -> Value {
        stored["state"] = state.into();
        stored["by"] = by.into();
        stored["note"] = note.clone().into();
        stored["at"] = now().into();
        if let Err(e) = self.store().put_approval(id, call_id, &stored) {
            tracing::error!("approval `{call_id}` of {id} not recorded: {e}");
        }
        self.emit(
            id,
            "approval_decided",
            json!({
                "subtask": stored["request"]["subtask"],
                "call_id": call_id,
                "approved": state == "approved",
                "state": state,
                "by": by,
                "note": note,
            }),
        );
        stored
    }
}
