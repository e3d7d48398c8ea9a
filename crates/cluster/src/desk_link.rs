//! The node side of a planner's desk ([`super::desk`]): a remote run asks
//! its approval questions there ([`DeskApprover`]) and reports each model
//! call's tokens there ([`SpendingLlm`]), so the planner's approver and
//! the task's budget cover executors on every node.

use std::sync::Arc;

use async_trait::async_trait;
use ractor::rpc::CallResult;
use ractor::ActorRef;

use super::wire::{desk_group, DeskMsg, DeskQuestion, DeskSpend, Wire};
use hermes_core::approval::{ApprovalRequest, Approver, Verdict};
use hermes_core::llm::{ChatRequest, ChatResponse, Llm, LlmError};

/// One remote run's way back to its planner's desk.
#[derive(Clone)]
pub struct DeskLink {
    origin: String,
    run_id: String,
}

impl DeskLink {
    /// The desk of the planner `origin` (`name@host`), for run `run_id`.
    pub fn new(origin: &str, run_id: &str) -> Self {
        Self {
            origin: origin.to_string(),
            run_id: run_id.to_string(),
        }
    }

    /// The desk, if its planner's session is up (a local one first).
    fn desk(&self) -> Option<ActorRef<DeskMsg>> {
        let mut members = ractor::pg::get_members(&desk_group(&self.origin));
        members.sort_by_key(|cell| !cell.get_id().is_local());
        members.into_iter().next().map(ActorRef::from)
    }
}

/// Asks the planner's desk: the person or policy that answers the
/// planner's questions answers the node's too.
pub struct DeskApprover(pub DeskLink);

#[async_trait]
impl Approver for DeskApprover {
    async fn decide(&self, request: &ApprovalRequest) -> Verdict {
        let link = &self.0;
        let Some(desk) = link.desk() else {
            return Verdict::no(
                "planner",
                format!("the planner {} cannot be reached to ask", link.origin),
            );
        };
        let question = DeskQuestion {
            run_id: link.run_id.clone(),
            request: request.clone(),
        };
        // The approval's own timeout (around this call) bounds the wait.
        match desk
            .call(|port| DeskMsg::Ask(Wire::new(question), port), None)
            .await
        {
            Ok(CallResult::Success(Wire(Ok(verdict)))) => verdict,
            Ok(CallResult::Success(Wire(Err(why)))) => Verdict::no(
                "planner",
                format!("the planner's answer could not be read: {why}"),
            ),
            Ok(CallResult::Timeout) | Ok(CallResult::SenderError) => {
                Verdict::no("planner", "the planner left before answering")
            }
            Err(e) => Verdict::no("planner", format!("the planner cannot be reached: {e}")),
        }
    }
}

/// A model client whose calls are reported to the planner's desk, where
/// they count against the task's budget. The planner stops the run when
/// the budget is spent (as it stops a local executor).
pub struct SpendingLlm {
    inner: Arc<dyn Llm>,
    link: DeskLink,
}

impl SpendingLlm {
    /// `inner`, its calls reported through `link`.
    pub fn wrap(inner: Arc<dyn Llm>, link: DeskLink) -> Arc<dyn Llm> {
        Arc::new(Self { inner, link })
    }
}

#[async_trait]
impl Llm for SpendingLlm {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let answer = self.inner.chat(request).await;
        let tokens = answer.as_ref().map_or(0, |r| r.usage.total());
        match self.link.desk() {
            Some(desk) => {
                let spend = DeskSpend {
                    run_id: self.link.run_id.clone(),
                    tokens,
                };
                if let Err(e) = desk.cast(DeskMsg::Spend(Wire::new(spend))) {
                    tracing::warn!("a spend did not reach the planner: {e}");
                }
            }
            None => tracing::warn!(
                "the planner {} is gone: a model call was not counted",
                self.link.origin
            ),
        }
        answer
    }

    fn model(&self) -> &str {
        self.inner.model()
    }
}
