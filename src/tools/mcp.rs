//! MCP servers as tools, over stdio, with the official Rust SDK (`rmcp`).
//!
//! Each server's tools are registered in the same [`Toolbox`] as built-in
//! ones: their JSON schemas become tool specs, so validation, coercion,
//! timeouts and the `{status, data, error}` envelope apply to them too. A
//! server that fails to start is reported (and its tools are missing); a
//! server that dies mid-run turns each later call into an error observation.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use rmcp::model::{CallToolRequestParams, ContentBlock};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::ServiceExt;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::json_schema::params_from_schema;
use super::{Tool, ToolError, ToolSpec, Toolbox};

/// How long a server may take to start and list its tools.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// One MCP server to start: an `[[mcp]]` table in the config file, or a
/// `--mcp "COMMAND ARGS"` flag.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// Name used in messages and to tell clashing tool names apart
    /// (default: the command's last path part).
    #[serde(default)]
    pub name: Option<String>,
    /// The program to run.
    pub command: String,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Extra environment variables.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

impl McpServerConfig {
    /// Parses a shell-style command line (`npx -y @scope/server --flag "a b"`).
    pub fn from_command_line(line: &str) -> Result<Self, String> {
        let mut words = shell_words::split(line)
            .map_err(|e| format!("cannot parse MCP command `{line}`: {e}"))?;
        if words.is_empty() {
            return Err("empty MCP command".into());
        }
        let command = words.remove(0);
        Ok(Self {
            name: None,
            command,
            args: words,
            env: BTreeMap::new(),
        })
    }

    /// The server's display name.
    pub fn display_name(&self) -> String {
        // The first word that names a program or package (`/path/server`,
        // `@scope/server`), skipping runners such as `npx -y` or `timeout 3`.
        self.name.clone().unwrap_or_else(|| {
            let word = std::iter::once(&self.command)
                .chain(&self.args)
                .find(|w| w.contains('/') || w.starts_with('@'))
                .unwrap_or(&self.command);
            word.rsplit('/').next().unwrap_or(word).to_string()
        })
    }
}

/// A running MCP server connection, shared by its tools.
pub struct McpConnection {
    name: String,
    service: RunningService<RoleClient, ()>,
}

/// Starts `config`'s server and returns its connection and tools.
pub async fn connect(config: &McpServerConfig) -> Result<Vec<McpTool>, String> {
    let name = config.display_name();
    let mut command = tokio::process::Command::new(&config.command);
    command.args(&config.args).envs(&config.env);
    let start = async {
        let transport = TokioChildProcess::new(command)
            .map_err(|e| format!("cannot start `{}`: {e}", config.command))?;
        let service = ()
            .serve(transport)
            .await
            .map_err(|e| format!("did not complete the MCP handshake: {e}"))?;
        let tools = service
            .list_all_tools()
            .await
            .map_err(|e| format!("did not list its tools: {e}"))?;
        Ok::<_, String>((service, tools))
    };
    let (service, tools) = tokio::time::timeout(START_TIMEOUT, start)
        .await
        .map_err(|_| format!("MCP server `{name}` did not start within {START_TIMEOUT:?}"))?
        .map_err(|e| format!("MCP server `{name}` {e}"))?;
    let connection = Arc::new(McpConnection {
        name: name.clone(),
        service,
    });
    Ok(tools
        .into_iter()
        .map(|tool| {
            let remote = tool.name.to_string();
            let description = tool.description.as_deref().unwrap_or("").to_string();
            let params = params_from_schema(&tool.input_schema);
            let description = format!("{description} (from MCP server {name})");
            let spec = params.into_iter().fold(
                ToolSpec::new(remote.clone(), description.trim()),
                ToolSpec::param,
            );
            McpTool {
                connection: Arc::clone(&connection),
                spec,
                remote,
            }
        })
        .collect())
}

/// Starts every server and registers its tools; a name already taken is
/// registered as `<server>_<tool>`. Returns one warning per server that
/// could not start (the run goes on without its tools).
pub async fn register_servers(toolbox: &mut Toolbox, configs: &[McpServerConfig]) -> Vec<String> {
    let mut warnings = Vec::new();
    for config in configs {
        match connect(config).await {
            Ok(tools) => {
                for mut tool in tools {
                    if toolbox.names().contains(&tool.spec.name.as_str()) {
                        let renamed = format!(
                            "{}_{}",
                            tool.connection
                                .name
                                .replace(|c: char| !c.is_alphanumeric(), "_"),
                            tool.spec.name
                        );
                        tracing::warn!(
                            "tool `{}` of MCP server `{}` is registered as `{renamed}`",
                            tool.spec.name,
                            tool.connection.name
                        );
                        tool.spec.name = renamed;
                    }
                    toolbox.register(tool);
                }
            }
            Err(e) => warnings.push(e),
        }
    }
    warnings
}

/// One tool of an MCP server.
pub struct McpTool {
    connection: Arc<McpConnection>,
    spec: ToolSpec,
    remote: String,
}

#[async_trait]
impl Tool for McpTool {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    async fn call(&self, args: Map<String, Value>) -> Result<Value, ToolError> {
        let server = &self.connection.name;
        let mut params = CallToolRequestParams::new(self.remote.clone());
        params.arguments = Some(args);
        let result = self
            .connection
            .service
            .call_tool(params)
            .await
            .map_err(|e| {
                ToolError::new(format!(
                    "MCP server `{server}` failed on `{}`: {e}",
                    self.remote
                ))
            })?;
        let texts: Vec<String> = result
            .content
            .iter()
            .map(|block| match block {
                ContentBlock::Text(text) => text.text.clone(),
                other => serde_json::to_string(other).unwrap_or_default(),
            })
            .collect();
        let data = match (&result.structured_content, texts.len()) {
            (Some(structured), _) => structured.clone(),
            (None, 1) => Value::String(texts[0].clone()),
            (None, _) => Value::Array(texts.into_iter().map(Value::String).collect()),
        };
        if result.is_error == Some(true) {
            return Err(ToolError::with_data(
                format!("`{}` reported an error", self.remote),
                data,
            ));
        }
        Ok(data)
    }
}

/// The `[[mcp]]` tables of a Hermes config file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpConfigFile {
    /// MCP servers to start.
    #[serde(default)]
    pub mcp: Vec<McpServerConfig>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines_are_split_like_a_shell() {
        let c = McpServerConfig::from_command_line(
            "npx -y @modelcontextprotocol/server-everything --opt \"a b\"",
        )
        .unwrap();
        assert_eq!(c.command, "npx");
        assert_eq!(
            c.args,
            [
                "-y",
                "@modelcontextprotocol/server-everything",
                "--opt",
                "a b"
            ]
        );
        assert_eq!(
            McpServerConfig::from_command_line("npx -y @modelcontextprotocol/server-everything")
                .unwrap()
                .display_name(),
            "server-everything"
        );
        assert_eq!(
            McpServerConfig::from_command_line("timeout 3 /x/mcp-server-everything stdio")
                .unwrap()
                .display_name(),
            "mcp-server-everything"
        );
        assert_eq!(
            McpServerConfig::from_command_line("my-server --port 1")
                .unwrap()
                .display_name(),
            "my-server"
        );
        assert!(McpServerConfig::from_command_line("  ").is_err());
    }
}
