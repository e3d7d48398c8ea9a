//! `hermes roles`: list the executor roles a directory defines.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;
use hermes::actors::roles::parse_role;
use hermes::actors::RoleRegistry;
use hermes::tools::defaults::offline_known_tools;

use super::tools::ToolArgs;

/// Options of `hermes roles`.
#[derive(Debug, Args)]
pub struct RolesArgs {
    /// Directory of executor role files (*.toml).
    #[arg(long, default_value = "agents", value_name = "DIR")]
    pub roles: PathBuf,
    /// Print the roles as one JSON array.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub tools: ToolArgs,
}

/// Lists the roles; exit 1 when a role file or the tool configuration is
/// bad. Starts no MCP server and does not probe bubblewrap: role tools are
/// checked against the built-in names, and names that MCP servers may
/// provide are accepted with a warning.
pub async fn execute(args: RolesArgs) -> i32 {
    let options = match args.tools.options() {
        Ok(options) => options,
        Err(e) => {
            eprintln!("error: {e}");
            return 1;
        }
    };
    let listed = listed_tools(&args.roles);
    let listed: Vec<&str> = listed.iter().map(String::as_str).collect();
    let names = offline_known_tools(&listed, &options);
    for warning in &names.warnings {
        eprintln!("warning: {warning}");
    }
    let registry = match RoleRegistry::load_dir(&args.roles, &names.known) {
        Ok(registry) => registry,
        Err(e) => {
            eprintln!("error: {e}");
            return 1;
        }
    };
    let roles = registry.all();
    let text = if args.json {
        match serde_json::to_string(&roles) {
            Ok(json) => json,
            Err(e) => {
                eprintln!("error: cannot write the roles as JSON: {e}");
                return 1;
            }
        }
    } else {
        roles
            .iter()
            .map(|role| {
                let tools = role
                    .tools
                    .as_ref()
                    .map(|t| t.join(", "))
                    .unwrap_or_else(|| "all tools".into());
                let model = role
                    .model
                    .as_deref()
                    .map(|m| format!(" [model {m}]"))
                    .unwrap_or_default();
                format!(
                    "{:<12} {}{model}\n{:<12} tools: {tools}",
                    role.name, role.description, ""
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    // A closed stdout (e.g. piped into `head`) is not worth a panic.
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}").and_then(|_| out.flush());
    0
}

/// Every tool name the role files in `dir` list, in file order. Files that
/// cannot be read or parsed are skipped here; loading them reports why.
fn listed_tools(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    files
        .iter()
        .filter_map(|path| std::fs::read_to_string(path).ok())
        .filter_map(|text| parse_role(&text).ok())
        .flat_map(|role| role.tools.unwrap_or_default())
        .collect()
}
