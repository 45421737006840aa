//! Importing the topologies that stream engines print: a Kafka Streams `Topology#describe()`
//! text, a Flink `getExecutionPlan()` JSON, a Storm Flux YAML file.
//!
//! Each engine's module parses its format into a [`Topology`] (operators located in the file,
//! edges with how they partition records); [`catalog`] says what each operator does, as an
//! annotation, a gate, seals, order and replication, from the engine's built-in catalogue and
//! the user's; `emit` writes the result as a spec (YAML text with a comment on every
//! annotation naming the catalogue entry that produced it) together with a [`SourceMap`]
//! from spans of the spec to spans of the file. [`check_imported`] analyses the spec like any
//! other and moves every location of the report back into the file, so that every output
//! format points at the processor's line in what the user gave.
//!
//! Like the rest of the core, this does no IO: the CLI reads the files.

pub mod catalog;
mod emit;
pub mod flink;
pub mod kafka_streams;
mod remap;
pub mod storm_flux;

use crate::check::{self, FileReport, Options, Outcome};
use crate::codes;
use crate::diagnostic::{self, Diagnostic, Span};
use crate::spec::{Input, Limit, Limits};

pub use catalog::Catalog;
pub use emit::SourceMap;

/// The engines whose topologies `blazes import` reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Engine {
    KafkaStreams,
    Flink,
    StormFlux,
}

impl Engine {
    pub const ALL: [Engine; 3] = [Engine::KafkaStreams, Engine::Flink, Engine::StormFlux];

    /// The name on the command line and in catalogues.
    pub fn name(self) -> &'static str {
        match self {
            Engine::KafkaStreams => "kafka-streams",
            Engine::Flink => "flink",
            Engine::StormFlux => "storm-flux",
        }
    }

    /// The engine as its users call it, for prose.
    pub fn display(self) -> &'static str {
        match self {
            Engine::KafkaStreams => "Kafka Streams",
            Engine::Flink => "Flink",
            Engine::StormFlux => "Storm",
        }
    }

    /// What its topology file is, as `--help` describes it.
    pub fn about(self) -> &'static str {
        match self {
            Engine::KafkaStreams => "The text of Kafka Streams' `Topology#describe()`",
            Engine::Flink => {
                "The JSON of Flink's `StreamExecutionEnvironment#getExecutionPlan()`, or a SQL `EXPLAIN` text"
            }
            Engine::StormFlux => "A Storm Flux topology (YAML)",
        }
    }

    pub fn parse(s: &str) -> Option<Engine> {
        Engine::ALL.into_iter().find(|e| e.name() == s)
    }

    /// The built-in catalogue, in the same format as a user's.
    pub fn builtin_catalog(self) -> &'static str {
        match self {
            Engine::KafkaStreams => include_str!("catalogs/kafka-streams.yaml"),
            Engine::Flink => include_str!("catalogs/flink.yaml"),
            Engine::StormFlux => include_str!("catalogs/storm-flux.yaml"),
        }
    }
}

/// How an edge spreads the records it carries over the instances of its consumer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Partition {
    /// By these attributes: a Storm FIELDS grouping, the record key of Kafka Streams.
    Keys(Vec<String>),
    /// By a key the topology does not name: a Flink HASH shipment (a `keyBy`).
    UnnamedKey,
    /// Not by key: shuffle, rebalance, forward, global, ...
    None,
    /// Every instance receives every record: Storm ALL, Flink BROADCAST.
    All,
}

/// Something outside the topology that an operator reads or writes (a topic, a source system).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct External {
    /// The name the spec gives it, before sanitising.
    pub name: String,
    /// What it is, for comments: "topic `words`".
    pub what: String,
    pub span: Span,
}

/// One operator (processor, node, spout or bolt) of a topology.
#[derive(Clone, Debug)]
pub struct Operator {
    /// The engine's name or id of the operator: what catalogue `name:` patterns match.
    pub name: String,
    /// What catalogue `class:` patterns match: the processor type of Kafka Streams (its name
    /// without the numeric suffix), the node type of Flink, the class name of Storm.
    pub class: String,
    /// What the engine calls it, for messages: "processor", "operator", "bolt", ...
    pub kind: &'static str,
    /// Where the operator is named in the file.
    pub span: Span,
    /// External inputs (topics, sources) it reads.
    pub reads: Vec<External>,
    /// External outputs (topics) it writes.
    pub writes: Vec<External>,
    /// Instances, when the topology says.
    pub parallelism: Option<u64>,
    /// Replicated by the engine itself (a Kafka Streams global store), with the reason.
    pub replicated: Option<String>,
    /// The window the topology file configures on it (a Storm window bolt's `withWindow`).
    pub window: Option<Window>,
    /// A keyed order the engine provides (the partition order of a Kafka topic), with the
    /// reason; set by the engine's module once the catalogue entries are known.
    pub order: Option<(Vec<String>, String)>,
    /// The keys the operator groups or partitions by, when the topology prints them (a Flink
    /// SQL operator's `groupBy=[...]`): what `$group` in a catalogue gate stands for. Empty:
    /// it groups everything together.
    pub group: Option<Vec<String>>,
    /// The engine task that runs it together with other operators, with the reason (a Kafka
    /// Streams sub-topology): the spec's `task:`, so that they are ordered as one.
    pub task: Option<(String, String)>,
}

impl Operator {
    pub fn new(name: String, class: String, kind: &'static str, span: Span) -> Self {
        Operator {
            name,
            class,
            kind,
            span,
            reads: Vec::new(),
            writes: Vec::new(),
            parallelism: None,
            replicated: None,
            order: None,
            group: None,
            window: None,
            task: None,
        }
    }
}

/// A window an operator is configured with, by what closes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Window {
    /// Every N tuples: which tuples fall in one depends on the order they arrive.
    Count,
    /// On a timestamp field with a lag: a watermark closes it.
    EventTime,
    /// On the wall clock.
    ProcessingTime,
}

/// A flow of records from one operator's output to another's input.
#[derive(Clone, Debug)]
pub struct Edge {
    pub from: usize,
    pub to: usize,
    /// The input interface of `to` it arrives at.
    pub input: String,
    /// The output interface of `from` it leaves by: `out`, or a named stream (Storm's
    /// `streamId`), which stays a distinct output.
    pub output: String,
    pub partition: Partition,
    /// What carries it, for comments ("repartition topic `x`"), when not a direct edge.
    pub via: Option<String>,
    /// A state store `to` reads and `from` writes (Kafka Streams): the path it feeds is `CW`.
    pub store: Option<String>,
    pub span: Span,
}

/// A topology as an engine's module parsed it.
#[derive(Clone, Debug, Default)]
pub struct Topology {
    pub name: Option<String>,
    pub operators: Vec<Operator>,
    pub edges: Vec<Edge>,
    /// The state stores each operator lists, with where (Kafka Streams).
    pub stores: Vec<(usize, String, Span)>,
    /// Warnings of the parse (located in the file).
    pub warnings: Vec<Diagnostic>,
}

/// A topology turned into a spec.
#[derive(Debug)]
pub struct Imported {
    /// The spec, YAML text.
    pub spec: String,
    /// Spans of `spec` to spans of the topology file.
    pub map: SourceMap,
    /// The importer's warnings (unknown operators, missing information), located in the file.
    pub warnings: Vec<Diagnostic>,
    /// Why each component has its annotation, in the order of the operators.
    pub explained: Vec<Explained>,
}

/// Why one component of an imported spec has its annotation: which catalogue entry or rule
/// gave it, and what each of its paths, its order and its replication are, with their
/// reasons (what `blazes import --explain` prints).
#[derive(Clone, Debug)]
pub struct Explained {
    /// Its name in the spec.
    pub component: String,
    /// The operator's name in the file, its kind ("processor") and its class.
    pub operator: String,
    pub kind: &'static str,
    pub class: String,
    /// Where the operator is named in the file.
    pub span: Span,
    /// "from catalogue entry `X` (built-in ... catalogue, line N)", "from the ... rule for
    /// ...", or that no entry matched.
    pub by: String,
    /// One line per path (`in -> out: OW(key) ...`), then its order and replication.
    pub why: Vec<String>,
    /// Each path of the component written into the spec, with its reason: what `check
    /// --from` reports as the path's `catalog` origin.
    pub paths: Vec<ExplainedPath>,
}

/// One path of an imported component: its input and output in the spec, and why it has its
/// annotation (the annotation, the catalogue entry or rule that gave it, and the entry's
/// reason, as the spec's comment says).
#[derive(Clone, Debug)]
pub struct ExplainedPath {
    pub from: String,
    pub to: String,
    pub reason: String,
}

/// An invalid topology diagnostic (I003) at `span`.
pub(crate) fn invalid(span: Span, message: impl Into<String>, label: &'static str) -> Diagnostic {
    Diagnostic::new(&codes::INVALID_TOPOLOGY, message).at(span, label)
}

/// Parses `text` as a topology of `engine` and writes it as a spec annotated from `catalog`.
/// `name` is the spec's name when the topology has none (the file stem). Errors are every
/// problem of the file, located in it.
pub fn import(
    engine: Engine,
    text: &str,
    catalog: &Catalog,
    name: &str,
    limits: &Limits,
) -> Result<Imported, Vec<Diagnostic>> {
    let parsed = match engine {
        Engine::KafkaStreams => kafka_streams::parse(text, limits),
        Engine::Flink => flink::parse(text, limits),
        Engine::StormFlux => storm_flux::parse(text, limits),
    };
    let mut topology = parsed.map_err(|diags| match looks_like(text) {
        // The parser's own errors would be about a format the file is not in.
        Some((kind, at)) if kind != Looks::Engine(engine) => vec![wrong_engine(engine, kind, at)],
        _ => diags,
    })?;
    let mut entries: Vec<Option<usize>> = {
        let mut lookup = catalog.lookup();
        topology
            .operators
            .iter()
            .map(|op| lookup.find(prefix(&op.class), prefix(&op.name)))
            .collect()
    };
    let judged;
    let catalog = if engine == Engine::KafkaStreams {
        let mut with_rules = catalog.clone();
        kafka_streams::judge(&mut topology, &mut with_rules, &mut entries);
        judged = with_rules;
        kafka_streams::derive_orders(&mut topology, &judged, &entries, limits)?;
        &judged
    } else if engine == Engine::StormFlux {
        let mut with_rules = catalog.clone();
        storm_flux::judge(&topology, &mut with_rules, &mut entries);
        judged = with_rules;
        &judged
    } else {
        catalog
    };
    if let Some(d) = unconnected(&topology) {
        // The skipped lines the parse warned of are likely why nothing is connected.
        let mut diags = std::mem::take(&mut topology.warnings);
        diags.push(d);
        return Err(diags);
    }
    let name = topology.name.clone().unwrap_or_else(|| name.to_string());
    Ok(emit::emit(engine, &topology, catalog, &entries, &name))
}

/// A topology whose operators no edge, source or sink connects: it would become a spec of
/// components and no stream, which says nothing about the dataflow (S009). This is what is
/// left of a file cut down to an operator line or two, so the error points at the first one.
fn unconnected(topology: &Topology) -> Option<Diagnostic> {
    let first = topology.operators.first()?;
    let connected = !topology.edges.is_empty()
        || topology
            .operators
            .iter()
            .any(|op| !op.reads.is_empty() || !op.writes.is_empty());
    if connected {
        return None;
    }
    let n = topology.operators.len();
    let (count, them) = if n == 1 {
        (format!("one {}", first.kind), "it")
    } else {
        (format!("{n} {}s", first.kind), "them")
    };
    Some(
        Diagnostic::new(
            &codes::INVALID_TOPOLOGY,
            format!(
                "this topology has {count} but no edge, source or sink: nothing flows through {them}, so there is no dataflow to import"
            ),
        )
        .at(first.span, format!("{} `{}` is connected to nothing", first.kind, first.name))
        .help("give `blazes import` the whole topology, with the topics, sources or edges that feed its operators"),
    )
}

/// What a file that failed to parse looks like, from its first lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Looks {
    Engine(Engine),
    /// A `blazes` spec (`components:` at the top level).
    Spec,
}

impl Looks {
    fn describe(self) -> &'static str {
        match self {
            Looks::Engine(Engine::KafkaStreams) => "a Kafka Streams describe() text",
            Looks::Engine(Engine::Flink) => "a Flink execution plan (JSON)",
            Looks::Engine(Engine::StormFlux) => "a Storm Flux file",
            Looks::Spec => "a blazes spec",
        }
    }
}

/// What `text` looks like, and where the marker that says so is: the markers each format
/// has (`Topologies:` or `Sub-topology:`; a JSON object with `"nodes"`; Flux's `spouts:` or
/// `bolts:` and a spec's `components:` at the start of a line), looked for in its first
/// 64 KiB only.
fn looks_like(text: &str) -> Option<(Looks, Span)> {
    let head = prefix_bytes(text, 64 * 1024);
    let at = |marker: &str, offset: usize| Span::new(offset, marker.len());
    let line_start = |key: &str| {
        let mut offset = 0;
        for line in head.split_inclusive('\n') {
            if line.starts_with(key) {
                return Some(offset);
            }
            offset += line.len();
        }
        None
    };
    for marker in ["Sub-topology:", "Topologies:"] {
        if let Some(i) = head.find(marker) {
            return Some((Looks::Engine(Engine::KafkaStreams), at(marker, i)));
        }
    }
    if head.trim_start().starts_with('{')
        && let Some(i) = head.find("\"nodes\"")
    {
        return Some((Looks::Engine(Engine::Flink), at("\"nodes\"", i)));
    }
    for (marker, looks) in [
        ("spouts:", Looks::Engine(Engine::StormFlux)),
        ("bolts:", Looks::Engine(Engine::StormFlux)),
        ("components:", Looks::Spec),
    ] {
        if let Some(i) = line_start(marker) {
            return Some((looks, at(marker, i)));
        }
    }
    None
}

fn prefix_bytes(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The one error of a file given to the wrong engine: what it looks like, and the command that
/// reads it.
fn wrong_engine(engine: Engine, kind: Looks, at: Span) -> Diagnostic {
    let expected = match engine {
        Engine::KafkaStreams => "a Kafka Streams describe() text",
        Engine::Flink => "a Flink execution plan",
        Engine::StormFlux => "a Flux file",
    };
    let help = match kind {
        Looks::Engine(e) => format!(
            "import it with `blazes import {} FILE`, or check it with `--from {}`",
            e.name(),
            e.name()
        ),
        Looks::Spec => "check it as a spec: `blazes check FILE`, without `--from`".to_string(),
    };
    Diagnostic::new(
        &codes::INVALID_TOPOLOGY,
        format!(
            "this looks like {}, not {expected}, which `{}` reads",
            kind.describe(),
            engine.name()
        ),
    )
    .at(at, format!("{} has this", kind.describe()))
    .help(help)
}

/// What catalogue patterns are matched against: at most the first 4096 bytes of a class or
/// name (a Flink SQL operator's description can be long; a hostile one, megabytes).
fn prefix(s: &str) -> &str {
    let mut end = s.len().min(4096);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Bytes of a topology file as text: the reasons it cannot be (not UTF-8) are I003 errors.
pub fn decode(bytes: &[u8], limits: &Limits) -> Result<String, Vec<Diagnostic>> {
    if bytes.len() > limits.max_bytes {
        return Err(vec![
            Limit::FileSize
                .exceeded(
                    Input::Topology,
                    format!(
                        "the file is larger than the limit of {} bytes (--max-file-size)",
                        limits.max_bytes
                    ),
                )
                .at(Span::new(0, 0), "file too large"),
        ]);
    }
    match std::str::from_utf8(bytes) {
        Ok(s) => Ok(s.strip_prefix('\u{feff}').map_or_else(
            || s.to_string(),
            // Spans must stay offsets of the text the reports show: a BOM becomes a space.
            |rest| format!("   {rest}"),
        )),
        Err(e) => {
            let at = e.valid_up_to();
            Err(vec![
                Diagnostic::new(
                    &codes::NOT_UTF8,
                    format!("the file is not UTF-8 text: byte {at} is not valid UTF-8"),
                )
                .at(Span::new(at, 0), "not UTF-8"),
            ])
        }
    }
}

/// Reads a topology file's bytes, imports it and analyses the spec, and returns a report
/// located in the file: `path` and `text` are the file's, and every span points into it.
/// `catalog` must be valid (see [`Catalog::load`]).
pub fn check_imported(
    engine: Engine,
    path: &str,
    bytes: Vec<u8>,
    catalog: &Catalog,
    options: &Options,
) -> FileReport {
    let text = match decode(&bytes, &options.limits) {
        Ok(t) => t,
        Err(diags) => {
            return FileReport {
                path: path.to_string(),
                text: String::from_utf8_lossy(&bytes).into_owned(),
                outcome: Outcome::Invalid(diags),
                files: Default::default(),
                input: Input::Topology,
            };
        }
    };
    drop(bytes);
    let imported = match import(engine, &text, catalog, &stem(path), &options.limits) {
        Ok(i) => i,
        Err(mut diags) => {
            diagnostic::sort(&mut diags);
            return FileReport {
                path: path.to_string(),
                text,
                outcome: Outcome::Invalid(diags),
                files: Default::default(),
                input: Input::Topology,
            };
        }
    };
    // The file was bounded when it was read; the spec written from it is linear in it.
    let spec_options = Options {
        limits: Limits {
            max_bytes: usize::MAX,
            ..options.limits.clone()
        },
        ..options.clone()
    };
    // The spec names its engine (`engine:`), so its plan speaks the engine's terms.
    let explained = imported.explained;
    let annotate = |spec: &mut crate::spec::Spec| catalog_notes(spec, &explained);
    let mut report =
        check::check_annotated(path, imported.spec.into_bytes(), &spec_options, &annotate);
    report.input = Input::Topology;
    remap::into_file(&mut report, &imported.map, text);
    let diags = match &mut report.outcome {
        Outcome::Invalid(d) => d,
        Outcome::Analysed(a) => &mut a.diagnostics,
    };
    diags.extend(imported.warnings);
    diagnostic::sort(diags);
    report
}

/// Gives each path of an imported spec the origin `catalog` and the reason its catalogue
/// entry or rule gave, so that `check --from` reports where its annotations came from.
fn catalog_notes(spec: &mut crate::spec::Spec, explained: &[Explained]) {
    use std::collections::HashMap;
    let reasons: HashMap<(&str, &str, &str), &str> = explained
        .iter()
        .flat_map(|x| {
            x.paths.iter().map(move |p| {
                (
                    (x.component.as_str(), p.from.as_str(), p.to.as_str()),
                    p.reason.as_str(),
                )
            })
        })
        .collect();
    for c in &mut spec.components {
        for p in &mut c.paths {
            let key = (
                c.name.text.as_str(),
                p.from.text.as_str(),
                p.to.text.as_str(),
            );
            if let Some(reason) = reasons.get(&key) {
                p.note = Some(Box::new(crate::spec::PathNote {
                    origin: crate::whitebox::Origin::Catalog,
                    reason: reason.to_string(),
                }));
            }
        }
    }
}

/// The spec's name when the topology has none: the file stem (`stdin` for standard input).
pub fn stem(path: &str) -> String {
    if path == "<stdin>" {
        return "stdin".to_string();
    }
    std::path::Path::new(path)
        .file_stem()
        .and_then(|s| s.to_str())
        .map(|s| s.split('.').next().unwrap_or(s).to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "topology".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every S011 of an import (a topology file, a catalogue) says, as the spec's do, how to
    /// raise its limit and where it is explained.
    #[test]
    fn import_limits_say_how_to_raise_them() {
        let tight = Limits {
            max_bytes: 4,
            max_components: 1,
            ..Limits::default()
        };
        let mut diags = decode(b"hello", &tight).unwrap_err();
        let catalogue = "version: 1\nengine: flink\noperators:\n  - { class: A, label: CR, reason: a }\n  - { class: B, label: CR, reason: b }\n";
        let loose = Limits {
            max_components: 1,
            ..Limits::default()
        };
        diags
            .extend(Catalog::load(Engine::Flink, Some(("c.yaml", catalogue)), &loose).unwrap_err());
        let limits: Vec<_> = diags.iter().filter(|d| d.code.id == "S011").collect();
        assert_eq!(limits.len(), 2, "{diags:#?}");
        assert_eq!(
            limits[0].help.as_deref(),
            Some(
                "if this file is trusted, raise the limit with --max-file-size BYTES; see `blazes explain S011`"
            )
        );
        assert_eq!(
            limits[1].help.as_deref(),
            Some(
                "if this catalogue is trusted, raise the limit with --max-components N; see `blazes explain S011`"
            )
        );
    }
}
