//! The Executor actor: a thin, supervised shell around one agent loop.
//!
//! It receives one `SubtaskRun` and runs the loop in a task it owns, so its
//! mailbox stays free. The loop mirrors every round into its task's journal
//! (the one a restarted executor resumes from) and stops when the
//! executor's `CancellationToken` is cancelled: by the planner at the task
//! deadline or at shutdown, or by this actor's own stop. The outcome goes to
//! the planner (or a worker node's run host) exactly once. A panic inside the loop fails this actor, so
//! the planner's supervision sees it as `ActorFailed`.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use dashmap::DashMap;
use futures::FutureExt;
use ractor::{Actor, ActorProcessingErr, ActorRef, DerivedActorRef};
use tokio_util::sync::CancellationToken;

use super::events::{EventSink, PlanEvent};
use super::messages::{ExecutorMsg, ExecutorReport, LoopPanic, SubtaskRun, TaskId};
use super::roles::Role;
use hermes_core::agent::LongTermMemory;
use hermes_core::approval::{Approvals, NobodyToAsk, DEFAULT_APPROVAL_TIMEOUT};
use hermes_core::faults::Faults;
use hermes_core::journal::{self, JournalEntry};
use hermes_core::llm::budget::{Budget, Caps};
use hermes_core::llm::Llm;
use hermes_core::text::panic_message;
use hermes_core::tools::Toolbox;

/// The rounds of each of one task's subtasks, by subtask id: what a
/// restarted executor resumes from, and what the task reports for a
/// subtask whose executor never reported.
pub type TaskJournals = Arc<DashMap<String, Vec<JournalEntry>>>;

/// What an executor needs to run, given when it is spawned.
pub struct ExecutorArgs {
    /// Where the outcome goes: the planner, or the run host of a worker
    /// node (`planner.get_derived()`).
    pub report_to: DerivedActorRef<ExecutorReport>,
    /// The task the subtask belongs to.
    pub task: TaskId,
    /// The role it plays (shared with the role registry).
    pub role: Arc<Role>,
    /// The model for that role.
    pub llm: Arc<dyn Llm>,
    /// Every tool of the planner or node ([`Role::agent`] takes the
    /// role's own).
    pub toolbox: Arc<Toolbox>,
    /// The task's journals, shared with the planner.
    pub journals: TaskJournals,
    /// Stops the loop (a child of the task's token).
    pub cancel: CancellationToken,
    /// Faults to inject (none in production).
    pub faults: Faults,
    /// Long-term memory ([`Role::agent`] files it under the role; none:
    /// the loop has none).
    pub memory: Option<LongTermMemory>,
    /// Hears a [`PlanEvent::Round`] after each round (none: nobody).
    pub events: Option<EventSink>,
    /// Who answers approval questions, with the command line's rules (the
    /// role's are added); none: calls the role's rules name are refused.
    pub approvals: Option<Approvals>,
    /// The task's token and call budget, shared by its executors and
    /// planner (none: uncapped).
    pub budget: Option<Arc<Budget>>,
    /// Whether the report carries the loop's journal: a worker node's run
    /// host sends it back to the planner's node; the local planner reads
    /// only the outcome, and a journal queued with each of a million
    /// reports was ~2 KiB apiece (BENCHMARKS.md).
    pub report_journal: bool,
}

/// Runs one subtask's loop under the planner's supervision.
pub struct Executor;

/// Executor actors started and not yet stopped, in this process.
static LIVE: AtomicUsize = AtomicUsize::new(0);

/// How many executor actors are alive in this process now (started, not yet
/// stopped), over every planner and node: for metrics, and for benchmarks
/// that must say how many ran at once.
pub fn live_executors() -> usize {
    LIVE.load(Ordering::Relaxed)
}

impl Actor for Executor {
    type Msg = ExecutorMsg;
    type State = (ExecutorArgs, Option<String>);
    type Arguments = ExecutorArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<ExecutorMsg>,
        args: ExecutorArgs,
    ) -> Result<Self::State, ActorProcessingErr> {
        LIVE.fetch_add(1, Ordering::Relaxed);
        Ok((args, None))
    }

    async fn handle(
        &self,
        myself: ActorRef<ExecutorMsg>,
        message: ExecutorMsg,
        (args, current): &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            ExecutorMsg::Run(run) => {
                *current = Some(run.subtask.id.clone());
                spawn_loop(myself, args, *run);
            }
            ExecutorMsg::LoopEnded(Ok(mut outcome)) => {
                let Some(subtask) = current.take() else {
                    return Ok(());
                };
                if !args.report_journal {
                    outcome.journal = Vec::new();
                }
                // The receiver stops this actor once it has the outcome, so
                // the outcome always arrives before the termination event.
                let key = subtask.clone();
                let report = ExecutorReport {
                    task: args.task,
                    subtask,
                    outcome,
                };
                if args.report_to.send_message(report).is_err() {
                    return Err("the receiver of the outcome is gone".into());
                }
                // The outcome carries the journal now: the mirror kept for
                // a crash or a stuck loop is not needed any more, and
                // freeing it here, not when the task ends, is ~1 KiB per
                // finished subtask (100,000 executors: BENCHMARKS.md).
                args.journals.remove(&key);
            }
            ExecutorMsg::LoopEnded(Err(panic)) => return Err(panic.into()),
        }
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<ExecutorMsg>,
        (args, _): &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        // However this actor ended, its loop must not outlive it.
        args.cancel.cancel();
        LIVE.fetch_sub(1, Ordering::Relaxed);
        Ok(())
    }
}

/// The approvals of an executor in `role`: the command line's rules and
/// the role's, asked of the given approver; with none given, of nobody
/// (fail closed: the role's calls are refused).
fn role_approvals(role: &Role, given: Option<&Approvals>) -> Approvals {
    let rules = role.approval_policy();
    match given {
        Some(approvals) => approvals.with_rules(&rules),
        None => Approvals::new(rules, Arc::new(NobodyToAsk), DEFAULT_APPROVAL_TIMEOUT),
    }
}

/// Starts the loop in its own task; its end comes back as `LoopEnded`.
fn spawn_loop(myself: ActorRef<ExecutorMsg>, args: &ExecutorArgs, run: SubtaskRun) {
    // Taken apart so that the loop's task holds only what it uses (100,000
    // waiting loops each held the whole `SubtaskRun` before).
    let SubtaskRun {
        subtask: planned,
        goal,
        limits,
        history,
        attempt,
        trace_context,
    } = run;
    let subtask = planned.id;
    args.journals.insert(subtask.clone(), history.clone());
    let journals = Arc::clone(&args.journals);
    let mirror = subtask.clone();
    let events = args.events.clone();
    let on_round = Arc::new(move |entry: &JournalEntry| {
        if let Some(mut rounds) = journals.get_mut(&mirror) {
            journal::push_round(&mut rounds, entry.clone());
        }
        if let Some(sink) = &events {
            sink(&PlanEvent::Round {
                id: mirror.clone(),
                round: entry.round,
                action: entry.action.clone(),
                status: entry.status.as_str().to_string(),
                llm_ms: entry.llm_ms,
                entry: Box::new(entry.clone()),
            });
        }
    });
    let (journals, key) = (Arc::clone(&args.journals), subtask.clone());
    let rounds_done = Arc::new(move || journals.get(&key).map_or(0, |r| r.len() as u32));
    let llm = args
        .faults
        .executor_llm(Arc::clone(&args.llm), &subtask, attempt, rounds_done);
    let agent = args
        .role
        .agent(llm, &args.toolbox, limits, args.memory.as_ref())
        .for_subtask(args.role.name.clone(), subtask)
        .with_trace_parent(trace_context)
        .with_approvals(role_approvals(&args.role, args.approvals.as_ref()))
        .on_round(on_round);
    let agent = match &args.budget {
        Some(budget) => agent.with_budget(Arc::clone(budget)),
        None => agent,
    };
    // The role's own cap, for this run only.
    let caps = Caps {
        tokens: args.role.token_budget,
        calls: args.role.call_budget,
    };
    let agent = if caps.is_set() {
        agent.with_budget(Budget::new(caps))
    } else {
        agent
    };
    let cancel = args.cancel.clone();
    tokio::spawn(async move {
        let ended = AssertUnwindSafe(agent.resume(&goal, history, &cancel))
            .catch_unwind()
            .await;
        let message = match ended {
            Ok(outcome) => ExecutorMsg::LoopEnded(Ok(Box::new(outcome))),
            Err(panic) => ExecutorMsg::LoopEnded(Err(LoopPanic(panic_message(panic.as_ref())))),
        };
        // The actor may already be gone (stopped with its task); nothing to report then.
        let _ = myself.send_message(message);
    });
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::time::Duration;

    use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};

    use super::*;
    use crate::messages::ReportMsg;
    use crate::plan::PlannedSubtask;
    use crate::roles::RoleLimits;
    use hermes_core::limits::Limits;
    use hermes_core::llm::ScriptedLlm;

    /// Stands in for the planner: hands each report to the test (it hears
    /// what a node's run host hears).
    struct Collector;

    impl Actor for Collector {
        type Msg = ReportMsg;
        type State = UnboundedSender<ExecutorReport>;
        type Arguments = UnboundedSender<ExecutorReport>;

        async fn pre_start(
            &self,
            _myself: ActorRef<ReportMsg>,
            reports: Self::Arguments,
        ) -> Result<Self::State, ActorProcessingErr> {
            Ok(reports)
        }

        async fn handle(
            &self,
            _myself: ActorRef<ReportMsg>,
            ReportMsg::Report(report): ReportMsg,
            reports: &mut Self::State,
        ) -> Result<(), ActorProcessingErr> {
            let _ = reports.send(report);
            Ok(())
        }
    }

    #[tokio::test]
    async fn a_reported_subtask_leaves_no_journal_mirror_behind() {
        // The rounds travel in the report when asked for (a run host).
        let report = report_of_a_run(true).await;
        assert_eq!(report.outcome.journal.len(), 2);
        // Without, the outcome alone: rounds counted, none carried.
        let report = report_of_a_run(false).await;
        assert_eq!(report.outcome.rounds, 2);
        assert!(report.outcome.journal.is_empty());
    }

    /// Runs a two-round subtask in an executor and returns its report.
    async fn report_of_a_run(report_journal: bool) -> ExecutorReport {
        let (tx, mut reports) = unbounded_channel();
        let (collector, _) = Actor::spawn(None, Collector, tx).await.unwrap();
        let journals = TaskJournals::default();
        let answers = [
            r#"{"thought": "look first", "action": {"name": "no_such_tool", "args": {}}}"#,
            r#"{"thought": "done", "action": {"name": "finish", "args": {"result": "42"}}}"#,
        ];
        let args = ExecutorArgs {
            report_to: collector.get_derived(),
            task: 1,
            role: Arc::new(Role {
                name: "reader".into(),
                description: "Reads.".into(),
                system_prompt: "You read.".into(),
                tools: None,
                model: None,
                limits: RoleLimits::default(),
                steer: Default::default(),
                approve: Vec::new(),
                approve_after_untrusted: false,
                token_budget: None,
                call_budget: None,
            }),
            llm: Arc::new(ScriptedLlm::new(answers)),
            toolbox: Arc::new(Toolbox::new()),
            journals: Arc::clone(&journals),
            cancel: CancellationToken::new(),
            faults: Faults::default(),
            approvals: None,
            budget: None,
            memory: None,
            events: None,
            report_journal,
        };
        let (executor, _) = Actor::spawn(None, Executor, args).await.unwrap();
        let subtask = PlannedSubtask {
            id: "s1".into(),
            role: "reader".into(),
            goal: "Say 42.".into(),
            outputs: vec![],
            depends_on: vec![],
        };
        executor
            .send_message(ExecutorMsg::Run(Box::new(SubtaskRun {
                subtask,
                goal: "Say 42.".into(),
                limits: Limits::default(),
                history: vec![],
                attempt: 0,
                trace_context: HashMap::new(),
            })))
            .unwrap();
        let report = tokio::time::timeout(Duration::from_secs(10), reports.recv())
            .await
            .expect("the executor reports")
            .unwrap();
        assert_eq!(report.subtask, "s1");
        assert_eq!(report.outcome.result.as_deref(), Some("42"));
        // The mirror that held the rounds for a crash or a stuck loop is
        // gone once the report is sent.
        assert!(journals.get("s1").is_none(), "mirror left behind");
        executor.stop(None);
        collector.stop(None);
        report
    }
}
