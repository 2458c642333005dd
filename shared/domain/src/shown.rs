//! Text a person is shown (a question's prompt, a field's title or description), made safe to
//! show: no character that moves the cursor, recolours a terminal, reorders what is read
//! (bidirectional controls) or breaks a line where none was written. Each such character
//! becomes a visible mark, so the words stay and tampering shows.

use std::borrow::Cow;

use serde_json::Value;

/// What stands where an unsafe character was.
pub const MARK: char = '\u{FFFD}';

/// A character no person is shown as it is: C0 controls other than tab and newline, DEL, C1
/// controls, the bidirectional controls and marks, and the Unicode line and paragraph
/// separators.
pub fn is_unsafe(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{8}' | '\u{B}'..='\u{1F}' | '\u{7F}'..='\u{9F}'
        | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
        | '\u{200E}' | '\u{200F}' | '\u{061C}'
        | '\u{2028}' | '\u{2029}')
}

/// `text` with each unsafe character replaced by [`MARK`]; borrowed when it holds none.
pub fn shown(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(
        text.chars()
            .map(|c| if is_unsafe(c) { MARK } else { c })
            .collect(),
    )
}

/// An elicitation's `requestedSchema` with each property's `title` and `description` made
/// safe to show. Names and enum values are left as they are: they go back to SageMaker, so a
/// question whose names or values hold unsafe characters is refused when it is read.
pub fn shown_schema(schema: &Value) -> Value {
    let mut schema = schema.clone();
    if let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        for property in properties.values_mut() {
            for key in ["title", "description"] {
                if let Some(Value::String(text)) = property.get_mut(key) {
                    if let Cow::Owned(safe) = shown(text) {
                        *text = safe;
                    }
                }
            }
        }
    }
    schema
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_unsafe_character_becomes_a_mark_and_the_words_stay() {
        for c in [
            '\u{0}', '\u{7}', '\u{8}', '\u{B}', '\u{C}', '\r', '\u{1B}', '\u{1F}', '\u{7F}',
            '\u{80}', '\u{85}', '\u{9F}', '\u{202A}', '\u{202B}', '\u{202C}', '\u{202D}',
            '\u{202E}', '\u{2066}', '\u{2067}', '\u{2068}', '\u{2069}', '\u{200E}', '\u{200F}',
            '\u{061C}', '\u{2028}', '\u{2029}',
        ] {
            let text = format!("Approve{c} deploy?");
            assert_eq!(shown(&text), format!("Approve{MARK} deploy?"), "{c:?}");
        }
        // Tab and newline are a person's own layout; other text is untouched and not copied.
        let plain = "Deploy\tto\nproduction? é ✓ 日本";
        assert!(matches!(shown(plain), Cow::Borrowed(p) if p == plain));
        assert_eq!(
            shown("\u{1b}[31mSecurity review passed\u{1b}[0m"),
            "\u{FFFD}[31mSecurity review passed\u{FFFD}[0m"
        );
    }

    #[test]
    fn a_schema_is_shown_with_safe_titles_and_descriptions_and_its_names_and_values_kept() {
        let schema = json!({"type": "object", "required": ["a"], "properties": {
            "a": {"type": "string", "enum": ["x"], "title": "A\u{202E}b", "description": "c\u{2028}d"},
            "n": {"type": "number"}}});
        assert_eq!(
            shown_schema(&schema),
            json!({"type": "object", "required": ["a"], "properties": {
                "a": {"type": "string", "enum": ["x"], "title": "A\u{FFFD}b", "description": "c\u{FFFD}d"},
                "n": {"type": "number"}}})
        );
    }
}
