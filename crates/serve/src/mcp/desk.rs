//! Where the MCP server's tools send their work: a service running in
//! this process, or a `hermes serve` reached over HTTP. Both answer with
//! the JSON the HTTP API gives, so an MCP client sees the same task
//! either way.

use serde_json::Value;

use crate::client::Client;
use crate::record::{role_summary, TaskSpec};
use crate::service::Service;

/// The tasks behind the MCP tools.
#[derive(Clone)]
pub enum Desk {
    /// A service in this process (`hermes mcp serve` with the serve flags).
    Local(Service),
    /// A running `hermes serve` (`hermes mcp serve --server URL`).
    Remote(Client),
}

impl Desk {
    /// Submits a task; answers as `POST /v1/tasks` does (`id`, `status`,
    /// `trace_id`).
    pub async fn submit(&self, spec: TaskSpec) -> Result<Value, String> {
        match self {
            Desk::Local(service) => service.accept(spec).map_err(|e| e.to_string()),
            Desk::Remote(client) => {
                let body = serde_json::to_value(&spec).map_err(|e| e.to_string())?;
                client.post("/v1/tasks", &body).await
            }
        }
    }

    /// Waits for task `id` to end, handing each of its events to
    /// `on_event` (kind, data) as it comes; then answers as `GET
    /// /v1/tasks/{id}` does.
    pub async fn wait(
        &self,
        id: &str,
        mut on_event: impl FnMut(&str, &Value) + Send,
    ) -> Result<Value, String> {
        match self {
            Desk::Local(service) => {
                let mut feed = service.feed(id, 0).map_err(|e| e.to_string())?;
                while let Some(event) = feed.next().await {
                    on_event(&event.kind, &event.data);
                }
            }
            Desk::Remote(client) => client.follow(id, on_event).await?,
        }
        self.status(id).await
    }

    /// Task `id` as `GET /v1/tasks/{id}` shows it.
    pub async fn status(&self, id: &str) -> Result<Value, String> {
        match self {
            Desk::Local(service) => service
                .task(id)
                .map(|record| record.detail())
                .map_err(|e| e.to_string()),
            Desk::Remote(client) => client.get(&format!("/v1/tasks/{id}")).await,
        }
    }

    /// The executor roles, as `GET /v1/roles` lists them.
    pub async fn roles(&self) -> Result<Value, String> {
        match self {
            Desk::Local(service) => Ok(Value::Array(
                service.roles().iter().map(role_summary).collect(),
            )),
            Desk::Remote(client) => client.get("/v1/roles").await,
        }
    }
}
