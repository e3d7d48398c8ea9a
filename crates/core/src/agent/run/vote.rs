//! **Act, put to a vote**: before a decision acts, a steer may ask for
//! other answers to vote with it ([`Steer::vote`](crate::agent::steer::Steer::vote)).
//! The model's own call is tried first (nothing it does lasts); when it
//! fails or shows nothing there is nothing to vote on and it acts as it
//! is. Otherwise the drawn answers are tried too, their outcomes counted,
//! and the first answer of a winning outcome ([`Count::of`]) acts in its
//! place.

use std::time::Duration;

use serde_json::Value;

use super::redraw::Redrawn;
use super::Run;
use crate::agent::guard::StopStatus;
use crate::agent::{act, steer};
use crate::decision::Decision;
use crate::journal::{JudgeRecord, RedrawRecord};
use crate::text::clip;
use crate::tools::{ToolResult, ToolStatus};

/// What came of asking for a vote before a decision acts.
pub(super) enum Vote {
    /// No vote: the decision acts as it is.
    Skipped(Decision),
    /// The model's own call ran out of time when tried: that result is
    /// the round's. A program killed at its limit keeps no variables and
    /// saves nothing, so running it again would only wait as long.
    TimedOut(Decision, ToolResult, Duration),
    /// A vote was held: the answer that acts, and what the vote did.
    Held(Decision, Voted),
}

/// What a vote did: its record, and how long the tried calls ran.
pub(super) struct Voted {
    /// The journal's record of it, with what drawing cost.
    pub(super) redrawn: Box<Redrawn>,
    /// The time the trials took (the model's own and the draws').
    pub(super) tried: Duration,
}

impl Run<'_> {
    /// The steer that asks for `decision` to be put to a vote, and how,
    /// when one does: never for a tool whose trials are not declared
    /// harmless, nor under an approval policy. Asked before [`Self::vote`]
    /// so that a round with no vote builds no vote future (the loop's
    /// usual round).
    pub(super) fn vote_asked(
        &self,
        decision: &Decision,
    ) -> Option<(&'static dyn steer::Steer, steer::Redraw)> {
        let agent = self.agent;
        // Only a tool that declares its trials harmless is ever tried.
        if agent.approvals.is_some() || !agent.toolbox.is_triable(&decision.action.name) {
            return None;
        }
        steer::vote(&agent.limits.steer, &self.steer_context(), decision)
    }

    /// `decision` put to the vote that `by` asked for with `ask` (see
    /// [`Self::vote_asked`]; a tool is tried only when
    /// [`ToolSpec::triable`](crate::tools::ToolSpec::triable)): the answer
    /// that acts (the model's own, or a drawn one whose outcome won) and
    /// what the vote did. [`Vote::Skipped`] when the model's own call
    /// failed or showed nothing when tried (or [`Vote::TimedOut`]). `Err`
    /// when the clock or the caller ends the run.
    pub(super) async fn vote(
        &mut self,
        round: u32,
        decision: Decision,
        (by, ask): (&'static dyn steer::Steer, steer::Redraw),
    ) -> Result<Vote, StopStatus> {
        let agent = self.agent;
        let tried = act::trial(&agent.toolbox, &decision.action);
        let (own, mut tried_for) = Box::pin(self.bounded(tried)).await?;
        if own.data["timed_out"].as_bool() == Some(true) {
            return Ok(Vote::TimedOut(decision, own, tried_for));
        }
        let Some(own) = outcome(&own) else {
            return Ok(Vote::Skipped(decision));
        };
        let drawn = Box::pin(self.draw(round, &decision, by, &ask)).await?;
        let mut record = RedrawRecord::new(by.name(), ask.draws);
        let mut outcomes = Vec::new();
        for (number, candidate) in drawn.candidates {
            record.ran += 1;
            let tried = act::trial(&agent.toolbox, &candidate.action);
            let (result, took) = Box::pin(self.bounded(tried)).await?;
            tried_for += took;
            if let Some(outcome) = outcome(&result) {
                outcomes.push((number, candidate, outcome));
            }
        }
        let count = Count::of(&own, &outcomes);
        let mut usage = drawn.usage;
        let mut llm_time = drawn.llm_time;
        let mut chosen = count.winner;
        if count.tally.len() > 1 {
            // Contested: one answer per outcome, the count's choice first.
            let order = count.by_answers();
            let contenders: Vec<(&Decision, &str)> = order
                .iter()
                .map(|&group| match count.firsts[group] {
                    None => (&decision, own.as_str()),
                    Some(i) => (&outcomes[i].1, outcomes[i].2.as_str()),
                })
                .collect();
            if let Some(judged) = Box::pin(self.judge(&contenders)).await? {
                usage += judged.usage;
                llm_time += judged.llm_time;
                if let Some(index) = judged.chosen {
                    chosen = count.firsts[order[index]];
                }
                record.judge = Some(JudgeRecord {
                    by: judged.by.to_string(),
                    chose: judged.chosen.map(|index| order[index]),
                    reason: clip(&judged.reason, 300),
                });
            }
        }
        record.tally = count.tally;
        let winner = chosen
            .and_then(|i| outcomes.into_iter().nth(i))
            .map(|(number, candidate, _)| (number, candidate));
        let decision = match winner {
            Some((number, candidate)) => {
                record.kept = Some(number);
                record.replaced = Some(replaced(&decision, &own));
                candidate
            }
            None => decision,
        };
        let redrawn = Box::new(Redrawn {
            record,
            usage,
            llm_time,
        });
        let voted = Voted {
            redrawn,
            tried: tried_for,
        };
        Ok(Vote::Held(decision, voted))
    }
}

/// A call's outcome as the vote compares it: what it printed and the
/// files it wrote, each trimmed (`None` when it failed or showed nothing:
/// such an answer has no vote).
fn outcome(result: &ToolResult) -> Option<String> {
    if result.status != ToolStatus::Ok {
        return None;
    }
    let data = &result.data;
    let mut outcome = data["stdout"]
        .as_str()
        .unwrap_or_default()
        .trim()
        .to_string();
    for key in ["unsaved_writes", "saved"] {
        if let Some(files) = data[key].as_object() {
            for (path, text) in files {
                outcome.push_str(&format!("\n\u{0}{path}\u{0}{}", shown(text).trim()));
            }
        }
    }
    (!outcome.is_empty()).then_some(outcome)
}

/// A file's text as a result shows it.
fn shown(text: &Value) -> String {
    text.as_str()
        .map_or_else(|| text.to_string(), str::to_string)
}

/// The count of a vote: the answers per outcome, the model's first, and
/// the drawn outcome that won, if one did.
#[derive(Debug, PartialEq, Eq)]
struct Count {
    /// Answers per outcome: the model's own first, then the other
    /// outcomes in the order first drawn.
    tally: Vec<u32>,
    /// The index (among the drawn outcomes) of the first answer that gave
    /// the winning outcome, when it is not the model's.
    winner: Option<usize>,
    /// For each outcome of `tally`, the index (among the drawn outcomes)
    /// of its first answer; `None` for the model's own.
    firsts: Vec<Option<usize>>,
}

impl Count {
    /// Counts `own` (the model's outcome) and the drawn `outcomes`; a
    /// drawn outcome wins when more answers give it than give the model's,
    /// or as many and at least two (drawn answers read the goal again
    /// just before answering, see [`steer::Redraw::reread`]; one stray
    /// draw never wins). The first drawn wins a tie between drawn ones.
    fn of<T>(own: &str, outcomes: &[(u32, T, String)]) -> Self {
        // (outcome, answers, index of its first draw)
        let mut seen: Vec<(&str, u32, usize)> = vec![(own, 1, usize::MAX)];
        let own_value = OneValue::of(own);
        for (i, (_, _, outcome)) in outcomes.iter().enumerate() {
            // A draw that shows the model's one value in other words votes
            // with the model; draws among themselves compare as text.
            let with_own = own_value.is_some() && OneValue::of(outcome) == own_value;
            let found = if with_own {
                Some(&mut seen[0])
            } else {
                seen.iter_mut().find(|(o, _, _)| o == outcome)
            };
            match found {
                Some(found) => found.1 += 1,
                None => seen.push((outcome, 1, i)),
            }
        }
        let own_votes = seen[0].1;
        let mut winner: Option<(u32, usize)> = None;
        for &(_, votes, first) in &seen[1..] {
            let beats = votes > own_votes || (votes == own_votes && votes >= 2);
            if beats && winner.is_none_or(|(best, _)| votes > best) {
                winner = Some((votes, first));
            }
        }
        Count {
            tally: seen.iter().map(|(_, votes, _)| *votes).collect(),
            winner: winner.map(|(_, first)| first),
            firsts: seen
                .iter()
                .map(|&(_, _, first)| (first != usize::MAX).then_some(first))
                .collect(),
        }
    }

    /// The outcomes (indices into `tally`) as a judge is shown them: the
    /// count's choice first (the winning draw's, or else the model's own),
    /// then the others from the most answered to the least, in the order
    /// drawn among equals.
    fn by_answers(&self) -> Vec<usize> {
        let chosen = self
            .winner
            .and_then(|i| self.firsts.iter().position(|&first| first == Some(i)))
            .unwrap_or(0);
        let mut order: Vec<usize> = (0..self.tally.len()).collect();
        order.sort_by_key(|&group| (group != chosen, std::cmp::Reverse(self.tally[group])));
        order
    }
}

/// An outcome that shows one value: the files it wrote (paths, in order)
/// and the one number its printout and files hold, however often and in
/// whatever words (`44.1`, `Total: 44.1 km`). A draw whose outcome shows
/// the same one value as the model's, in files of the same names, votes
/// with the model's: the vote counts what the programs computed, not how
/// they worded it, and the model's program keeps its words. (Only with
/// the model's: two draws that word one value two ways and so together
/// outvote the model would put a draw's words in place of the model's,
/// `600.0` for `600`, EVALS.md section 46.)
#[derive(Debug, Clone, PartialEq)]
struct OneValue {
    /// The paths of the files written.
    files: Vec<String>,
    /// The number.
    number: f64,
}

impl OneValue {
    /// `outcome`'s one value ([`outcome`]'s text: what was printed, then
    /// `\n\0PATH\0TEXT` per file), or `None`.
    fn of(outcome: &str) -> Option<Self> {
        let mut files = Vec::new();
        let mut number: Option<f64> = None;
        for (i, part) in outcome.split('\u{0}').enumerate() {
            if i % 2 == 1 {
                files.push(part.to_string());
                continue;
            }
            for found in numbers(part) {
                match number {
                    Some(n) if n != found => return None,
                    _ => number = Some(found),
                }
            }
        }
        number.map(|number| Self { files, number })
    }
}

/// The numbers written in `text` (`-7`, `44.1`, `3`), left to right; a
/// minus sign counts only where no letter or digit comes before it.
fn numbers(text: &str) -> impl Iterator<Item = f64> + '_ {
    let bytes = text.as_bytes();
    let mut at = 0;
    std::iter::from_fn(move || {
        while at < bytes.len() {
            let start = at;
            if !bytes[at].is_ascii_digit() {
                at += 1;
                continue;
            }
            while at < bytes.len() && bytes[at].is_ascii_digit() {
                at += 1;
            }
            if at + 1 < bytes.len() && bytes[at] == b'.' && bytes[at + 1].is_ascii_digit() {
                at += 1;
                while at < bytes.len() && bytes[at].is_ascii_digit() {
                    at += 1;
                }
            }
            let signed = start > 0
                && bytes[start - 1] == b'-'
                && (start < 2 || !bytes[start - 2].is_ascii_alphanumeric());
            let from = if signed { start - 1 } else { start };
            if let Ok(n) = text[from..at].parse() {
                return Some(n);
            }
        }
        None
    })
}

/// The model's own call and its outcome, shortened, for the journal.
fn replaced(decision: &Decision, own: &str) -> String {
    format!(
        "{} {} → {}",
        decision.action.name,
        clip(&decision.action.args.to_string(), 300),
        clip(&own.replace('\u{0}', " "), 200)
    )
}

#[cfg(test)]
mod tests;
