//! What `write_file` checks of a file's content against the format its
//! name promises: a `.json` file holds JSON, a `.jsonl` file one JSON value
//! per line, a `.toml` file TOML. A small model asked to convert a CSV to
//! JSON writes the CSV text into `team.json` and calls the work done
//! (EVALS.md, section 33); told why the file was not written, it can build
//! the JSON.

/// What to do with content meant for a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Checked {
    /// Write it as it is.
    Fine,
    /// Write this instead (the same data, a wrapper dropped), and say so.
    Unwrapped(String),
    /// Do not write it: the content is not what the name promises.
    Refused(String),
}

/// The format a file named `shown` promises, if one is checked.
fn format_of(shown: &str) -> Option<&'static str> {
    let ext = shown.rsplit_once('.')?.1.to_ascii_lowercase();
    match ext.as_str() {
        "json" => Some("JSON"),
        "jsonl" | "ndjson" => Some("JSON Lines"),
        "toml" => Some("TOML"),
        _ => None,
    }
}

/// Why `content` is not in `format`, or None when it is.
fn problem(format: &str, content: &str) -> Option<String> {
    match format {
        "JSON" => serde_json::from_str::<serde_json::Value>(content)
            .err()
            .map(|e| e.to_string()),
        "JSON Lines" => content
            .lines()
            .enumerate()
            .filter(|(_, line)| !line.trim().is_empty())
            .find_map(|(i, line)| {
                serde_json::from_str::<serde_json::Value>(line)
                    .err()
                    .map(|e| format!("line {}: {e}", i + 1))
            }),
        _ => toml::from_str::<toml::Table>(content)
            .err()
            .map(|e| e.message().to_string()),
    }
}

/// The text inside one Markdown code fence around all of `content`.
fn unfenced(content: &str) -> Option<&str> {
    let inner = content.trim().strip_prefix("```")?.strip_suffix("```")?;
    let (first, rest) = inner.split_once('\n')?;
    first
        .chars()
        .all(|c| c.is_ascii_alphanumeric())
        .then_some(rest)
}

/// Checks `content` meant for the file shown as `shown`.
pub fn check(shown: &str, content: &str) -> Checked {
    let Some(format) = format_of(shown) else {
        return Checked::Fine;
    };
    let Some(why) = problem(format, content) else {
        return Checked::Fine;
    };
    if let Some(inner) = unfenced(content).filter(|inner| problem(format, inner).is_none()) {
        return Checked::Unwrapped(inner.to_string());
    }
    Checked::Refused(format!(
        "not written: `{shown}` must hold {format}, and this content is not {format} ({why}); the file was left as it is. \
         Write the data itself in {format} syntax{}",
        if format == "TOML" {
            ""
        } else {
            " (objects in {}, lists in [], text in double quotes), or build it in run_code with json.dumps"
        }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_json_file_gets_json_or_a_reason() {
        assert_eq!(check("team.json", r#"[{"name": "Ana"}]"#), Checked::Fine);
        let Checked::Refused(why) = check("out/team.JSON", "name,team\nAna,core\n") else {
            panic!("CSV text in a .json file was written");
        };
        assert!(
            why.starts_with("not written: `out/team.JSON` must hold JSON, and this content is not JSON (expected ident at line 1 column 2)"),
            "{why}"
        );
        assert_eq!(
            check("a.json", "```json\n{\"a\": 1}\n```"),
            Checked::Unwrapped("{\"a\": 1}\n".into())
        );
        // Other names are not checked.
        assert_eq!(check("notes.txt", "{oops"), Checked::Fine);
        assert_eq!(check("Makefile", "{oops"), Checked::Fine);
    }

    #[test]
    fn json_lines_and_toml_are_checked_line_by_line_and_whole() {
        assert_eq!(
            check("a.jsonl", "{\"a\": 1}\n\n{\"a\": 2}\n"),
            Checked::Fine
        );
        let Checked::Refused(why) = check("a.jsonl", "{\"a\": 1}\n{a: 2}\n") else {
            panic!("a broken line was written");
        };
        assert!(why.contains("(line 2: key must be a string"), "{why}");
        assert_eq!(check("app.toml", "[server]\nport = 8080\n"), Checked::Fine);
        assert!(matches!(
            check("app.toml", "port: 8080"),
            Checked::Refused(_)
        ));
    }
}
