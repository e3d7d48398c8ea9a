//! Parser forms seen from real models, one test per form.

use proptest::prelude::*;
use serde_json::json;

use super::*;

fn parsed(raw: &str) -> Decision {
    parse_decision(raw).unwrap_or_else(|e| panic!("no decision in {raw:?}: {e}"))
}

fn assert_call(raw: &str, name: &str, args: serde_json::Value) {
    let d = parsed(raw);
    assert_eq!(d.action.name, name, "name from {raw:?}");
    assert_eq!(d.action.args, args, "args from {raw:?}");
}

#[test]
fn canonical_shape_parses_without_repair() {
    let d = parsed(
        r#"{"thought": "look", "action": {"name": "read_file", "args": {"path": "a.txt"}}}"#,
    );
    assert_eq!(d.thought, "look");
    assert_eq!(d.action.args, json!({"path": "a.txt"}));
    assert!(!d.repaired);
}

#[test]
fn prose_around_json_and_fences() {
    assert_call(
        "Sure! Here is my answer:\n```json\n{\"thought\": \"t\", \"action\": {\"name\": \"list_dir\", \"args\": {\"path\": \".\"}}}\n```\nHope that helps.",
        "list_dir",
        json!({"path": "."}),
    );
    assert_call(
        "I will do this {\"action\": {\"name\": \"x\", \"args\": {}}} done",
        "x",
        json!({}),
    );
}

#[test]
fn think_blocks_with_braces_are_ignored() {
    let raw = "<think>maybe {\"action\": {\"name\": \"wrong\"}} hmm }}</think>\n{\"thought\": \"ok\", \"action\": {\"name\": \"right\", \"args\": {}}}";
    assert_call(raw, "right", json!({}));
}

#[test]
fn thought_and_action_labels() {
    let d = parsed(
        "Thought: I need the file.\nAction: {\"name\": \"read_file\", \"args\": {\"path\": \"b\"}}",
    );
    assert_eq!(d.thought, "I need the file.");
    assert_eq!(d.action.name, "read_file");
    assert_eq!(d.action.args, json!({"path": "b"}));
}

#[test]
fn react_plain_text_action_and_final_answer() {
    assert_call(
        "Thought: hi\nAction: read_file\nAction Input: {\"path\": \"c\"}",
        "read_file",
        json!({"path": "c"}),
    );
    let d = parsed("Thought: done\nFinal Answer: 42 apples");
    assert!(d.is_finish());
    assert_eq!(d.result.as_deref(), Some("42 apples"));
}

#[test]
fn hermes_tool_call_tags() {
    assert_call(
        "<tool_call>\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"o.txt\", \"content\": \"hi\"}}\n</tool_call>",
        "write_file",
        json!({"path": "o.txt", "content": "hi"}),
    );
}

#[test]
fn single_quotes_unquoted_keys_trailing_commas_comments() {
    assert_call(
        "{'thought': 'x', 'action': {'name': 'read_file', 'args': {'path': 'a'}}}",
        "read_file",
        json!({"path": "a"}),
    );
    assert_call(
        "{thought: \"x\", action: {name: \"read_file\", args: {path: \"a\"}}}",
        "read_file",
        json!({"path": "a"}),
    );
    assert_call(
        "{\"action\": {\"name\": \"n\", \"args\": {\"a\": 1,},},}",
        "n",
        json!({"a": 1}),
    );
    assert_call(
        "{\n // pick a tool\n \"action\": {\"name\": \"n\", /* inline */ \"args\": {\"a\": 2}}}",
        "n",
        json!({"a": 2}),
    );
}

#[test]
fn python_literals() {
    assert_call(
        "{'action': {'name': 'flags', 'args': {'a': True, 'b': False, 'c': None}}}",
        "flags",
        json!({"a": true, "b": false, "c": null}),
    );
}

#[test]
fn raw_newlines_and_tabs_inside_strings() {
    assert_call(
        "{\"action\": {\"name\": \"write_file\", \"args\": {\"path\": \"a\", \"content\": \"line1\nline2\tend\"}}}",
        "write_file",
        json!({"path": "a", "content": "line1\nline2\tend"}),
    );
}

#[test]
fn full_width_quotes_and_bom() {
    assert_call(
        "\u{feff}{“action”: {“name”: “read_file”, “args”: {“path”: “中文.txt”}}}",
        "read_file",
        json!({"path": "中文.txt"}),
    );
}

#[test]
fn truncated_output_is_closed() {
    assert_call(
        "{\"thought\": \"reading\", \"action\": {\"name\": \"read_file\", \"args\": {\"path\": \"notes.t",
        "read_file",
        json!({"path": "notes.t"}),
    );
}

#[test]
fn args_aliases_and_string_args() {
    for key in [
        "arg",
        "arguments",
        "params",
        "parameters",
        "input",
        "action_input",
    ] {
        let raw = format!("{{\"action\": {{\"name\": \"t\", \"{key}\": {{\"k\": 1}}}}}}");
        assert_call(&raw, "t", json!({"k": 1}));
    }
    assert_call(
        r#"{"action": {"name": "t", "args": "{\"k\": 2}"}}"#,
        "t",
        json!({"k": 2}),
    );
    assert_call(r#"{"action": {"name": "t"}}"#, "t", json!({}));
}

#[test]
fn name_aliases_and_other_frameworks_shapes() {
    for key in ["tool", "tool_name", "function"] {
        let raw = format!("{{\"action\": {{\"{key}\": \"t\", \"args\": {{}}}}}}");
        assert_call(&raw, "t", json!({}));
    }
    assert_call(
        r#"{"tool_calls": [{"id": "1", "type": "function", "function": {"name": "t", "arguments": "{\"q\": \"x\"}"}}]}"#,
        "t",
        json!({"q": "x"}),
    );
    assert_call(
        r#"{"thought": "r", "action": "search", "action_input": {"q": "rust"}}"#,
        "search",
        json!({"q": "rust"}),
    );
    assert_call(
        r#"{"thought": "f", "name": "t", "args": {"a": 1}}"#,
        "t",
        json!({"a": 1}),
    );
}

#[test]
fn first_valid_of_several_objects_wins() {
    let raw = "{\"note\": \"no action here\"}\n{\"action\": {\"name\": \"first\", \"args\": {}}}\n{\"action\": {\"name\": \"second\", \"args\": {}}}";
    assert_call(raw, "first", json!({}));
}

#[test]
fn finish_aliases_and_result_locations() {
    let cases = [
        (
            r#"{"action": {"name": "finish", "args": {"result": "r1"}}}"#,
            "r1",
        ),
        (
            r#"{"action": {"name": "final_answer", "args": {"answer": "r2"}}}"#,
            "r2",
        ),
        (
            r#"{"action": {"name": "answer", "args": {}}, "result": "r3"}"#,
            "r3",
        ),
        (
            r#"{"action": {"name": "done", "args": {"result": "r4"}}}"#,
            "r4",
        ),
        (r#"{"action": "Final Answer", "action_input": "r5"}"#, "r5"),
        (r#"{"thought": "t", "final_answer": "r6"}"#, "r6"),
    ];
    for (raw, result) in cases {
        let d = parsed(raw);
        assert!(d.is_finish(), "{raw}");
        assert_eq!(d.result.as_deref(), Some(result), "{raw}");
    }
}

#[test]
fn no_decision_is_an_error() {
    assert_eq!(parse_decision(""), Err(DecisionError::Empty));
    assert_eq!(
        parse_decision("<think>only thinking</think>"),
        Err(DecisionError::Empty)
    );
    assert_eq!(
        parse_decision("I cannot help with that."),
        Err(DecisionError::NoJson)
    );
    assert!(matches!(
        parse_decision(r#"{"thought": "no action"}"#),
        Err(DecisionError::NoAction { .. })
    ));
    assert!(matches!(
        parse_decision(r#"{"action": {"args": {}}}"#),
        Err(DecisionError::NoAction { .. })
    ));
}

#[test]
fn pathological_nesting_is_refused_without_overflow() {
    let raw = "{".repeat(100_000);
    assert!(parse_decision(&raw).is_err());
    let raw = format!("{}{}", "[{\"a\":".repeat(5_000), "1");
    assert!(parse_decision(&raw).is_err());
}

#[test]
fn non_ascii_survives_parsing() {
    let d = parsed(
        r#"{"thought": "读取文件", "action": {"name": "read_file", "args": {"path": "笔记.txt"}}}"#,
    );
    assert_eq!(d.thought, "读取文件");
    assert_eq!(d.action.args["path"], "笔记.txt");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(raw in "\\PC{0,300}") {
        let _ = parse_decision(&raw);
    }

    #[test]
    fn json_like_noise_never_panics(raw in "[{}\\[\\]\"':,a-z0-9 \\\\\n“”]{0,200}") {
        let _ = parse_decision(&raw);
    }

    #[test]
    fn decisions_with_arbitrary_text_args_round_trip(path in "\\PC{0,40}", thought in "[a-zA-Z ]{0,40}") {
        let raw = serde_json::to_string(&json!({"thought": thought, "action": {"name": "read_file", "args": {"path": path}}})).unwrap();
        let d = parse_decision(&raw).unwrap();
        prop_assert_eq!(d.action.args["path"].as_str(), Some(path.as_str()));
    }
}
