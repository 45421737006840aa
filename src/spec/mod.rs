//! The spec format (version 1): reading a YAML dataflow spec into [`Spec`], with a span on
//! every name and value a diagnostic may point at.
//!
//! The reader never stops at the first problem: it validates what it can, skips what it
//! cannot, and returns every diagnostic of the file. Cross-references (endpoints naming
//! components and interfaces) are resolved later, by `graph`, which adds its own diagnostics.
//! It validates each entry as the YAML reader streams it (`reader`), never a whole file's tree.
//!
//! Must not know: labels, the analysis, output formats.

mod entries;
pub mod json;
mod reader;
mod replay;
mod shift;
mod suggest;
mod validator;
pub mod yaml;
mod yaml_errors;

use std::collections::HashSet;

use crate::codes;
use crate::diagnostic::{Diagnostic, Span};
use crate::label::{Annotation, Tolerance};
pub use suggest::{did_you_mean, edit_distance};
use validator::Validator;
pub use yaml::{Input, Limit, Limits};

/// A name with where it was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Name {
    pub text: String,
    pub span: Span,
}

/// A list of attribute names (`[batch, word]`), with the span of the whole list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyList {
    pub names: Vec<Name>,
    pub span: Span,
}

/// A path's `gate:` as written: `"*"`, or a list of keys.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GateDecl {
    Star(Span),
    Keys(KeyList),
}

impl GateDecl {
    /// The gate as names: `*`, or the attributes sorted and without repeats, as a white box's
    /// derivation or a module's summary gives them, so that they compare.
    pub fn as_derived(&self) -> crate::whitebox::DerivedGate {
        match self {
            GateDecl::Star(_) => crate::whitebox::DerivedGate::Star,
            GateDecl::Keys(k) => {
                let mut v: Vec<String> = k.names.iter().map(|n| n.text.clone()).collect();
                v.sort();
                v.dedup();
                crate::whitebox::DerivedGate::Keys(v)
            }
        }
    }

    /// Where the gate is written.
    pub fn span(&self) -> Span {
        match self {
            GateDecl::Star(s) => *s,
            GateDecl::Keys(k) => k.span,
        }
    }
}

/// A component's `order:` as written: `global`, or a list of keys.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OrderDecl {
    Global(Span),
    Keys(KeyList),
}

/// An entry of `sources:`: what it seals (`seal:`) and could seal (`sealable:`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceDecl {
    pub name: Name,
    pub seal: Option<KeyList>,
    pub sealable: Vec<KeyList>,
    /// `watermark: ATTR`: event time on ATTR only advances. Its seal on the windows of ATTR is
    /// in `seal` already.
    pub watermark: Option<Name>,
    /// Span of the source's value (its mapping, or the null after `name:`).
    pub body: Span,
}

/// An entry of `sinks:`, with its `tolerate:` if it declares one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SinkDecl {
    pub name: Name,
    pub tolerate: Option<(Tolerance, Span)>,
    pub body: Span,
}

/// One item of a component's `paths:`: from an input to an output, with its annotation
/// (`label:`) and gate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathDecl {
    pub from: Name,
    pub to: Name,
    pub label: Annotation,
    pub label_span: Span,
    pub gate: Option<GateDecl>,
    /// `state: static` on an `OR` path: the state it reads does not change while the dataflow
    /// runs (a loaded table). Without it, state that no path of the spec writes is written
    /// by an unsealed external input.
    pub static_state: Option<Span>,
    pub span: Span,
    /// Where a derived path comes from and why; `None` for a declared path (boxed: a big spec
    /// has millions of declared paths).
    pub note: Option<Box<PathNote>>,
}

/// The origin and reason of a path derived from a component's program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathNote {
    pub origin: crate::whitebox::Origin,
    pub reason: String,
}

/// An entry of `components:`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ComponentDecl {
    pub name: Name,
    pub paths: Vec<PathDecl>,
    pub replicated: bool,
    /// `replicas: N` when given.
    pub replicas: Option<u64>,
    pub order: Option<OrderDecl>,
    /// `partitions: N` with `partition_by: [keys]`: N instances that each take a share of the
    /// records (a consumer group, a Storm parallelism), routed by the keys. Not replicas: no
    /// record reaches two of them, so they cannot disagree, and the analysis treats the
    /// component as one instance.
    pub partitions: Option<Partitions>,
    /// `task: NAME`: the engine runs the components of one task together, in one thread, on
    /// the records of the task's input partitions (a Kafka Streams sub-topology). An order of
    /// one of them is an order of all, so the planner orders a task as a whole, at one cost.
    pub task: Option<Name>,
    /// The `WATERMARK FOR` of its program's DDL: (input, the window attribute it closes, named
    /// where the program names the column).
    pub watermarks: Vec<(String, Name)>,
    pub body: Span,
    /// Some of its paths were invalid and dropped: endpoint errors naming it are suppressed,
    /// because they would only repeat the path error.
    pub incomplete: bool,
    /// `use: FILE` or `dataflow: {...}`: the component is itself a dataflow (it has no paths of
    /// its own); `compose::expand` replaces it by its flattened graph.
    pub composite: Option<Box<Composite>>,
}

/// A composite component's dataflow: where it is written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Composite {
    /// `use: services/billing.yaml`: another spec file, relative to the using file (the name's
    /// span is the path's value); with `from: ENGINE` (the second name), a topology that engine
    /// prints, imported as the module.
    Use(Name, Option<Name>),
    /// `dataflow:` with `sources`/`components`/`streams`/`sinks` written in place.
    Inline(Spec),
}

/// A component's `partitions:` and `partition_by:`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Partitions {
    pub count: u64,
    /// The attributes that route a record to its partition (empty only with one partition).
    pub by: KeyList,
}

/// One end of a stream as written: `Component.interface` or a bare source/sink name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    pub text: String,
    pub span: Span,
    /// Where the dot of `Component.interface` is: the parts are slices of `text`, not strings
    /// of their own (a big spec has millions of endpoints).
    dot: Option<usize>,
}

impl Endpoint {
    /// An endpoint the reader makes itself (a white box's clock): `Component.interface` or a
    /// source name.
    pub(crate) fn internal(text: String, span: Span) -> Endpoint {
        let dot = text.find('.');
        Endpoint { text, span, dot }
    }

    /// `component.interface` for a component whose name may hold dots itself (an expanded
    /// composite's `Eu.Billing.Join`): the interface is what follows the last dot.
    pub(crate) fn joined(component: &str, interface: &str, span: Span) -> Endpoint {
        Endpoint {
            text: format!("{component}.{interface}"),
            span,
            dot: Some(component.len()),
        }
    }

    /// A source or sink name that may hold dots (an unfed input of an expanded composite,
    /// `Eu.orders`).
    pub(crate) fn bare(name: &str, span: Span) -> Endpoint {
        Endpoint {
            text: name.to_string(),
            span,
            dot: None,
        }
    }

    /// The component of `Component.interface`; `None` for a source or sink.
    pub fn component(&self) -> Option<&str> {
        self.dot.map(|d| &self.text[..d])
    }

    /// The interface of `Component.interface`, or the source or sink name.
    pub fn name(&self) -> &str {
        self.dot.map_or(&self.text, |d| &self.text[d + 1..])
    }
}

/// One item of `streams:`: its two ends as written, and its `seal:`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamDecl {
    pub from: Endpoint,
    pub to: Endpoint,
    pub seal: Option<KeyList>,
    pub span: Span,
}

/// A spec that is well-formed on its own (cross-references not yet checked).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Spec {
    pub name: Option<Name>,
    pub sources: Vec<SourceDecl>,
    pub components: Vec<ComponentDecl>,
    pub streams: Vec<StreamDecl>,
    pub sinks: Vec<SinkDecl>,
    /// Span of the `sources:` key, when present: where `plan --apply` can add sources.
    pub sources_key: Option<Span>,
    /// `lint:`: which warnings the spec allows or denies (the flags override it).
    pub lint: crate::lint::Lints,
    /// `engine:`: the stream engine whose topology the spec was imported from (`blazes import`
    /// writes it), so that a plan of the spec is also stated in that engine's terms.
    pub engine: Option<crate::import::Engine>,
}

/// Longest name accepted, in characters. A format rule rather than a resource limit: real
/// names are identifiers, and every message quotes them.
pub const MAX_NAME_CHARS: usize = 256;

/// Reads a spec from raw bytes (UTF-8, optional BOM). Returns the spec (possibly partial)
/// and every diagnostic; the spec is usable only when no diagnostic is an error. The text is
/// returned for reports; [`parse_vec`] avoids copying it.
pub fn parse_bytes(bytes: &[u8], limits: &Limits) -> (Option<Spec>, Vec<Diagnostic>, String) {
    parse_vec(bytes.to_vec(), limits)
}

/// [`parse_bytes`] on bytes the caller gives up: valid UTF-8 becomes the returned text in
/// place, so a big spec is in memory once.
pub fn parse_vec(bytes: Vec<u8>, limits: &Limits) -> (Option<Spec>, Vec<Diagnostic>, String) {
    // No text has a NUL byte: this is a binary file (an image, an archive, a compiled
    // program). Its bytes are not kept, so no report can echo them to a terminal.
    if let Some(nul) = bytes.iter().position(|&b| b == 0) {
        let before = &bytes[..nul];
        let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
        let line_start = before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        // Columns count characters, as everywhere; the line may not be UTF-8.
        let column = String::from_utf8_lossy(&before[line_start..])
            .chars()
            .count()
            + 1;
        let diag = Diagnostic::new(
            &codes::NOT_UTF8,
            format!("the file is binary, not a spec: a NUL byte at line {line}, column {column} (byte {nul})"),
        )
        .at(Span::new(0, 0), "")
        .help("a spec is a YAML text file; check that this is the file you meant");
        return (None, vec![diag], String::new());
    }
    match String::from_utf8(bytes) {
        Ok(text) => {
            let (spec, diags) = parse(&text, limits);
            (spec, diags, text)
        }
        Err(e) => {
            // Show what we can of the text: up to the bad byte, so the caret has context.
            let good = e.utf8_error().valid_up_to();
            let bytes = e.into_bytes();
            let mut text = String::from_utf8_lossy(&bytes[..good]).into_owned();
            let offset = text.len();
            text.push('\u{FFFD}');
            let diag = Diagnostic::new(
                &codes::NOT_UTF8,
                format!("the spec is not valid UTF-8: byte {good} (0x{:02x}) is not part of a UTF-8 character", bytes[good]),
            )
            .at(Span::new(offset, '\u{FFFD}'.len_utf8()), "invalid byte")
            .help("save the file as UTF-8 text");
            (None, vec![diag], text)
        }
    }
}

/// Reads a spec from text. A leading BOM is accepted (its bytes stay in the text, so spans
/// still index the original). Returns the spec (possibly partial: what was invalid is left
/// out) and every diagnostic of the file; the spec is usable only when none is an error.
/// Names are not resolved yet: [`graph::build`](crate::graph::build) does that.
///
/// ```
/// use blazes::spec::{self, Limits};
///
/// let (spec, diags) = spec::parse("components:\n  Count:\n    pahts: []\n", &Limits::default());
/// // Every problem of the file at once, each located, with a suggestion where one helps.
/// assert_eq!(diags[0].code.id, "S002");
/// assert_eq!(diags[0].message, "unknown field `pahts` in component `Count`");
/// assert_eq!(diags[0].help.as_deref(), Some("did you mean `paths`?"));
/// assert!(spec.is_some());
/// ```
pub fn parse(text: &str, limits: &Limits) -> (Option<Spec>, Vec<Diagnostic>) {
    read_spec(text, limits, true)
}

/// [`parse`] without the JSON reader: what `tests/json_reader.rs` compares it with.
#[doc(hidden)]
pub fn parse_as_yaml(text: &str, limits: &Limits) -> (Option<Spec>, Vec<Diagnostic>) {
    read_spec(text, limits, false)
}

fn read_spec(text: &str, limits: &Limits, json_reader: bool) -> (Option<Spec>, Vec<Diagnostic>) {
    let body = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    let bom = text.len() - body.len();
    if body.trim().is_empty()
        || body
            .lines()
            .all(|l| l.trim().is_empty() || l.trim_start().starts_with('#'))
    {
        let d = Diagnostic::new(&codes::EMPTY, "the spec is empty")
            .at(Span::new(0, 0), "no YAML document here")
            .help("a spec needs at least `components:` and `streams:`; see `blazes explain S009`");
        return (None, vec![d]);
    }
    let new_reader = || {
        reader::Reader::new(Validator {
            text,
            diags: Vec::new(),
            limits,
            attributes: Vec::new(),
            attribute_texts: HashSet::new(),
            lines: std::cell::OnceCell::new(),
        })
    };
    // A JSON spec is read by the JSON reader, unless it gives up (see `json`): then what it
    // validated is dropped and the YAML reader reads the file, and reports its errors.
    if json_reader && json::looks_like_json(body) {
        let mut reader = new_reader();
        let read = yaml::on_reader_stack(limits, || {
            json::read(body, bom, limits, &mut reader).map(|root| reader.finish(root))
        });
        if let Ok((spec, diags)) = read {
            return (Some(spec), diags);
        }
    }
    let mut reader = new_reader();
    match yaml::read(body, bom, limits, &mut reader) {
        Ok(root) => {
            let (spec, diags) = reader.finish(root);
            (Some(spec), diags)
        }
        // What was validated before the reader gave up is dropped: an unreadable file has this
        // one diagnostic.
        Err(d) => {
            let mut d = *d;
            shift(&mut d, bom);
            (None, vec![d])
        }
    }
}

fn shift(d: &mut Diagnostic, by: usize) {
    if let Some(p) = &mut d.primary {
        p.span.offset += by;
    }
}
