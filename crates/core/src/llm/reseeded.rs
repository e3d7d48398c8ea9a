//! A model whose sampling seeds are moved by a fixed salt: how
//! `hermes eval --repeat K` makes the K runs of a task K samples of it.
//!
//! The in-process engines sample every request with one fixed seed unless
//! the request names its own (a redraw's draws do), so without this the
//! repeats of a task were the same run again: the same prompt, seed and
//! answer, round after round, apart from the last bits that batching with
//! other runs moves. pass^k then measured that noise, not the model's spread.
//! The first repetition keeps the seeds as they are, so K=1 figures stay
//! comparable with the ones before.

use std::sync::Arc;

use async_trait::async_trait;

use super::{ChatRequest, ChatResponse, Llm, LlmError};

/// `inner` with every request's seed moved by `salt` (see the module
/// docs): a request with a seed gets `seed ^ salt`, one without gets
/// `salt` itself.
pub struct Reseeded {
    inner: Arc<dyn Llm>,
    salt: u64,
}

impl Reseeded {
    /// `inner` for repetition `rep` (1-based) of a run: `inner` itself for
    /// the first, a model with a salt of its own for each later one.
    pub fn for_repetition(inner: Arc<dyn Llm>, rep: u32) -> Arc<dyn Llm> {
        match salt(rep) {
            0 => inner,
            salt => Arc::new(Self { inner, salt }),
        }
    }
}

/// The salt of repetition `rep`: 0 for the first, otherwise `rep` spread
/// over all 64 bits (Fibonacci hashing), so that no two repetitions and no
/// small seed a steer draws with share a seed.
pub fn salt(rep: u32) -> u64 {
    if rep <= 1 {
        return 0;
    }
    u64::from(rep).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

#[async_trait]
impl Llm for Reseeded {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let mut request = request.clone();
        request.seed = Some(request.seed.map_or(self.salt, |seed| seed ^ self.salt));
        self.inner.chat(&request).await
    }

    fn model(&self) -> &str {
        self.inner.model()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{ChatMessage, ScriptedLlm};

    fn request(seed: Option<u64>) -> ChatRequest {
        ChatRequest {
            messages: vec![ChatMessage::user("hi")],
            temperature: 0.3,
            max_tokens: 8,
            json: false,
            schema: None,
            seed,
        }
    }

    #[tokio::test]
    async fn the_first_repetition_keeps_its_seeds_and_the_others_move_them() {
        let scripted = Arc::new(ScriptedLlm::new(["a", "b", "c", "d", "e"]));
        let inner: Arc<dyn Llm> = scripted.clone();
        let first = Reseeded::for_repetition(Arc::clone(&inner), 1);
        let second = Reseeded::for_repetition(Arc::clone(&inner), 2);
        let third = Reseeded::for_repetition(inner, 3);
        first.chat(&request(None)).await.unwrap();
        first.chat(&request(Some(7))).await.unwrap();
        second.chat(&request(None)).await.unwrap();
        second.chat(&request(Some(7))).await.unwrap();
        third.chat(&request(None)).await.unwrap();
        let seeds: Vec<Option<u64>> = scripted.requests().iter().map(|r| r.seed).collect();
        assert_eq!(seeds[0], None);
        assert_eq!(seeds[1], Some(7));
        assert_eq!(seeds[2], Some(salt(2)));
        assert_eq!(seeds[3], Some(7 ^ salt(2)));
        assert_eq!(seeds[4], Some(salt(3)));
        assert_ne!(seeds[2], seeds[4]);
        assert_eq!(second.model(), "scripted");
    }
}
