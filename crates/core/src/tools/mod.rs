//! Tools: what an agent can do besides thinking.
//!
//! A [`Tool`] is a [`ToolSpec`] plus an async `call`. The [`Toolbox`] is the
//! registry: it renders every spec into the prompt, validates and coerces
//! each call against the same spec, enforces the timeout, retries idempotent
//! tools, turns panics into errors, and always answers with a
//! [`ToolResult`] envelope. [`defaults::default_toolbox`] builds the
//! toolbox the CLI offers: the built-in tools that work here plus MCP servers.

pub mod builtin;
pub mod defaults;
mod function;
pub mod json_schema;
mod listing;
pub mod mcp;
mod memo;
mod result;
pub mod sandbox;
mod scratch;
pub mod session;
mod spec;
mod toolbox;
mod validate;
mod workspace;

use async_trait::async_trait;
use serde_json::{Map, Value};

pub use function::{tool_fn, FnTool};
pub use listing::Listing;
pub use result::{failure_line, ToolError, ToolResult, ToolStatus};
pub use spec::{ParamKind, ParamSpec, ToolEffect, ToolSpec, DEFAULT_TOOL_TIMEOUT};
pub use toolbox::Toolbox;
pub use validate::{validate_args, InvalidArgs};
pub use workspace::{Workspace, STATE_DIR};

/// Something the agent can call. Implement this for a custom tool and
/// register it with [`Toolbox::register`].
#[async_trait]
pub trait Tool: Send + Sync + 'static {
    /// The tool's description; rendered into the prompt and used to validate calls.
    fn spec(&self) -> ToolSpec;

    /// Runs the tool with args that already passed validation and coercion.
    async fn call(&self, args: Map<String, Value>) -> Result<Value, ToolError>;
}
