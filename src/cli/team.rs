//! What `hermes plan` and `hermes node` both set up before executors can
//! run: the workspace's tools, the role files, and a model per role.

use std::path::Path;
use std::sync::Arc;

use clap::ArgMatches;
use hermes::actors::{ModelBuildError, ModelFactory, Models, RoleRegistry};
use hermes::faults::Faults;
use hermes::llm::Llm;
use hermes::tools::{Toolbox, Workspace};

use super::model::ModelArgs;
use super::tools::{known_tools, ToolArgs};

/// Tools, roles and models for executors.
pub struct Team {
    /// The workspace the file tools are confined to.
    pub workspace: Workspace,
    /// Every tool (faults wrapped around them when asked).
    pub toolbox: Toolbox,
    /// The roles from the role files.
    pub roles: RoleRegistry,
    /// The default model (faults wrapped around it when asked).
    pub llm: Arc<dyn Llm>,
    /// Builds a client for a role that names another model.
    pub factory: ModelFactory,
}

impl Team {
    /// The models: the default one, and a client per role model.
    pub fn models(&self) -> Models {
        Models::new(Arc::clone(&self.llm)).with_factory(Arc::clone(&self.factory))
    }
}

/// Loads the roles from `roles_dir` (warning about tools a role lists that
/// are not available here), opens the workspace's tools and resolves the
/// model.
pub async fn assemble(
    model: &ModelArgs,
    matches: Option<&ArgMatches>,
    workspace: &Path,
    tools: &ToolArgs,
    roles_dir: &Path,
    faults: &Faults,
) -> Result<Team, String> {
    let workspace =
        Workspace::new(workspace).map_err(|e| format!("cannot use the workspace: {e}"))?;
    let toolbox = tools.toolbox(&workspace).await.map_err(|e| e.to_string())?;
    let roles =
        RoleRegistry::load_dir(roles_dir, &known_tools(&toolbox)).map_err(|e| e.to_string())?;
    for role in roles.all() {
        for tool in role
            .tools
            .iter()
            .flatten()
            .filter(|t| !toolbox.names().contains(&t.as_str()))
        {
            eprintln!("warning: role `{}` lists `{tool}`, which is not available here; it runs without it", role.name);
        }
    }
    let toolbox = faults.wrap_toolbox(&toolbox);
    let resolved = model.resolve(matches).await.map_err(|e| e.to_string())?;
    let llm = faults.wrap_llm(resolved.llm, model.request_timeout);
    let model_args = model.clone();
    let default_llm = Arc::clone(&llm);
    // Roles that name a model get a client for it on the same server; the
    // in-process model serves every role.
    let local = resolved.local;
    let factory: ModelFactory = Arc::new(move |name: &str| {
        if local {
            return Ok(Arc::clone(&default_llm));
        }
        let mut per_role = model_args.clone();
        per_role.model = name.to_string();
        per_role
            .client(None)
            .map(|c| Arc::new(c) as Arc<dyn Llm>)
            .map_err(|e| ModelBuildError {
                model: name.to_string(),
                reason: e.to_string(),
            })
    });
    Ok(Team {
        workspace,
        toolbox,
        roles,
        llm,
        factory,
    })
}
