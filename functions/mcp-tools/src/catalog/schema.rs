//! The catalog's JSON Schemas, compiled once with `boon` (draft 2020-12, checked against the
//! draft's metaschema, formats asserted), and a caller's arguments checked against them. A
//! schema refers only to itself: nothing is fetched.

use serde_json::{Map, Value};

use shared::util::quote;

/// A compiled schema's place among the catalog's.
pub(super) type Index = boon::SchemaIndex;

/// A schema that refers outside itself finds nothing: the catalog is checked offline, and a
/// cold start fetches nothing.
struct NothingOutside;

impl boon::UrlLoader for NothingOutside {
    fn load(&self, url: &str) -> Result<Value, Box<dyn std::error::Error>> {
        Err(format!("{url} is outside the catalog; a schema may refer only to itself").into())
    }
}

pub(super) struct Compiler {
    compiler: boon::Compiler,
    schemas: boon::Schemas,
    count: usize,
}

impl Compiler {
    pub(super) fn new() -> Self {
        let mut compiler = boon::Compiler::new();
        compiler.set_default_draft(boon::Draft::V2020_12);
        compiler.enable_format_assertions();
        compiler.use_loader(Box::new(NothingOutside));
        Self {
            compiler,
            schemas: boon::Schemas::new(),
            count: 0,
        }
    }

    /// Compiles one schema; what is wrong with it, in the catalog author's terms.
    pub(super) fn compile(&mut self, schema: &Map<String, Value>) -> Result<Index, String> {
        self.count += 1;
        let url = format!("https://tool-catalog.invalid/{}.json", self.count);
        let said = |e: boon::CompileError| {
            format!("{e:#}")
                .replace(&format!("{url}#"), "the schema")
                .replace(&url, "the schema")
                .replace('\n', " ")
        };
        self.compiler
            .add_resource(&url, Value::Object(schema.clone()))
            .map_err(said)?;
        self.compiler.compile(&url, &mut self.schemas).map_err(said)
    }

    pub(super) fn finish(self) -> Compiled {
        Compiled(self.schemas)
    }
}

/// The catalog's schemas, ready to check arguments.
pub(super) struct Compiled(boon::Schemas);

/// Arguments that break a tool's schema: where (a JSON Pointer into the arguments, empty for
/// the whole object) and which rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.sentence())]
pub struct ArgumentError {
    pub path: String,
    pub rule: String,
}

impl ArgumentError {
    fn sentence(&self) -> String {
        if self.path.is_empty() {
            format!("the arguments: {}", self.rule)
        } else {
            format!("argument {}: {}", self.path, self.rule)
        }
    }
}

/// At most this many violations are named; the rest are counted.
const NAMED: usize = 3;

impl Compiled {
    pub(super) fn check(&self, index: Index, arguments: &Value) -> Result<(), ArgumentError> {
        let Err(error) = self.0.validate(arguments, index) else {
            return Ok(());
        };
        let mut leaves = Vec::new();
        collect_leaves(&error, &mut leaves);
        let first = leaves.first().copied().unwrap_or(&error);
        let mut rule = rule(&first.kind);
        for other in leaves.iter().skip(1).take(NAMED - 1) {
            rule.push_str(&format!(
                "; argument {}: {}",
                pointer(other),
                self::rule(&other.kind)
            ));
        }
        if leaves.len() > NAMED {
            rule.push_str(&format!("; and {} more", leaves.len() - NAMED));
        }
        Err(ArgumentError {
            path: pointer(first),
            rule,
        })
    }
}

/// The violations themselves: the errors no other error explains.
fn collect_leaves<'a, 's, 'v>(
    error: &'a boon::ValidationError<'s, 'v>,
    leaves: &mut Vec<&'a boon::ValidationError<'s, 'v>>,
) {
    if error.causes.is_empty() {
        leaves.push(error);
    }
    for cause in &error.causes {
        collect_leaves(cause, leaves);
    }
}

/// Where in the arguments: property names are the caller's, so a long path is cut.
fn pointer(error: &boon::ValidationError<'_, '_>) -> String {
    cut(error.instance_location.to_string(), 200)
}

fn cut(text: String, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text;
    }
    let head: String = text.chars().take(max_chars).collect();
    format!("{head}…")
}

/// The rule broken, in boon's words, except where those would repeat the caller's value: a
/// caller's value is never echoed whole.
fn rule(kind: &boon::ErrorKind<'_, '_>) -> String {
    use boon::ErrorKind::*;
    let said = match kind {
        Pattern { want, .. } => format!("does not match the pattern {}", quote(want)),
        Format { want, .. } => format!("is not a valid {want}"),
        other => other.to_string(),
    };
    // boon names what it found (property names included): bounded, as every quoted value is.
    cut(said, 300)
}
