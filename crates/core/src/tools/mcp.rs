//! MCP servers as tools, over stdio, with the official Rust SDK (`rmcp`).
//!
//! Each server's tools are registered in the same [`Toolbox`] as built-in
//! ones: their JSON schemas become tool specs, so validation, coercion,
//! timeouts and the `{status, data, error}` envelope apply to them too. A
//! server that fails to start is reported (and its tools are missing); a
//! server that dies mid-run turns each later call into an error observation.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
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

/// The config file read when none is named: `hermes.toml` in the current directory.
pub const DEFAULT_CONFIG_FILE: &str = "hermes.toml";

/// Why MCP servers could not be configured or started.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// A `--mcp` command line is not valid shell syntax.
    #[error("cannot parse MCP command `{line}`: {reason}; quote arguments as in a shell, e.g. \"npx -y @modelcontextprotocol/server-everything\"")]
    BadCommandLine {
        /// The command line as given.
        line: String,
        /// What the shell-word splitter said.
        reason: String,
    },
    /// A `--mcp` command line has no program in it.
    #[error("empty MCP command; give the server's program and its arguments, e.g. \"npx -y @modelcontextprotocol/server-everything\"")]
    EmptyCommand,
    /// The config file could not be read.
    #[error("cannot read config {}: {source}; check the path given with --config", path.display())]
    ReadConfig {
        /// The config file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The config file is not valid TOML for `[[mcp]]` tables (the reason names the field).
    #[error("{}: {reason}", path.display())]
    ParseConfig {
        /// The config file.
        path: PathBuf,
        /// What is wrong, on one line.
        reason: String,
    },
    /// The server's program could not be started.
    #[error("MCP server `{server}` cannot start `{command}`: {source}; check that the program is installed and on PATH")]
    Spawn {
        /// The server's display name.
        server: String,
        /// The program that was run.
        command: String,
        /// The spawn error.
        #[source]
        source: std::io::Error,
    },
    /// The server started but did not speak MCP, or failed while listing its tools.
    #[error("MCP server `{server}` {stage}: {reason}; check that the command starts an MCP server speaking stdio")]
    Protocol {
        /// The server's display name.
        server: String,
        /// What it did not do: "did not complete the MCP handshake", "did not list its tools".
        stage: &'static str,
        /// The SDK's error, in words.
        reason: String,
    },
    /// The server did not finish starting in time.
    #[error("MCP server `{server}` did not start within {timeout:?}; check that it runs on its own (it may be waiting for a download or a login)")]
    StartTimeout {
        /// The server's display name.
        server: String,
        /// The time it had.
        timeout: Duration,
    },
}

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
    pub fn from_command_line(line: &str) -> Result<Self, McpError> {
        let mut words = shell_words::split(line).map_err(|e| McpError::BadCommandLine {
            line: line.to_string(),
            reason: e.to_string(),
        })?;
        if words.is_empty() {
            return Err(McpError::EmptyCommand);
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

/// Starts `config`'s server and returns its tools (which share the connection).
pub async fn connect(config: &McpServerConfig) -> Result<Vec<McpTool>, McpError> {
    let name = config.display_name();
    let mut command = tokio::process::Command::new(&config.command);
    command.args(&config.args).envs(&config.env);
    let protocol = |stage: &'static str, e: &dyn std::fmt::Display| McpError::Protocol {
        server: name.clone(),
        stage,
        reason: e.to_string(),
    };
    let start = async {
        let transport = TokioChildProcess::new(command).map_err(|source| McpError::Spawn {
            server: name.clone(),
            command: config.command.clone(),
            source,
        })?;
        let service = ()
            .serve(transport)
            .await
            .map_err(|e| protocol("did not complete the MCP handshake", &e))?;
        let tools = service
            .list_all_tools()
            .await
            .map_err(|e| protocol("did not list its tools", &e))?;
        Ok::<_, McpError>((service, tools))
    };
    let (service, tools) = tokio::time::timeout(START_TIMEOUT, start)
        .await
        .map_err(|_| McpError::StartTimeout {
            server: name.clone(),
            timeout: START_TIMEOUT,
        })??;
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
                ToolSpec::new(remote.clone(), description.trim()).untrusted(),
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
/// registered as `<server>_<tool>`. Returns one error per server that
/// could not start (the caller goes on without its tools, or stops).
pub async fn register_servers(toolbox: &mut Toolbox, configs: &[McpServerConfig]) -> Vec<McpError> {
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

impl McpConfigFile {
    /// Reads and parses the config file at `path`.
    pub fn load(path: &Path) -> Result<Self, McpError> {
        let text = std::fs::read_to_string(path).map_err(|source| McpError::ReadConfig {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&text).map_err(|reason| McpError::ParseConfig {
            path: path.to_path_buf(),
            reason,
        })
    }

    /// `path` when given (it must exist), else [`DEFAULT_CONFIG_FILE`] in the
    /// current directory when present, else an empty config.
    pub fn load_or_default(path: Option<&Path>) -> Result<Self, McpError> {
        let default = Path::new(DEFAULT_CONFIG_FILE);
        match path.or_else(|| default.exists().then_some(default)) {
            Some(path) => Self::load(path),
            None => Ok(Self::default()),
        }
    }

    fn parse(text: &str) -> Result<Self, String> {
        toml::from_str(text).map_err(|e| e.to_string().trim().replace('\n', " "))
    }
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
        assert!(matches!(
            McpServerConfig::from_command_line("  "),
            Err(McpError::EmptyCommand)
        ));
        assert!(matches!(
            McpServerConfig::from_command_line("npx \"unclosed"),
            Err(McpError::BadCommandLine { .. })
        ));
    }

    #[test]
    fn config_files_name_the_file_and_the_field() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hermes.toml");
        std::fs::write(
            &path,
            "[[mcp]]\nname = \"e\"\ncommand = \"srv\"\nargs = [\"stdio\"]\n",
        )
        .unwrap();
        let file = McpConfigFile::load(&path).unwrap();
        assert_eq!(file.mcp[0].display_name(), "e");
        assert_eq!(file.mcp[0].args, ["stdio"]);

        std::fs::write(&path, "[[mcp]]\ncommand = \"x\"\nargz = []\n").unwrap();
        let error = McpConfigFile::load(&path).unwrap_err();
        assert!(matches!(error, McpError::ParseConfig { .. }), "{error:?}");
        let text = error.to_string();
        assert!(
            text.contains("hermes.toml") && text.contains("argz"),
            "{text}"
        );
        assert!(!text.contains('\n'), "{text}");

        let missing = McpConfigFile::load(&dir.path().join("nope.toml")).unwrap_err();
        assert!(
            matches!(missing, McpError::ReadConfig { .. }),
            "{missing:?}"
        );
        assert!(McpConfigFile::load_or_default(Some(&dir.path().join("nope.toml"))).is_err());
    }
}
