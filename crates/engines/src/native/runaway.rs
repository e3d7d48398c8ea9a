//! A reply caught in a loop: the same few tokens over and over.
//!
//! A small model sometimes falls into a cycle inside a string it is
//! writing (`"123456789012345678901234…"`, one line of a file again and
//! again) and would go on to its token budget: 1,024 tokens at a few
//! tokens a second is most of a run's wall clock, spent on text nobody
//! can use. The engine ends such an answer as soon as the cycle has
//! covered [`LOOP_SPAN`] tokens; it is returned cut (`finish_reason`
//! `length`), and the loop asks again (see `hermes_core::agent::decide`).

/// The fewest tokens a cycle must cover before the answer counts as
/// looping: long enough that text which legitimately repeats a short
/// piece a few times (a separator line, a list of equal values) is left
/// alone.
pub(super) const LOOP_SPAN: usize = 96;

/// The longest cycle looked for, in tokens; a cycle must also repeat at
/// least [`LOOP_REPEATS`] times, so one of this length is caught after
/// `4 × 32 = 128` tokens.
pub(super) const LOOP_PERIOD: usize = 32;

/// How many times a cycle must repeat at the least.
pub(super) const LOOP_REPEATS: usize = 4;

/// Whether the end of `output` is one block of at most [`LOOP_PERIOD`]
/// tokens repeated over its last [`LOOP_SPAN`] tokens (and at least
/// [`LOOP_REPEATS`] times). Checked after every token: each period stops
/// at its first mismatch, so an answer that is not looping costs about
/// [`LOOP_PERIOD`] comparisons.
pub(super) fn repeats_itself<T: PartialEq>(output: &[T]) -> bool {
    let n = output.len();
    (1..=LOOP_PERIOD).any(|period| {
        let span = LOOP_SPAN.max(LOOP_REPEATS * period);
        span <= n && (n - span + period..n).all(|i| output[i] == output[i - period])
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `prefix` then `cycle` until the whole is `len` long.
    fn looping(prefix: &[u32], cycle: &[u32], len: usize) -> Vec<u32> {
        let mut out = prefix.to_vec();
        out.extend(cycle.iter().cycle().take(len - prefix.len()));
        out
    }

    #[test]
    fn a_cycle_of_digits_is_caught_once_it_covers_the_span() {
        let prefix: Vec<u32> = (100..140).collect();
        let digits: Vec<u32> = (1..=10).collect();
        let caught = (prefix.len()..400)
            .find(|&len| repeats_itself(&looping(&prefix, &digits, len)))
            .expect("caught");
        // Exactly when the cycle covers `LOOP_SPAN` tokens.
        assert_eq!(caught, prefix.len() + LOOP_SPAN);
    }

    #[test]
    fn a_long_cycle_must_repeat_four_times() {
        let cycle: Vec<u32> = (0..30).collect();
        assert!(!repeats_itself(&looping(&[], &cycle, 30 * 4 - 1)));
        assert!(repeats_itself(&looping(&[], &cycle, 30 * 4)));
    }

    #[test]
    fn text_that_does_not_cycle_is_left_alone() {
        // A varied answer, a short repeat (a separator), a cycle longer
        // than the longest looked for.
        let varied: Vec<u32> = (0..1000).map(|i| (i * 7919 + 13) % 151_000).collect();
        assert!(!repeats_itself(&varied));
        let mut separator: Vec<u32> = (0..200).collect();
        separator.extend([5; 40]);
        assert!(!repeats_itself(&separator));
        let long: Vec<u32> = (0..40).cycle().take(400).collect();
        assert!(!repeats_itself(&long));
        assert!(!repeats_itself::<u32>(&[]));
    }
}
