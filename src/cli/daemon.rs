//! What the long-running commands (`hermes node`, `hermes serve`) share:
//! reading `--listen` and waiting for the signal that stops them.

use std::net::SocketAddr;

/// The address `--listen` names; the error shows `example`.
pub async fn listen_addr(listen: &str, example: &str) -> Result<SocketAddr, String> {
    let bad =
        |why: String| format!("--listen {listen}: {why} (expected HOST:PORT, e.g. {example})");
    tokio::net::lookup_host(listen)
        .await
        .map_err(|e| bad(e.to_string()))?
        .next()
        .ok_or_else(|| bad("no address".into()))
}

/// Waits for SIGTERM or Ctrl-C and says which on stderr, after `prefix`
/// (`[node]`, `hermes serve:`), followed by `then` (what happens next).
pub async fn wait_for_stop(prefix: &str, then: &str) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = term.recv() => eprintln!("{prefix} SIGTERM{then}"),
                _ = tokio::signal::ctrl_c() => eprintln!("{prefix} interrupted{then}"),
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}
