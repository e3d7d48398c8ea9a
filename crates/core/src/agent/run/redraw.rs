//! **Act, drawn again**: when a steer rejects what an action returned
//! ([`Steer::redraw`](crate::agent::steer::Steer::redraw)), other answers
//! to the same round's conversation are drawn at once (each with its own
//! seed, so that the engine can batch them and they differ), run in turn,
//! and the first whose call succeeds takes the round's place. The act
//! phase with its vote (`vote.rs`) and its redraw is [`Run::act`].

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::vote::Vote;
use super::Run;
use crate::agent::decide::{self, Draw};
use crate::agent::guard::StopStatus;
use crate::agent::{act, steer};
use crate::decision::Decision;
use crate::journal::RedrawRecord;
use crate::llm::Usage;
use crate::text::clip;
use crate::tools::{ToolResult, ToolStatus};

/// A round's action carried out: the decision that acted (the model's
/// own, or a drawn one that took its place), its result, and the redraw.
pub(super) struct Acted {
    pub(super) decision: Decision,
    pub(super) result: ToolResult,
    /// How long the kept call (and any drawn calls before it) ran.
    pub(super) took: Duration,
    /// What a redraw did, when a steer asked for one.
    pub(super) redrawn: Option<Box<Redrawn>>,
}

/// What a redraw did in one round, for its journal line.
pub(super) struct Redrawn {
    /// What the journal says of it.
    pub(super) record: RedrawRecord,
    /// Tokens of every draw.
    pub(super) usage: Usage,
    /// Time spent waiting on the model for them.
    pub(super) llm_time: Duration,
}

/// A drawn answer kept: the decision, its result, and how long the drawn
/// calls ran up to and including it.
type Kept = (Decision, ToolResult, Duration);

/// The seed of draw `draw` (1-based) of round `round`: different for
/// every draw of a run, the same from one run to the next.
pub(super) fn seed(round: u32, draw: u32) -> u64 {
    u64::from(round) * 1_000 + u64::from(draw)
}

/// Answers drawn for a steer's [`steer::Redraw`]: those that may run, in
/// the order drawn, with their 1-based numbers, and what drawing them cost.
pub(super) struct Drawn {
    /// The eligible answers, each with its number.
    pub(super) candidates: Vec<(u32, Decision)>,
    /// Tokens of every draw.
    pub(super) usage: Usage,
    /// Time spent waiting on the model for them.
    pub(super) llm_time: Duration,
}

impl Run<'_> {
    /// Carries out `decision`, the action of round `round`: first put to
    /// a vote when a steer asks for one (`vote.rs`: the answer that wins
    /// acts; a call that ran out of time when tried is not run again);
    /// then, when a steer rejects its result, the first drawn
    /// answer that succeeds takes its place. `Err` when the clock or the
    /// caller ends the run.
    pub(super) async fn act(
        &mut self,
        round: u32,
        decision: Decision,
    ) -> Result<Acted, StopStatus> {
        let asked = self.vote_asked(&decision);
        let vote = match asked {
            None => Vote::Skipped(decision),
            Some(asked) => Box::pin(self.vote(round, decision, asked)).await?,
        };
        let (decision, voted) = match vote {
            Vote::Skipped(decision) => (decision, None),
            Vote::Held(decision, voted) => (decision, Some(voted)),
            Vote::TimedOut(decision, result, took) => {
                return Ok(Acted {
                    decision,
                    result,
                    took,
                    redrawn: None,
                })
            }
        };
        let acted = act::act(&self.agent.toolbox, &decision.action);
        let (result, took) = Box::pin(self.bounded(acted)).await?;
        if let Some(voted) = voted {
            return Ok(Acted {
                decision,
                result,
                took: took + voted.tried,
                redrawn: Some(voted.redrawn),
            });
        }
        let redrawn = match self.redraw_asked(&decision, &result) {
            None => None,
            Some(rejected) => Box::pin(self.redraw(round, &decision, &result, rejected)).await?,
        };
        let Some((drawn, kept)) = redrawn else {
            return Ok(Acted {
                decision,
                result,
                took,
                redrawn: None,
            });
        };
        let redrawn = Some(Box::new(drawn));
        Ok(match kept {
            Some((kept, ran, ran_for)) => Acted {
                decision: kept,
                result: ran,
                took: took + ran_for,
                redrawn,
            },
            None => Acted {
                decision,
                result,
                took,
                redrawn,
            },
        })
    }

    /// Draws `ask.draws` other answers to round `round`'s conversation at
    /// once, each with its own seed, and keeps those that name one of
    /// `ask.among` and that `by` finds eligible in place of `decision`.
    /// `Err` when the clock or the caller ends the run.
    pub(super) async fn draw(
        &mut self,
        round: u32,
        decision: &Decision,
        by: &dyn steer::Steer,
        ask: &steer::Redraw,
    ) -> Result<Drawn, StopStatus> {
        let agent = self.agent;
        // The journal has not moved since this round's decision: this is
        // the conversation it was asked from (unless it was a re-ask's).
        let mut messages = self.conversation();
        if ask.reread {
            if let Some(last) = messages.last_mut() {
                last.content.push_str("\n\n");
                last.content.push_str(steer::REREAD);
                last.content.push_str(self.work());
            }
        }
        let schema = Arc::new(decide::decision_schema_among(
            &agent.toolbox,
            Some(&ask.among),
        ));
        let draws = (1..=ask.draws).map(|draw| {
            let how = Draw {
                temperature: ask.temperature,
                seed: seed(round, draw),
            };
            decide::decide_drawn(
                agent.llm.as_ref(),
                messages.clone(),
                &agent.limits,
                &schema,
                Some(how),
            )
        });
        let started = Instant::now();
        let answers = self.bounded(futures::future::join_all(draws)).await?;
        let llm_time = started.elapsed();
        let mut usage = Usage::default();
        // Which may run is settled before any of them runs.
        let cx = self.steer_context();
        let mut candidates = Vec::new();
        for (number, answer) in (1..).zip(answers) {
            let Ok(answer) = answer else { continue };
            usage += answer.usage;
            let Ok(candidate) = answer.decision else {
                continue;
            };
            if ask.among.contains(&candidate.action.name) && by.eligible(&cx, decision, &candidate)
            {
                candidates.push((number, candidate));
            }
        }
        self.usage += usage;
        Ok(Drawn {
            candidates,
            usage,
            llm_time,
        })
    }

    /// The steer on that rejects `result`, which `decision` returned, and
    /// the other answers it asks for; `None` when none does, and always
    /// when an approval policy is set (drawn calls would bypass it). Asked
    /// before [`Self::redraw`] so that a round with nothing to redraw
    /// builds no redraw future (the loop's usual round).
    pub(super) fn redraw_asked(
        &self,
        decision: &Decision,
        result: &ToolResult,
    ) -> Option<(&'static dyn steer::Steer, steer::Redraw)> {
        if self.agent.approvals.is_some() {
            return None;
        }
        steer::redraw(
            &self.agent.limits.steer,
            &self.steer_context(),
            decision,
            result,
        )
    }

    /// The other answers [`Self::redraw_asked`] asked for (`by` and `ask`)
    /// drawn and run in turn for round `round`, whose `decision` returned
    /// the rejected `result`; the first that succeeds is kept. `Err` when
    /// the clock or the caller ends the run.
    pub(super) async fn redraw(
        &mut self,
        round: u32,
        decision: &Decision,
        result: &ToolResult,
        (by, ask): (&'static dyn steer::Steer, steer::Redraw),
    ) -> Result<Option<(Redrawn, Option<Kept>)>, StopStatus> {
        let agent = self.agent;
        let drawn = Box::pin(self.draw(round, decision, by, &ask)).await?;
        let mut record = RedrawRecord::new(by.name(), ask.draws);
        let mut kept = None;
        // The drawn calls run so far, failed ones included.
        let mut running = Duration::ZERO;
        for (number, candidate) in drawn.candidates {
            record.ran += 1;
            let acted = act::act(&agent.toolbox, &candidate.action);
            let (ran, took) = Box::pin(self.bounded(acted)).await?;
            running += took;
            if ran.status == ToolStatus::Ok {
                record.kept = Some(number);
                record.replaced = Some(replaced(decision, result));
                kept = Some((candidate, ran, running));
                break;
            }
        }
        let redrawn = Redrawn {
            record,
            usage: drawn.usage,
            llm_time: drawn.llm_time,
        };
        Ok(Some((redrawn, kept)))
    }
}

/// The model's own call and its error, shortened, for the journal.
fn replaced(decision: &Decision, result: &ToolResult) -> String {
    let error = result.failure_line().unwrap_or("failed");
    format!(
        "{} {} → {}",
        decision.action.name,
        clip(&decision.action.args.to_string(), 300),
        clip(error, 200)
    )
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use serde_json::json;
    use tokio_util::sync::CancellationToken;

    use super::super::test_programs::Programs;
    use crate::agent::steer::{code_redraw, code_vote};
    use crate::agent::{Agent, StopStatus};
    use crate::journal::JournalEntry;
    use crate::limits::Limits;
    use crate::llm::scripted::ScriptedLlm;
    use crate::tools::Toolbox;

    fn program(code: &str) -> String {
        json!({"thought": code, "action": {"name": "run_code", "args": {"language": "python", "code": code}}}).to_string()
    }

    const FINISH: &str =
        r#"{"thought": "done", "action": {"name": "finish", "args": {"result": "4"}}}"#;

    /// A run whose first program fails, then a finish; the draws answer
    /// between them when the redraw is on.
    async fn run(
        replies: Vec<String>,
        steer_on: bool,
    ) -> (Vec<JournalEntry>, Vec<String>, Arc<ScriptedLlm>) {
        let ran = Arc::new(Mutex::new(Vec::new()));
        let mut toolbox = Toolbox::new();
        toolbox.register(Programs { ran: ran.clone() });
        let llm = Arc::new(ScriptedLlm::new(replies));
        let mut limits = Limits::default();
        limits.steer.set(code_redraw::NAME, steer_on);
        // The vote would try each program first (it has its own tests).
        limits.steer.set(code_vote::NAME, false);
        let rounds = Arc::new(Mutex::new(Vec::new()));
        let kept = rounds.clone();
        let agent = Agent::new(llm.clone(), Arc::new(toolbox))
            .with_limits(limits)
            .on_round(Arc::new(move |entry: &JournalEntry| {
                kept.lock().unwrap().push(entry.clone())
            }));
        let outcome = agent
            .run("Count the items.", &CancellationToken::new())
            .await;
        assert_eq!(outcome.status, StopStatus::Finished, "{outcome:?}");
        let rounds = rounds.lock().unwrap().clone();
        let ran = Programs::codes(&ran);
        (rounds, ran, llm)
    }

    #[tokio::test]
    async fn a_failed_program_is_replaced_by_the_first_drawn_one_that_runs() {
        let replies = vec![
            program("bad"),
            program("bad again"),
            program("good one"),
            program("good two"),
            FINISH.to_string(),
        ];
        let (rounds, ran, llm) = run(replies, true).await;
        // Draws run in order until one succeeds; the third never runs.
        assert_eq!(ran, ["bad", "bad again", "good one"]);
        let first = &rounds[0];
        assert_eq!(first.args["code"], "good one");
        assert_eq!(first.thought, "good one");
        assert!(!first.is_error(), "{first:?}");
        let record = first.redraw.as_deref().expect("a redraw record");
        assert_eq!(record.by, code_redraw::NAME);
        assert_eq!((record.drawn, record.ran, record.kept), (3, 2, Some(2)));
        assert!(
            record
                .replaced
                .as_deref()
                .unwrap()
                .contains("KeyError: 'item'"),
            "{record:?}"
        );
        // The draws were asked with their own seeds, at the redraw's
        // temperature, and may only run code; the next prompt shows the
        // program that ran, not the one that failed.
        let requests = llm.requests();
        assert_eq!(requests.len(), 5);
        let seeds: Vec<Option<u64>> = requests.iter().map(|r| r.seed).collect();
        assert_eq!(seeds, [None, Some(1001), Some(1002), Some(1003), None]);
        assert!(requests[1..4]
            .iter()
            .all(|r| r.temperature == code_redraw::TEMPERATURE));
        let narrowed = requests[1].schema.as_ref().unwrap().to_string();
        assert!(
            narrowed.contains("run_code") && !narrowed.contains("\"finish\""),
            "{narrowed}"
        );
        let last_prompt = &requests[4].messages.last().unwrap().content;
        assert!(
            last_prompt.contains("good one") && !last_prompt.contains("\"bad\""),
            "{last_prompt}"
        );
    }

    #[tokio::test]
    async fn when_no_draw_runs_the_models_own_failure_stands() {
        let replies = vec![
            program("bad"),
            program("bad 2"),
            "not a decision".to_string(),
            "still not one".to_string(),
            program("bad 3"),
            FINISH.to_string(),
        ];
        let (rounds, ran, _) = run(replies, true).await;
        assert_eq!(ran, ["bad", "bad 2", "bad 3"]);
        assert_eq!(rounds[0].args["code"], "bad");
        assert!(rounds[0].is_error());
        let record = rounds[0].redraw.as_deref().unwrap();
        assert_eq!((record.ran, record.kept), (2, None));
        assert!(record.replaced.is_none());
    }

    #[tokio::test]
    async fn switched_off_nothing_is_drawn() {
        let (rounds, ran, llm) = run(vec![program("bad"), FINISH.to_string()], false).await;
        assert_eq!(ran, ["bad"]);
        assert!(rounds[0].redraw.is_none());
        assert_eq!(llm.requests().len(), 2);
    }
}
