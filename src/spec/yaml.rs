//! The generic YAML tree the spec reader validates: every node with its byte span.
//!
//! Why a generic tree instead of `#[derive(Deserialize)]` structs: serde stops at the first
//! error, and users must see all of a file's errors at once. The tree is read in one pass by
//! serde-saphyr (with a budget), then `spec::validate` walks it and collects every problem.

use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::{Budget, DuplicateKeyPolicy, MergeKeyPolicy, Spanned};

use crate::codes;
use crate::diagnostic::{Diagnostic, LineIndex, Span};

/// Resource limits for reading one spec. Each has a CLI flag (see `cli`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Bytes of input (`--max-file-size`).
    pub max_bytes: usize,
    /// Nesting depth of mappings and sequences (`--max-depth`).
    pub max_depth: usize,
    /// YAML nodes: scalars, sequences and mappings (`--max-nodes`).
    pub max_nodes: usize,
    /// Alias references (`*name`) (`--max-aliases`).
    pub max_aliases: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bytes: 256 * 1024 * 1024,
            max_depth: 64,
            // A generated spec has ~25 nodes per component; this admits ~2M components while
            // the byte limit still bounds memory.
            max_nodes: 50_000_000,
            max_aliases: 1_000,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    Map(Vec<(Node, Node)>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub value: Value,
    pub span: Span,
}

impl Node {
    /// What the node is, for "expected X, found Y" messages.
    pub fn describe(&self) -> String {
        match &self.value {
            Value::Null => "nothing (null)".into(),
            Value::Bool(b) => format!("the boolean `{b}`"),
            Value::Int(i) => format!("the number `{i}`"),
            Value::Float(f) => format!("the number `{f}`"),
            Value::Str(s) => format!("the string `{s}`"),
            Value::Seq(_) => "a list".into(),
            Value::Map(_) => "a mapping".into(),
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }
}

/// What serde-saphyr hands us: the value with its location.
struct Raw(Value);

impl<'de> Deserialize<'de> for Raw {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(RawVisitor)
    }
}

struct RawVisitor;

impl<'de> Visitor<'de> for RawVisitor {
    type Value = Raw;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any YAML value")
    }
    fn visit_unit<E>(self) -> Result<Raw, E> {
        Ok(Raw(Value::Null))
    }
    fn visit_none<E>(self) -> Result<Raw, E> {
        Ok(Raw(Value::Null))
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Raw, D::Error> {
        Raw::deserialize(d)
    }
    fn visit_bool<E>(self, v: bool) -> Result<Raw, E> {
        Ok(Raw(Value::Bool(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Raw, E> {
        Ok(Raw(Value::Int(v.into())))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Raw, E> {
        Ok(Raw(Value::Int(v.into())))
    }
    fn visit_i128<E>(self, v: i128) -> Result<Raw, E> {
        Ok(Raw(Value::Int(v)))
    }
    fn visit_u128<E>(self, v: u128) -> Result<Raw, E> {
        Ok(Raw(Value::Int(i128::try_from(v).unwrap_or(i128::MAX))))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Raw, E> {
        Ok(Raw(Value::Float(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Raw, E> {
        Ok(Raw(Value::Str(v.to_owned())))
    }
    fn visit_string<E>(self, v: String) -> Result<Raw, E> {
        Ok(Raw(Value::Str(v)))
    }
    fn visit_bytes<E>(self, v: &[u8]) -> Result<Raw, E> {
        Ok(Raw(Value::Str(String::from_utf8_lossy(v).into_owned())))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Raw, A::Error> {
        let mut v = Vec::with_capacity(a.size_hint().unwrap_or(0).min(1024));
        while let Some(x) = a.next_element::<Spanned<Raw>>()? {
            v.push(pending(x));
        }
        Ok(Raw(Value::Seq(v)))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Raw, A::Error> {
        let mut v = Vec::new();
        while let Some((k, x)) = a.next_entry::<Spanned<Raw>, Spanned<Raw>>()? {
            v.push((pending(k), pending(x)));
        }
        Ok(Raw(Value::Map(v)))
    }
}

/// A node whose span still holds serde-saphyr's location: character offset in `offset`,
/// byte offset (if known) in `len`'s place is not available, so we stash line/column and fix
/// them up in [`fix_spans`].
fn pending(s: Spanned<Raw>) -> Node {
    let loc = s.referenced;
    let span = loc.span();
    let (offset, len) = match (span.byte_offset(), span.byte_len()) {
        (Some(o), Some(l)) => (o as usize, l as usize),
        // No byte info: encode line/column so fix_spans can resolve them against the text.
        _ => (usize::MAX - loc.line() as usize, loc.column() as usize),
    };
    Node {
        value: s.value.0,
        span: Span::new(offset, len),
    }
}

fn fix_spans(node: &mut Node, text: &str, index: &LineIndex) {
    if node.span.offset > text.len() {
        let line = usize::MAX - node.span.offset;
        let col = node.span.len;
        node.span = Span::new(index.offset(text, line, col), 1);
    }
    match &mut node.value {
        Value::Seq(items) => items.iter_mut().for_each(|n| fix_spans(n, text, index)),
        Value::Map(items) => items.iter_mut().for_each(|(k, v)| {
            fix_spans(k, text, index);
            fix_spans(v, text, index);
        }),
        _ => {}
    }
}

/// The serde-saphyr options every spec is read with: the budget from `limits`, duplicates
/// passed through (reported by `spec` with both locations), YAML 1.2 core booleans.
pub fn reader_options(limits: &Limits) -> serde_saphyr::Options {
    let mut budget = Budget::default();
    budget.max_reader_input_bytes = Some(limits.max_bytes);
    budget.max_depth = limits.max_depth;
    budget.max_nodes = limits.max_nodes;
    budget.max_events = limits.max_nodes.saturating_mul(3);
    budget.max_aliases = limits.max_aliases;
    budget.max_total_scalar_bytes = limits.max_bytes;
    serde_saphyr::options! {
        budget: Some(budget),
        // Duplicates are reported by `spec::validate`, with both locations and all at once.
        duplicate_keys: DuplicateKeyPolicy::PassThrough,
        merge_keys: MergeKeyPolicy::Merge,
        // YAML 1.2 core booleans only: `y`, `yes`, `on`, `no` are plausible names (an output
        // `y`, an attribute `no`), and YAML 1.1's reading of them surprises users.
        strict_booleans: true,
        with_snippet: false,
    }
}

/// Reads `text` into a tree, or returns the one fatal diagnostic of an unreadable document.
pub fn parse(text: &str, limits: &Limits) -> Result<Node, Box<Diagnostic>> {
    let index = LineIndex::new(text);
    if text.len() > limits.max_bytes {
        return Err(Box::new(
            Diagnostic::new(
                &codes::LIMIT,
                format!(
                    "the spec is {} bytes, more than the limit of {} bytes",
                    text.len(),
                    limits.max_bytes
                ),
            )
            .at(Span::new(0, 0), "file too large")
            .help("raise the limit with --max-file-size BYTES"),
        ));
    }
    let options = reader_options(limits);
    match serde_saphyr::from_str_with_options::<Spanned<Raw>>(text, options) {
        Ok(root) => {
            let mut node = pending(root);
            fix_spans(&mut node, text, &index);
            Ok(node)
        }
        Err(e) => Err(Box::new(convert_error(&e, text, &index, limits))),
    }
}

fn convert_error(
    e: &serde_saphyr::Error,
    text: &str,
    index: &LineIndex,
    limits: &Limits,
) -> Diagnostic {
    let offset = e.location().filter(|l| l.line() > 0).map_or(0, |l| {
        index.offset(text, l.line() as usize, l.column() as usize)
    });
    let span = Span::new(offset, 1.min(text.len() - offset));
    if let serde_saphyr::Error::Budget { breach, .. } = e {
        use serde_saphyr::budget::BudgetBreach as B;
        let (what, flag, value) = match breach {
            B::Depth { .. } => ("nesting depth", "--max-depth", limits.max_depth),
            B::Nodes { .. } | B::Events { .. } => {
                ("number of YAML nodes", "--max-nodes", limits.max_nodes)
            }
            B::Aliases { .. }
            | B::AliasAnchorRatio { .. }
            | B::RecordedAnchorEvents { .. }
            | B::RecordedAnchorBytes { .. } => (
                "number of alias expansions",
                "--max-aliases",
                limits.max_aliases,
            ),
            B::InputBytes { .. } | B::ScalarBytes { .. } => {
                ("input size in bytes", "--max-file-size", limits.max_bytes)
            }
            _ => ("YAML reader budget", "--max-nodes", limits.max_nodes),
        };
        return Diagnostic::new(
            &codes::LIMIT,
            format!("the spec exceeds the {what} limit of {value}"),
        )
        .at(span, "limit reached here")
        .help(format!(
            "raise the limit with {flag} N if this spec is trusted"
        ));
    }
    if let serde_saphyr::Error::MultipleDocuments { .. } = e {
        return Diagnostic::new(
            &codes::YAML_SYNTAX,
            "the file holds more than one YAML document; a spec is a single document",
        )
        .at(span, "second document starts here")
        .help("put each dataflow in its own file");
    }
    let raw = e.without_snippet().to_string();
    // Some budget breaches (anchor replay) arrive as plain messages rather than
    // `Error::Budget`; they are still limits, not syntax errors.
    if raw.contains("budget breached") {
        let (what, flag, value) = if raw.contains("Anchor") || raw.contains("Alias") {
            (
                "number of alias expansions",
                "--max-aliases",
                limits.max_aliases,
            )
        } else if raw.contains("Depth") {
            ("nesting depth", "--max-depth", limits.max_depth)
        } else {
            ("number of YAML nodes", "--max-nodes", limits.max_nodes)
        };
        return Diagnostic::new(
            &codes::LIMIT,
            format!("the spec exceeds the {what} limit of {value}"),
        )
        .at(span, "limit reached here")
        .help(format!(
            "raise the limit with {flag} N if this spec is trusted"
        ));
    }
    let msg = raw.rfind(" at line ").map_or(raw.as_str(), |i| &raw[..i]);
    let msg = msg.trim_start_matches("error: ").trim_end_matches('.');
    Diagnostic::new(&codes::YAML_SYNTAX, format!("invalid YAML: {msg}")).at(span, "here")
}
