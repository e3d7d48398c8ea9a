//! `hermes mcp serve`: the service as an MCP server on stdio, so an MCP
//! client (an IDE, another agent) can hand complex tasks to Hermes.
//!
//! - [`desk`]: where the work goes, a service in this process or a
//!   running `hermes serve` over HTTP;
//! - [`handler`]: the tools, their schemas, their calls.

pub mod desk;
pub mod handler;

pub use desk::Desk;
pub use handler::McpFace;

use rmcp::ServiceExt;

/// Serves the MCP protocol on this process's stdin and stdout until the
/// client closes them.
pub async fn serve_stdio(desk: Desk) -> Result<(), String> {
    let running = McpFace::new(desk)
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| format!("the MCP client did not start a session: {e}"))?;
    running
        .waiting()
        .await
        .map(|_| ())
        .map_err(|e| format!("the MCP session failed: {e}"))
}
