//! One run of the loop: the state that lives from the first round to the
//! last (goal, system prompt, deadline, cancellation, journal, usage), and
//! the round itself, perceive → decide → act → observe, then the guards.

mod judge;
mod record;
mod redraw;
#[cfg(test)]
mod test_programs;
mod vote;

use std::future::Future;
use std::sync::Arc;

use tokio::time::{timeout_at, Instant};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::decide::Decided;
use super::goal::OwnedFile;
use super::guard::{self, StopStatus};
use super::outcome::Ending;
use super::reflect::{self, Reflection};
use super::steer::{self, Gate, GoalFiles, SteerContext};
use super::{decide, evidence, memory, observe, perceive, Agent};
use crate::approval::ApprovalRequest;
use crate::decision::Decision;
use crate::journal::{Journal, JournalEntry, UNPARSED};
use crate::llm::{traced_chat, ChatMessage, ChatRequest, Usage};
use crate::tools::{ToolEffect, ToolResult, ToolStatus};
use record::entry_for;

/// The state of one run.
pub(crate) struct Run<'a> {
    agent: &'a Agent,
    /// The goal as the model reads it ([`crate::agent::Goal::text`]).
    goal: &'a str,
    /// The goal's own work: the text whose file names the steers read.
    work: &'a str,
    /// The work as a steer extended it before round 1 (see
    /// [`steer::Steer::work`]), when one did.
    extended: Option<String>,
    /// Built once: it is the same every round (and so a stable prompt prefix).
    system: Arc<str>,
    deadline: Instant,
    cancel: &'a CancellationToken,
    pub(crate) journal: Journal,
    pub(crate) usage: Usage,
    /// Reviews made so far, shown in later prompts.
    pub(crate) reflections: Vec<Reflection>,
    /// The notes of earlier tasks that open the conversation (may be empty).
    notes: String,
    /// What the steers showed after the goal before the first round (the
    /// workspace's files; may be empty).
    opening: String,
    /// The files whose whole text the opening showed.
    shown: Vec<String>,
    /// Files other subtasks of the task write (see [`Goal::others`]).
    ///
    /// [`Goal::others`]: crate::agent::Goal::others
    others: &'a [OwnedFile],
    /// The files the goal names, split into outputs and inputs before the
    /// first round (empty when no tool of the run can write files: then
    /// no steer can act on them and nothing can be missing).
    files: GoalFiles,
    /// Each journalled round's prompt text, rendered once.
    rendered: perceive::RenderedRounds,
    /// The last round's conversation, to build the next one from.
    kept: perceive::KeptTurn,
    /// The steer whose sentence closed the last conversation built (see
    /// [`steer::closing`]), journalled with the round it was asked for.
    prompted_by: Option<&'static str>,
}

impl<'a> Run<'a> {
    /// A run of `agent` on `goal` (whose own work is `work`) whose earlier
    /// rounds are in `journal`.
    pub(crate) fn new(
        agent: &'a Agent,
        goal: &'a str,
        work: &'a str,
        journal: Journal,
        cancel: &'a CancellationToken,
    ) -> Self {
        Self {
            system: perceive::shared_system_prompt(&agent.identity, &agent.toolbox, &agent.limits),
            deadline: Instant::now() + agent.limits.timeout,
            agent,
            goal,
            work,
            extended: None,
            cancel,
            journal,
            usage: Usage::default(),
            reflections: Vec::new(),
            notes: String::new(),
            opening: String::new(),
            shown: Vec::new(),
            others: &[],
            files: GoalFiles::default(),
            rendered: perceive::RenderedRounds::default(),
            kept: perceive::KeptTurn::default(),
            prompted_by: None,
        }
    }

    /// This run, leaving `others` to the subtasks that write them.
    pub(crate) fn with_others(mut self, others: &'a [OwnedFile]) -> Self {
        self.others = others;
        self
    }

    /// Recalls the notes of earlier tasks nearest the goal, when the agent
    /// has a memory: their ids (`None` without a memory). Bounded by the
    /// run's clock and cancellation like a round; a recall cut short gives
    /// no notes, and the first round then ends the run.
    pub(crate) async fn recall(&mut self) -> Option<Vec<String>> {
        let memory = self.agent.memory.as_ref()?;
        let recalled = self
            .bounded(memory.recall(self.goal))
            .await
            .unwrap_or_default();
        self.notes = memory::notes_block(&recalled.texts);
        Some(recalled.ids)
    }

    /// Before the first round: reads the goal's files when a tool can
    /// write files, and asks the steers on for their opening blocks (the
    /// workspace's files, see [`steer::workspace_listing`]). Bounded by the
    /// run's clock and cancellation; an opening cut short shows nothing,
    /// and the first round then ends the run.
    pub(crate) async fn survey(&mut self) {
        let steers = &self.agent.limits.steer;
        // Only a run that can write files has outputs: the steers act on
        // writes, and the finish is checked against them (`incomplete`).
        let toolbox = &self.agent.toolbox;
        self.extended = steer::work(steers, self.work, toolbox);
        if toolbox.first_with(ToolEffect::Writes).is_some() {
            self.files = GoalFiles::of(self.work(), toolbox);
        }
        let first_round = self.journal.entries().len() as u32 + 1;
        let cx = self.steer_context();
        let opening = steer::opening(steers, &cx, first_round);
        let opening = self.bounded(opening).await.unwrap_or_default();
        self.opening = opening.text;
        self.shown = opening.shown;
    }

    /// The work the steers read: the goal's own, or as a steer extended it.
    pub(super) fn work(&self) -> &str {
        self.extended.as_deref().unwrap_or(self.work)
    }

    /// What the steers see of this run now.
    fn steer_context(&self) -> SteerContext<'_> {
        SteerContext {
            goal: self.work(),
            files: &self.files,
            toolbox: &self.agent.toolbox,
            history: self.journal.entries(),
            repetition_window: self.agent.limits.repetition_window,
            shown: &self.shown,
            others: self.others,
        }
    }

    /// Runs rounds until one ends the run; returns how it ended.
    pub(crate) async fn rounds(&mut self) -> Ending {
        loop {
            let round = self.journal.entries().len() as u32 + 1;
            let span = tracing::info_span!("round", hermes.round = i64::from(round), hermes.role = %self.agent.role);
            if let Some(ending) = self.round(round).instrument(span).await {
                return ending;
            }
        }
    }

    /// Awaits `work` unless the wall clock runs out or the run is cancelled
    /// first (the model or tool call is dropped then).
    async fn bounded<F: Future>(&self, work: F) -> Result<F::Output, StopStatus> {
        tokio::select! {
            biased;
            _ = self.cancel.cancelled() => Err(StopStatus::Cancelled),
            done = timeout_at(self.deadline, work) => done.map_err(|_| StopStatus::Timeout),
        }
    }

    /// One perceive → decide → act → observe pass; `Some` when the run ends.
    async fn round(&mut self, round: u32) -> Option<Ending> {
        if self.budget_spent() {
            return Some(Ending::stop(StopStatus::Budget));
        }
        if self.cancel.is_cancelled() {
            return Some(Ending::stop(StopStatus::Cancelled));
        }
        let messages = self.conversation();
        // The phases' futures are boxed: inline, the round's future was as
        // large as its largest phase (about 2.6 KB), and 100,000 waiting
        // loops hold one each; boxed, only the phase under way takes space.
        let (decided, reasked, gate) = match Box::pin(self.decide_and_gate(messages)).await {
            Ok(decided) => decided,
            // A call refused by a spent budget (or cut by the cancel that
            // spending it caused) ends the run as `budget`, not `error`.
            Err(_) if self.budget_spent() => return Some(Ending::stop(StopStatus::Budget)),
            Err(ending) => return Some(ending),
        };
        let limits = &self.agent.limits;
        let evidence = decided
            .decision
            .as_ref()
            .ok()
            .and_then(|decision| self.check_evidence(round, decision))
            .map(|why| format!("flagged: {why}"));
        let mut finished = None;
        let entry = match (decided.decision, gate) {
            (Ok(decision), Some((by, Gate::Refuse { note, repeat_of }))) => JournalEntry {
                repeat_of,
                steered_by: Some(by.to_string()),
                ..entry_for(round, decision, ToolResult::error(note), limits)
            },
            (Ok(decision), _) if decision.is_finish() => {
                let result = decision.result.clone().unwrap_or_default();
                let entry = entry_for(round, decision, ToolResult::ok(result.clone()), limits);
                finished = Some(result);
                entry
            }
            (Ok(decision), _) => {
                // A call the approval policy names waits for its answer
                // (bounded by the run's clock and cancellation like a tool).
                let approval = match &self.agent.approvals {
                    Some(approvals) => {
                        let request = ApprovalRequest::new(
                            self.agent.subtask.as_deref(),
                            &self.agent.role,
                            round,
                            &decision.action.name,
                            &decision.action.args,
                        );
                        // The previous round's text, when it came from outside.
                        let untrusted = self.journal.entries().last().filter(|last| {
                            last.status == ToolStatus::Ok
                                && self.agent.toolbox.is_untrusted(&last.action)
                        });
                        let untrusted =
                            untrusted.map(|l| (l.action.as_str(), l.observation.as_str()));
                        let effect = self.agent.toolbox.effect(&decision.action.name);
                        match Box::pin(self.bounded(approvals.check(&request, effect, untrusted)))
                            .await
                        {
                            Ok(record) => record.map(Box::new),
                            Err(stop) => return Some(Ending::stop(stop)),
                        }
                    }
                    None => None,
                };
                match approval {
                    Some(record) if !record.approved => {
                        let refused = ToolResult::error(record.refusal());
                        JournalEntry {
                            approval: Some(record),
                            ..entry_for(round, decision, refused, limits)
                        }
                    }
                    approval => {
                        // A steer may put the decision to a vote among
                        // drawn answers (`vote.rs`), or reject its result
                        // and have other answers drawn, the first that
                        // succeeds taking the round's place (`redraw.rs`).
                        let acted = match Box::pin(self.act(round, decision)).await {
                            Ok(acted) => acted,
                            Err(stop) => return Some(Ending::stop(stop)),
                        };
                        let (decision, result, took) = (acted.decision, acted.result, acted.took);
                        let untrusted = result.status == ToolStatus::Ok
                            && self.agent.toolbox.is_untrusted(&decision.action.name);
                        let mut entry = JournalEntry {
                            tool_ms: took.as_millis() as u64,
                            approval,
                            ..entry_for(round, decision, result, limits)
                        };
                        // The draws' model use, added to the decision's below.
                        if let Some(drawn) = acted.redrawn {
                            entry.tokens = drawn.usage;
                            entry.llm_ms = drawn.llm_time.as_millis() as u64;
                            entry.redraw = Some(Box::new(drawn.record));
                        }
                        // What came back from outside is marked; an error
                        // envelope is Hermes's own words and stays plain.
                        if untrusted {
                            entry.observation =
                                observe::mark_untrusted(&entry.action, &entry.observation);
                        }
                        entry
                    }
                }
            }
            (Err(failure), _) => {
                let result = ToolResult::error(failure.observation());
                JournalEntry {
                    status: ToolStatus::Error,
                    observation: observe::observation_text(&result, limits),
                    raw: Some(failure.raw),
                    ..JournalEntry::new(round, "", UNPARSED, serde_json::json!({}))
                }
            }
        };
        // What the round cost the model: the decision, and any draws the
        // act phase made (already in the entry).
        let mut tokens = decided.usage;
        tokens += entry.tokens;
        Box::pin(self.record(JournalEntry {
            tokens,
            llm_ms: decided.llm_time.as_millis() as u64 + entry.llm_ms,
            regenerated: decided.regenerated,
            reasked: reasked.is_some(),
            reasked_by: reasked.map(str::to_string),
            prompted_by: self.prompted_by.map(str::to_string),
            evidence,
            ..entry
        }))
        .await;
        if let Some(result) = finished {
            // The status says whether the work is done, whatever the model
            // says: a goal's file still missing makes it `incomplete`.
            let missing = self.files.missing(&self.agent.toolbox);
            if missing.is_empty() {
                return Some(Ending::finished(result));
            }
            return Some(Ending::incomplete(result, missing));
        }
        if let Some(stop) = guard::check(self.journal.entries(), limits) {
            return Some(Ending::stop(stop));
        }
        if reflect::due(self.journal.entries(), limits) {
            Box::pin(self.reflect(round)).await;
        }
        None
    }

    /// Whether the task's budget is spent.
    fn budget_spent(&self) -> bool {
        self.agent.budgets.iter().any(|b| b.exhausted())
    }

    /// The conversation the next decision is asked from.
    fn conversation(&mut self) -> Vec<ChatMessage> {
        let closing = steer::closing(&self.agent.limits.steer, &self.steer_context());
        self.prompted_by = closing.as_ref().map(|(by, _)| *by);
        let closing = closing.map(|(_, text)| text).unwrap_or_default();
        let history = self.journal.entries();
        let rendered = self.rendered.sync(history, &self.agent.limits);
        let opening = perceive::Opening {
            notes: &self.notes,
            goal: self.goal,
            workspace: &self.opening,
        };
        self.kept.messages(perceive::PromptParts {
            system: &self.system,
            opening,
            history,
            rendered,
            reflections: &self.reflections,
            limits: &self.agent.limits,
            written: &closing,
        })
    }

    /// One reflection after `round`: kept for the next prompts and
    /// journalled, or skipped with a warning when it fails.
    async fn reflect(&mut self, round: u32) {
        let limits = &self.agent.limits;
        let request = ChatRequest {
            messages: reflect::request(self.conversation()),
            temperature: limits.temperature,
            max_tokens: reflect::REFLECTION_MAX_TOKENS,
            json: false,
            schema: None,
            seed: None,
        };
        let asked = traced_chat(self.agent.llm.as_ref(), &request);
        let reply = match self.bounded(asked).await {
            Ok(Ok(reply)) => reply,
            Ok(Err(e)) => {
                tracing::warn!("reflection after round {round} skipped: {e}");
                return;
            }
            // The clock or the caller: the next round ends the run.
            Err(_) => return,
        };
        self.usage += reply.usage;
        let Some(text) = reflect::clean(&reply.content) else {
            tracing::warn!("reflection after round {round} skipped: the model wrote nothing");
            return;
        };
        self.journal.note_reflection(round, &text).await;
        self.reflections.push(Reflection { round, text });
    }

    /// One decide phase under the wall clock; the run's ending when the
    /// clock, the caller or the model ends it.
    /// `among`, when given, are the only actions it may name (a re-ask's);
    /// otherwise a steer may narrow them.
    async fn decide(
        &mut self,
        messages: Vec<ChatMessage>,
        among: Option<&[String]>,
    ) -> Result<Decided, Ending> {
        let limits = &self.agent.limits;
        let narrowed = match among {
            Some(names) => Some(names.to_vec()),
            None => steer::narrowed(&limits.steer, &self.steer_context()),
        };
        let narrowed = narrowed.map(|names| {
            Arc::new(decide::decision_schema_among(
                &self.agent.toolbox,
                Some(&names),
            ))
        });
        let schema = narrowed.as_ref().unwrap_or(&self.agent.schema);
        let decide = decide::decide_keeping(self.agent.llm.as_ref(), messages, limits, schema);
        match self.bounded(decide).await {
            Err(stop) => Err(Ending::stop(stop)),
            Ok(Err(e)) => Err(Ending::error(e.to_string())),
            Ok(Ok((decided, sent))) => {
                self.usage += decided.usage;
                // Kept for the next round only as it was built (a re-ask's
                // has the note appended: `give_back` refuses it).
                if let Some(sent) = sent {
                    self.kept.give_back(sent);
                }
                Ok(decided)
            }
        }
    }

    /// Why the evidence check flags `decision`, made in `round`, if it does.
    fn check_evidence(&self, round: u32, decision: &Decision) -> Option<String> {
        let history = self.journal.entries();
        let tools = self.agent.toolbox.names();
        // Files the first prompt showed whole are evidence too.
        let shown = !self.shown.is_empty();
        evidence::check_thought(&decision.thought, round, history, &tools, shown).or_else(|| {
            decision
                .is_finish()
                .then(|| {
                    let result = decision.result.as_deref().unwrap_or("");
                    evidence::check_finish(result, history, shown)
                })
                .flatten()
        })
    }

    /// Decides, and asks the steers on whether the decision may act; when
    /// one asks for it, asks the model once more with its note and gates
    /// the second answer. Returns the decision, the steer that re-asked
    /// it (if one did), and the steer that answered it instead of letting
    /// it act, if one did.
    async fn decide_and_gate(
        &mut self,
        messages: Vec<ChatMessage>,
    ) -> Result<(Decided, Option<&'static str>, Option<(&'static str, Gate)>), Ending> {
        let first = self.decide(messages, None).await?;
        let gate = self.gate(&first, false);
        let Some((by, Gate::Reask { note, among })) = &gate else {
            return Ok((first, None, gate));
        };
        let by = *by;
        // Re-asks are rare: the conversation is built again (the journal
        // has not moved) rather than copied every round in case of one.
        let mut messages = self.conversation();
        if let Ok(decision) = &first.decision {
            messages.push(ChatMessage::assistant(perceive::decision_json(decision)));
        }
        messages.push(ChatMessage::user(note.clone()));
        let again = self.decide(messages, among.as_deref()).await?;
        let mut usage = first.usage;
        usage += again.usage;
        let decided = Decided {
            usage,
            llm_time: first.llm_time + again.llm_time,
            regenerated: first.regenerated || again.regenerated,
            decision: again.decision,
        };
        let gate = self.gate(&decided, true);
        Ok((decided, Some(by), gate))
    }

    /// The steer that answers `decided` instead of letting it act.
    fn gate(&self, decided: &Decided, reasked: bool) -> Option<(&'static str, Gate)> {
        let decision = decided.decision.as_ref().ok()?;
        steer::gate(
            &self.agent.limits.steer,
            &self.steer_context(),
            decision,
            reasked,
        )
    }
}

#[cfg(test)]
mod future_size {
    use std::sync::Arc;

    use super::*;
    use crate::agent::Agent;
    use crate::llm::scripted::ScriptedLlm;
    use crate::tools::Toolbox;

    /// A waiting loop holds its run's future: 100,000 executors hold
    /// 100,000 of them. The phases are boxed so that the round's future
    /// does not grow to the size of its largest phase (it was 2.6 KB, and
    /// the whole run's 3.3 KB, before).
    #[test]
    fn a_waiting_loop_holds_a_small_future() {
        let agent = Agent::new(
            Arc::new(ScriptedLlm::new(Vec::<String>::new())),
            Arc::new(Toolbox::new()),
        );
        let cancel = CancellationToken::new();
        let resume = std::mem::size_of_val(&agent.resume("g", Vec::new(), &cancel));
        let mut run = Run::new(&agent, "g", "g", Journal::from_entries(Vec::new()), &cancel);
        let round = std::mem::size_of_val(&run.round(1));
        assert!(round <= 1_600, "round future: {round} bytes");
        assert!(resume <= 2_560, "run future: {resume} bytes");
    }
}
