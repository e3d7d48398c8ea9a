//! Tool options shared by `run`, `plan` and `roles`, and the toolbox they build.

use std::path::{Path, PathBuf};

use clap::Args;
use hermes::tools::builtin::{self, HttpFetch, HttpFetchConfig, SearchProvider, WebSearch};
use hermes::tools::mcp::{self, McpConfigFile, McpServerConfig};
use hermes::tools::{Toolbox, Workspace};

/// Which tools the agents get and how they are limited.
#[derive(Debug, Clone, Default, Args)]
pub struct ToolArgs {
    /// Let run_code write to the workspace (read-only by default).
    #[arg(long)]
    pub allow_code_writes: bool,
    /// Let http_fetch reach private and loopback addresses (local use only).
    #[arg(long)]
    pub allow_private_network: bool,
    /// Restrict http_fetch to these hosts and their subdomains (repeatable).
    #[arg(long = "allow-host", value_name = "HOST")]
    pub allow_hosts: Vec<String>,
    /// Start an MCP server over stdio and add its tools (repeatable), e.g.
    /// --mcp "npx -y @modelcontextprotocol/server-everything".
    #[arg(long = "mcp", value_name = "COMMAND ARGS")]
    pub mcp: Vec<String>,
    /// Config file with [[mcp]] tables (default: ./hermes.toml when present).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Offer only these tools (comma-separated names), e.g. --tools read_file,write_file.
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    pub tools: Option<Vec<String>>,
}

impl ToolArgs {
    /// The MCP servers from `--mcp` flags and the config file.
    pub fn mcp_servers(&self) -> Result<Vec<McpServerConfig>, String> {
        let mut servers = Vec::new();
        let default = Path::new("hermes.toml");
        let file = self
            .config
            .as_deref()
            .or_else(|| default.exists().then_some(default));
        if let Some(path) = file {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read config {}: {e}", path.display()))?;
            let parsed: McpConfigFile = toml::from_str(&text).map_err(|e| {
                format!(
                    "{}: {}",
                    path.display(),
                    e.to_string().trim().replace('\n', " ")
                )
            })?;
            servers.extend(parsed.mcp);
        }
        for line in &self.mcp {
            servers.push(McpServerConfig::from_command_line(line)?);
        }
        Ok(servers)
    }

    /// Every tool available here: file tools, run_code when bubblewrap
    /// works, http_fetch, web_search when a provider is configured, and the
    /// MCP servers' tools. What is missing is said once on stderr.
    pub async fn toolbox(&self, workspace: &Workspace) -> Result<Toolbox, String> {
        let mut toolbox = Toolbox::new();
        builtin::register_file_tools(&mut toolbox, workspace);
        if let Err(why) =
            builtin::register_run_code(&mut toolbox, workspace, self.allow_code_writes).await
        {
            eprintln!("warning: {why}");
        }
        toolbox.register(HttpFetch::new(HttpFetchConfig {
            allow_private: self.allow_private_network,
            allowed_hosts: self
                .allow_hosts
                .iter()
                .map(|h| h.to_ascii_lowercase())
                .collect(),
            ..HttpFetchConfig::default()
        }));
        match SearchProvider::from_env() {
            Ok(provider) => {
                toolbox.register(WebSearch::new(provider));
            }
            Err(why) => tracing::info!("{why}"),
        }
        for warning in mcp::register_servers(&mut toolbox, &self.mcp_servers()?).await {
            eprintln!("warning: {warning}; continuing without its tools");
        }
        match &self.tools {
            None => Ok(toolbox),
            Some(names) => {
                let known = known_tools(&toolbox);
                if let Some(unknown) = names.iter().find(|n| !known.contains(&n.as_str())) {
                    return Err(format!(
                        "--tools: unknown tool `{unknown}`; available tools: {}",
                        toolbox.names().join(", ")
                    ));
                }
                Ok(toolbox.subset(names))
            }
        }
    }
}

/// Names a role may list: every registered tool plus the built-in names
/// that are unavailable here (dropped from the role with a warning).
pub fn known_tools(toolbox: &Toolbox) -> Vec<&str> {
    let registered = toolbox.names();
    let missing: Vec<&str> = builtin::NAMES
        .iter()
        .copied()
        .filter(|b| !registered.contains(b))
        .collect();
    registered.into_iter().chain(missing).collect()
}
