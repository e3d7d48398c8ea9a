//! The model a benchmark talks to: in-process, with a fixed latency, and a
//! script that reads files for a set number of rounds and then finishes.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::json;

use hermes_core::llm::scripted::scripted_response;
use hermes_core::llm::{Author, ChatRequest, ChatResponse, Llm, LlmError};

/// How many different files the script reads in turn: more than the
/// default repetition window (5 rounds), so no call repeats one of the
/// window's and neither repeat guidance nor the repetition guard fires
/// (with 4 files, round 5 repeated round 1 and repeat guidance, on by
/// default since session 30, ended every loop of more than 6 rounds).
pub const FILES: u32 = 8;

/// A model that waits `latency`, then asks to read `f<k>.txt` (k cycling
/// over [`FILES`]) until round `rounds`, where it finishes. It records how
/// long each of its calls took, so a benchmark can take the model's time
/// out of a round's.
///
/// Call k is round k: the model counts its calls instead of reading the
/// round from the prompt, so what it costs is the same whatever the prompt
/// (the loop's prompt is longer than the bare calls' one-line request, and
/// a search of it was charged to the loop: 2.3k of its 38.1k own
/// instructions a round, BENCHMARKS.md session 59). One model per loop; the loop calls it once a round.
pub struct LatencyModel {
    latency: Duration,
    rounds: u32,
    calls: AtomicU32,
    spent: Mutex<Vec<Duration>>,
}

impl LatencyModel {
    /// A model answering after `latency`, finishing in round `rounds`.
    pub fn new(latency: Duration, rounds: u32) -> Self {
        Self {
            latency,
            rounds: rounds.max(1),
            calls: AtomicU32::new(0),
            spent: Mutex::new(Vec::new()),
        }
    }

    /// The time each call took, in call order.
    pub fn spent(&self) -> Vec<Duration> {
        self.spent.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

/// The round a request asks for: the last `Round N of M` in its last user
/// turn, as the loop writes it (1 when there is none).
pub fn asked_round(request: &ChatRequest) -> u32 {
    request
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Author::User)
        .map_or(1, |last| round_in(&last.content))
}

/// The last `Round N of` in `text` (a user turn as the loop writes it); 1
/// when there is none.
pub fn round_in(text: &str) -> u32 {
    text.rsplit("Round ")
        .find_map(|tail| {
            let mut words = tail.split(' ');
            let round = words.next()?.parse().ok()?;
            (words.next() == Some("of")).then_some(round)
        })
        .unwrap_or(1)
}

/// The script's decision for `round` of a task that finishes in round
/// `rounds`, as the JSON text the loop parses: `read_file` on `f<k>.txt`
/// (k = round mod [`FILES`]) before it, `finish` from it on.
pub fn decision(round: u32, rounds: u32) -> String {
    let decision = if round >= rounds {
        json!({"thought": "done", "action": {"name": "finish", "args": {"result": "read every file"}}})
    } else {
        json!({"thought": "read the next file", "action": {"name": "read_file", "args": {"path": file_for(round)}}})
    };
    decision.to_string()
}

/// The file the script reads in `round`.
pub fn file_for(round: u32) -> String {
    format!("f{}.txt", round % FILES)
}

#[async_trait]
impl Llm for LatencyModel {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let started = Instant::now();
        if !self.latency.is_zero() {
            tokio::time::sleep(self.latency).await;
        }
        let round = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        let response = scripted_response(request, decision(round, self.rounds));
        if let Ok(mut spent) = self.spent.lock() {
            spent.push(started.elapsed());
        }
        Ok(response)
    }

    fn model(&self) -> &str {
        "bench"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hermes_core::llm::ChatMessage;

    fn request(last_user: &str) -> ChatRequest {
        ChatRequest {
            messages: vec![ChatMessage::system("s"), ChatMessage::user(last_user)],
            temperature: 0.0,
            max_tokens: 10,
            json: true,
            schema: None,
            seed: None,
        }
    }

    #[test]
    fn the_round_comes_from_the_last_user_turn() {
        assert_eq!(asked_round(&request("Goal: g\n\nRound 1 of 20. Reply.")), 1);
        assert_eq!(
            asked_round(&request(
                "Observation (round 6): x\n\nRound 7 of 20. Round 6 (read_file) succeeded"
            )),
            7,
            "`Round N of`, not the `Round N (tool) succeeded` after it"
        );
        assert_eq!(asked_round(&request("no count here")), 1);
    }

    #[tokio::test]
    async fn it_reads_in_turn_then_finishes_and_times_itself() {
        let model = LatencyModel::new(Duration::ZERO, 3);
        // The prompt's round is not read: call k is round k.
        let first = model.chat(&request("Round 3 of 3.")).await.unwrap();
        assert!(first.content.contains("f1.txt"), "{}", first.content);
        let second = model.chat(&request("Round 3 of 3.")).await.unwrap();
        assert!(second.content.contains("f2.txt"), "{}", second.content);
        let last = model.chat(&request("Round 1 of 3.")).await.unwrap();
        assert!(last.content.contains("finish"), "{}", last.content);
        assert_eq!(model.spent().len(), 3);
    }
}
