//! A scripted OpenAI-compatible chat server on loopback, for integration tests.
//!
//! It speaks the real wire format (`POST /v1/chat/completions`, JSON body,
//! `choices[0].message.content`, `usage`), so the HTTP client, retries and
//! parsing are exercised end to end. Each request pops the next scripted
//! [`Reply`]; every request body is kept for assertions.
#![allow(dead_code)]

pub mod browser;
pub mod local_model;
pub mod otlp;
pub mod serve;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use serde_json::{json, Value};

/// What the server answers to one request.
#[derive(Clone, Debug)]
pub enum Reply {
    /// A 200 completion whose message content is this text.
    Content(String),
    /// A bare HTTP status with a body.
    Status(u16, String),
    /// Wait, then answer.
    Delay(Duration, Box<Reply>),
}

/// A decision as the model would write it.
pub fn decision(name: &str, args: Value) -> Reply {
    Reply::Content(
        json!({"thought": format!("use {name}"), "action": {"name": name, "args": args}})
            .to_string(),
    )
}

/// A finish decision with `result`.
pub fn finish(result: &str) -> Reply {
    decision("finish", json!({ "result": result }))
}

/// The JSON lines of a journal file (`--journal FILE`).
pub fn journal_lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("journal {}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// How many past rounds a decision request shows whole (their
/// observations), in either history layout: 0 in a run's first round.
pub fn rounds_shown(request: &Value) -> usize {
    request["messages"].as_array().map_or(0, |messages| {
        messages
            .iter()
            .skip(1)
            .filter_map(|m| m["content"].as_str())
            .map(|text| text.matches("\nObservation").count())
            .sum()
    })
}

/// Whether `prompt` shows round `round`'s observation, in either history
/// layout (`Round N: you called ...` / `Observation (round N)`).
pub fn shows_round(prompt: &str, round: u32) -> bool {
    observation_of(prompt, round).is_some()
}

/// The observation of round `round` as `prompt` shows it (the rest of its
/// first line), in either history layout.
pub fn observation_of(prompt: &str, round: u32) -> Option<&str> {
    let turns = format!("Observation (round {round}): ");
    let start = match prompt.find(&turns) {
        Some(at) => at + turns.len(),
        None => {
            let block = prompt
                .find(&format!("Round {round}: you called "))
                .or_else(|| prompt.find(&format!("Round {round}: your reply")))?;
            let marker = "\nObservation: ";
            block + prompt[block..].find(marker)? + marker.len()
        }
    };
    prompt[start..].lines().next()
}

/// Raw text as the model's reply.
pub fn text(content: &str) -> Reply {
    Reply::Content(content.to_string())
}

type Responder = dyn Fn(&Value) -> Reply + Send + Sync;
type EmbedFn = dyn Fn(&str) -> Vec<f32> + Send + Sync;

struct Shared {
    script: Mutex<VecDeque<Reply>>,
    responder: Option<Box<Responder>>,
    bodies: Mutex<Vec<String>>,
    embed: Option<Box<EmbedFn>>,
    embedded: Mutex<Vec<String>>,
}

/// A running scripted server; it stops when the test's runtime ends.
pub struct ScriptedServer {
    /// Base URL including `/v1`, as `--base-url` takes it.
    pub base_url: String,
    shared: Arc<Shared>,
}

impl ScriptedServer {
    /// Serves `replies` in order; once they run out, answers HTTP 400.
    pub async fn start(replies: Vec<Reply>) -> Self {
        Self::launch(Shared {
            script: Mutex::new(replies.into()),
            responder: None,
            bodies: Mutex::default(),
            embed: None,
            embedded: Mutex::default(),
        })
        .await
    }

    /// Answers each request with `responder(request_body)`.
    pub async fn with_responder(
        responder: impl Fn(&Value) -> Reply + Send + Sync + 'static,
    ) -> Self {
        Self::launch(Shared {
            script: Mutex::default(),
            responder: Some(Box::new(responder)),
            bodies: Mutex::default(),
            embed: None,
            embedded: Mutex::default(),
        })
        .await
    }

    /// Answers chat requests with `responder(request_body)`, and
    /// `POST /v1/embeddings` with `embed(text)` for each input text.
    pub async fn with_embeddings(
        responder: impl Fn(&Value) -> Reply + Send + Sync + 'static,
        embed: impl Fn(&str) -> Vec<f32> + Send + Sync + 'static,
    ) -> Self {
        Self::launch(Shared {
            script: Mutex::default(),
            responder: Some(Box::new(responder)),
            bodies: Mutex::default(),
            embed: Some(Box::new(embed)),
            embedded: Mutex::default(),
        })
        .await
    }

    async fn launch(shared: Shared) -> Self {
        let shared = Arc::new(shared);
        let app = Router::new()
            .route("/v1/chat/completions", post(complete))
            .route("/v1/embeddings", post(embeddings))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let addr = listener.local_addr().expect("local addr");
        tokio::spawn(async move {
            axum::serve(listener, app).await.expect("serve");
        });
        Self {
            base_url: format!("http://{addr}/v1"),
            shared,
        }
    }

    /// Raw request bodies received so far, oldest first.
    pub fn bodies(&self) -> Vec<String> {
        self.shared.bodies.lock().unwrap().clone()
    }

    /// The texts sent to `/v1/embeddings` so far, oldest first.
    pub fn embedded(&self) -> Vec<String> {
        self.shared.embedded.lock().unwrap().clone()
    }

    /// Parsed request bodies received so far.
    pub fn requests(&self) -> Vec<Value> {
        self.bodies()
            .iter()
            .map(|b| serde_json::from_str(b).unwrap())
            .collect()
    }

    /// The `messages` of request `i`, concatenated as one text.
    pub fn prompt_text(&self, i: usize) -> String {
        messages_text(&self.requests()[i])
    }
}

/// The `messages` of a chat request body, concatenated as one text.
pub fn messages_text(request: &Value) -> String {
    request["messages"]
        .as_array()
        .map(|messages| {
            messages
                .iter()
                .map(|m| m["content"].as_str().unwrap_or_default())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

async fn complete(State(shared): State<Arc<Shared>>, body: String) -> Response {
    shared.bodies.lock().unwrap().push(body.clone());
    let request: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let reply = match &shared.responder {
        Some(responder) => responder(&request),
        None => shared
            .script
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or_else(|| Reply::Status(400, "script exhausted".into())),
    };
    answer(reply).await
}

async fn embeddings(State(shared): State<Arc<Shared>>, body: String) -> Response {
    let Some(embed) = &shared.embed else {
        return (StatusCode::NOT_FOUND, "no embeddings here").into_response();
    };
    let request: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let texts: Vec<String> = match &request["input"] {
        Value::String(text) => vec![text.clone()],
        Value::Array(items) => items
            .iter()
            .map(|t| t.as_str().unwrap_or_default().to_string())
            .collect(),
        _ => return (StatusCode::BAD_REQUEST, "no input").into_response(),
    };
    shared
        .embedded
        .lock()
        .unwrap()
        .extend(texts.iter().cloned());
    let data: Vec<Value> = texts
        .iter()
        .enumerate()
        .map(|(i, text)| json!({"object": "embedding", "index": i, "embedding": embed(text)}))
        .collect();
    axum::Json(json!({"object": "list", "data": data, "model": "scripted-embed"})).into_response()
}

async fn answer(mut reply: Reply) -> Response {
    loop {
        match reply {
            Reply::Delay(wait, inner) => {
                tokio::time::sleep(wait).await;
                reply = *inner;
            }
            Reply::Status(code, body) => {
                return (StatusCode::from_u16(code).unwrap(), body).into_response();
            }
            Reply::Content(content) => {
                let body = json!({
                    "id": "chatcmpl-test",
                    "object": "chat.completion",
                    "model": "scripted",
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
                });
                return axum::Json(body).into_response();
            }
        }
    }
}

/// A temporary roles directory with one `NAME.toml` per name, written
/// from `template` with `NAME` replaced.
pub fn roles_dir(template: &str, names: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for name in names {
        std::fs::write(
            dir.path().join(format!("{name}.toml")),
            template.replace("NAME", name),
        )
        .unwrap();
    }
    dir
}

/// The `hermes` binary built for this test run.
pub fn hermes_bin() -> &'static str {
    env!("CARGO_BIN_EXE_hermes")
}

/// What a finished `hermes` process left behind.
pub struct Run {
    /// Exit code.
    pub code: i32,
    /// Everything on stdout.
    pub stdout: String,
    /// Everything on stderr.
    pub stderr: String,
}

impl Run {
    /// The `--json` outcome: the last line of stdout.
    pub fn outcome(&self) -> Value {
        let last = self
            .stdout
            .lines()
            .last()
            .unwrap_or_else(|| panic!("no stdout; stderr: {}", self.stderr));
        serde_json::from_str(last).unwrap_or_else(|e| panic!("last line is not JSON ({e}): {last}"))
    }
}

/// Runs `hermes` with `args` against `server` (no inherited model variables).
pub async fn hermes(args: &[&str], base_url: &str) -> Run {
    let output = tokio::process::Command::new(hermes_bin())
        .args(args)
        .env("HERMES_BASE_URL", base_url)
        .env("HERMES_MODEL", "scripted")
        .env_remove("HERMES_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env("NO_COLOR", "1")
        .kill_on_drop(true)
        .output()
        .await
        .expect("spawn hermes");
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}
