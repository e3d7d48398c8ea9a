//! The shape of a Python program's lines, as a regular expression the
//! decision's grammar holds `run_code`'s `code` to.
//!
//! A small model writes a third of its Python flattened: `for f in
//! os.listdir('r'): if f.endswith('.json'): with open(f) as h: data =
//! json.load(h) total += data['n'] with open('t.txt', 'w') as o: …`.
//! One level can be put back on lines of its own after Python refuses it
//! (`repairs::compound`), but where headers nest, where each block ends is
//! lost: nothing can tell whether the last `with` belongs inside the loop.
//! Flattened and unindented code was the commonest `run_code` failure of
//! the development suite's journals (EVALS.md, section 26).
//!
//! So the model is not let to write it: under the grammar, a line that
//! opens with a compound header (`for`, `while`, `if`, `elif`, `else`,
//! `with`, `try`, `except`, `finally`, `def`, `class`) ends at the first
//! colon followed by a space or the line's end (a comment may follow),
//! and the line after it is indented. Every other
//! line is free. The grammar then offers the model a line break where it
//! would have written the body on the header's line, and an indentation
//! where it would have written none.
//!
//! Off by default (`CodeOptions::line_shape`, `--code-line-shape`): with it
//! on, no program of the dev suite failed to parse, but neither suite
//! passed more tasks (EVALS.md, section 26).
//!
//! The expression uses plain groups, character classes and repetition
//! only (no look-around, no `(?:`), so llguidance and llama.cpp's JSON
//! schema converter both read it, and it is anchored (`^…$`) as JSON
//! schema patterns must be to match the whole string.

/// Keywords that open a line ending in the header's colon.
const HEADERS: [&str; 11] = [
    "for", "while", "if", "elif", "else", "with", "try", "except", "finally", "def", "class",
];

/// Characters that continue an identifier (ASCII; keywords are ASCII).
const WORD: &str = "A-Za-z0-9_";

/// The pattern for `code` in Python: every header line ends at its colon
/// and the line after it is indented.
pub fn python_line_pattern() -> String {
    let not_keyword = identifier_not_in(&HEADERS);
    let keyword = format!("({})", HEADERS.join("|"));
    // A line's text after its indentation.
    let free = format!("([^A-Za-z_ \\t\\n][^\\n]*|{not_keyword}([^{WORD}\\n][^\\n]*)?)?");
    // Before the header's colon, a colon only where no space follows it
    // (`x[1:]`, `f'{v:.2f}'`): a decoder must see the line cannot go on
    // the moment a colon and a space are written, not at its end.
    let header = format!("{keyword}([^{WORD}\\n]([^:\\n]|:[^ \\t\\n])*)?:[ \\t]*(#[^\\n]*)?");
    let free_line = format!("[ \\t]*{free}");
    let header_line = format!("[ \\t]*{header}");
    // After a header: more headers, each indented, then an indented line.
    let block = format!("{header_line}\\n([ \\t]+{header}\\n)*[ \\t]+{free}");
    format!("^(({free_line}|{block})\\n)*({free_line}|{block})\\n?$")
}

/// A regular expression for the identifiers that are none of `words`.
fn identifier_not_in(words: &[&str]) -> String {
    let mut firsts: Vec<char> = words.iter().filter_map(|w| w.chars().next()).collect();
    firsts.sort_unstable();
    firsts.dedup();
    let mut alternatives = vec![format!("[{}][{WORD}]*", class_without("A-Za-z_", &firsts))];
    for first in firsts {
        let rest: Vec<&str> = words.iter().filter_map(|w| w.strip_prefix(first)).collect();
        alternatives.push(format!("{first}{}", suffix_not_in(&rest)));
    }
    format!("({})", alternatives.join("|"))
}

/// A regular expression for the identifier tails `t` for which no word of
/// `rests` equals `t`: every tail but those words (the empty tail too
/// unless it is one of them).
fn suffix_not_in(rests: &[&str]) -> String {
    let ends_here = rests.contains(&"");
    let mut nexts: Vec<char> = rests.iter().filter_map(|w| w.chars().next()).collect();
    nexts.sort_unstable();
    nexts.dedup();
    let mut alternatives = Vec::new();
    if !ends_here {
        alternatives.push(String::new());
    }
    alternatives.push(format!("[{}][{WORD}]*", class_without(WORD, &nexts)));
    for next in nexts {
        let rest: Vec<&str> = rests.iter().filter_map(|w| w.strip_prefix(next)).collect();
        alternatives.push(format!("{next}{}", suffix_not_in(&rest)));
    }
    format!("({})", alternatives.join("|"))
}

/// The character class body `ranges` (like `A-Za-z0-9_`) without `taken`,
/// spelled as single characters and ranges.
fn class_without(ranges: &str, taken: &[char]) -> String {
    let chars: Vec<char> = ranges.chars().collect();
    let mut members = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if i + 2 < chars.len() && chars[i + 1] == '-' {
            members.extend(chars[i]..=chars[i + 2]);
            i += 3;
        } else {
            members.push(chars[i]);
            i += 1;
        }
    }
    let kept: Vec<char> = members.into_iter().filter(|c| !taken.contains(c)).collect();
    let mut out = String::new();
    let mut j = 0;
    while j < kept.len() {
        let start = kept[j];
        let mut end = start;
        while j + 1 < kept.len() && u32::from(kept[j + 1]) == u32::from(end) + 1 {
            j += 1;
            end = kept[j];
        }
        if u32::from(end) >= u32::from(start) + 2 {
            out.push_str(&format!("{start}-{end}"));
        } else {
            out.push(start);
            if end != start {
                out.push(end);
            }
        }
        j += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shaped(code: &str) -> bool {
        let pattern = regex::Regex::new(&python_line_pattern()).unwrap();
        pattern.is_match(code)
    }

    #[test]
    fn programs_with_their_blocks_on_lines_of_their_own_pass() {
        for code in [
            "",
            "print(1)",
            "print(1)\n",
            "import csv\nrows = list(csv.DictReader(open('data.csv')))\nprint(len(rows))",
            "total = 0\nfor r in rows:\n    if r['x'] == 'a':\n        total += 1\n    else:\n        pass\nprint(total)",
            "with open('a.txt') as f:  # read it\n    data = f.read()",
            "try:\n    x = int('3')\nexcept ValueError as e:\n    x = 0\nfinally:\n    print(x)",
            "def add(a, b):\n    return a + b\n\nprint(add(1, 2))",
            "d = {'if': 1, 'for': 2}\nx = 1 if d else 2\nformat_ = f'{x:.2f}'",
            "iffy = 1\nfor_each = 2\nelse_ = 3\nwithin = 4\nclasses = 5\ndefault = 6\ntrying = 7",
            "if(x > 1):\n\tprint(x)",
            "for x in y[1:]:\n    print(f'{x:.2f}')",
            "# for x in y: z\nprint('for: x')",
            "rows = [r for r in rows if r]\n",
            "s = '''\n  text\n'''",
        ] {
            assert!(shaped(code), "refused: {code:?}");
        }
    }

    #[test]
    fn flattened_or_unindented_blocks_are_refused() {
        for code in [
            "for f in files: print(f)",
            "with open(p) as f: data = f.read() print(data)",
            "for filename in os.listdir('r'): if filename.endswith('.json'): total += 1",
            "for f in files: print(f) if f else g:",
            "import os\nfor r in rows:\nprint(r)",
            "if x:\n    y = 1\nelse: y = 2",
            "for r in rows:",
            "while True:\n",
            "if x:\n    if y:\nprint(1)",
        ] {
            assert!(!shaped(code), "let through: {code:?}");
        }
    }

    #[test]
    fn the_pattern_uses_no_syntax_llama_cpp_refuses() {
        let pattern = python_line_pattern();
        assert!(!pattern.contains("(?"), "{pattern}");
        assert!(!pattern.contains("&&"), "{pattern}");
        assert!(pattern.starts_with('^') && pattern.ends_with('$'));
    }

    #[test]
    fn identifiers_that_are_not_keywords_are_spelled_out() {
        let pattern = regex::Regex::new(&format!("^{}$", identifier_not_in(&HEADERS))).unwrap();
        for word in [
            "x",
            "iff",
            "i",
            "e",
            "el",
            "els",
            "elsewhere",
            "fo",
            "form",
            "_if",
            "If",
            "w",
            "withx",
        ] {
            assert!(pattern.is_match(word), "{word}");
        }
        for word in HEADERS {
            assert!(!pattern.is_match(word), "{word}");
        }
        assert!(!pattern.is_match("1x"));
    }
}
