//! `web_search {query, max_results?}`: search through a configured provider.
//!
//! Providers: SearxNG's JSON API (self-hosted, the default when configured),
//! Brave Search and Tavily (hosted, by API key). Every provider's answer is
//! normalised to `[{title, url, snippet}]`.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{json, Map, Value};

use crate::tools::{ParamKind, ParamSpec, Tool, ToolError, ToolSpec};

/// Brave Search's web endpoint.
pub const BRAVE_URL: &str = "https://api.search.brave.com/res/v1/web/search";
/// Tavily's search endpoint.
pub const TAVILY_URL: &str = "https://api.tavily.com/search";

/// Where searches go.
#[derive(Debug, Clone, PartialEq)]
pub enum SearchProvider {
    /// A SearxNG instance (base URL, e.g. `http://localhost:8888`).
    Searxng {
        /// Base URL of the instance.
        base_url: String,
    },
    /// Brave Search API.
    Brave {
        /// Subscription token.
        api_key: String,
        /// Endpoint (overridable for tests and proxies).
        url: String,
    },
    /// Tavily search API.
    Tavily {
        /// API key.
        api_key: String,
        /// Endpoint (overridable for tests and proxies).
        url: String,
    },
}

/// Why no [`SearchProvider`] could be chosen from the environment.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SearchConfigError {
    /// No provider is configured at all (web_search is simply left out).
    #[error("web_search is not available: set HERMES_SEARXNG_URL (a SearxNG instance), BRAVE_API_KEY or TAVILY_API_KEY")]
    NotConfigured,
    /// `HERMES_SEARCH_PROVIDER` picks a provider whose setting is missing.
    #[error("HERMES_SEARCH_PROVIDER={provider} needs {variable}; set it, or unset HERMES_SEARCH_PROVIDER")]
    MissingSetting {
        /// The provider asked for.
        provider: &'static str,
        /// The variable it needs.
        variable: &'static str,
    },
    /// `HERMES_SEARCH_PROVIDER` names no known provider.
    #[error("HERMES_SEARCH_PROVIDER={0} is not one of searxng, brave, tavily")]
    UnknownProvider(String),
}

impl SearchProvider {
    /// The provider from the environment: `HERMES_SEARCH_PROVIDER`
    /// (`searxng`, `brave`, `tavily`) picks one; otherwise the first that is
    /// configured, in that order, from `HERMES_SEARXNG_URL`,
    /// `BRAVE_API_KEY` (`HERMES_BRAVE_URL`), `TAVILY_API_KEY`
    /// (`HERMES_TAVILY_URL`). `Err` says why there is none;
    /// [`SearchConfigError::NotConfigured`] means nothing was asked for.
    pub fn from_env() -> Result<Self, SearchConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok().filter(|v| !v.trim().is_empty()))
    }

    /// Like [`SearchProvider::from_env`], reading variables through `var`.
    pub fn from_lookup(var: impl Fn(&str) -> Option<String>) -> Result<Self, SearchConfigError> {
        let searxng =
            || var("HERMES_SEARXNG_URL").map(|base_url| SearchProvider::Searxng { base_url });
        let brave = || {
            var("BRAVE_API_KEY").map(|api_key| SearchProvider::Brave {
                api_key,
                url: var("HERMES_BRAVE_URL").unwrap_or_else(|| BRAVE_URL.into()),
            })
        };
        let tavily = || {
            var("TAVILY_API_KEY").map(|api_key| SearchProvider::Tavily {
                api_key,
                url: var("HERMES_TAVILY_URL").unwrap_or_else(|| TAVILY_URL.into()),
            })
        };
        let missing = |provider, variable| SearchConfigError::MissingSetting { provider, variable };
        match var("HERMES_SEARCH_PROVIDER")
            .map(|p| p.to_ascii_lowercase())
            .as_deref()
        {
            Some("searxng") => searxng().ok_or(missing("searxng", "HERMES_SEARXNG_URL")),
            Some("brave") => brave().ok_or(missing("brave", "BRAVE_API_KEY")),
            Some("tavily") => tavily().ok_or(missing("tavily", "TAVILY_API_KEY")),
            Some(other) => Err(SearchConfigError::UnknownProvider(other.to_string())),
            None => searxng()
                .or_else(brave)
                .or_else(tavily)
                .ok_or(SearchConfigError::NotConfigured),
        }
    }

    fn name(&self) -> &'static str {
        match self {
            SearchProvider::Searxng { .. } => "SearxNG",
            SearchProvider::Brave { .. } => "Brave Search",
            SearchProvider::Tavily { .. } => "Tavily",
        }
    }
}

/// Searches the web through a [`SearchProvider`].
pub struct WebSearch {
    provider: SearchProvider,
    http: reqwest::Client,
}

impl WebSearch {
    /// The tool for `provider`.
    pub fn new(provider: SearchProvider) -> Self {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(20))
            .build()
            .unwrap_or_default();
        Self { provider, http }
    }

    async fn query(&self, query: &str, count: usize) -> Result<Value, ToolError> {
        let with_query = |base: &str, params: &[(&str, &str)]| {
            reqwest::Url::parse_with_params(base, params)
                .map_err(|e| ToolError::new(format!("bad search URL `{base}`: {e}")))
        };
        let request = match &self.provider {
            SearchProvider::Searxng { base_url } => {
                let base = format!("{}/search", base_url.trim_end_matches('/'));
                self.http
                    .get(with_query(&base, &[("q", query), ("format", "json")])?)
            }
            SearchProvider::Brave { api_key, url } => self
                .http
                .get(with_query(
                    url,
                    &[("q", query), ("count", &count.to_string())],
                )?)
                .header("Accept", "application/json")
                .header("X-Subscription-Token", api_key),
            SearchProvider::Tavily { api_key, url } => self
                .http
                .post(url)
                .bearer_auth(api_key)
                .json(&json!({"query": query, "max_results": count})),
        };
        let provider = self.provider.name();
        let response = request
            .send()
            .await
            .map_err(|e| ToolError::transient(format!("{provider} did not answer: {e}")))?;
        let status = response.status();
        let body = response.text().await.map_err(|e| {
            ToolError::transient(format!("reading {provider}'s answer failed: {e}"))
        })?;
        if !status.is_success() {
            let message = format!(
                "{provider} answered HTTP {status}: {}",
                crate::text::clip(&body, 300)
            );
            return Err(if status.as_u16() == 429 || status.is_server_error() {
                ToolError::transient(message)
            } else {
                ToolError::new(message)
            });
        }
        serde_json::from_str(&body)
            .map_err(|e| ToolError::new(format!("{provider} sent unreadable JSON: {e}")))
    }
}

/// `[{title, url, snippet}]` from a provider's answer.
pub fn normalise(provider: &SearchProvider, answer: &Value, max: usize) -> Vec<Value> {
    let (list, snippet_key) = match provider {
        SearchProvider::Searxng { .. } => (&answer["results"], "content"),
        SearchProvider::Brave { .. } => (&answer["web"]["results"], "description"),
        SearchProvider::Tavily { .. } => (&answer["results"], "content"),
    };
    let text = |v: &Value, k: &str| {
        v.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .trim()
            .to_string()
    };
    list.as_array()
        .map(|items| {
            items
                .iter()
                .filter(|item| !text(item, "url").is_empty())
                .take(max)
                .map(|item| json!({"title": text(item, "title"), "url": text(item, "url"), "snippet": text(item, snippet_key)}))
                .collect()
        })
        .unwrap_or_default()
}

#[async_trait]
impl Tool for WebSearch {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new("web_search", format!("Search the web ({}) and return results as title, url and snippet. Fetch a result's url with http_fetch to read it.", self.provider.name()))
            .param(ParamSpec::new("query", ParamKind::String, "what to search for").required())
            .param(ParamSpec::new("max_results", ParamKind::Integer, "how many results (default 5, at most 20)"))
            .example(json!({"query": "rust actor frameworks comparison", "max_results": 5}))
            .idempotent()
            .untrusted()
    }

    async fn call(&self, args: Map<String, Value>) -> Result<Value, ToolError> {
        let query = super::required_str(&args, "query")?.trim();
        if query.is_empty() {
            return Err(ToolError::new("the query is empty"));
        }
        let max = args
            .get("max_results")
            .and_then(Value::as_u64)
            .unwrap_or(5)
            .clamp(1, 20) as usize;
        let answer = self.query(query, max).await?;
        Ok(json!({"query": query, "results": normalise(&self.provider, &answer, max)}))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_choice_follows_the_environment() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(
            SearchProvider::from_lookup(env(&[])),
            Err(SearchConfigError::NotConfigured)
        );
        assert!(SearchConfigError::NotConfigured
            .to_string()
            .contains("HERMES_SEARXNG_URL"));
        assert_eq!(
            SearchProvider::from_lookup(env(&[("HERMES_SEARCH_PROVIDER", "Tavily")])),
            Err(SearchConfigError::MissingSetting {
                provider: "tavily",
                variable: "TAVILY_API_KEY"
            })
        );
        assert_eq!(
            SearchProvider::from_lookup(env(&[
                ("HERMES_SEARXNG_URL", "http://s"),
                ("BRAVE_API_KEY", "k")
            ]))
            .unwrap(),
            SearchProvider::Searxng {
                base_url: "http://s".into()
            }
        );
        assert!(matches!(
            SearchProvider::from_lookup(env(&[
                ("HERMES_SEARCH_PROVIDER", "brave"),
                ("HERMES_SEARXNG_URL", "http://s"),
                ("BRAVE_API_KEY", "k")
            ]))
            .unwrap(),
            SearchProvider::Brave { .. }
        ));
        assert_eq!(
            SearchProvider::from_lookup(env(&[("HERMES_SEARCH_PROVIDER", "bing")])),
            Err(SearchConfigError::UnknownProvider("bing".into()))
        );
    }

    #[test]
    fn answers_are_normalised() {
        let brave = SearchProvider::Brave {
            api_key: "k".into(),
            url: "u".into(),
        };
        let answer = json!({"web": {"results": [{"title": "T", "url": "https://a", "description": "D"}, {"title": "no url"}]}});
        assert_eq!(
            normalise(&brave, &answer, 5),
            vec![json!({"title": "T", "url": "https://a", "snippet": "D"})]
        );
    }
}
