//! A person in the loop: calls the policy names wait for an answer from a
//! terminal, an HTTP client or a configured policy, never from the model.
//!
//! - [`policy`]: which calls need approval (rules by tool, with conditions);
//! - [`terminal`]: asking on the terminal, one question at a time.
//!
//! An approval is bound to the exact call: the request carries the tool,
//! its canonical args and their hash (the journal's `args_hash`); a yes
//! runs that call only, and a changed argument asks again. No answer
//! within the timeout, no terminal, or a no: the call does not run, the
//! observation says why, and the loop goes on. The journal records who
//! or what decided and when ([`ApprovalRecord`]).

pub mod policy;
pub mod terminal;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use policy::{ApprovalPolicy, ApprovalRule, RuleSpec};
pub use terminal::TerminalApprover;

/// How long a call waits for an answer by default.
pub const DEFAULT_APPROVAL_TIMEOUT: Duration = Duration::from_secs(300);

/// One call waiting for approval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalRequest {
    /// Names this call: the same subtask, round and args give the same id
    /// (a restarted run asking again finds its earlier question).
    pub call_id: String,
    /// The subtask, in a plan (`None` in a single run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subtask: Option<String>,
    /// The role of the agent asking.
    pub role: String,
    /// The round of the loop.
    pub round: u32,
    /// The tool.
    pub tool: String,
    /// Its arguments, as they will run.
    pub args: Value,
    /// The hash of tool and canonical args (the journal's `args_hash`).
    pub args_hash: String,
    /// Why it asks, when not only a rule for the tool (a call right after
    /// untrusted text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl ApprovalRequest {
    /// The request for `tool(args)` in `round` of `subtask` (or a run).
    pub fn new(subtask: Option<&str>, role: &str, round: u32, tool: &str, args: &Value) -> Self {
        let args_hash = crate::journal::action_hash(tool, args);
        Self {
            call_id: format!("{}-r{round}-{}", subtask.unwrap_or("run"), &args_hash[..8]),
            subtask: subtask.map(str::to_string),
            role: role.to_string(),
            round,
            tool: tool.to_string(),
            args: args.clone(),
            args_hash,
            reason: None,
        }
    }

    /// The call in one line, for a prompt.
    pub fn summary(&self) -> String {
        let args = serde_json::to_string(&self.args).unwrap_or_default();
        let place = match &self.subtask {
            Some(subtask) => format!("{subtask} ({}), round {}", self.role, self.round),
            None => format!("round {}", self.round),
        };
        let why = self
            .reason
            .as_deref()
            .map(|r| format!(" [{r}]"))
            .unwrap_or_default();
        format!(
            "{place}: {}({}){why}",
            self.tool,
            crate::text::clip(&args, 600)
        )
    }
}

/// An approver's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    /// Whether the call may run.
    pub approved: bool,
    /// Who or what decided: `terminal`, `http`, `policy`, `timeout`,
    /// `no terminal`.
    pub by: String,
    /// What the person said, if anything.
    pub note: Option<String>,
}

impl Verdict {
    /// A yes from `by`.
    pub fn yes(by: &str) -> Self {
        Self {
            approved: true,
            by: by.into(),
            note: None,
        }
    }

    /// A no from `by`, with why.
    pub fn no(by: &str, note: impl Into<String>) -> Self {
        Self {
            approved: false,
            by: by.into(),
            note: Some(note.into()),
        }
    }
}

/// What the journal keeps of a decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalRecord {
    /// The call's id.
    pub call_id: String,
    /// Whether it ran.
    pub approved: bool,
    /// Who or what decided.
    pub by: String,
    /// When (RFC 3339, UTC).
    pub at: String,
    /// What the person said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl ApprovalRecord {
    /// What the model is told when the call did not run.
    pub fn refusal(&self) -> String {
        let why = self.note.as_deref().unwrap_or("no reason given");
        match self.by.as_str() {
            "timeout" => format!("not run: nobody approved this call in time ({why}); choose another way or finish with what you have"),
            "no terminal" => format!("not run: this call needs a person's approval and there is no terminal to ask ({why}); choose another way"),
            by => format!("not run: refused by a person ({by}): {why}; choose another way"),
        }
    }
}

/// Where the question goes: a terminal, an HTTP client, a policy. Only
/// these answer; nothing the model writes reaches them.
#[async_trait]
pub trait Approver: Send + Sync {
    /// The answer for `request` (waits as long as it takes; the caller
    /// bounds the wait).
    async fn decide(&self, request: &ApprovalRequest) -> Verdict;
}

/// Says yes to everything (`--approve-all`).
pub struct ApproveAll;

#[async_trait]
impl Approver for ApproveAll {
    async fn decide(&self, _request: &ApprovalRequest) -> Verdict {
        Verdict::yes("policy")
    }
}

/// Says no to everything: there is nobody to ask.
pub struct NobodyToAsk;

#[async_trait]
impl Approver for NobodyToAsk {
    async fn decide(&self, _request: &ApprovalRequest) -> Verdict {
        Verdict::no(
            "no terminal",
            "stdin is not a terminal; give --approve-all to accept such calls",
        )
    }
}

/// A policy, who answers, and how long a call waits: what an agent
/// checks before each call.
#[derive(Clone)]
pub struct Approvals {
    policy: ApprovalPolicy,
    approver: Arc<dyn Approver>,
    timeout: Duration,
}

impl Approvals {
    /// Calls `policy` names ask `approver`, waiting at most `timeout`.
    pub fn new(policy: ApprovalPolicy, approver: Arc<dyn Approver>, timeout: Duration) -> Self {
        Self {
            policy,
            approver,
            timeout,
        }
    }

    /// The same approver and timeout with `extra` rules added (a role's).
    pub fn with_rules(&self, extra: &ApprovalPolicy) -> Self {
        Self {
            policy: self.policy.clone().with(extra),
            ..self.clone()
        }
    }

    /// The policy.
    pub fn policy(&self) -> &ApprovalPolicy {
        &self.policy
    }

    /// How long a call waits for its answer.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The approver's answer for `request`, asked without checking the
    /// policy (the caller already did: an executor on another node asking
    /// through its planner); no answer within the timeout is a no.
    pub async fn ask(&self, request: &ApprovalRequest) -> Verdict {
        match tokio::time::timeout(self.timeout, self.approver.decide(request)).await {
            Ok(verdict) => verdict,
            Err(_) => Verdict::no(
                "timeout",
                format!("no answer within {} s", self.timeout.as_secs()),
            ),
        }
    }

    /// `None` when `request`'s call needs no approval; else the decision
    /// (a timeout is a no). `effect` is what the tool does; `untrusted`,
    /// the tool and text of the previous round when it came from outside.
    pub async fn check(
        &self,
        request: &ApprovalRequest,
        effect: crate::tools::ToolEffect,
        untrusted: Option<(&str, &str)>,
    ) -> Option<ApprovalRecord> {
        let reason = self
            .policy
            .untrusted_reason(&request.tool, &request.args, effect, untrusted);
        if reason.is_none() && !self.policy.needs(&request.tool, &request.args) {
            return None;
        }
        let request = &ApprovalRequest {
            reason,
            ..request.clone()
        };
        let verdict = self.ask(request).await;
        Some(ApprovalRecord {
            call_id: request.call_id.clone(),
            approved: verdict.approved,
            by: verdict.by,
            at: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
            note: verdict.note,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    struct Never;

    #[async_trait]
    impl Approver for Never {
        async fn decide(&self, _request: &ApprovalRequest) -> Verdict {
            std::future::pending().await
        }
    }

    fn policy(flag: &str) -> ApprovalPolicy {
        ApprovalPolicy::new(vec![ApprovalRule::parse_flag(flag).unwrap()])
    }

    #[test]
    fn a_call_id_is_bound_to_the_exact_call() {
        let a = ApprovalRequest::new(
            Some("s1"),
            "coder",
            3,
            "write_file",
            &json!({"path": "a", "content": "x"}),
        );
        let same = ApprovalRequest::new(
            Some("s1"),
            "coder",
            3,
            "write_file",
            &json!({"content": "x", "path": "a"}),
        );
        let changed = ApprovalRequest::new(
            Some("s1"),
            "coder",
            3,
            "write_file",
            &json!({"path": "a", "content": "y"}),
        );
        assert_eq!(a.call_id, same.call_id);
        assert_ne!(a.call_id, changed.call_id);
        assert!(a.call_id.starts_with("s1-r3-"), "{}", a.call_id);
        assert_eq!(
            a.args_hash,
            crate::journal::action_hash("write_file", &a.args)
        );
    }

    #[tokio::test]
    async fn no_answer_in_time_is_a_no_and_unlisted_calls_are_not_asked() {
        let approvals = Approvals::new(
            policy("write_file"),
            Arc::new(Never),
            Duration::from_millis(20),
        );
        let ask = ApprovalRequest::new(None, "agent", 1, "write_file", &json!({"path": "a"}));
        let record = approvals
            .check(&ask, crate::tools::ToolEffect::Writes, None)
            .await
            .unwrap();
        assert!(!record.approved);
        assert_eq!(record.by, "timeout");
        assert!(record.refusal().contains("in time"), "{}", record.refusal());
        let read = ApprovalRequest::new(None, "agent", 1, "read_file", &json!({"path": "a"}));
        assert!(approvals
            .check(&read, crate::tools::ToolEffect::Reads, None)
            .await
            .is_none());
        let all = Approvals::new(policy("*"), Arc::new(ApproveAll), Duration::from_secs(1));
        assert_eq!(
            all.check(&read, crate::tools::ToolEffect::Reads, None)
                .await
                .unwrap()
                .by,
            "policy"
        );
        let nobody = Approvals::new(policy("*"), Arc::new(NobodyToAsk), Duration::from_secs(1));
        let record = nobody
            .check(&read, crate::tools::ToolEffect::Reads, None)
            .await
            .unwrap();
        assert!(!record.approved && record.refusal().contains("no terminal"));
    }
}
