//! The built-in sandbox's guarantees, each tried from inside it (no
//! bubblewrap involved): these run wherever the kernel allows user
//! namespaces, and say so and pass where it does not.

use std::time::Duration;

use super::{run_with, Backend, SandboxConfig, SandboxOutput};

/// Runs `code` with bash in the built-in sandbox over `config`; `None`
/// (with a note) where the kernel refuses the namespaces.
async fn bash(config: &SandboxConfig, code: &str, timeout: u64) -> Option<SandboxOutput> {
    match run_with(
        Backend::BuiltIn,
        config,
        &["/usr/bin/bash", "-c", code],
        Duration::from_secs(timeout),
    )
    .await
    {
        Ok(output) => Some(output),
        Err(e) => {
            assert!(
                std::env::var("HERMES_REQUIRE_BUILTIN_SANDBOX").is_err(),
                "the built-in sandbox did not start: {e}"
            );
            eprintln!("skipped: the built-in sandbox cannot start here: {e}");
            None
        }
    }
}

fn workspace() -> (tempfile::TempDir, SandboxConfig) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("data.txt"), "hello\n").unwrap();
    let config = SandboxConfig::new(dir.path());
    (dir, config)
}

#[tokio::test]
async fn code_runs_in_the_workspace_with_its_files_and_a_clean_environment() {
    let (_dir, config) = workspace();
    let Some(out) = bash(&config, "pwd; cat data.txt; echo $HOME; id -u; ls /", 5).await else {
        return;
    };
    assert_eq!(out.exit_code, Some(0), "{out:?}");
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines[..3], ["/workspace", "hello", "/tmp"], "{out:?}");
    let root: Vec<&str> = lines[4..].to_vec();
    for absent in ["root", "home", "oldroot", "newroot", "var"] {
        assert!(!root.contains(&absent), "/{absent} is visible: {root:?}");
    }
}

#[tokio::test]
async fn the_workspace_is_read_only_unless_writes_are_allowed_and_the_system_always_is() {
    let (dir, mut config) = workspace();
    let code = "echo x > new.txt; echo x > /etc/hermes-test; echo x > /usr/hermes-test; echo x > /tmp/scratch && echo TMP";
    let Some(out) = bash(&config, code, 5).await else {
        return;
    };
    assert!(!dir.path().join("new.txt").exists());
    assert!(!std::path::Path::new("/etc/hermes-test").exists());
    assert!(!std::path::Path::new("/usr/hermes-test").exists());
    assert!(out.stderr.contains("Read-only file system"), "{out:?}");
    assert!(
        out.stdout.contains("TMP"),
        "the private /tmp is writable: {out:?}"
    );
    config.allow_writes = true;
    let out = bash(&config, "echo written > new.txt", 5).await.unwrap();
    assert_eq!(out.exit_code, Some(0), "{out:?}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("new.txt")).unwrap(),
        "written\n"
    );
}

#[tokio::test]
async fn secrets_and_the_network_are_out_of_reach() {
    let (_dir, config) = workspace();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let code = format!(
        "cat /etc/shadow | wc -c; (echo hi > /dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo CONNECTED; ls /root 2>&1 | head -1"
    );
    let Some(out) = bash(&config, &code, 5).await else {
        return;
    };
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(
        lines.first(),
        Some(&"0"),
        "/etc/shadow is empty inside: {out:?}"
    );
    assert!(!out.stdout.contains("CONNECTED"), "{out:?}");
    assert!(
        lines.get(1).is_some_and(|l| l.contains("No such file")),
        "{out:?}"
    );
}

#[tokio::test]
async fn a_fork_bomb_a_memory_hog_and_an_endless_loop_are_contained() {
    let (_dir, mut config) = workspace();
    config.max_processes = 16;
    let Some(out) = bash(&config, ":(){ :|:& };: ; sleep 1; echo survived", 5).await else {
        return;
    };
    assert!(
        out.process_limit_hit || out.stderr.contains("retry") || out.stderr.contains("fork"),
        "{out:?}"
    );
    let hog = "python3 -c 'x = bytearray(10 * 1024 ** 3); print(\"ALLOCATED\")'";
    let out = bash(&config, hog, 10).await.unwrap();
    assert!(!out.stdout.contains("ALLOCATED"), "{out:?}");
    assert!(out.stderr.contains("MemoryError"), "{out:?}");
    let out = bash(&config, "while true; do :; done", 1).await.unwrap();
    assert!(out.timed_out && out.killed, "{out:?}");
    assert!(out.seconds < 10.0, "{out:?}");
}

#[tokio::test]
async fn children_die_with_the_run() {
    let (dir, mut config) = workspace();
    config.allow_writes = true;
    // A child left behind would write the file after the run ended.
    let code = "(sleep 2; echo late > late.txt) & disown; echo started";
    let Some(out) = bash(&config, code, 5).await else {
        return;
    };
    assert_eq!(out.exit_code, Some(0), "{out:?}");
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(
        !dir.path().join("late.txt").exists(),
        "a child outlived its run"
    );
    // And on timeout, the whole group goes.
    let code = "(sleep 3; echo late > late2.txt) & sleep 30";
    let out = bash(&config, code, 1).await.unwrap();
    assert!(out.timed_out, "{out:?}");
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert!(
        !dir.path().join("late2.txt").exists(),
        "a child outlived its timeout"
    );
}

#[tokio::test]
async fn hermes_state_in_the_workspace_is_hidden() {
    let (dir, config) = workspace();
    std::fs::create_dir(dir.path().join(crate::tools::workspace::STATE_DIR)).unwrap();
    std::fs::write(
        dir.path()
            .join(crate::tools::workspace::STATE_DIR)
            .join("memory.redb"),
        "secret",
    )
    .unwrap();
    let code = format!("ls -A {}/ | wc -l", crate::tools::workspace::STATE_DIR);
    let Some(out) = bash(&config, &code, 5).await else {
        return;
    };
    assert_eq!(out.stdout.trim(), "0", "{out:?}");
}
