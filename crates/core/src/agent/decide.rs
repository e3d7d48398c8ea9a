//! **Decide**: ask the model for the next step and read its answer.
//!
//! The reply goes through the lenient parser. If nothing can be read, or
//! the reply was cut off (`finish_reason` `length`: a repair would end it
//! in the middle of a value), the model is asked exactly once more, told
//! what was wrong and shown the expected shape. If the second reply cannot be read either, the round's
//! observation becomes a parse error that quotes the bad output and shows
//! the shape again, and the loop goes on: the repetition guard stops a
//! model that never produces a decision.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::decision::{parse_decision, Decision, DecisionError, EXPECTED_SHAPE, FINISH};
use crate::limits::Limits;
use crate::llm::{traced_chat, ChatMessage, ChatRequest, Llm, LlmError, Usage};
use crate::text::clip;
use crate::tools::Toolbox;

/// How much of an unreadable reply is quoted back to the model.
const QUOTED_REPLY_CHARS: usize = 400;

/// A reply that could not be read as a decision, even after one regeneration.
#[derive(Debug, Clone)]
pub struct ParseFailure {
    /// The second unreadable reply.
    pub raw: String,
    /// Why it could not be read.
    pub error: DecisionError,
}

impl ParseFailure {
    /// The error observation shown to the model.
    pub fn observation(&self) -> String {
        format!(
            "could not read your reply as a decision ({}). Your reply was: «{}». Reply with exactly one JSON object: {EXPECTED_SHAPE}",
            self.error,
            clip(&self.raw, QUOTED_REPLY_CHARS)
        )
    }
}

/// What one decide phase produced.
#[derive(Debug)]
pub struct Decided {
    /// The decision, or why none could be read.
    pub decision: Result<Decision, ParseFailure>,
    /// Tokens of both calls, when there were two.
    pub usage: Usage,
    /// Whether the reply was regenerated once.
    pub regenerated: bool,
    /// Time spent waiting on the model.
    pub llm_time: Duration,
}

/// The decision shape as a JSON schema built from the live registry: the
/// action name is one of the registered tools or `finish`, and each tool's
/// args follow its spec. Models that constrain decoding cannot stray from it.
/// Every object is closed (`additionalProperties: false`): JSON Schema
/// allows any other key by default, and under a grammar that leaves a
/// model free to go on after its decision with keys of its own, objects
/// nested in objects, to its token budget (EVALS.md section 27).
pub fn decision_schema(toolbox: &Toolbox) -> Value {
    decision_schema_among(toolbox, None)
}

/// The decision schema with only the actions of `allowed` (tool names or
/// `finish`; every action when `None`, or when none of them exists).
pub fn decision_schema_among(toolbox: &Toolbox, allowed: Option<&[String]>) -> Value {
    let open = |name: &str| allowed.is_none_or(|names| names.iter().any(|n| n == name));
    let exists = |name: &String| name == FINISH || toolbox.names().contains(&name.as_str());
    if allowed.is_some_and(|names| !names.iter().any(exists)) {
        return decision_schema_among(toolbox, None);
    }
    let mut actions: Vec<Value> = toolbox
        .specs()
        .filter(|spec| open(&spec.name))
        .map(|spec| {
            json!({
                "type": "object",
                "properties": {"name": {"const": spec.name}, "args": spec.args_schema()},
                "required": ["name", "args"],
                "additionalProperties": false
            })
        })
        .collect();
    if open(FINISH) {
        actions.push(json!({
            "type": "object",
            "properties": {
                "name": {"const": FINISH},
                "args": {"type": "object", "properties": {"result": {"type": "string"}}, "required": ["result"], "additionalProperties": false}
            },
            "required": ["name", "args"],
            "additionalProperties": false
        }));
    }
    json!({
        "type": "object",
        "properties": {"thought": {"type": "string", "maxLength": 600}, "action": {"anyOf": actions}},
        "required": ["thought", "action"],
        "additionalProperties": false
    })
}

/// Asks `llm` for a decision, regenerating once on an unreadable reply.
pub async fn decide(
    llm: &dyn Llm,
    messages: Vec<ChatMessage>,
    limits: &Limits,
    schema: &Arc<Value>,
) -> Result<Decided, LlmError> {
    decide_drawn(llm, messages, limits, schema, None).await
}

/// How one of several answers to the same conversation is drawn: its
/// temperature and its own seed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Draw {
    /// Sampling temperature of this draw.
    pub temperature: f32,
    /// Its seed: each draw of a set has its own.
    pub seed: u64,
}

/// [`decide`], drawn with `draw`'s temperature and seed when given (the
/// run's temperature and the provider's seed otherwise).
pub async fn decide_drawn(
    llm: &dyn Llm,
    messages: Vec<ChatMessage>,
    limits: &Limits,
    schema: &Arc<Value>,
    draw: Option<Draw>,
) -> Result<Decided, LlmError> {
    Ok(decide_sent(llm, messages, limits, schema, draw).await?.0)
}

/// [`decide`], and the conversation back when it was sent as it came (the
/// first reply was read; a regeneration appends to it): the loop builds
/// its next round's conversation from it ([`KeptTurn`](super::perceive::KeptTurn)).
pub(crate) async fn decide_keeping(
    llm: &dyn Llm,
    messages: Vec<ChatMessage>,
    limits: &Limits,
    schema: &Arc<Value>,
) -> Result<(Decided, Option<Vec<ChatMessage>>), LlmError> {
    decide_sent(llm, messages, limits, schema, None).await
}

/// [`decide_drawn`], with the conversation handed back when the first
/// reply was read.
async fn decide_sent(
    llm: &dyn Llm,
    messages: Vec<ChatMessage>,
    limits: &Limits,
    schema: &Arc<Value>,
    draw: Option<Draw>,
) -> Result<(Decided, Option<Vec<ChatMessage>>), LlmError> {
    let started = Instant::now();
    let mut request = ChatRequest {
        messages,
        temperature: draw.map_or(limits.temperature, |d| d.temperature),
        max_tokens: limits.max_tokens,
        json: true,
        schema: Some(Arc::clone(schema)),
        seed: draw.map(|d| d.seed),
    };
    let first = traced_chat(llm, &request).await?;
    let mut usage = first.usage;
    let parsed = if first.finish_reason.as_deref() == Some("length") {
        Err(DecisionError::CutOff)
    } else {
        parse_decision(&first.content)
    };
    let error = match parsed {
        Ok(decision) => {
            let decided = Decided {
                decision: Ok(decision),
                usage,
                regenerated: false,
                llm_time: started.elapsed(),
            };
            return Ok((decided, Some(request.messages)));
        }
        Err(error) => error,
    };
    tracing::debug!(%error, "unreadable reply; regenerating once");
    request
        .messages
        .push(ChatMessage::assistant(clip(&first.content, 2000)));
    request.messages.push(ChatMessage::user(format!(
        "Your reply could not be read as a decision: {error}. Reply again with exactly one JSON object and nothing else, in this shape: {EXPECTED_SHAPE}"
    )));
    let second = traced_chat(llm, &request).await?;
    usage += second.usage;
    let decision = parse_decision(&second.content).map_err(|error| ParseFailure {
        raw: second.content,
        error,
    });
    let decided = Decided {
        decision,
        usage,
        regenerated: true,
        llm_time: started.elapsed(),
    };
    Ok((decided, None))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::builtin::register_file_tools;
    use crate::tools::Workspace;

    /// The action names a decision schema allows.
    fn actions(schema: &Value) -> Vec<String> {
        schema["properties"]["action"]["anyOf"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| {
                a["properties"]["name"]["const"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect()
    }

    #[test]
    fn a_narrowed_schema_lists_only_the_allowed_actions() {
        let dir = tempfile::tempdir().unwrap();
        let mut toolbox = Toolbox::new();
        register_file_tools(&mut toolbox, &Workspace::new(dir.path()).unwrap());
        let all = actions(&decision_schema(&toolbox));
        assert!(all.len() > 2 && all.contains(&FINISH.to_string()));
        let only = decision_schema_among(&toolbox, Some(&["read_file".to_string()]));
        assert_eq!(actions(&only), ["read_file"]);
        let with_finish = ["write_file".to_string(), FINISH.to_string()];
        assert_eq!(
            actions(&decision_schema_among(&toolbox, Some(&with_finish))),
            ["write_file", FINISH]
        );
        // Nothing allowed exists: every action stays open.
        let none = decision_schema_among(&toolbox, Some(&["nonesuch".to_string()]));
        assert_eq!(actions(&none), all);
    }

    /// A model that answers in order, each reply with its finish reason,
    /// and keeps what it was asked.
    struct Replies {
        left: std::sync::Mutex<Vec<(&'static str, &'static str)>>,
        asked: std::sync::Mutex<Vec<ChatRequest>>,
    }

    impl Replies {
        fn new(replies: Vec<(&'static str, &'static str)>) -> Self {
            Self {
                left: std::sync::Mutex::new(replies),
                asked: std::sync::Mutex::new(Vec::new()),
            }
        }

        /// One decide phase against these replies.
        async fn decide(&self) -> Decided {
            let schema = Arc::new(json!({}));
            decide(
                self,
                vec![ChatMessage::user("go")],
                &Limits::default(),
                &schema,
            )
            .await
            .unwrap()
        }
    }

    #[async_trait::async_trait]
    impl Llm for Replies {
        async fn chat(&self, request: &ChatRequest) -> Result<crate::llm::ChatResponse, LlmError> {
            self.asked.lock().unwrap().push(request.clone());
            let (content, finish) = self.left.lock().unwrap().remove(0);
            Ok(crate::llm::ChatResponse {
                content: content.into(),
                usage: Usage::default(),
                finish_reason: Some(finish.into()),
            })
        }
        fn model(&self) -> &str {
            "replies"
        }
    }

    #[tokio::test]
    async fn a_reply_cut_off_is_asked_again_instead_of_repaired() {
        // Repaired, the cut reply would write a file of digits.
        let cut = r#"{"thought": "write it", "action": {"name": "write_file", "args": {"path": "a.txt", "content": "12345678901234567890"#;
        let good = r#"{"thought": "write it", "action": {"name": "write_file", "args": {"path": "a.txt", "content": "600"}}}"#;
        let llm = Replies::new(vec![(cut, "length"), (good, "stop")]);
        let decided = llm.decide().await;
        assert!(decided.regenerated);
        let decision = decided.decision.unwrap();
        assert_eq!(decision.action.args["content"], "600");
        let note = llm.asked.lock().unwrap()[1]
            .messages
            .last()
            .unwrap()
            .content
            .clone();
        assert!(note.contains("cut off before it was complete"), "{note}");

        // A complete reply is read as before, without asking again.
        let decided = Replies::new(vec![(good, "stop")]).decide().await;
        assert!(!decided.regenerated && decided.decision.is_ok());
    }
}
