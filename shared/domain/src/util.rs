//! Small helpers with no domain meaning.

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Cuts `s` to at most `max` bytes on a character boundary.
pub fn truncate_utf8(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut end = max;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
    s
}

/// The most of a caller's value any answer or log line quotes back.
pub const QUOTE_MAX_CHARS: usize = 200;

/// A caller's value as an answer quotes it: in double quotes, cut after
/// [`QUOTE_MAX_CHARS`] characters (then `…` and how long it was), so a huge argument is
/// never echoed whole.
pub fn quote(value: &str) -> String {
    let total = value.chars().count();
    if total <= QUOTE_MAX_CHARS {
        return format!("{value:?}");
    }
    let head: String = value.chars().take(QUOTE_MAX_CHARS).collect();
    format!("{head:?}… ({total} characters)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_are_cut_after_200_characters_with_the_length() {
        assert_eq!(quote("abc"), "\"abc\"");
        let exact = "é".repeat(200);
        assert_eq!(quote(&exact), format!("{exact:?}"));
        let long = format!("{}{}", "a".repeat(200), "b".repeat(99_800));
        let quoted = quote(&long);
        assert_eq!(
            quoted,
            format!("\"{}\"… (100000 characters)", "a".repeat(200))
        );
    }

    #[test]
    fn hex_is_lowercase_two_digits_per_byte() {
        assert_eq!(hex(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
        assert_eq!(hex(&[]), "");
    }

    #[test]
    fn truncation_respects_char_boundaries() {
        assert_eq!(truncate_utf8("héllo".into(), 2), "h");
        assert_eq!(truncate_utf8("héllo".into(), 3), "hé");
        assert_eq!(truncate_utf8("abc".into(), 10), "abc");
        assert_eq!(truncate_utf8("abc".into(), 0), "");
    }
}
