//! `Tool::call` is public: a built-in tool called directly, without the
//! toolbox's validation, answers missing or mistyped arguments with an
//! error the model can act on, never a panic.

use hermes::tools::builtin::{
    HttpFetch, HttpFetchConfig, ListDir, ReadFile, RunCode, SearchProvider, WebSearch, WriteFile,
};
use hermes::tools::sandbox::SandboxConfig;
use hermes::tools::{Tool, Workspace};
use serde_json::{json, Map, Value};

fn args(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap()
}

fn tools(workspace: &Workspace) -> Vec<Box<dyn Tool>> {
    vec![
        Box::new(ReadFile::new(workspace.clone())),
        Box::new(WriteFile::new(workspace.clone())),
        Box::new(ListDir::new(workspace.clone())),
        Box::new(RunCode::new(SandboxConfig::new(workspace.root()))),
        Box::new(HttpFetch::new(HttpFetchConfig::default())),
        Box::new(WebSearch::new(SearchProvider::Searxng {
            base_url: "http://127.0.0.1:1".into(),
        })),
    ]
}

#[tokio::test]
async fn empty_args_are_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = Workspace::new(dir.path()).unwrap();
    for tool in tools(&workspace) {
        let spec = tool.spec();
        let required: Vec<_> = spec.params.iter().filter(|p| p.required).collect();
        let result = tool.call(Map::new()).await;
        if required.is_empty() {
            // list_dir: every parameter is optional ("." is the root).
            assert!(result.is_ok(), "{}: {result:?}", spec.name);
            continue;
        }
        let error = result.expect_err(&spec.name);
        assert!(
            required.iter().any(|p| error
                .message
                .contains(&format!("missing required parameter `{}`", p.name))),
            "{}: {}",
            spec.name,
            error.message
        );
    }
}

#[tokio::test]
async fn mistyped_args_are_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = Workspace::new(dir.path()).unwrap();
    let cases = [
        ("read_file", json!({"path": 3})),
        ("write_file", json!({"path": "a.txt", "content": ["x"]})),
        ("run_code", json!({"language": "cobol", "code": "x"})),
        ("run_code", json!({"language": "python", "code": null})),
        (
            "http_fetch",
            json!({"url": {"href": "https://example.com"}}),
        ),
        ("web_search", json!({"query": 42})),
    ];
    let tools = tools(&workspace);
    for (name, bad) in cases {
        let tool = tools.iter().find(|t| t.spec().name == name).unwrap();
        let error = tool.call(args(bad.clone())).await.expect_err(name);
        assert!(
            error.message.contains("parameter `"),
            "{name} {bad}: {}",
            error.message
        );
    }
    assert!(
        !dir.path().join("a.txt").exists(),
        "nothing is written on bad args"
    );
}
