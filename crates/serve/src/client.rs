//! A client of a running `hermes serve`: the JSON calls of the `/v1` API
//! and the event stream read block by block. `hermes submit`, `hermes
//! tasks`, `hermes cancel` and `hermes mcp serve --server` all talk to the
//! server through it.

use std::time::Duration;

use serde_json::Value;

/// How long a client waits to connect to a server that does not answer.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the server is and the token to get in.
#[derive(Debug, Clone)]
pub struct Client {
    server: String,
    token: Option<String>,
    http: reqwest::Client,
}

impl Client {
    /// A client of the server at `server` (as `hermes serve` printed it),
    /// sending `token` as a bearer token when given.
    pub fn new(server: &str, token: Option<String>) -> Self {
        Self {
            server: server.trim_end_matches('/').to_string(),
            token,
            http: reqwest::Client::builder()
                .connect_timeout(CONNECT_TIMEOUT)
                .build()
                .unwrap_or_default(),
        }
    }

    /// The server's address.
    pub fn server(&self) -> &str {
        &self.server
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let request = self.http.request(method, format!("{}{path}", self.server));
        match &self.token {
            Some(token) => request.bearer_auth(token),
            None => request,
        }
    }

    /// `GET path`, read as JSON.
    pub async fn get(&self, path: &str) -> Result<Value, String> {
        self.json(self.request(reqwest::Method::GET, path)).await
    }

    /// `POST path` with a JSON body, read as JSON.
    pub async fn post(&self, path: &str, body: &Value) -> Result<Value, String> {
        self.json(self.request(reqwest::Method::POST, path).json(body))
            .await
    }

    /// `DELETE path`, read as JSON.
    pub async fn delete(&self, path: &str) -> Result<Value, String> {
        self.json(self.request(reqwest::Method::DELETE, path)).await
    }

    /// Sends `request` and reads a JSON answer; a refusal is the server's
    /// own `error` text with the HTTP status.
    async fn json(&self, request: reqwest::RequestBuilder) -> Result<Value, String> {
        let response = request
            .send()
            .await
            .map_err(|e| format!("cannot reach {}: {e}", self.server))?;
        let status = response.status();
        let body: Value = response
            .json()
            .await
            .map_err(|e| format!("{}: the answer is not JSON: {e}", self.server))?;
        if status.is_success() {
            Ok(body)
        } else {
            Err(format!(
                "{} ({status})",
                body["error"]
                    .as_str()
                    .unwrap_or("the server refused the request")
            ))
        }
    }

    /// Reads task `id`'s event stream from its first event, handing each
    /// to `on_event` (kind, data), until `task_ended` or the stream ends.
    pub async fn follow(
        &self,
        id: &str,
        mut on_event: impl FnMut(&str, &Value),
    ) -> Result<(), String> {
        let mut response = self
            .request(reqwest::Method::GET, &format!("/v1/tasks/{id}/events"))
            .send()
            .await
            .map_err(|e| format!("cannot reach {}: {e}", self.server))?;
        if !response.status().is_success() {
            return Err(format!("the event stream of {id}: {}", response.status()));
        }
        let mut buffer = String::new();
        loop {
            let chunk = response
                .chunk()
                .await
                .map_err(|e| format!("the event stream of {id} broke: {e}"))?;
            let Some(chunk) = chunk else {
                return Ok(());
            };
            buffer.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = buffer.find("\n\n") {
                let block: String = buffer.drain(..end + 2).collect();
                let (kind, data) = parse_block(&block);
                on_event(&kind, &data);
                if kind == "task_ended" {
                    return Ok(());
                }
            }
        }
    }
}

/// One server-sent event block as (kind, data); data that is not JSON is
/// `null`.
pub fn parse_block(block: &str) -> (String, Value) {
    let mut kind = String::new();
    let mut data = String::new();
    for line in block.lines() {
        if let Some(v) = line.strip_prefix("event:") {
            kind = v.trim().to_string();
        } else if let Some(v) = line.strip_prefix("data:") {
            data.push_str(v.trim_start());
        }
    }
    (kind, serde_json::from_str(&data).unwrap_or(Value::Null))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_gives_its_kind_and_data() {
        let (kind, data) = parse_block("id: 3\nevent: round\ndata: {\"round\": 2}\n\n");
        assert_eq!(kind, "round");
        assert_eq!(data["round"], 2);
        let (kind, data) = parse_block("event: task_ended\ndata: not json\n\n");
        assert_eq!(kind, "task_ended");
        assert!(data.is_null());
    }
}
