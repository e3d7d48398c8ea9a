//! `hermes model pull [NAME]` and `hermes model list`: fetch the models the
//! in-process engine runs, with a progress bar, and see what is cached.

use clap::{Args, Subcommand};
use hermes::model_files::{
    self, CacheState, FetchError, FetchProgress, KnownModel, ModelCache, Sources, DEFAULT_MODEL,
    KNOWN_MODELS,
};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;

use super::exit;
use super::output::print_result;

/// Options of `hermes model`.
#[derive(Debug, Args)]
pub struct ModelCmdArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: ModelCommand,
}

/// The subcommands of `hermes model`.
#[derive(Debug, Subcommand)]
pub enum ModelCommand {
    /// Fetch a known model into the cache (and check it), or check the cached one.
    Pull(PullArgs),
    /// List the known models and whether each is cached.
    List(ListArgs),
}

/// Options of `hermes model pull`.
#[derive(Debug, Args)]
pub struct PullArgs {
    /// Which model: 0.5b or 1.5b.
    #[arg(default_value = DEFAULT_MODEL, value_name = "NAME")]
    pub name: String,
    /// Print the result as one JSON object on the last line of stdout.
    #[arg(long)]
    pub json: bool,
}

/// Options of `hermes model list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Print the list as one JSON array on the last line of stdout.
    #[arg(long)]
    pub json: bool,
}

/// Runs the subcommand; returns the exit code.
pub async fn execute(args: ModelCmdArgs) -> i32 {
    match args.command {
        ModelCommand::Pull(pull) => pull_model(pull).await,
        ModelCommand::List(list) => list_models(list),
    }
}

/// The known model `name`, or the error that lists the known ones.
pub fn known(name: &str) -> Result<&'static KnownModel, FetchError> {
    model_files::find(name).ok_or_else(|| FetchError::Unknown {
        name: name.into(),
        known: model_files::catalog::names().join(", "),
    })
}

async fn pull_model(args: PullArgs) -> i32 {
    let model = match known(&args.name) {
        Ok(model) => model,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::ERROR;
        }
    };
    let cache = ModelCache::from_env();
    let bar = BarProgress::new();
    let pulled = cache.pull(model, &Sources::from_env(), &bar).await;
    bar.finish();
    match pulled {
        Ok(path) => {
            let text = path.display().to_string();
            let value = json!({"name": model.name, "path": text, "sha256": model.sha256});
            print_result(args.json.then_some(&value), &text);
            exit::OK
        }
        Err(e) => {
            eprintln!("error: {e}");
            exit::ERROR
        }
    }
}

fn list_models(args: ListArgs) -> i32 {
    let cache = ModelCache::from_env();
    let rows: Vec<serde_json::Value> = KNOWN_MODELS
        .iter()
        .map(|model| {
            let path = cache.path_of(model);
            let state = match cache.state(model) {
                CacheState::Missing => "missing",
                CacheState::Verified => "verified",
                CacheState::Unchecked => "unchecked",
            };
            json!({
                "name": model.name,
                "title": model.title,
                "default": model.name == DEFAULT_MODEL,
                "state": state,
                "bytes": std::fs::metadata(&path).ok().map(|m| m.len()),
                "path": path.display().to_string(),
            })
        })
        .collect();
    let text: Vec<String> = rows
        .iter()
        .map(|r| {
            format!(
                "{:<5} {:<9} {}{}\n      {}",
                r["name"].as_str().unwrap_or_default(),
                r["state"].as_str().unwrap_or_default(),
                r["title"].as_str().unwrap_or_default(),
                if r["default"] == true {
                    " (default)"
                } else {
                    ""
                },
                r["path"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    let value = serde_json::Value::Array(rows);
    print_result(args.json.then_some(&value), &text.join("\n"));
    exit::OK
}

/// A byte progress bar on stderr (size, speed, ETA), hidden when stderr is
/// not a terminal; notes print as lines either way.
pub struct BarProgress {
    bar: ProgressBar,
}

impl BarProgress {
    /// A bar not yet started.
    pub fn new() -> Self {
        let bar = ProgressBar::new(0);
        bar.set_style(
            ProgressStyle::with_template(
                "{msg}\n{bar:30} {bytes}/{total_bytes}  {bytes_per_sec}  ETA {eta}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        Self { bar }
    }

    /// Clears the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl Default for BarProgress {
    fn default() -> Self {
        Self::new()
    }
}

impl FetchProgress for BarProgress {
    fn begin(&self, source: &str, total: Option<u64>, done: u64) {
        self.bar.set_length(total.unwrap_or(0));
        self.bar.set_position(done);
        self.bar.reset_eta();
        self.bar.set_message(format!("fetching from {source}"));
        self.bar.suspend(|| eprintln!("fetching from {source}"));
    }

    fn advance(&self, bytes: u64) {
        self.bar.inc(bytes);
    }

    fn rewind(&self, bytes: u64) {
        self.bar
            .set_position(self.bar.position().saturating_sub(bytes));
    }

    fn note(&self, message: &str) {
        self.bar.suspend(|| eprintln!("{message}"));
    }
}
