//! `http_fetch {url, method?, headers?, body?}`: one HTTP request, made safe.
//!
//! Only http and https; redirects are followed by hand (at most 5) so every
//! hop passes the same checks; private, loopback and link-local addresses
//! are refused unless allowed, and the connection is pinned to the address
//! that was checked (no DNS rebinding between check and connect); an
//! optional host allow-list; a timeout and a size cap. HTML is reduced to
//! its title and readable text (html2text); JSON is passed through.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use async_trait::async_trait;
use reqwest::{Method, Url};
use serde_json::{json, Map, Value};

use crate::tools::{ParamKind, ParamSpec, Tool, ToolError, ToolSpec};

/// Settings of the `http_fetch` tool.
#[derive(Debug, Clone)]
pub struct HttpFetchConfig {
    /// Allow private, loopback and link-local addresses (local use only).
    pub allow_private: bool,
    /// When not empty, only these hosts (and their subdomains) may be fetched.
    pub allowed_hosts: Vec<String>,
    /// Limit for the whole request, redirects included.
    pub timeout: Duration,
    /// Largest body read; the rest is dropped and the cut is said.
    pub max_bytes: usize,
    /// Most redirects followed.
    pub max_redirects: usize,
}

impl Default for HttpFetchConfig {
    fn default() -> Self {
        Self {
            allow_private: false,
            allowed_hosts: Vec::new(),
            timeout: Duration::from_secs(20),
            max_bytes: 2 << 20,
            max_redirects: 5,
        }
    }
}

/// Fetches URLs for the agent.
pub struct HttpFetch {
    config: HttpFetchConfig,
}

impl HttpFetch {
    /// The tool with `config`.
    pub fn new(config: HttpFetchConfig) -> Self {
        Self { config }
    }

    /// Refuses URLs the config does not allow; returns the checked address.
    async fn check(&self, url: &Url) -> Result<SocketAddr, ToolError> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(ToolError::new(format!(
                "refused: only http and https URLs can be fetched, not `{}`",
                url.scheme()
            )));
        }
        let host = url
            .host_str()
            .ok_or_else(|| ToolError::new(format!("refused: `{url}` has no host")))?;
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_ascii_lowercase();
        if !self.config.allowed_hosts.is_empty()
            && !self
                .config
                .allowed_hosts
                .iter()
                .any(|h| host == *h || host.ends_with(&format!(".{h}")))
        {
            return Err(ToolError::new(format!(
                "refused: `{host}` is not in the allowed hosts ({})",
                self.config.allowed_hosts.join(", ")
            )));
        }
        let port = url.port_or_known_default().unwrap_or(80);
        let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), port))
            .await
            .map_err(|e| ToolError::transient(format!("cannot resolve `{host}`: {e}")))?
            .collect();
        let first = *addrs
            .first()
            .ok_or_else(|| ToolError::new(format!("`{host}` has no address")))?;
        if !self.config.allow_private {
            if let Some(private) = addrs.iter().find(|a| is_private(a.ip())) {
                // On this machine's own address, a path is most likely a workspace file.
                let hint = match url.path().trim_start_matches('/') {
                    path if private.ip().is_loopback() && !path.is_empty() => {
                        format!("; {}", read_file_hint(path))
                    }
                    _ => String::new(),
                };
                return Err(ToolError::new(format!(
                    "refused: `{host}` resolves to the private or loopback address {}; fetching local networks is disabled{hint}",
                    private.ip()
                )));
            }
        }
        Ok(first)
    }
}

/// Points a model that tried to fetch a workspace file at `read_file`.
fn read_file_hint(path: &str) -> String {
    let args = json!({ "path": path.trim_start_matches("./") });
    format!("a file in the workspace is read with read_file {args}")
}

/// Loopback, private, link-local, unique-local, CGNAT, unspecified,
/// broadcast and multicast addresses (IPv4-mapped IPv6 included).
pub fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || (o[0] == 100 && (64..128).contains(&o[1]))
                || o[0] == 0
        }
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => is_private(IpAddr::V4(v4)),
            None => {
                let first = v6.segments()[0];
                v6.is_loopback()
                    || v6.is_unspecified()
                    || v6.is_multicast()
                    || (first & 0xfe00) == 0xfc00
                    || (first & 0xffc0) == 0xfe80
            }
        },
    }
}

#[async_trait]
impl Tool for HttpFetch {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "http_fetch",
            "Fetch a web page or API on the internet over HTTP(S). HTML comes back as its title and readable text, JSON as JSON. \
             Local and private network addresses are refused. Not for workspace files: read those with read_file.",
        )
        .param(ParamSpec::new("url", ParamKind::String, "the http or https URL").required())
        .param(ParamSpec::new("method", ParamKind::String, "HTTP method (default GET)").one_of(["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"]))
        .param(ParamSpec::new("headers", ParamKind::Object, "extra request headers, name to value"))
        .param(ParamSpec::new("body", ParamKind::String, "request body (JSON text is sent as application/json)"))
        .example(json!({"url": "https://example.com"}))
        .untrusted()
        .timeout(self.config.timeout + Duration::from_secs(5))
    }

    async fn call(&self, args: Map<String, Value>) -> Result<Value, ToolError> {
        let raw = super::required_str(&args, "url")?.trim();
        let mut url = Url::parse(raw).map_err(|e| {
            if raw.contains("://") {
                return ToolError::new(format!("invalid URL: {e}"));
            }
            // No scheme: a web address without it, or (more often) a file.
            ToolError::new(format!(
                "`{raw}` is not a URL (no http:// or https://): for a web page write https://{}; {}",
                raw.trim_start_matches("./"),
                read_file_hint(raw)
            ))
        })?;
        let mut method = Method::from_bytes(
            args.get("method")
                .and_then(Value::as_str)
                .unwrap_or("GET")
                .as_bytes(),
        )
        .map_err(|e| ToolError::new(format!("invalid method: {e}")))?;
        let headers: HashMap<String, String> = args
            .get("headers")
            .and_then(Value::as_object)
            .map(|h| {
                h.iter()
                    .map(|(k, v)| {
                        (
                            k.clone(),
                            v.as_str()
                                .map(str::to_string)
                                .unwrap_or_else(|| v.to_string()),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        let mut body = args.get("body").and_then(Value::as_str).map(str::to_string);
        for _ in 0..=self.config.max_redirects {
            let addr = self.check(&url).await?;
            // A client pinned to the checked address: DNS cannot change between check and connect.
            let client = reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .timeout(self.config.timeout)
                .resolve(url.host_str().unwrap_or_default(), addr)
                .user_agent(concat!("hermes-agent/", env!("CARGO_PKG_VERSION")))
                .build()
                .map_err(|e| ToolError::new(format!("cannot build the HTTP client: {e}")))?;
            let mut request = client.request(method.clone(), url.clone());
            for (name, value) in &headers {
                request = request.header(name, value);
            }
            if let Some(body) = &body {
                if serde_json::from_str::<Value>(body).is_ok()
                    && !headers
                        .keys()
                        .any(|h| h.eq_ignore_ascii_case("content-type"))
                {
                    request = request.header("content-type", "application/json");
                }
                request = request.body(body.clone());
            }
            let response = request.send().await.map_err(|e| {
                if e.is_timeout() {
                    ToolError::transient(format!(
                        "`{url}` did not answer within {:?}",
                        self.config.timeout
                    ))
                } else {
                    ToolError::transient(format!("request to `{url}` failed: {e}"))
                }
            })?;
            if response.status().is_redirection() {
                let location = response
                    .headers()
                    .get("location")
                    .and_then(|l| l.to_str().ok())
                    .unwrap_or_default();
                url = url
                    .join(location)
                    .map_err(|e| ToolError::new(format!("bad redirect from `{url}`: {e}")))?;
                if response.status() != 307 && response.status() != 308 {
                    method = Method::GET;
                    body = None;
                }
                continue;
            }
            return self.read(url, response).await;
        }
        Err(ToolError::new(format!(
            "too many redirects (more than {})",
            self.config.max_redirects
        )))
    }
}

impl HttpFetch {
    async fn read(&self, url: Url, mut response: reqwest::Response) -> Result<Value, ToolError> {
        let status = response.status();
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|c| c.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        let mut bytes = Vec::new();
        let mut cut = false;
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| ToolError::transient(format!("reading `{url}` failed: {e}")))?
        {
            let room = self.config.max_bytes.saturating_sub(bytes.len());
            bytes.extend_from_slice(&chunk[..chunk.len().min(room)]);
            if chunk.len() > room {
                cut = true;
                break;
            }
        }
        let (title, content) = render(&bytes, &content_type);
        let mut data = json!({"url": url.as_str(), "status": status.as_u16(), "content_type": content_type, "content": content});
        if let Some(title) = title {
            data["title"] = Value::String(title);
        }
        if cut {
            data["note"] = Value::String(format!("body cut at {} bytes", self.config.max_bytes));
        }
        if status.is_client_error() || status.is_server_error() {
            let message = format!("HTTP {status} from {url}");
            return Err(if status.is_server_error() {
                ToolError {
                    data,
                    ..ToolError::transient(message)
                }
            } else {
                ToolError::with_data(message, data)
            });
        }
        Ok(data)
    }
}

/// Title and content of a body: readable text for HTML, a value for JSON.
fn render(bytes: &[u8], content_type: &str) -> (Option<String>, Value) {
    let text = String::from_utf8_lossy(bytes);
    let head = text
        .trim_start()
        .get(..256)
        .unwrap_or(text.trim_start())
        .to_ascii_lowercase();
    if content_type.contains("html")
        || head.starts_with("<!doctype html")
        || head.starts_with("<html")
    {
        let title = between(&text, "<title", "</title>").map(|t| {
            t.split_once('>')
                .map_or(t, |(_, rest)| rest)
                .trim()
                .to_string()
        });
        let readable = html2text::from_read(bytes, 100).unwrap_or_else(|_| text.to_string());
        return (
            title.filter(|t| !t.is_empty()),
            Value::String(readable.trim().to_string()),
        );
    }
    if content_type.contains("json") {
        if let Ok(value) = serde_json::from_slice::<Value>(bytes) {
            return (None, value);
        }
    }
    (None, Value::String(text.into_owned()))
}

fn between<'a>(text: &'a str, open: &str, close: &str) -> Option<&'a str> {
    let lower = text.to_ascii_lowercase();
    let start = lower.find(open)? + open.len();
    let end = lower[start..].find(close)? + start;
    text.get(start..end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_ranges_are_recognised() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
        ] {
            assert!(is_private(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["93.184.216.34", "1.1.1.1", "2606:4700::1111"] {
            assert!(!is_private(ip.parse().unwrap()), "{ip}");
        }
    }

    #[test]
    fn html_becomes_title_and_text() {
        let (title, content) = render(b"<html><head><title>Hi there</title></head><body><h1>Head</h1><p>Body text.</p><script>x()</script></body></html>", "text/html");
        assert_eq!(title.as_deref(), Some("Hi there"));
        let content = content.as_str().unwrap().to_string();
        assert!(content.contains("Body text."), "{content}");
    }
}
