//! The MCP server's face: three tools (`submit_task`, `task_status`,
//! `list_roles`), their schemas, and their calls checked and sent to the
//! [`Desk`]. A waiting `submit_task` reports the task's events as MCP
//! progress notifications when the client asked for them.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities,
    ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::desk::Desk;
use crate::record::TaskSpec;

/// The MCP server over a [`Desk`].
#[derive(Clone)]
pub struct McpFace {
    desk: Arc<Desk>,
}

impl McpFace {
    /// A server whose tools send their work to `desk`.
    pub fn new(desk: Desk) -> Self {
        Self {
            desk: Arc::new(desk),
        }
    }
}

/// The arguments of `submit_task`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SubmitArgs {
    goal: String,
    #[serde(default = "yes")]
    wait: bool,
    #[serde(default)]
    timeout_secs: Option<u64>,
    #[serde(default)]
    workspace: Option<String>,
}

fn yes() -> bool {
    true
}

/// The arguments of `task_status`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StatusArgs {
    id: String,
}

/// The arguments of `list_roles` (none).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoArgs {}

/// The tools this server offers, with their input schemas.
pub fn tools() -> Vec<Tool> {
    let schema = |value: Value| match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(Map::new()),
    };
    vec![
        Tool::new(
            "submit_task",
            "Hand a complex task to the Hermes planner: it splits the task into subtasks, runs them on executor agents (file, code and web tools in its workspace) and answers with the report: status (finished, failed, timeout, error, cancelled), result, subtasks, replans, usage. With wait=false it answers at once with the task's id; follow it with task_status.",
            schema(json!({
                "type": "object",
                "properties": {
                    "goal": {"type": "string", "description": "The task in plain words."},
                    "wait": {"type": "boolean", "description": "Wait for the task to end and answer with its report (default true); false: answer with its id at once.", "default": true},
                    "timeout_secs": {"type": "integer", "minimum": 1, "description": "Task-wide deadline in seconds (default: the server's)."},
                    "workspace": {"type": "string", "description": "A folder under the server's workspace for this task's files."}
                },
                "required": ["goal"],
                "additionalProperties": false
            })),
        ),
        Tool::new(
            "task_status",
            "The state of a task submitted before: status (queued, running, finished, failed, timeout, error, cancelled), result once ended, subtasks, replans, usage.",
            schema(json!({
                "type": "object",
                "properties": {"id": {"type": "string", "description": "The task's id, as submit_task gave it (task-N)."}},
                "required": ["id"],
                "additionalProperties": false
            })),
        ),
        Tool::new(
            "list_roles",
            "The executor roles the planner can give subtasks to, as {\"roles\": [{name, description, tools, model}]}.",
            schema(json!({"type": "object", "properties": {}, "additionalProperties": false})),
        ),
    ]
}

/// Reads a tool's arguments as `T`; a mismatch is the client's error
/// (invalid params), naming the tool.
fn arguments<T: for<'de> Deserialize<'de>>(
    tool: &str,
    arguments: Option<Map<String, Value>>,
) -> Result<T, McpError> {
    serde_json::from_value(Value::Object(arguments.unwrap_or_default()))
        .map_err(|e| McpError::invalid_params(format!("{tool}: {e}"), None))
}

/// A task id as the server makes them: letters, digits, `-` and `_`.
fn check_id(id: &str) -> Result<(), McpError> {
    let fine = !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if fine {
        Ok(())
    } else {
        Err(McpError::invalid_params(
            format!("task_status: `{id}` is not a task id (task-N)"),
            None,
        ))
    }
}

/// The answer: the JSON as structured content and as text; a failure
/// of the work (not of the call) is a tool error the client's model reads.
fn answer(result: Result<Value, String>) -> CallToolResponse {
    match result {
        Ok(value) => CallToolResult::structured(value).into(),
        Err(error) => CallToolResult::error(vec![ContentBlock::text(error)]).into(),
    }
}

/// One progress line for a task event, as `hermes plan` would say it.
pub fn progress_line(kind: &str, data: &Value) -> String {
    let subtask = data["subtask"].as_str().unwrap_or_default();
    match kind {
        "planned" => format!(
            "planned {} subtask(s)",
            data["subtasks"].as_array().map_or(0, Vec::len)
        ),
        "subtask_started" => format!(
            "{subtask} started ({})",
            data["role"].as_str().unwrap_or_default()
        ),
        "round" => format!(
            "{subtask} round {}: {} {}",
            data["round"],
            data["action"].as_str().unwrap_or_default(),
            data["status"].as_str().unwrap_or_default()
        ),
        "subtask_finished" => format!("{subtask} finished"),
        "subtask_failed" => format!("{subtask} {}", data["status"].as_str().unwrap_or("failed")),
        "task_ended" => format!(
            "task ended: {}",
            data["status"].as_str().unwrap_or_default()
        ),
        other => other.replace('_', " "),
    }
}

impl McpFace {
    async fn submit(
        &self,
        args: SubmitArgs,
        context: RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let spec = TaskSpec {
            goal: args.goal,
            timeout_secs: args.timeout_secs,
            max_replans: None,
            workspace: args.workspace,
            token_budget: None,
            call_budget: None,
        };
        let accepted = match self.desk.submit(spec).await {
            Ok(accepted) => accepted,
            Err(error) => return answer(Err(error)),
        };
        if !args.wait {
            return answer(Ok(accepted));
        }
        let id = accepted["id"].as_str().unwrap_or_default().to_string();
        // Progress goes out from its own task: the wait must not block on
        // the client reading notifications.
        let (lines, mut outbox) = tokio::sync::mpsc::unbounded_channel::<String>();
        let forwarder = context.meta.get_progress_token().map(|token| {
            let peer = context.peer.clone();
            tokio::spawn(async move {
                let mut step = 0.0;
                while let Some(line) = outbox.recv().await {
                    step += 1.0;
                    let mut note = ProgressNotificationParam::new(token.clone(), step);
                    note.message = Some(line);
                    if peer.notify_progress(note).await.is_err() {
                        break;
                    }
                }
            })
        });
        let waited = tokio::select! {
            waited = self.desk.wait(&id, |kind, data| {
                let _ = lines.send(progress_line(kind, data));
            }) => waited,
            // The client gave up on the call; the task goes on.
            _ = context.ct.cancelled() => Err(format!("stopped waiting; {id} keeps running")),
        };
        drop(lines);
        if let Some(forwarder) = forwarder {
            let _ = forwarder.await;
        }
        answer(waited)
    }
}

impl ServerHandler for McpFace {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("hermes", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Hermes runs complex, multi-step tasks on a planner and executor agents. \
                 submit_task hands one over and (by default) waits for its report; \
                 task_status follows a task; list_roles shows who can do what.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        tools().into_iter().find(|tool| tool.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.as_ref();
        match name {
            "submit_task" => {
                let args: SubmitArgs = arguments(name, request.arguments)?;
                if args.timeout_secs == Some(0) {
                    return Err(McpError::invalid_params(
                        "submit_task: `timeout_secs` must be at least 1",
                        None,
                    ));
                }
                Ok(self.submit(args, context).await)
            }
            "task_status" => {
                let args: StatusArgs = arguments(name, request.arguments)?;
                check_id(&args.id)?;
                Ok(answer(self.desk.status(&args.id).await))
            }
            "list_roles" => {
                let _: NoArgs = arguments(name, request.arguments)?;
                // Structured content is an object in MCP: the list goes
                // under `roles`.
                Ok(answer(
                    self.desk
                        .roles()
                        .await
                        .map(|roles| json!({ "roles": roles })),
                ))
            }
            other => Err(McpError::invalid_params(
                format!(
                    "no tool named `{other}`; the tools are submit_task, task_status, list_roles"
                ),
                None,
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_has_an_object_schema_that_forbids_other_fields() {
        let tools = tools();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(names, ["submit_task", "task_status", "list_roles"]);
        for tool in &tools {
            assert_eq!(tool.input_schema["type"], "object", "{}", tool.name);
            assert_eq!(tool.input_schema["additionalProperties"], false);
        }
    }

    #[test]
    fn arguments_are_checked_against_their_fields() {
        let ok: SubmitArgs =
            arguments("submit_task", json!({"goal": "x"}).as_object().cloned()).unwrap();
        assert!(ok.wait, "waits by default");
        let unknown = arguments::<SubmitArgs>(
            "submit_task",
            json!({"goal": "x", "priority": 1}).as_object().cloned(),
        );
        let message = unknown.err().unwrap().message;
        assert!(message.contains("priority"), "{message}");
        assert!(arguments::<SubmitArgs>("submit_task", None).is_err());
        assert!(check_id("task-12").is_ok());
        assert!(check_id("../roles").is_err());
    }

    #[test]
    fn progress_lines_read_like_the_plan_output() {
        let line = progress_line(
            "round",
            &json!({"subtask": "s1", "round": 2, "action": "read_file", "status": "ok"}),
        );
        assert_eq!(line, "s1 round 2: read_file ok");
        assert_eq!(
            progress_line("task_ended", &json!({"status": "finished"})),
            "task ended: finished"
        );
    }
}
