//! **Instructions in a file**: a goal that hands its work to a file of
//! the workspace ("Follow the steps in instructions.md.", "Do what
//! TODO.txt lists.") has that file's text read into the work the steers
//! read, before round 1.
//!
//! Why: such a goal names one file and nothing to write, so every check
//! that knows the goal's files knows nothing: the finish check cannot see
//! that `shortlist.txt`, which only the instructions name, was never
//! written (a dev run's `finish` in round 1, a summary of the steps and
//! no file, was taken as done; EVALS.md section 37), the write offer has
//! no file to offer, the input preview does not show the data the steps
//! read, and the code vote's draws read the goal again without its steps. With the file's
//! text joined to the work, the files its steps name are the goal's files
//! like any others (outputs absent before round 1, inputs present), and
//! every steer treats them so. The model's own prompt is unchanged: the
//! goal as given, the file shown whole by the input preview.
//!
//! Only a goal that says to carry something out (follow, do, carry out,
//! complete, perform, execute, apply, work through, and their German,
//! Spanish, French, Portuguese, Chinese and Japanese counterparts), names
//! exactly one file that is there, and no file to write, is read so; the
//! file must be small text.

use super::goal_files;
use super::Steer;
use crate::tools::Toolbox;

/// The steer's name (switches, journals).
pub const NAME: &str = "instructions_file";

/// The largest instructions file read into the work, in bytes.
pub const FILE_MAX: u64 = 4_000;

/// Verbs that hand the work to a file, one word each (lower case).
const CARRY_OUT_WORDS: &[&str] = &[
    "follow", "do", "complete", "perform", "execute", "apply", "befolge", "folge", "führe",
    "erledige", "sigue", "haz", "realiza", "ejecuta", "completa", "cumple", "suis", "fais",
    "effectue", "exécute", "applique", "siga", "faça", "realize", "cumpra",
];

/// The same, two words apart by whitespace.
const CARRY_OUT_PAIRS: &[(&str, &str)] =
    &[("carry", "out"), ("work", "through"), ("go", "through")];

/// The same in scripts written without spaces, found anywhere.
const CARRY_OUT_PHRASES: &[&str] = &["按照", "照着", "执行", "完成", "従って", "実行"];

/// Whether `goal` says to carry something out: one of the verbs as a whole
/// word in any case, a pair of them apart by whitespace only, or a phrase.
/// (A word list, not a regular expression: the expression, with its case
/// folding over 30 alternatives, cost about 6 million instructions to
/// compile, once per process, on the first run.)
fn carries_out(goal: &str) -> bool {
    if CARRY_OUT_PHRASES.iter().any(|phrase| goal.contains(phrase)) {
        return true;
    }
    let mut previous: Option<(String, usize)> = None;
    for (start, end) in word_spans(goal) {
        let word = goal[start..end].to_lowercase();
        if CARRY_OUT_WORDS.contains(&word.as_str()) {
            return true;
        }
        if let Some((first, first_end)) = &previous {
            let apart = goal[*first_end..start].chars().all(char::is_whitespace);
            if apart && CARRY_OUT_PAIRS.contains(&(first.as_str(), word.as_str())) {
                return true;
            }
        }
        previous = Some((word, end));
    }
    false
}

/// The byte spans of `text`'s words: runs of letters, digits and `_`.
fn word_spans(text: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    let mut chars = text.char_indices().peekable();
    std::iter::from_fn(move || {
        let (start, _) = chars.find(|&(_, c)| is_word(c))?;
        let mut end = text.len();
        while let Some(&(i, c)) = chars.peek() {
            if !is_word(c) {
                end = i;
                break;
            }
            chars.next();
        }
        Some((start, end))
    })
}

/// Instructions in a file as a steer: the work's extension.
pub struct InstructionsFile;

impl Steer for InstructionsFile {
    fn name(&self) -> &'static str {
        NAME
    }

    fn about(&self) -> &'static str {
        "reads the file of a goal that only says to carry it out (\"Follow the steps in instructions.md.\") into the work the steers read, so the files its steps name are the goal's files"
    }

    fn work(&self, goal: &str, toolbox: &Toolbox) -> Option<String> {
        let (file, text) = instructions(goal, toolbox)?;
        Some(format!("{goal}\n\nThe steps of {file}:\n{text}"))
    }
}

/// The file `goal` hands its work to, with its text: `None` unless the
/// goal says to carry something out, names exactly one file that is in
/// `toolbox`'s workspace and none to write, and that file is text of at
/// most [`FILE_MAX`] bytes.
pub fn instructions(goal: &str, toolbox: &Toolbox) -> Option<(String, String)> {
    if !carries_out(goal) {
        return None;
    }
    if !goal_files::outputs(goal, toolbox).is_empty() {
        return None;
    }
    let [file] = <[String; 1]>::try_from(goal_files::inputs(goal, toolbox, &[])).ok()?;
    let path = toolbox.workspace()?.resolve(&file).ok()?;
    if std::fs::metadata(&path).ok()?.len() > FILE_MAX {
        return None;
    }
    let text = std::fs::read_to_string(&path).ok()?;
    Some((file, text.trim_end().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::steer::GoalFiles;
    use crate::tools::builtin::register_file_tools;
    use crate::tools::Workspace;
    use regex::Regex;

    const STEPS: &str = "# How to prepare the word list\n\nTake every word in words.txt that has more than four letters.\nWrite them in UPPER CASE to shortlist.txt.\n";

    fn workspace(files: &[(&str, &str)]) -> (tempfile::TempDir, Toolbox) {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        let mut toolbox = Toolbox::new();
        register_file_tools(&mut toolbox, &Workspace::new(dir.path()).unwrap());
        (dir, toolbox)
    }

    #[test]
    fn a_goal_that_hands_its_work_to_a_file_reads_it_and_its_files_become_the_goals() {
        let (_dir, toolbox) = workspace(&[("instructions.md", STEPS), ("words.txt", "fig\n")]);
        let goal = "Follow the steps in instructions.md.";
        let work = InstructionsFile.work(goal, &toolbox).unwrap();
        assert!(
            work.starts_with(goal) && work.contains("shortlist.txt"),
            "{work}"
        );
        let files = GoalFiles::of(&work, &toolbox);
        assert_eq!(files.outputs, ["shortlist.txt"]);
        assert_eq!(files.inputs, ["instructions.md", "words.txt"]);
        // Other languages say it their way.
        for goal in [
            "Sigue los pasos de instructions.md.",
            "按照 instructions.md 里的步骤做。",
            "Do what instructions.md says.",
        ] {
            assert!(instructions(goal, &toolbox).is_some(), "{goal}");
        }
    }

    #[test]
    fn a_goal_with_its_own_file_to_write_or_nothing_to_carry_out_is_left_alone() {
        let (_dir, toolbox) = workspace(&[("instructions.md", STEPS), ("words.txt", "fig\n")]);
        // It names what to write: the goal says it all.
        assert_eq!(
            instructions(
                "Follow instructions.md and write the count to answer.txt.",
                &toolbox
            ),
            None
        );
        // Nothing to carry out.
        assert_eq!(
            instructions("Summarise instructions.md in one line.", &toolbox),
            None
        );
        // Two files: which one holds the steps is not for a rule to guess.
        assert_eq!(
            instructions("Follow instructions.md using words.txt.", &toolbox),
            None
        );
        // A file that is not there.
        assert_eq!(instructions("Follow the steps in plan.md.", &toolbox), None);
    }

    #[test]
    fn a_large_file_is_not_read_into_the_work() {
        let big = "Write a line to out.txt.\n".repeat(200);
        let (_dir, toolbox) = workspace(&[("steps.txt", &big)]);
        assert_eq!(instructions("Do the steps in steps.txt.", &toolbox), None);
    }
    #[test]
    fn the_word_list_says_what_the_regular_expression_it_replaced_said() {
        let oracle = Regex::new(
            r"(?ix)
            \b(follow|do|carry\s+out|complete|perform|execute|apply|work\s+through|go\s+through|
               befolge|folge|führe|erledige|
               sigue|haz|realiza|ejecuta|completa|cumple|
               suis|fais|effectue|exécute|applique|
               siga|faça|realize|execute|cumpra)\b
            |按照|照着|执行|完成|従って|実行",
        )
        .unwrap();
        let goals = [
            "Follow the steps in instructions.md.",
            "FOLLOW steps.txt",
            "Following the plan, write a.txt",
            "Do what TODO.txt lists.",
            "todo.txt lists things",
            "do_this.txt",
            "Carry out the plan in plan.md",
            "carry  \n out plan.md",
            "carry-out plan.md",
            "carryout plan.md",
            "Work through checklist.md.",
            "go through, then",
            "Go   through list.md",
            "Führe die Schritte in anleitung.md aus.",
            "führen Sie aus",
            "Exécute le plan.md",
            "Haz lo que dice tareas.txt",
            "Faça o que pede tarefas.txt",
            "按照 steps.txt 的步骤",
            "请执行 plan.md",
            "手順.md に従って実行する",
            "Count the rows of data.csv.",
            "Summarise notes.txt into summary.md",
            "Apply the patch",
            "applying nothing",
            "Complete the form in form.md",
            "completa la lista",
            "",
            "do",
            "x do. y",
            "undo the change",
        ];
        for goal in goals {
            assert_eq!(carries_out(goal), oracle.is_match(goal), "{goal:?}");
        }
    }
}
