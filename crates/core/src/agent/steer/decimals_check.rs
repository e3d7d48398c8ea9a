//! **Decimals check**: a `finish` while one of the goal's output files
//! holds a lone number written with other decimals than the goal asks for
//! (`569` where the goal says "with two decimals", `44.0960256` for
//! "rounded to one decimal place", `600.0` for "as an integer") is
//! answered, once, with the write of the number in that form spelled out,
//! instead of ending the run.
//!
//! Small models compute the right number and write it as the language
//! prints it (`str(total)`, `f"{km}"`), not as the goal asked: in the dev
//! suite's journals of session 42 three of the runs whose value was right
//! failed on its form alone (a total of travel expenses, a distance in
//! kilometres, a sum of whole amounts read with `float`). The loop sees it
//! without a model call: the goal names a number of decimals (in six
//! languages: "two decimals", "2 decimal places", "as an integer", "dos
//! decimales", "zwei Nachkommastellen", "deux décimales", "duas casas
//! decimais", "保留两位小数", "小数点以下2桁"), nearest to the file's
//! name when it names several, and the file holds one number with
//! another count. The number is rounded as Rust formats it (the nearest
//! decimal of the value the file holds); a number that would need rounding
//! to become a whole one is left alone ("as an integer" may mean a count
//! the program got wrong). A reply spelled out is copied almost every time
//! (see [`write_offer`](super::write_offer)); a second `finish` ends the
//! run whatever the file holds. **Off by default** (`--steer
//! decimals_check=on`): it acted in one held-out run, which failed with
//! and without it (EVALS.md, section 39). The write offer offers a number in the
//! form the goal asks of its file too ([`as_asked`]), so that the value a
//! program printed as `569.0` is offered as `569.00`, not as `569`.

use std::sync::LazyLock;

use regex::Regex;

use super::{Gate, Steer, SteerContext};
use crate::decision::Decision;
use crate::tools::{ToolEffect, Toolbox};

/// The steer's name (switches, journals).
pub const NAME: &str = "decimals_check";

/// The largest output file looked at, in bytes.
const MAX_FILE: u64 = 64;

/// The decimals check as a steer: gates a `finish` whose goal file holds
/// a number in another form than the goal asks.
pub struct DecimalsCheck;

impl Steer for DecimalsCheck {
    fn name(&self) -> &'static str {
        NAME
    }

    fn about(&self) -> &'static str {
        "answers the first `finish` while a goal file holds a lone number with other decimals than the goal asks for (\"two decimals\", \"as an integer\", in six languages) with the write of it in that form spelled out"
    }

    fn on_by_default(&self) -> bool {
        // Acted in 1 held-out run of 38, which failed either way (EVALS.md,
        // section 39): by the project's rule, off until a suite shows it helps.
        false
    }

    fn gate(&self, cx: &SteerContext<'_>, decision: &Decision, _reasked: bool) -> Gate {
        if !decision.is_finish() || super::acted(cx.history, NAME) {
            return Gate::Go;
        }
        refusal(cx.goal, &cx.files.outputs, cx.toolbox).map_or(Gate::Go, Gate::refuse)
    }
}

/// A count of decimals as a goal writes it: a digit or a small number word.
const COUNT: &str = r"(\d|one|a single|two|three|four|un|una|uno|dos|tres|cuatro|une|deux|trois|quatre|uma|duas|três|eine|einer|zwei|drei|vier|一|二|两|三|四)";

/// The phrases that ask for a number of decimals; the count is group 1.
static DECIMALS: LazyLock<Regex> = LazyLock::new(|| {
    let patterns = [
        // two decimals, 2 decimal places, one decimal digit, dos decimales, deux décimales
        format!(r"(?i)\b{COUNT}\s+(?:decimals?|decimales|décimales?|decimais)\b"),
        // duas casas decimais
        format!(r"(?i)\b{COUNT}\s+casas?\s+decimais\b"),
        // zwei Nachkommastellen, zwei Dezimalstellen
        format!(
            r"(?i)\b{COUNT}\s+(?:nachkommastellen?|dezimalstellen?|stellen\s+nach\s+dem\s+komma)"
        ),
        // deux chiffres après la virgule, two digits after the decimal point
        format!(
            r"(?i)\b{COUNT}\s+(?:chiffres?\s+après\s+la\s+virgule|digits?\s+after\s+the\s+(?:decimal\s+)?point)"
        ),
        // 保留两位小数, 两位小数
        format!(r"{COUNT}\s*位小数"),
        // 小数点以下2桁, 小数第2位
        format!(r"(?:小数点以下\s*{COUNT}\s*桁|小数第\s*{COUNT}\s*位)"),
    ];
    Regex::new(&patterns.join("|")).expect("valid regex")
});

/// The phrases that ask for a whole number.
static WHOLE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:as an? (?:integer|whole number)|an integer|a whole number|como (?:un )?(?:número )?entero|als ganze zahl|en (?:nombre )?entier|como (?:um )?(?:número )?inteiro)\b|整数")
        .expect("valid regex")
});

/// A lone decimal number, with an optional sign.
static NUMBER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[-+]?\d+(?:\.(\d+))?$").expect("valid regex"));

/// The decimals a count word stands for.
fn count_of(word: &str) -> Option<usize> {
    let word = word.to_lowercase();
    if let Ok(n) = word.parse::<usize>() {
        return Some(n);
    }
    let n = match word.as_str() {
        "one" | "a single" | "un" | "una" | "uno" | "une" | "uma" | "eine" | "einer" | "一" => 1,
        "two" | "dos" | "deux" | "duas" | "zwei" | "二" | "两" => 2,
        "three" | "tres" | "trois" | "três" | "drei" | "三" => 3,
        "four" | "cuatro" | "quatre" | "vier" | "四" => 4,
        _ => return None,
    };
    Some(n)
}

/// The forms of numbers `goal` asks for: each phrase's position in the
/// goal, the decimals it asks for, and the phrase itself.
pub fn asked(goal: &str) -> Vec<(usize, usize, String)> {
    let mut forms: Vec<(usize, usize, String)> = DECIMALS
        .captures_iter(goal)
        .filter_map(|caps| {
            let whole = caps.get(0)?;
            let count = caps.iter().skip(1).flatten().next()?;
            Some((
                whole.start(),
                count_of(count.as_str())?,
                whole.as_str().to_string(),
            ))
        })
        .collect();
    forms.extend(
        WHOLE
            .find_iter(goal)
            .map(|m| (m.start(), 0, m.as_str().to_string())),
    );
    forms.sort();
    forms
}

/// The form of number `goal` asks of `file`: of the goal's phrases in the
/// sentence that names the file, the nearest to the name (a phrase in
/// another sentence may be about an input: "the prices have two
/// decimals").
fn asked_of(goal: &str, file: &str, forms: &[(usize, usize, String)]) -> Option<(usize, String)> {
    let at = goal.find(file)?;
    let (start, end) = sentence_around(goal, at);
    forms
        .iter()
        .filter(|(phrase_at, _, _)| (start..end).contains(phrase_at))
        .min_by_key(|(phrase_at, _, _)| phrase_at.abs_diff(at))
        .map(|(_, decimals, phrase)| (*decimals, phrase.clone()))
}

/// The byte range of the sentence of `text` around byte `at`: sentences
/// end at a `.`, `!` or `?` followed by a space or the end (not the dot
/// of a file name or a number), at `。！？` and at a line break.
fn sentence_around(text: &str, at: usize) -> (usize, usize) {
    let ends = |i: usize, c: char| match c {
        '。' | '！' | '？' | '\n' => true,
        '.' | '!' | '?' => text[i + c.len_utf8()..]
            .chars()
            .next()
            .is_none_or(char::is_whitespace),
        _ => false,
    };
    let start = text[..at]
        .char_indices()
        .rev()
        .find(|&(i, c)| ends(i, c))
        .map_or(0, |(i, c)| i + c.len_utf8());
    let end = text[at..]
        .char_indices()
        .find(|&(i, c)| ends(at + i, c))
        .map_or(text.len(), |(i, _)| at + i);
    (start, end)
}

/// `number` (a lone decimal) written with `decimals` decimals, when that
/// changes it and keeps its value's nearest decimal; `None` when it
/// already has them or would have to be rounded to a whole number.
pub fn reformatted(number: &str, decimals: usize) -> Option<String> {
    let caps = NUMBER.captures(number)?;
    let has = caps.get(1).map_or(0, |d| d.as_str().len());
    if has == decimals {
        return None;
    }
    let value: f64 = number.parse().ok()?;
    if decimals == 0 && value.fract() != 0.0 {
        return None;
    }
    Some(format!("{value:.decimals$}"))
}

/// `number` in the form `goal` asks of `file`, when the goal asks one and
/// it differs (see [`reformatted`]); `None` otherwise. The write offer
/// offers a value this way.
pub fn as_asked(goal: &str, file: &str, number: &str) -> Option<String> {
    let forms = asked(goal);
    let (decimals, _) = asked_of(goal, file, &forms)?;
    reformatted(number.trim(), decimals)
}

/// The note that answers a `finish` instead of ending the run, when one of
/// `outputs` holds a lone number with other decimals than `goal` asks for
/// it; `None` when the finish may go.
pub fn refusal(goal: &str, outputs: &[String], toolbox: &Toolbox) -> Option<String> {
    let forms = asked(goal);
    if forms.is_empty() {
        return None;
    }
    let writes = toolbox.first_with(ToolEffect::Writes)?;
    let workspace = toolbox.workspace()?;
    outputs.iter().find_map(|file| {
        let path = workspace.resolve(file).ok()?;
        let meta = std::fs::metadata(&path).ok()?;
        if !meta.is_file() || meta.len() > MAX_FILE {
            return None;
        }
        let content = std::fs::read_to_string(&path).ok()?;
        let number = content.trim();
        let (decimals, phrase) = asked_of(goal, file, &forms)?;
        let wanted = reformatted(number, decimals)?;
        let reply = serde_json::json!({
            "thought": format!("{file} must hold the number as the goal asks: {phrase}"),
            "action": {"name": writes, "args": {"path": file, "content": wanted}},
        });
        Some(format!(
            "not finished yet: the goal asks for \"{phrase}\", and `{file}` holds `{number}`. If it should hold `{wanted}`, reply {reply}. If the number itself is wrong, compute it again; if the file is right as it is, finish again."
        ))
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::journal::JournalEntry;
    use crate::tools::builtin::register_file_tools;
    use crate::tools::{ToolStatus, Workspace};

    fn workspace(files: &[(&str, &str)]) -> (tempfile::TempDir, Toolbox) {
        let dir = tempfile::tempdir().unwrap();
        for (file, content) in files {
            std::fs::write(dir.path().join(file), content).unwrap();
        }
        let mut toolbox = Toolbox::new();
        register_file_tools(&mut toolbox, &Workspace::new(dir.path()).unwrap());
        (dir, toolbox)
    }

    fn decimals(goal: &str) -> Vec<usize> {
        asked(goal).into_iter().map(|(_, d, _)| d).collect()
    }

    #[test]
    fn the_goal_names_decimals_in_six_languages() {
        assert_eq!(
            decimals("Write the total with exactly two decimals (like 10.50)."),
            [2]
        );
        assert_eq!(decimals("rounded to 1 decimal place"), [1]);
        assert_eq!(decimals("to three decimal digits"), [3]);
        assert_eq!(decimals("two digits after the decimal point"), [2]);
        assert_eq!(decimals("Write the count as an integer to n.txt."), [0]);
        assert_eq!(decimals("Escribe el total con dos decimales."), [2]);
        assert_eq!(
            decimals("Schreibe die Summe mit zwei Nachkommastellen."),
            [2]
        );
        assert_eq!(decimals("avec deux décimales"), [2]);
        assert_eq!(decimals("avec deux chiffres après la virgule"), [2]);
        assert_eq!(decimals("com duas casas decimais"), [2]);
        assert_eq!(decimals("结果保留两位小数"), [2]);
        assert_eq!(decimals("小数点以下1桁で書いてください"), [1]);
        // Nothing about decimals.
        assert!(decimals("Sum the amounts in sales.csv into total.txt.").is_empty());
        assert!(decimals("the decimal point of view").is_empty());
    }

    #[test]
    fn a_number_is_rewritten_only_when_its_decimals_differ() {
        assert_eq!(reformatted("569", 2).as_deref(), Some("569.00"));
        assert_eq!(reformatted("44.0960256", 1).as_deref(), Some("44.1"));
        assert_eq!(reformatted("600.0", 0).as_deref(), Some("600"));
        assert_eq!(reformatted("-3.5", 2).as_deref(), Some("-3.50"));
        assert_eq!(reformatted("569.00", 2), None);
        // Rounding to a whole number is not offered; text is not a number.
        assert_eq!(reformatted("600.5", 0), None);
        assert_eq!(reformatted("Total: 5", 2), None);
        assert_eq!(reformatted("1,200", 2), None);
    }

    #[test]
    fn each_file_gets_the_form_nearest_to_its_name() {
        let goal = "Write the total number of units to units.txt (an integer), and the total stock value to value.txt with two decimals.";
        let (_dir, toolbox) = workspace(&[("units.txt", "100.0\n"), ("value.txt", "487.5")]);
        let outputs = vec!["units.txt".to_string(), "value.txt".to_string()];
        let note = refusal(goal, &outputs, &toolbox).unwrap();
        assert!(
            note.contains("`units.txt` holds `100.0`. If it should hold `100`"),
            "{note}"
        );
        let (_dir, toolbox) = workspace(&[("units.txt", "100"), ("value.txt", "487.5")]);
        let note = refusal(goal, &outputs, &toolbox).unwrap();
        assert!(
            note.starts_with("not finished yet: the goal asks for \"two decimals\", and `value.txt` holds `487.5`. If it should hold `487.50`, reply {\"thought\":"),
            "{note}"
        );
        assert!(note.contains(r#""content":"487.50""#), "{note}");
        let (_dir, toolbox) = workspace(&[("units.txt", "100"), ("value.txt", "487.50\n")]);
        assert!(refusal(goal, &outputs, &toolbox).is_none());
        // A form asked in another sentence is about something else.
        let goal = "The prices in prices.csv have two decimals. Count the rows and write the count to n.txt.";
        let (_dir, toolbox) = workspace(&[("n.txt", "5")]);
        assert!(refusal(goal, &["n.txt".into()], &toolbox).is_none());
    }

    #[test]
    fn a_value_is_put_in_the_form_the_goal_asks_of_its_file() {
        let goal = "Write the total with two decimals to t.txt.";
        assert_eq!(as_asked(goal, "t.txt", "569").as_deref(), Some("569.00"));
        assert_eq!(as_asked(goal, "t.txt", "569.00"), None);
        assert_eq!(as_asked(goal, "other.txt", "569"), None);
        assert_eq!(as_asked("Write the total to t.txt.", "t.txt", "569"), None);
    }

    #[test]
    fn the_run_is_told_once() {
        let goal = "Sum the travel rows. Write the total with two decimals to travel.txt.";
        let (_dir, toolbox) = workspace(&[("travel.txt", "569")]);
        let files = super::super::GoalFiles {
            outputs: vec!["travel.txt".into()],
            ..Default::default()
        };
        let reply = json!({"thought": "", "action": {"name": "finish", "args": {"result": "569"}}});
        let finish = crate::decision::parse_decision(&reply.to_string()).unwrap();
        let cx = super::super::test_context(goal, &files, &toolbox, &[]);
        assert!(matches!(
            DecimalsCheck.gate(&cx, &finish, false),
            Gate::Refuse { .. }
        ));
        let told = JournalEntry {
            status: ToolStatus::Error,
            steered_by: Some(NAME.into()),
            ..JournalEntry::new(3, "", crate::decision::FINISH, json!({"result": "569"}))
        };
        let history = [told];
        let cx = super::super::test_context(goal, &files, &toolbox, &history);
        assert_eq!(DecimalsCheck.gate(&cx, &finish, false), Gate::Go);
    }
}
