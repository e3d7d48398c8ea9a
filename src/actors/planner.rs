//! The Planner actor: splits a task into subtasks, runs them on supervised
//! Executor actors as a DAG, restarts a crashed executor once from its
//! journal, replans failures, enforces the task deadline, and replies with
//! one report.
//!
//! It is a thin shell: the DAG rules live in `task.rs`, the model calls in
//! `planning.rs` (run in spawned tasks whose answers come back as messages,
//! so the mailbox never waits on a model), and each subtask's work in the
//! executor's Hermes loop.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use ractor::{Actor, ActorId, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent};
use tracing::{Instrument, Span};
use tracing_opentelemetry::OpenTelemetrySpanExt;

use super::events::{EventSink, PlanEvent};
use super::executor::{Executor, ExecutorArgs, SharedJournals};
use super::faults::Faults;
use super::messages::{
    ExecutorMsg, PlannerMsg, SubtaskOutcome, SubtaskRun, TaskId, TaskReport, TaskRequest,
};
use super::models::Models;
use super::plan::{final_messages, plan_messages, replan_messages, PlannedSubtask, ReplanContext};
use super::planning::{request_answer, request_plan, IdRules};
use super::roles::RoleRegistry;
use super::task::{AfterFailure, TaskRun};
use crate::agent::progress::progress_report;
use crate::agent::StopStatus;
use crate::journal::JournalEntry;
use crate::limits::Limits;
use crate::llm::Usage;
use crate::telemetry;
use crate::tools::Toolbox;

/// How long after the task deadline an executor's own clock stops its loop.
const DEADLINE_GRACE: Duration = Duration::from_secs(2);

/// How a planner is set up.
#[derive(Clone)]
pub struct PlannerConfig {
    /// Models for the planner and the roles.
    pub models: Models,
    /// Every tool; each role gets its subset.
    pub toolbox: Arc<Toolbox>,
    /// Executor roles.
    pub roles: RoleRegistry,
    /// Loop limits before role overrides.
    pub limits: Limits,
    /// Most subtasks running at once, per task.
    pub concurrency: usize,
    /// Most replans per task.
    pub max_replans: u32,
    /// Task-wide deadline when a request sets none.
    pub task_timeout: Duration,
    /// Progress events.
    pub events: Option<EventSink>,
    /// Injected executor faults (tests).
    pub faults: Faults,
}

struct Live {
    run: TaskRun,
    reply: Option<RpcReplyPort<TaskReport>>,
    deadline: tokio::time::Instant,
    /// The task's root span; every span of the task descends from it.
    span: Span,
    /// One open span per started subtask, closed when it ends.
    subtask_spans: HashMap<String, Span>,
}

impl Live {
    /// Closes a subtask's span, as failed when `error` is given.
    fn close_subtask(&mut self, id: &str, error: Option<&str>) {
        if let Some(span) = self.subtask_spans.remove(id) {
            if let Some(error) = error {
                telemetry::set_error(&span, error.to_string());
            }
        }
    }
}

struct Running {
    task: TaskId,
    subtask: String,
    actor: ActorRef<ExecutorMsg>,
}

/// The planner's state.
pub struct PlannerState {
    config: PlannerConfig,
    tasks: HashMap<TaskId, Live>,
    executors: HashMap<ActorId, Running>,
    journals: SharedJournals,
    next_task: TaskId,
}

/// Plans tasks and supervises their executors.
pub struct Planner;

impl Actor for Planner {
    type Msg = PlannerMsg;
    type State = PlannerState;
    type Arguments = PlannerConfig;

    async fn pre_start(
        &self,
        _myself: ActorRef<PlannerMsg>,
        config: PlannerConfig,
    ) -> Result<PlannerState, ActorProcessingErr> {
        Ok(PlannerState {
            config,
            tasks: HashMap::new(),
            executors: HashMap::new(),
            journals: Arc::default(),
            next_task: 1,
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<PlannerMsg>,
        message: PlannerMsg,
        state: &mut PlannerState,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            PlannerMsg::Submit { request, reply } => state.submit(&myself, request, reply),
            PlannerMsg::RegisterRole { role, reply } => {
                let names: Vec<&str> = state.config.toolbox.names();
                let _ = reply.send(
                    state
                        .config
                        .roles
                        .register(role, &names)
                        .map_err(|e| e.to_string()),
                );
            }
            PlannerMsg::ListRoles(reply) => {
                let _ = reply.send(state.config.roles.all());
            }
            PlannerMsg::Planned { task, plan, usage } => {
                let Some(live) = state.tasks.get_mut(&task) else {
                    return Ok(());
                };
                live.run.usage += usage;
                match plan {
                    Ok(subtasks) => {
                        state.emit(PlanEvent::Planned {
                            subtasks: subtasks.len(),
                        });
                        if let Some(live) = state.tasks.get_mut(&task) {
                            live.run.add_subtasks(subtasks);
                        }
                        state.advance(&myself, task).await;
                    }
                    Err(reason) => state.reply_error(task, reason),
                }
            }
            PlannerMsg::SubtaskFinished(outcome) => {
                state.stop_executor(outcome.task, &outcome.subtask);
                let Some(live) = state.tasks.get_mut(&outcome.task) else {
                    return Ok(());
                };
                live.close_subtask(&outcome.subtask, None);
                if live.run.finish(&outcome.subtask, &outcome.outcome) {
                    state.emit(PlanEvent::Finished {
                        id: outcome.subtask.clone(),
                        rounds: outcome.outcome.rounds,
                    });
                }
                state.advance(&myself, outcome.task).await;
            }
            PlannerMsg::SubtaskFailed(outcome) => {
                let task = outcome.task;
                state.stop_executor(task, &outcome.subtask);
                // A loop stopped by its clock at the task deadline is part of
                // the deadline, not a failure to replan.
                if state
                    .tasks
                    .get(&task)
                    .is_some_and(|live| tokio::time::Instant::now() >= live.deadline)
                {
                    state.on_deadline(task);
                    return Ok(());
                }
                state.on_failure(&myself, outcome);
                state.advance(&myself, task).await;
            }
            PlannerMsg::Replanned {
                task,
                failed,
                plan,
                usage,
            } => {
                let Some(live) = state.tasks.get_mut(&task) else {
                    return Ok(());
                };
                live.run.usage += usage;
                let event = match &plan {
                    Ok(subtasks) => PlanEvent::Replanned {
                        failed: failed.clone(),
                        new: subtasks.iter().map(|s| s.id.clone()).collect(),
                    },
                    Err(reason) => PlanEvent::ReplanFailed {
                        failed: failed.clone(),
                        reason: reason.clone(),
                    },
                };
                live.run.apply_replan(&failed, plan);
                state.emit(event);
                state.advance(&myself, task).await;
            }
            PlannerMsg::Answered {
                task,
                answer,
                usage,
            } => {
                let Some(mut live) = state.tasks.remove(&task) else {
                    return Ok(());
                };
                live.run.usage += usage;
                let result = answer.unwrap_or_else(|e| {
                    tracing::warn!(
                        "final answer not written ({e}); joining the subtask results instead"
                    );
                    joined_results(&live.run)
                });
                state.finish(live, Some(result));
            }
            PlannerMsg::Deadline { task } => state.on_deadline(task),
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<PlannerMsg>,
        event: SupervisionEvent,
        state: &mut PlannerState,
    ) -> Result<(), ActorProcessingErr> {
        // Never stop the planner because a child ended (ractor's default).
        match event {
            SupervisionEvent::ActorFailed(cell, error) => {
                if let Some(running) = state.executors.remove(&cell.get_id()) {
                    state.on_crash(&myself, running, error.to_string()).await;
                }
            }
            SupervisionEvent::ActorTerminated(cell, _, reason) => {
                // Executors are stopped by the planner after their outcome
                // arrived and are no longer tracked then; one still tracked
                // ended without reporting.
                if let Some(running) = state.executors.remove(&cell.get_id()) {
                    let reason = format!(
                        "executor stopped without reporting ({})",
                        reason.unwrap_or_default()
                    );
                    state.on_crash(&myself, running, reason).await;
                }
            }
            _ => {}
        }
        Ok(())
    }
}

impl PlannerState {
    fn emit(&self, event: PlanEvent) {
        tracing::info!("{event}");
        if let Some(sink) = &self.config.events {
            sink(&event);
        }
    }

    fn submit(
        &mut self,
        myself: &ActorRef<PlannerMsg>,
        request: TaskRequest,
        reply: RpcReplyPort<TaskReport>,
    ) {
        let id = self.next_task;
        self.next_task += 1;
        let timeout = request.timeout.unwrap_or(self.config.task_timeout);
        let run = TaskRun::new(
            id,
            request.task.clone(),
            self.config.concurrency,
            self.config.max_replans,
        );
        let deadline = tokio::time::Instant::now() + timeout;
        let span = tracing::info_span!(parent: None, "task", hermes.task_id = id as i64, hermes.task = %crate::text::clip(&request.task, 200));
        self.emit(PlanEvent::Submitted {
            trace_id: telemetry::trace_id(&span),
        });
        let plan_span = tracing::info_span!(parent: &span, "plan");
        self.tasks.insert(
            id,
            Live {
                run,
                reply: Some(reply),
                deadline,
                span,
                subtask_spans: HashMap::new(),
            },
        );
        let roles = self.config.roles.all();
        if roles.is_empty() {
            self.reply_error(
                id,
                "no executor roles are registered; add role files to the roles directory".into(),
            );
            return;
        }
        myself.send_after(timeout, move || PlannerMsg::Deadline { task: id });
        let llm = self.config.models.default_model();
        let temperature = self.config.limits.temperature;
        let planner = myself.clone();
        tokio::spawn(
            async move {
                let messages = plan_messages(&request.task, &roles);
                let (plan, usage) = request_plan(
                    llm.as_ref(),
                    messages,
                    &roles,
                    &IdRules::default(),
                    temperature,
                )
                .await;
                if let Err(e) = &plan {
                    telemetry::set_error(&Span::current(), e.clone());
                }
                let _ = planner.send_message(PlannerMsg::Planned {
                    task: id,
                    plan,
                    usage,
                });
            }
            .instrument(plan_span),
        );
    }

    /// Starts whatever may start; finalises the task when nothing is left.
    async fn advance(&mut self, myself: &ActorRef<PlannerMsg>, task: TaskId) {
        let Some(live) = self.tasks.get_mut(&task) else {
            return;
        };
        let ready = live.run.start_ready();
        for spec in ready {
            self.spawn_executor(myself, task, spec, Vec::new()).await;
        }
        let Some(live) = self.tasks.get_mut(&task) else {
            return;
        };
        live.run.skip_stuck();
        if live.run.is_settled() {
            self.finalise(myself, task);
        }
    }

    async fn spawn_executor(
        &mut self,
        myself: &ActorRef<PlannerMsg>,
        task: TaskId,
        spec: PlannedSubtask,
        history: Vec<JournalEntry>,
    ) {
        let Some(live) = self.tasks.get_mut(&task) else {
            return;
        };
        let subtask_span = live
            .subtask_spans
            .entry(spec.id.clone())
            .or_insert_with(|| {
                tracing::info_span!(parent: &live.span, "subtask", hermes.subtask_id = %spec.id, hermes.role = %spec.role, hermes.goal = %crate::text::clip(&spec.goal, 200))
            })
            .clone();
        let trace_context = telemetry::inject(&subtask_span);
        let Some(live) = self.tasks.get(&task) else {
            return;
        };
        let Some(role) = self.config.roles.get(&spec.role) else {
            let reason = format!("role `{}` is no longer registered", spec.role);
            self.fail_subtask(myself, task, &spec.id, 0, reason, Usage::default());
            return;
        };
        let mut limits = role.limits_over(&self.config.limits);
        // The task deadline cancels executors itself; the loop's own clock is
        // a safety net just behind it.
        let until_deadline = live
            .deadline
            .saturating_duration_since(tokio::time::Instant::now());
        limits.timeout = limits.timeout.min(until_deadline + DEADLINE_GRACE);
        let toolbox = match &role.tools {
            Some(names) => Arc::new(self.config.toolbox.subset(names)),
            None => Arc::clone(&self.config.toolbox),
        };
        let goal = live.run.executor_goal(&spec);
        let args = ExecutorArgs {
            planner: myself.clone(),
            llm: self.config.models.for_role(role.model.as_deref()),
            role: role.clone(),
            toolbox,
            journals: Arc::clone(&self.journals),
            faults: self.config.faults.clone(),
        };
        if history.is_empty() {
            self.emit(PlanEvent::Started {
                id: spec.id.clone(),
                role: spec.role.clone(),
                goal: spec.goal.clone(),
            });
        }
        let run = SubtaskRun {
            task,
            subtask: spec.clone(),
            goal,
            limits,
            history,
            trace_context,
        };
        match Actor::spawn_linked(None, Executor, args, myself.get_cell()).await {
            Ok((actor, _)) => {
                self.executors.insert(
                    actor.get_id(),
                    Running {
                        task,
                        subtask: spec.id.clone(),
                        actor: actor.clone(),
                    },
                );
                if let Err(e) = actor.send_message(ExecutorMsg::Run(Box::new(run))) {
                    tracing::warn!("executor for {} did not take its run: {e}", spec.id);
                }
            }
            Err(e) => self.fail_subtask(
                myself,
                task,
                &spec.id,
                0,
                format!("executor could not start: {e}"),
                Usage::default(),
            ),
        }
    }

    fn stop_executor(&mut self, task: TaskId, subtask: &str) {
        let id = self
            .executors
            .iter()
            .find(|(_, r)| r.task == task && r.subtask == subtask)
            .map(|(id, _)| *id);
        if let Some(running) = id.and_then(|id| self.executors.remove(&id)) {
            running.actor.stop(Some("subtask ended".into()));
        }
    }

    fn on_failure(&mut self, myself: &ActorRef<PlannerMsg>, outcome: SubtaskOutcome) {
        let reason = match outcome.outcome.status {
            StopStatus::Error => format!(
                "error: {}",
                outcome.outcome.error.clone().unwrap_or_default()
            ),
            other => format!(
                "stopped by the {} guard after {} round(s)",
                other.as_str(),
                outcome.outcome.rounds
            ),
        };
        let o = outcome.outcome;
        self.fail_subtask(
            myself,
            outcome.task,
            &outcome.subtask,
            o.rounds,
            format!("{reason}\n{}", o.progress),
            o.usage,
        );
    }

    /// Records a failure and starts a replan or gives up on the subtask.
    fn fail_subtask(
        &mut self,
        myself: &ActorRef<PlannerMsg>,
        task: TaskId,
        id: &str,
        rounds: u32,
        progress: String,
        usage: Usage,
    ) {
        let Some(live) = self.tasks.get_mut(&task) else {
            return;
        };
        let first_line = progress.lines().next().unwrap_or_default().to_string();
        live.close_subtask(id, Some(&first_line));
        let Some(after) = live.run.fail(id, rounds, progress, usage) else {
            return;
        };
        self.emit(PlanEvent::Failed {
            id: id.to_string(),
            reason: first_line,
        });
        if after == AfterFailure::GiveUp {
            return;
        }
        let Some(live) = self.tasks.get(&task) else {
            return;
        };
        let Some(failed) = live.run.slot(id) else {
            return;
        };
        let dependents = live.run.dependents(id);
        let replaced: HashSet<String> = dependents
            .iter()
            .map(|s| s.id.clone())
            .chain([id.to_string()])
            .collect();
        let ids = IdRules {
            settled: live.run.settled_ids(&replaced),
            taken: live.run.all_ids(),
        };
        let context = ReplanContext {
            task: &live.run.task,
            completed: live.run.results(),
            failed: &failed.spec,
            progress: failed.progress.as_deref().unwrap_or_default(),
            dependents,
        };
        let roles = self.config.roles.all();
        let messages = replan_messages(&context, &roles);
        let llm = self.config.models.default_model();
        let temperature = self.config.limits.temperature;
        let planner = myself.clone();
        let failed = id.to_string();
        let replan_span =
            tracing::info_span!(parent: &live.span, "replan", hermes.failed_subtask = %failed);
        tokio::spawn(
            async move {
                let (plan, usage) =
                    request_plan(llm.as_ref(), messages, &roles, &ids, temperature).await;
                if let Err(e) = &plan {
                    telemetry::set_error(&Span::current(), e.clone());
                }
                let _ = planner.send_message(PlannerMsg::Replanned {
                    task,
                    failed,
                    plan,
                    usage,
                });
            }
            .instrument(replan_span),
        );
    }

    /// An executor crashed: restart it once from its journal, then treat a
    /// second crash as a failed subtask.
    async fn on_crash(&mut self, myself: &ActorRef<PlannerMsg>, running: Running, error: String) {
        let key = (running.task, running.subtask.clone());
        let history = self
            .journals
            .get(&key)
            .map(|h| h.clone())
            .unwrap_or_default();
        let Some(live) = self.tasks.get_mut(&running.task) else {
            return;
        };
        let Some(spec) = live.run.slot(&running.subtask).map(|s| s.spec.clone()) else {
            return;
        };
        // The crash itself, as a failed span under the subtask.
        if let Some(subtask_span) = live.subtask_spans.get(&spec.id) {
            let crash = tracing::info_span!(parent: subtask_span, "executor.crash", hermes.subtask_id = %spec.id, hermes.after_round = history.len() as i64);
            telemetry::set_error(&crash, error.clone());
        }
        if live.run.restart(&running.subtask) {
            self.emit(PlanEvent::Restarted {
                id: spec.id.clone(),
                after_round: history.len(),
            });
            self.spawn_executor(myself, running.task, spec, history)
                .await;
            return;
        }
        let goal = live.run.executor_goal(&spec);
        let elapsed = live.run.started.elapsed();
        let report = progress_report(&goal, StopStatus::Error, &history, elapsed, Some(&error));
        let usage = history.iter().map(|e| e.tokens).sum();
        let progress = format!("crashed again after a restart: {error}\n{report}");
        self.fail_subtask(
            myself,
            running.task,
            &running.subtask,
            history.len() as u32,
            progress,
            usage,
        );
        self.advance(myself, running.task).await;
    }

    fn on_deadline(&mut self, task: TaskId) {
        let Some(mut live) = self.tasks.remove(&task) else {
            return;
        };
        telemetry::set_error(&live.span, "the task deadline passed");
        for id in live.run.time_out() {
            self.stop_executor(task, &id);
            live.close_subtask(&id, Some("cancelled by the task deadline"));
            let history = self
                .journals
                .get(&(task, id.clone()))
                .map(|h| h.clone())
                .unwrap_or_default();
            let goal = live
                .run
                .slot(&id)
                .map(|s| live.run.executor_goal(&s.spec))
                .unwrap_or_default();
            let report = progress_report(
                &goal,
                StopStatus::Timeout,
                &history,
                live.run.started.elapsed(),
                None,
            );
            let usage = history.iter().map(|e| e.tokens).sum();
            live.run
                .note_cancelled(&id, history.len() as u32, report, usage);
            self.emit(PlanEvent::Cancelled { id });
        }
        let partial = joined_results(&live.run);
        self.finish(live, Some(partial).filter(|p| !p.is_empty()));
    }

    /// Everything has ended: write the answer (one model call, or the single
    /// result passed through) or report the partial state.
    fn finalise(&mut self, myself: &ActorRef<PlannerMsg>, task: TaskId) {
        let Some(live) = self.tasks.get_mut(&task) else {
            return;
        };
        if live.run.status() != "finished" {
            let Some(live) = self.tasks.remove(&task) else {
                return;
            };
            let partial = joined_results(&live.run);
            self.finish(live, Some(partial).filter(|p| !p.is_empty()));
            return;
        }
        let results = live.run.results();
        if results.len() == 1 {
            let result = results[0].1.to_string();
            let Some(live) = self.tasks.remove(&task) else {
                return;
            };
            self.finish(live, Some(result));
            return;
        }
        let messages = final_messages(&live.run.task, &results);
        let llm = self.config.models.default_model();
        let temperature = self.config.limits.temperature;
        let planner = myself.clone();
        let answer_span = tracing::info_span!(parent: &live.span, "answer");
        tokio::spawn(
            async move {
                let (answer, usage) = request_answer(llm.as_ref(), messages, temperature).await;
                let _ = planner.send_message(PlannerMsg::Answered {
                    task,
                    answer,
                    usage,
                });
            }
            .instrument(answer_span),
        );
    }

    fn finish(&mut self, live: Live, result: Option<String>) {
        let report = live.run.report(result, None);
        self.reply(live, report);
    }

    fn reply_error(&mut self, task: TaskId, error: String) {
        let Some(live) = self.tasks.remove(&task) else {
            return;
        };
        let report = live.run.report(None, Some(error));
        self.reply(live, report);
    }

    /// Sends the report and closes the task's spans.
    fn reply(&mut self, mut live: Live, mut report: TaskReport) {
        self.journals.retain(|(task, _), _| *task != live.run.id);
        for (_, span) in live.subtask_spans.drain() {
            telemetry::set_error(&span, "the task ended before this subtask");
        }
        live.span
            .set_attribute("hermes.status", report.status.clone());
        live.span
            .set_attribute("hermes.replans", i64::from(report.replans));
        live.span.set_attribute(
            "gen_ai.usage.input_tokens",
            report.usage.prompt_tokens as i64,
        );
        live.span.set_attribute(
            "gen_ai.usage.output_tokens",
            report.usage.completion_tokens as i64,
        );
        if report.status != "finished" {
            let why = report
                .error
                .clone()
                .unwrap_or_else(|| format!("task {}", report.status));
            telemetry::set_error(&live.span, why);
        }
        report.trace_id = telemetry::trace_id(&live.span);
        if let Some(reply) = live.reply.take() {
            let _ = reply.send(report);
        }
    }
}

/// The finished subtasks' results, labelled, for partial reports.
fn joined_results(run: &TaskRun) -> String {
    run.results()
        .iter()
        .map(|(s, r)| format!("[{}] {}", s.id, r))
        .collect::<Vec<_>>()
        .join("\n\n")
}
