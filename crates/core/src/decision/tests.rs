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

// Unescaped double quotes inside strings. Small models (Qwen2.5-Coder 1.5B,
// Llama 3.2 3B) write code into "content" as they would in an editor, with
// the code's own quotes left unescaped.

#[test]
fn unescaped_quotes_in_code_content() {
    // The reported case: single-quoted Python string holding double quotes.
    assert_call(
        r#"{"thought": "write it", "action": {"name": "write_file", "args": {"path": "a.py", "content": "print('He said "hi"')"}}}"#,
        "write_file",
        json!({"path": "a.py", "content": "print('He said \"hi\"')"}),
    );
    // print("...") in the middle of multi-line content, raw newlines too.
    assert_call(
        "{\"thought\": \"t\", \"action\": {\"name\": \"write_file\", \"args\": {\"path\": \"hello.py\", \"content\": \"def main():\n    print(\"Hello, world!\")\n\nmain()\n\"}}}",
        "write_file",
        json!({"path": "hello.py", "content": "def main():\n    print(\"Hello, world!\")\n\nmain()\n"}),
    );
    // A quote before a comma that starts no key is content: a call's arguments.
    assert_call(
        r#"{"action": {"name": "write_file", "args": {"path": "m.py", "content": "print("a", "b")", "mode": "w"}}}"#,
        "write_file",
        json!({"path": "m.py", "content": "print(\"a\", \"b\")", "mode": "w"}),
    );
    // HTML attributes.
    assert_call(
        r#"{"action": {"name": "write_file", "args": {"path": "i.html", "content": "<a href="x.html">x</a>"}}}"#,
        "write_file",
        json!({"path": "i.html", "content": "<a href=\"x.html\">x</a>"}),
    );
    // Content that ends with a quote.
    assert_call(
        r#"{"action": {"name": "write_file", "args": {"path": "s.py", "content": "s = "abc""}}}"#,
        "write_file",
        json!({"path": "s.py", "content": "s = \"abc\""}),
    );
}

#[test]
fn unescaped_json_inside_content_is_read_whole() {
    // package.json written as raw JSON inside "content": its `"name": "app",`
    // looks like a key of the args; only the whole reading balances.
    assert_call(
        r#"{"thought": "create package.json", "action": {"name": "write_file", "args": {"path": "package.json", "content": "{"name": "app", "version": "1.0.0"}"}}}"#,
        "write_file",
        json!({"path": "package.json", "content": "{\"name\": \"app\", \"version\": \"1.0.0\"}"}),
    );
    assert_call(
        r#"{"action": {"name": "write_file", "args": {"path": "d.py", "content": "d = {"a": 1, "b": [2, 3]}"}}}"#,
        "write_file",
        json!({"path": "d.py", "content": "d = {\"a\": 1, \"b\": [2, 3]}"}),
    );
}

#[test]
fn unescaped_quotes_in_a_thought() {
    // Models quote words in their reasoning.
    let d = parsed(
        r#"{"thought": "The file says "hello" and the "fix" is "easy"", "action": {"name": "read_file", "args": {"path": "a.txt"}}}"#,
    );
    assert_eq!(
        d.thought,
        "The file says \"hello\" and the \"fix\" is \"easy\""
    );
    assert_eq!(d.action.name, "read_file");
    assert_eq!(d.action.args, json!({"path": "a.txt"}));
    assert!(d.repaired);
}

#[test]
fn strings_that_end_before_a_comma_or_brace_still_end_there() {
    // Another repair (single quotes) sends these through the repair path,
    // where the quote scan must not move any string's end.
    assert_call(
        r#"{"thought": "say "hi"", 'action': {"name": "w", "args": {"a": "x", "b": "y"}}}"#,
        "w",
        json!({"a": "x", "b": "y"}),
    );
    assert_call(
        "{\"thought\": \"a \"b\" c\", \"action\": {\"name\": \"w\", \"args\": {\"a\": \"(open\", \"b\": \"x\"}}}",
        "w",
        json!({"a": "(open", "b": "x"}),
    );
    // A missing comma is a missing comma, not a quote inside a string.
    assert_call(
        "{\"action\": {\"name\": \"w\", \"args\": {\"a\": \"x\" \"b\": \"y\"}}}",
        "w",
        json!({"a": "x", "b": "y"}),
    );
}

#[test]
fn single_quotes_inside_a_string_with_unescaped_quotes_stay_content() {
    // Found by the proptest below: a `'` after an unescaped `"` is not the
    // start of a single-quoted string, even after a `,`.
    for content in ["\"'", "\",'',", "say \"it's\", 'ok'"] {
        let raw = format!(
            "{{\"action\": {{\"name\": \"write_file\", \"args\": {{\"path\": \"a.txt\", \"content\": \"{content}\"}}}}}}"
        );
        assert_call(
            &raw,
            "write_file",
            json!({"path": "a.txt", "content": content}),
        );
    }
}

#[test]
fn unescaped_quotes_in_a_cut_off_reply() {
    // The token limit cut the content: what is there is kept, quotes included.
    assert_call(
        r#"{"thought": "t", "action": {"name": "write_file", "args": {"path": "a.py", "content": "print('He said "hi"')"#,
        "write_file",
        json!({"path": "a.py", "content": "print('He said \"hi\"')"}),
    );
}

#[test]
fn unsettled_quotes_are_an_error_not_a_guess() {
    // `"b", "d":` could end the string; then `]` cannot follow. No reading fits.
    assert_eq!(
        parse_decision(r#"{"action": {"name": "w", "args": {"c": "a "b", "d": ]}}}"#),
        Err(DecisionError::UnescapedQuotes)
    );
}

// Backslashes that start no JSON escape: Windows paths written raw.

#[test]
fn windows_paths_keep_their_backslashes() {
    // The reported case: `\U`, `\m`, `\D` are not JSON escapes, so the path was
    // written raw; its `\n` (of `\notes.txt`) is then literal too.
    assert_call(
        r#"{"action": {"name": "read_file", "args": {"path": "C:\Users\me\Desktop\notes.txt"}}}"#,
        "read_file",
        json!({"path": r"C:\Users\me\Desktop\notes.txt"}),
    );
    assert_call(
        r#"{"thought": "list it", "action": {"name": "list_dir", "args": {"path": "D:\projects\my_app\src"}}}"#,
        "list_dir",
        json!({"path": r"D:\projects\my_app\src"}),
    );
    // A directory path ending in a backslash: `\"` there ends the string.
    assert_call(
        r#"{"action": {"name": "list_dir", "args": {"path": "C:\Users\me\"}}}"#,
        "list_dir",
        json!({"path": r"C:\Users\me\"}),
    );
}

#[test]
fn invalid_escapes_outside_paths_are_literal_and_valid_ones_keep_their_meaning() {
    // A regex in code content: `\d` and `\s` are literal, `\n` is a newline,
    // `\"` a quote, `\\` one backslash, `\u00e9` an é.
    assert_call(
        r#"{"action": {"name": "write_file", "args": {"path": "r.py", "content": "import re\nprint(re.findall(\"\d+\s\", s), '\\', \"\u00e9\")"}}}"#,
        "write_file",
        json!({"path": "r.py", "content": "import re\nprint(re.findall(\"\\d+\\s\", s), '\\', \"é\")"}),
    );
    // `\'` is an apostrophe, in double- and single-quoted strings alike.
    assert_call(
        r#"{'action': {'name': 'w', 'args': {'a': "it\'s", 'b': 'don\'t', 'c': 'C:\Temp'}}}"#,
        "w",
        json!({"a": "it's", "b": "don't", "c": r"C:\Temp"}),
    );
}

#[test]
fn valid_escapes_in_a_path_are_the_known_ambiguity() {
    // `C:\new\file.txt` is valid JSON: `\n` is a newline and `\f` a form feed.
    // Nothing in the text says otherwise, so it is read as JSON says.
    let d = parsed(r#"{"action": {"name": "read_file", "args": {"path": "C:\new\file.txt"}}}"#);
    assert_eq!(d.action.args["path"], "C:\new\u{c}ile.txt");
    // With one escape JSON does not know, the path is raw throughout.
    let d = parsed(r#"{"action": {"name": "read_file", "args": {"path": "C:\Users\new.txt"}}}"#);
    assert_eq!(d.action.args["path"], r"C:\Users\new.txt");
}

// Action names written as call expressions. Models trained on Python tool
// use (Qwen2.5-Coder, Phi-3) or ReAct prompts write the call itself.

#[test]
fn call_expression_names_with_keyword_arguments() {
    // Inside the JSON name, with an empty args object beside it.
    assert_call(
        r#"{"action": {"name": "read_file(path='notes.txt')", "args": {}}}"#,
        "read_file",
        json!({"path": "notes.txt"}),
    );
    // As the whole action string, Python keyword style, several types.
    assert_call(
        r#"{"thought": "t", "action": "write_file(path=\"out.txt\", content='a, (b)', append=False, retries=3, note=None)"}"#,
        "write_file",
        json!({"path": "out.txt", "content": "a, (b)", "append": false, "retries": 3, "note": null}),
    );
    // Args beside the call are merged with it.
    assert_call(
        r#"{"action": {"name": "write_file(path='a.txt')", "args": {"content": "x"}}}"#,
        "write_file",
        json!({"path": "a.txt", "content": "x"}),
    );
    // A lone object argument is the args (LangChain-style).
    assert_call(
        r#"{"action": "write_file({\"path\": \"a.txt\", \"content\": \"x\"})"}"#,
        "write_file",
        json!({"path": "a.txt", "content": "x"}),
    );
    // A finish's lone argument is its result.
    let d = parsed(r#"{"thought": "done", "action": "final_answer('42 apples')"}"#);
    assert!(d.is_finish());
    assert_eq!(d.result.as_deref(), Some("42 apples"));
    let d = parsed(r#"{"action": "finish(result=\"ok\")"}"#);
    assert_eq!(d.result.as_deref(), Some("ok"));
    assert!(d.repaired);
}

#[test]
fn react_action_lines_written_as_calls() {
    // `k: v` style, as in ReAct few-shot prompts.
    let d =
        parsed("Thought: I will write the file.\nAction: write_file(path: \"x\", content: \"y\")");
    assert_eq!(d.thought, "I will write the file.");
    assert_eq!(d.action.name, "write_file");
    assert_eq!(d.action.args, json!({"path": "x", "content": "y"}));
    assert_call(
        "Action: read_file(path=\"notes.txt\")\nObservation: (the model goes on and imagines one)",
        "read_file",
        json!({"path": "notes.txt"}),
    );
    // A triple-quoted multi-line argument holding JSON: the JSON is an
    // argument, not the decision.
    assert_call(
        "Thought: t\nAction: write_file(path=\"package.json\", content='''{\"name\": \"app\",\n \"version\": \"1.0.0\"}''')",
        "write_file",
        json!({"path": "package.json", "content": "{\"name\": \"app\",\n \"version\": \"1.0.0\"}"}),
    );
    // Windows paths in a call keep their backslashes too.
    assert_call(
        r"Action: read_file(path='C:\Users\me\notes.txt')",
        "read_file",
        json!({"path": r"C:\Users\me\notes.txt"}),
    );
}

#[test]
fn positional_call_arguments_are_an_error_quoting_the_call() {
    for raw in [
        r#"{"thought": "t", "action": "write_file('README.md', 'hello')"}"#,
        "Thought: t\nAction: read_file(\"notes.txt\")",
        r#"{"action": {"name": "write_file('a.txt', content='x')", "args": {}}}"#,
    ] {
        let err = parse_decision(raw).unwrap_err();
        assert!(
            matches!(err, DecisionError::PositionalArgs { .. }),
            "{raw}: {err:?}"
        );
        let message = err.to_string();
        assert!(message.contains("by position"), "{message}");
        assert!(message.contains("\"args\""), "{message}");
    }
    let message =
        parse_decision(r#"{"thought": "t", "action": "write_file('README.md', 'hello')"}"#)
            .unwrap_err()
            .to_string();
    assert!(
        message.contains("`write_file('README.md', 'hello')`"),
        "{message}"
    );
    assert!(message.contains("\"name\": \"write_file\""), "{message}");
}

#[test]
fn incomplete_or_unreadable_calls_are_an_error_quoting_the_call() {
    let cases = [
        // Cut off by the token limit.
        r#"{"action": "write_file(path='a.txt', content='hello"}"#,
        "Action: write_file(path=\"a.txt\", content=\"hel",
        // Unbalanced parentheses.
        r#"{"action": {"name": "read_file(path='a.txt'", "args": {}}}"#,
        // A bare word is not a value: a variable? a file name?
        "Action: read_file(path=notes.txt)",
        // The call differs from the args beside it.
        r#"{"action": {"name": "read_file(path='a')", "args": {"path": "b"}}}"#,
        // Text after the call.
        r#"{"action": "read_file(path='a') then write_file(path='b')"}"#,
    ];
    for raw in cases {
        let err = parse_decision(raw).unwrap_err();
        assert!(
            matches!(err, DecisionError::BadCall { .. }),
            "{raw}: {err:?}"
        );
        assert!(err.to_string().contains('`'), "{err}");
    }
    let message = parse_decision("Action: read_file(path=\"notes.t")
        .unwrap_err()
        .to_string();
    assert!(message.contains("`read_file(path=\"notes.t`"), "{message}");
    assert!(message.contains("cut off"), "{message}");
}

#[test]
fn tool_names_with_whitespace_or_parentheses_are_refused() {
    for raw in [
        r#"{"action": {"name": "read file", "args": {}}}"#,
        r#"{"action": "read_file)"}"#,
        r#"{"action": {"name": "read_file (", "args": {}}}"#,
    ] {
        let err = parse_decision(raw).unwrap_err();
        assert!(
            matches!(
                err,
                DecisionError::BadToolName { .. } | DecisionError::BadCall { .. }
            ),
            "{raw}: {err:?}"
        );
    }
    assert_eq!(
        parse_decision(r#"{"action": {"name": "read file", "args": {}}}"#),
        Err(DecisionError::BadToolName {
            name: "read file".into()
        })
    );
}

#[test]
fn json_values_lists_every_object_and_array_once() {
    let raw = "<think>{\"hidden\": 1}</think>Plan: {'a': 1} then ```json\n[1, 2]\n``` and {\"b\": \"say \"hi\"\"} and \"not json\" {";
    assert_eq!(
        json_values(raw),
        vec![
            json!([1, 2]),
            json!({"a": 1}),
            json!({"b": "say \"hi\""}),
            json!({})
        ]
    );
    assert_eq!(
        find_json(raw, |v| v.get("b").is_some()),
        Some(json!({"b": "say \"hi\""}))
    );
    assert_eq!(find_all_json(raw, Value::is_object).len(), 3);
    assert!(json_values("no json here").is_empty());
}

/// The invariant every returned decision keeps.
fn assert_plain_name(raw: &str) -> Result<(), TestCaseError> {
    if let Ok(d) = parse_decision(raw) {
        prop_assert!(
            !d.action.name.contains(['(', ')']) && !d.action.name.contains(char::is_whitespace),
            "name {:?} from {:?}",
            d.action.name,
            raw
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(raw in "\\PC{0,300}") {
        assert_plain_name(&raw)?;
        let _ = json_values(&raw);
    }

    #[test]
    fn json_like_noise_never_panics(raw in "[{}\\[\\]\"':,a-z0-9 \\\\\n“”]{0,200}") {
        assert_plain_name(&raw)?;
    }

    #[test]
    fn call_like_noise_never_yields_a_name_with_parentheses_or_spaces(
        name in "[a-z_ ()'\"=:,.0-9\\\\]{0,40}",
        rest in "[a-z_ ()'\"=:,{}\\[\\]0-9\n]{0,40}",
    ) {
        assert_plain_name(&json!({"action": name}).to_string())?;
        assert_plain_name(&json!({"action": {"name": name, "args": {}}}).to_string())?;
        assert_plain_name(&format!("Action: {name}{rest}"))?;
        assert_plain_name(&format!("{{\"action\": \"{name}{rest}\"}}"))?;
    }

    #[test]
    fn unescaped_quotes_in_content_give_the_content_or_an_error(
        content in "[a-z \"',(){\\[\\]]{0,40}",
    ) {
        // The decision with the content's quotes left unescaped: either the
        // content as written or an error, never other arguments. (Without
        // `:` and `}`: with them a content such as `x", "k": "y` makes text
        // that is valid JSON meaning something else.)
        let raw = format!("{{\"thought\": \"t\", \"action\": {{\"name\": \"write_file\", \"args\": {{\"path\": \"a.txt\", \"content\": \"{content}\"}}}}}}");
        if let Ok(d) = parse_decision(&raw) {
            prop_assert_eq!(&d.action.name, "write_file", "from {}", raw);
            prop_assert_eq!(
                &d.action.args,
                &json!({"path": "a.txt", "content": content}),
                "from {}", raw
            );
        }
    }

    #[test]
    fn decisions_with_arbitrary_text_args_round_trip(path in "\\PC{0,40}", thought in "[a-zA-Z ]{0,40}") {
        let raw = serde_json::to_string(&json!({"thought": thought, "action": {"name": "read_file", "args": {"path": path}}})).unwrap();
        let d = parse_decision(&raw).unwrap();
        prop_assert_eq!(d.action.args["path"].as_str(), Some(path.as_str()));
    }
}

/// What the general path makes of `text` read as one JSON value.
fn by_normalize(text: &str) -> Option<Decision> {
    shape::normalize(serde_json::from_str(text).ok()?, None).ok()
}

#[test]
fn the_canonical_shape_reads_as_the_general_path_does() {
    for text in [
        r#"{"thought": "t", "action": {"name": "read_file", "args": {"path": "a.txt"}}}"#,
        r#"{"action": {"args": {"b": [1, {"c": null}], "a": 1}, "name": "run_code"}, "thought": ""}"#,
        r#"{"thought": "no args", "action": {"name": "list_dir"}}"#,
        r#"{"thought": "t", "action": {"name": "read_file", "args": {}}}"#,
    ] {
        let fast = canonical(text).expect(text);
        assert_eq!(Some(&fast), by_normalize(text).as_ref(), "{text}");
        assert!(!fast.repaired);
    }
    // Other shapes, finishes, odd names and odd args go the general way.
    for text in [
        r#"{"thought": "t", "action": {"name": "finish", "args": {"result": "x"}}}"#,
        r#"{"thought": "t", "action": {"name": "Final_Answer", "args": {}}}"#,
        r#"{"thought": "t", "action": {"name": "read_file(path='a')", "args": {}}}"#,
        r#"{"thought": "t", "action": {"name": " read_file", "args": {}}}"#,
        r#"{"thought": "t", "action": {"name": "", "args": {}}}"#,
        r#"{"thought": "t", "action": {"name": "read_file", "args": null}}"#,
        r#"{"thought": "t", "action": {"name": "read_file", "args": "{\"path\": \"a\"}"}}"#,
        r#"{"thought": "t", "action": {"name": "read_file", "args": {}}, "args": {"path": "a"}}"#,
        r#"{"thought": "t", "action": {"name": "read_file", "args": {}, "result": 1}}"#,
        r#"{"thought": 1, "action": {"name": "read_file", "args": {}}}"#,
        r#"{"thought": "t", "thought": "u", "action": {"name": "read_file"}}"#,
    ] {
        assert!(canonical(text).is_none(), "{text}");
    }
}

proptest! {
    #[test]
    fn canonical_decisions_read_as_the_general_path_reads_them(
        thought in "\\PC{0,30}",
        name in "[a-zA-Z_0-9]{0,12}",
        key in "[a-z]{1,6}",
        value in "\\PC{0,20}",
    ) {
        let text = json!({"thought": thought, "action": {"name": name, "args": {key: value}}}).to_string();
        if let Some(fast) = canonical(&text) {
            prop_assert_eq!(Some(fast), by_normalize(&text));
        }
        let finish = ["finish", "final_answer", "answer", "done", "final"]
            .contains(&name.to_ascii_lowercase().as_str());
        prop_assert_eq!(canonical(&text).is_some(), !name.is_empty() && !finish);
    }
}

#[test]
fn finish_aliases_are_read_up_to_case_spaces_and_hyphens() {
    for name in [
        "finish",
        "Final Answer",
        "final-answer",
        "FINAL_ANSWER",
        "Done",
        "final",
    ] {
        assert!(super::shape::is_finish_alias(name), "{name}");
    }
    for name in [
        "finished",
        "final answers",
        "fin",
        "",
        "read_file",
        "final__answer",
    ] {
        assert!(!super::shape::is_finish_alias(name), "{name}");
    }
    // A canonical reply whose name is an alias in another case still
    // finishes (the strict path leaves it to the general one).
    let d = parsed(r#"{"thought": "t", "action": {"name": "Done", "args": {"result": "r"}}}"#);
    assert!(d.is_finish());
    assert_eq!(d.result.as_deref(), Some("r"));
}
