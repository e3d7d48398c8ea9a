//! A custom tool from an async function and a derived args struct, driven by
//! the loop against the scripted server: the same spec writes the prompt
//! and validates the calls.

mod common;

use std::sync::Arc;

use common::{decision, finish, ScriptedServer};
use hermes::agent::{Agent, CancellationToken, StopStatus};
use hermes::llm::{OpenAiClient, OpenAiConfig};
use hermes::tools::{tool_fn, ToolError, Toolbox};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize, JsonSchema)]
struct Repeat {
    /// Text to repeat.
    text: String,
    /// How many times.
    times: u32,
}

#[tokio::test(flavor = "multi_thread")]
async fn derived_spec_renders_validates_and_coerces() {
    let server = ScriptedServer::start(vec![
        decision("repeat", json!({"text": "ab", "times": "3"})),
        decision("repeat", json!({"text": "ab", "tims": 2})),
        finish("ababab"),
    ])
    .await;
    let mut toolbox = Toolbox::new();
    toolbox.register(tool_fn(
        "repeat",
        "Repeat a text.",
        |args: Repeat| async move { Ok::<_, ToolError>(args.text.repeat(args.times as usize)) },
    ));
    let llm = OpenAiClient::new(OpenAiConfig::new(server.base_url.clone(), "scripted")).unwrap();
    let outcome = Agent::new(Arc::new(llm), Arc::new(toolbox))
        .run("repeat ab three times", &CancellationToken::new())
        .await;
    assert_eq!(outcome.status, StopStatus::Finished);
    assert!(server
        .prompt_text(0)
        .contains("times (integer, required): How many times."));
    assert!(
        server.prompt_text(1).contains(r#""data":"ababab""#),
        "the string \"3\" was coerced to 3"
    );
    assert!(server
        .prompt_text(2)
        .contains("unknown parameter `tims`; did you mean `times`?"));
}
