//! The tool registry and dispatcher.

use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;

use serde_json::{Map, Value};
use tracing::Instrument;

use super::memo::Memo;
use super::{validate_args, Tool, ToolEffect, ToolError, ToolResult, ToolSpec, Workspace};
use crate::decision::FINISH;

/// Extra attempts for idempotent tools whose failure may be transient.
const IDEMPOTENT_RETRIES: usize = 2;

struct Registered {
    spec: ToolSpec,
    tool: Arc<dyn Tool>,
}

/// The set of tools one agent may call, by name.
#[derive(Default)]
pub struct Toolbox {
    tools: BTreeMap<String, Registered>,
    /// Names in the order they were first registered: the order the
    /// prompt lists them in (see [`Toolbox::render`]).
    order: Vec<String>,
    /// What agents build from these tools, shared by all of them.
    memo: Memo,
    /// The folder the file tools work in, when they are registered: what a
    /// run is shown of its surroundings before round 1.
    workspace: Option<Workspace>,
}

impl Toolbox {
    /// An empty toolbox.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tool, replacing any tool of the same name (which is returned).
    pub fn register(&mut self, tool: impl Tool) -> Option<Arc<dyn Tool>> {
        self.register_arc(Arc::new(tool))
    }

    /// Adds a shared tool, replacing any tool of the same name.
    pub fn register_arc(&mut self, tool: Arc<dyn Tool>) -> Option<Arc<dyn Tool>> {
        let spec = tool.spec();
        self.memo = Memo::default();
        if !self.tools.contains_key(&spec.name) {
            self.order.push(spec.name.clone());
        }
        self.tools
            .insert(spec.name.clone(), Registered { spec, tool })
            .map(|old| old.tool)
    }

    /// A toolbox with only the named tools (names that are not registered
    /// are ignored; roles are checked against the registry when loaded).
    pub fn subset<S: AsRef<str>>(&self, names: &[S]) -> Toolbox {
        let tools: BTreeMap<String, Registered> = names
            .iter()
            .filter_map(|n| self.tools.get(n.as_ref()))
            .map(|r| {
                (
                    r.spec.name.clone(),
                    Registered {
                        spec: r.spec.clone(),
                        tool: Arc::clone(&r.tool),
                    },
                )
            })
            .collect();
        let order = self
            .order
            .iter()
            .filter(|name| tools.contains_key(name.as_str()))
            .cloned()
            .collect();
        Toolbox {
            tools,
            order,
            memo: Memo::default(),
            workspace: self.workspace.clone(),
        }
    }

    /// Names the folder this toolbox's file tools work in (see
    /// [`Toolbox::workspace`]); `register_file_tools` does it for the
    /// built-in ones.
    pub fn set_workspace(&mut self, workspace: Workspace) {
        self.workspace = Some(workspace);
    }

    /// The folder the file tools work in, if one was named.
    pub fn workspace(&self) -> Option<&Workspace> {
        self.workspace.as_ref()
    }

    /// The tools a role may use: the subset `names` (built once per list
    /// of names and shared by every executor of the role), or all of
    /// `toolbox` without a list.
    pub fn for_role(toolbox: &Arc<Toolbox>, names: Option<&[String]>) -> Arc<Toolbox> {
        match names {
            Some(names) => toolbox.memo.subset(names, || toolbox.subset(names)),
            None => Arc::clone(toolbox),
        }
    }

    /// What agents build from these tools and share (schema, prompts).
    pub(crate) fn memo(&self) -> &Memo {
        &self.memo
    }

    /// Names of the registered tools, sorted.
    pub fn names(&self) -> Vec<&str> {
        self.tools.keys().map(String::as_str).collect()
    }

    /// What the tool named `name` does to the workspace (`Other` for a
    /// name that is not registered).
    pub fn effect(&self, name: &str) -> ToolEffect {
        self.tools
            .get(name)
            .map_or(ToolEffect::Other, |r| r.spec.effect)
    }

    /// Whether the tool named `name` returns text from outside (see
    /// [`ToolSpec::untrusted`]).
    pub fn is_untrusted(&self, name: &str) -> bool {
        self.tools.get(name).is_some_and(|r| r.spec.untrusted)
    }

    /// Whether the tool named `name` may be tried (see
    /// [`ToolSpec::triable`]).
    pub fn is_triable(&self, name: &str) -> bool {
        self.tools.get(name).is_some_and(|r| r.spec.triable)
    }

    /// The first registered tool (in registration order) with `effect`.
    pub fn first_with(&self, effect: ToolEffect) -> Option<&str> {
        self.in_order()
            .find(|r| r.spec.effect == effect)
            .map(|r| r.spec.name.as_str())
    }

    /// Specs of the registered tools, sorted by name.
    pub fn specs(&self) -> impl Iterator<Item = &ToolSpec> {
        self.tools.values().map(|r| &r.spec)
    }

    /// The registered tools in registration order (for wrappers such as
    /// fault injection: registering them again keeps the prompt's order).
    pub fn tools(&self) -> impl Iterator<Item = &Arc<dyn Tool>> {
        self.in_order().map(|r| &r.tool)
    }

    fn in_order(&self) -> impl Iterator<Item = &Registered> {
        self.order.iter().filter_map(|name| self.tools.get(name))
    }

    /// The prompt section listing every tool with its parameters, in
    /// registration order: whoever builds the toolbox decides what a model
    /// reads first (the built-in set puts the workspace tools before the
    /// network ones, so a small model does not reach for `http_fetch` to
    /// read a local file).
    pub fn render(&self) -> String {
        self.in_order().map(|r| r.spec.render()).collect()
    }

    /// Validates and runs one call. Never fails: every problem (unknown tool,
    /// bad args, timeout, panic, tool error) comes back as an error envelope.
    pub async fn call(&self, name: &str, args: &Value) -> ToolResult {
        let span = tracing::info_span!("tool.call", gen_ai.operation.name = "execute_tool", gen_ai.tool.name = %name);
        let result = self.dispatch(name, args).instrument(span.clone()).await;
        if let Some(error) = &result.error {
            crate::telemetry::set_error(&span, error.clone());
        }
        result
    }

    async fn dispatch(&self, name: &str, args: &Value) -> ToolResult {
        let Some(entry) = self.tools.get(name) else {
            return ToolResult::error(self.unknown_tool(name));
        };
        let args = match validate_args(&entry.spec, args) {
            Ok(args) => args,
            Err(invalid) => return ToolResult::error(invalid.to_string()),
        };
        let attempts = if entry.spec.idempotent {
            1 + IDEMPOTENT_RETRIES
        } else {
            1
        };
        let mut last = ToolError::new("tool was not run");
        for attempt in 1..=attempts {
            match run_once(entry, args.clone()).await {
                Ok(data) => return ToolResult::ok(data),
                Err(e) => {
                    tracing::debug!(attempt, error = %e.message, "tool call failed");
                    let retry = e.retryable;
                    last = e;
                    if !retry {
                        break;
                    }
                }
            }
        }
        ToolResult {
            data: last.data,
            ..ToolResult::error(last.message)
        }
    }

    fn unknown_tool(&self, name: &str) -> String {
        let mut names = self.names();
        names.push(FINISH);
        format!(
            "unknown tool `{name}`; available tools: {}",
            names.join(", ")
        )
    }
}

/// One attempt, so that a panic or a hang cannot take the loop with it: in
/// its own task, or in the caller's for a tool that declares it never
/// holds its thread ([`ToolSpec::inline`]), its panic caught there.
async fn run_once(entry: &Registered, args: Map<String, Value>) -> Result<Value, ToolError> {
    let spec = &entry.spec;
    if spec.inline {
        let call = AssertUnwindSafe(entry.tool.call(args)).catch_unwind();
        return match tokio::time::timeout(spec.timeout, call).await {
            Ok(Ok(result)) => result,
            Ok(Err(panic)) => Err(crashed(spec, panic.as_ref())),
            Err(_) => Err(timed_out(spec)),
        };
    }
    let tool = Arc::clone(&entry.tool);
    // The run's session (see `tools::session`) goes with the call.
    let session = super::session::current();
    let mut task = tokio::spawn(super::session::carried(session, async move {
        tool.call(args).await
    }));
    match tokio::time::timeout(spec.timeout, &mut task).await {
        Ok(Ok(result)) => result,
        Ok(Err(join)) if join.is_panic() => Err(crashed(spec, join.into_panic().as_ref())),
        Ok(Err(_)) => Err(ToolError::new(format!(
            "tool `{}` was cancelled",
            spec.name
        ))),
        Err(_) => {
            task.abort();
            Err(timed_out(spec))
        }
    }
}

/// The error of a call that panicked.
fn crashed(spec: &ToolSpec, panic: &(dyn std::any::Any + Send)) -> ToolError {
    let message = crate::text::panic_message(panic);
    ToolError::new(format!("tool `{}` crashed: {message}", spec.name))
}

/// The error of a call that ran past its limit.
fn timed_out(spec: &ToolSpec) -> ToolError {
    ToolError::transient(format!(
        "tool `{}` timed out after {:?}",
        spec.name, spec.timeout
    ))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use async_trait::async_trait;
    use serde_json::json;

    use super::*;
    use crate::tools::{ParamKind, ParamSpec, ToolStatus};

    struct Flaky {
        calls: Arc<AtomicUsize>,
        idempotent: bool,
    }

    #[async_trait]
    impl Tool for Flaky {
        fn spec(&self) -> ToolSpec {
            let spec = ToolSpec::new("flaky", "fails twice").param(ParamSpec::new(
                "n",
                ParamKind::Integer,
                "n",
            ));
            if self.idempotent {
                spec.idempotent()
            } else {
                spec
            }
        }
        async fn call(&self, _args: Map<String, Value>) -> Result<Value, ToolError> {
            if self.calls.fetch_add(1, Ordering::SeqCst) < 2 {
                Err(ToolError::transient("busy"))
            } else {
                Ok(json!("finally"))
            }
        }
    }

    struct Panics;

    #[async_trait]
    impl Tool for Panics {
        fn spec(&self) -> ToolSpec {
            ToolSpec::new("boom", "panics")
        }
        async fn call(&self, _args: Map<String, Value>) -> Result<Value, ToolError> {
            panic!("kaboom")
        }
    }

    struct Sleeps;

    #[test]
    fn the_prompt_lists_tools_in_registration_order_and_names_stay_sorted() {
        let mut toolbox = Toolbox::new();
        toolbox.register(Sleeps);
        toolbox.register(Panics);
        toolbox.register(Flaky {
            calls: Arc::default(),
            idempotent: false,
        });
        // Registering a name again replaces the tool but keeps its place.
        toolbox.register(Panics);
        let listed = |t: &Toolbox| -> Vec<String> {
            t.render()
                .lines()
                .filter_map(|l| l.strip_prefix("- ")?.split(':').next().map(String::from))
                .collect()
        };
        assert_eq!(listed(&toolbox), ["sleepy", "boom", "flaky"]);
        let order: Vec<String> = toolbox.tools().map(|t| t.spec().name).collect();
        assert_eq!(order, ["sleepy", "boom", "flaky"]);
        assert_eq!(toolbox.names(), ["boom", "flaky", "sleepy"]);
        // A subset keeps the parent's order, whatever order it is asked in.
        assert_eq!(
            listed(&toolbox.subset(&["flaky", "sleepy"])),
            ["sleepy", "flaky"]
        );
    }
    #[async_trait]
    impl Tool for Sleeps {
        fn spec(&self) -> ToolSpec {
            ToolSpec::new("sleepy", "hangs").timeout(Duration::from_millis(50))
        }
        async fn call(&self, _args: Map<String, Value>) -> Result<Value, ToolError> {
            tokio::time::sleep(Duration::from_secs(60)).await;
            Ok(Value::Null)
        }
    }

    #[tokio::test]
    async fn idempotent_tools_are_retried_and_others_are_not() {
        let calls = Arc::new(AtomicUsize::new(0));
        let mut tb = Toolbox::new();
        tb.register(Flaky {
            calls: calls.clone(),
            idempotent: true,
        });
        let r = tb.call("flaky", &json!({"n": "1"})).await;
        assert_eq!(r.data, json!("finally"));
        assert_eq!(calls.load(Ordering::SeqCst), 3);

        let calls = Arc::new(AtomicUsize::new(0));
        let mut tb = Toolbox::new();
        tb.register(Flaky {
            calls: calls.clone(),
            idempotent: false,
        });
        let r = tb.call("flaky", &json!({})).await;
        assert_eq!(r.status, ToolStatus::Error);
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn panicking_tool_becomes_error_envelope() {
        let mut tb = Toolbox::new();
        tb.register(Panics);
        let r = tb.call("boom", &json!({})).await;
        assert_eq!(r.status, ToolStatus::Error);
        assert!(r.error.unwrap().contains("kaboom"));
    }

    #[tokio::test]
    async fn hanging_tool_times_out() {
        let mut tb = Toolbox::new();
        tb.register(Sleeps);
        let r = tb.call("sleepy", &json!({})).await;
        assert!(r.error.unwrap().contains("timed out"));
    }

    /// `T` declared to run in the caller's task.
    struct Inline<T>(T);

    #[async_trait]
    impl<T: Tool> Tool for Inline<T> {
        fn spec(&self) -> ToolSpec {
            self.0.spec().inline()
        }
        async fn call(&self, args: Map<String, Value>) -> Result<Value, ToolError> {
            self.0.call(args).await
        }
    }

    /// Answers with the id of the task it runs in.
    struct TaskId;

    #[async_trait]
    impl Tool for TaskId {
        fn spec(&self) -> ToolSpec {
            ToolSpec::new("task_id", "the task it runs in")
        }
        async fn call(&self, _args: Map<String, Value>) -> Result<Value, ToolError> {
            Ok(json!(tokio::task::try_id().map(|id| id.to_string())))
        }
    }

    #[tokio::test]
    async fn an_inline_tool_runs_in_the_callers_task_and_is_bounded_there_too() {
        let mut tb = Toolbox::new();
        tb.register(Inline(Panics));
        tb.register(Inline(Sleeps));
        tb.register(Inline(TaskId));
        let r = tb.call("boom", &json!({})).await;
        assert_eq!(r.status, ToolStatus::Error);
        assert!(r.error.unwrap().contains("tool `boom` crashed: kaboom"));
        let r = tb.call("sleepy", &json!({})).await;
        assert!(r.error.unwrap().contains("tool `sleepy` timed out"));
        let tb = Arc::new(tb);
        let ids = |tb: Arc<Toolbox>| async move {
            tokio::spawn(async move {
                let caller = tokio::task::try_id().map(|id| id.to_string());
                (json!(caller), tb.call("task_id", &json!({})).await.data)
            })
            .await
            .unwrap()
        };
        let (caller, inside) = ids(Arc::clone(&tb)).await;
        assert_eq!(inside, caller, "an inline call runs in the caller's task");
        let mut spawned = Toolbox::new();
        spawned.register(TaskId);
        let (caller, inside) = ids(Arc::new(spawned)).await;
        assert_ne!(inside, caller, "other calls run in a task of their own");
        assert!(inside.is_string());
    }

    #[tokio::test]
    async fn unknown_tool_lists_real_tools() {
        let mut tb = Toolbox::new();
        tb.register(Panics);
        let r = tb.call("nope", &json!({})).await;
        assert_eq!(
            r.error.unwrap(),
            "unknown tool `nope`; available tools: boom, finish"
        );
    }
}
