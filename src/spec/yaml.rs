//! The generic YAML tree the spec reader validates: every node with its byte span.
//!
//! Why a generic tree instead of `#[derive(Deserialize)]` structs: serde stops at the first
//! error, and users must see all of a file's errors at once. Why trees of entries rather than
//! one tree of the file: a tree costs several times its text (a node and a string per scalar),
//! and a spec of a million components has tens of millions of nodes. So [`read`] streams the
//! root mapping through serde-saphyr (with a budget) and hands the spec reader one small tree
//! per component, stream, source or sink, which it validates and drops; [`parse`] still reads
//! a whole tree, for tools that edit specs.

use std::fmt;

use serde::de::{Deserialize, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::localizer::ExternalMessageSource;
use serde_saphyr::{Budget, DuplicateKeyPolicy, Location, MergeKeyPolicy};

mod seeds;

use crate::codes;
use crate::diagnostic::{Diagnostic, LineIndex, Span};
use seeds::{RootSeed, SpannedSeed, spanned};

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

/// One of the [`Limits`], named by the flag that raises it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    FileSize,
    Depth,
    Nodes,
    Aliases,
    Components,
    Streams,
    Attributes,
}

/// What a file is (a report's summary names it) and what was being read when a limit was
/// reached (the help of its S011 asks whether it is trusted).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    /// A spec.
    Spec,
    /// An engine's topology file (`blazes import`, `--from`).
    Topology,
    /// A catalogue of operators.
    Catalogue,
}

impl Input {
    /// What the file is, as a summary names it: `spec`, `topology`, `catalogue`.
    pub fn noun(self) -> &'static str {
        match self {
            Input::Spec => "spec",
            Input::Topology => "topology",
            Input::Catalogue => "catalogue",
        }
    }
}

impl Limit {
    /// Every limit, in the order of [`Limits`]' fields.
    pub const ALL: [Limit; 7] = [
        Limit::FileSize,
        Limit::Depth,
        Limit::Nodes,
        Limit::Aliases,
        Limit::Components,
        Limit::Streams,
        Limit::Attributes,
    ];

    /// The flag that raises it (`--max-depth`).
    pub fn flag(self) -> &'static str {
        match self {
            Limit::FileSize => "--max-file-size",
            Limit::Depth => "--max-depth",
            Limit::Nodes => "--max-nodes",
            Limit::Aliases => "--max-aliases",
            Limit::Components => "--max-components",
            Limit::Streams => "--max-streams",
            Limit::Attributes => "--max-attributes",
        }
    }

    /// The flag's value as `--help` names it (`BYTES` for the file size, else `N`).
    pub fn value_name(self) -> &'static str {
        match self {
            Limit::FileSize => "BYTES",
            Limit::Depth
            | Limit::Nodes
            | Limit::Aliases
            | Limit::Components
            | Limit::Streams
            | Limit::Attributes => "N",
        }
    }

    /// The S011 diagnostic of this limit, reached while reading `input`: `message` says what
    /// is over the limit, the help how to raise it and where it is explained. The one place an
    /// S011 is made; the caller locates it (`at`).
    pub fn exceeded(self, input: Input, message: impl Into<String>) -> Diagnostic {
        let what = match input {
            Input::Spec => "spec",
            Input::Topology => "file",
            Input::Catalogue => "catalogue",
        };
        Diagnostic::new(&codes::LIMIT, message).help(format!(
            "if this {what} is trusted, raise the limit with {} {}; see `blazes explain {}`",
            self.flag(),
            self.value_name(),
            codes::LIMIT.id
        ))
    }
}

/// A YAML value: a scalar as YAML 1.2's core schema reads it, or a collection of nodes.
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

/// A YAML value with the byte span it was written at.
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

    /// The string, when the node is one.
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
        while let Some(x) = a.next_element_seed(spanned())? {
            v.push(pending(x));
        }
        Ok(Raw(Value::Seq(v)))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Raw, A::Error> {
        let mut v = Vec::new();
        while let Some(k) = a.next_key_seed(spanned())? {
            let x = a.next_value_seed(spanned())?;
            v.push((pending(k), pending(x)));
        }
        Ok(Raw(Value::Map(v)))
    }
}

/// Where serde-saphyr says a node is: its byte range when it has one. Without byte offsets
/// the line and column are stashed in the span (line counted down from `usize::MAX`, column in
/// `len`), beyond the end of any text, for [`Settle`] to resolve against the text.
fn located(loc: &Location) -> Span {
    let span = loc.span();
    match (span.byte_offset(), span.byte_len()) {
        (Some(o), Some(l)) => Span::new(o as usize, l as usize),
        _ => Span::new(usize::MAX - loc.line() as usize, loc.column() as usize),
    }
}

fn pending((raw, loc): (Raw, Location)) -> Node {
    Node {
        value: raw.0,
        span: located(&loc),
    }
}

/// Turns what the reader yields into finished nodes: spans resolved (see [`located`]) and
/// shifted to index the caller's text (which may start with a BOM the reader did not see).
struct Settle<'t> {
    text: &'t str,
    shift: usize,
    /// Built on first use: with string input every node has byte offsets, and the index of a
    /// big spec costs a word per line.
    index: std::cell::OnceCell<LineIndex>,
}

impl<'t> Settle<'t> {
    fn new(text: &'t str, shift: usize) -> Self {
        Settle {
            text,
            shift,
            index: std::cell::OnceCell::new(),
        }
    }

    fn node(&self, s: (Raw, Location)) -> Node {
        let mut node = pending(s);
        self.settle(&mut node);
        node
    }

    fn finish(&self, value: Value, loc: &Location) -> Node {
        let mut node = Node {
            value,
            span: located(loc),
        };
        self.settle(&mut node);
        node
    }

    fn settle(&self, node: &mut Node) {
        if node.span.offset > self.text.len() {
            let line = usize::MAX - node.span.offset;
            let col = node.span.len;
            let index = self.index.get_or_init(|| LineIndex::new(self.text));
            node.span = Span::char_at(self.text, index.offset(self.text, line, col));
        }
        node.span.offset += self.shift;
        match &mut node.value {
            Value::Seq(items) => items.iter_mut().for_each(|n| self.settle(n)),
            Value::Map(items) => items.iter_mut().for_each(|(k, v)| {
                self.settle(k);
                self.settle(v);
            }),
            _ => {}
        }
    }
}

/// The one diagnostic of a spec over the byte limit, which is not read at all.
fn too_large(text: &str, limits: &Limits) -> Option<Box<Diagnostic>> {
    (text.len() > limits.max_bytes).then(|| {
        Box::new(
            Limit::FileSize
                .exceeded(
                    Input::Spec,
                    // The CLI stops reading one byte past the limit, so the true size is unknown.
                    format!(
                        "the spec is larger than {} bytes, the file size limit",
                        limits.max_bytes
                    ),
                )
                .at(Span::new(0, 0), "file too large"),
        )
    })
}

/// Reads `text` into one tree, or returns the one fatal diagnostic of an unreadable document.
/// The spec reader streams instead ([`read`]); this is for tools that edit a whole spec.
pub fn parse(text: &str, limits: &Limits) -> Result<Node, Box<Diagnostic>> {
    if let Some(d) = too_large(text, limits) {
        return Err(d);
    }
    // JSON is YAML: the JSON reader gives the same tree faster, or gives up and leaves the
    // text (and its errors) to this one.
    if super::json::looks_like_json(text)
        && let Ok(root) = on_reader_stack(limits, || super::json::parse(text, limits))
    {
        return Ok(root);
    }
    parse_as_yaml(text, limits)
}

/// [`parse`] without the JSON reader: what `tests/json_reader.rs` compares it with.
#[doc(hidden)]
pub fn parse_as_yaml(text: &str, limits: &Limits) -> Result<Node, Box<Diagnostic>> {
    if let Some(d) = too_large(text, limits) {
        return Err(d);
    }
    let read = || {
        let settle = Settle::new(text, 0);
        serde_saphyr::with_deserializer_from_str_with_options(text, reader_options(limits), |de| {
            spanned().deserialize(de)
        })
        .map(|root| settle.node(root))
    };
    on_reader_stack(limits, read)
        .map_err(|e| Box::new(convert_error(&e, text, &LineIndex::new(text), limits)))
}

/// How the streaming reader hands over the value of one key of the root mapping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Take {
    /// As one tree, to [`Consumer::value`].
    Whole,
    /// A mapping entry by entry ([`Consumer::entry_key`], [`Consumer::entry_value`]); a value
    /// of another kind goes whole to [`Consumer::value`].
    Entries,
    /// A list item by item ([`Consumer::want_item`], [`Consumer::item`]); a value of another
    /// kind goes whole to [`Consumer::value`].
    Items,
    /// Read, so that its syntax and the limits are still checked, but not built.
    Skip,
}

/// What the streaming reader hands the document to, one small tree at a time. Every node is
/// finished (spans resolved and shifted) when the consumer sees it.
pub trait Consumer {
    /// A key of the root mapping; says how to read its value.
    fn key(&mut self, key: Node) -> Take;
    /// The value of the last key, when taken whole or not of the kind its [`Take`] expected.
    fn value(&mut self, value: Node);
    /// A key of a mapping read entry by entry; whether to build its value.
    fn entry_key(&mut self, key: Node) -> bool;
    /// The value of the last entry key that wanted it.
    fn entry_value(&mut self, value: Node);
    /// An item of a list read item by item comes next; whether to build it.
    fn want_item(&mut self) -> bool;
    /// An item that [`Consumer::want_item`] asked for.
    fn item(&mut self, item: Node);
    /// The value of the last key was read, whichever way it was taken.
    fn end(&mut self);
    /// The root, when it is not a mapping (then nothing else is called).
    fn root(&mut self, root: Node);
}

/// Reads `text` as a stream: the root mapping key by key, and the values the consumer asks for
/// entry by entry or item by item, so that no more than one entry's tree exists at a time (a
/// whole tree of a big spec is several times the size of its text). Spans are shifted by
/// `shift` bytes (the caller stripped that much, a BOM, before `text`). Returns the root's
/// span, or the one fatal diagnostic of an unreadable document: then what the consumer was
/// given must be discarded.
pub fn read<C: Consumer + Send>(
    text: &str,
    shift: usize,
    limits: &Limits,
    consumer: &mut C,
) -> Result<Span, Box<Diagnostic>> {
    if let Some(d) = too_large(text, limits) {
        return Err(d);
    }
    let read = || {
        let settle = Settle::new(text, shift);
        let (root, loc) = serde_saphyr::with_deserializer_from_str_with_options(
            text,
            reader_options(limits),
            |de| {
                SpannedSeed(RootSeed {
                    settle: &settle,
                    consumer: &mut *consumer,
                })
                .deserialize(de)
            },
        )?;
        // A mapping root was streamed; anything else is read whole, and only now that the
        // whole document is known to be readable.
        Ok::<_, serde_saphyr::Error>(match root {
            None => settle.finish(Value::Null, &loc).span,
            Some(raw) => {
                let root = settle.finish(raw.0, &loc);
                let span = root.span;
                consumer.root(root);
                span
            }
        })
    };
    on_reader_stack(limits, read)
        .map_err(|e| Box::new(convert_error(&e, text, &LineIndex::new(text), limits)))
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

thread_local! {
    /// The stack size of this thread when [`on_reader_stack`] started it, else 0.
    static READER_STACK: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Runs `read` on a thread whose stack fits `max_depth` levels of nesting. The reader
/// recurses once per level, with frames of tens of kilobytes in debug builds, so at the
/// default depth limit it overflows a 2 MiB thread (the size of test and many library users'
/// threads): the depth limit must be what stops deep input, never the caller's stack.
///
/// On a thread it started itself, with a stack as large, it runs `read` directly: the whole
/// check of a file runs on one (`check::check_owned`), so that the memory of the spec, freed
/// once the dataflow is built, is reused by the analysis (the allocator keeps memory freed
/// on one thread for that thread).
pub fn on_reader_stack<R: Send>(limits: &Limits, read: impl FnOnce() -> R + Send) -> R {
    const PER_LEVEL: usize = 96 * 1024;
    const MAX_STACK: usize = 1 << 30;
    let stack = limits
        .max_depth
        .saturating_add(32)
        .saturating_mul(PER_LEVEL)
        .clamp(8 << 20, MAX_STACK);
    if READER_STACK.get() >= stack {
        return read();
    }
    // The reader runs once, on the new thread or, when none can be started, on this one; a
    // thread that failed to start dropped its closure, so the reader waits in the slot.
    let slot = std::sync::Mutex::new(Some(read));
    let run = |on_own_stack: bool| {
        if on_own_stack {
            READER_STACK.set(stack);
        }
        let read = slot.lock().ok().and_then(|mut s| s.take());
        read.expect("the reader runs once")()
    };
    std::thread::scope(|s| {
        let worker = std::thread::Builder::new()
            .name("blazes-yaml".into())
            .stack_size(stack)
            .spawn_scoped(s, || run(true));
        match worker {
            Ok(handle) => match handle.join() {
                Ok(result) => result,
                // A panic in the reader is a bug; re-raise it where the caller can see it.
                Err(panic) => std::panic::resume_unwind(panic),
            },
            // No thread available (a sandbox with a thread limit): read on this one.
            Err(_) => run(false),
        }
    })
}

/// Which limit a reader error is, if it is one: (what, value, flag).
fn limit_of(e: &serde_saphyr::Error, limits: &Limits) -> Option<(String, Limit)> {
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
        Limit::Aliases,
    );
    let depth = (
        format!(
            "the spec nests lists and mappings deeper than {} levels, the depth limit",
            limits.max_depth
        ),
        Limit::Depth,
    );
    let nodes = (
        format!(
            "the spec has more than {} YAML nodes, the node limit",
            limits.max_nodes
        ),
        Limit::Nodes,
    );
    let bytes = (
        format!(
            "the spec's text exceeds {} bytes, the file size limit",
            limits.max_bytes
        ),
        Limit::FileSize,
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
    if let Some((message, limit)) = limit_of(e, limits) {
        return limit
            .exceeded(Input::Spec, message)
            .at(span, "limit reached here");
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
    if let serde_saphyr::Error::UnknownAnchor { .. } = e.without_snippet() {
        let name: String = text[offset..]
            .trim_start_matches('*')
            .chars()
            .take_while(|c| !c.is_whitespace() && !matches!(c, ',' | ']' | '}'))
            .collect();
        return Diagnostic::new(
            &codes::YAML_SYNTAX,
            format!(
                "the alias `*{name}` refers to no anchor: no value before it is marked `&{name}`"
            ),
        )
        .at(span, "unknown alias")
        .help(format!(
            "mark the value to reuse with `&{name}` before this line, or fix the alias's spelling"
        ));
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
            "a tab is used for indentation, but YAML indents with spaces only",
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
                "the control character U+{:04X} is not allowed in a spec",
                u32::from(c)
            ),
        )
        .at(Span::new(offset, c.len_utf8()), "control character")
        .help("a spec is text; remove the character, or check that this is the file you meant");
    }
    if let serde_saphyr::Error::ExternalMessage { source, .. } = e.without_snippet()
        && let ExternalMessageSource::Parser(scan) = &**source
    {
        return super::yaml_errors::describe(scan.kind(), &scan.info(), text, index, offset);
    }
    if msg.contains("merge value must be") {
        return Diagnostic::new(&codes::YAML_SYNTAX, format!("invalid YAML: {msg}"))
            .at(span, "here")
            .help("a merge key (`<<: *anchor`) takes a mapping or a list of mappings");
    }
    Diagnostic::new(&codes::YAML_SYNTAX, format!("invalid YAML: {msg}")).at(span, "here")
}
