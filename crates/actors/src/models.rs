//! Which model each role talks to: the run's model by default, or the one a
//! role names, built once per name by a factory and shared.

use std::sync::Arc;

use dashmap::DashMap;

use hermes_core::llm::Llm;

/// Builds a model client for a model name (same server, other model).
pub type ModelFactory = Arc<dyn Fn(&str) -> Result<Arc<dyn Llm>, ModelBuildError> + Send + Sync>;

/// Why a factory could not build a client for a role's model.
#[derive(Debug, Clone, thiserror::Error)]
#[error("cannot build a client for model `{model}`: {reason}")]
pub struct ModelBuildError {
    /// The model name the role asked for.
    pub model: String,
    /// What went wrong, in words.
    pub reason: String,
}

/// The default model plus per-name models for roles that ask for one.
#[derive(Clone)]
pub struct Models {
    default: Arc<dyn Llm>,
    factory: Option<ModelFactory>,
    by_name: Arc<DashMap<String, Arc<dyn Llm>>>,
}

impl Models {
    /// Every role uses `default`.
    pub fn new(default: Arc<dyn Llm>) -> Self {
        Self {
            default,
            factory: None,
            by_name: Arc::default(),
        }
    }

    /// Roles that name a model get one from `factory`.
    pub fn with_factory(mut self, factory: ModelFactory) -> Self {
        self.factory = Some(factory);
        self
    }

    /// The run's default model.
    pub fn default_model(&self) -> Arc<dyn Llm> {
        Arc::clone(&self.default)
    }

    /// The model for a role that names `model` (or none). Falls back to the
    /// default, with a warning, when no client can be built for the name.
    pub fn for_role(&self, model: Option<&str>) -> Arc<dyn Llm> {
        let Some(name) = model.filter(|m| *m != self.default.model()) else {
            return self.default_model();
        };
        if let Some(llm) = self.by_name.get(name) {
            return Arc::clone(&llm);
        }
        let Some(factory) = &self.factory else {
            return self.default_model();
        };
        match factory(name) {
            Ok(llm) => {
                self.by_name.insert(name.to_string(), Arc::clone(&llm));
                llm
            }
            Err(e) => {
                tracing::warn!("{e}; using `{}`", self.default.model());
                self.default_model()
            }
        }
    }
}
