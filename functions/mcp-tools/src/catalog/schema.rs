//! The catalog's JSON Schemas, compiled once with `boon` (draft 2020-12, checked against the
//! draft's metaschema, formats asserted), and a caller's arguments checked against them: their
//! size first, then the sizes the schema bounds (see [`Bounds`]), then boon. A schema refers
//! only to itself: nothing is fetched.

use std::fmt::{Display, Write as _};
use std::sync::OnceLock;

use serde_json::{Map, Value};

use super::bounds::{Bounds, Breach, Step};
use crate::contract::MAX_INPUT_BYTES;
use domain::util::quote;

/// A schema that refers outside itself finds nothing: the catalog is checked offline, and a
/// cold start fetches nothing.
struct NothingOutside;

impl boon::UrlLoader for NothingOutside {
    fn load(&self, url: &str) -> Result<Value, Box<dyn std::error::Error>> {
        Err(format!("{url} is outside the catalog; a schema may refer only to itself").into())
    }
}

/// One tool's input schema, compiled once, when the catalog is loaded: before a deploy
/// (`make catalog`) a schema's mistake refuses the catalog; at a cold start it refuses that
/// tool's calls alone.
pub(super) struct ToolSchema {
    compiled: Result<Compiled, String>,
}

/// A schema boon has compiled, and the sizes it bounds.
struct Compiled {
    schemas: boon::Schemas,
    index: boon::SchemaIndex,
    bounds: Bounds,
}

impl std::fmt::Debug for ToolSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolSchema")
            .field("compiled", &self.compiled.is_ok())
            .finish_non_exhaustive()
    }
}

impl ToolSchema {
    /// A schema compiled now; what is wrong with it, in the catalog author's terms.
    pub(super) fn compiled_now(source: &Map<String, Value>) -> Result<Self, String> {
        Ok(Self {
            compiled: Ok(compile(source)?),
        })
    }

    /// A schema compiled now, which, when it does not compile, refuses its tool's calls and
    /// says why in the log, once.
    pub(super) fn compiled_alone(source: &Map<String, Value>) -> Self {
        let compiled = compile(source);
        if let Err(problem) = &compiled {
            // The operator's schema, not a caller's value: safe to log whole.
            tracing::error!(%problem, "a catalog tool's input schema is refused; the tool cannot be called");
        }
        Self { compiled }
    }
}

/// The JSON Schema dialect a catalog's schemas are written in.
pub(super) const DRAFT_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";

/// Where a tool's schema is placed for boon. boon checks a schema against its draft's
/// metaschema from one set it compiles for all five drafts at its first use: about 2 ms of
/// every cold start with a catalog. It skips that check for a schema under json-schema.org,
/// its own; so a tool's schema is placed there, and [`compile`] checks it first against the one
/// draft a catalog may use, compiled alone (under 1 ms). The URL is never shown: messages say
/// "the schema".
const URL: &str = "https://json-schema.org/tool-catalog/schema.json";
/// What a relative `$ref` is resolved against, left out of messages.
const BASE: &str = "https://json-schema.org/tool-catalog/";

/// The 2020-12 metaschema, compiled once per process, as boon compiles its own (formats
/// asserted): the same check, with the same words.
fn metaschema() -> Result<&'static (boon::Schemas, boon::SchemaIndex), String> {
    static METASCHEMA: OnceLock<Result<(boon::Schemas, boon::SchemaIndex), String>> =
        OnceLock::new();
    METASCHEMA
        .get_or_init(|| {
            let mut compiler = boon::Compiler::new();
            compiler.enable_format_assertions();
            let mut schemas = boon::Schemas::new();
            let index = compiler
                .compile(DRAFT_2020_12, &mut schemas)
                .map_err(|e| format!("the 2020-12 metaschema does not compile: {e:#}"))?;
            Ok((schemas, index))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Compiles one schema with its own compiler, once it passes the metaschema: a schema refers
/// only to itself.
fn compile(schema: &Map<String, Value>) -> Result<Compiled, String> {
    // boon's words, with "the schema" for the URL, and a relative `$ref` as written.
    let said = |words: String| {
        words
            .replace(&format!("{URL}#"), "the schema")
            .replace(URL, "the schema")
            .replace(BASE, "")
            .replace('\n', " ")
    };
    let source = Value::Object(schema.clone());
    let (metaschemas, draft) = metaschema()?;
    if let Err(e) = metaschemas.validate(&source, *draft) {
        // As boon words its own check (CompileError::ValidationError).
        return Err(said(format!("{URL}# is not valid against metaschema: {e}")));
    }
    let mut compiler = boon::Compiler::new();
    compiler.set_default_draft(boon::Draft::V2020_12);
    compiler.enable_format_assertions();
    compiler.use_loader(Box::new(NothingOutside));
    let said = |e: boon::CompileError| said(format!("{e:#}"));
    compiler.add_resource(URL, source).map_err(said)?;
    let mut schemas = boon::Schemas::new();
    let index = compiler.compile(URL, &mut schemas).map_err(said)?;
    Ok(Compiled {
        schemas,
        index,
        bounds: Bounds::read(schema),
    })
}

/// Arguments that break a tool's schema: where (a JSON Pointer into the arguments, empty for
/// the whole object) and which rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.sentence())]
pub struct ArgumentError {
    pub path: String,
    pub rule: String,
}

impl ArgumentError {
    /// Worded as every tool's argument errors are: the argument first, in backticks (its path
    /// within the arguments for a nested value, `customers/0/plan`), then what is wrong.
    fn sentence(&self) -> String {
        if self.path.is_empty() {
            format!("the arguments: {}", self.rule)
        } else {
            format!("{}: {}", named(&self.path), self.rule)
        }
    }
}

/// An argument as the tools name one: `name`, or `outer/0/inner` (a JSON Pointer without its
/// leading `/`).
fn named(pointer: &str) -> String {
    format!("`{}`", pointer.strip_prefix('/').unwrap_or(pointer))
}

/// At most this many violations are named; the rest are counted.
const NAMED: usize = 3;

/// At most this many of boon's violations are kept to be read.
const KEPT: usize = 10;

/// How much of a path into the arguments, or of a rule, an answer repeats.
const PATH_MAX_CHARS: usize = domain::util::QUOTE_MAX_CHARS;
const RULE_MAX_CHARS: usize = 300;

impl ToolSchema {
    /// The arguments' size, then the sizes the schema bounds, then the whole schema: each step
    /// refuses before the next costs anything. A schema that does not compile refuses every
    /// call, saying so (the log has the mistake).
    pub(super) fn check(&self, arguments: &Value) -> Result<(), ArgumentError> {
        if json_size_within(arguments, MAX_INPUT_BYTES).is_none() {
            return Err(ArgumentError {
                path: String::new(),
                rule: format!(
                    "more than {MAX_INPUT_BYTES} bytes as JSON; the limit is {MAX_INPUT_BYTES} bytes (4 MiB)"
                ),
            });
        }
        let Ok(compiled) = &self.compiled else {
            return Err(ArgumentError {
                path: String::new(),
                rule: "cannot be checked: this tool's input schema in the catalog is refused \
                       (the deployment's check-catalog names the mistake)"
                    .into(),
            });
        };
        if let Err(breach) = compiled.bounds.check(arguments) {
            return Err(breach.into());
        }
        let Err(error) = compiled.schemas.validate(arguments, compiled.index) else {
            return Ok(());
        };
        let mut leaves = Leaves::default();
        leaves.collect(&error);
        let first = leaves.kept.first().copied().unwrap_or(&error);
        let mut rule = rule(&first.kind);
        for other in leaves.kept.iter().skip(1).take(NAMED - 1) {
            rule.push_str(&format!(
                "; {}: {}",
                named(&pointer(other)),
                self::rule(&other.kind)
            ));
        }
        if leaves.count > NAMED {
            rule.push_str(&format!("; and {} more", leaves.count - NAMED));
        }
        Err(ArgumentError {
            path: pointer(first),
            rule,
        })
    }
}

/// The size of `value` as compact JSON when it is at most `limit` bytes: counted as it is
/// written, nothing kept, stopping as soon as the limit is passed.
pub(super) fn json_size_within(value: &Value, limit: usize) -> Option<usize> {
    struct Counter {
        bytes: usize,
        limit: usize,
    }
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.bytes += buf.len();
            if self.bytes > self.limit {
                return Err(std::io::ErrorKind::Other.into());
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter { bytes: 0, limit };
    serde_json::to_writer(&mut counter, value).ok()?;
    Some(counter.bytes)
}

impl From<Breach<'_>> for ArgumentError {
    fn from(breach: Breach<'_>) -> Self {
        let path = cut(Steps(&breach.steps), PATH_MAX_CHARS);
        Self {
            path,
            rule: breach.rule,
        }
    }
}

/// A JSON Pointer into the arguments, written as boon writes one, from steps innermost first.
struct Steps<'a, 'v>(&'a [Step<'v>]);

impl Display for Steps<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for step in self.0.iter().rev() {
            f.write_char('/')?;
            match step {
                // Escaped as written, never copied whole: the name is the caller's.
                Step::Property(name) => {
                    for c in name.chars() {
                        match c {
                            '~' => f.write_str("~0")?,
                            '/' => f.write_str("~1")?,
                            c => f.write_char(c)?,
                        }
                    }
                }
                Step::Item(i) => write!(f, "{i}")?,
            }
        }
        Ok(())
    }
}

/// The violations themselves (the errors no other error explains): the first [`KEPT`], and
/// how many there are in all.
#[derive(Default)]
struct Leaves<'a, 's, 'v> {
    kept: Vec<&'a boon::ValidationError<'s, 'v>>,
    count: usize,
}

impl<'a, 's, 'v> Leaves<'a, 's, 'v> {
    fn collect(&mut self, error: &'a boon::ValidationError<'s, 'v>) {
        if error.causes.is_empty() {
            self.count += 1;
            if self.kept.len() < KEPT {
                self.kept.push(error);
            }
        }
        for cause in &error.causes {
            self.collect(cause);
        }
    }
}

/// Where in the arguments: property names are the caller's, so a long path is cut.
fn pointer(error: &boon::ValidationError<'_, '_>) -> String {
    cut(&error.instance_location, PATH_MAX_CHARS)
}

/// `text` as written, cut after `max_chars` characters (then `…`): never more is held.
fn cut(text: impl Display, max_chars: usize) -> String {
    struct Cut {
        text: String,
        left: usize,
        over: bool,
    }
    impl std::fmt::Write for Cut {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            for c in s.chars() {
                if self.left == 0 {
                    self.over = true;
                    // Stops the writer: nothing more is needed.
                    return Err(std::fmt::Error);
                }
                self.text.push(c);
                self.left -= 1;
            }
            Ok(())
        }
    }
    let mut out = Cut {
        text: String::new(),
        left: max_chars,
        over: false,
    };
    let _ = write!(out, "{text}");
    if out.over {
        out.text.push('…');
    }
    out.text
}

/// At most this many of a list the caller's value makes (names, positions) are written.
const LISTED: usize = 10;

/// The rule broken, in boon's words, except where those would repeat the caller's value: a
/// caller's value is never echoed whole.
fn rule(kind: &boon::ErrorKind<'_, '_>) -> String {
    use boon::ErrorKind::*;
    match kind {
        Pattern { want, .. } => cut(
            format_args!("does not match the pattern {}", quote(want)),
            RULE_MAX_CHARS,
        ),
        Format { want, .. } => format!("is not a valid {want}"),
        // Lists as long as the caller's value: boon would write every entry.
        AdditionalProperties { got } if got.len() > LISTED => {
            let some = AdditionalProperties {
                got: got[..LISTED].to_vec(),
            };
            let more = got.len() - LISTED;
            cut(format_args!("{some} (and {more} more)"), RULE_MAX_CHARS)
        }
        MinContains { got, want } if got.len() > LISTED => listed_positions("minimum", *want, got),
        MaxContains { got, want } if got.len() > LISTED => listed_positions("maximum", *want, got),
        other => cut(other, RULE_MAX_CHARS),
    }
}

/// boon's words for `minContains`/`maxContains`, the positions cut to [`LISTED`].
fn listed_positions(which: &str, want: usize, got: &[usize]) -> String {
    let first: Vec<String> = got[..LISTED].iter().map(ToString::to_string).collect();
    format!(
        "{which} {want} items required to match contains schema, but found {} items at {}, …",
        got.len(),
        first.join(", ")
    )
}
