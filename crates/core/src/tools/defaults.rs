//! The toolbox Hermes offers by default, and the policy behind it.
//!
//! [`default_toolbox`] registers every tool that works here: the file tools
//! (confined to the workspace), `run_code` when bubblewrap can sandbox it,
//! `http_fetch` (public addresses only unless allowed), `web_search` when a
//! provider is configured, and the tools of the configured MCP servers.
//! What is unavailable comes back as warnings for the caller to show; the
//! library prints nothing.

use super::builtin::{
    self, HttpFetch, HttpFetchConfig, SearchConfigError, SearchProvider, WebSearch,
};
use super::mcp::{self, McpError, McpServerConfig};
use super::{Toolbox, Workspace};

/// Which tools [`default_toolbox`] registers and how they are limited.
#[derive(Debug, Clone, Default)]
pub struct ToolOptions {
    /// Let `run_code` write to the workspace (read-only by default).
    pub allow_code_writes: bool,
    /// Code actions and the saving of what code wrote (see
    /// [`CodeOptions`](super::builtin::CodeOptions)).
    pub code: super::builtin::CodeOptions,
    /// Let `http_fetch` reach private and loopback addresses (local use only).
    pub allow_private_network: bool,
    /// Restrict `http_fetch` to these hosts and their subdomains (empty: any public host).
    pub allowed_hosts: Vec<String>,
    /// Where `web_search` sends queries.
    pub search: SearchChoice,
    /// MCP servers to start; their tools join the built-in ones.
    pub mcp: Vec<McpServerConfig>,
    /// Offer only these tools, by name (`None`: every available tool).
    pub only: Option<Vec<String>>,
}

impl ToolOptions {
    /// Whether `name` passes the [`ToolOptions::only`] filter.
    fn wants(&self, name: &str) -> bool {
        self.only
            .as_ref()
            .is_none_or(|only| only.iter().any(|n| n == name))
    }

    /// Whether the MCP servers must start: some are configured and the
    /// `only` filter (if any) names a tool that is not built in.
    fn needs_mcp(&self) -> bool {
        !self.mcp.is_empty()
            && self.only.as_ref().is_none_or(|only| {
                only.iter()
                    .any(|name| !builtin::NAMES.contains(&name.as_str()))
            })
    }
}

/// Where `web_search` sends queries.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum SearchChoice {
    /// The provider the environment configures
    /// ([`SearchProvider::from_env`]); when none is configured `web_search`
    /// is left out quietly, when one is misconfigured that is a warning.
    #[default]
    FromEnv,
    /// This provider.
    Provider(SearchProvider),
    /// No `web_search`.
    Off,
}

/// The toolbox [`default_toolbox`] built, and what it had to leave out.
pub struct DefaultToolbox {
    /// The registered tools.
    pub toolbox: Toolbox,
    /// One line per tool or server that is unavailable here (no
    /// bubblewrap, an MCP server that failed to start, a misconfigured
    /// search provider), for the caller to show.
    pub warnings: Vec<String>,
}

/// Why the default toolbox could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ToolsError {
    /// [`ToolOptions::only`] names a tool that does not exist.
    #[error("unknown tool `{name}` in the list of tools to offer (--tools); available tools: {}", available.join(", "))]
    UnknownTool {
        /// The unknown name.
        name: String,
        /// The tools that are registered.
        available: Vec<String>,
    },
    /// The MCP configuration is wrong (a bad `--mcp` command line or config file).
    #[error(transparent)]
    Mcp(#[from] McpError),
}

/// Every tool that works here, limited as `options` says; see the module
/// docs. Fails only when [`ToolOptions::only`] names an unknown tool.
///
/// `run_code` is not probed and MCP servers are not started when `only`
/// leaves them out.
pub async fn default_toolbox(
    workspace: &Workspace,
    options: &ToolOptions,
) -> Result<DefaultToolbox, ToolsError> {
    let mut toolbox = Toolbox::new();
    let mut warnings = Vec::new();
    builtin::register_file_tools(&mut toolbox, workspace);
    if options.wants("run_code") {
        if let Err(why) = builtin::register_run_code(
            &mut toolbox,
            workspace,
            options.allow_code_writes,
            options.code,
        )
        .await
        {
            warnings.push(why.to_string());
        }
    }
    toolbox.register(HttpFetch::new(HttpFetchConfig {
        allow_private: options.allow_private_network,
        allowed_hosts: options
            .allowed_hosts
            .iter()
            .map(|h| h.to_ascii_lowercase())
            .collect(),
        ..HttpFetchConfig::default()
    }));
    let search = match &options.search {
        SearchChoice::FromEnv => match SearchProvider::from_env() {
            Ok(provider) => Some(provider),
            Err(SearchConfigError::NotConfigured) => {
                tracing::info!("{}", SearchConfigError::NotConfigured);
                None
            }
            Err(why) => {
                warnings.push(format!("web_search is not available: {why}"));
                None
            }
        },
        SearchChoice::Provider(provider) => Some(provider.clone()),
        SearchChoice::Off => None,
    };
    if let Some(provider) = search {
        toolbox.register(WebSearch::new(provider));
    }
    if options.needs_mcp() {
        for error in mcp::register_servers(&mut toolbox, &options.mcp).await {
            warnings.push(format!("{error}; continuing without its tools"));
        }
    }
    let toolbox = match &options.only {
        None => toolbox,
        Some(names) => {
            let known = known_tools(&toolbox);
            if let Some(unknown) = names.iter().find(|n| !known.contains(&n.as_str())) {
                return Err(ToolsError::UnknownTool {
                    name: unknown.clone(),
                    available: toolbox.names().into_iter().map(String::from).collect(),
                });
            }
            toolbox.subset(names)
        }
    };
    Ok(DefaultToolbox { toolbox, warnings })
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

/// Tool names for checking roles without building the toolbox: see
/// [`offline_known_tools`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OfflineNames<'a> {
    /// Names a role may list: the built-in tools, plus the unverified names.
    pub known: Vec<&'a str>,
    /// One line per name accepted without being verified.
    pub warnings: Vec<String>,
}

/// The names roles may list, found without starting MCP servers or probing
/// bubblewrap (for listing roles). Every built-in tool is known. A `listed`
/// name that is not built in may be an MCP tool, whose name is only known
/// once its server runs: with MCP servers in `options` it is accepted with a
/// warning; without any it stays unknown, so the role check refuses it as
/// a run would.
pub fn offline_known_tools<'a>(listed: &[&'a str], options: &ToolOptions) -> OfflineNames<'a> {
    let mut known: Vec<&'a str> = builtin::NAMES.to_vec();
    let mut warnings = Vec::new();
    if !options.mcp.is_empty() {
        for &name in listed {
            if !known.contains(&name) {
                known.push(name);
                warnings.push(format!(
                    "`{name}` is not a built-in tool; it must come from an MCP server ({}), which is not started to check",
                    options
                        .mcp
                        .iter()
                        .map(McpServerConfig::display_name)
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
    }
    OfflineNames { known, warnings }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(mcp: bool, only: Option<&[&str]>) -> ToolOptions {
        ToolOptions {
            mcp: if mcp {
                vec![McpServerConfig::from_command_line("/x/my-server stdio").unwrap()]
            } else {
                Vec::new()
            },
            only: only.map(|o| o.iter().map(|s| s.to_string()).collect()),
            search: SearchChoice::Off,
            ..ToolOptions::default()
        }
    }

    #[test]
    fn mcp_servers_start_only_when_a_wanted_tool_may_be_theirs() {
        assert!(!options(false, None).needs_mcp());
        assert!(options(true, None).needs_mcp());
        assert!(!options(true, Some(&["read_file", "run_code"])).needs_mcp());
        assert!(options(true, Some(&["read_file", "echo"])).needs_mcp());
    }

    #[test]
    fn offline_names_accept_unknown_tools_only_when_mcp_servers_may_have_them() {
        let without = offline_known_tools(&["read_file", "echo"], &options(false, None));
        assert_eq!(without.known, builtin::NAMES);
        assert!(without.warnings.is_empty());

        let with = offline_known_tools(&["read_file", "echo", "echo"], &options(true, None));
        assert!(with.known.contains(&"echo") && with.known.contains(&"run_code"));
        assert_eq!(with.warnings.len(), 1, "{:?}", with.warnings);
        assert!(with.warnings[0].contains("`echo`") && with.warnings[0].contains("my-server"));
    }

    #[tokio::test]
    async fn only_filters_and_refuses_unknown_names() {
        let dir = tempfile::tempdir().unwrap();
        let workspace = Workspace::new(dir.path()).unwrap();
        let built = default_toolbox(
            &workspace,
            &options(false, Some(&["read_file", "list_dir"])),
        )
        .await
        .unwrap();
        assert_eq!(built.toolbox.names(), ["list_dir", "read_file"]);
        assert!(built.warnings.is_empty(), "{:?}", built.warnings);

        let error = default_toolbox(&workspace, &options(false, Some(&["read_file", "fly"])))
            .await
            .err()
            .unwrap();
        assert!(matches!(&error, ToolsError::UnknownTool { name, .. } if name == "fly"));
        assert!(error
            .to_string()
            .contains("available tools: http_fetch, list_dir"));
    }

    #[tokio::test]
    async fn a_search_provider_that_is_given_is_registered() {
        let dir = tempfile::tempdir().unwrap();
        let workspace = Workspace::new(dir.path()).unwrap();
        let options = ToolOptions {
            search: SearchChoice::Provider(SearchProvider::Searxng {
                base_url: "http://127.0.0.1:1".into(),
            }),
            only: Some(vec!["web_search".into()]),
            ..ToolOptions::default()
        };
        let built = default_toolbox(&workspace, &options).await.unwrap();
        assert_eq!(built.toolbox.names(), ["web_search"]);
    }
}
