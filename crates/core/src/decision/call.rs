//! Reads an action written as a call expression, as models used to Python
//! or ReAct prompts write one: `read_file(path="notes.txt")`,
//! `write_file(path: "x", content: 'y')`, `finish("done")`.
//!
//! Values may be strings (single, double or triple quoted, with Python's
//! escapes), numbers, `true`/`false`/`True`/`False`, `None`/`null`, or JSON
//! (or Python-literal) arrays and objects. Anything else, a call cut off
//! before its closing parenthesis included, is an error naming the reason:
//! the call is never guessed at.

use serde_json::{Map, Number, Value};

use super::json::parse_value;

/// A call expression: the tool name and its arguments as written.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Call {
    /// The name before the parenthesis.
    pub(super) name: String,
    /// Arguments given by position, in order.
    pub(super) positional: Vec<Value>,
    /// Arguments given by name (`k=v` or `k: v`).
    pub(super) named: Map<String, Value>,
    /// Byte offset in the parsed text just after the closing parenthesis.
    pub(super) end: usize,
}

/// Reads the call expression at the start of `text` (leading whitespace
/// allowed). `Ok(None)` when the text does not start with `name(`;
/// `Err(reason)` when it does but the call cannot be read.
pub(super) fn parse(text: &str) -> Result<Option<Call>, String> {
    let mut p = Parser { s: text, i: 0 };
    p.skip_ws();
    let name = p.ident();
    if name.is_empty() {
        return Ok(None);
    }
    // `read_file (x)`, but not `read_file` and a parenthesis on the next line.
    while matches!(p.peek(), Some(' ' | '\t')) {
        p.bump();
    }
    if p.peek() != Some('(') {
        return Ok(None);
    }
    p.bump();
    let mut call = Call {
        name: name.to_string(),
        positional: Vec::new(),
        named: Map::new(),
        end: 0,
    };
    loop {
        p.skip_ws();
        match p.peek() {
            None => return Err(CUT_OFF.into()),
            Some(')') => {
                p.bump();
                break;
            }
            Some(_) => {}
        }
        match p.argument()? {
            (Some(key), value) => {
                if call.named.insert(key.clone(), value).is_some() {
                    return Err(format!("`{key}` is given twice"));
                }
            }
            (None, value) => call.positional.push(value),
        }
        p.skip_ws();
        match p.bump() {
            Some(',') => {}
            Some(')') => break,
            None => return Err(CUT_OFF.into()),
            Some(c) => return Err(format!("`{c}` where `,` or `)` should follow an argument")),
        }
    }
    call.end = p.i;
    Ok(Some(call))
}

const CUT_OFF: &str = "it is cut off or its parentheses or quotes are unbalanced";

struct Parser<'a> {
    s: &'a str,
    /// Byte offset of the next character.
    i: usize,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<char> {
        self.s[self.i..].chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.i += c.len_utf8();
        Some(c)
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.bump();
        }
    }

    /// A name: a letter or `_`, then letters, digits, `_`, `.` or `-`.
    fn ident(&mut self) -> &'a str {
        let start = self.i;
        if self
            .peek()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        {
            while self
                .peek()
                .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
            {
                self.bump();
            }
        }
        &self.s[start..self.i]
    }

    /// One argument: `key=value`, `key: value`, `"key": value`, or a value.
    fn argument(&mut self) -> Result<(Option<String>, Value), String> {
        let start = self.i;
        let key = match self.peek() {
            Some(q @ ('"' | '\'')) => Some(self.string(q)?),
            Some(c) if c.is_ascii_alphabetic() || c == '_' => Some(self.ident().to_string()),
            _ => None,
        };
        if let Some(key) = key {
            self.skip_ws();
            let rest = &self.s[self.i..];
            if rest.starts_with(':') || (rest.starts_with('=') && !rest.starts_with("==")) {
                self.bump();
                return Ok((Some(key), self.value()?));
            }
            self.i = start;
        }
        Ok((None, self.value()?))
    }

    fn value(&mut self) -> Result<Value, String> {
        self.skip_ws();
        match self.peek() {
            None => Err(CUT_OFF.into()),
            Some(q @ ('"' | '\'')) => self.string(q).map(Value::String),
            Some('{' | '[') => self.bracketed(),
            Some(_) => self.literal(),
        }
    }

    /// A quoted string with Python's escapes; an escape Python does not know
    /// keeps its backslash (`'C:\Users'`). As in JSON text, a string that
    /// starts with a drive letter and holds such an escape is a Windows path
    /// written with raw backslashes: all of them are literal.
    fn string(&mut self, quote: char) -> Result<String, String> {
        let triple: String = [quote; 3].iter().collect();
        let is_triple = self.s[self.i..].starts_with(&triple);
        self.i += if is_triple { 3 } else { 1 };
        let start = self.i;
        let mut out = String::new();
        let mut unknown_escape = false;
        loop {
            let end = self.i;
            if is_triple && self.s[self.i..].starts_with(&triple) {
                self.i += 3;
            } else {
                match self.bump() {
                    None => return Err(CUT_OFF.into()),
                    Some(c) if c == quote && !is_triple => {}
                    Some('\\') => {
                        unknown_escape |= self.escape(&mut out)?;
                        continue;
                    }
                    Some(c) => {
                        out.push(c);
                        continue;
                    }
                }
            }
            let source = &self.s[start..end];
            return Ok(if unknown_escape && starts_with_drive(source) {
                raw_path(source, quote)
            } else {
                out
            });
        }
    }

    /// Decodes the escape after a backslash; true when Python knows no such
    /// escape (the backslash is then kept).
    fn escape(&mut self, out: &mut String) -> Result<bool, String> {
        let Some(c) = self.bump() else {
            return Err(CUT_OFF.into());
        };
        match c {
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            '\\' | '\'' | '"' => out.push(c),
            // A line continuation.
            '\n' => {}
            'u' => {
                let hex = self.s.get(self.i..self.i + 4).unwrap_or("");
                match u32::from_str_radix(hex, 16).ok().and_then(char::from_u32) {
                    Some(ch) if hex.chars().all(|h| h.is_ascii_hexdigit()) => {
                        out.push(ch);
                        self.i += 4;
                    }
                    _ => {
                        out.push_str("\\u");
                        return Ok(true);
                    }
                }
            }
            other => {
                out.push('\\');
                out.push(other);
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// A JSON (or Python-literal) array or object, read by the same lenient
    /// machinery as decisions.
    fn bracketed(&mut self) -> Result<Value, String> {
        let start = self.i;
        let mut depth = 0usize;
        let mut quote: Option<char> = None;
        while let Some(c) = self.bump() {
            match quote {
                Some(q) => match c {
                    '\\' => {
                        self.bump();
                    }
                    _ if c == q => quote = None,
                    _ => {}
                },
                None => match c {
                    '"' | '\'' => quote = Some(c),
                    '{' | '[' => depth += 1,
                    '}' | ']' => {
                        depth -= 1;
                        if depth == 0 {
                            let text = &self.s[start..self.i];
                            return parse_value(text).map(|(value, _)| value).map_err(|_| {
                                format!("`{}` is not a readable value", excerpt(text))
                            });
                        }
                    }
                    _ => {}
                },
            }
        }
        Err(CUT_OFF.into())
    }

    /// A number, a boolean or None/null.
    fn literal(&mut self) -> Result<Value, String> {
        let start = self.i;
        while self
            .peek()
            .is_some_and(|c| !c.is_whitespace() && !matches!(c, ',' | ')' | ']' | '}'))
        {
            self.bump();
        }
        let token = &self.s[start..self.i];
        if token.is_empty() {
            return Err("an argument has no value".into());
        }
        if self.peek().is_none() {
            return Err(CUT_OFF.into());
        }
        let value = match token {
            "true" | "True" => Value::Bool(true),
            "false" | "False" => Value::Bool(false),
            "None" | "null" => Value::Null,
            _ => number(token).ok_or_else(|| {
                format!(
                    "`{}` is not a quoted string, a number, true/false or None",
                    excerpt(token)
                )
            })?,
        };
        Ok(value)
    }
}

/// Whether `s` starts with a drive letter, a colon and a backslash.
fn starts_with_drive(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 3 && b[0].is_ascii_alphabetic() && b[1] == b':' && b[2] == b'\\'
}

/// A raw Windows path's text: every backslash literal, except that `\\\\`
/// is one backslash and `\\'`/`\\"` is the quote.
fn raw_path(source: &str, quote: char) -> String {
    let mut out = String::with_capacity(source.len());
    let mut chars = source.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' && chars.peek().is_some_and(|&n| n == '\\' || n == quote) {
            out.extend(chars.next());
        } else {
            out.push(c);
        }
    }
    out
}

fn number(token: &str) -> Option<Value> {
    if let Ok(n) = token.parse::<i64>() {
        return Some(Value::Number(n.into()));
    }
    if !token.starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == '.') {
        return None;
    }
    token
        .parse::<f64>()
        .ok()
        .and_then(Number::from_f64)
        .map(Value::Number)
}

/// `text` shortened for an error message: its first line, at most 120
/// characters.
pub(super) fn excerpt(text: &str) -> String {
    let text = text.trim();
    let line = text.lines().next().unwrap_or("");
    let short: String = line.chars().take(120).collect();
    if short.len() < text.len() {
        format!("{short}…")
    } else {
        short
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn call(text: &str) -> Call {
        parse(text)
            .unwrap_or_else(|e| panic!("{text:?}: {e}"))
            .unwrap_or_else(|| panic!("{text:?}: not a call"))
    }

    #[test]
    fn keyword_arguments_in_both_spellings() {
        let c = call(r#"write_file(path="a.py", content: 'x = 1\n', n=3, f=False, z=None)"#);
        assert_eq!(c.name, "write_file");
        assert!(c.positional.is_empty());
        assert_eq!(
            Value::Object(c.named),
            json!({"path": "a.py", "content": "x = 1\n", "n": 3, "f": false, "z": null})
        );
    }

    #[test]
    fn strings_hold_parentheses_commas_and_other_quotes() {
        let c = call(r#"write_file(path='a.py', content='print("a, b)")')"#);
        assert_eq!(c.named["content"], "print(\"a, b)\")");
        let c = call("write_file(path=\"a.py\", content=\"\"\"line \"one\"\nline two\"\"\")");
        assert_eq!(c.named["content"], "line \"one\"\nline two");
    }

    #[test]
    fn unknown_escapes_keep_their_backslash() {
        let c = call(r"read_file(path='C:\Users\me\notes.txt')");
        assert_eq!(c.named["path"], r"C:\Users\me\notes.txt");
        let c = call(r"grep(pattern='\d+\n')");
        assert_eq!(c.named["pattern"], "\\d+\n");
    }

    #[test]
    fn positional_and_structured_values() {
        let c = call(r#"t("a", 2.5, [1, 2], {'k': True})"#);
        assert_eq!(
            c.positional,
            vec![json!("a"), json!(2.5), json!([1, 2]), json!({"k": true})]
        );
    }

    #[test]
    fn not_calls() {
        for text in [
            "read_file",
            "read file(x)",
            "(x)",
            "",
            "{\"a\": 1}",
            "read_file\n(a note)",
        ] {
            assert_eq!(parse(text), Ok(None), "{text:?}");
        }
    }

    #[test]
    fn unreadable_calls_say_why() {
        for text in [
            "read_file(path='notes.txt'",
            "read_file(path='notes.t",
            "write_file(path='a', content=[1, 2",
            "read_file(path=notes.txt)",
            "read_file(path=)",
            "read_file(path='a' 'b')",
            "read_file(path='a', path='b')",
        ] {
            assert!(parse(text).is_err(), "{text:?}: {:?}", parse(text));
        }
    }
}
