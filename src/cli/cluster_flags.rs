//! Cluster flags: `--connect`/`--cookie`/`--local-only` on `hermes plan`,
//! and the TLS files both sides take.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use hermes::cluster::{ClusterConfig, Notice, TlsFiles};

/// TLS files for node sessions.
#[derive(Debug, Clone, Default, Args)]
pub struct TlsArgs {
    /// This side's certificate chain (PEM): a node's server certificate, or
    /// a planner's client certificate when nodes require one.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// The CA (PEM) that signed the other side's certificate: on a planner,
    /// the nodes' CA (turns TLS on); on a node, clients must present a
    /// certificate it signed.
    #[arg(long, value_name = "FILE")]
    pub tls_ca: Option<PathBuf>,
}

impl TlsArgs {
    /// The files as the library takes them.
    pub fn files(&self) -> TlsFiles {
        TlsFiles {
            cert: self.tls_cert.clone(),
            key: self.tls_key.clone(),
            ca: self.tls_ca.clone(),
        }
    }
}

/// How `hermes plan` uses worker nodes.
#[derive(Debug, Clone, Default, Args)]
pub struct ConnectArgs {
    /// A worker node (`hermes node`) to run subtasks of the roles it
    /// serves; repeat for several nodes.
    #[arg(long = "connect", value_name = "HOST:PORT")]
    pub connect: Vec<String>,
    /// The cluster's shared secret (the same on every node and planner).
    #[arg(
        long,
        env = "HERMES_COOKIE",
        hide_env_values = true,
        value_name = "SECRET"
    )]
    pub cookie: Option<String>,
    /// Run every subtask here, even when nodes are given.
    #[arg(long)]
    pub local_only: bool,
    #[command(flatten)]
    pub tls: TlsArgs,
}

impl ConnectArgs {
    /// The cluster setup, or `None` when no node is to be used.
    pub fn config(&self) -> Result<Option<ClusterConfig>, String> {
        if self.connect.is_empty() || self.local_only {
            return Ok(None);
        }
        let Some(cookie) = self.cookie.clone() else {
            return Err("--connect needs --cookie SECRET (or HERMES_COOKIE), the secret the nodes were started with".into());
        };
        Ok(Some(ClusterConfig {
            connect: self.connect.clone(),
            cookie,
            tls: self.tls.files(),
            notices: Some(Arc::new(|notice: &Notice| eprintln!("[cluster] {notice}"))),
        }))
    }
}
