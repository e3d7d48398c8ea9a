//! `hermes roles`: list the executor roles a directory defines.

use std::path::PathBuf;

use clap::Args;
use hermes::actors::RoleRegistry;
use hermes::tools::{Toolbox, Workspace};

use super::tools::{known_tools, ToolArgs};

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

/// Lists the roles; exit 1 when a role file is bad.
pub async fn execute(args: RolesArgs) -> i32 {
    // Tool names only: the workspace itself is not used for listing.
    let toolbox = match Workspace::new(".") {
        Ok(workspace) => args.tools.toolbox(&workspace).await.unwrap_or_default(),
        Err(_) => Toolbox::new(),
    };
    let registry = match RoleRegistry::load_dir(&args.roles, &known_tools(&toolbox)) {
        Ok(registry) => registry,
        Err(e) => {
            eprintln!("error: {e}");
            return 1;
        }
    };
    let roles = registry.all();
    if args.json {
        println!("{}", serde_json::to_string(&roles).unwrap_or_default());
        return 0;
    }
    for role in roles {
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
        println!(
            "{:<12} {}{model}\n{:<12} tools: {tools}",
            role.name, role.description, ""
        );
    }
    0
}
