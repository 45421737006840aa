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

/// Resource limits for reading one spec. Each has a CLI flag (see `cli`) and is reported as
/// S011 naming the flag; `docs/robustness.md` has the table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Bytes of input (`--max-file-size`).
    pub max_bytes: usize,
    /// Nesting depth of mappings and sequences (`--max-depth`).
    pub max_depth: usize,
    /// YAML nodes: scalars, sequences and mappings (`--max-nodes`).
    pub max_nodes: usize,
    /// Alias expansion (`--max-aliases`): YAML events that aliases (`*name`) and merge keys
    /// may copy in total, each scalar one event and each list or mapping two plus its contents.
    /// This, not the number of `*name` references, is what an alias bomb inflates.
    pub max_aliases: usize,
    /// Components in one spec (`--max-components`).
    pub max_components: usize,
    /// Streams in one spec (`--max-streams`).
    pub max_streams: usize,
    /// Attribute names in one gate, seal, order or sealable list (`--max-attributes`).
    pub max_attributes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bytes: 256 * 1024 * 1024,
            max_depth: 64,
            // A generated spec has ~25 nodes per component; this admits ~2M components while
            // the byte limit still bounds memory.
            max_nodes: 50_000_000,
            max_aliases: 20_000,
            max_components: 1_000_000,
            max_streams: 4_000_000,
            max_attributes: 256,
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
            Value::Str(s) if s.chars().count() > 60 => format!(
                "the string `{}…` ({} characters)",
                s.chars().take(40).collect::<String>(),
                s.chars().count()
            ),
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
        node.span = Span::char_at(text, index.offset(text, line, col));
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

/// Reads `text` into a tree, or returns the one fatal diagnostic of an unreadable document.
pub fn parse(text: &str, limits: &Limits) -> Result<Node, Box<Diagnostic>> {
    let index = LineIndex::new(text);
    if text.len() > limits.max_bytes {
        return Err(Box::new(
            Diagnostic::new(
                &codes::LIMIT,
                // The CLI stops reading one byte past the limit, so the true size is unknown.
                format!(
                    "the spec is larger than {} bytes, the file size limit",
                    limits.max_bytes
                ),
            )
            .at(Span::new(0, 0), "file too large")
            .help("if this spec is trusted, raise the limit with --max-file-size BYTES; see `blazes explain S011`"),
        ));
    }
    match deserialize_with_stack(text, limits) {
        Ok(root) => {
            let mut node = pending(root);
            fix_spans(&mut node, text, &index);
            Ok(node)
        }
        Err(e) => Err(Box::new(convert_error(&e, text, &index, limits))),
    }
}

/// The serde-saphyr options every spec is read with: the budget and alias limits from
/// `limits`, duplicates passed through (reported by `spec` with both locations), merge keys
/// merged, YAML 1.2 core booleans. Built where they are used: they are not `Send`.
pub fn reader_options(limits: &Limits) -> serde_saphyr::Options {
    let mut budget = Budget::default();
    budget.max_reader_input_bytes = Some(limits.max_bytes);
    budget.max_depth = limits.max_depth;
    budget.max_nodes = limits.max_nodes;
    budget.max_events = limits.max_nodes.saturating_mul(3);
    budget.max_total_scalar_bytes = limits.max_bytes;
    // Every alias reference replays at least one event and every merge key one alias, so these
    // never trip before `max_total_replayed_events` does; they keep the scan-time checks
    // consistent with the one limit users see.
    budget.max_aliases = limits.max_aliases;
    budget.max_merge_keys = limits.max_aliases;
    budget.max_anchors = limits.max_nodes;
    // Anchored content is recorded once per enclosing anchor; bounded by the nodes of the file
    // plus what aliases replay into it.
    budget.max_recorded_anchor_events = limits
        .max_nodes
        .min(1_000_000)
        .saturating_add(limits.max_aliases.saturating_mul(2));
    // The ratio heuristic would reject a spec that uses one small anchor many times, which is
    // harmless: the replay limit bounds the real cost.
    budget.enforce_alias_anchor_ratio = false;
    let mut alias_limits = serde_saphyr::options::AliasLimits::default();
    alias_limits.max_total_replayed_events = limits.max_aliases;
    alias_limits.max_replay_stack_depth = limits.max_depth;
    alias_limits.max_alias_expansions_per_anchor = usize::MAX;
    serde_saphyr::options! {
        budget: Some(budget),
        alias_limits: alias_limits,
        // Duplicates are reported by `spec::validate`, with both locations and all at once.
        duplicate_keys: DuplicateKeyPolicy::PassThrough,
        merge_keys: MergeKeyPolicy::Merge,
        // YAML 1.2 core booleans only: `y`, `yes`, `on`, `no` are plausible names (an output
        // `y`, an attribute `no`), and YAML 1.1's reading of them surprises users.
        strict_booleans: true,
        with_snippet: false,
    }
}

/// Deserializes on a thread whose stack fits `max_depth` levels of nesting. The reader
/// recurses once per level, with frames of tens of kilobytes in debug builds, so at the
/// default depth limit it overflows a 2 MiB thread (the size of test and many library users'
/// threads): the depth limit must be what stops deep input, never the caller's stack.
fn deserialize_with_stack(
    text: &str,
    limits: &Limits,
) -> Result<Spanned<Raw>, serde_saphyr::Error> {
    let read = || serde_saphyr::from_str_with_options::<Spanned<Raw>>(text, reader_options(limits));
    const PER_LEVEL: usize = 96 * 1024;
    const MAX_STACK: usize = 1 << 30;
    let stack = limits
        .max_depth
        .saturating_add(32)
        .saturating_mul(PER_LEVEL)
        .clamp(8 << 20, MAX_STACK);
    std::thread::scope(|s| {
        let worker = std::thread::Builder::new()
            .name("blazes-yaml".into())
            .stack_size(stack)
            .spawn_scoped(s, read);
        match worker {
            Ok(handle) => match handle.join() {
                Ok(result) => result,
                // A panic in the reader is a bug; re-raise it where the caller can see it.
                Err(panic) => std::panic::resume_unwind(panic),
            },
            // No thread available (a sandbox with a thread limit): read on this one.
            Err(_) => read(),
        }
    })
}

/// Which limit a reader error is, if it is one: (what, value, flag).
fn limit_of(e: &serde_saphyr::Error, limits: &Limits) -> Option<(String, &'static str)> {
    use serde_saphyr::Error as E;
    use serde_saphyr::budget::BudgetBreach as B;
    let mut e = e;
    // Errors met while replaying an alias come wrapped with the alias's locations.
    while let E::WithSnippet { error, .. } | E::AliasError { error, .. } = e {
        e = error;
    }
    let aliases = (
        format!(
            "the spec's aliases (`*name`) and merge keys expand to more than {} YAML events, the alias expansion limit",
            limits.max_aliases
        ),
        "--max-aliases",
    );
    let depth = (
        format!(
            "the spec nests lists and mappings deeper than {} levels, the depth limit",
            limits.max_depth
        ),
        "--max-depth",
    );
    let nodes = (
        format!(
            "the spec has more than {} YAML nodes, the node limit",
            limits.max_nodes
        ),
        "--max-nodes",
    );
    let bytes = (
        format!(
            "the spec's text exceeds {} bytes, the file size limit",
            limits.max_bytes
        ),
        "--max-file-size",
    );
    Some(match e {
        E::AliasReplayLimitExceeded { .. }
        | E::AliasExpansionLimitExceeded { .. }
        | E::AliasReplayCounterOverflow { .. } => aliases,
        E::AliasReplayStackDepthExceeded { .. } => depth,
        E::Budget { breach, .. } => match breach {
            B::Depth { .. } => depth,
            B::Nodes { .. } | B::Events { .. } | B::Anchors { .. } => nodes,
            B::Aliases { .. }
            | B::AliasAnchorRatio { .. }
            | B::MergeKeys { .. }
            | B::RecordedAnchorEvents { .. }
            | B::RecordedAnchorBytes { .. } => aliases,
            B::InputBytes { .. } | B::ScalarBytes { .. } => bytes,
            // Documents are rejected as a format rule before this matters; the rest are
            // features (includes, properties) the reader does not enable.
            _ => nodes,
        },
        _ => return None,
    })
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
    let span = Span::char_at(text, offset);
    if let Some((message, flag)) = limit_of(e, limits) {
        return Diagnostic::new(&codes::LIMIT, message)
            .at(span, "limit reached here")
            .help(format!(
                "if this spec is trusted, raise the limit with {flag} N; see `blazes explain S011`"
            ));
    }
    if let serde_saphyr::Error::MultipleDocuments { .. } = e.without_snippet() {
        // Point at the `---` that starts the second document rather than at its first line.
        let marker = text[..offset]
            .match_indices("\n---")
            .last()
            .map_or(offset, |(i, _)| i + 1);
        let span = Span::new(marker, 3.min(text.len() - marker));
        return Diagnostic::new(
            &codes::YAML_SYNTAX,
            "the file holds more than one YAML document, but a spec is a single document",
        )
        .at(span, "second document starts here")
        .help("put each dataflow in its own file and pass them all to `blazes check`");
    }
    let raw = e.without_snippet().to_string();
    let msg = raw.rfind(" at line ").map_or(raw.as_str(), |i| &raw[..i]);
    let msg = msg.trim_start_matches("error: ").trim_end_matches('.');
    // Single line, whatever the parser's message looked like.
    let msg = msg.split_whitespace().collect::<Vec<_>>().join(" ");
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let line = &text[line_start..];
    let indent = &line[..line.len() - line.trim_start().len()];
    if let Some(tab) = indent.find('\t') {
        return Diagnostic::new(
            &codes::YAML_SYNTAX,
            "invalid YAML: a tab is used for indentation, but YAML indents with spaces only",
        )
        .at(Span::new(line_start + tab, 1), "tab here")
        .help("replace the tabs at the start of the line with spaces");
    }
    if let Some(c) = text[offset..]
        .chars()
        .next()
        .filter(|c| c.is_control() && !matches!(c, '\t' | '\n' | '\r'))
    {
        return Diagnostic::new(
            &codes::YAML_SYNTAX,
            format!(
                "invalid YAML: the control character U+{:04X} is not allowed in a spec",
                u32::from(c)
            ),
        )
        .at(Span::new(offset, c.len_utf8()), "control character")
        .help("a spec is text; remove the character, or check that this is the file you meant");
    }
    if msg.contains("merge value must be") {
        return Diagnostic::new(&codes::YAML_SYNTAX, format!("invalid YAML: {msg}"))
            .at(span, "here")
            .help("a merge key (`<<: *anchor`) takes a mapping or a list of mappings");
    }
    Diagnostic::new(&codes::YAML_SYNTAX, format!("invalid YAML: {msg}")).at(span, "here")
}
