//! The durable record of a service: tasks, their events and registered
//! roles, in one redb file (the same embedded, crash-safe store as
//! long-term memory). Every write is one committed transaction, so what
//! the service acknowledged or streamed survives `kill -9`.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use redb::{Database, ReadableTable, ReadableTableMetadata, TableDefinition};
use serde_json::Value;

use crate::record::{now, TaskEventRecord, TaskRecord, TaskSpec, TaskState};

/// Task number → the task's record as JSON.
const TASKS: TableDefinition<u64, &[u8]> = TableDefinition::new("tasks");
/// (task number, event number) → `{"kind", "data"}` as JSON.
const EVENTS: TableDefinition<(u64, u64), &[u8]> = TableDefinition::new("events");
/// Role name → the role as TOML (what `agents/*.toml` holds).
const ROLES: TableDefinition<&str, &str> = TableDefinition::new("roles");
/// (task number, call id) → an approval question and its answer as JSON
/// (`{"request", "state", "by", "note", "at"}`).
const APPROVALS: TableDefinition<(u64, &str), &[u8]> = TableDefinition::new("approvals");
/// Counters: `next_task`.
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");

/// Why the store could not be opened or written.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Another process holds the file.
    #[error("the store {} is in use by another process (is another `hermes serve` running on it?)", path.display())]
    Locked {
        /// The store's file.
        path: PathBuf,
    },
    /// The file is not a store this build can read.
    #[error("the store {} is corrupt: {reason}", path.display())]
    Corrupt {
        /// The store's file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// Any other failure, with the file named.
    #[error("the store {}: {reason}", path.display())]
    Other {
        /// The store's file.
        path: PathBuf,
        /// What failed.
        reason: String,
    },
}

/// The store of one service (cheap to share behind an `Arc`).
pub struct Store {
    path: PathBuf,
    db: Database,
}

/// A task id as the API shows it (`task-7`) for the store's number 7.
pub fn task_id(number: u64) -> String {
    format!("task-{number}")
}

/// The store's number of a task id, when it is one.
pub fn task_number(id: &str) -> Option<u64> {
    id.strip_prefix("task-")?.parse().ok()
}

impl Store {
    /// Opens (or creates) the store at `path`; a file held by another
    /// process, or one that is not a store, is refused with its name.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let path = path.as_ref().to_path_buf();
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| StoreError::Other {
                path: path.clone(),
                reason: e.to_string(),
            })?;
        }
        let mut builder = Database::builder();
        builder.create_with_file_format_v3(true);
        let db = builder.create(&path).map_err(|e| error(&path, e))?;
        let store = Self { path, db };
        // Create every table, so that reads never meet a missing one.
        store.write(|tx| {
            tx.open_table(TASKS)?;
            tx.open_table(EVENTS)?;
            tx.open_table(ROLES)?;
            tx.open_table(META)?;
            Ok(())
        })?;
        Ok(store)
    }

    /// The store's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn write<T>(
        &self,
        body: impl FnOnce(&redb::WriteTransaction) -> Result<T, Fail>,
    ) -> Result<T, StoreError> {
        let tx = self.db.begin_write().map_err(|e| error(&self.path, e))?;
        let value = body(&tx).map_err(|e| error(&self.path, *e.0))?;
        tx.commit().map_err(|e| error(&self.path, e))?;
        Ok(value)
    }

    fn read<T>(
        &self,
        body: impl FnOnce(&redb::ReadTransaction) -> Result<T, Fail>,
    ) -> Result<T, StoreError> {
        let tx = self.db.begin_read().map_err(|e| error(&self.path, e))?;
        body(&tx).map_err(|e| error(&self.path, *e.0))
    }

    /// Records a new task, `queued`, and returns it with its id.
    pub fn create_task(&self, spec: TaskSpec) -> Result<TaskRecord, StoreError> {
        self.write(|tx| {
            let mut meta = tx.open_table(META)?;
            let number = meta.get("next_task")?.map_or(1, |v| v.value());
            meta.insert("next_task", number + 1)?;
            let record = TaskRecord {
                id: task_id(number),
                spec,
                status: TaskState::Queued,
                created: now(),
                ended: None,
                trace_id: None,
                report: None,
                restarts: 0,
            };
            tx.open_table(TASKS)?
                .insert(number, to_json(&record).as_slice())?;
            Ok(record)
        })
    }

    /// Replaces a task's record (its id says which).
    pub fn save_task(&self, record: &TaskRecord) -> Result<(), StoreError> {
        let Some(number) = task_number(&record.id) else {
            return Err(StoreError::Other {
                path: self.path.clone(),
                reason: format!("`{}` is not a task id", record.id),
            });
        };
        self.write(|tx| {
            tx.open_table(TASKS)?
                .insert(number, to_json(record).as_slice())?;
            Ok(())
        })
    }

    /// The task with this id, if the store holds it.
    pub fn task(&self, id: &str) -> Result<Option<TaskRecord>, StoreError> {
        let Some(number) = task_number(id) else {
            return Ok(None);
        };
        self.read(|tx| {
            let table = tx.open_table(TASKS)?;
            let found = table.get(number)?;
            Ok(found.and_then(|v| serde_json::from_slice(v.value()).ok()))
        })
    }

    /// Every task, newest first, optionally only those in `status`.
    pub fn tasks(&self, status: Option<TaskState>) -> Result<Vec<TaskRecord>, StoreError> {
        self.read(|tx| {
            let table = tx.open_table(TASKS)?;
            let mut out = Vec::new();
            for row in table.iter()?.rev() {
                let (_, value) = row?;
                if let Ok(record) = serde_json::from_slice::<TaskRecord>(value.value()) {
                    if status.is_none_or(|s| s == record.status) {
                        out.push(record);
                    }
                }
            }
            Ok(out)
        })
    }

    /// Appends an event to a task and returns it with its number (one
    /// after the task's last).
    pub fn append_event(
        &self,
        id: &str,
        kind: &str,
        data: Value,
    ) -> Result<TaskEventRecord, StoreError> {
        let number = task_number(id).unwrap_or_default();
        self.write(|tx| {
            let mut events = tx.open_table(EVENTS)?;
            let last = events
                .range((number, 0)..=(number, u64::MAX))?
                .next_back()
                .transpose()?
                .map_or(0, |(key, _)| key.value().1);
            let event = TaskEventRecord {
                id: last + 1,
                kind: kind.to_string(),
                data,
            };
            let body = serde_json::json!({"kind": event.kind, "data": event.data});
            events.insert((number, event.id), to_json(&body).as_slice())?;
            Ok(event)
        })
    }

    /// A task's events numbered above `after`, in order.
    pub fn events_after(&self, id: &str, after: u64) -> Result<Vec<TaskEventRecord>, StoreError> {
        let Some(number) = task_number(id) else {
            return Ok(Vec::new());
        };
        self.read(|tx| {
            let events = tx.open_table(EVENTS)?;
            let mut out = Vec::new();
            for row in events.range((number, after.saturating_add(1))..=(number, u64::MAX))? {
                let (key, value) = row?;
                let body: Value = serde_json::from_slice(value.value()).unwrap_or_default();
                out.push(TaskEventRecord {
                    id: key.value().1,
                    kind: body["kind"].as_str().unwrap_or_default().to_string(),
                    data: body["data"].clone(),
                });
            }
            Ok(out)
        })
    }

    /// How many events the store holds, over all tasks.
    pub fn event_count(&self) -> Result<u64, StoreError> {
        self.read(|tx| Ok(tx.open_table(EVENTS)?.len()?))
    }

    /// Task `id`'s approval question `call_id` as stored, if any.
    pub fn approval(&self, id: &str, call_id: &str) -> Result<Option<Value>, StoreError> {
        let Some(number) = task_number(id) else {
            return Ok(None);
        };
        self.read(|tx| {
            let table = match tx.open_table(APPROVALS) {
                Ok(table) => table,
                Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
                Err(e) => return Err(e.into()),
            };
            Ok(table
                .get((number, call_id))?
                .and_then(|v| serde_json::from_slice(v.value()).ok()))
        })
    }

    /// Stores (or replaces) task `id`'s approval question `call_id`.
    pub fn put_approval(&self, id: &str, call_id: &str, value: &Value) -> Result<(), StoreError> {
        let Some(number) = task_number(id) else {
            return Err(StoreError::Other {
                path: self.path.clone(),
                reason: format!("`{id}` is not a task id"),
            });
        };
        self.write(|tx| {
            tx.open_table(APPROVALS)?
                .insert((number, call_id), to_json(value).as_slice())?;
            Ok(())
        })
    }

    /// Stores a role's TOML under its name; false when the name is taken.
    pub fn add_role(&self, name: &str, toml: &str) -> Result<bool, StoreError> {
        self.write(|tx| {
            let mut roles = tx.open_table(ROLES)?;
            if roles.get(name)?.is_some() {
                return Ok(false);
            }
            roles.insert(name, toml)?;
            Ok(true)
        })
    }

    /// Every stored role as (name, TOML), by name.
    pub fn roles(&self) -> Result<Vec<(String, String)>, StoreError> {
        self.read(|tx| {
            let roles = tx.open_table(ROLES)?;
            let mut out = Vec::new();
            for row in roles.iter()? {
                let (name, toml) = row?;
                out.push((name.value().to_string(), toml.value().to_string()));
            }
            Ok(out)
        })
    }

    /// Removes the tasks that ended more than `keep` ago, and their
    /// events; returns how many tasks went.
    pub fn prune(&self, keep: Duration) -> Result<usize, StoreError> {
        let cutoff = SystemTime::now()
            .checked_sub(keep)
            .unwrap_or(SystemTime::UNIX_EPOCH);
        let old: Vec<u64> = self
            .tasks(None)?
            .into_iter()
            .filter(|t| {
                t.ended
                    .as_deref()
                    .and_then(|e| humantime::parse_rfc3339(e).ok())
                    .is_some_and(|ended| ended < cutoff)
            })
            .filter_map(|t| task_number(&t.id))
            .collect();
        self.write(|tx| {
            let mut tasks = tx.open_table(TASKS)?;
            let mut events = tx.open_table(EVENTS)?;
            let mut approvals = tx.open_table(APPROVALS)?;
            for &number in &old {
                tasks.remove(number)?;
                events.retain_in((number, 0)..=(number, u64::MAX), |_, _| false)?;
                approvals.retain_in((number, "")..(number + 1, ""), |_, _| false)?;
            }
            Ok(old.len())
        })
    }
}

/// A redb error inside a transaction's body, boxed (redb's errors are
/// large); `?` converts any of redb's error types into it.
struct Fail(Box<redb::Error>);

impl<E: Into<redb::Error>> From<E> for Fail {
    fn from(e: E) -> Self {
        Self(Box::new(e.into()))
    }
}

fn to_json<T: serde::Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value).unwrap_or_default()
}

/// A redb failure as a [`StoreError`] naming the file: a held lock and a
/// file that is not a store get their own variants.
fn error(path: &Path, e: impl Into<redb::Error>) -> StoreError {
    let path = path.to_path_buf();
    match e.into() {
        redb::Error::DatabaseAlreadyOpen => StoreError::Locked { path },
        redb::Error::Corrupted(reason) => StoreError::Corrupt { path, reason },
        redb::Error::UpgradeRequired(version) => StoreError::Corrupt {
            path,
            reason: format!("redb file format {version} needs an upgrade"),
        },
        redb::Error::Io(source) if source.kind() == std::io::ErrorKind::InvalidData => {
            StoreError::Corrupt {
                path,
                reason: format!("not a redb database ({source})"),
            }
        }
        other => StoreError::Other {
            path,
            reason: other.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(goal: &str) -> TaskSpec {
        TaskSpec {
            goal: goal.into(),
            timeout_secs: None,
            max_replans: None,
            workspace: None,
            token_budget: None,
            call_budget: None,
        }
    }

    #[test]
    fn tasks_and_events_survive_reopening_and_number_on() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("serve.redb");
        let first = {
            let store = Store::open(&path).unwrap();
            let a = store.create_task(spec("a")).unwrap();
            let b = store.create_task(spec("b")).unwrap();
            assert_eq!((a.id.as_str(), b.id.as_str()), ("task-1", "task-2"));
            store.append_event(&a.id, "queued", Value::Null).unwrap();
            let e = store
                .append_event(&a.id, "planned", serde_json::json!({"subtasks": []}))
                .unwrap();
            assert_eq!(e.id, 2);
            assert!(store.add_role("reader", "name = \"reader\"").unwrap());
            assert!(!store.add_role("reader", "name = \"reader\"").unwrap());
            a
        };
        let store = Store::open(&path).unwrap();
        assert_eq!(store.task(&first.id).unwrap().unwrap(), first);
        let listed: Vec<String> = store
            .tasks(None)
            .unwrap()
            .into_iter()
            .map(|t| t.id)
            .collect();
        assert_eq!(listed, ["task-2", "task-1"], "newest first");
        let events = store.events_after(&first.id, 1).unwrap();
        assert_eq!(events.len(), 1);
        assert_eq!((events[0].id, events[0].kind.as_str()), (2, "planned"));
        assert_eq!(
            store.append_event(&first.id, "x", Value::Null).unwrap().id,
            3
        );
        assert!(store.events_after("task-2", 0).unwrap().is_empty());
        assert_eq!(store.create_task(spec("c")).unwrap().id, "task-3");
        assert_eq!(store.roles().unwrap().len(), 1);
        assert!(store.task("nope").unwrap().is_none());
        assert!(store.task("task-99").unwrap().is_none());
    }

    #[test]
    fn a_second_opener_and_a_file_that_is_not_a_store_are_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("serve.redb");
        let _held = Store::open(&path).unwrap();
        let locked = Store::open(&path).err().unwrap();
        assert!(matches!(locked, StoreError::Locked { .. }), "{locked}");
        assert!(locked.to_string().contains("serve.redb"), "{locked}");
        let junk = dir.path().join("junk.redb");
        std::fs::write(&junk, b"this is not a database, just some text".repeat(200)).unwrap();
        let corrupt = Store::open(&junk).err().unwrap();
        assert!(corrupt.to_string().contains("junk.redb"), "{corrupt}");
    }

    #[test]
    fn pruning_removes_old_ended_tasks_and_their_events_only() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("s.redb")).unwrap();
        let mut old = store.create_task(spec("old")).unwrap();
        old.status = TaskState::Finished;
        old.ended = Some("2020-01-01T00:00:00Z".into());
        store.save_task(&old).unwrap();
        store
            .append_event(&old.id, "task_ended", Value::Null)
            .unwrap();
        let live = store.create_task(spec("live")).unwrap();
        store.append_event(&live.id, "queued", Value::Null).unwrap();
        assert_eq!(store.prune(Duration::from_secs(86_400)).unwrap(), 1);
        assert!(store.task(&old.id).unwrap().is_none());
        assert_eq!(store.event_count().unwrap(), 1);
        assert!(store.task(&live.id).unwrap().is_some());
    }
}
