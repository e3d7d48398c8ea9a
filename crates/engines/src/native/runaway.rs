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

/// The longest line of a program's text, in characters, before it is
/// looked at as prose.
pub(super) const PROSE_LINE: usize = 400;

/// The fewest words on such a line for it to count as prose.
pub(super) const PROSE_WORDS: usize = 50;

/// Watches the `code` argument of a decision for prose: one line of
/// words with no line break, which a small model sometimes writes into
/// its program instead of code ("We iterate over the lines and find the
/// line that starts with…") and goes on with until its token budget, with
/// no cycle for [`repeats_itself`] to catch (session 39: 1,024 tokens, at
/// four runs sharing the engine most of a run's 300 s, twice). A program
/// line of [`PROSE_LINE`] characters that is at least [`PROSE_WORDS`]
/// words, four in five of them plain words, is not code; the answer is
/// ended there like a looping one.
#[derive(Debug, Default)]
pub(super) struct ProseWatch {
    /// The answer's text so far (its generated tokens, decoded).
    text: String,
    /// Tokens of the answer already decoded into `text`.
    pub(super) seen: usize,
    /// Where the `code` argument's text begins in `text`, once it has.
    code_start: Option<usize>,
    /// Where the current line of the program begins in `text`.
    line_start: usize,
}

impl ProseWatch {
    /// Adds the answer's next decoded text; whether the program's current
    /// line is prose.
    pub(super) fn push(&mut self, piece: &str) -> bool {
        // Look back a few bytes so a key or a `\n` split over two tokens
        // is still found.
        let from = floor_char_boundary(&self.text, self.text.len().saturating_sub(8));
        self.text.push_str(piece);
        if self.code_start.is_none() {
            let found = self.text[from..].find("\"code\"").map(|i| from + i + 6);
            self.code_start = found;
            self.line_start = found.unwrap_or(0);
            return false;
        }
        let from = from.max(self.line_start);
        if let Some(i) = self.text[from..].rfind("\\n") {
            self.line_start = from + i + 2;
        }
        let line = &self.text[self.line_start..];
        line.len() >= PROSE_LINE && is_prose(line)
    }
}

/// The largest char boundary of `text` at or below `index`.
fn floor_char_boundary(text: &str, mut index: usize) -> usize {
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

/// Whether `line` reads as sentences: at least [`PROSE_WORDS`] words, four
/// in five of them letters only (a closing `.`, `,`, `;` or `:` allowed).
fn is_prose(line: &str) -> bool {
    let words: Vec<&str> = line.split_whitespace().collect();
    if words.len() < PROSE_WORDS {
        return false;
    }
    let plain = words
        .iter()
        .filter(|w| {
            let w = w.trim_end_matches(['.', ',', ';', ':']);
            !w.is_empty() && w.chars().all(char::is_alphabetic)
        })
        .count();
    plain * 5 >= words.len() * 4
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

    /// `text` fed to a watch a few characters at a time, as tokens come;
    /// whether the watch called it prose at some point.
    fn watched(text: &str) -> bool {
        let mut watch = ProseWatch::default();
        let chars: Vec<char> = text.chars().collect();
        chars
            .chunks(3)
            .any(|piece| watch.push(&piece.iter().collect::<String>()))
    }

    #[test]
    fn prose_written_as_a_program_is_caught() {
        let prose = "We iterate over the lines and find the line that starts with the logging section, then we replace the level with the new level and write the lines back to the file so that the rest stays as it was before and nothing else changes in the file at all, which is what the goal asks for here and now";
        let answer = format!(
            r#"{{"thought": "edit it", "action": {{"name": "run_code", "args": {{"language": "python", "code": "lines = open('a.ini').read()\n{prose} {prose}"#
        );
        assert!(watched(&answer));
    }

    #[test]
    fn code_long_lines_of_data_and_prose_outside_the_program_are_left_alone() {
        // A thought of words, before any program.
        let thought = "word ".repeat(200);
        assert!(!watched(&format!(
            r#"{{"thought": "{thought}", "action": "#
        )));
        // A long line of numbers inside the program.
        let numbers: Vec<String> = (0..300).map(|i| i.to_string()).collect();
        let code = format!(
            r#"{{"thought": "sum", "action": {{"name": "run_code", "args": {{"code": "data = [{}]\nprint(sum(data))"#,
            numbers.join(", ")
        );
        assert!(!watched(&code));
        // Many short lines of a real program.
        let program = r"for line in open('a.txt'):\n    print(line.strip())\n".repeat(40);
        assert!(!watched(&format!(
            r#"{{"action": {{"args": {{"code": "{program}"#
        )));
        // A paragraph written to a file is not a program.
        let content = "word ".repeat(200);
        assert!(!watched(&format!(
            r#"{{"action": {{"args": {{"path": "a.md", "content": "{content}"#
        )));
    }
}
