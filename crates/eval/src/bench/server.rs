//! The scripted OpenAI-compatible server of `hermes bench http` and
//! `hermes bench serve`: `POST /v1/chat/completions` on loopback, answering
//! every task with the same script, 9 `read_file` calls then a finish (for
//! 10 rounds), and no model behind it, so that what a client measures
//! against it is the client.
//!
//! It answers two kinds of client, and keeps no state between requests
//! (each answer after the script's `latency`):
//! - a request with a `tools` array (a framework using native tool calls,
//!   such as the LangGraph peer in `bench/peer/`) gets an assistant message
//!   with one `read_file` tool call, or plain content in the last round; the
//!   round is one more than the `tool` messages in the request;
//! - any other request (Hermes) gets the decision JSON the loop parses; the
//!   round is the `Round N of M` of its last user turn.
//!
//! For the multi-agent workload (`bench/compare.sh` with `WORKLOAD=plan`)
//! it also plays the planner's model, for Hermes and the peers alike: a
//! request whose system message says `You are the planner` gets the plan
//! that the `[bench-plan N ROLE,ROLE,…]` marker of its messages asks for (N
//! independent subtasks, the roles in turn, as
//! `{"subtasks": [{"id", "role", "goal", "depends_on"}]}`), and one whose
//! system message asks for the `final answer of a team` gets one line.
//! Executors' requests are answered by the script as above.

use std::borrow::Cow;
use std::net::SocketAddr;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

use super::model::{decision, file_for, round_in};
use super::process;

/// The script every task follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Script {
    /// Rounds per task: `rounds - 1` reads, then the answer.
    pub rounds: u32,
    /// How long each answer waits (a model's latency; zero: none).
    pub latency: Duration,
}

/// What the planner's marker asks for: `[bench-plan N ROLE,ROLE,…]`.
const PLAN_MARKER: &str = "[bench-plan ";

impl Script {
    /// The completion answering one chat-completions request body, or why
    /// the body cannot be answered.
    pub fn answer(&self, body: &[u8]) -> Result<Value, String> {
        let request: Value =
            serde_json::from_slice(body).map_err(|e| format!("the body is not JSON: {e}"))?;
        let messages = request["messages"]
            .as_array()
            .ok_or("the body has no `messages` array")?;
        let model = request["model"].as_str().unwrap_or("scripted");
        let prompt_chars: usize = messages.iter().map(|m| text(m).len()).sum();
        let system = messages
            .first()
            .filter(|m| m["role"] == "system")
            .map(text)
            .unwrap_or_default();
        let system = system.as_ref();
        let (message, finish_reason) = if request["tools"].is_array() {
            self.native(messages)
        } else if system.contains("You are the planner") {
            (Self::plan(messages)?, "stop")
        } else if system.contains("final answer of a team") {
            let answer = "Every subtask read its files.";
            (json!({"role": "assistant", "content": answer}), "stop")
        } else {
            self.decision(messages)
        };
        Ok(json!({
            "id": "chatcmpl-bench",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
            "usage": {
                "prompt_tokens": prompt_chars / 4,
                "completion_tokens": 16,
                "total_tokens": prompt_chars / 4 + 16
            }
        }))
    }

    /// The planner's answer: the plan its `[bench-plan N ROLES]` marker asks
    /// for, as the content of an assistant message.
    fn plan(messages: &[Value]) -> Result<Value, String> {
        let marked = messages
            .iter()
            .map(text)
            .find_map(|text| Some(text.split_once(PLAN_MARKER)?.1.to_string()))
            .ok_or("a planner's request without a `[bench-plan N ROLE,ROLE]` marker")?;
        let spec = marked.split(']').next().unwrap_or_default();
        let (count, roles) = spec
            .split_once(' ')
            .ok_or("the marker is `[bench-plan N ROLE,ROLE,…]`")?;
        let count: usize = count
            .parse()
            .map_err(|_| format!("the marker's subtask count is not a number: {count:?}"))?;
        let roles: Vec<&str> = roles
            .split(',')
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .collect();
        if roles.is_empty() || count == 0 {
            return Err("the marker names no roles or no subtasks".into());
        }
        let subtasks: Vec<Value> = (0..count)
            .map(|k| {
                // `job k` as `hermes bench plan`'s own model writes it, so
                // that its call log reads the same over HTTP.
                json!({
                    "id": format!("s{k}"),
                    "role": roles[k % roles.len()],
                    "goal": format!("Read the files in turn and report what they hold (bench job {k})."),
                    "depends_on": []
                })
            })
            .collect();
        let content = json!({ "subtasks": subtasks }).to_string();
        Ok(json!({"role": "assistant", "content": content}))
    }

    /// Hermes' turn: the decision for the round its last user turn asks for.
    fn decision(&self, messages: &[Value]) -> (Value, &'static str) {
        let round = messages
            .iter()
            .rev()
            .find(|m| m["role"] == "user")
            .map_or(1, |m| round_in(&text(m)));
        let content = decision(round, self.rounds);
        (json!({"role": "assistant", "content": content}), "stop")
    }

    /// A native tool-calling client's turn: one tool call per round until
    /// the last, which answers in plain text.
    fn native(&self, messages: &[Value]) -> (Value, &'static str) {
        let done = messages.iter().filter(|m| m["role"] == "tool").count();
        let round = u32::try_from(done).unwrap_or(u32::MAX).saturating_add(1);
        if round >= self.rounds {
            return (
                json!({"role": "assistant", "content": "read every file"}),
                "stop",
            );
        }
        let arguments = json!({ "path": file_for(round) }).to_string();
        let call = json!({
            "id": format!("call_{round}"),
            "type": "function",
            "function": {"name": "read_file", "arguments": arguments}
        });
        (
            json!({"role": "assistant", "content": null, "tool_calls": [call]}),
            "tool_calls",
        )
    }
}

/// A message's text: its `content` string, or its text parts joined (the
/// Chat Completions wire allows either; rig sends its preamble, the system
/// message, as parts).
fn text(message: &Value) -> Cow<'_, str> {
    match &message["content"] {
        Value::String(text) => Cow::Borrowed(text),
        Value::Array(parts) => Cow::Owned(
            parts
                .iter()
                .filter_map(|part| part["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        _ => Cow::Borrowed(""),
    }
}

/// The routes: `POST /v1/chat/completions`, nothing else.
fn router(script: Script) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(complete))
        .with_state(script)
}

async fn complete(State(script): State<Script>, body: Bytes) -> Response {
    if !script.latency.is_zero() {
        tokio::time::sleep(script.latency).await;
    }
    match script.answer(&body) {
        Ok(answer) => (
            [(header::CONTENT_TYPE, "application/json")],
            answer.to_string(),
        )
            .into_response(),
        Err(reason) => (StatusCode::BAD_REQUEST, reason).into_response(),
    }
}

/// The base URL a client is given for a server on `addr` (including `/v1`).
pub fn base_url(addr: SocketAddr) -> String {
    format!("http://{addr}/v1")
}

/// Serves `script` on `listener` until `stop` resolves (or forever).
pub async fn serve(
    listener: TcpListener,
    script: Script,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(script))
        .with_graceful_shutdown(stop)
        .await
}

/// The server on a thread of its own (a single-threaded runtime), so that
/// the CPU it spends can be told apart from its client's in one process.
pub struct ServerThread {
    /// Base URL including `/v1`.
    pub base_url: String,
    runtime: tokio::runtime::Handle,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ServerThread {
    /// Binds a free port on 127.0.0.1 and starts serving `script` there.
    pub fn start(script: Script) -> std::io::Result<Self> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let base_url = base_url(listener.local_addr()?);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let handle = runtime.handle().clone();
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("bench-server".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let Ok(listener) = TcpListener::from_std(listener) else {
                        return;
                    };
                    let stop = async move {
                        let _ = stopped.await;
                    };
                    if let Err(e) = serve(listener, script, stop).await {
                        tracing::warn!("the bench server stopped: {e}");
                    }
                });
            })?;
        Ok(Self {
            base_url,
            runtime: handle,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// CPU time the server's thread has used so far.
    pub async fn cpu_time(&self) -> Duration {
        self.runtime
            .spawn(async { process::thread_cpu_time() })
            .await
            .unwrap_or_default()
    }
}

impl Drop for ServerThread {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCRIPT: Script = Script {
        rounds: 3,
        latency: Duration::ZERO,
    };

    fn content(answer: &Value) -> &str {
        answer["choices"][0]["message"]["content"]
            .as_str()
            .unwrap_or_default()
    }

    #[test]
    fn hermes_gets_decisions_by_the_round_it_asks_for() {
        let ask = |round: u32| {
            let body = json!({"messages": [
                {"role": "system", "content": "s"},
                {"role": "user", "content": format!("Goal: g\n\nRound {round} of 4. Reply.")}
            ]});
            SCRIPT.answer(body.to_string().as_bytes()).unwrap()
        };
        let first = ask(1);
        assert!(content(&first).contains(r#""name":"read_file""#), "{first}");
        assert!(content(&first).contains("f1.txt"), "{first}");
        assert!(content(&ask(3)).contains(r#""name":"finish""#));
    }

    #[test]
    fn native_clients_get_tool_calls_then_plain_content() {
        let tools = json!([{"type": "function", "function": {"name": "read_file"}}]);
        let first = SCRIPT
            .answer(
                json!({"tools": tools, "messages": [{"role": "user", "content": "go"}]})
                    .to_string()
                    .as_bytes(),
            )
            .unwrap();
        let call = &first["choices"][0]["message"]["tool_calls"][0]["function"];
        assert_eq!(call["name"], "read_file");
        assert_eq!(call["arguments"], r#"{"path":"f1.txt"}"#);
        assert_eq!(first["choices"][0]["finish_reason"], "tool_calls");
        let tool = json!({"role": "tool", "content": "x", "tool_call_id": "call_1"});
        let last = SCRIPT
            .answer(
                json!({"tools": tools, "messages": [{"role": "user", "content": "go"}, tool, tool]})
                    .to_string()
                    .as_bytes(),
            )
            .unwrap();
        assert_eq!(content(&last), "read every file");
    }

    #[test]
    fn bodies_that_are_not_chat_requests_are_refused() {
        assert!(SCRIPT.answer(b"nope").is_err());
        assert!(SCRIPT.answer(b"{}").is_err());
    }
    #[test]
    fn the_planner_gets_the_plan_its_marker_asks_for_and_the_answer_one_line() {
        let ask = |system: &str, user: &str| {
            let body = json!({"messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": user}
            ]});
            SCRIPT.answer(body.to_string().as_bytes())
        };
        let plan = ask(
            "You are the planner of a team.",
            "Task: [bench-plan 5 reader,checker] Read the files.",
        )
        .unwrap();
        let plan: Value = serde_json::from_str(content(&plan)).unwrap();
        let subtasks = plan["subtasks"].as_array().unwrap();
        assert_eq!(subtasks.len(), 5);
        assert_eq!(subtasks[0]["id"], "s0");
        assert_eq!(subtasks[0]["role"], "reader");
        assert_eq!(subtasks[1]["role"], "checker");
        assert_eq!(subtasks[4]["role"], "reader");
        assert_eq!(subtasks[4]["depends_on"], json!([]));
        let answer = ask(
            "You write the final answer of a team.",
            "[bench-plan 5 reader]",
        )
        .unwrap();
        assert_eq!(content(&answer), "Every subtask read its files.");
        let unmarked = ask("You are the planner.", "Read the files.").unwrap_err();
        assert!(unmarked.contains("[bench-plan N ROLE,ROLE]"), "{unmarked}");
    }
    #[test]
    fn a_system_message_sent_as_text_parts_is_read_as_its_text() {
        let body = json!({"messages": [
            {"role": "system", "content": [{"type": "text", "text": "You are the planner."}]},
            {"role": "user", "content": [{"type": "text", "text": "[bench-plan 2 reader] Go."}]}
        ]});
        let plan = SCRIPT.answer(body.to_string().as_bytes()).unwrap();
        let plan: Value = serde_json::from_str(content(&plan)).unwrap();
        assert_eq!(plan["subtasks"].as_array().unwrap().len(), 2);
    }
}
