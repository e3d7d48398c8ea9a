//! `run_code` containment: each escape attempt runs through `hermes run`
//! against a scripted model, is contained, and the agent's next round runs.
//! The sandbox is whichever `hermes run` picks: the built-in one where the
//! kernel allows it user namespaces (no system package needed), else
//! bubblewrap. `.ci/run` runs these tests once more with
//! `HERMES_SANDBOX=bwrap` and bubblewrap installed, so both backends hold
//! the same line.

mod common;

use common::{decision, finish, ScriptedServer};
use serde_json::{json, Value};

/// `hermes` with the code redraw and the code vote off: these tests
/// script what the model sees after each program, failed ones included,
/// and the redraw would answer a failed program with drawn ones first (it
/// has its own test below, `a_failed_program_is_replaced_by_a_drawn_one_that_runs`),
/// the vote a program that ran (`a_program_two_draws_outvote_is_replaced_by_theirs`).
async fn hermes(args: &[&str], base_url: &str) -> common::Run {
    let mut args = args.to_vec();
    args.extend(["--no-steer", "code_redraw", "--no-steer", "code_vote"]);
    common::hermes(&args, base_url).await
}

fn code(language: &str, code: &str, timeout: u64) -> common::Reply {
    decision(
        "run_code",
        json!({"language": language, "code": code, "timeout_secs": timeout}),
    )
}

/// The observation the model saw for round `round` (from the next request).
fn observation(server: &ScriptedServer, round: usize) -> Value {
    let prompt = server.prompt_text(round);
    let line = common::observation_of(&prompt, round as u32)
        .unwrap_or_else(|| panic!("no observation for round {round}"));
    serde_json::from_str(line)
        .unwrap_or_else(|e| panic!("observation {round} is not JSON ({e}): {line}"))
}

/// Runs `hermes run` in `ws` (with `extra` flags) against a scripted model
/// that makes the one `run_code` call `program` (Python) and then
/// finishes; returns that call's observation.
async fn run_once(ws: &std::path::Path, program: &str, extra: &[&str]) -> Value {
    let server = ScriptedServer::start(vec![code("python", program, 5), finish("ran")]).await;
    let mut args = vec!["run", "run it", "--workspace", ws.to_str().unwrap()];
    args.extend_from_slice(extra);
    let run = hermes(&args, &server.base_url).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    observation(&server, 1)
}

#[tokio::test(flavor = "multi_thread")]
async fn escapes_are_contained_and_the_agent_carries_on() {
    let parent = tempfile::tempdir().unwrap();
    let ws = parent.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    std::fs::write(ws.join("data.csv"), "a,b\n1,2\n3,4\n").unwrap();
    // A listener on the host's loopback: the sandbox must not reach it.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let outside = parent.path().join("outside.txt");
    let server = ScriptedServer::start(vec![
        code("python", &format!("import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2)\nprint('CONNECTED')"), 5),
        code("bash", "echo pwned > /etc/hermes-test && echo WROTE", 5),
        code("python", &format!("open('{}', 'w').write('x')\nprint('WROTE')", outside.display()), 5),
        code("python", "open('new.txt', 'w').write('x')\nprint('WROTE')", 5),
        code("python", "while True:\n    pass", 2),
                                code("bash", ":(){ :|:& };: ; sleep 1", 3),
        code("python", "import os\nwhile True:\n    os.fork()", 3),
        code("python", "x = bytearray(10 * 1024 ** 3)\nprint('ALLOCATED')", 5),
        code("python", "import csv\nrows = list(csv.reader(open('data.csv')))\nprint(len(rows), sum(int(r[1]) for r in rows[1:]))", 5),
        finish("contained"),
    ])
    .await;
    let run = hermes(
        &[
            "run",
            "probe the sandbox",
            "--workspace",
            ws.to_str().unwrap(),
            "--json",
        ],
        &server.base_url,
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.outcome()["rounds"],
        10,
        "every round after an escape attempt still ran"
    );

    // 1. No network, even to the host's loopback.
    let net = observation(&server, 1);
    assert_eq!(net["status"], "error", "{net}");
    assert!(!net["data"]["stdout"]
        .as_str()
        .unwrap()
        .contains("CONNECTED"));
    // 2. /etc is read-only.
    let etc = observation(&server, 2);
    assert_eq!(etc["status"], "error");
    assert!(
        etc["data"]["stderr"]
            .as_str()
            .unwrap()
            .contains("Read-only file system"),
        "{etc}"
    );
    assert!(!std::path::Path::new("/etc/hermes-test").exists());
    // 3. Nothing outside the workspace is visible or writable.
    assert_eq!(observation(&server, 3)["status"], "error");
    assert!(!outside.exists());
    // 4. The workspace is not mounted writable: the code writes in a copy,
    // and what a program that succeeded wrote is saved through the
    // workspace's policy, with what changed.
    let wrote = observation(&server, 4);
    assert_eq!(wrote["status"], "ok", "{wrote}");
    assert_eq!(
        wrote["data"]["saved"],
        json!({"new.txt": "new file, 1 lines:\nx"}),
        "{wrote}"
    );
    assert_eq!(std::fs::read_to_string(ws.join("new.txt")).unwrap(), "x");
    // 5. An infinite loop is killed at its timeout.
    let spin = observation(&server, 5);
    assert_eq!(spin["data"]["timed_out"], true, "{spin}");
    assert_eq!(spin["data"]["killed"], true);
    // 6. A fork bomb is contained and killed.
    let bomb = observation(&server, 6);
    assert_eq!(bomb["status"], "error", "{bomb}");
    assert_eq!(bomb["data"]["process_limit_hit"], true, "{bomb}");
    // Cgroups are named hermes-sandbox-<pid>-<n>; none may outlive its hermes
    // process (other tests may be running sandboxes right now).
    let leftovers: Vec<String> = std::fs::read_dir("/sys/fs/cgroup/pids")
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    for name in leftovers
        .iter()
        .filter(|n| n.starts_with("hermes-sandbox-"))
    {
        let owner = name
            .trim_start_matches("hermes-sandbox-")
            .split('-')
            .next()
            .unwrap_or_default();
        assert!(
            std::path::Path::new("/proc").join(owner).exists(),
            "cgroup {name} outlived its process"
        );
    }
    let bomb = observation(&server, 7);
    assert_eq!(bomb["status"], "error", "{bomb}");
    assert_eq!(bomb["data"]["process_limit_hit"], true, "{bomb}");
    // 7. A 10 GB allocation fails inside the sandbox.
    let hog = observation(&server, 8);
    assert_eq!(hog["status"], "error");
    assert!(
        hog["data"]["stderr"]
            .as_str()
            .unwrap()
            .contains("MemoryError"),
        "{hog}"
    );
    // 8. Workspace files are readable from the working directory.
    let csv = observation(&server, 9);
    assert_eq!(csv["status"], "ok", "{csv}");
    assert_eq!(csv["data"]["stdout"], "3 6\n");
    assert_eq!(csv["data"]["exit_code"], 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn writes_are_allowed_only_when_asked_for() {
    let ws = tempfile::tempdir().unwrap();
    let server = ScriptedServer::start(vec![
        code("bash", "echo hi > made.txt && cat made.txt", 5),
        finish("ok"),
    ])
    .await;
    let run = hermes(
        &[
            "run",
            "write",
            "--workspace",
            ws.path().to_str().unwrap(),
            "--allow-code-writes",
        ],
        &server.base_url,
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(observation(&server, 1)["data"]["stdout"], "hi\n");
    assert_eq!(
        std::fs::read_to_string(ws.path().join("made.txt")).unwrap(),
        "hi\n"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_file_the_code_writes_in_its_copy_is_offered_for_the_goal_s_missing_file() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("users.csv"), "name,age\nana,31\nbo,25\n").unwrap();
    let writes = "import csv\nrows = csv.DictReader(open('users.csv'))\nwith open('old.txt', 'w') as f:\n    f.write('\\n'.join(r['name'] for r in rows if int(r['age']) > 30))";
    let server = ScriptedServer::start(vec![
        code("python", writes, 5),
        decision("write_file", json!({"path": "old.txt", "content": "ana"})),
        finish("ana"),
    ])
    .await;
    let run = hermes(
        &[
            "run",
            "Write the names of the users older than 30 to old.txt",
            "--workspace",
            ws.path().to_str().unwrap(),
            "--no-save-code-writes",
        ],
        &server.base_url,
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let wrote = observation(&server, 1);
    assert_eq!(wrote["status"], "ok", "{wrote}");
    assert_eq!(wrote["data"]["unsaved_writes"], json!({"old.txt": "ana"}));
    assert_eq!(wrote["data"]["note"], hermes::tools::builtin::UNSAVED_NOTE);
    let offered = server.prompt_text(1);
    assert!(
        offered.contains(r#"Round 1 (run_code) wrote `old.txt` only in its copy of the workspace, and `old.txt` is not written yet. If what it wrote is what `old.txt` should hold, reply {"thought":"old.txt must hold the answer","action":{"name":"write_file","args":{"path":"old.txt","content":"ana"}}}"#),
        "{offered}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_line_break_decoded_inside_a_python_string_literal_is_run_as_an_escape() {
    let ws = tempfile::tempdir().unwrap();
    // What a model sends when it writes '\n' (not '\\n') inside the JSON
    // string: after decoding, the literal holds a real line break.
    let broken = "names = ['ana', 'bo']\nprint(', '.join(names) + '\n', end='')\nprint(\"x\ny\")";
    let seen = run_once(ws.path(), broken, &["--json"]).await;
    assert_eq!(seen["status"], "ok", "{seen}");
    assert_eq!(seen["data"]["stdout"], "ana, bo\nx\ny\n", "{seen}");
    assert_eq!(
        seen["data"]["repaired"],
        hermes::tools::builtin::REPAIR_NOTE
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stray_closing_brace_after_the_code_is_left_out_and_the_code_runs() {
    let ws = tempfile::tempdir().unwrap();
    // The model closed its JSON one brace early: the code ends in `}`.
    let braced = "total = sum([1, 2, 3])\nprint({'total': total}['total'])}";
    let seen = run_once(ws.path(), braced, &[]).await;
    assert_eq!(seen["status"], "ok", "{seen}");
    assert_eq!(seen["data"]["stdout"], "6\n", "{seen}");
    assert_eq!(seen["data"]["repaired"], hermes::tools::builtin::BRACE_NOTE);
    // Or the `}` took the place of the code's own last `)`. (A second call
    // in the same workspace: the first saved nothing.)
    let swapped = "total = sum([1, 2, 3])\nprint(str(total)}";
    let seen = run_once(ws.path(), swapped, &[]).await;
    assert_eq!(seen["status"], "ok", "{seen}");
    assert_eq!(seen["data"]["stdout"], "6\n", "{seen}");
    assert_eq!(seen["data"]["repaired"], hermes::tools::builtin::BRACE_NOTE);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_standard_module_used_without_its_import_is_imported_and_the_code_runs() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("data.csv"), "name,age\nana,31\nbo,25\n").unwrap();
    // Two modules missing, one after the other; then a name of the
    // program's own, which is not guessed.
    let unimported = "rows = list(csv.DictReader(open('data.csv')))\nprint(len(rows), os.path.exists('data.csv'))";
    // (`rows` itself is kept from the first call: code actions.)
    let own_name = "print(len(people))";
    let server = ScriptedServer::start(vec![
        code("python", unimported, 5),
        code("python", own_name, 5),
        finish("2"),
    ])
    .await;
    let run = hermes(
        &["run", "count", "--workspace", ws.path().to_str().unwrap()],
        &server.base_url,
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let imported = observation(&server, 1);
    assert_eq!(imported["status"], "ok", "{imported}");
    assert_eq!(imported["data"]["stdout"], "2 True\n", "{imported}");
    assert_eq!(
        imported["data"]["repaired"],
        "`import csv` and `import os` were missing and were added at the top"
    );
    let own = observation(&server, 2);
    assert_eq!(own["status"], "error", "{own}");
    assert!(own["data"].get("repaired").is_none(), "{own}");
    assert!(
        own["error"]
            .as_str()
            .unwrap()
            .contains("`people` is not defined"),
        "{own}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn csv_text_compared_with_a_number_is_read_as_a_number_and_the_code_runs() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(
        ws.path().join("users.csv"),
        "name,age\nana,31\nbo,25\ncy,40\n",
    )
    .unwrap();
    let compared = "import csv\nrows = list(csv.DictReader(open('users.csv')))\nold = sorted(r['name'] for r in rows if r['age'] > 30)\nprint(old)";
    // With code actions (the default) a CSV cell that holds a number
    // compares as one: nothing to repair.
    let direct = run_once(ws.path(), compared, &[]).await;
    assert_eq!(direct["status"], "ok", "{direct}");
    assert_eq!(direct["data"]["stdout"], "['ana', 'cy']\n", "{direct}");
    assert!(direct["data"].get("repaired").is_none(), "{direct}");
    // Each program alone: the failing comparison is rerun as a number.
    let seen = run_once(ws.path(), compared, &["--no-code-actions"]).await;
    assert_eq!(seen["status"], "ok", "{seen}");
    assert_eq!(seen["data"]["stdout"], "['ana', 'cy']\n", "{seen}");
    assert_eq!(
        seen["data"]["repaired"],
        "values read from a CSV file are text, and text was compared with a number: the comparison was run as `float(r['age']) > 30`"
    );

    // Where run_code may write, nothing is rerun: the error says the fix.
    let told = run_once(
        ws.path(),
        compared,
        &["--allow-code-writes", "--no-code-actions"],
    )
    .await;
    assert_eq!(told["status"], "error", "{told}");
    assert!(
        told["error"]
            .as_str()
            .unwrap()
            .ends_with("the comparison should read `float(r['age']) > 30`"),
        "{told}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn csv_cells_that_hold_numbers_act_as_numbers_in_code_actions() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(
        ws.path().join("orders.csv"),
        "id,customer,amount,score\n1,Acme,250,9\n2,Globex,120.5,10\n3,Initech,90,8\n",
    )
    .unwrap();
    // Sums, an index, ordering, a numeric format: what small models write
    // as if csv gave numbers. Text stays text where it is used as text.
    let program = "import csv\nrows = list(csv.DictReader(open('orders.csv')))\n\
        total = 0\nfor r in rows:\n    total += r['amount']\n\
        print(total, sum(r['amount'] for r in rows))\n\
        print(rows[rows[1]['id'] - 1]['customer'], max(rows, key=lambda r: r['score'])['customer'])\n\
        print(f\"{rows[1]['amount']:.2f}\", rows[0]['amount'] == 250, rows[0]['id'] == '1')\n\
        print(rows[0]['customer'] + '!', rows[0]['id'] + '-a', len(rows[0]['amount']))\n\
        print(list(csv.reader(open('orders.csv')))[0])";
    let seen = run_once(ws.path(), program, &[]).await;
    assert_eq!(seen["status"], "ok", "{seen}");
    assert_eq!(
        seen["data"]["stdout"],
        "460.5 460.5\nGlobex Globex\n120.50 True True\nAcme! 1-a 3\n['id', 'customer', 'amount', 'score']\n",
        "{seen}"
    );
    // A cell that is not a whole number fails int() as Python's text does,
    // and the traceback shows the program's frames only.
    let failed = run_once(
        ws.path(),
        "import csv\nrows = list(csv.DictReader(open('orders.csv')))\nprint(int(rows[1]['amount']))",
        &[],
    )
    .await;
    assert_eq!(failed["status"], "error", "{failed}");
    let stderr = failed["data"]["stderr"].as_str().unwrap();
    assert_eq!(
        stderr,
        "Traceback (most recent call last):\n  File \"<string>\", line 3, in <module>\nValueError: invalid literal for int() with base 10: '120.5'\n"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn statements_on_one_line_are_split_and_run_and_a_program_still_unreadable_gets_a_hint() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir(ws.path().join("docs")).unwrap();
    std::fs::write(ws.path().join("docs/a.md"), "nothing").unwrap();
    std::fs::write(ws.path().join("docs/b.md"), "blue-falcon").unwrap();
    let one_line = "import os\nfor name in sorted(os.listdir('docs')): if 'falcon' in open('docs/' + name).read(): print(name)";
    let run_together =
        "with open('docs/b.md') as f: text = f.read() words = text.split('-') print(words[0])";
    let unfixable = "with open('docs/b.md') as f: print(f.read()";
    let server = ScriptedServer::start(vec![
        code("python", one_line, 5),
        code("python", run_together, 5),
        code("python", unfixable, 5),
        finish("b.md"),
    ])
    .await;
    let run = hermes(
        &["run", "find", "--workspace", ws.path().to_str().unwrap()],
        &server.base_url,
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let split = observation(&server, 1);
    assert_eq!(split["status"], "ok", "{split}");
    assert_eq!(split["data"]["stdout"], "b.md\n", "{split}");
    assert_eq!(
        split["data"]["repaired"],
        hermes::tools::builtin::COMPOUND_NOTE
    );
    let separated = observation(&server, 2);
    assert_eq!(separated["status"], "ok", "{separated}");
    assert_eq!(separated["data"]["stdout"], "blue\n", "{separated}");
    assert_eq!(
        separated["data"]["repaired"],
        hermes::tools::builtin::COMPOUND_NOTE
    );
    let hinted = observation(&server, 3);
    assert_eq!(hinted["status"], "error", "{hinted}");
    let error = hinted["error"].as_str().unwrap();
    assert!(
        error.ends_with("Python reads one statement per line: put each statement on a line of its own (\\n between them in the JSON string), with the body of a for/if/with on the lines below it, indented"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn without_code_actions_an_undefined_name_says_each_run_is_a_new_program() {
    let ws = tempfile::tempdir().unwrap();
    let server = ScriptedServer::start(vec![
        code("python", "print(data['port'])", 5),
        code("python", "write_file('answer.txt', '3')", 5),
        finish("done"),
    ])
    .await;
    let run = hermes(
        &[
            "run",
            "names",
            "--workspace",
            ws.path().to_str().unwrap(),
            "--no-code-actions",
        ],
        &server.base_url,
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let variable = observation(&server, 1);
    assert_eq!(
        variable["error"],
        "the code exited with code 1; `data` is not defined: every run_code call is a new program, so nothing from an earlier round exists in it as a variable; read the files it needs inside the code"
    );
    let tool = observation(&server, 2);
    assert_eq!(
        tool["error"],
        "the code exited with code 1; `write_file` is a tool, not a function inside the code: open files with open() in the code, or call write_file as your action"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn code_actions_read_and_write_the_workspace_keep_variables_and_save_only_what_succeeded() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("data.csv"), "name,age\nana,31\nbo,25\n").unwrap();
    std::fs::create_dir(ws.path().join(".hermes")).unwrap();
    let server = ScriptedServer::start(vec![
        code("python", "rows = read_file('data.csv').splitlines()\nprint(len(rows))", 5),
        code("python", "names = [r.split(',')[0] for r in rows[1:]]\nwrite_file('out/names.txt', '\\n'.join(names))\nprint(list_dir('out'))", 5),
        code("python", "write_file('../escape.txt', 'no')", 5),
        code("python", "write_file('.hermes/x', 'no')", 5),
        code("python", "open('data.csv', 'w').write('gone\\n')\nraise SystemExit(2)", 5),
        code("python", "open('data.csv', 'a').write('cy,40\\n')\nprint(search_files('cy')[0]['line'])", 5),
        code("python", "print(prices)", 5),
        finish("done"),
    ])
    .await;
    let run = hermes(
        &[
            "run",
            "use the data",
            "--workspace",
            ws.path().to_str().unwrap(),
        ],
        &server.base_url,
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    // read_file is a function; the variable it set is kept for the next call.
    let read = observation(&server, 1);
    assert_eq!(read["data"]["stdout"], "3\n", "{read}");
    assert_eq!(
        read["data"]["calls"],
        json!([{"tool": "read_file", "path": "data.csv"}])
    );
    assert_eq!(read["data"]["variables"], json!(["rows"]), "{read}");
    // write_file saves through the workspace policy; folders are made.
    let wrote = observation(&server, 2);
    assert_eq!(wrote["status"], "ok", "{wrote}");
    assert_eq!(wrote["data"]["stdout"], "['names.txt']\n");
    assert_eq!(
        std::fs::read_to_string(ws.path().join("out/names.txt")).unwrap(),
        "ana\nbo"
    );
    assert!(wrote["data"]["saved"]["out/names.txt"]
        .as_str()
        .unwrap()
        .starts_with("new file, 2 lines"));
    // Outside the workspace and Hermes's own folder are refused.
    let escape = observation(&server, 3);
    assert_eq!(escape["status"], "error");
    assert!(
        escape["data"]["stderr"]
            .as_str()
            .unwrap()
            .contains("outside the workspace"),
        "{escape}"
    );
    assert!(!ws.path().parent().unwrap().join("escape.txt").exists());
    let state = observation(&server, 4);
    assert_eq!(state["status"], "error");
    assert!(!ws.path().join(".hermes/x").exists());
    // A program that failed saves nothing: its writes are shown.
    let failed = observation(&server, 5);
    assert_eq!(failed["status"], "error");
    assert_eq!(
        failed["data"]["unsaved_writes"],
        json!({"data.csv": "gone\n"})
    );
    assert_eq!(
        failed["data"]["note"],
        hermes::tools::builtin::FAILED_UNSAVED_NOTE
    );
    // A change to a file is saved with its diff.
    let changed = observation(&server, 6);
    assert_eq!(changed["status"], "ok", "{changed}");
    assert_eq!(changed["data"]["stdout"], "4\n");
    assert!(
        changed["data"]["saved"]["data.csv"]
            .as_str()
            .unwrap()
            .contains("+cy,40"),
        "{changed}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("data.csv")).unwrap(),
        "name,age\nana,31\nbo,25\ncy,40\n"
    );
    // A name no call set: what other tools returned is not a variable.
    let undefined = observation(&server, 7);
    assert!(
        undefined["error"]
            .as_str()
            .unwrap()
            .contains("`prices` is not defined: a variable exists only if"),
        "{undefined}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_file_opened_without_its_folder_is_shown_where_it_is() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir(ws.path().join("reports")).unwrap();
    std::fs::write(ws.path().join("reports/2024-01.json"), "{\"revenue\": 5}").unwrap();
    // The model listed reports/ and opened the entry by its bare name.
    let seen = run_once(
        ws.path(),
        "import json\nprint(json.load(open('2024-01.json')))",
        &[],
    )
    .await;
    assert_eq!(seen["status"], "error", "{seen}");
    let error = seen["error"].as_str().unwrap();
    assert!(
        error.ends_with("there is no `2024-01.json`: paths in the code are relative to the workspace, and a file of that name is at `reports/2024-01.json`"),
        "{error}"
    );
}

/// The code redraw end to end: the model's own program fails in the real
/// sandbox, three programs are drawn over HTTP (each request with its own
/// seed), the second one runs, and the next prompt shows it as round 1.
#[tokio::test(flavor = "multi_thread")]
async fn a_failed_program_is_replaced_by_a_drawn_one_that_runs() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(
        ws.path().join("items.csv"),
        "item,open\na,yes\nb,no\nc,yes\n",
    )
    .unwrap();
    let server = ScriptedServer::start(vec![
        code("python", "import csv\nrows = list(csv.DictReader(open('items.csv')))\nprint(rows[0]['status'])", 5),
        code("python", "print(undefined_name)", 5),
        code("python", "import csv\nrows = list(csv.DictReader(open('items.csv')))\nprint(sum(r['open'] == 'yes' for r in rows))", 5),
        code("python", "print(also_undefined)", 5),
        finish("2"),
    ])
    .await;
    let run = common::hermes(
        &[
            "run",
            "Count the open items in items.csv.",
            "--workspace",
            ws.path().to_str().unwrap(),
        ],
        &server.base_url,
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let requests = server.requests();
    assert_eq!(requests.len(), 5, "{requests:?}");
    // The draws go out at once, so they may arrive in any order; only
    // one of them runs (the others read no file, or fail), whichever it is.
    let mut seeds: Vec<Value> = requests[1..4].iter().map(|r| r["seed"].clone()).collect();
    seeds.sort_by_key(|seed| seed.as_u64());
    assert_eq!(seeds, [json!(1001), json!(1002), json!(1003)]);
    assert!(requests[0]["seed"].is_null() && requests[4]["seed"].is_null());
    // Round 1, as the next prompt shows it, is the drawn program that ran.
    let prompt = server.prompt_text(4);
    let seen: Value =
        serde_json::from_str(common::observation_of(&prompt, 1).expect("round 1")).unwrap();
    assert_eq!(seen["status"], "ok", "{seen}");
    assert_eq!(seen["data"]["stdout"], "2\n", "{seen}");
    assert!(
        !prompt.contains("'status'"),
        "the failed program is not shown: {prompt}"
    );
}

/// The code vote end to end: the model's program and three drawn over
/// HTTP are each tried in the real sandbox on a copy (nothing saved), two
/// draws agree on a file the model's program wrote otherwise, and theirs
/// runs for real: its file is saved, the model's never was.
#[tokio::test(flavor = "multi_thread")]
async fn a_program_two_draws_outvote_is_replaced_by_theirs() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(
        ws.path().join("users.csv"),
        "name,role\nana,admin\nben,user\ncy,admin\ndee,admin\neli,user\n",
    )
    .unwrap();
    let read = "import csv\nrows = list(csv.DictReader(open('users.csv')))\n";
    let all = format!("{read}open('answer.txt', 'w').write(str(len(rows)))");
    let admins = format!(
        "{read}open('answer.txt', 'w').write(str(sum(r['role'] == 'admin' for r in rows)))"
    );
    let server = ScriptedServer::start(vec![
        code("python", &all, 5),
        code("python", &admins, 5),
        code("python", &format!("{read}print(len(rows))"), 5),
        code("python", &admins, 5),
        finish("3"),
    ])
    .await;
    let run = common::hermes(
        &[
            "run",
            "Count the admins in users.csv and write the number to answer.txt.",
            "--workspace",
            ws.path().to_str().unwrap(),
            "--no-steer",
            "code_redraw",
            "--json",
        ],
        &server.base_url,
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.outcome()["status"], "finished");
    assert_eq!(server.requests().len(), 5);
    let answer = std::fs::read_to_string(ws.path().join("answer.txt")).unwrap();
    assert_eq!(answer, "3");
    // Round 1, as the next prompt shows it, is the drawn program, saved.
    let seen: Value =
        serde_json::from_str(common::observation_of(&server.prompt_text(4), 1).expect("round 1"))
            .unwrap();
    assert_eq!(seen["status"], "ok", "{seen}");
    assert!(
        seen["data"]["saved"]["answer.txt"]
            .as_str()
            .is_some_and(|diff| diff.contains('3')),
        "{seen}"
    );
}
