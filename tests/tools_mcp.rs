//! MCP tools against a real MCP server the project did not write:
//! `@modelcontextprotocol/server-everything` from the npm registry, which
//! `.ci/run` installs under `.ci/node` (or point HERMES_TEST_MCP_SERVER at
//! its `mcp-server-everything` binary).

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::{decision, finish, hermes, Reply, ScriptedServer};
use hermes::tools::mcp::{connect, register_servers, McpServerConfig};
use hermes::tools::{ToolStatus, Toolbox};
use serde_json::json;

fn server_binary() -> String {
    let path = std::env::var("HERMES_TEST_MCP_SERVER")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join(".ci/node/node_modules/.bin/mcp-server-everything")
        });
    assert!(
        path.exists(),
        "{} is missing: run `npm install --prefix .ci/node @modelcontextprotocol/server-everything` (as .ci/run does)",
        path.display()
    );
    path.display().to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn real_server_tools_are_listed_validated_and_called() {
    let config = McpServerConfig::from_command_line(&format!("{} stdio", server_binary())).unwrap();
    let tools = connect(&config).await.unwrap();
    let names: Vec<String> = tools
        .iter()
        .map(|t| hermes::tools::Tool::spec(t).name)
        .collect();
    assert!(
        names.contains(&"echo".to_string()) && names.contains(&"get-sum".to_string()),
        "{names:?}"
    );

    let mut toolbox = Toolbox::new();
    assert!(register_servers(&mut toolbox, &[config]).await.is_empty());
    // The schema became a spec: rendered into the prompt and used to validate.
    assert!(
        toolbox
            .render()
            .contains("message (string, required): Message to echo"),
        "{}",
        toolbox.render()
    );
    let sum = toolbox.call("get-sum", &json!({"a": "2", "b": 3})).await;
    assert_eq!(sum.status, ToolStatus::Ok, "{sum:?}");
    assert!(sum.data.to_string().contains('5'), "{sum:?}");
    let missing = toolbox.call("echo", &json!({})).await;
    assert!(missing
        .error
        .unwrap()
        .contains("missing required parameter `message`"));
}

#[tokio::test(flavor = "multi_thread")]
async fn hermes_run_calls_an_mcp_tool_and_survives_its_death() {
    let ws = tempfile::tempdir().unwrap();
    let server = ScriptedServer::start(vec![
        decision("echo", json!({"message": "hello from hermes"})),
        // The MCP server is killed when this request arrives, so the call
        // it answers with finds the server dead.
        Reply::Delay(
            Duration::from_secs(2),
            Box::new(decision("echo", json!({"message": "again"}))),
        ),
        finish("done"),
    ])
    .await;
    // A wrapper of the same name that records its pid, then becomes the
    // server: the test kills it at a known point rather than after a fixed
    // time, which a slow machine's start-up could outlast.
    let bin = tempfile::tempdir().unwrap();
    let pid_file = bin.path().join("pid");
    let wrapper = bin.path().join("mcp-server-everything");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\necho $$ > '{}'\nexec '{}' \"$@\"\n",
            pid_file.display(),
            server_binary()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let mcp = format!("{} stdio", wrapper.display());
    let kill_on_round_two = async {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
        while server.bodies().len() < 2 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let pid = std::fs::read_to_string(&pid_file).expect("the wrapper wrote its pid");
        let killed = std::process::Command::new("kill")
            .args(["-9", pid.trim()])
            .status()
            .unwrap();
        assert!(killed.success(), "kill -9 {pid}");
    };
    let args = [
        "run",
        "echo twice",
        "--workspace",
        ws.path().to_str().unwrap(),
        "--mcp",
        &mcp,
        "--mcp",
        "/no/such/mcp-server",
        "--json",
    ];
    let (run, ()) = tokio::join!(hermes(&args, &server.base_url), kill_on_round_two);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("MCP server `mcp-server`"),
        "a server that cannot start is reported: {}",
        run.stderr
    );
    let first = server.prompt_text(1);
    assert!(first.contains("Echo: hello from hermes"), "{first}");
    let second = server.prompt_text(2);
    assert!(
        common::observation_of(&second, 2).is_some_and(|o| o.starts_with(r#"{"status":"error""#)),
        "{second}"
    );
    assert!(
        second.contains("MCP server `mcp-server-everything`"),
        "{second}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn mcp_servers_come_from_the_config_file_too() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("hermes.toml");
    std::fs::write(
        &config,
        format!(
            "[[mcp]]\nname = \"everything\"\ncommand = \"{}\"\nargs = [\"stdio\"]\n",
            server_binary()
        ),
    )
    .unwrap();
    let server = ScriptedServer::start(vec![
        decision("get-sum", json!({"a": 40, "b": 2})),
        finish("42"),
    ])
    .await;
    let run = hermes(
        &[
            "run",
            "add",
            "--workspace",
            dir.path().to_str().unwrap(),
            "--config",
            config.to_str().unwrap(),
        ],
        &server.base_url,
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        server.prompt_text(0).contains("get-sum"),
        "tools are in the prompt"
    );
    assert!(
        server.prompt_text(1).contains("42"),
        "{}",
        server.prompt_text(1)
    );

    std::fs::write(&config, "[[mcp]]\ncommand = \"x\"\nargz = []\n").unwrap();
    let bad = hermes(
        &["run", "x", "--config", config.to_str().unwrap()],
        &server.base_url,
    )
    .await;
    assert_eq!(bad.code, 1);
    assert!(
        bad.stderr.contains("hermes.toml") && bad.stderr.contains("argz"),
        "{}",
        bad.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn roles_are_listed_without_starting_mcp_servers() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("echoer.toml"),
        "name = \"echoer\"\ndescription = \"Echoes.\"\nsystem_prompt = \"You echo.\"\ntools = [\"read_file\", \"echo\"]\n",
    )
    .unwrap();
    let roles = dir.path().to_str().unwrap();
    let marker = dir.path().join("started");
    let mcp = format!("sh -c 'touch {}'", marker.display());

    // `echo` may come from the MCP server: listed, with a warning.
    let run = hermes(
        &["roles", "--roles", roles, "--mcp", &mcp],
        "http://127.0.0.1:9/v1",
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("echoer"), "{}", run.stdout);
    assert!(
        run.stderr
            .contains("warning: `echo` is not a built-in tool"),
        "{}",
        run.stderr
    );
    assert!(!marker.exists(), "hermes roles started the MCP server");

    // Without MCP servers nothing can provide `echo`: the role is refused.
    let run = hermes(&["roles", "--roles", roles], "http://127.0.0.1:9/v1").await;
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stderr.contains("echoer.toml") && run.stderr.contains("unknown tool `echo`"),
        "{}",
        run.stderr
    );

    // A bad config file is an error, not an empty tool list.
    let config = dir.path().join("hermes.toml");
    std::fs::write(&config, "[[mcp]]\ncommand = \"x\"\nargz = []\n").unwrap();
    let run = hermes(
        &[
            "roles",
            "--roles",
            roles,
            "--config",
            config.to_str().unwrap(),
        ],
        "http://127.0.0.1:9/v1",
    )
    .await;
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(run.stderr.contains("argz"), "{}", run.stderr);
}
