//! Writing an annotated topology as a spec, with the map from the spec's spans back to the
//! topology file.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use super::catalog::{self, Catalog, Entry, GROUP_KEY, Order, PARTITION_KEY};
use super::{Edge, Engine, Explained, External, Imported, Partition, Topology};
use crate::codes;
use crate::diagnostic::{Diagnostic, Span};
use crate::label::Annotation;

/// Where each part of a generated spec came from in the topology file: the spec is written
/// in runs of text, each attributed to one span of the file (an operator's name, an edge).
/// Looking a spec offset up is a binary search over the runs.
#[derive(Clone, Debug, Default)]
pub struct SourceMap {
    starts: Vec<usize>,
    origins: Vec<Span>,
}

impl SourceMap {
    /// The span of the file that the spec text at `span` was written from.
    pub fn map(&self, span: Span) -> Span {
        match self.starts.partition_point(|&s| s <= span.offset) {
            0 => Span::new(0, 0),
            i => self.origins[i - 1],
        }
    }
}

/// The spec text being written, with the origin of each run.
struct Writer {
    text: String,
    map: SourceMap,
}

impl Writer {
    /// Attributes what is written next to `origin`.
    fn from(&mut self, origin: Span) {
        if self.map.origins.last() != Some(&origin) {
            self.map.starts.push(self.text.len());
            self.map.origins.push(origin);
        }
    }

    fn line(&mut self, s: &str) {
        self.text.push_str(s);
        self.text.push('\n');
    }
}

/// A name the spec accepts: letters, digits, `-` and `_` (anything else becomes `_`), at most
/// 128 characters.
fn sanitise(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars().take(128) {
        if c.is_alphanumeric() || c == '-' || c == '_' {
            out.push(c);
        } else if !out.ends_with('_') {
            // A run of other characters (`: `, `/`) is one `_`.
            out.push('_');
        }
    }
    if out.is_empty() {
        out.push('_');
    }
    out
}

/// Gives every spec name once: a name that collides with one already given (after
/// sanitising, or exactly) gets a numeric suffix.
#[derive(Default)]
struct Namer {
    used: HashSet<String>,
    /// The next suffix to try for a base name, so that many collisions stay linear.
    next: HashMap<String, usize>,
}

impl Namer {
    fn give(&mut self, wanted: &str) -> String {
        let base = sanitise(wanted);
        if self.used.insert(base.clone()) {
            return base;
        }
        let mut n = self.next.get(&base).copied().unwrap_or(2);
        loop {
            let candidate = format!("{base}-{n}");
            n += 1;
            if self.used.insert(candidate.clone()) {
                self.next.insert(base, n);
                return candidate;
            }
        }
    }
}

/// A YAML double-quoted string.
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn list(keys: &[String]) -> String {
    let items: Vec<String> = keys.iter().map(|k| quote(k)).collect();
    format!("[{}]", items.join(", "))
}

/// A one-line comment text (what the topology says can hold anything).
fn c(s: &str) -> String {
    catalog::one_line(s)
}

/// The partition of one input interface: the meet of its edges' (a union of a keyed and an
/// unkeyed stream is not keyed; keyed by different fields, by the fields they share).
fn meet(a: &Partition, b: &Partition) -> Partition {
    match (a, b) {
        (Partition::All, Partition::All) => Partition::All,
        (Partition::UnnamedKey, Partition::UnnamedKey) => Partition::UnnamedKey,
        (Partition::Keys(x), Partition::Keys(y)) => {
            let shared: Vec<String> = x.iter().filter(|k| y.contains(k)).cloned().collect();
            if shared.is_empty() {
                Partition::None
            } else {
                Partition::Keys(shared)
            }
        }
        _ => Partition::None,
    }
}

/// One input interface of an operator, as the spec will have it.
struct Input<'t> {
    name: String,
    partition: Partition,
    store: Option<&'t str>,
    via: Vec<&'t Edge>,
}

/// The annotation of one path and why.
struct PathOut {
    label: Annotation,
    gate: Option<Vec<String>>,
    /// The spec's comment: the annotation, what gave it, why.
    comment: String,
    /// The annotation and why, without what gave it (which `--explain` says once).
    why: String,
}

/// The spec of an annotated topology: `entries[i]` is the catalogue entry of operator `i`.
///
/// The sections are written in the spec format's order (sources, components, streams,
/// sinks); every name is given before any text is written, so that a name is the same in
/// every section that mentions it.
pub(super) fn emit(
    engine: Engine,
    topology: &Topology,
    catalog: &Catalog,
    entries: &[Option<usize>],
    name: &str,
) -> Imported {
    let mut e = Emitter {
        topology,
        catalog,
        entries,
        wiring: Wiring::of(topology),
        w: Writer {
            text: String::new(),
            map: SourceMap::default(),
        },
        warnings: topology.warnings.clone(),
        explained: Vec::new(),
    };
    e.header(engine, name);
    e.sources();
    let seal_of = e.components();
    e.streams(&seal_of);
    e.sinks();
    Imported {
        spec: e.w.text,
        map: e.w.map,
        warnings: e.warnings,
        explained: e.explained,
    }
}

/// The seal an entry puts on the streams into its operator: its keys and the entry's title.
type SealOf = Option<(Vec<String>, String)>;

/// What the spec is made of, named: components, their inputs, the streams between them, the
/// sources and sinks outside.
struct Wiring<'t> {
    /// The spec name of each operator.
    comp: Vec<String>,
    /// Inputs per operator, in the order of the file.
    inputs: Vec<Vec<Input<'t>>>,
    /// Outputs per operator: `out`, and the named streams it emits, in the order of the file.
    outputs: Vec<Vec<String>>,
    /// The edges that are streams (one per pair of interfaces), in the order of the file.
    edges: Vec<&'t Edge>,
    source_names: HashMap<&'t str, String>,
    sources: Vec<(String, &'t External)>,
    sink_names: HashMap<&'t str, String>,
    sinks: Vec<(String, &'t External)>,
}

impl<'t> Wiring<'t> {
    fn of(topology: &'t Topology) -> Wiring<'t> {
        let mut namer = Namer::default();
        // Components first, so that they keep their names when a topic has the same one.
        let comp: Vec<String> = topology
            .operators
            .iter()
            .map(|op| namer.give(&op.name))
            .collect();
        let (mut inputs, input_at, edges) = inputs_from_edges(topology);
        let (source_names, sources) = external_inputs(topology, &mut namer, &mut inputs, &input_at);
        // Sinks last: their names give way to the components' and the sources'.
        let mut sink_names: HashMap<&str, String> = HashMap::new();
        let mut sinks: Vec<(String, &External)> = Vec::new();
        for op in &topology.operators {
            for t in &op.writes {
                if !sink_names.contains_key(t.name.as_str()) {
                    let n = namer.give(&t.name);
                    sink_names.insert(&t.name, n.clone());
                    sinks.push((n, t));
                }
            }
        }
        let outputs = outputs_of(topology, &edges);
        Wiring {
            comp,
            inputs,
            outputs,
            edges,
            source_names,
            sources,
            sink_names,
            sinks,
        }
    }
}

/// The outputs of each operator: the named streams its edges leave by, and `out` for its
/// unnamed edges, its external outputs, or when it has no other.
fn outputs_of(topology: &Topology, edges: &[&Edge]) -> Vec<Vec<String>> {
    let mut outputs: Vec<Vec<String>> = vec![Vec::new(); topology.operators.len()];
    for e in edges {
        if !outputs[e.from].contains(&e.output) {
            outputs[e.from].push(e.output.clone());
        }
    }
    for (i, op) in topology.operators.iter().enumerate() {
        let out = &mut outputs[i];
        if (out.is_empty() || !op.writes.is_empty()) && !out.iter().any(|o| o == "out") {
            out.insert(0, "out".to_string());
        }
    }
    outputs
}

/// Where each (operator, input name) is in its operator's inputs: an operator may have many.
type InputAt<'t> = HashMap<(usize, &'t str), usize>;

/// The inputs of each operator from the edges, in the order of the file, with where each
/// input is, and the edges that are streams.
fn inputs_from_edges(topology: &Topology) -> (Vec<Vec<Input<'_>>>, InputAt<'_>, Vec<&Edge>) {
    let mut inputs: Vec<Vec<Input>> = topology.operators.iter().map(|_| Vec::new()).collect();
    let mut input_at: InputAt = HashMap::new();
    let mut seen_edges: HashSet<(usize, usize, &str)> = HashSet::new();
    let mut edges: Vec<&Edge> = Vec::new();
    // In the order of the file, so that the spec reads like it.
    let mut by_position: Vec<&Edge> = topology.edges.iter().collect();
    by_position.sort_by_key(|e| (e.span.offset, e.from, e.to));
    for e in by_position {
        // Two edges between the same interfaces (Storm streams of one pair) are one stream.
        let known = input_at.get(&(e.to, e.input.as_str())).copied();
        if !seen_edges.insert((e.from, e.to, e.input.as_str())) {
            if let Some(k) = known {
                let i = &mut inputs[e.to][k];
                i.partition = meet(&i.partition, &e.partition);
            }
            continue;
        }
        edges.push(e);
        match known {
            Some(k) => {
                let i = &mut inputs[e.to][k];
                i.partition = meet(&i.partition, &e.partition);
                i.via.push(e);
            }
            None => {
                input_at.insert((e.to, e.input.as_str()), inputs[e.to].len());
                inputs[e.to].push(Input {
                    name: e.input.clone(),
                    partition: e.partition.clone(),
                    store: e.store.as_deref(),
                    via: vec![e],
                });
            }
        }
    }
    (inputs, input_at, edges)
}

/// External inputs: sources of the spec, one per external name, each named by `namer`; an
/// operator that reads one gets an input `in` (first) if no edge gave it one, and an operator
/// with no input at all gets one.
fn external_inputs<'t>(
    topology: &'t Topology,
    namer: &mut Namer,
    inputs: &mut [Vec<Input<'t>>],
    input_at: &InputAt<'t>,
) -> (HashMap<&'t str, String>, Vec<(String, &'t External)>) {
    let unfed = || Input {
        name: "in".into(),
        partition: Partition::None,
        store: None,
        via: Vec::new(),
    };
    let mut source_names: HashMap<&str, String> = HashMap::new();
    let mut sources: Vec<(String, &External)> = Vec::new();
    for (i, op) in topology.operators.iter().enumerate() {
        for r in &op.reads {
            if !source_names.contains_key(r.name.as_str()) {
                let n = namer.give(&r.name);
                source_names.insert(&r.name, n.clone());
                sources.push((n, r));
            }
        }
        if !op.reads.is_empty() && !input_at.contains_key(&(i, "in")) {
            inputs[i].insert(0, unfed());
        }
        if inputs[i].is_empty() {
            // No predecessor at all: its input is an external `Async` source (the analysis
            // warns about it, located at the operator).
            inputs[i].push(unfed());
        }
    }
    (source_names, sources)
}

/// The spec being written from a topology, with the warnings of the import so far.
struct Emitter<'t> {
    topology: &'t Topology,
    catalog: &'t Catalog,
    entries: &'t [Option<usize>],
    wiring: Wiring<'t>,
    w: Writer,
    warnings: Vec<Diagnostic>,
    explained: Vec<Explained>,
}

impl<'t> Emitter<'t> {
    fn header(&mut self, engine: Engine, name: &str) {
        let w = &mut self.w;
        w.from(Span::new(0, 0));
        w.line(&format!(
            "# Imported by `blazes import {}`: every annotation says which catalogue entry",
            engine.name()
        ));
        w.line("# produced it and why. Review them, then own this spec.");
        w.line(&format!("name: {}", quote(&sanitise(name))));
        // Kept in the spec so that `plan` on it, long after the import, still says each
        // mechanism in the engine's terms.
        w.line(&format!(
            "engine: {}  # so that `plan` also says its mechanisms in {} terms",
            engine.name(),
            engine.display()
        ));
    }

    fn sources(&mut self) {
        if self.wiring.sources.is_empty() {
            return;
        }
        let w = &mut self.w;
        w.from(Span::new(0, 0));
        w.line("sources:");
        for (n, r) in &self.wiring.sources {
            w.from(r.span);
            w.line(&format!("  {}: {{}}  # {}", quote(n), c(&r.what)));
        }
    }

    /// Every operator as a component; returns the seal each one's entry puts on the streams
    /// into it, which the streams are written with.
    fn components(&mut self) -> Vec<SealOf> {
        self.w.from(Span::new(0, 0));
        self.w.line("components:");
        (0..self.topology.operators.len())
            .map(|i| self.component(i))
            .collect()
    }

    /// Operator `i` as a component: a comment naming it, its order, replication and paths.
    fn component(&mut self, i: usize) -> SealOf {
        let op: &'t super::Operator = &self.topology.operators[i];
        let catalog = self.catalog;
        let entry: Option<&Entry> = self.entries[i].map(|e| &catalog.entries[e]);
        let comp = &self.wiring.comp[i];
        let w = &mut self.w;
        w.from(op.span);
        let shown_name = if *comp == op.name {
            String::new()
        } else {
            format!(" (named `{comp}` here: spec names are plain)")
        };
        w.line(&format!(
            "  # {} `{}`, class `{}`{shown_name}",
            op.kind,
            c(&op.name),
            c(&op.class),
        ));
        w.line(&format!("  {}:", quote(comp)));
        let inputs = &self.wiring.inputs[i];
        let mut unnamed_key = false;
        let paths: Vec<(String, PathOut)> = inputs
            .iter()
            .map(|input| {
                let out = path_of(op, entry, input, &mut unnamed_key);
                (input.name.clone(), out)
            })
            .collect();
        operator_warnings(op, entry, unnamed_key, &mut self.warnings);
        let outputs = &self.wiring.outputs[i];
        let mut why: Vec<String> = paths
            .iter()
            .flat_map(|(input, p)| {
                let why = if p.why.is_empty() { &p.comment } else { &p.why };
                outputs
                    .iter()
                    .map(move |o| format!("{input} -> {o}: {}", c(why)))
            })
            .collect();
        if let Some((o, because)) = order_of(op, entry, &paths) {
            w.line(&format!("    # order: {}", c(&because)));
            w.line(&format!("    order: {o}"));
            why.push(format!("order: {o}: {}", c(&because)));
        }
        if let Some(r) = write_replication(w, op, entry, inputs) {
            why.push(r);
        }
        if let Some((task, because)) = &op.task {
            w.line(&format!("    # task: {}", c(because)));
            w.line(&format!("    task: {}", quote(task)));
            why.push(format!("task: {task}: {}", c(because)));
        }
        write_paths(w, &paths, outputs);
        let explained_paths = paths
            .iter()
            .flat_map(|(input, p)| {
                outputs.iter().map(move |o| super::ExplainedPath {
                    from: input.clone(),
                    to: o.clone(),
                    reason: c(&p.comment),
                })
            })
            .collect();
        self.explained.push(Explained {
            component: comp.clone(),
            operator: op.name.clone(),
            kind: op.kind,
            class: op.class.clone(),
            span: op.span,
            by: match entry {
                Some(e) => from_entry(e, op),
                None => "no catalogue entry: never assumed safe".to_string(),
            },
            why,
            paths: explained_paths,
        });
        entry.and_then(|e| {
            let s = e.seal.as_ref()?;
            Some((s.clone(), e.title_for(&op.class, &op.name)))
        })
    }

    fn streams(&mut self, seal_of: &[SealOf]) {
        let wiring = &self.wiring;
        let has_streams =
            !wiring.edges.is_empty() || !wiring.sources.is_empty() || !wiring.sinks.is_empty();
        if has_streams {
            self.w.from(Span::new(0, 0));
            self.w.line("streams:");
        }
        self.streams_from_sources(seal_of);
        self.streams_between_operators(seal_of);
        self.streams_into_sinks();
    }

    /// Sources into their readers, in the order of the operators.
    fn streams_from_sources(&mut self, seal_of: &[SealOf]) {
        let (wiring, w) = (&self.wiring, &mut self.w);
        for (i, op) in self.topology.operators.iter().enumerate() {
            for r in &op.reads {
                w.from(r.span);
                let seal = seal_text(&seal_of[i]);
                w.line(&format!(
                    "  - {{ from: {}, to: {}{} }}  # {}{}",
                    quote(&wiring.source_names[r.name.as_str()]),
                    quote(&format!("{}.in", wiring.comp[i])),
                    seal.0,
                    c(&r.what),
                    seal.1
                ));
            }
        }
    }

    /// The edges, each with what carries it and the seal of its consumer's entry.
    fn streams_between_operators(&mut self, seal_of: &[SealOf]) {
        let (wiring, w) = (&self.wiring, &mut self.w);
        for e in &wiring.edges {
            w.from(e.span);
            // A store link is not a stream the consumer's entry seals: it feeds a CW path.
            let seal = if e.store.is_some() {
                (String::new(), String::new())
            } else {
                seal_text(&seal_of[e.to])
            };
            let via = e
                .via
                .as_deref()
                .map(|v| format!("  # {}", c(v)))
                .unwrap_or_default();
            // One comment per line: the seal's note joins what carries the edge, or opens
            // the comment when nothing does.
            let via = match (via.is_empty(), seal.1.is_empty()) {
                (true, true) => String::new(),
                (true, false) => format!("  #{}", seal.1.trim_start_matches(';')),
                _ => format!("{via}{}", seal.1),
            };
            w.line(&format!(
                "  - {{ from: {}, to: {}{} }}{via}",
                quote(&format!("{}.{}", wiring.comp[e.from], e.output)),
                quote(&format!("{}.{}", wiring.comp[e.to], e.input)),
                seal.0,
            ));
        }
    }

    /// Operators into the sinks they write, in the order of the operators.
    fn streams_into_sinks(&mut self) {
        let (wiring, w) = (&self.wiring, &mut self.w);
        for (i, op) in self.topology.operators.iter().enumerate() {
            for t in &op.writes {
                w.from(t.span);
                w.line(&format!(
                    "  - {{ from: {}, to: {} }}  # {}",
                    quote(&format!("{}.out", wiring.comp[i])),
                    quote(&wiring.sink_names[t.name.as_str()]),
                    c(&t.what)
                ));
            }
        }
    }

    fn sinks(&mut self) {
        if self.wiring.sinks.is_empty() {
            return;
        }
        let w = &mut self.w;
        w.from(Span::new(0, 0));
        w.line("sinks:");
        for (n, t) in &self.wiring.sinks {
            w.from(t.span);
            w.line(&format!("  {}: {{}}  # {}", quote(n), c(&t.what)));
        }
    }
}

/// What the import could not know about an operator: no catalogue entry, the entry's own
/// warning, a key the engine does not name (`unnamed_key`, found while annotating its paths).
fn operator_warnings(
    op: &super::Operator,
    entry: Option<&Entry>,
    unnamed_key: bool,
    warnings: &mut Vec<Diagnostic>,
) {
    match entry {
        None => warnings.push(
            Diagnostic::new(
                &codes::UNKNOWN_OPERATOR,
                format!(
                    "no catalogue entry matches {} `{}` (class `{}`), so it is annotated OW(*), the most conservative",
                    op.kind,
                    c(&op.name),
                    c(&op.class)
                ),
            )
            .at(op.span, "not in the catalogue")
            .help(unknown_operator_help(&op.class)),
        ),
        Some(e) => {
            if let Some(text) = &e.warn {
                warnings.push(
                    Diagnostic::new(
                        &codes::MISSING_INFORMATION,
                        format!("{} `{}`: {}", op.kind, c(&op.name), text),
                    )
                    .at(op.span, "assumed conservatively")
                    .help(format!(
                        "{}; a user catalogue entry for this {}'s name can say what it does",
                        entry_name(e, op),
                        op.kind
                    )),
                );
            }
        }
    }
    if unnamed_key {
        warnings.push(
            Diagnostic::new(
                &codes::MISSING_INFORMATION,
                format!(
                    "{} `{}` is keyed by a HASH partitioning whose key the plan does not name; its gate calls it `key`",
                    op.kind,
                    c(&op.name)
                ),
            )
            .at(op.span, "key not named")
            .help("to use the real attribute (so that seals and orders on it match), give this operator a user catalogue entry with that gate"),
        );
    }
}

/// The help of an unknown operator: the catalogue entry to add, with the conservative
/// annotation it already has filled in and the reason to edit, one field a line so that it
/// copies as YAML (the report wraps long lines; these stay short).
fn unknown_operator_help(class: &str) -> String {
    format!(
        "add this entry to a catalogue passed with --catalog (see docs/import.md), then edit its label and reason to say what the operator does; as it stands it keeps the conservative annotation:\n\
         - class: {}\n  label: OW\n  gate: \"*\"\n  reason: \"EDIT: what it does, and whether that depends on order\"",
        quote(class)
    )
}

/// "catalogue entry `X` (where)", or the rule an entry with no pattern is.
fn entry_name(e: &Entry, op: &super::Operator) -> String {
    if e.classes.is_empty() && e.names.is_empty() {
        return e.origin.clone();
    }
    format!("catalogue entry {}", e.title_for(&op.class, &op.name))
}

/// "from catalogue entry ...", the comment of what an entry decides; a rule of the importer
/// (an entry with no pattern) is named as one.
fn from_entry(e: &Entry, op: &super::Operator) -> String {
    format!("from {}", entry_name(e, op))
}

/// The component's `order:` and its comment: the entry's, else the engine's (a Kafka topic
/// partition's), where it covers an order-sensitive path's gate; elsewhere it would change
/// nothing.
fn order_of(
    op: &super::Operator,
    entry: Option<&Entry>,
    paths: &[(String, PathOut)],
) -> Option<(String, String)> {
    match entry.and_then(|e| e.order.clone().map(|o| (e, o))) {
        Some((e, Order::Global)) => Some(("global".into(), from_entry(e, op))),
        Some((e, Order::Keys(k))) => Some((list(&k), from_entry(e, op))),
        None => op.order.as_ref().and_then(|(keys, why)| {
            let useful = paths
                .iter()
                .filter_map(|(_, p)| p.gate.as_ref())
                .any(|g| keys.iter().all(|k| g.contains(k)));
            useful.then(|| (list(keys), why.clone()))
        }),
    }
}

/// Replication: the entry's, the engine's, or a broadcast input's; returns what it wrote, as
/// `--explain` says it.
fn write_replication(
    w: &mut Writer,
    op: &super::Operator,
    entry: Option<&Entry>,
    inputs: &[Input],
) -> Option<String> {
    let broadcast = inputs.iter().any(|x| x.partition == Partition::All)
        && op.parallelism.is_none_or(|p| p > 1);
    let (field, why) = if let Some((e, n)) = entry.and_then(|e| Some((e, e.replicas?))) {
        (format!("replicas: {n}"), from_entry(e, op))
    } else if let Some((e, r)) = entry.and_then(|e| Some((e, e.replicated?))) {
        (format!("replicated: {r}"), from_entry(e, op))
    } else if let Some(why) = &op.replicated {
        ("replicated: true".to_string(), c(why))
    } else if broadcast {
        let field = match op.parallelism {
            Some(p) => format!("replicas: {p}"),
            None => "replicated: true".to_string(),
        };
        (
            field,
            "every instance receives every record (a broadcast input), each in its own order"
                .to_string(),
        )
    } else {
        return None;
    };
    let key = field.split(':').next().unwrap_or("replicated");
    w.line(&format!("    # {key}: {why}"));
    w.line(&format!("    {field}"));
    Some(format!("{field}: {why}"))
}

/// The component's paths, one from each input to `out`, each after the comment saying why.
fn write_paths(w: &mut Writer, paths: &[(String, PathOut)], outputs: &[String]) {
    w.line("    paths:");
    for ((input, p), output) in paths
        .iter()
        .flat_map(|p| outputs.iter().map(move |o| (p, o)))
    {
        w.line(&format!("      # {}", c(&p.comment)));
        let gate = p
            .gate
            .as_ref()
            .map(|g| {
                if g.len() == 1 && g[0] == "*" {
                    ", gate: \"*\"".to_string()
                } else {
                    format!(", gate: {}", list(g))
                }
            })
            .unwrap_or_default();
        w.line(&format!(
            "      - {{ from: {}, to: {}, label: {}{gate} }}",
            quote(input),
            quote(output),
            p.label.as_str()
        ));
    }
}

/// The `seal:` of a stream into an operator whose entry seals its inputs, and its comment.
fn seal_text(seal: &SealOf) -> (String, String) {
    match seal {
        None => (String::new(), String::new()),
        Some((keys, title)) => (
            format!(", seal: {}", list(keys)),
            format!("; seal from catalogue entry {title}"),
        ),
    }
}

/// The annotation of the path from `input` to the operator's output.
fn path_of(
    op: &super::Operator,
    entry: Option<&Entry>,
    input: &Input,
    unnamed_key: &mut bool,
) -> PathOut {
    if let Some(store) = input.store {
        return PathOut {
            label: Annotation::CW,
            gate: None,
            comment: format!(
                "CW: state store `{}`, which another processor writes: its contents flow into this processor's output (the read itself is annotated on the other input)",
                c(store)
            ),
            why: String::new(),
        };
    }
    let Some(e) = entry else {
        return PathOut {
            label: Annotation::OW,
            gate: Some(vec!["*".into()]),
            comment: format!(
                "OW(*): no catalogue entry matches class `{}`: never assumed safe",
                op.class
            ),
            why: String::new(),
        };
    };
    let mut notes = String::new();
    let gate = e.gate.as_ref().map(|g| {
        if g.len() == 1 && g[0] == "*" {
            return g.clone();
        }
        let mut out: Vec<String> = Vec::new();
        let mut everything = false;
        for k in g {
            if k == GROUP_KEY
                && let Some(keys) = &op.group
            {
                if keys.is_empty() {
                    notes.push_str("; `$group`: it groups all rows together, so the gate is `*`");
                    everything = true;
                } else {
                    let _ = write!(notes, "; `$group` is {} (what it groups or partitions by)", keys.join(", "));
                    for k in keys {
                        if !out.contains(k) {
                            out.push(k.clone());
                        }
                    }
                }
                continue;
            }
            if k != PARTITION_KEY && k != GROUP_KEY {
                if !out.contains(k) {
                    out.push(k.clone());
                }
                continue;
            }
            match &input.partition {
                Partition::Keys(ks) => {
                    let _ = write!(notes, "; `$key` is {} (how its input is partitioned)", ks.join(", "));
                    for k in ks {
                        if !out.contains(k) {
                            out.push(k.clone());
                        }
                    }
                }
                Partition::UnnamedKey => {
                    *unnamed_key = true;
                    notes.push_str("; `$key` is `key`: the input is HASH-partitioned by a key the plan does not name");
                    if !out.iter().any(|o| o == "key") {
                        out.push("key".into());
                    }
                }
                Partition::None | Partition::All => {
                    notes.push_str("; its input is not partitioned by key, so the gate has no key");
                }
            }
        }
        if everything {
            return vec!["*".into()];
        }
        if out.is_empty() {
            notes.push_str(" (nothing left: gate `*`)");
            out.push("*".into());
        }
        out
    });
    let signature = match &gate {
        Some(g) => format!("{}({})", e.label.as_str(), g.join(", ")),
        None => e.label.as_str().to_string(),
    };
    PathOut {
        label: e.label,
        gate,
        comment: format!("{signature} {}: {}{notes}", from_entry(e, op), e.reason),
        why: format!("{signature}: {}{notes}", e.reason),
    }
}
