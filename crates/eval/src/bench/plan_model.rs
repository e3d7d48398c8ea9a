//! The model `hermes bench plan` talks to: in-process, with a fixed
//! latency, answering the planner's prompt with N independent subtasks
//! over the given roles, each executor in 2 or 3 rounds (reads, then
//! finish), and the final-answer prompt with one line. It records when each
//! of its calls started and ended, so the benchmark can tell the time spent
//! waiting on the model from the rest.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::json;

use super::model::{asked_round, decision};
use hermes_core::llm::scripted::scripted_response;
use hermes_core::llm::{Author, ChatRequest, ChatResponse, Llm, LlmError};

/// What a call was for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallKind {
    /// The planner asking for the plan of task `t`.
    Plan(usize),
    /// An executor's decision, for job `k` of task `t`: `Step(t, k)`.
    Step(usize, usize),
    /// The planner asking for the final answer of task `t`.
    Answer(usize),
    /// Anything else (a replan): answered with an error.
    Other,
}

/// One call: what it was for, and when it started and ended.
#[derive(Debug, Clone, Copy)]
pub struct Call {
    /// What it was for.
    pub kind: CallKind,
    /// When the request arrived.
    pub start: Instant,
    /// When the answer was returned.
    pub end: Instant,
}

/// The scripted planner and executor model.
pub struct PlanModel {
    latency: Duration,
    subtasks: usize,
    roles: Vec<String>,
    calls: Mutex<Vec<Call>>,
}

impl PlanModel {
    /// A model answering after `latency`, planning `subtasks` subtasks over
    /// `roles` in turn.
    pub fn new(latency: Duration, subtasks: usize, roles: Vec<String>) -> Self {
        Self {
            latency,
            subtasks,
            roles,
            calls: Mutex::new(Vec::new()),
        }
    }

    /// Every call so far, in the order they ended.
    pub fn calls(&self) -> Vec<Call> {
        self.calls.lock().map(|c| c.clone()).unwrap_or_default()
    }

    /// Rounds subtask (job) `k` takes: 2 or 3 in turn.
    pub fn rounds_of(k: usize) -> u32 {
        2 + (k % 2) as u32
    }

    /// The text of task `t` (the benchmark submits tasks 0, 1, ...): the
    /// model tells tasks apart by the `(task t)` in it.
    pub fn task(t: usize) -> String {
        format!("Read every file, one subtask at a time (task {t}).")
    }

    /// The plan of task `t`: `subtasks` independent subtasks, roles in turn.
    fn plan(&self, t: usize) -> String {
        let subtasks: Vec<_> = (0..self.subtasks)
            .map(|k| {
                let role = self.roles.get(k % self.roles.len().max(1));
                json!({
                    "id": format!("s{k}"),
                    "role": role.map_or("", String::as_str),
                    "goal": format!("Read the files in turn and report them (task {t} job {k})."),
                    "depends_on": []
                })
            })
            .collect();
        json!({ "subtasks": subtasks }).to_string()
    }
}

/// What `request` asks for, by its system prompt and the task (and, for
/// an executor, the job) named in its last user turn.
pub fn kind_of(request: &ChatRequest) -> CallKind {
    let system = request
        .messages
        .first()
        .filter(|m| m.role == Author::System)
        .map_or("", |m| m.content.as_str());
    let user = request
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Author::User)
        .map_or("", |m| m.content.as_str());
    let task = number_after(user, "(task ").unwrap_or(0);
    if system.contains("revising a plan") {
        CallKind::Other
    } else if system.contains("You are the planner") {
        CallKind::Plan(task)
    } else if system.contains("final answer of a team") {
        CallKind::Answer(task)
    } else {
        number_after(user, " job ").map_or(CallKind::Other, |job| CallKind::Step(task, job))
    }
}

/// The number right after the last `marker` in `text`.
fn number_after(text: &str, marker: &str) -> Option<usize> {
    let (_, tail) = text.rsplit_once(marker)?;
    let digits = tail
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(tail.len());
    tail[..digits].parse().ok()
}

/// A model behind HTTP (the scripted server of `hermes bench serve`, which
/// plans from the task's `[bench-plan N ROLES]` marker), with each call's
/// kind and times recorded as [`PlanModel`] records its own, so that the
/// benchmark reads the same timings over the wire.
pub struct RecordedLlm {
    inner: std::sync::Arc<dyn Llm>,
    calls: Mutex<Vec<Call>>,
}

impl RecordedLlm {
    /// Records the calls made to `inner`.
    pub fn new(inner: std::sync::Arc<dyn Llm>) -> Self {
        Self {
            inner,
            calls: Mutex::new(Vec::new()),
        }
    }

    /// Every call so far, in the order they ended.
    pub fn calls(&self) -> Vec<Call> {
        self.calls.lock().map(|c| c.clone()).unwrap_or_default()
    }
}

#[async_trait]
impl Llm for RecordedLlm {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let start = Instant::now();
        let answer = self.inner.chat(request).await;
        if let Ok(mut calls) = self.calls.lock() {
            calls.push(Call {
                kind: kind_of(request),
                start,
                end: Instant::now(),
            });
        }
        answer
    }

    fn model(&self) -> &str {
        self.inner.model()
    }
}

#[async_trait]
impl Llm for PlanModel {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let start = Instant::now();
        if !self.latency.is_zero() {
            tokio::time::sleep(self.latency).await;
        }
        let kind = kind_of(request);
        let answer = match kind {
            CallKind::Plan(t) => Ok(self.plan(t)),
            CallKind::Step(_, k) => Ok(decision(asked_round(request), Self::rounds_of(k))),
            CallKind::Answer(_) => Ok(format!("All {} jobs are done.", self.subtasks)),
            CallKind::Other => Err(LlmError::Other(
                "the bench model answers plans, executor steps and the final answer only".into(),
            )),
        };
        if let Ok(mut calls) = self.calls.lock() {
            calls.push(Call {
                kind,
                start,
                end: Instant::now(),
            });
        }
        answer.map(|content| scripted_response(request, content))
    }

    fn model(&self) -> &str {
        "bench"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hermes_core::llm::ChatMessage;

    fn request(system: &str, user: &str) -> ChatRequest {
        ChatRequest {
            messages: vec![ChatMessage::system(system), ChatMessage::user(user)],
            temperature: 0.0,
            max_tokens: 10,
            json: true,
            schema: None,
            seed: None,
        }
    }

    #[test]
    fn calls_are_told_apart_by_their_prompts() {
        assert_eq!(
            kind_of(&request("You are the planner of a team", "Task: t")),
            CallKind::Plan(0)
        );
        assert_eq!(
            kind_of(&request(
                "You are the planner of a team",
                &format!("Task: {}", PlanModel::task(3))
            )),
            CallKind::Plan(3)
        );
        assert_eq!(
            kind_of(&request(
                "You write the final answer of a team",
                "x (task 2)"
            )),
            CallKind::Answer(2)
        );
        assert_eq!(
            kind_of(&request(
                "You read.",
                "Goal: Read the files (task 4 job 12).\n\nRound 1 of 20."
            )),
            CallKind::Step(4, 12)
        );
        assert_eq!(kind_of(&request("You read.", "no job")), CallKind::Other);
    }

    #[tokio::test]
    async fn it_plans_over_the_roles_then_finishes_each_job_in_its_rounds() {
        let roles = vec!["a".to_string(), "b".to_string()];
        let model = PlanModel::new(Duration::ZERO, 3, roles);
        let plan = model
            .chat(&request("You are the planner", "Task: t (task 0)"))
            .await
            .unwrap();
        let plan: serde_json::Value = serde_json::from_str(&plan.content).unwrap();
        assert_eq!(plan["subtasks"].as_array().unwrap().len(), 3);
        assert_eq!(plan["subtasks"][2]["role"], "a");
        let step = |round: u32| {
            request(
                "r",
                &format!("Goal: g (task 0 job 1).\n\nRound {round} of 20."),
            )
        };
        assert!(model
            .chat(&step(2))
            .await
            .unwrap()
            .content
            .contains("read_file"));
        assert!(model
            .chat(&step(3))
            .await
            .unwrap()
            .content
            .contains("finish"));
        assert_eq!(model.calls().len(), 3);
    }
}
