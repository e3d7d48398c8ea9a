//! **Code vote**: before the model's Python program acts, other programs
//! are drawn for the same round and every one is tried; when at least two
//! draws agree on an outcome, and no fewer answers agree with the model's,
//! the first that gave it acts in the model's place.
//!
//! A draw whose outcome shows the one number the model's shows, in files
//! of the same names, votes with the model's however it words it (`44.1`
//! and `Total distance in km: 44.1 km`): the vote is over what the
//! programs computed, and the model's program keeps its words (EVALS.md,
//! section 46).
//!
//! Why: in the dev suite's journals (EVALS.md, section 35) most failed
//! runs that ran code ran a program that *succeeded* and computed the
//! wrong thing: it counted every row where the goal asked for one kind,
//! summed one file of three, compared numbers as text, subtracted one
//! from a count that `DictReader` had already made right. Nothing failed,
//! so the code redraw had nothing to act on, and a note asking the model
//! to check itself was measured before to change nothing (sections 23
//! and 33). This is self-consistency, with the programs' outcomes (what
//! they print and the files they write, run on a copy) as the answers
//! that are counted. Drawn from the same prompt, the samples mostly share
//! the model's misreading (EVALS.md, section 35), hence the reread below. The model is told nothing; the round shows the
//! program that acted.
//!
//! The draws are asked with the goal said once more at the end of their
//! conversation ([`Redraw::reread`]): the model's own answer read the goal
//! at the top of a long prompt, and a slip of reading is what the vote is
//! for. Two draws that agree win over the model's program unless more
//! answers agree with it (a tie of two against two goes to the draws,
//! which read the goal again; one draw alone never wins).
//!
//! Only Python that runs no workspace script is put to a vote (a script's
//! output is what the model must see, whatever program runs it), at most
//! [`MAX_PER_RUN`] times per run. A drawn program that reads none of the
//! workspace's files, where the model's read some, does not vote.

use super::code_redraw::{reads_if_it_read, runs_a_script};
use super::{Redraw, Steer, SteerContext};
use crate::decision::Decision;
use crate::tools::ToolEffect;

/// The steer's name (switches, journals).
pub const NAME: &str = "code_vote";

/// Programs drawn to vote with the model's: with the engine's batching,
/// three more cost little more than one.
pub const DRAWS: u32 = 3;

/// The temperature they are drawn at: enough that they differ.
pub const TEMPERATURE: f32 = 0.7;

/// Most rounds of one run whose program is put to a vote.
pub const MAX_PER_RUN: usize = 2;

/// The code vote as a steer.
pub struct CodeVote;

impl Steer for CodeVote {
    fn name(&self) -> &'static str {
        NAME
    }

    fn about(&self) -> &'static str {
        "before the model's Python program acts (not one that runs a workspace script), draws 3 others with the goal read again and tries all 4 on a copy; an outcome that at least 2 draws give, and no fewer than give the model's, acts in its place (2 rounds per run at most)"
    }

    fn vote(&self, cx: &SteerContext<'_>, decision: &Decision) -> Option<Redraw> {
        let runs_code = cx.toolbox.first_with(ToolEffect::RunsCode)?;
        let args = &decision.action.args;
        let code = args["code"].as_str().unwrap_or_default();
        if decision.action.name != runs_code
            || args["language"].as_str() != Some("python")
            || code.trim().is_empty()
            || runs_a_script(code)
        {
            return None;
        }
        let voted = super::redrawn_rounds(cx, NAME);
        (voted < MAX_PER_RUN).then(|| Redraw {
            draws: DRAWS,
            temperature: TEMPERATURE,
            among: vec![runs_code.to_string()],
            reread: true,
        })
    }

    fn eligible(&self, cx: &SteerContext<'_>, decision: &Decision, candidate: &Decision) -> bool {
        reads_if_it_read(cx, decision, candidate)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::agent::steer::{test_context, GoalFiles};
    use crate::journal::{JournalEntry, RedrawRecord};
    use crate::tools::builtin::{register_file_tools, RunCode};
    use crate::tools::sandbox::SandboxConfig;
    use crate::tools::{Toolbox, Workspace};

    fn code(language: &str, code: &str) -> Decision {
        let reply = json!({"thought": "", "action": {"name": "run_code", "args": {"language": language, "code": code}}});
        crate::decision::parse_decision(&reply.to_string()).unwrap()
    }

    fn vote_with(history: &[JournalEntry], decision: &Decision) -> Option<Redraw> {
        let dir = tempfile::tempdir().unwrap();
        let mut toolbox = Toolbox::new();
        register_file_tools(&mut toolbox, &Workspace::new(dir.path()).unwrap());
        toolbox.register(RunCode::new(SandboxConfig::new(dir.path())));
        let goal = "Count the admins in users.csv and write the number to answer.txt.";
        let files = GoalFiles::of(goal, &toolbox);
        let cx = test_context(goal, &files, &toolbox, history);
        CodeVote.vote(&cx, decision)
    }

    #[test]
    fn the_models_python_is_put_to_a_vote_among_programs() {
        let program = code(
            "python",
            "import csv\nprint(len(list(csv.DictReader(open('users.csv')))))",
        );
        let vote = vote_with(&[], &program).expect("a vote");
        assert_eq!(vote.among, ["run_code"]);
        assert_eq!(vote.draws, DRAWS);
        assert!(vote.temperature > 0.5);
        assert!(vote.reread);
    }

    #[test]
    fn bash_a_workspace_script_and_other_tools_are_not() {
        assert!(vote_with(&[], &code("bash", "wc -l users.csv")).is_none());
        assert!(vote_with(
            &[],
            &code(
                "python",
                "import subprocess\nsubprocess.run(['python3', 'calc.py'])"
            )
        )
        .is_none());
        assert!(vote_with(&[], &code("python", "  ")).is_none());
        let read = crate::decision::parse_decision(
            &json!({"thought": "", "action": {"name": "read_file", "args": {"path": "users.csv"}}})
                .to_string(),
        )
        .unwrap();
        assert!(vote_with(&[], &read).is_none());
    }

    #[test]
    fn two_rounds_per_run_at_most() {
        let program = code("python", "print(1 + 1)");
        let mut entry = JournalEntry::new(1, "", "run_code", json!({}));
        entry.redraw = Some(Box::new(RedrawRecord {
            by: NAME.into(),
            drawn: DRAWS,
            ran: 3,
            kept: None,
            replaced: None,
            tally: vec![4],
            judge: None,
        }));
        let history = vec![entry; MAX_PER_RUN - 1];
        assert!(vote_with(&history, &program).is_some());
        let history = vec![history[0].clone(); MAX_PER_RUN];
        assert!(vote_with(&history, &program).is_none());
    }
}
