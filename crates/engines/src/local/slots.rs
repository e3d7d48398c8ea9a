//! Which sequence of the engine's llama.cpp context a request continues.
//!
//! The context keeps a few conversations alive at once, one per sequence,
//! each with the tokens its KV cache holds. A request goes to the sequence
//! sharing the longest prefix with its prompt and evaluates only the rest;
//! a prompt that continues none of them (a new conversation) takes the
//! least recently used sequence instead of clobbering a live one for a
//! short match. Nothing is copied: reuse is cutting a sequence back to the
//! shared prefix. Plain code over any token type, tested without a model.

use hermes_core::llm::prefix_cache::{common_prefix, MIN_REUSE};

/// The conversations held by the context's sequences.
pub(super) struct Slots<T> {
    list: Vec<Slot<T>>,
    clock: u64,
    reuse: bool,
}

struct Slot<T> {
    tokens: Vec<T>,
    used: u64,
}

/// Where a prompt goes: its sequence, and how many of its first tokens that
/// sequence already holds (always fewer than the prompt's length, so the
/// last prompt token is evaluated for its logits).
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Pick {
    pub seq: usize,
    pub reused: usize,
}

impl<T: PartialEq> Slots<T> {
    /// `count` empty sequences (at least one). With `reuse` off every
    /// request evaluates its whole prompt.
    pub fn new(count: usize, reuse: bool) -> Self {
        Self {
            list: (0..count.max(1))
                .map(|_| Slot {
                    tokens: Vec::new(),
                    used: 0,
                })
                .collect(),
            clock: 0,
            reuse,
        }
    }

    /// Chooses the sequence for `prompt` among those not `busy` (answering
    /// another request) and marks it used; `None` when every sequence is
    /// busy. The caller cuts that sequence back to `reused` tokens and
    /// records what it holds afterwards with [`Slots::hold`].
    pub fn pick(&mut self, prompt: &[T], busy: &[usize]) -> Option<Pick> {
        self.clock += 1;
        let shared = |slot: &Slot<T>| common_prefix(&slot.tokens, prompt);
        let free = || {
            self.list
                .iter()
                .enumerate()
                .filter(|(seq, _)| !busy.contains(seq))
        };
        let best = free()
            .map(|(seq, slot)| (seq, shared(slot), slot.used))
            .filter(|(_, shared, _)| self.reuse && *shared >= MIN_REUSE)
            .max_by_key(|(_, shared, used)| (*shared, *used));
        let seq = match best {
            Some((seq, _, _)) => seq,
            None => free()
                .min_by_key(|(_, slot)| slot.used)
                .map(|(seq, _)| seq)?,
        };
        let slot = &mut self.list[seq];
        slot.used = self.clock;
        let reused = if self.reuse {
            shared(slot).min(prompt.len().saturating_sub(1))
        } else {
            0
        };
        slot.tokens.truncate(reused);
        Some(Pick { seq, reused })
    }

    /// Records the tokens sequence `seq` holds now (after a request).
    pub fn hold(&mut self, seq: usize, tokens: Vec<T>) {
        if let Some(slot) = self.list.get_mut(seq) {
            slot.tokens = tokens;
        }
    }

    /// Forgets every sequence's tokens (after the context was cleared).
    pub fn clear(&mut self) {
        for slot in &mut self.list {
            slot.tokens.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(prefix: u32, len: usize) -> Vec<u32> {
        (0..len as u32).map(|i| prefix * 10_000 + i).collect()
    }

    fn extended(base: &[u32], more: &[u32]) -> Vec<u32> {
        base.iter().chain(more).copied().collect()
    }

    #[test]
    fn a_conversation_continues_on_its_own_sequence() {
        let mut slots = Slots::new(2, true);
        let first = tokens(1, 100);
        let pick = slots.pick(&first, &[]).unwrap();
        assert_eq!(pick.reused, 0);
        slots.hold(pick.seq, extended(&first, &tokens(2, 20)));
        // Round 2 shares round 1's prompt but not its reply's tail.
        let second = extended(&first, &tokens(3, 50));
        assert_eq!(
            slots.pick(&second, &[]).unwrap(),
            Pick {
                seq: pick.seq,
                reused: 100
            }
        );
    }

    #[test]
    fn a_new_conversation_takes_the_least_recently_used_sequence() {
        let mut slots = Slots::new(2, true);
        let a = tokens(1, 100);
        let pa = slots.pick(&a, &[]).unwrap();
        slots.hold(pa.seq, a.clone());
        let b = tokens(2, 100);
        let pb = slots.pick(&b, &[]).unwrap();
        assert_ne!(pa.seq, pb.seq, "b must not clobber a");
        slots.hold(pb.seq, b.clone());
        // Both continue where they were.
        assert_eq!(slots.pick(&extended(&a, &[7]), &[]).unwrap().seq, pa.seq);
        assert_eq!(slots.pick(&extended(&b, &[7]), &[]).unwrap().seq, pb.seq);
        // A third evicts the least recently used (a, picked before b).
        let pc = slots.pick(&tokens(3, 10), &[]).unwrap();
        assert_eq!(
            pc,
            Pick {
                seq: pa.seq,
                reused: 0
            }
        );
    }

    #[test]
    fn a_short_match_does_not_claim_a_live_sequence_but_is_still_reused() {
        let mut slots = Slots::new(2, true);
        let header = tokens(9, MIN_REUSE - 1);
        let a = extended(&header, &tokens(1, 100));
        let pa = slots.pick(&a, &[]).unwrap();
        slots.hold(pa.seq, a);
        // Same short header, different conversation: the empty sequence.
        let b = extended(&header, &tokens(2, 100));
        let pb = slots.pick(&b, &[]).unwrap();
        assert_ne!(pb.seq, pa.seq);
        assert_eq!(pb.reused, 0);
        slots.hold(pb.seq, b.clone());
        // With both taken, a third goes to the older and reuses the header
        // it happens to share: reuse is free once the sequence is chosen.
        let c = extended(&header, &tokens(3, 100));
        assert_eq!(
            slots.pick(&c, &[]).unwrap(),
            Pick {
                seq: pa.seq,
                reused: MIN_REUSE - 1
            }
        );
    }

    #[test]
    fn the_last_prompt_token_is_always_evaluated() {
        let mut slots = Slots::new(1, true);
        let a = tokens(1, 50);
        let seq = slots.pick(&a, &[]).unwrap().seq;
        slots.hold(seq, a.clone());
        assert_eq!(slots.pick(&a, &[]).unwrap().reused, 49);
    }

    #[test]
    fn reuse_off_evaluates_everything() {
        let mut slots = Slots::new(1, false);
        let a = tokens(1, 50);
        let seq = slots.pick(&a, &[]).unwrap().seq;
        slots.hold(seq, a.clone());
        assert_eq!(
            slots.pick(&extended(&a, &[1]), &[]).unwrap(),
            Pick { seq: 0, reused: 0 }
        );
        // Asked for none, there is still one.
        assert_eq!(
            Slots::new(0, true).pick(&a, &[]).unwrap(),
            Pick { seq: 0, reused: 0 }
        );
    }

    #[test]
    fn a_busy_sequence_is_never_picked() {
        let mut slots = Slots::new(2, true);
        let a = tokens(1, 100);
        let pa = slots.pick(&a, &[]).unwrap();
        slots.hold(pa.seq, a.clone());
        // A continues A, but A's sequence is answering another request.
        let other = slots.pick(&extended(&a, &[7]), &[pa.seq]).unwrap();
        assert_ne!(other.seq, pa.seq);
        assert_eq!(other.reused, 0);
        assert!(slots.pick(&a, &[0, 1]).is_none(), "all busy");
    }

    #[test]
    fn cleared_sequences_hold_nothing() {
        let mut slots = Slots::new(1, true);
        let a = tokens(1, 50);
        let seq = slots.pick(&a, &[]).unwrap().seq;
        slots.hold(seq, a.clone());
        slots.clear();
        assert_eq!(slots.pick(&a, &[]).unwrap().reused, 0);
    }
}
