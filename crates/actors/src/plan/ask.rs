//! The planner's model calls, as plain async functions: make a plan, revise
//! one after a failure, write the final answer. A plan is validated when it
//! comes back and sent back once with its errors, so the caller only ever
//! receives a valid plan or a typed reason why there is none.

use std::collections::HashSet;

use super::prompts::plan_errors_message;
use super::repair::repair_plan;
use super::subtask::{parse_plan, PlannedSubtask};
use super::validate::{rename_clashes, validate_plan};
use crate::roles::Role;
use hermes_core::llm::{traced_chat, ChatMessage, ChatRequest, Llm, LlmError, Usage};

/// `max_tokens` for plans and answers, which are longer than decisions.
const PLAN_MAX_TOKENS: u32 = 2048;

/// Why no plan came back.
#[derive(Debug, Clone, thiserror::Error)]
pub enum PlanError {
    /// No executor role is registered, so nothing could run a subtask.
    #[error("no executor roles are registered; add role files (*.toml) to the roles directory, or call Hermes::register_role")]
    NoRoles,
    /// The model could not be reached or failed.
    #[error("the model could not be asked for a plan: {0}")]
    Model(String),
    /// The model's plans were invalid twice.
    #[error("no valid plan after one re-ask: {}", .0.join("; "))]
    Invalid(Vec<String>),
}

/// Why no final answer was written (the subtask results are joined instead).
#[derive(Debug, Clone, thiserror::Error)]
pub enum AnswerError {
    /// The model could not be reached or failed.
    #[error("the model could not write the final answer: {0}")]
    Model(String),
    /// The model answered with nothing.
    #[error("the model returned an empty answer")]
    Empty,
}

impl From<LlmError> for PlanError {
    fn from(e: LlmError) -> Self {
        PlanError::Model(e.to_string())
    }
}

/// Ids a plan may depend on and ids it may not reuse; during a replan,
/// the subtask that failed, which may not come back unchanged.
#[derive(Debug, Clone, Default)]
pub struct IdRules {
    /// Ids outside the plan that may be depended on.
    pub settled: HashSet<String>,
    /// Ids already used, which new subtasks must not take.
    pub taken: HashSet<String>,
    /// The failed subtask a revised plan replaces, and why it failed.
    pub failed: Option<(PlannedSubtask, String)>,
    /// The subtasks that finished: a revised plan's subtask that is one of
    /// them again is left out, and what depended on it depends on the
    /// finished one (completed work is never redone).
    pub completed: Vec<PlannedSubtask>,
}

/// What [`request_plan`] adds to a repeated subtask's goal.
const EARLIER_ATTEMPT: &str = "\n(An earlier attempt at this failed: ";

/// Whether `a` and `b` are the same work: same role, same goal up to case,
/// spacing, a final full stop and the note on an earlier attempt.
fn same_work(a: &PlannedSubtask, b: &PlannedSubtask) -> bool {
    let norm = |goal: &str| {
        let goal = goal.split(EARLIER_ATTEMPT).next().unwrap_or_default();
        goal.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .trim_end_matches(['.', '。'])
            .to_lowercase()
    };
    a.role == b.role && norm(&a.goal) == norm(&b.goal)
}

/// Indices of the subtasks of a revised plan that repeat the failed one.
fn repeats(subtasks: &[PlannedSubtask], ids: &IdRules) -> Vec<usize> {
    let Some((failed, _)) = &ids.failed else {
        return Vec::new();
    };
    (0..subtasks.len())
        .filter(|&i| same_work(&subtasks[i], failed))
        .collect()
}

/// Leaves out of a revised plan each subtask that is the same work as a
/// finished one (`completed`), pointing what depended on it at the
/// finished subtask; returns one line per subtask left out. A plan that
/// would be left with nothing is left as it is.
fn drop_redone(subtasks: &mut Vec<PlannedSubtask>, completed: &[PlannedSubtask]) -> Vec<String> {
    let done = |s: &PlannedSubtask| completed.iter().find(|c| same_work(s, c));
    if subtasks.iter().all(|s| done(s).is_some()) {
        return Vec::new();
    }
    let mut lines = Vec::new();
    let mut moved: Vec<(String, String)> = Vec::new();
    subtasks.retain(|s| match done(s) {
        Some(finished) => {
            lines.push(format!(
                "subtask `{}` is finished subtask `{}` again; its result is kept instead",
                s.id, finished.id
            ));
            moved.push((s.id.clone(), finished.id.clone()));
            false
        }
        None => true,
    });
    for s in subtasks.iter_mut() {
        let mut deps: Vec<String> = Vec::with_capacity(s.depends_on.len());
        for dep in s.depends_on.drain(..) {
            let dep = match moved.iter().find(|(gone, _)| *gone == dep) {
                Some((_, finished)) => finished.clone(),
                None => dep,
            };
            if !deps.contains(&dep) {
                deps.push(dep);
            }
        }
        s.depends_on = deps;
    }
    lines
}

/// A model call's answer and the tokens it cost (also when it failed).
#[derive(Debug, Clone)]
pub struct Asked<T, E> {
    /// The answer, or why there is none.
    pub answer: Result<T, E>,
    /// Tokens of every call made.
    pub usage: Usage,
}

/// Asks for a plan (`messages` from `plan_messages` or `replan_messages`),
/// validates it, and re-asks once with the errors.
pub async fn request_plan(
    llm: &dyn Llm,
    mut messages: Vec<ChatMessage>,
    roles: &[Role],
    ids: &IdRules,
    temperature: f32,
) -> Asked<Vec<PlannedSubtask>, PlanError> {
    let mut usage = Usage::default();
    if roles.is_empty() {
        return Asked {
            answer: Err(PlanError::NoRoles),
            usage,
        };
    }
    let schema = std::sync::Arc::new(plan_schema(roles));
    let mut errors = Vec::new();
    for attempt in 0..2 {
        let request = ChatRequest {
            messages: messages.clone(),
            temperature,
            max_tokens: PLAN_MAX_TOKENS,
            json: true,
            schema: Some(std::sync::Arc::clone(&schema)),
            seed: None,
        };
        let reply = match traced_chat(llm, &request).await {
            Ok(reply) => reply,
            Err(e) => {
                return Asked {
                    answer: Err(e.into()),
                    usage,
                }
            }
        };
        usage += reply.usage;
        errors = match parse_plan(&reply.content) {
            Ok(mut subtasks) => {
                rename_clashes(&mut subtasks, &ids.taken);
                for repair in repair_plan(&mut subtasks, roles) {
                    tracing::info!(attempt, "plan repaired: {repair}");
                }
                let mut errors = validate_plan(&subtasks, roles, &ids.settled, &ids.taken);
                let repeated = repeats(&subtasks, ids);
                // A repeat is sent back once; after that it goes out with
                // why it failed, so the executor at least knows.
                if errors.is_empty() && (repeated.is_empty() || attempt == 1) {
                    // Annotated before finished work is left out: `repeated`
                    // holds indices into the plan as the model wrote it.
                    if let Some((_, why)) = &ids.failed {
                        for i in repeated {
                            let goal = &mut subtasks[i].goal;
                            *goal = format!("{goal}{EARLIER_ATTEMPT}{why}. Do it another way.)");
                        }
                    }
                    for line in drop_redone(&mut subtasks, &ids.completed) {
                        tracing::info!(attempt, "plan: {line}");
                    }
                    return Asked {
                        answer: Ok(subtasks),
                        usage,
                    };
                }
                if let Some((_, why)) = &ids.failed {
                    errors.extend(repeated.iter().map(|&i| {
                        format!(
                            "subtask `{}` is the failed subtask again, word for word; it failed because: {why}. \
                             Change what it does or how (another tool, another role, smaller steps, the right file)",
                            subtasks[i].id
                        )
                    }));
                }
                errors
            }
            Err(e) => vec![e.to_string()],
        };
        tracing::warn!(attempt, "invalid plan: {}", errors.join("; "));
        messages.push(ChatMessage::assistant(hermes_core::text::clip(
            &reply.content,
            4000,
        )));
        messages.push(plan_errors_message(&errors));
    }
    Asked {
        answer: Err(PlanError::Invalid(errors)),
        usage,
    }
}

/// The plan's JSON schema, roles as an enum: the grammar for models that
/// can constrain decoding.
pub fn plan_schema(roles: &[Role]) -> serde_json::Value {
    let names: Vec<&str> = roles.iter().map(|r| r.name.as_str()).collect();
    serde_json::json!({
        "type": "object",
        "properties": {
            "subtasks": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string"},
                        "role": {"type": "string", "enum": names},
                        "goal": {"type": "string"},
                        "outputs": {"type": "array", "items": {"type": "string"}},
                        "depends_on": {"type": "array", "items": {"type": "string"}}
                    },
                    "required": ["id", "role", "goal", "outputs", "depends_on"],
                    "additionalProperties": false
                }
            }
        },
        "required": ["subtasks"],
        "additionalProperties": false
    })
}

/// Asks the model to write the final answer from the subtask results.
pub async fn request_answer(
    llm: &dyn Llm,
    messages: Vec<ChatMessage>,
    temperature: f32,
) -> Asked<String, AnswerError> {
    let request = ChatRequest {
        messages,
        temperature,
        max_tokens: PLAN_MAX_TOKENS,
        json: false,
        schema: None,
        seed: None,
    };
    match traced_chat(llm, &request).await {
        Ok(reply) => Asked {
            answer: Some(reply.content.trim().to_string())
                .filter(|a| !a.is_empty())
                .ok_or(AnswerError::Empty),
            usage: reply.usage,
        },
        Err(e) => Asked {
            answer: Err(AnswerError::Model(e.to_string())),
            usage: Usage::default(),
        },
    }
}
