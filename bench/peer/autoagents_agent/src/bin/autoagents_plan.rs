//! The AutoAgents peer of the multi-agent plan workload (`hermes bench plan
//! --base-url`; bench/compare.sh with `WORKLOAD=plan`).
//!
//! One task, planned by one chat call of AutoAgents' OpenAI backend (its
//! Chat Completions mode, no tools: `PLANNER_SYSTEM`, then the task) into N
//! independent subtasks over R roles; then every subtask at once, each run
//! by an AutoAgents actor agent of its role, in AutoAgents' actor idiom (its
//! parallel/planning design-pattern examples): a `SingleThreadedRuntime` in
//! an `Environment`, actor agents built with `AgentBuilder::<_, ActorAgent>`
//! and subscribed to a `Topic<Task>`, the plan's subtasks published to their
//! topics with `runtime.publish`, and each result collected from the
//! runtime's event stream (`Event::TaskComplete` / `TaskError`, matched by
//! the task's submission id). Each actor agent is a `ReActAgent` with the
//! role's system prompt (`executor_system(role)`) and the native `read_file`
//! tool (src/lib.rs) on a temporary workspace, and runs its subtask through
//! its tool loop until its plain answer (the server's `--rounds`); then one
//! last chat call (`ANSWER_SYSTEM`, no tools) writes the team's answer.
//!
//! One actor agent per subtask, not per role: an AutoAgents actor handles
//! its messages one at a time, and its memory (which is the ReAct run's
//! history) outlives a run, so one actor per role would run its role's
//! subtasks one after another, each seeing the previous ones' messages.
//! So every subtask gets an actor agent of its role with a memory of its
//! own, subscribed to a topic of its own (`run/role/id`), and the actors
//! are stopped when the run's results are in. One runtime serves every run.
//!
//! Executor rounds are counted by the agents' `on_turn_complete` hook;
//! model calls are the plan, those rounds and the answer. Prints one JSON
//! line (peer_harness::plan's report).
//!
//!     bench/peer/autoagents_agent/target/release/autoagents_plan \
//!         --base-url http://127.0.0.1:PORT/v1 --subtasks 100 --roles 4 --repeat 3

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use autoagents::async_trait;
use autoagents::core::actor::Topic;
use autoagents::core::agent::memory::SlidingWindowMemory;
use autoagents::core::agent::prebuilt::executor::ReActAgent;
use autoagents::core::agent::task::Task;
use autoagents::core::agent::{
    ActorAgent, ActorAgentHandle, AgentBuilder, AgentDeriveT, AgentHooks, Context,
};
use autoagents::core::environment::Environment;
use autoagents::core::runtime::{SingleThreadedRuntime, TypedRuntime};
use autoagents::core::tool::ToolT;
use autoagents::core::utils::BoxEventStream;
use autoagents::llm::LLMProvider;
use autoagents::llm::backends::openai::{OpenAI, OpenAIApiMode};
use autoagents::llm::builder::LLMBuilder;
use autoagents::llm::chat::{ChatMessage, ChatProvider, ChatRole, MessageType};
use autoagents::protocol::{Event, SubmissionId};
use autoagents_agent::ReadFile;
use peer_harness::plan::{
    ANSWER_SYSTEM, PLANNER_SYSTEM, PlanArgs, PlanPeer, PlanRun, answer_prompt, executor_system,
    measure_plan, parse_plan, parse_plan_args, task,
};
use serde_json::Value;
use tokio::sync::{Mutex, mpsc};
use tokio_stream::StreamExt;

const FRAMEWORK_VERSION: &str = "autoagents 0.4.0";
const FAN_OUT: &str = "AutoAgents actor agents: one ReActAgent actor per subtask \
     (AgentBuilder::<_, ActorAgent>, the role's system prompt, a memory of its own), each \
     subscribed to a Topic<Task> of its own on one SingleThreadedRuntime in an Environment; \
     the plan's subtasks published with runtime.publish, results read from the runtime's \
     event stream (TaskComplete/TaskError); planner and answer are plain chat calls";

/// The most ReAct turns an executor may take: far more than the script's
/// rounds (3 in bench/compare.sh), so every run reaches its answer.
const MAX_TURNS: usize = 32;

// ---------------------------------------------------------------------------
// The executor agent. `#[agent]` gives an agent a literal name and
// description; here both are the instance's: the description is the role's
// system prompt, and the name is the actor's, which ractor's registry
// requires to be unique among live actors. So `AgentDeriveT` is written out
// as the macro would write it.

#[derive(Debug)]
struct Executor {
    name: String,
    system: String,
    root: PathBuf,
    /// Executor rounds of the run, all agents together.
    rounds: Arc<AtomicUsize>,
}

impl AgentDeriveT for Executor {
    type Output = String;

    fn description(&self) -> &str {
        &self.system
    }

    fn output_schema(&self) -> Option<Value> {
        None
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn tools(&self) -> Vec<Box<dyn ToolT>> {
        vec![Box::new(ReadFile::new(self.root.clone()))]
    }
}

#[async_trait]
impl AgentHooks for Executor {
    async fn on_turn_complete(&self, _turn_index: usize, _ctx: &Context) {
        self.rounds.fetch_add(1, Ordering::Relaxed);
    }
}

// ---------------------------------------------------------------------------
// The team: the LLM, the runtime the actor agents live on, and the results
// the runtime's event stream reports.

/// How a subtask's agent ended: its answer, or why it has none.
type Outcome = (SubmissionId, Result<String, String>);

struct Team {
    llm: Arc<dyn LLMProvider>,
    runtime: Arc<SingleThreadedRuntime>,
    outcomes: Mutex<mpsc::UnboundedReceiver<Outcome>>,
    root: PathBuf,
}

/// Reads the runtime's event stream for as long as it lasts, as the
/// examples' `handle_events` does, and passes on each task's end. Reading
/// it is not optional: the runtime's event channel is bounded.
fn collect_outcomes(mut events: BoxEventStream<Event>, outcomes: mpsc::UnboundedSender<Outcome>) {
    tokio::spawn(async move {
        while let Some(event) = events.next().await {
            let outcome = match event {
                Event::TaskComplete { sub_id, result, .. } => (sub_id, Ok(result)),
                Event::TaskError { sub_id, error, .. } => (sub_id, Err(error)),
                _ => continue,
            };
            if outcomes.send(outcome).is_err() {
                break;
            }
        }
    });
}

fn message(role: ChatRole, content: String) -> ChatMessage {
    ChatMessage {
        role,
        message_type: MessageType::Text,
        content,
    }
}

/// One chat call without tools: the system message, then the user's.
async fn chat(llm: &dyn LLMProvider, system: &str, user: String) -> Result<String, String> {
    let messages = [
        message(ChatRole::System, system.to_string()),
        message(ChatRole::User, user),
    ];
    let response = llm.chat(&messages, None).await.map_err(|e| e.to_string())?;
    Ok(response.text().unwrap_or_default())
}

/// The answer in a `TaskComplete` result: the ReAct output, as JSON.
fn answer_of(result: &str) -> String {
    serde_json::from_str::<Value>(result)
        .ok()
        .and_then(|v| {
            v.get("response")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .unwrap_or_default()
}

impl Team {
    async fn run(&self, args: &PlanArgs, t: usize) -> PlanRun {
        let task_text = task(args, t);
        let rounds = Arc::new(AtomicUsize::new(0));
        let mut model_calls = 0;
        let failed = |why: String, rounds: usize, model_calls: usize| PlanRun {
            finished: 0,
            rounds,
            model_calls,
            error: Some(why),
        };

        // The plan.
        model_calls += 1;
        let plan = match chat(self.llm.as_ref(), PLANNER_SYSTEM, task_text.clone()).await {
            Ok(content) => parse_plan(&content),
            Err(e) => Err(format!("the planner call failed: {e}")),
        };
        let subtasks = match plan {
            Ok(subtasks) => subtasks,
            Err(why) => return failed(why, 0, model_calls),
        };

        // An actor agent per subtask, of its role, on a topic of its own.
        let mut agents: Vec<ActorAgentHandle<ReActAgent<Executor>>> =
            Vec::with_capacity(subtasks.len());
        let mut dispatch = Vec::with_capacity(subtasks.len());
        for subtask in &subtasks {
            let name = format!("{t}/{}/{}", subtask.role, subtask.id);
            let executor = Executor {
                name: name.clone(),
                system: executor_system(&subtask.role),
                root: self.root.clone(),
                rounds: Arc::clone(&rounds),
            };
            let topic = Topic::<Task>::new(name);
            // A ReAct run keeps its history in the agent's memory (the user
            // turn, then two messages a turn): the window holds a whole run.
            let built =
                AgentBuilder::<_, ActorAgent>::new(ReActAgent::with_max_turns(executor, MAX_TURNS))
                    .llm(Arc::clone(&self.llm))
                    .runtime(self.runtime.clone())
                    .subscribe(topic.clone())
                    .memory(Box::new(SlidingWindowMemory::new(2 * MAX_TURNS + 1)))
                    .build()
                    .await;
            match built {
                Ok(handle) => agents.push(handle),
                Err(e) => {
                    stop(&agents);
                    return failed(format!("cannot build an executor: {e}"), 0, model_calls);
                }
            }
            dispatch.push((topic, Task::new(subtask.goal.clone())));
        }

        // Every subtask at once: each published to its agent's topic.
        let mut pending: HashMap<SubmissionId, usize> = HashMap::with_capacity(subtasks.len());
        let mut error = None;
        for (k, (topic, subtask)) in dispatch.into_iter().enumerate() {
            let sub_id = subtask.submission_id;
            match self.runtime.publish(&topic, subtask).await {
                Ok(()) => {
                    pending.insert(sub_id, k);
                }
                Err(e) => {
                    error.get_or_insert(format!("cannot publish a subtask: {e}"));
                }
            }
        }

        // Their results, from the event stream.
        let mut results: Vec<Option<String>> = vec![None; subtasks.len()];
        {
            let mut outcomes = self.outcomes.lock().await;
            while !pending.is_empty() {
                let Some((sub_id, outcome)) = outcomes.recv().await else {
                    error.get_or_insert("the runtime's event stream ended".into());
                    break;
                };
                let Some(k) = pending.remove(&sub_id) else {
                    continue;
                };
                match outcome.map(|result| answer_of(&result)) {
                    Ok(answer) if !answer.is_empty() => results[k] = Some(answer),
                    Ok(_) => {
                        error.get_or_insert(format!(
                            "subtask {} ended without an answer",
                            subtasks[k].id
                        ));
                    }
                    Err(why) => {
                        error.get_or_insert(format!("subtask {}: {why}", subtasks[k].id));
                    }
                }
            }
        }
        stop(&agents);
        drop(agents);

        let finished = results.iter().filter(|r| r.is_some()).count();
        let results: Vec<(String, String)> = subtasks
            .iter()
            .zip(results)
            .filter_map(|(s, r)| r.map(|r| (s.id.clone(), r)))
            .collect();
        let rounds = rounds.load(Ordering::Relaxed);
        model_calls += rounds;

        // The team's answer.
        model_calls += 1;
        match chat(
            self.llm.as_ref(),
            ANSWER_SYSTEM,
            answer_prompt(&task_text, &results),
        )
        .await
        {
            Ok(answer) if !answer.is_empty() => {}
            Ok(_) => {
                error.get_or_insert("the final answer is empty".into());
            }
            Err(e) => {
                error.get_or_insert(format!("the final answer call failed: {e}"));
            }
        }
        PlanRun {
            finished,
            rounds,
            model_calls,
            error,
        }
    }
}

/// Stops the run's actors (their names go back to ractor's registry).
fn stop(agents: &[ActorAgentHandle<ReActAgent<Executor>>]) {
    for agent in agents {
        agent.actor_ref.stop(None);
    }
}

#[tokio::main]
async fn main() {
    let args = parse_plan_args("autoagents_plan").unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(1);
    });
    let root = peer_harness::make_workspace("autoagents_plan").unwrap_or_else(|e| {
        eprintln!("error: cannot make the workspace: {e}");
        std::process::exit(1);
    });
    let code = run(&args, root.clone()).await;
    peer_harness::exit(&root, code);
}

async fn run(args: &PlanArgs, root: PathBuf) -> i32 {
    // AutoAgents' OpenAI backend defaults to the Responses API; its
    // ChatCompletions mode is what an OpenAI-compatible server speaks.
    let llm: Arc<OpenAI> = match LLMBuilder::<OpenAI>::new()
        .api_key("not-needed")
        .base_url(args.base_url.clone())
        .model("bench")
        .api_mode(OpenAIApiMode::ChatCompletions)
        .temperature(0.0)
        .build()
    {
        Ok(llm) => llm,
        Err(e) => {
            eprintln!("error: cannot build the LLM client: {e}");
            return 1;
        }
    };

    // One request first: a server that is not there is one clear error.
    let probe = [ChatMessage::user().content("Round 1").build()];
    if let Err(e) = llm.chat(&probe, None).await {
        eprintln!(
            "error: the scripted server at {} does not answer: {e}",
            args.base_url
        );
        return 1;
    }

    // The runtime the actor agents live on, in an environment that runs it
    // and hands out its event stream.
    let runtime = SingleThreadedRuntime::new(None);
    let mut environment = Environment::new(None);
    if let Err(e) = environment.register_runtime(runtime.clone()).await {
        eprintln!("error: cannot register the runtime: {e}");
        return 1;
    }
    let events = match environment.take_event_receiver(None).await {
        Ok(events) => events,
        Err(e) => {
            eprintln!("error: cannot take the runtime's events: {e}");
            return 1;
        }
    };
    let (outcomes_tx, outcomes) = mpsc::unbounded_channel();
    collect_outcomes(events, outcomes_tx);
    if let Err(e) = environment.run() {
        eprintln!("error: cannot run the environment: {e}");
        return 1;
    }

    let team = Team {
        llm: llm as Arc<dyn LLMProvider>,
        runtime,
        outcomes: Mutex::new(outcomes),
        root,
    };
    let peer = PlanPeer {
        framework: "autoagents",
        version: FRAMEWORK_VERSION,
        fan_out: FAN_OUT,
    };
    let code = measure_plan(args, &peer, |t| team.run(args, t)).await;
    let _ = environment.shutdown().await;
    code
}
