//! Approval flags of `run`, `plan` and `serve`: which calls wait for a
//! person (`--approve TOOL[:COND]`, added to the roles' `approve` rules),
//! `--approve-all` for scripts, and how long a call waits.

use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use hermes::approval::{
    ApprovalPolicy, ApprovalRule, Approvals, ApproveAll, Approver, NobodyToAsk, TerminalApprover,
};

use super::output::parse_seconds;

/// Which calls wait for a person's approval.
#[derive(Debug, Clone, Default, Args)]
pub struct ApproveArgs {
    /// Calls of TOOL wait for a person's yes before they run (`*`: every
    /// tool); COND lets some through: `unless_path=out/**` or
    /// `unless_host=docs.rs` (several values: commas; several conditions:
    /// `;`). Repeat for more tools; roles add their own `approve` rules.
    #[arg(long = "approve", value_name = "TOOL[:COND]")]
    pub approve: Vec<String>,
    /// Also ask before a call made right after reading untrusted text
    /// (http_fetch, web_search, MCP tools) that runs code, or writes a file
    /// or fetches a URL that the text names.
    #[arg(long)]
    pub approve_after_untrusted: bool,
    /// Say yes to every call that needs approval, without asking (for
    /// scripts; the journal records `policy` as who decided).
    #[arg(long)]
    pub approve_all: bool,
    /// How long a call waits for an answer before it is refused.
    #[arg(long, default_value = "300", value_parser = parse_seconds, value_name = "SECS")]
    pub approval_timeout: Duration,
}

impl ApproveArgs {
    /// The rules of the --approve flags.
    pub fn policy(&self) -> Result<ApprovalPolicy, String> {
        let rules = self
            .approve
            .iter()
            .map(|flag| ApprovalRule::parse_flag(flag))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ApprovalPolicy::new(rules).after_untrusted(self.approve_after_untrusted))
    }

    /// The rules, answered on this terminal (`--approve-all`: by policy;
    /// no terminal: refused).
    pub fn on_terminal(&self) -> Result<Approvals, String> {
        let approver: Arc<dyn Approver> = if self.approve_all {
            Arc::new(ApproveAll)
        } else {
            match TerminalApprover::stdin() {
                Some(terminal) => Arc::new(terminal),
                None => Arc::new(NobodyToAsk),
            }
        };
        self.with_approver(approver)
    }

    /// The rules, answered by `approver` (`--approve-all` overrides it).
    pub fn with_approver(&self, approver: Arc<dyn Approver>) -> Result<Approvals, String> {
        let approver: Arc<dyn Approver> = if self.approve_all {
            Arc::new(ApproveAll)
        } else {
            approver
        };
        Ok(Approvals::new(
            self.policy()?,
            approver,
            self.approval_timeout,
        ))
    }
}
