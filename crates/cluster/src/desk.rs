//! A planner's desk: the one actor a planner exposes to the nodes that run
//! its subtasks, so that a remote executor's approval questions reach the
//! planner's approver (a terminal, `hermes serve`'s HTTP API, a policy)
//! and its model calls count against the task's budget.
//!
//! The desk joins the process group [`desk_group`]`(identity)` before the
//! planner dials any node, so every session carries it. Each remote run
//! opens a [`DeskTicket`] in the [`DeskBook`] for as long as its answer is
//! awaited; a question or a spend naming a run the book does not hold is
//! refused (a late message from a run already given up on).

use std::sync::Arc;

use dashmap::DashMap;
use ractor::{Actor, ActorProcessingErr, ActorRef};

use super::wire::{desk_group, DeskMsg, Wire};
use hermes_core::approval::{Approvals, Verdict};
use hermes_core::llm::budget::Budget;

/// What the desk knows of one remote run.
#[derive(Clone, Default)]
pub struct DeskEntry {
    /// Who answers its approval questions (`None`: nobody; every question
    /// is refused).
    pub approvals: Option<Approvals>,
    /// Its task's budget, when capped.
    pub budget: Option<Arc<Budget>>,
}

/// The remote runs a planner is waiting on, by run id. Cheap to clone.
#[derive(Clone, Default)]
pub struct DeskBook(Arc<DashMap<String, DeskEntry>>);

impl DeskBook {
    /// Opens `run_id` until the ticket is dropped.
    pub fn open(&self, run_id: &str, entry: DeskEntry) -> DeskTicket {
        self.0.insert(run_id.to_string(), entry);
        DeskTicket {
            book: self.clone(),
            run_id: run_id.to_string(),
        }
    }

    fn get(&self, run_id: &str) -> Option<DeskEntry> {
        self.0.get(run_id).map(|e| e.clone())
    }
}

/// A run's place in the [`DeskBook`]; dropping it closes the run.
pub struct DeskTicket {
    book: DeskBook,
    run_id: String,
}

impl Drop for DeskTicket {
    fn drop(&mut self) {
        self.book.0.remove(&self.run_id);
    }
}

/// The planner's desk actor (see the module's text).
pub struct Desk;

/// What a desk is started with.
pub struct DeskArgs {
    /// The planner's node identity (`name@host`).
    pub identity: String,
    /// The runs it answers for.
    pub book: DeskBook,
}

impl Actor for Desk {
    type Msg = DeskMsg;
    type State = DeskBook;
    type Arguments = DeskArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<DeskMsg>,
        args: DeskArgs,
    ) -> Result<DeskBook, ActorProcessingErr> {
        ractor::pg::join(desk_group(&args.identity), vec![myself.get_cell()]);
        Ok(args.book)
    }

    async fn handle(
        &self,
        _myself: ActorRef<DeskMsg>,
        message: DeskMsg,
        book: &mut DeskBook,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            DeskMsg::Ask(Wire(Ok(question)), reply) => {
                let approvals = book.get(&question.run_id).and_then(|e| e.approvals);
                // A person may take minutes: the mailbox stays free.
                tokio::spawn(async move {
                    let verdict = match approvals {
                        Some(approvals) => approvals.ask(&question.request).await,
                        None => Verdict::no(
                            "planner",
                            format!(
                                "no run `{}` waits on this planner, or nobody answers its questions",
                                question.run_id
                            ),
                        ),
                    };
                    let _ = reply.send(Wire::new(verdict));
                });
            }
            DeskMsg::Ask(Wire(Err(why)), reply) => {
                let _ = reply.send(Wire::new(Verdict::no(
                    "planner",
                    format!("the planner could not read the question: {why}"),
                )));
            }
            DeskMsg::Spend(Wire(Ok(spend))) => {
                match book.get(&spend.run_id).and_then(|e| e.budget) {
                    Some(budget) => budget.record(spend.tokens),
                    None => tracing::debug!("spend for unknown run {}", spend.run_id),
                }
            }
            DeskMsg::Spend(Wire(Err(why))) => {
                tracing::warn!("a node's spend could not be read: {why}");
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::wire::{DeskQuestion, DeskSpend};
    use hermes_core::approval::{ApprovalPolicy, ApprovalRequest, ApproveAll};
    use hermes_core::llm::budget::Caps;

    #[tokio::test]
    async fn questions_and_spends_reach_the_open_run_only() {
        let book = DeskBook::default();
        let args = DeskArgs {
            identity: "desk-test@127.0.0.1".into(),
            book: book.clone(),
        };
        let (desk, _) = Actor::spawn(None, Desk, args).await.unwrap();
        assert_eq!(
            ractor::pg::get_members(&desk_group("desk-test@127.0.0.1")).len(),
            1
        );
        let budget = Budget::new(Caps {
            tokens: None,
            calls: Some(2),
        });
        let ticket = book.open(
            "r1",
            DeskEntry {
                approvals: Some(Approvals::new(
                    ApprovalPolicy::default(),
                    Arc::new(ApproveAll),
                    Duration::from_secs(1),
                )),
                budget: Some(Arc::clone(&budget)),
            },
        );
        let ask = |run_id: &str| {
            let question = DeskQuestion {
                run_id: run_id.into(),
                request: ApprovalRequest::new(
                    Some("s1"),
                    "worker",
                    1,
                    "write_file",
                    &serde_json::json!({"path": "a"}),
                ),
            };
            let desk = desk.clone();
            async move {
                ractor::call_t!(desk, |port| DeskMsg::Ask(Wire::new(question), port), 2_000)
                    .unwrap()
                    .0
                    .unwrap()
            }
        };
        assert_eq!(ask("r1").await, Verdict::yes("policy"));
        let unknown = ask("r2").await;
        assert!(!unknown.approved && unknown.note.unwrap().contains("r2"));

        let spend = |run_id: &str, tokens| {
            desk.cast(DeskMsg::Spend(Wire::new(DeskSpend {
                run_id: run_id.into(),
                tokens,
            })))
            .unwrap()
        };
        spend("r2", 50);
        spend("r1", 30);
        spend("r1", 12);
        // Casts are handled in order: one call more settles them.
        ask("r1").await;
        assert_eq!(budget.used(), (42, 2));
        assert!(budget.exhausted());

        drop(ticket);
        assert!(!ask("r1").await.approved, "a closed run is refused");
        desk.stop(None);
    }
}
