//! The planner's model calls, as plain async functions: make a plan, revise
//! one after a failure, write the final answer. Each validates what comes
//! back and re-asks once with the errors, so the actor only ever receives a
//! valid plan or a clear reason why there is none.

use std::collections::HashSet;

use super::plan::{parse_plan, plan_errors_message, rename_clashes, validate_plan, PlannedSubtask};
use super::roles::Role;
use crate::llm::{traced_chat, ChatMessage, ChatRequest, Llm, Usage};

/// `max_tokens` for plans and answers, which are longer than decisions.
const PLAN_MAX_TOKENS: u32 = 2048;

/// Ids a plan may depend on and ids it may not reuse.
#[derive(Debug, Clone, Default)]
pub struct IdRules {
    /// Ids outside the plan that may be depended on.
    pub settled: HashSet<String>,
    /// Ids already used, which new subtasks must not take.
    pub taken: HashSet<String>,
}

/// Asks for a plan (`messages` from `plan_messages` or `replan_messages`),
/// validates it, and re-asks once with the errors.
pub async fn request_plan(
    llm: &dyn Llm,
    mut messages: Vec<ChatMessage>,
    roles: &[Role],
    ids: &IdRules,
    temperature: f32,
) -> (Result<Vec<PlannedSubtask>, String>, Usage) {
    let mut usage = Usage::default();
    let mut last_error = String::new();
    let schema = plan_schema(roles);
    for attempt in 0..2 {
        let request = ChatRequest {
            messages: messages.clone(),
            temperature,
            max_tokens: PLAN_MAX_TOKENS,
            json: true,
            schema: Some(schema.clone()),
        };
        let reply = match traced_chat(llm, &request).await {
            Ok(reply) => reply,
            Err(e) => {
                return (
                    Err(format!("the model could not be asked for a plan: {e}")),
                    usage,
                )
            }
        };
        usage += reply.usage;
        let errors = match parse_plan(&reply.content) {
            Ok(mut subtasks) => {
                rename_clashes(&mut subtasks, &ids.taken);
                let errors = validate_plan(&subtasks, roles, &ids.settled, &ids.taken);
                if errors.is_empty() {
                    return (Ok(subtasks), usage);
                }
                errors
            }
            Err(e) => vec![e],
        };
        tracing::warn!(attempt, "invalid plan: {}", errors.join("; "));
        last_error = errors.join("; ");
        messages.push(ChatMessage::assistant(crate::text::clip(
            &reply.content,
            4000,
        )));
        messages.push(plan_errors_message(&errors));
    }
    (
        Err(format!("no valid plan after one re-ask: {last_error}")),
        usage,
    )
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
                        "depends_on": {"type": "array", "items": {"type": "string"}}
                    },
                    "required": ["id", "role", "goal", "depends_on"]
                }
            }
        },
        "required": ["subtasks"]
    })
}

/// Asks the model to write the final answer from the subtask results.
pub async fn request_answer(
    llm: &dyn Llm,
    messages: Vec<ChatMessage>,
    temperature: f32,
) -> (Result<String, String>, Usage) {
    let request = ChatRequest {
        messages,
        temperature,
        max_tokens: PLAN_MAX_TOKENS,
        json: false,
        schema: None,
    };
    match traced_chat(llm, &request).await {
        Ok(reply) if !reply.content.trim().is_empty() => {
            (Ok(reply.content.trim().to_string()), reply.usage)
        }
        Ok(reply) => (
            Err("the model returned an empty answer".into()),
            reply.usage,
        ),
        Err(e) => (Err(e.to_string()), Usage::default()),
    }
}
