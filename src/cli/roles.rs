//! `hermes roles`: list the executor roles a directory defines.

use std::path::PathBuf;

use clap::Args;
use hermes::actors::RoleRegistry;
use hermes::tools::{builtin, Toolbox, Workspace};

/// Options of `hermes roles`.
#[derive(Debug, Args)]
pub struct RolesArgs {
    /// Directory of executor role files (*.toml).
    #[arg(long, default_value = "agents", value_name = "DIR")]
    pub roles: PathBuf,
    /// Print the roles as one JSON array.
    #[arg(long)]
    pub json: bool,
}

/// Lists the roles; exit 1 when a role file is bad.
pub fn execute(args: RolesArgs) -> i32 {
    // Tool names only: the workspace is irrelevant for listing.
    let mut toolbox = Toolbox::new();
    if let Ok(workspace) = Workspace::new(".") {
        builtin::register_file_tools(&mut toolbox, &workspace);
    }
    let registry = match RoleRegistry::load_dir(&args.roles, &toolbox.names()) {
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
