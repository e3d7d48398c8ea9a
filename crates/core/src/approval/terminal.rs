//! Asking on the terminal: one question at a time on stderr, answered on
//! stdin with `y`, `n` (optionally `n: why`) or `a` (always for this tool
//! in this task). Other executors keep running while one waits.

use std::collections::HashSet;
use std::io::IsTerminal;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, BufReader};

use super::{ApprovalRequest, Approver, Verdict};

/// Where the question is written.
pub type PromptSink = Arc<dyn Fn(&str) + Send + Sync>;

/// Questions on a terminal.
pub struct TerminalApprover {
    input: tokio::sync::Mutex<Box<dyn AsyncBufRead + Unpin + Send>>,
    prompt: PromptSink,
    always: Mutex<HashSet<String>>,
}

/// How many unreadable answers before the question counts as a no.
const TRIES: usize = 3;

impl TerminalApprover {
    /// Asks on stderr and reads stdin; `None` when stdin is not a terminal
    /// (nobody can answer).
    pub fn stdin() -> Option<Self> {
        if !std::io::stdin().is_terminal() {
            return None;
        }
        Some(Self::new(
            BufReader::new(tokio::io::stdin()),
            Arc::new(|text: &str| eprint!("{text}")),
        ))
    }

    /// Asks through `prompt` and reads answers from `input`.
    pub fn new(input: impl AsyncBufRead + Unpin + Send + 'static, prompt: PromptSink) -> Self {
        Self {
            input: tokio::sync::Mutex::new(Box::new(input)),
            prompt,
            always: Mutex::new(HashSet::new()),
        }
    }

    fn always(&self, tool: &str) -> bool {
        self.always
            .lock()
            .map(|a| a.contains(tool))
            .unwrap_or(false)
    }
}

#[async_trait]
impl Approver for TerminalApprover {
    async fn decide(&self, request: &ApprovalRequest) -> Verdict {
        if self.always(&request.tool) {
            return Verdict::yes("terminal (always)");
        }
        // One question at a time; another may have said "always" meanwhile.
        let mut input = self.input.lock().await;
        if self.always(&request.tool) {
            return Verdict::yes("terminal (always)");
        }
        for _ in 0..TRIES {
            (self.prompt)(&format!(
                "\n[approve] {}\n[approve] run it? [y]es / [n]o / [a]lways for {} in this task: ",
                request.summary(),
                request.tool
            ));
            let mut line = String::new();
            match input.read_line(&mut line).await {
                Ok(0) | Err(_) => return Verdict::no("terminal", "the terminal closed"),
                Ok(_) => {}
            }
            let answer = line.trim();
            let (word, note) = match answer.split_once(':') {
                Some((word, note)) => (word.trim(), Some(note.trim().to_string())),
                None => (answer, None),
            };
            match word.to_ascii_lowercase().as_str() {
                "y" | "yes" => {
                    return Verdict {
                        note,
                        ..Verdict::yes("terminal")
                    }
                }
                "a" | "always" => {
                    if let Ok(mut always) = self.always.lock() {
                        always.insert(request.tool.clone());
                    }
                    return Verdict {
                        note,
                        ..Verdict::yes("terminal")
                    };
                }
                "n" | "no" => {
                    return Verdict::no(
                        "terminal",
                        note.filter(|n| !n.is_empty())
                            .unwrap_or_else(|| "declined".into()),
                    )
                }
                _ => (self.prompt)("[approve] answer y, n (or n: why) or a\n"),
            }
        }
        Verdict::no("terminal", "no readable answer")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn approver(answers: &str) -> (TerminalApprover, Arc<Mutex<String>>) {
        let asked = Arc::new(Mutex::new(String::new()));
        let sink = Arc::clone(&asked);
        let approver = TerminalApprover::new(
            std::io::Cursor::new(answers.as_bytes().to_vec()),
            Arc::new(move |text: &str| sink.lock().unwrap().push_str(text)),
        );
        (approver, asked)
    }

    fn call(tool: &str, path: &str) -> ApprovalRequest {
        ApprovalRequest::new(Some("s2"), "writer", 4, tool, &json!({"path": path}))
    }

    #[tokio::test]
    async fn yes_no_and_a_reason_are_read_from_the_terminal() {
        let (approver, asked) = approver("y\nn: not that file\nno\n");
        assert!(approver.decide(&call("write_file", "a")).await.approved);
        let no = approver.decide(&call("write_file", "b")).await;
        assert_eq!(
            (no.approved, no.note.as_deref()),
            (false, Some("not that file"))
        );
        assert_eq!(
            approver
                .decide(&call("write_file", "c"))
                .await
                .note
                .as_deref(),
            Some("declined")
        );
        let asked = asked.lock().unwrap().clone();
        assert!(
            asked.contains("s2 (writer), round 4: write_file({\"path\":\"a\"})"),
            "{asked}"
        );
    }

    #[tokio::test]
    async fn always_covers_the_tool_only_and_garbage_is_asked_again() {
        let (approver, asked) = approver("maybe\na\nn\n");
        assert!(approver.decide(&call("write_file", "a")).await.approved);
        assert!(asked.lock().unwrap().contains("answer y, n"));
        // No question for the same tool again, with other args.
        let again = approver.decide(&call("write_file", "other")).await;
        assert_eq!(
            (again.approved, again.by.as_str()),
            (true, "terminal (always)")
        );
        // Another tool is asked (and refused).
        assert!(!approver.decide(&call("run_code", "x")).await.approved);
    }

    #[tokio::test]
    async fn a_closed_terminal_is_a_no() {
        let (approver, _) = approver("");
        let verdict = approver.decide(&call("write_file", "a")).await;
        assert!(!verdict.approved);
        assert_eq!(verdict.note.as_deref(), Some("the terminal closed"));
    }
}
