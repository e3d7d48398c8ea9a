//! `--memory FILE`, `--no-memory`, `--memory-ttl DAYS`, `--embed-model
//! NAME` and `--embed-dir DIR`: the long-term memory options `run`, `plan`
//! and `eval` share, and the one [`LongTermMemory`] they open.
//!
//! `--embed-model minilm` (or `all-MiniLM-L6-v2`) is the in-process
//! embedder of the `local-embed` feature, on files from `--embed-dir` or
//! the model cache; any other name is a model on the server's
//! `/v1/embeddings`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use hermes::agent::LongTermMemory;
use hermes::memory::{self, EmbedConfig, Embedder, OpenAiEmbedder, RedbStore};

use super::model::ModelArgs;

/// The limit for one embedding request made for memory.
pub const EMBED_TIMEOUT: Duration = Duration::from_secs(10);

/// The `--embed-model` names of the in-process all-MiniLM-L6-v2 (exact).
pub const LOCAL_EMBED_NAMES: [&str; 2] = ["minilm", "all-MiniLM-L6-v2"];

/// Long-term memory on the command line.
#[derive(Debug, Clone, Args)]
pub struct MemoryFlags {
    /// The long-term memory file [default: .hermes/memory.redb under the
    /// workspace; `eval`: a fresh one per run].
    #[arg(long, value_name = "FILE", conflicts_with = "no_memory")]
    pub memory: Option<PathBuf>,
    /// Run without long-term memory: recall nothing, store nothing.
    #[arg(long)]
    pub no_memory: bool,
    /// Days an entry lives after its last use (fractions allowed).
    #[arg(long, value_name = "DAYS", default_value = "30", value_parser = parse_days)]
    pub memory_ttl: Duration,
    /// An embedding model on the model server (its `/v1/embeddings`, same
    /// base URL and key), or `minilm` for all-MiniLM-L6-v2 in-process
    /// (built with `--features local-embed`): recall then fuses meaning
    /// with keywords.
    #[arg(long, env = "HERMES_EMBED_MODEL", value_name = "NAME")]
    pub embed_model: Option<String>,
    /// The folder with `--embed-model minilm`'s files (model.safetensors,
    /// tokenizer.json, config.json) [default: all-minilm-l6-v2 in the model
    /// cache, where scripts/fetch-embedder.sh puts them].
    #[arg(long, env = "HERMES_EMBED_DIR", value_name = "DIR")]
    pub embed_dir: Option<PathBuf>,
}

/// Why the memory could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum MemorySetupError {
    /// The store file named by `--memory` could not be opened.
    #[error("cannot use the memory file given by --memory: {0}")]
    Store(#[from] memory::MemoryError),
    /// The embeddings client could not be built.
    #[error("cannot set up --embed-model: {0}")]
    Embedder(#[from] memory::EmbedError),
    /// The in-process embedder's files could not be loaded.
    #[cfg(feature = "local-embed")]
    #[error("cannot load --embed-model {name} from {} (--embed-dir, else the model cache): {source}", dir.display())]
    LocalEmbedder {
        /// The name given to `--embed-model`.
        name: String,
        /// The folder the files were looked for in.
        dir: PathBuf,
        /// What went wrong.
        source: memory::EmbedError,
    },
    /// The in-process embedder was asked for but not compiled in.
    #[cfg(not(feature = "local-embed"))]
    #[error("--embed-model {0} runs all-MiniLM-L6-v2 in-process, but this hermes was built without it; rebuild with `cargo build --release --features local-embed`, or name a model on the server's /v1/embeddings")]
    LocalEmbedNotBuilt(String),
}

impl MemoryFlags {
    /// The memory for runs in `workspace`: `None` with `--no-memory`.
    /// A file named by `--memory` that cannot be opened is an error; the
    /// default file under the workspace only warns (another process may
    /// hold it) and the run goes on without memory.
    pub async fn open(
        &self,
        workspace: &Path,
        model: &ModelArgs,
    ) -> Result<Option<LongTermMemory>, MemorySetupError> {
        if self.no_memory {
            return Ok(None);
        }
        let store = match &self.memory {
            Some(path) => RedbStore::open_async(path.clone()).await?,
            None => {
                let path = memory::default_path(workspace);
                match RedbStore::open_async(path).await {
                    Ok(store) => store,
                    Err(e) => {
                        eprintln!("warning: running without long-term memory: {e}");
                        return Ok(None);
                    }
                }
            }
        };
        self.around(store, model).map(Some)
    }

    /// The memory over an open `store`, with the TTL and embedder flags.
    pub fn around(
        &self,
        store: RedbStore,
        model: &ModelArgs,
    ) -> Result<LongTermMemory, MemorySetupError> {
        let mut memory = LongTermMemory::new(Arc::new(store)).with_ttl(self.memory_ttl);
        if let Some(embedder) = self.embedder(model)? {
            memory = memory.with_embedder(embedder);
        }
        Ok(memory)
    }

    /// The embedder `--embed-model` asks for: all-MiniLM-L6-v2 in-process
    /// for a [`LOCAL_EMBED_NAMES`] name, else the `/v1/embeddings` client
    /// on the model's server with its key.
    pub fn embedder(
        &self,
        model: &ModelArgs,
    ) -> Result<Option<Arc<dyn Embedder>>, MemorySetupError> {
        let Some(name) = &self.embed_model else {
            return Ok(None);
        };
        if LOCAL_EMBED_NAMES.contains(&name.as_str()) {
            return self.local_embedder(name).map(Some);
        }
        if let Some(dir) = &self.embed_dir {
            eprintln!(
                "warning: --embed-dir {} is only read by --embed-model minilm; ignored for {name}",
                dir.display()
            );
        }
        let mut config = EmbedConfig::new(model.base_url.clone(), name.clone());
        config.api_key = model.api_key();
        // Recall sits before the first round: a slow embedder must not eat the run.
        config.request_timeout = EMBED_TIMEOUT;
        config.max_attempts = 2;
        Ok(Some(Arc::new(OpenAiEmbedder::new(config)?)))
    }

    /// all-MiniLM-L6-v2 from `--embed-dir`, else from the model cache.
    #[cfg(feature = "local-embed")]
    fn local_embedder(&self, name: &str) -> Result<Arc<dyn Embedder>, MemorySetupError> {
        let dir = self
            .embed_dir
            .clone()
            .unwrap_or_else(|| hermes::model_files::ModelCache::from_env().embedder_dir());
        match memory::minilm::MiniLmEmbedder::load(&dir) {
            Ok(embedder) => Ok(Arc::new(embedder)),
            Err(source) => Err(MemorySetupError::LocalEmbedder {
                name: name.into(),
                dir,
                source,
            }),
        }
    }

    #[cfg(not(feature = "local-embed"))]
    fn local_embedder(&self, name: &str) -> Result<Arc<dyn Embedder>, MemorySetupError> {
        Err(MemorySetupError::LocalEmbedNotBuilt(name.into()))
    }
}

/// Why a number of days was refused.
#[derive(Debug, PartialEq, thiserror::Error)]
#[error("`{0}` is not a number of days; give a positive number such as 30 or 0.5")]
pub struct BadDays(String);

/// Parses `--memory-ttl`: a positive number of days, fractions allowed,
/// at least one second (entries keep whole seconds).
pub fn parse_days(text: &str) -> Result<Duration, BadDays> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|days| days.is_finite() && *days > 0.0)
        .and_then(|days| Duration::try_from_secs_f64(days * 86_400.0).ok())
        .filter(|ttl| ttl.as_secs() >= 1)
        .ok_or_else(|| BadDays(text.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_are_positive_numbers() {
        assert_eq!(parse_days("30"), Ok(Duration::from_secs(30 * 86_400)));
        assert_eq!(parse_days("0.5"), Ok(Duration::from_secs(43_200)));
        for bad in ["0", "-1", "NaN", "inf", "2d", "", "0.000001"] {
            assert!(parse_days(bad).is_err(), "{bad}");
        }
    }
}
