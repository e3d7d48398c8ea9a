//! Tool flags shared by `run`, `plan` and `roles`: they map onto the
//! library's [`ToolOptions`]; the toolbox policy lives in
//! [`hermes::tools::defaults`].

use std::path::PathBuf;

use clap::Args;
use hermes::tools::builtin::CodeOptions;
use hermes::tools::defaults::{self, ToolOptions, ToolsError};
use hermes::tools::mcp::{McpConfigFile, McpServerConfig};
use hermes::tools::{Toolbox, Workspace};

/// Re-exported for `plan`, which checks roles against the built toolbox.
pub use hermes::tools::defaults::known_tools;

/// Which tools the agents get and how they are limited.
#[derive(Debug, Clone, Default, Args)]
pub struct ToolArgs {
    /// Let run_code write to the workspace (read-only by default).
    #[arg(long)]
    pub allow_code_writes: bool,
    /// Python run by run_code does not get the workspace tools as functions
    /// (read_file(path), write_file(path, content), ...) and keeps no
    /// variables from one call to the next.
    #[arg(long)]
    pub no_code_actions: bool,
    /// Files a successful run_code program writes in its copy of a
    /// read-only workspace are only shown (unsaved_writes), not saved.
    #[arg(long)]
    pub no_save_code_writes: bool,
    /// Under the grammar, hold run_code's Python to a line shape: each
    /// for/if/with/… header ends at its colon and the block is indented on
    /// the lines below (off by default: EVALS.md, section 26).
    #[arg(long)]
    pub code_line_shape: bool,
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
    /// The library options these flags ask for; reads the config file but
    /// starts nothing.
    pub fn options(&self) -> Result<ToolOptions, ToolsError> {
        let mut mcp = McpConfigFile::load_or_default(self.config.as_deref())?.mcp;
        for line in &self.mcp {
            mcp.push(McpServerConfig::from_command_line(line)?);
        }
        Ok(ToolOptions {
            allow_code_writes: self.allow_code_writes,
            code: CodeOptions {
                code_actions: !self.no_code_actions,
                save_writes: !self.no_save_code_writes,
                line_shape: self.code_line_shape,
            },
            allow_private_network: self.allow_private_network,
            allowed_hosts: self.allow_hosts.clone(),
            mcp,
            only: self.tools.clone(),
            ..ToolOptions::default()
        })
    }

    /// The default toolbox for these flags; what is unavailable is said on
    /// stderr, once per tool or server.
    pub async fn toolbox(&self, workspace: &Workspace) -> Result<Toolbox, ToolsError> {
        let built = defaults::default_toolbox(workspace, &self.options()?).await?;
        for warning in &built.warnings {
            eprintln!("warning: {warning}");
        }
        Ok(built.toolbox)
    }
}
