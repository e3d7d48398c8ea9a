//! Fault injection: the one place where Hermes breaks itself on purpose.
//!
//! The eval harness runs `hermes run/plan/eval --faults SPEC --seed N` to
//! measure how well the runtime recovers from the failures real agents meet:
//! a model that answers prose, a reply cut short, a model server that hangs
//! or answers 500, a tool that fails, hangs or returns noise, an executor
//! that crashes. [`FaultSpec`] is the parsed `--faults` value
//! (`tool_error=0.2,llm_non_json=0.2`); [`Faults`] turns it into seeded
//! draws. The harness builds one `Faults::new(spec, seed)` per run, wraps the
//! model with [`Faults::wrap_llm`] and the toolbox with
//! [`Faults::wrap_toolbox`], hands it to the planner for executor crashes
//! ([`Faults::should_crash_executor`]), and at the end reads
//! [`Faults::injected_counts`] for the report. After each round the loop
//! drains [`Faults::take_injected`] into that round's journal line
//! (`"injected": "tool_error"`), so a journal says which failures were ours.
//! Whether a fault was *recovered* is the harness's call: a fault counts as
//! recovered only if the run still passes.
//!
//! # Reproducibility
//!
//! A run with the same spec and seed injects the same faults, even when
//! executors run concurrently. One shared generator would not give that (the
//! order in which tasks draw from it depends on scheduling), so draws come
//! from *streams*: each stream has one ChaCha8 generator per fault kind,
//! seeded by SHA-256 of (seed, kind, stream key). [`Faults::new`] is the
//! root stream; [`Faults::for_run`] gives a child with its own stream for one
//! run or subtask (key `"s1"`, or `"parent/s1"` under a child). Inside a
//! stream the n-th draw of a kind is fixed whatever other kinds draw, and
//! one loop draws in a fixed order, so one stream per loop is reproducible.
//! Executor crashes are keyed by (subtask, round) instead of drawn in
//! sequence, so they do not depend on which executor asks first.

mod executor;
mod llm;
mod spec;
mod tool;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use dashmap::DashMap;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sha2::{Digest, Sha256};

use crate::llm::Llm;
use crate::tools::{Tool, Toolbox};

pub use llm::{FaultyLlm, LLM_ATTEMPTS, LLM_BACKOFF};
pub use spec::{FaultKind, FaultSpec, FaultSpecError};
pub use tool::{FaultyTool, GARBAGE_CHARS};

/// The faults to inject into one run, and the log of those injected.
///
/// Cheap to clone (clones share everything); `Default` injects nothing.
/// Clones share one stream of draws and one per-round log; use
/// [`Faults::for_run`] to give a concurrent loop its own.
#[derive(Clone)]
pub struct Faults {
    shared: Arc<Shared>,
    stream: Arc<Stream>,
}

/// What every stream of one run shares.
struct Shared {
    spec: FaultSpec,
    seed: u64,
    /// Scheduled executor crashes, by subtask id.
    crashes: DashMap<String, Crash>,
    /// Every fault injected in any stream, for the report.
    totals: Mutex<BTreeMap<FaultKind, u32>>,
}

/// One reproducible sequence of draws, and the faults injected through it
/// since the loop last drained them.
struct Stream {
    key: String,
    rngs: Mutex<HashMap<FaultKind, ChaCha8Rng>>,
    injected: Mutex<Vec<FaultKind>>,
}

impl Stream {
    fn new(key: String) -> Self {
        Self {
            key,
            rngs: Mutex::new(HashMap::new()),
            injected: Mutex::new(Vec::new()),
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Crash {
    after_round: u32,
    remaining: u32,
}

impl Default for Faults {
    fn default() -> Self {
        Self::new(FaultSpec::none(), 0)
    }
}

impl fmt::Debug for Faults {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Faults")
            .field("spec", &self.shared.spec.to_string())
            .field("seed", &self.shared.seed)
            .field("stream", &self.stream.key)
            .field("scheduled_crashes", &self.shared.crashes.len())
            .field("injected", &self.injected_counts())
            .finish()
    }
}

impl Faults {
    /// No faults (the random kinds never fire; crashes can still be
    /// scheduled with [`Faults::crash_after_round`]).
    pub fn none() -> Self {
        Self::default()
    }

    /// Faults drawn at `spec`'s rates from a generator seeded with `seed`.
    pub fn new(spec: FaultSpec, seed: u64) -> Self {
        Self {
            shared: Arc::new(Shared {
                spec,
                seed,
                crashes: DashMap::new(),
                totals: Mutex::new(BTreeMap::new()),
            }),
            stream: Arc::new(Stream::new(String::new())),
        }
    }

    /// A child for one run or subtask: same spec, seed, crash schedule and
    /// totals, but its own stream of draws (seeded from the seed and the
    /// key) and its own per-round log. Two children with the same key draw
    /// the same faults.
    pub fn for_run(&self, run_key: &str) -> Faults {
        let key = if self.stream.key.is_empty() {
            run_key.to_string()
        } else {
            format!("{}/{run_key}", self.stream.key)
        };
        Faults {
            shared: Arc::clone(&self.shared),
            stream: Arc::new(Stream::new(key)),
        }
    }

    /// The rates in force.
    pub fn spec(&self) -> &FaultSpec {
        &self.shared.spec
    }

    /// The seed every stream derives from.
    pub fn seed(&self) -> u64 {
        self.shared.seed
    }

    /// This stream's key (empty for the root made by [`Faults::new`]).
    pub fn stream_key(&self) -> &str {
        &self.stream.key
    }

    /// Draws the next decision for `kind` in this stream and, when it
    /// fires, records the fault as injected. For injection points other
    /// than the wrappers in this module.
    pub fn inject(&self, kind: FaultKind) -> bool {
        let fired = self.roll(kind);
        if fired {
            self.record(kind);
        }
        fired
    }

    /// The faults injected through this stream since the last call, oldest
    /// first. The loop calls it after each round and journals the result.
    pub fn take_injected(&self) -> Vec<FaultKind> {
        std::mem::take(&mut *lock(&self.stream.injected))
    }

    /// How many faults of each kind were injected so far, in this stream
    /// and every other stream of the same run (kinds never injected are
    /// absent).
    pub fn injected_counts(&self) -> BTreeMap<FaultKind, u32> {
        lock(&self.shared.totals).clone()
    }

    /// Wraps a model so it suffers this spec's `llm_*` faults. A timeout
    /// fault waits `request_timeout` (the model client's own) before
    /// failing. Returns `llm` itself when no `llm_*` kind can fire.
    pub fn wrap_llm(&self, llm: Arc<dyn Llm>, request_timeout: Duration) -> Arc<dyn Llm> {
        if !self.shared.spec.has_llm_faults() {
            return llm;
        }
        Arc::new(FaultyLlm::new(llm, self.clone(), request_timeout))
    }

    /// Wraps one tool so it suffers this spec's `tool_*` faults. Returns
    /// `tool` itself when no `tool_*` kind can fire.
    pub fn wrap_tool(&self, tool: Arc<dyn Tool>) -> Arc<dyn Tool> {
        if !self.shared.spec.has_tool_faults() {
            return tool;
        }
        Arc::new(FaultyTool::new(tool, self.clone()))
    }

    /// A toolbox with every tool of `toolbox` wrapped by [`Faults::wrap_tool`]
    /// (same names, specs and timeouts). `finish` is not a registered tool
    /// (the loop handles it), so it is never faulted.
    pub fn wrap_toolbox(&self, toolbox: &Toolbox) -> Toolbox {
        let mut wrapped = Toolbox::new();
        for tool in toolbox.tools() {
            wrapped.register_arc(self.wrap_tool(Arc::clone(tool)));
        }
        if let Some(workspace) = toolbox.workspace() {
            wrapped.set_workspace(workspace.clone());
        }
        wrapped
    }

    /// Schedules crashes: the executor of `subtask` panics right after
    /// recording round `after_round` or any later round, `times` times in
    /// all (a restarted executor that resumes past `after_round` crashes
    /// again while crashes remain). Replaces an earlier schedule for the
    /// same subtask.
    pub fn crash_after_round(&self, subtask: &str, after_round: u32, times: u32) {
        self.shared.crashes.insert(
            subtask.to_string(),
            Crash {
                after_round,
                remaining: times,
            },
        );
    }

    /// Whether the executor of `subtask` must panic now, after `round`:
    /// when a scheduled crash is due (consuming it) or, failing that, when
    /// the `executor_panic` rate fires for this (subtask, round). Either way
    /// the crash is recorded as an injected `executor_panic`.
    pub fn should_crash_executor(&self, subtask: &str, round: u32) -> bool {
        self.should_crash_executor_attempt(subtask, 0, round)
    }

    /// As [`Faults::should_crash_executor`], for the `attempt`-th executor
    /// of the subtask (0 first, 1 after a restart): the random draw is keyed
    /// by the attempt too, so a restarted executor does not meet the very
    /// crash its predecessor met.
    pub fn should_crash_executor_attempt(&self, subtask: &str, attempt: u32, round: u32) -> bool {
        // The guard is dropped at the end of the match; nothing awaits while it is held.
        let scheduled = match self.shared.crashes.get_mut(subtask) {
            Some(mut crash) if round >= crash.after_round && crash.remaining > 0 => {
                crash.remaining -= 1;
                true
            }
            _ => false,
        };
        let key = format!("{subtask}#{attempt}");
        let crash = scheduled || self.roll_keyed(FaultKind::ExecutorPanic, &key, round);
        if crash {
            self.record(FaultKind::ExecutorPanic);
        }
        crash
    }

    /// The next draw of `kind` in this stream, without recording it: the
    /// wrappers draw every kind they handle, then apply one.
    fn roll(&self, kind: FaultKind) -> bool {
        let rate = self.shared.spec.rate(kind);
        if rate <= 0.0 {
            return false;
        }
        unit(self.with_rng(kind, |rng| rng.next_u64())) < rate
    }

    /// A draw that depends only on (seed, kind, stream, subtask, round).
    fn roll_keyed(&self, kind: FaultKind, subtask: &str, round: u32) -> bool {
        let rate = self.shared.spec.rate(kind);
        if rate <= 0.0 {
            return false;
        }
        let seed = derive_seed(
            self.shared.seed,
            &[
                kind.as_str().as_bytes(),
                self.stream.key.as_bytes(),
                subtask.as_bytes(),
                &round.to_le_bytes(),
            ],
        );
        unit(ChaCha8Rng::from_seed(seed).next_u64()) < rate
    }

    /// Runs `f` on this stream's generator for `kind` (for the noise and
    /// prose a fault produces, so they are reproducible too).
    fn with_rng<R>(&self, kind: FaultKind, f: impl FnOnce(&mut ChaCha8Rng) -> R) -> R {
        let mut rngs = lock(&self.stream.rngs);
        let rng = rngs.entry(kind).or_insert_with(|| {
            let seed = derive_seed(
                self.shared.seed,
                &[kind.as_str().as_bytes(), self.stream.key.as_bytes()],
            );
            ChaCha8Rng::from_seed(seed)
        });
        f(rng)
    }

    /// Logs an injected fault for this round and the run's totals.
    fn record(&self, kind: FaultKind) {
        tracing::info!(fault = %kind, stream = %self.stream.key, "injected fault");
        lock(&self.stream.injected).push(kind);
        *lock(&self.shared.totals).entry(kind).or_insert(0) += 1;
    }
}

/// A 32-byte generator seed from the run seed and length-prefixed fields
/// (so `("ab", "c")` and `("a", "bc")` differ). SHA-256 keeps it stable
/// across platforms and releases.
fn derive_seed(seed: u64, fields: &[&[u8]]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(b"hermes-faults/v1");
    hasher.update(seed.to_le_bytes());
    for field in fields {
        hasher.update((field.len() as u64).to_le_bytes());
        hasher.update(field);
    }
    hasher.finalize().into()
}

/// A uniform number in `[0, 1)` from 53 random bits: rate 0 never fires,
/// rate 1 always does.
fn unit(bits: u64) -> f64 {
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

/// A poisoned lock only means another thread panicked mid-update of a log;
/// the data is still usable.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn only(kind: FaultKind, rate: f64, seed: u64) -> Faults {
        Faults::new(FaultSpec::none().with(kind, rate), seed)
    }

    /// How many of `n` draws fire, for any kind (executor crashes are keyed
    /// by round, the others drawn in sequence).
    fn fired(faults: &Faults, kind: FaultKind, n: u32) -> u32 {
        (0..n)
            .filter(|round| match kind {
                FaultKind::ExecutorPanic => faults.should_crash_executor("s1", *round),
                _ => faults.inject(kind),
            })
            .count() as u32
    }

    #[test]
    fn every_kind_fires_at_its_configured_rate() {
        for kind in FaultKind::ALL {
            let faults = only(kind, 0.2, 42);
            let n = fired(&faults, kind, 1000);
            assert!((150..=250).contains(&n), "{kind}: {n} of 1000 at rate 0.2");
            assert_eq!(faults.injected_counts(), BTreeMap::from([(kind, n)]));
            assert_eq!(faults.take_injected().len() as u32, n);

            assert_eq!(fired(&only(kind, 0.0, 42), kind, 1000), 0, "{kind} at 0");
            assert_eq!(fired(&only(kind, 1.0, 42), kind, 1000), 1000, "{kind} at 1");
            assert_eq!(fired(&Faults::none(), kind, 100), 0, "{kind} unlisted");
        }
    }

    fn draws(faults: &Faults, kind: FaultKind) -> Vec<bool> {
        (0..200)
            .map(|round| match kind {
                FaultKind::ExecutorPanic => faults.should_crash_executor("s1", round),
                _ => faults.inject(kind),
            })
            .collect()
    }

    #[test]
    fn same_seed_same_faults_other_seed_other_faults() {
        for kind in FaultKind::ALL {
            let a = draws(&only(kind, 0.3, 7), kind);
            assert_eq!(a, draws(&only(kind, 0.3, 7), kind), "{kind}");
            assert_ne!(a, draws(&only(kind, 0.3, 8), kind), "{kind}");
        }
    }

    #[test]
    fn one_kind_draws_the_same_whatever_other_kinds_draw() {
        let spec = FaultSpec::parse("tool_error=0.3,llm_non_json=0.5").unwrap();
        let alone = Faults::new(spec.clone(), 3);
        let mixed = Faults::new(spec, 3);
        let mut a = Vec::new();
        let mut b = Vec::new();
        for i in 0..200 {
            a.push(alone.inject(FaultKind::ToolError));
            for _ in 0..(i % 3) {
                mixed.inject(FaultKind::LlmNonJson);
            }
            b.push(mixed.inject(FaultKind::ToolError));
        }
        assert_eq!(a, b);
    }

    #[test]
    fn runs_have_their_own_streams_and_logs_but_shared_totals() {
        let root = only(FaultKind::ToolError, 0.5, 11);
        let a = draws(&root.for_run("a"), FaultKind::ToolError);
        assert_eq!(a, draws(&root.for_run("a"), FaultKind::ToolError));
        assert_ne!(a, draws(&root.for_run("b"), FaultKind::ToolError));
        assert_eq!(root.for_run("a").for_run("x").stream_key(), "a/x");

        let root = only(FaultKind::ToolError, 1.0, 11);
        let (a, b) = (root.for_run("a"), root.for_run("b"));
        assert!(a.inject(FaultKind::ToolError));
        assert!(b.inject(FaultKind::ToolError));
        assert!(b.inject(FaultKind::ToolError));
        assert_eq!(a.take_injected(), vec![FaultKind::ToolError]);
        assert_eq!(a.take_injected(), vec![]);
        assert_eq!(b.take_injected().len(), 2);
        assert!(root.take_injected().is_empty());
        assert_eq!(
            root.injected_counts(),
            BTreeMap::from([(FaultKind::ToolError, 3)])
        );
    }

    #[test]
    fn concurrent_runs_draw_as_they_would_alone() {
        let root = only(FaultKind::ToolError, 0.4, 5);
        let alone: Vec<Vec<bool>> = (0..4)
            .map(|i| draws(&root.for_run(&format!("s{i}")), FaultKind::ToolError))
            .collect();
        let together: Vec<Vec<bool>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..4)
                .map(|i| {
                    let run = root.for_run(&format!("s{i}"));
                    scope.spawn(move || draws(&run, FaultKind::ToolError))
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(alone, together);
    }

    #[test]
    fn crashes_fire_the_given_number_of_times() {
        let faults = Faults::none();
        faults.crash_after_round("s1", 2, 2);
        assert!(!faults.should_crash_executor("s1", 1));
        assert!(faults.should_crash_executor("s1", 2));
        assert!(faults.should_crash_executor("s1", 3));
        assert!(!faults.should_crash_executor("s1", 4));
        assert!(!faults.should_crash_executor("s2", 2));
        assert_eq!(
            faults.take_injected(),
            vec![FaultKind::ExecutorPanic, FaultKind::ExecutorPanic]
        );
    }

    #[test]
    fn crash_schedule_is_shared_by_children() {
        let root = Faults::none();
        let child = root.for_run("s1");
        root.crash_after_round("s1", 0, 1);
        assert!(child.should_crash_executor("s1", 0));
        assert!(!root.should_crash_executor("s1", 1));
    }

    #[test]
    fn faults_are_shareable_and_debuggable() {
        fn assert_send_sync<T: Send + Sync + Clone + fmt::Debug + Default>() {}
        assert_send_sync::<Faults>();
        let faults = Faults::new(FaultSpec::parse("tool_error=0.5").unwrap(), 9);
        let text = format!("{faults:?}");
        assert!(
            text.contains("tool_error=0.5") && text.contains("seed: 9"),
            "{text}"
        );
    }
}
