//! `hermes memory`: look at and tidy a workspace's long-term memory
//! (`list`, `search`, `forget`, `purge`, `clear`).
//!
//! Every subcommand opens the store at `--memory FILE`, or at
//! `.hermes/memory.redb` under `--workspace DIR` (the flag `hermes run`
//! uses); a missing, locked or corrupt file is an error naming the path
//! (exit 1), never a new empty store. With `--json` the result is one JSON
//! value on the last line of stdout.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use hermes::memory::{self, MemoryEntry, MemoryError, MemoryStore, Recalled, RedbStore};
use hermes::text::{clip, one_line};
use serde_json::json;

use super::exit;
use super::output::print_result;

/// Options of `hermes memory`.
#[derive(Debug, Args)]
pub struct MemoryArgs {
    /// What to do with the memory.
    #[command(subcommand)]
    pub command: MemoryCommand,
}

/// The subcommands of `hermes memory`.
#[derive(Debug, Subcommand)]
pub enum MemoryCommand {
    /// List the live entries, most recently used first.
    List(StoreArgs),
    /// Rank the entries against a query by keywords (records no use).
    Search(SearchArgs),
    /// Delete one entry by its id.
    Forget(ForgetArgs),
    /// Delete the expired entries.
    Purge(StoreArgs),
    /// Delete every entry.
    Clear(StoreArgs),
}

/// Which store to open, and how to print.
#[derive(Debug, Args)]
pub struct StoreArgs {
    /// The memory file [default: .hermes/memory.redb under --workspace].
    #[arg(long, value_name = "FILE")]
    pub memory: Option<PathBuf>,
    /// The workspace whose memory to use.
    #[arg(long, default_value = ".", value_name = "DIR")]
    pub workspace: PathBuf,
    /// Print the result as one JSON value on the last line of stdout.
    #[arg(long)]
    pub json: bool,
}

impl StoreArgs {
    /// The store's file.
    fn path(&self) -> PathBuf {
        self.memory
            .clone()
            .unwrap_or_else(|| memory::default_path(&self.workspace))
    }
}

/// Options of `hermes memory search`.
#[derive(Debug, Args)]
pub struct SearchArgs {
    /// What to look for.
    pub query: String,
    /// The most entries to show.
    #[arg(long, short = 'k', default_value_t = 10, value_name = "N")]
    pub limit: usize,
    #[command(flatten)]
    pub store: StoreArgs,
}

/// Options of `hermes memory forget`.
#[derive(Debug, Args)]
pub struct ForgetArgs {
    /// The entry's id, as `list` shows it.
    pub id: String,
    #[command(flatten)]
    pub store: StoreArgs,
}

/// Runs the subcommand and returns the exit code.
pub async fn execute(args: MemoryArgs) -> i32 {
    match run(args.command).await {
        Ok(()) => exit::OK,
        Err(e) => {
            eprintln!("error: {e}");
            exit::ERROR
        }
    }
}

async fn run(command: MemoryCommand) -> Result<(), MemoryError> {
    let options = match &command {
        MemoryCommand::List(store) | MemoryCommand::Purge(store) | MemoryCommand::Clear(store) => {
            store
        }
        MemoryCommand::Search(search) => &search.store,
        MemoryCommand::Forget(forget) => &forget.store,
    };
    let json = options.json;
    let path = options.path();
    let store = open(path.clone()).await?;
    match &command {
        MemoryCommand::List(_) => {
            let entries = store.list().await?;
            if json {
                let listed: Vec<MemoryEntry> =
                    entries.iter().map(MemoryEntry::without_embedding).collect();
                print_result(Some(&listed), "");
            } else if entries.is_empty() {
                print_result(None::<&()>, &format!("no memories in {}", path.display()));
            } else {
                let rows: Vec<(Option<f32>, &MemoryEntry)> =
                    entries.iter().map(|entry| (None, entry)).collect();
                print_result(None::<&()>, &table(&rows, now()));
            }
        }
        MemoryCommand::Search(search) => {
            let found = store.search(&search.query, None, search.limit).await?;
            if json {
                let found: Vec<Recalled> = found
                    .into_iter()
                    .map(|hit| Recalled {
                        entry: hit.entry.without_embedding(),
                        score: hit.score,
                    })
                    .collect();
                print_result(Some(&found), "");
            } else if found.is_empty() {
                print_result(
                    None::<&()>,
                    &format!("no memory matches `{}`", search.query),
                );
            } else {
                let rows: Vec<(Option<f32>, &MemoryEntry)> = found
                    .iter()
                    .map(|hit| (Some(hit.score), &hit.entry))
                    .collect();
                print_result(None::<&()>, &table(&rows, now()));
            }
        }
        MemoryCommand::Forget(forget) => {
            let entry = store.forget(&forget.id).await?;
            if json {
                print_result(Some(&json!({ "forgotten": entry.id })), "");
            } else {
                let text = clip(&one_line(&entry.text), 60);
                print_result(None::<&()>, &format!("forgot {}: {text}", entry.id));
            }
        }
        MemoryCommand::Purge(_) => {
            // Opening already deleted what had expired; count that too.
            let purged = store.purged_on_open() + store.purge_expired().await?;
            if json {
                print_result(Some(&json!({ "purged": purged })), "");
            } else {
                print_result(None::<&()>, &format!("purged {purged} expired entries"));
            }
        }
        MemoryCommand::Clear(_) => {
            let cleared = store.clear().await?;
            if json {
                print_result(Some(&json!({ "cleared": cleared })), "");
            } else {
                print_result(None::<&()>, &format!("cleared {cleared} entries"));
            }
        }
    }
    Ok(())
}

/// Opens an existing store off the async threads (opening may repair it).
async fn open(path: PathBuf) -> Result<RedbStore, MemoryError> {
    let shown = path.clone();
    tokio::task::spawn_blocking(move || RedbStore::open_existing(path))
        .await
        .map_err(|e| MemoryError::Interrupted {
            path: shown,
            reason: e.to_string(),
        })?
}

fn now() -> u64 {
    use hermes::memory::Clock;
    hermes::memory::SystemClock.now()
}

/// The entries as a table, one line each, with a score column when given.
fn table(rows: &[(Option<f32>, &MemoryEntry)], now: u64) -> String {
    let scored = rows.iter().any(|(score, _)| score.is_some());
    let mut lines = vec![format!(
        "{}{:<12}  {:>4}  {:>8}  {:>7}  {:<10}  TEXT",
        if scored { "SCORE   " } else { "" },
        "ID",
        "HITS",
        "USED",
        "EXPIRES",
        "ROLE"
    )];
    for (score, entry) in rows {
        let score = score.map(|s| format!("{s:<6.3}  ")).unwrap_or_default();
        lines.push(format!(
            "{score}{:<12}  {:>4}  {:>8}  {:>7}  {:<10}  {}",
            entry.id,
            entry.hits,
            format!("{} ago", span(now.saturating_sub(entry.last_used))),
            span(entry.expires_at().saturating_sub(now)),
            clip(entry.role.as_deref().unwrap_or("-"), 10),
            clip(&one_line(&entry.text), 70)
        ));
    }
    lines.join("\n")
}

/// A number of seconds in its largest whole unit: `42s`, `5m`, `3h`, `29d`.
fn span(secs: u64) -> String {
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m", secs / 60),
        3600..86400 => format!("{}h", secs / 3600),
        _ => format!("{}d", secs / 86400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_use_the_largest_whole_unit() {
        assert_eq!(span(42), "42s");
        assert_eq!(span(300), "5m");
        assert_eq!(span(3 * 3600 + 5), "3h");
        assert_eq!(span(30 * 86400), "30d");
    }

    #[test]
    fn the_table_has_a_header_and_a_line_per_entry() {
        let entry = MemoryEntry {
            id: "0123456789ab".into(),
            text: "Task: count\nlines".into(),
            embedding: None,
            task: "count".into(),
            role: Some("coder".into()),
            created: 0,
            last_used: 100,
            ttl_secs: 1000,
            hits: 2,
        };
        let text = table(&[(Some(1.5), &entry)], 160);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("SCORE") && lines[0].ends_with("TEXT"));
        assert!(lines[1].contains("0123456789ab"));
        assert!(lines[1].contains("1m ago") && lines[1].contains("15m"));
        assert!(lines[1].ends_with("Task: count lines"));
    }
}
