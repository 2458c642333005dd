//! Every log line at most [`MAX_LINE_BYTES`], whoever wrote the event (this project's crates,
//! rmcp, lambda_runtime, hyper, the AWS SDK): a caller's value that reached a field must not
//! make a line of megabytes. The cut happens in the writer, after formatting, so no event can
//! get around it. A JSON line stays valid JSON: the longest string values are shortened, each
//! ending in a marker that says how long it was (`…(cut, N bytes)`); a text line is shortened
//! and ends in the same marker.
//!
//! Nor may a value forge a line: the writer holds one event's output, so every newline before
//! its last, and every other control, bidirectional or line-separator character, is escaped
//! there (`\n`, `\u001b`), in text and JSON alike. A message's or a caller's text never starts
//! a log line of its own.

use std::io::{self, Write};

use tracing_subscriber::fmt::MakeWriter;

use domain::shown::is_unsafe;

/// The longest line written, its newline included.
pub const MAX_LINE_BYTES: usize = 8 * 1024;

/// A [`MakeWriter`] whose writers cut each line they are given to [`MAX_LINE_BYTES`].
pub struct CutLines<M> {
    make: M,
}

impl<M> CutLines<M> {
    pub fn new(make: M) -> Self {
        Self { make }
    }
}

impl<'a, M: MakeWriter<'a>> MakeWriter<'a> for CutLines<M> {
    type Writer = CutLine<M::Writer>;

    fn make_writer(&'a self) -> Self::Writer {
        CutLine::new(self.make.make_writer())
    }

    fn make_writer_for(&'a self, meta: &tracing::Metadata<'_>) -> Self::Writer {
        CutLine::new(self.make.make_writer_for(meta))
    }
}

/// Holds what one event writes (tracing's formatter writes an event's line at once, then drops
/// its writer) and passes it on, each line cut, when flushed or dropped.
pub struct CutLine<W: Write> {
    inner: W,
    held: Vec<u8>,
}

impl<W: Write> CutLine<W> {
    fn new(inner: W) -> Self {
        Self {
            inner,
            held: Vec::new(),
        }
    }

    fn pass_on(&mut self) -> io::Result<()> {
        if self.held.is_empty() {
            return Ok(());
        }
        let held = std::mem::take(&mut self.held);
        let held = one_line(&held);
        if held.len() <= MAX_LINE_BYTES {
            return self.inner.write_all(&held);
        }
        let mut out = Vec::with_capacity(MAX_LINE_BYTES);
        for line in held.split_inclusive(|&b| b == b'\n') {
            let (text, newline) = match line.strip_suffix(b"\n") {
                Some(text) => (text, true),
                None => (line, false),
            };
            out.extend_from_slice(&cut_line(text, MAX_LINE_BYTES - 1));
            if newline {
                out.push(b'\n');
            }
        }
        // One write: the lines of one event are not interleaved with another's.
        self.inner.write_all(&out)
    }
}

impl<W: Write> Write for CutLine<W> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.held.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.pass_on()?;
        self.inner.flush()
    }
}

impl<W: Write> Drop for CutLine<W> {
    fn drop(&mut self) {
        // Nowhere to report a failed log write; tracing's own writer ignores it too.
        let _ = self.pass_on();
    }
}

/// One event's output as one line: each `\n` but a last one, each `\r`, and each character
/// [`is_unsafe`] names escaped as JSON escapes it (valid inside a JSON line's strings, where
/// alone such characters can stand, and plain to read in a text line). Tab stays.
pub fn one_line(held: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    let body = held.strip_suffix(b"\n").unwrap_or(held);
    if body
        .iter()
        .all(|&b| (0x20..0x7f).contains(&b) || b == b'\t')
    {
        return held.into();
    }
    let text = String::from_utf8_lossy(body);
    if !text.chars().any(|c| c == '\n' || is_unsafe(c)) {
        return held.into();
    }
    let mut out = String::with_capacity(held.len() + 16);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if is_unsafe(c) => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    if body.len() < held.len() {
        out.push('\n');
    }
    out.into_bytes().into()
}

fn marker(original_len: usize) -> String {
    format!("…(cut, {original_len} bytes)")
}

/// `line` (without its newline) in at most `max` bytes: unchanged when it fits; a JSON object
/// with its longest string values shortened; anything else cut with a marker.
pub fn cut_line(line: &[u8], max: usize) -> std::borrow::Cow<'_, [u8]> {
    if line.len() <= max {
        return line.into();
    }
    let cut = match json_values(line) {
        Some(values) => cut_json(line, values, max).unwrap_or_else(|| wrap_as_json(line, max)),
        None => cut_text(line, max),
    };
    cut.into()
}

/// The byte ranges of the string values (not the keys) of a one-line JSON object, the quotes
/// excluded; None when the line is not one (an unterminated string, no braces).
fn json_values(line: &[u8]) -> Option<Vec<(usize, usize)>> {
    if line.first() != Some(&b'{') || line.last() != Some(&b'}') {
        return None;
    }
    let mut values = Vec::new();
    let mut i = 0;
    while i < line.len() {
        if line[i] != b'"' {
            i += 1;
            continue;
        }
        let start = i + 1;
        let mut j = start;
        loop {
            match line.get(j)? {
                b'\\' => j += 2,
                b'"' => break,
                _ => j += 1,
            }
        }
        let next = line[j + 1..].iter().find(|b| !b.is_ascii_whitespace());
        if next != Some(&b':') {
            values.push((start, j));
        }
        i = j + 1;
    }
    Some(values)
}

/// The line with its longest string values shortened until it fits in `max`, or None when
/// shortening every one is not enough (a line of many short values).
fn cut_json(line: &[u8], mut values: Vec<(usize, usize)>, max: usize) -> Option<Vec<u8>> {
    let mut excess = line.len() - max;
    values.sort_by_key(|&(start, end)| std::cmp::Reverse(end - start));
    // (start, end, bytes kept, marker) of each value shortened.
    let mut cuts = Vec::new();
    for (start, end) in values {
        let len = end - start;
        let mark = marker(len);
        if len <= mark.len() {
            break;
        }
        let keep = len.saturating_sub(mark.len() + excess);
        let keep = safe_json_cut(&line[start..end], keep);
        let saved = len - keep - mark.len();
        cuts.push((start, end, keep, mark));
        if saved >= excess {
            excess = 0;
            break;
        }
        excess -= saved;
    }
    if excess > 0 {
        return None;
    }
    cuts.sort_by_key(|c| c.0);
    let mut out = Vec::with_capacity(max);
    let mut at = 0;
    for (start, end, keep, mark) in cuts {
        out.extend_from_slice(&line[at..start + keep]);
        out.extend_from_slice(mark.as_bytes());
        at = end;
    }
    out.extend_from_slice(&line[at..]);
    Some(out)
}

/// The largest cut at or before `keep` in a JSON string's raw text that splits neither an
/// escape (`\n`, `\u00e9`) nor a UTF-8 character.
fn safe_json_cut(raw: &[u8], keep: usize) -> usize {
    let mut i = 0;
    while i < keep {
        let step = match raw[i] {
            b'\\' if raw.get(i + 1) == Some(&b'u') => 6,
            b'\\' => 2,
            b => utf8_len(b),
        };
        if i + step > keep {
            break;
        }
        i += step;
    }
    i
}

/// The length of the UTF-8 character a byte starts (1 for a byte that starts none).
fn utf8_len(first: u8) -> usize {
    match first {
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf7 => 4,
        _ => 1,
    }
}

/// The largest cut at or before `keep` that splits no UTF-8 character.
fn char_boundary(text: &[u8], mut keep: usize) -> usize {
    while keep > 0 && keep < text.len() && text[keep] & 0xc0 == 0x80 {
        keep -= 1;
    }
    keep
}

/// A text line's start and the marker.
fn cut_text(line: &[u8], max: usize) -> Vec<u8> {
    let mark = marker(line.len());
    let keep = char_boundary(line, max.saturating_sub(mark.len()));
    let mut out = line[..keep].to_vec();
    out.extend_from_slice(mark.as_bytes());
    out
}

/// A JSON line no shortening of values could fit: its start as one string of a new object,
/// `{"cut_line":"<start>…(cut, N bytes)"}`, still valid JSON.
fn wrap_as_json(line: &[u8], max: usize) -> Vec<u8> {
    const OPEN: &[u8] = b"{\"cut_line\":\"";
    const CLOSE: &[u8] = b"\"}";
    let mark = marker(line.len());
    let budget = max.saturating_sub(OPEN.len() + CLOSE.len() + mark.len());
    let text = String::from_utf8_lossy(line);
    let mut out = OPEN.to_vec();
    for c in text.chars() {
        let escaped = match c {
            '"' => "\\\"".to_owned(),
            '\\' => "\\\\".to_owned(),
            c if (c as u32) < 0x20 => format!("\\u{:04x}", c as u32),
            c => c.to_string(),
        };
        if out.len() - OPEN.len() + escaped.len() > budget {
            break;
        }
        out.extend_from_slice(escaped.as_bytes());
    }
    out.extend_from_slice(mark.as_bytes());
    out.extend_from_slice(CLOSE);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};
    use std::sync::{Arc, Mutex};

    const MAX: usize = MAX_LINE_BYTES - 1;

    fn cut(line: &str) -> String {
        String::from_utf8(cut_line(line.as_bytes(), MAX).into_owned()).unwrap()
    }

    fn parsed(line: &str) -> Value {
        assert!(line.len() <= MAX, "{} bytes", line.len());
        serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"))
    }

    #[test]
    fn a_line_that_fits_is_unchanged() {
        for line in [
            r#"{"level":"INFO","message":"job submitted","inference_id":"a"}"#.to_owned(),
            format!(r#"{{"message":"{}"}}"#, "x".repeat(MAX - 15)),
            "plain text".to_owned(),
        ] {
            assert!(line.len() <= MAX);
            assert_eq!(cut(&line), line);
        }
    }

    #[test]
    fn a_huge_value_is_shortened_and_the_line_stays_json() {
        let big = "x".repeat(300 * 1024);
        let line = json!({"level": "WARN", "message": "refused", "body": big, "n": 7}).to_string();
        let out = cut(&line);
        let v = parsed(&out);
        assert_eq!(
            (v["level"].as_str(), v["message"].as_str()),
            (Some("WARN"), Some("refused"))
        );
        assert_eq!(v["n"], 7);
        let body = v["body"].as_str().unwrap();
        assert!(
            body.ends_with(&format!("…(cut, {} bytes)", 300 * 1024)),
            "{}",
            &body[body.len() - 40..]
        );
        assert!(body.starts_with("xxxx"));
        // As much kept as fits.
        assert!(out.len() > MAX - 8, "{}", out.len());
    }

    #[test]
    fn escapes_and_characters_are_never_split() {
        for unit in ["\"", "\\", "\n", "\u{1}", "é", "😀", "a\"é\\\u{7}"] {
            for extra in 0..7 {
                let value = format!("{}{}", "y".repeat(extra), unit.repeat(20_000));
                let line = json!({"message": "m", "field": value}).to_string();
                let v = parsed(&cut(&line));
                assert!(v["field"].as_str().unwrap().contains("…(cut, "), "{unit:?}");
            }
        }
    }

    #[test]
    fn several_long_values_are_each_shortened_as_needed() {
        let mut fields = serde_json::Map::new();
        fields.insert("message".into(), json!("many"));
        for i in 0..100 {
            fields.insert(format!("f{i}"), json!("z".repeat(1000 + i)));
        }
        let line = Value::Object(fields).to_string();
        let v = parsed(&cut(&line));
        assert_eq!(v["message"], "many");
        assert_eq!(
            v.as_object().unwrap().len(),
            101,
            "every field is still there"
        );
        // The longest went first; the shortest is whole.
        assert!(v["f99"].as_str().unwrap().ends_with("…(cut, 1099 bytes)"));
        assert_eq!(v["f0"].as_str().unwrap().len(), 1000);
    }

    #[test]
    fn keys_are_never_cut_and_a_line_of_many_short_values_is_wrapped() {
        let mut fields = serde_json::Map::new();
        for i in 0..3000 {
            fields.insert(format!("key{i}"), json!(i));
        }
        fields.insert("s".into(), json!("short"));
        let line = Value::Object(fields).to_string();
        let v = parsed(&cut(&line));
        let wrapped = v["cut_line"].as_str().unwrap();
        assert!(wrapped.starts_with(r#"{"key0":0,"#), "{}", &wrapped[..40]);
        assert!(wrapped.ends_with(&format!("…(cut, {} bytes)", line.len())));
    }

    #[test]
    fn a_text_line_is_cut_with_the_marker() {
        let line = format!("INFO mcp_tools: refused body={}", "é".repeat(100_000));
        let out = cut(&line);
        assert!(out.len() <= MAX);
        assert!(out.starts_with("INFO mcp_tools: refused body=é"));
        assert!(out.ends_with(&format!("…(cut, {} bytes)", line.len())));
        // Not JSON-looking, though it starts with a brace.
        let broken = format!("{{\"a\":\"{}", "q".repeat(10_000));
        assert!(cut(&broken).ends_with("…(cut, 10006 bytes)"));
    }

    /// Lines written by a real subscriber, as `init_logging` builds it.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn every_event_is_cut_by_the_writer_whoever_logs_it() {
        let captured = Captured::default();
        let sink = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .json()
            .flatten_event(true)
            .with_span_list(true)
            .with_writer(CutLines::new(move || sink.clone()))
            .finish();
        let big = "b".repeat(300 * 1024);
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!("invocation", request_id = "r-1");
            let _in = span.enter();
            tracing::info!(body = %big, "a caller's body");
            tracing::warn!(target: "hyper::proto", error = ?big, "a dependency's line");
            tracing::info!("short");
        });
        let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        assert_eq!(lines.len(), 3, "one line per event");
        for line in &lines[..2] {
            assert!(line.len() <= MAX_LINE_BYTES, "{}", line.len());
            let v = parsed(line.trim_end());
            assert!(line.contains("…(cut, "), "{}", &line[..100]);
            assert_eq!(v["spans"][0]["request_id"], "r-1");
        }
        assert_eq!(parsed(lines[0].trim_end())["message"], "a caller's body");
        assert_eq!(parsed(lines[2].trim_end())["message"], "short");
        assert!(!lines[2].contains("…(cut"), "{}", lines[2]);
    }

    /// What a subscriber as `init_logging` builds it (text, or JSON) writes for `log`.
    fn written(json: bool, log: impl FnOnce()) -> String {
        let captured = Captured::default();
        let sink = captured.clone();
        let builder = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_writer(CutLines::new(move || sink.clone()));
        if json {
            let subscriber = builder.json().flatten_event(true).finish();
            tracing::subscriber::with_default(subscriber, log);
        } else {
            let subscriber = builder.without_time().finish();
            tracing::subscriber::with_default(subscriber, log);
        }
        let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
        text
    }

    #[test]
    fn a_newline_in_a_value_never_starts_a_log_line_in_either_format() {
        // A refused field's name as a message carried it, and a prompt with a colour code.
        let name = "ok\nINFO pipeline_router: question recorded key=forged";
        let prompt = "\u{1b}[32mApproved\u{1b}[0m\r\nby\u{202e}security\u{2028}team\u{85}";
        for json in [false, true] {
            let out = written(json, || {
                let span = tracing::info_span!("callback", sqs_message_id = %name);
                let _in = span.enter();
                tracing::error!(error = %format!("`properties.{name}`: bad"), prompt = %prompt, "question not recorded");
                tracing::info!(error = ?name, "debug formatted");
                tracing::info!("{name}");
            });
            let lines: Vec<&str> = out.split_inclusive('\n').collect();
            assert_eq!(lines.len(), 3, "one line per event ({json}): {out}");
            for line in &lines {
                let body = line.strip_suffix('\n').unwrap();
                assert!(
                    !body
                        .chars()
                        .any(|c| c.is_control() && c != '\t' || is_unsafe(c)),
                    "{line:?}"
                );
                assert!(!line.starts_with("INFO pipeline_router"), "{line:?}");
                if json {
                    parsed(body);
                }
            }
            // The words are all there, escaped (each format, and tracing's own escapes, differ).
            for words in [
                "INFO pipeline_router: question recorded key=forged",
                "[32mApproved",
                "security",
                "team",
            ] {
                assert!(lines[0].contains(words), "{words}: {}", lines[0]);
            }
            if json {
                let v = parsed(lines[0].trim_end());
                assert_eq!(v["prompt"], prompt, "a JSON reader gets the text back");
            }
        }
    }

    #[test]
    fn a_line_with_nothing_to_escape_is_passed_as_it_is() {
        for held in ["INFO a: b c=d\n", "{\"a\":\"b\\n\té ✓\"}\n", "no newline"] {
            assert!(
                matches!(one_line(held.as_bytes()), std::borrow::Cow::Borrowed(_)),
                "{held}"
            );
        }
        assert_eq!(&*one_line(b"a\nb\n"), b"a\\nb\n");
        assert_eq!(&*one_line("a\u{7f}b".as_bytes()), b"a\\u007fb");
    }
}
