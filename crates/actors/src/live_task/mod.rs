//! One live task: everything a submitted task owns while it runs, and one
//! method per thing that can happen to it.
//!
//! A `LiveTask` owns its DAG state (`dag/`), its spans, its reply port,
//! its deadline, its cancellation token and its executors. The planner
//! actor routes each [`TaskEvent`] (and each executor crash) to the task it
//! belongs to and does nothing else; as tokio's mini-redis splits its
//! `Listener` from each connection's `Handler`, the planner is the listener
//! and this is the handler. Model calls run off the mailbox through
//! [`ask_then_tell`]; their answers come back as events. A failed subtask's
//! replan is `replan.rs`, the deadline `deadline.rs`, executors
//! `executors.rs`, the budget `budget.rs` and the report `ending.rs`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use ractor::{ActorId, ActorRef, RpcReplyPort};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Span;

mod budget;

use budget::{budgeted, watch_budget};
mod deadline;
mod ending;
mod executors;
mod replan;

use super::config::PlannerConfig;
use super::dag::Dag;
use super::events::PlanEvent;
use super::executor::TaskJournals;
use super::messages::{ExecutorMsg, PlannerMsg, Resume, TaskEvent, TaskId, TaskRequest};
use super::model_call::ask_then_tell;
use super::plan::{self, AnswerError, Asked, IdRules, PlanError, PlannedSubtask};
use super::report::TaskReport;
use hermes_core::agent::{Outcome, StopStatus};
use hermes_core::journal::JournalEntry;
use hermes_core::llm::budget::Budget;
use hermes_core::telemetry;
use hermes_core::text::clip;

/// How long after the task deadline an executor's own clock stops its loop,
/// and how long cancelled executors get to report before the task ends
/// without them.
pub const DEADLINE_GRACE: Duration = Duration::from_secs(2);

/// What a task's methods need from the planner that hosts it.
pub struct Cx<'a> {
    /// The planner, parent of every executor and target of every event.
    pub myself: &'a ActorRef<PlannerMsg>,
    /// Models, tools, roles, limits and events.
    pub config: &'a PlannerConfig,
    /// Which task each live executor works for (the planner's routing table).
    pub owners: &'a mut HashMap<ActorId, TaskId>,
}

impl Cx<'_> {
    fn emit(&self, event: PlanEvent) {
        tracing::info!("{event}");
        if let Some(sink) = &self.config.events {
            sink(&event);
        }
    }
}

struct Running {
    actor: ActorRef<ExecutorMsg>,
    cancel: CancellationToken,
}

/// One submitted task, from its plan to its report.
pub struct LiveTask {
    id: TaskId,
    dag: Dag,
    reply: Option<RpcReplyPort<TaskReport>>,
    deadline: Instant,
    cancel: CancellationToken,
    /// The task's root span; every span of the task descends from it.
    span: Span,
    /// One open span per started subtask, closed when it ends.
    subtask_spans: HashMap<String, Span>,
    executors: HashMap<String, Running>,
    journals: TaskJournals,
    /// Rounds a resumed task's interrupted subtasks restart from.
    resumed: HashMap<String, Vec<JournalEntry>>,
    /// The task's token and call budget, when capped.
    budget: Option<Arc<Budget>>,
    answering: bool,
}

impl LiveTask {
    /// Accepts a task: opens its trace, arms its deadline, asks for a plan.
    pub fn start(
        cx: &mut Cx<'_>,
        id: TaskId,
        request: TaskRequest,
        reply: RpcReplyPort<TaskReport>,
        cancel: CancellationToken,
    ) -> Self {
        let config = cx.config;
        let timeout = request.timeout.unwrap_or(config.task_timeout);
        let span = tracing::info_span!(parent: None, "task", hermes.task_id = id as i64, hermes.task = %clip(&request.task, 200));
        cx.emit(PlanEvent::Submitted {
            trace_id: telemetry::trace_id(&span),
        });
        cx.myself
            .send_after(timeout, move || PlannerMsg::Task(id, TaskEvent::Deadline));
        let budget = request.budget.is_set().then(|| Budget::new(request.budget));
        if let Some(budget) = &budget {
            watch_budget(cx.myself.clone(), id, budget.spent(), cancel.clone());
        }
        if let Some(resume) = request.resume {
            // Already planned: no model call; the plan comes back through
            // the mailbox like a fresh one.
            let resume_span = tracing::info_span!(parent: &span, "resume");
            ask_then_tell(
                cx.myself,
                id,
                resume_span,
                async move { TaskEvent::Resumed(resume) },
                TaskEvent::plan_failed,
            );
            return Self::new(cx, id, request.task, timeout, reply, cancel, span)
                .with_budget(budget);
        }
        let roles = config.roles.all();
        let routed =
            plan::one_executor_if_on(&config.limits.steer, &request.task, &roles, &config.toolbox);
        if let Some((subtasks, line)) = routed {
            // One deliverable: one executor, and no planning call to wait for.
            let plan_span = tracing::info_span!(parent: &span, "plan");
            ask_then_tell(
                cx.myself,
                id,
                plan_span,
                async move {
                    tracing::info!("plan routed: {line}");
                    TaskEvent::Planned(Asked {
                        answer: Ok(subtasks),
                        usage: Default::default(),
                    })
                },
                TaskEvent::plan_failed,
            );
            return Self::new(cx, id, request.task, timeout, reply, cancel, span)
                .with_budget(budget);
        }
        let llm = budgeted(config.models.default_model(), budget.as_ref());
        let temperature = config.limits.temperature;
        let steers = config.limits.steer.clone();
        let messages = plan::plan_messages(&request.task, &roles);
        let plan_span = tracing::info_span!(parent: &span, "plan");
        let planning = async move {
            let mut asked = plan::request_plan(
                llm.as_ref(),
                messages,
                &roles,
                &IdRules::default(),
                temperature,
            )
            .await;
            plan::merge_chains_if_on(&steers, &mut asked, &roles);
            if let Err(e) = &asked.answer {
                telemetry::set_error(&Span::current(), e.to_string());
            }
            TaskEvent::Planned(asked)
        };
        ask_then_tell(cx.myself, id, plan_span, planning, TaskEvent::plan_failed);
        Self::new(cx, id, request.task, timeout, reply, cancel, span).with_budget(budget)
    }

    fn new(
        cx: &Cx<'_>,
        id: TaskId,
        task: String,
        timeout: Duration,
        reply: RpcReplyPort<TaskReport>,
        cancel: CancellationToken,
        span: Span,
    ) -> Self {
        Self {
            budget: None,
            id,
            dag: Dag::new(task, cx.config.concurrency, cx.config.max_replans),
            reply: Some(reply),
            deadline: Instant::now() + timeout,
            cancel,
            span,
            subtask_spans: HashMap::new(),
            executors: HashMap::new(),
            journals: TaskJournals::default(),
            resumed: HashMap::new(),
            answering: false,
        }
    }

    /// Whether the report was sent; the planner forgets the task then.
    pub fn is_done(&self) -> bool {
        self.reply.is_none()
    }

    /// Handles one event for this task.
    pub async fn on_event(&mut self, cx: &mut Cx<'_>, event: TaskEvent) {
        match event {
            TaskEvent::Planned(asked) => self.on_planned(cx, asked).await,
            TaskEvent::Resumed(resume) => self.on_resumed(cx, resume).await,
            TaskEvent::SubtaskEnded { subtask, outcome } => {
                self.on_subtask_ended(cx, &subtask, *outcome).await
            }
            TaskEvent::Replanned { failed, plan } => self.on_replanned(cx, &failed, plan).await,
            TaskEvent::Answered(asked) => self.on_answered(asked),
            TaskEvent::Deadline => self.on_deadline(cx).await,
            TaskEvent::DeadlineGraceOver => self.on_deadline_grace_over(cx).await,
            TaskEvent::BudgetSpent => self.on_budget_spent(cx).await,
        }
    }

    async fn on_planned(&mut self, cx: &mut Cx<'_>, asked: Asked<Vec<PlannedSubtask>, PlanError>) {
        self.dag.usage += asked.usage;
        self.dag.planner_usage += asked.usage;
        match asked.answer {
            Ok(subtasks) => {
                cx.emit(PlanEvent::Planned {
                    subtasks: subtasks.clone(),
                });
                self.dag.add_subtasks(subtasks);
                self.advance(cx).await;
            }
            Err(e) => self.reply_error(e.to_string()),
        }
    }

    /// A resumed task: its plan as it stood, the finished subtasks'
    /// results kept (they are not run again), the rest run as planned.
    async fn on_resumed(&mut self, cx: &mut Cx<'_>, resume: Resume) {
        self.dag.add_subtasks(resume.subtasks);
        for (id, result, rounds) in resume.finished {
            self.dag.resume_finished(&id, result, rounds);
        }
        self.resumed = resume.running.into_iter().collect();
        self.advance(cx).await;
    }

    async fn on_subtask_ended(&mut self, cx: &mut Cx<'_>, id: &str, mut outcome: Outcome) {
        self.stop_executor(cx, id);
        // A subtask is finished when the files its plan names exist, not
        // when its model says so.
        if outcome.is_finished() {
            let missing = self.missing_outputs(cx, id);
            if !missing.is_empty() {
                outcome.status = StopStatus::Incomplete;
                outcome.missing = missing;
            }
        }
        // A loop stopped by its own clock at the deadline is part of the
        // deadline, not a failure to replan.
        if !self.dag.timed_out && Instant::now() >= self.deadline {
            self.on_deadline(cx).await;
        }
        if outcome.is_finished() {
            self.on_subtask_finished(cx, id, &outcome);
        } else if self.dag.timed_out || outcome.status == StopStatus::Cancelled {
            self.on_subtask_cancelled(cx, id, outcome);
        } else {
            self.on_subtask_failed(cx, id, outcome);
        }
        self.advance(cx).await;
    }

    fn on_subtask_finished(&mut self, cx: &mut Cx<'_>, id: &str, outcome: &Outcome) {
        self.close_subtask_span(id, None);
        if self.dag.finish(id, outcome) {
            cx.emit(PlanEvent::Finished {
                id: id.to_string(),
                rounds: outcome.rounds,
                result: outcome.result.clone().unwrap_or_default(),
            });
        }
    }

    fn on_subtask_cancelled(&mut self, cx: &mut Cx<'_>, id: &str, outcome: Outcome) {
        self.close_subtask_span(id, Some("cancelled by the task deadline"));
        let progress = format!(
            "timeout: the task deadline passed while it was running\n{}",
            outcome.progress
        );
        if self.dag.cancel(id, outcome.rounds, progress, outcome.usage) {
            cx.emit(PlanEvent::Cancelled { id: id.to_string() });
        }
    }

    fn on_answered(&mut self, asked: Asked<String, AnswerError>) {
        self.dag.usage += asked.usage;
        self.dag.planner_usage += asked.usage;
        let result = asked.answer.unwrap_or_else(|e| {
            tracing::warn!("{e}; joining the subtask results instead");
            self.joined_results()
        });
        self.finish(Some(result));
    }

    /// The planner is stopping: the task ends now, in error.
    pub fn abort(&mut self, reason: &str) {
        self.reply_error(reason.to_string());
    }

    /// Starts whatever may start; finalises the task when nothing is left.
    async fn advance(&mut self, cx: &mut Cx<'_>) {
        if self.is_done() {
            return;
        }
        for spec in self.dag.start_ready() {
            let history = self.resumed.remove(&spec.id).unwrap_or_default();
            if !history.is_empty() {
                cx.emit(PlanEvent::Restarted {
                    id: spec.id.clone(),
                    after_round: history.len(),
                });
            }
            self.spawn_executor(cx, spec, history).await;
        }
        self.dag.skip_stuck();
        if self.dag.is_settled() && !self.answering {
            self.finalise(cx);
        }
    }

    fn close_subtask_span(&mut self, id: &str, error: Option<&str>) {
        if let (Some(span), Some(error)) = (self.subtask_spans.remove(id), error) {
            telemetry::set_error(&span, error.to_string());
        }
    }
}
