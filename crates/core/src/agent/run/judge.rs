//! **A contested vote, judged**: when the answers of a vote (`vote.rs`)
//! disagree and a steer on wants the model to choose
//! ([`Steer::judge`](crate::agent::steer::Steer::judge)), the round's
//! conversation is extended with that steer's question and the model's
//! reply, decoded under the steer's schema at temperature 0, names the
//! contender that acts.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::Run;
use crate::agent::guard::StopStatus;
use crate::agent::steer;
use crate::decision::Decision;
use crate::llm::{traced_chat, ChatRequest, Usage};

/// Most tokens of the judge's reply (a short reason and a letter).
pub(super) const JUDGE_MAX_TOKENS: u32 = 400;

/// What the model chose among a vote's contenders.
pub(super) struct Judged {
    /// The steer that asked.
    pub(super) by: &'static str,
    /// The contender chosen (0-based, in the order they were shown), or
    /// `None` when the reply could not be read or the call failed.
    pub(super) chosen: Option<usize>,
    /// The reply's reason, or why there was no choice.
    pub(super) reason: String,
    /// Tokens of the call.
    pub(super) usage: Usage,
    /// Time spent waiting on the model.
    pub(super) llm_time: Duration,
}

impl Run<'_> {
    /// The model's choice among `contenders` (each an answer and its
    /// outcome), when a steer on asks for one (`Ok(None)` when none
    /// does). `Err` when the clock or the caller ends the run.
    pub(super) async fn judge(
        &mut self,
        contenders: &[(&Decision, &str)],
    ) -> Result<Option<Judged>, StopStatus> {
        let agent = self.agent;
        let asked = steer::judge(&agent.limits.steer, &self.steer_context(), contenders);
        let Some((by, judging)) = asked else {
            return Ok(None);
        };
        let mut messages = self.conversation();
        if let Some(last) = messages.last_mut() {
            last.content.push_str("\n\n");
            last.content.push_str(&judging.question);
        }
        let request = ChatRequest {
            messages,
            temperature: 0.0,
            max_tokens: JUDGE_MAX_TOKENS,
            json: true,
            schema: Some(Arc::new(judging.schema.clone())),
            seed: None,
        };
        let started = Instant::now();
        let reply = self
            .bounded(traced_chat(agent.llm.as_ref(), &request))
            .await?;
        let llm_time = started.elapsed();
        let judged = match reply {
            Ok(reply) => {
                self.usage += reply.usage;
                let choice = judging.choice(&reply.content);
                Judged {
                    by: by.name(),
                    chosen: choice.as_ref().map(|(index, _)| *index),
                    reason: choice.map_or_else(
                        || {
                            format!(
                                "unreadable reply: {}",
                                crate::text::clip(&reply.content, 200)
                            )
                        },
                        |(_, reason)| reason,
                    ),
                    usage: reply.usage,
                    llm_time,
                }
            }
            Err(e) => {
                tracing::warn!("the vote's judge was not asked: {e}");
                Judged {
                    by: by.name(),
                    chosen: None,
                    reason: format!("the call failed: {e}"),
                    usage: Usage::default(),
                    llm_time,
                }
            }
        };
        Ok(Some(judged))
    }
}
