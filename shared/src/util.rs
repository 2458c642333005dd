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

#[cfg(test)]
mod tests {
    use super::*;

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
