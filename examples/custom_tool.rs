//! Custom tools, two ways: a small trait, or an async function plus an args
//! struct whose schema is derived with `schemars`. Either way one spec
//! drives both the prompt and the validation of the model's calls.
//!
//! ```sh
//! cargo run --release --example custom_tool
//! ```
//!
//! Runs offline: a scripted model calls both tools (once with a string where
//! a number belongs, which is coerced) and finishes.

use std::sync::Arc;

use async_trait::async_trait;
use hermes::agent::{Agent, CancellationToken};
use hermes::llm::ScriptedLlm;
use hermes::tools::{tool_fn, ParamKind, ParamSpec, Tool, ToolError, ToolSpec, Toolbox};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Map, Value};

/// Way 1: implement `Tool` — a spec and a call.
struct Temperature;

#[async_trait]
impl Tool for Temperature {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new("temperature", "Current temperature in a city, in °C.")
            .param(ParamSpec::new("city", ParamKind::String, "city name").required())
            .example(json!({"city": "Lisbon"}))
            .idempotent()
    }

    async fn call(&self, args: Map<String, Value>) -> Result<Value, ToolError> {
        let city = args["city"].as_str().unwrap_or_default();
        let celsius = match city {
            "Lisbon" => 19.5,
            "Oslo" => 4.0,
            other => return Err(ToolError::new(format!("no station in {other}"))),
        };
        Ok(json!({ "city": city, "celsius": celsius }))
    }
}

/// Way 2: an args struct (doc comments become parameter descriptions) …
#[derive(Deserialize, JsonSchema)]
struct Convert {
    /// Temperature in degrees Celsius.
    celsius: f64,
    /// Decimal places to round to.
    digits: Option<u32>,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut toolbox = Toolbox::new();
    toolbox.register(Temperature);
    // … plus an async function.
    toolbox.register(tool_fn(
        "to_fahrenheit",
        "Convert °C to °F.",
        |args: Convert| async move {
            let factor = 10f64.powi(args.digits.unwrap_or(1) as i32);
            Ok::<_, ToolError>(((args.celsius * 9.0 / 5.0 + 32.0) * factor).round() / factor)
        },
    ));
    println!("What the model is told:\n{}", toolbox.render());

    let llm = Arc::new(ScriptedLlm::new([
        r#"{"thought": "Look it up.", "action": {"name": "temperature", "args": {"city": "Lisbon"}}}"#,
        // "19.5" is a string: the spec says number, so it is coerced.
        r#"{"thought": "Convert.", "action": {"name": "to_fahrenheit", "args": {"celsius": "19.5"}}}"#,
        r#"{"thought": "Done.", "action": {"name": "finish", "args": {"result": "Lisbon: 19.5 °C = 67.1 °F"}}}"#,
    ]));
    let outcome = Agent::new(llm, Arc::new(toolbox))
        .on_round(Arc::new(|e| {
            eprintln!(
                "[round {}] {} {} {}",
                e.round, e.action, e.status, e.observation
            )
        }))
        .run(
            "How warm is Lisbon in Fahrenheit?",
            &CancellationToken::new(),
        )
        .await;
    println!("{}", outcome.result.unwrap_or(outcome.progress));
    Ok(())
}
