//! Small text helpers shared by the parser, the loop and the tools.

/// The first `max` characters of `s` (never splitting a character), with
/// `…` appended when something was cut.
pub fn clip(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((idx, _)) => format!("{}…", &s[..idx]),
        None => s.to_string(),
    }
}

/// [`clip`] that borrows `s` when nothing is cut.
pub fn clip_cow(s: &str, max: usize) -> std::borrow::Cow<'_, str> {
    // At most `max` bytes is at most `max` characters.
    if s.len() <= max {
        return std::borrow::Cow::Borrowed(s);
    }
    match s.char_indices().nth(max) {
        Some(_) => std::borrow::Cow::Owned(clip(s, max)),
        None => std::borrow::Cow::Borrowed(s),
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

/// [`one_line`] that borrows `s` when it is one line already (no
/// whitespace but single spaces between words).
pub fn one_line_cow(s: &str) -> std::borrow::Cow<'_, str> {
    let bytes = s.as_bytes();
    let plain = !s.starts_with(' ')
        && !s.ends_with(' ')
        && !bytes.windows(2).any(|pair| pair == b"  ")
        && !s.chars().any(|c| c.is_whitespace() && c != ' ');
    if plain {
        std::borrow::Cow::Borrowed(s)
    } else {
        std::borrow::Cow::Owned(one_line(s))
    }
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

    #[test]
    fn the_borrowing_forms_agree_with_the_copying_ones() {
        for s in [
            "",
            "a b",
            " a",
            "a ",
            "a  b",
            "a\tb",
            "a\u{a0}b",
            "中文 字",
            "héllo wörld",
        ] {
            assert_eq!(one_line_cow(s), one_line(s), "{s:?}");
            for max in [0, 1, 2, 3, 5, 20] {
                assert_eq!(clip_cow(s, max), clip(s, max), "{s:?} {max}");
            }
        }
        assert!(matches!(one_line_cow("a b"), std::borrow::Cow::Borrowed(_)));
        assert!(matches!(clip_cow("中文", 2), std::borrow::Cow::Borrowed(_)));
    }
}
