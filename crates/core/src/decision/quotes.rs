//! Finds the double quotes a model left unescaped inside a string, as in code
//! content: `"content": "print("hi")"`, and escapes them.
//!
//! Runs only on text that strict parsing refused. A quote inside a string
//! that is followed by something no JSON lets follow a string there (a letter
//! after a value, anything but `:` after a key) is content, not the string's
//! end. A quote that *could* end the string (followed by `,` and a key, `}`,
//! `]`, `:` after a key, or the end) is ambiguous: `"content": "{"a": "b",
//! "c": 1}"` has two such quotes that are content. Those are settled by
//! reading the whole text both ways, keeping only readings in which the text
//! is well-formed from the first brace to the last, and among them the one
//! whose strings have the most balanced brackets, then the fewest repaired
//! quotes. Only when no reading is well-formed to the end is the first,
//! most likely, reading kept if it is well-formed up to a cut-off end (a
//! reply cut by the token limit) or up to prose after the value. When
//! nothing fits, or the search runs out of its budget before it can tell,
//! the text is [`Quotes::Ambiguous`]: a parse error beats arguments
//! silently cut at the wrong quote.
//!
//! Nothing is searched unless the plain reading (every quote that can end
//! its string ends it) meets a quote that cannot, or fails at a quote: text
//! that is broken in other ways is left to the repair crate as before.
//!
//! The reading is lenient in the ways the repair crate is (single-quoted
//! strings, bare keys and words, comments, trailing and missing commas), so
//! that those shapes are not mistaken for misplaced quotes.

use super::MAX_DEPTH;

/// What the scan concluded about the double quotes in a text.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Quotes {
    /// No quote is out of place; the text needs no quote repair.
    Fine,
    /// The text with its content quotes escaped (and cut after the value
    /// when prose followed it).
    Repaired(String),
    /// Quotes are out of place but no reading settles which ones.
    Ambiguous,
}

/// Escapes the quotes in `text` that are string content rather than string
/// ends. See the module documentation for how they are told apart.
pub(super) fn repair(text: &str) -> Quotes {
    let bytes = text.as_bytes();
    let budget = 32 * bytes.len() + 20_000;
    // Evidence first: read every quote that can end its string as its end.
    // Only when that reading meets a quote that cannot is anything wrong.
    // A plain reading that fails at a quote (`"x = "a: b""`, where `"a:`
    // looked like the next key) is evidence too.
    let mut plain = Scanner::new(bytes, budget, false);
    let (outcome, at) = plain.run(Cursor::start());
    let failed_at_quote = outcome == Outcome::Fail && matches!(bytes.get(at), Some(b'"' | b'\''));
    if !plain.evidence && !failed_at_quote {
        return Quotes::Fine;
    }
    let mut search = Scanner::new(bytes, budget, true);
    let mut cursor = Cursor::start();
    let mut fallback: Option<(Vec<usize>, usize)> = None;
    let mut first = true;
    let mut exhausted = false;
    loop {
        let (outcome, end) = search.run(cursor);
        match outcome {
            Outcome::Budget => {
                exhausted = true;
                break;
            }
            // A reading that ends early (prose after the value) or runs out
            // of text (a cut-off reply) is kept only from the first, most
            // likely, path: any text reads as a cut-off string otherwise.
            Outcome::Trailing | Outcome::Eof if first => {
                fallback = Some((search.last_content.clone(), end));
            }
            _ => {}
        }
        first = false;
        match search.backtrack() {
            Some(next) => cursor = next,
            None => break,
        }
    }
    let chosen = match (search.best, exhausted) {
        (Some(best), false) => Some((best.content, bytes.len())),
        // Out of budget: only a fully balanced reading is trusted.
        (Some(best), true) if best.imbalance == 0 => Some((best.content, bytes.len())),
        (None, false) => fallback,
        _ => None,
    };
    match chosen {
        // The reading needs no quote repaired: whatever is wrong is not ours.
        Some((content, _)) if content.is_empty() => Quotes::Fine,
        Some((content, end)) => Quotes::Repaired(escape(text, &content, end)),
        None => Quotes::Ambiguous,
    }
}

/// `text[..end]` with a backslash before each byte offset in `quotes`.
fn escape(text: &str, quotes: &[usize], end: usize) -> String {
    let mut quotes = quotes.to_vec();
    quotes.sort_unstable();
    let mut out = String::with_capacity(end + quotes.len());
    let mut from = 0;
    for &q in quotes.iter().filter(|&&q| q < end) {
        out.push_str(&text[from..q]);
        out.push('\\');
        from = q;
    }
    out.push_str(&text[from..end]);
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Frame {
    Object,
    Array,
}

/// What the reading expects next outside strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    Value,
    /// A key, or `}` (an empty object or a trailing comma).
    Key,
    Colon,
    /// `,` or the container's end, after a value.
    After,
    /// The root value is complete.
    Done,
}

/// A double-quoted string being read.
#[derive(Debug, Clone, Copy)]
struct Str {
    key: bool,
    /// Brackets opened minus brackets closed in the content so far.
    balance: i64,
}

/// One state of a reading.
#[derive(Debug, Clone)]
struct Cursor {
    pos: usize,
    frames: Vec<Frame>,
    expect: Expect,
    string: Option<Str>,
    /// Byte offsets of the quotes read as content.
    content: Vec<usize>,
    /// Sum over closed strings of how unbalanced their brackets are.
    imbalance: u64,
    /// The byte after the root value, once it is complete.
    root_end: usize,
}

impl Cursor {
    fn start() -> Self {
        Cursor {
            pos: 0,
            frames: Vec::new(),
            expect: Expect::Value,
            string: None,
            content: Vec::new(),
            imbalance: 0,
            root_end: 0,
        }
    }
}

/// How a reading ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// The text is one well-formed value.
    Complete,
    /// A well-formed value followed by other text.
    Trailing,
    /// The text ran out inside the value.
    Eof,
    /// The text cannot be read this way (or cannot beat the best reading).
    Fail,
    /// The search budget is spent.
    Budget,
}

/// The decision to take at an ambiguous quote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Choice {
    Close,
    Content,
}

/// A best-first depth-first search over the readings of the quotes.
struct Scanner<'a> {
    b: &'a [u8],
    steps: usize,
    budget: usize,
    /// Whether ambiguous quotes are choice points (else they always close).
    explore: bool,
    /// Saved states at ambiguous quotes, with the alternative not yet taken.
    choices: Vec<(Cursor, usize, Choice)>,
    /// Whether a value string held a quote that cannot end it.
    evidence: bool,
    /// The best complete reading so far.
    best: Option<Cursor>,
    /// The content quotes of the reading that just ended.
    last_content: Vec<usize>,
}

impl<'a> Scanner<'a> {
    fn new(b: &'a [u8], budget: usize, explore: bool) -> Self {
        Scanner {
            b,
            steps: 0,
            budget,
            explore,
            choices: Vec::new(),
            evidence: false,
            best: None,
            last_content: Vec::new(),
        }
    }

    /// Resumes the latest choice point with its other alternative.
    fn backtrack(&mut self) -> Option<Cursor> {
        let (mut c, quote, choice) = self.choices.pop()?;
        self.decide(&mut c, quote, choice);
        Some(c)
    }

    /// Whether a reading at this cost can no longer beat the best one.
    fn pruned(&self, c: &Cursor) -> bool {
        self.best.as_ref().is_some_and(|best| {
            c.imbalance > best.imbalance
                || (c.imbalance == best.imbalance && c.content.len() >= best.content.len())
        })
    }

    /// Reads from `c` until the reading ends. Returns how, and where: the
    /// end of the value for [`Outcome::Trailing`], the offending byte for
    /// [`Outcome::Fail`] (the text's length when the reading was pruned),
    /// else the text's length.
    fn run(&mut self, mut c: Cursor) -> (Outcome, usize) {
        let len = self.b.len();
        loop {
            self.steps += 1;
            if self.steps > self.budget {
                return (Outcome::Budget, len);
            }
            if self.pruned(&c) {
                return (Outcome::Fail, len);
            }
            if let Some(s) = c.string {
                let Some(quote) = self.next_quote(&mut c) else {
                    self.last_content = c.content;
                    return (Outcome::Eof, len);
                };
                if !self.could_close(&c, s, quote) {
                    if !s.key && !self.explore {
                        self.evidence = true;
                    }
                    self.decide(&mut c, quote, Choice::Content);
                    continue;
                }
                // A key ends at the first quote that can end it: keys with
                // quotes in them are not a shape models write.
                if s.key || !self.explore {
                    self.decide(&mut c, quote, Choice::Close);
                    continue;
                }
                // Content still inside an open bracket (`{"a": "b", ...`)
                // most likely goes on.
                let (first, second) = if s.balance > 0 {
                    (Choice::Content, Choice::Close)
                } else {
                    (Choice::Close, Choice::Content)
                };
                self.choices.push((c.clone(), quote, second));
                self.decide(&mut c, quote, first);
                continue;
            }
            let i = self.skip_ws(c.pos);
            if c.expect == Expect::Done {
                self.last_content = c.content.clone();
                if i >= len {
                    return (self.complete(c), len);
                }
                return (Outcome::Trailing, c.root_end);
            }
            if i >= len {
                self.last_content = c.content;
                return (Outcome::Eof, len);
            }
            let ch = self.b[i];
            let top = c.frames.last().copied();
            match (c.expect, ch) {
                (Expect::Value, b'{') => {
                    if c.frames.len() >= MAX_DEPTH {
                        return (Outcome::Fail, i);
                    }
                    c.frames.push(Frame::Object);
                    c.expect = Expect::Key;
                    c.pos = i + 1;
                }
                (Expect::Value, b'[') => {
                    if c.frames.len() >= MAX_DEPTH {
                        return (Outcome::Fail, i);
                    }
                    c.frames.push(Frame::Array);
                    c.expect = Expect::Value;
                    c.pos = i + 1;
                }
                (Expect::Value, b']') | (Expect::After, b']') if top == Some(Frame::Array) => {
                    pop(&mut c, i + 1);
                }
                (Expect::Key, b'}') | (Expect::After, b'}') if top == Some(Frame::Object) => {
                    pop(&mut c, i + 1);
                }
                (Expect::Value | Expect::Key, b'"') => {
                    c.string = Some(Str {
                        key: c.expect == Expect::Key,
                        balance: 0,
                    });
                    c.pos = i + 1;
                }
                (Expect::Value | Expect::Key, b'\'') => {
                    let Some(end) = self.single_quoted_end(i) else {
                        self.last_content = c.content;
                        return (Outcome::Eof, len);
                    };
                    // As in `json::prepare`: a single-quoted string ends
                    // before a delimiter, else the quote is stray.
                    let j = self.skip_ws(end);
                    if !matches!(self.b.get(j), None | Some(b',' | b'}' | b']' | b':')) {
                        return (Outcome::Fail, i);
                    }
                    c.pos = end;
                    after_token(&mut c);
                }
                (Expect::Value | Expect::Key, b'{' | b'[' | b']' | b'}' | b',' | b':') => {
                    return (Outcome::Fail, i);
                }
                (Expect::Value | Expect::Key, _) => {
                    c.pos = self.bare_end(i);
                    after_token(&mut c);
                }
                (Expect::Colon, b':') => {
                    c.expect = Expect::Value;
                    c.pos = i + 1;
                }
                (Expect::After, b',') if top.is_some() => {
                    c.expect = match top {
                        Some(Frame::Object) => Expect::Key,
                        _ => Expect::Value,
                    };
                    c.pos = i + 1;
                }
                // A missing comma before the next key.
                (Expect::After, _) if top == Some(Frame::Object) && self.member_start(i) => {
                    c.expect = Expect::Key;
                    c.pos = i;
                }
                _ => return (Outcome::Fail, i),
            }
        }
    }

    /// Records a complete reading if it beats the best one.
    fn complete(&mut self, c: Cursor) -> Outcome {
        if !self.pruned(&c) {
            self.best = Some(c);
        }
        Outcome::Complete
    }

    /// Applies `choice` to the quote at `quote` in the string `c` is in.
    fn decide(&mut self, c: &mut Cursor, quote: usize, choice: Choice) {
        let Some(s) = c.string else { return };
        c.pos = quote + 1;
        match choice {
            Choice::Content => c.content.push(quote),
            Choice::Close => {
                c.string = None;
                c.imbalance += s.balance.unsigned_abs();
                if s.key {
                    c.expect = Expect::Colon;
                } else {
                    after_value(c);
                }
            }
        }
    }

    /// The next unescaped `"` in the string `c` is in, updating its bracket
    /// balance on the way.
    fn next_quote(&mut self, c: &mut Cursor) -> Option<usize> {
        let s = c.string.as_mut()?;
        let mut i = c.pos;
        while i < self.b.len() {
            self.steps += 1;
            match self.b[i] {
                b'\\' => i += 2,
                b'"' => return Some(i),
                b'(' | b'[' | b'{' => {
                    s.balance += 1;
                    i += 1;
                }
                b')' | b']' | b'}' => {
                    s.balance -= 1;
                    i += 1;
                }
                _ => i += 1,
            }
        }
        None
    }

    /// Whether the quote at `quote` can end the string `s`: what follows it
    /// is something JSON lets follow a key or a value there.
    fn could_close(&mut self, c: &Cursor, s: Str, quote: usize) -> bool {
        let k = self.skip_ws(quote + 1);
        let Some(&next) = self.b.get(k) else {
            return true;
        };
        if s.key {
            return next == b':';
        }
        let top = c.frames.last().copied();
        match (top, next) {
            (None, _) => true,
            (Some(Frame::Array), b',') => true,
            (Some(Frame::Object), b',') => {
                let j = self.skip_ws(k + 1);
                j >= self.b.len() || self.b[j] == b'}' || self.member_start(j)
            }
            (Some(Frame::Object), b'}') | (Some(Frame::Array), b']') => {
                c.frames.len() == 1 || self.parent_goes_on(k + 1)
            }
            (Some(Frame::Object), _) => self.member_start(k),
            _ => false,
        }
    }

    /// Whether what follows a closing bracket at `at` can continue its
    /// parent: a comma, another closing bracket, the end, or a next key.
    fn parent_goes_on(&mut self, at: usize) -> bool {
        let j = self.skip_ws(at);
        match self.b.get(j) {
            None | Some(b',' | b'}' | b']') => true,
            Some(_) => self.member_start(j),
        }
    }

    /// Whether a key starts at `at`: a short quoted string or a bare word,
    /// then a colon.
    fn member_start(&mut self, at: usize) -> bool {
        let Some(&first) = self.b.get(at) else {
            return false;
        };
        let after_key = match first {
            b'"' | b'\'' => {
                let rest = &self.b[at + 1..self.b.len().min(at + 1 + 200)];
                let Some(n) = rest.iter().position(|&c| c == first) else {
                    return false;
                };
                self.steps += n;
                if rest[..n]
                    .iter()
                    .any(|c| matches!(c, b'"' | b'\n' | b',' | b'{' | b'}' | b'[' | b']' | b':'))
                {
                    return false;
                }
                at + 1 + n + 1
            }
            c if c.is_ascii_alphabetic() || c == b'_' || c == b'$' => {
                let n = self.b[at..]
                    .iter()
                    .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$' | b'-'))
                    .count();
                self.steps += n;
                at + n
            }
            _ => return false,
        };
        let j = self.skip_ws(after_key);
        self.b.get(j) == Some(&b':')
    }

    /// Skips whitespace and `//` / `/* */` comments.
    fn skip_ws(&mut self, mut i: usize) -> usize {
        let b = self.b;
        let start = i;
        while i < b.len() {
            match b[i] {
                b' ' | b'\t' | b'\n' | b'\r' => i += 1,
                // A comment only after a separator: `http://` is no comment.
                b'/' if b.get(i + 1) == Some(&b'/') && comment_may_start(b, i) => {
                    i = b[i..]
                        .iter()
                        .position(|&c| c == b'\n')
                        .map_or(b.len(), |n| i + n);
                }
                b'/' if b.get(i + 1) == Some(&b'*') && comment_may_start(b, i) => {
                    i = b[i + 2..]
                        .windows(2)
                        .position(|w| w == b"*/")
                        .map_or(b.len(), |n| i + 2 + n + 2);
                }
                _ => break,
            }
        }
        self.steps += i - start;
        i
    }

    /// The byte after the single-quoted string opening at `at`.
    fn single_quoted_end(&mut self, at: usize) -> Option<usize> {
        let mut i = at + 1;
        while i < self.b.len() {
            self.steps += 1;
            match self.b[i] {
                b'\\' => i += 2,
                b'\'' => return Some(i + 1),
                _ => i += 1,
            }
        }
        None
    }

    /// The end of a bare word (a number, `True`, an unquoted key or value).
    fn bare_end(&mut self, at: usize) -> usize {
        let b = self.b;
        let mut i = at;
        while i < b.len() {
            match b[i] {
                b' ' | b'\t' | b'\n' | b'\r' | b'{' | b'}' | b'[' | b']' | b',' | b':' | b'"'
                | b'\'' => break,

                _ => i += 1,
            }
        }
        self.steps += i - at;
        i.max(at + 1)
    }
}

/// Whether a comment may start at `i`: at the start, or after whitespace or
/// a `,` `{` `[`.
fn comment_may_start(b: &[u8], i: usize) -> bool {
    i == 0 || matches!(b[i - 1], b' ' | b'\t' | b'\n' | b'\r' | b',' | b'{' | b'[')
}

/// After a bare word or single-quoted string: a key wants its colon.
fn after_token(c: &mut Cursor) {
    if c.expect == Expect::Key {
        c.expect = Expect::Colon;
    } else {
        after_value(c);
    }
}

/// After a value ending at `c.pos`: the container goes on, or the root ends.
fn after_value(c: &mut Cursor) {
    if c.frames.is_empty() {
        c.expect = Expect::Done;
        c.root_end = c.pos;
    } else {
        c.expect = Expect::After;
    }
}

/// Closes the innermost container at the bracket before `after`.
fn pop(c: &mut Cursor, after: usize) {
    c.frames.pop();
    c.pos = after;
    after_value(c);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repaired(text: &str) -> String {
        match repair(text) {
            Quotes::Repaired(t) => t,
            other => panic!("{text:?} gave {other:?}"),
        }
    }

    #[test]
    fn valid_and_merely_lenient_text_is_left_alone() {
        for text in [
            r#"{"a": "x", "b": [1, "y"]}"#,
            "{'a': 'say \"hi\"', b: True,}",
            "{\"a\": \"x\" \"b\": 1}",
            "{\"a\": \"x\", // note\n \"b\": 2}",
            "{\"a\": \"cut off",
        ] {
            assert_eq!(repair(text), Quotes::Fine, "{text}");
        }
    }

    #[test]
    fn quotes_followed_by_letters_are_content() {
        assert_eq!(
            repaired(r#"{"c": "print('He said "hi"')"}"#),
            r#"{"c": "print('He said \"hi\"')"}"#
        );
    }

    #[test]
    fn a_quote_before_a_comma_and_a_non_key_is_content() {
        assert_eq!(
            repaired(r#"{"c": "print("a", "b")", "d": 1}"#),
            r#"{"c": "print(\"a\", \"b\")", "d": 1}"#
        );
    }

    #[test]
    fn json_inside_a_string_is_read_whole() {
        assert_eq!(
            repaired(r#"{"c": "{"a": "b", "c": "d"}", "e": 1}"#),
            r#"{"c": "{\"a\": \"b\", \"c\": \"d\"}", "e": 1}"#
        );
    }

    #[test]
    fn a_cut_off_text_keeps_the_first_reading() {
        assert_eq!(repaired(r#"{"c": "say "hi" to"#), r#"{"c": "say \"hi\" to"#);
    }

    #[test]
    fn prose_after_the_value_is_cut() {
        assert_eq!(
            repaired("{\"c\": \"12\" screen\"} and I said \"ok"),
            "{\"c\": \"12\\\" screen\"}"
        );
    }

    #[test]
    fn no_reading_is_ambiguous() {
        assert_eq!(repair(r#"{"c": "a "b", "d": ]}"#), Quotes::Ambiguous);
    }
}
