//! Small text helpers shared by the parser, the loop and the tools.

/// The first `max` characters of `s` (never splitting a character), with
/// `…` appended when something was cut.
pub fn clip(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((idx, _)) => format!("{}…", &s[..idx]),
        None => s.to_string(),
    }
}

/// The last `max` characters of `s`, with `…` prepended when something was cut.
pub fn clip_tail(s: &str, max: usize) -> String {
    let total = s.chars().count();
    if total <= max {
        return s.to_string();
    }
    let skip = s.char_indices().nth(total - max).map_or(0, |(i, _)| i);
    format!("…{}", &s[skip..])
}

/// `s` on one line: newlines and runs of whitespace become single spaces.
pub fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The message of a caught panic (`&str` or `String` payloads), for reports.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// The innermost cause of `error` ("Connection refused (os error 111)"),
/// the useful part of a transport error's chain.
pub fn innermost_cause(error: &(dyn std::error::Error + 'static)) -> String {
    let mut reason = error.to_string();
    let mut source = error.source();
    while let Some(inner) = source {
        reason = inner.to_string();
        source = inner.source();
    }
    reason
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_respects_char_boundaries() {
        assert_eq!(clip("héllo", 2), "hé…");
        assert_eq!(clip("中文字", 5), "中文字");
    }

    #[test]
    fn clip_tail_keeps_the_end() {
        assert_eq!(clip_tail("héllo", 2), "…lo");
        assert_eq!(clip_tail("ab", 5), "ab");
    }

    #[test]
    fn one_line_collapses_whitespace() {
        assert_eq!(one_line("a\n b\t\tc"), "a b c");
    }
}
