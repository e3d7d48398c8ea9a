//! Evidence checks: a thought that claims to rest on a result must cite one
//! the agent actually saw.
//!
//! A claim is a phrase such as "according to the result", "the tool
//! returned", "as shown above", "the file says", "根据工具返回的结果" or
//! "如上所示". A claim must cite a round (`round 3`, `第3轮`) or name a tool
//! that was called and succeeded earlier in the run. Flagged: an uncited
//! claim; a cited round that has not happened or whose call failed (checked
//! whether or not a claim phrase is present); a named tool never called
//! successfully. A `finish` that states an answer while no tool call of the
//! run succeeded is flagged too.
//!
//! A flag never blocks the action: it is journalled on its round
//! (`"evidence": "flagged: ..."`), counted in the outcome, and — when
//! [`Limits::evidence_warnings`](crate::limits::Limits) is on — the next
//! prompt asks the model to cite the round it relies on or to check first.

use std::sync::LazyLock;

use aho_corasick::AhoCorasick;
use regex::Regex;

use crate::journal::{JournalEntry, UNPARSED};

/// Phrases that claim a result was seen (matched case-insensitively).
const CLAIMS: &[&str] = &[
    "according to the result",
    "according to the observation",
    "according to the output",
    "according to the tool",
    "according to the file",
    "the tool returned",
    "the tool result",
    "the result shows",
    "the results show",
    "the output shows",
    "the observation shows",
    "as shown above",
    "as seen above",
    "as the result shows",
    "the file says",
    "the file shows",
    "the file contains",
    "based on the result",
    "based on the observation",
    "based on the output",
    "根据工具返回的结果",
    "根据工具的结果",
    "根据结果",
    "根据观察",
    "根据输出",
    "工具返回",
    "如上所示",
    "如上所述",
    "文件显示",
    "文件内容显示",
    "结果显示",
];

/// Every phrase of [`CLAIMS`] in one automaton: a thought is read once,
/// not once per phrase (the check runs on every round's thought). ASCII
/// letters match in any case; the Chinese phrases have none.
static CLAIM_FINDER: LazyLock<AhoCorasick> = LazyLock::new(|| {
    AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .build(CLAIMS)
        .expect("valid phrases")
});

/// "round 3", "Round #3", "第 3 轮". ASCII word boundaries and digits (a
/// digit of another script would not parse as a round anyway), Unicode
/// spaces: half the compile cost of the all-Unicode form (1.5 million
/// instructions less, once per process).
static ROUND_CITATION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?-u:\b)(?i:round)\s*#?\s*([0-9]{1,4})(?-u:\b)|第\s*([0-9]{1,4})\s*轮")
        .expect("valid regex")
});

/// Why `thought`, written in `round`, is flagged against `history` (the
/// rounds before it), or `None` when it holds up. `tools` are the names the
/// agent can call. `shown_before` says the first prompt showed files whole
/// (the input preview): a claim that cites nothing may rest on them, so it
/// is not flagged (a cited round still must exist and have succeeded).
pub fn check_thought(
    thought: &str,
    round: u32,
    history: &[JournalEntry],
    tools: &[&str],
    shown_before: bool,
) -> Option<String> {
    let claim = CLAIM_FINDER
        .find(thought)
        .map(|found| CLAIMS[found.pattern().as_usize()]);
    // A citation has digits; most thoughts have none.
    let cited: Vec<u32> = if thought.bytes().any(|b| b.is_ascii_digit()) {
        ROUND_CITATION
            .captures_iter(thought)
            .filter_map(|c| c.get(1).or_else(|| c.get(2)))
            .filter_map(|m| m.as_str().parse().ok())
            .collect()
    } else {
        Vec::new()
    };
    for &cited_round in &cited {
        if cited_round >= round {
            return Some(format!(
                "cites round {cited_round}, which has not happened yet"
            ));
        }
        match history.iter().find(|e| e.round == cited_round) {
            None => {
                return Some(format!(
                    "cites round {cited_round}, which is not in this run"
                ))
            }
            Some(entry) if entry.is_error() || entry.action == UNPARSED => {
                return Some(format!("cites round {cited_round}, whose call failed"))
            }
            Some(_) => {}
        }
    }
    let claim = claim?;
    if !cited.is_empty() {
        return None;
    }
    let lower = thought.to_lowercase();
    let named: Vec<&str> = tools
        .iter()
        .copied()
        .filter(|tool| mentions(&lower, tool))
        .collect();
    if named.is_empty() {
        if shown_before {
            return None;
        }
        return Some(format!(
            "claims a result (\"{claim}\") without citing the round it comes from"
        ));
    }
    let succeeded = |tool: &str| history.iter().any(|e| e.action == tool && !e.is_error());
    named.iter().find(|tool| !succeeded(tool)).map(|tool| {
        format!("claims a result of {tool}, which has not been called successfully in this run")
    })
}

/// Why a `finish` with `result` is flagged: it states an answer while no
/// tool call of the run succeeded and the first prompt showed no file
/// whole (`shown_before`).
pub fn check_finish(result: &str, history: &[JournalEntry], shown_before: bool) -> Option<String> {
    let any_success = history
        .iter()
        .any(|e| !e.is_error() && e.action != UNPARSED);
    (!any_success && !shown_before && !result.trim().is_empty())
        .then(|| "finishes with an answer although no tool call of this run succeeded".to_string())
}

/// The warning the next prompt carries after a flagged round.
pub fn warning(round: u32, flag: &str) -> String {
    format!(
        "Evidence check: your thought in round {round} {flag}. Rely only on observations you received, cite the round you rely on (\"round N shows ...\"), or check first with a tool."
    )
}

/// Whether `text` (lowercase) names `tool` as a word.
fn mentions(text: &str, tool: &str) -> bool {
    text.match_indices(tool).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + tool.len()..].chars().next();
        let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        !word(before) && !word(after)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_are_cited_in_english_and_chinese_as_whole_numbers() {
        let cited: Vec<&str> = ROUND_CITATION
            .captures_iter(
                "in round 3 and Round #12, 第 2 轮, 第\u{3000}4\u{3000}轮; around 5, round 12345",
            )
            .filter_map(|c| c.get(1).or_else(|| c.get(2)))
            .map(|m| m.as_str())
            .collect();
        assert_eq!(cited, ["3", "12", "2", "4"]);
    }

    const TOOLS: &[&str] = &["read_file", "list_dir", "run_code", "write_file"];

    fn entry(round: u32, action: &str, ok: bool) -> JournalEntry {
        JournalEntry::finished_call(round, action, ok)
    }

    fn history() -> Vec<JournalEntry> {
        vec![entry(1, "read_file", true), entry(2, "run_code", false)]
    }

    #[test]
    fn correct_citations_are_not_flagged() {
        let h = history();
        for thought in [
            "According to the result of round 1, there are 3 admins.",
            "As shown above in round 1, the value is 5432.",
            "根据工具返回的结果（第1轮），最高分是李娜。",
            "The tool returned the rows (read_file), so I count them.",
            "I will read the file next.",
            "",
        ] {
            assert_eq!(
                check_thought(thought, 3, &h, TOOLS, false),
                None,
                "{thought}"
            );
        }
    }

    #[test]
    fn fabricated_citations_are_flagged_in_english_and_chinese() {
        let h = history();
        let cases = [
            (
                "According to the result, there are 7 admins.",
                "without citing",
            ),
            ("如上所示，答案是 42。", "without citing"),
            ("The tool returned 12 rows in round 5.", "not happened yet"),
            ("第9轮的结果显示有 3 行。", "not happened yet"),
            ("According to round 2, the sum is 600.", "whose call failed"),
            ("根据第2轮的输出，总和是 600。", "whose call failed"),
            (
                "The file says 5432 (list_dir).",
                "list_dir, which has not been called",
            ),
            (
                "According to the output of run_code, it is 9.",
                "run_code, which has not been called",
            ),
        ];
        for (thought, why) in cases {
            let flag = check_thought(thought, 3, &h, TOOLS, false).unwrap_or_default();
            assert!(flag.contains(why), "{thought}: {flag:?}");
        }
        // A round that is not in a resumed run's history either.
        let flag = check_thought("As shown above in round 1, 3.", 2, &[], TOOLS, false);
        assert!(flag.unwrap().contains("not in this run"));
        // Files shown before round 1: an uncited claim may rest on them,
        // a cited round must still exist.
        assert_eq!(check_thought("The file says 3.", 1, &[], TOOLS, true), None);
        let flag = check_thought("As shown above in round 1, 3.", 2, &[], TOOLS, true);
        assert!(flag.unwrap().contains("not in this run"));
    }

    #[test]
    fn a_finish_with_no_successful_call_is_flagged() {
        assert!(check_finish(
            "There are 7 admins.",
            &[entry(1, "read_file", false)],
            false
        )
        .is_some());
        assert!(check_finish("There are 7 admins.", &[], false).is_some());
        assert!(check_finish("There are 7 admins.", &[], true).is_none());
        assert!(check_finish("3", &history(), false).is_none());
        assert!(check_finish("  ", &[], false).is_none());
    }

    #[test]
    fn tool_names_match_whole_words_only() {
        assert!(mentions("used read_file here", "read_file"));
        assert!(!mentions("used read_files here", "read_file"));
        assert!(!mentions("xread_file", "read_file"));
    }
}
