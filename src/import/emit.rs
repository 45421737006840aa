//! Writing an annotated topology as a spec, with the map from the spec's spans back to the
//! topology file.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use super::catalog::{self, Catalog, Entry, Order, PARTITION_KEY};
use super::{Edge, Engine, Imported, Partition, Topology};
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
    comment: String,
}

pub(super) fn emit(
    engine: Engine,
    topology: &Topology,
    catalog: &Catalog,
    entries: &[Option<usize>],
    name: &str,
) -> Imported {
    let mut warnings = topology.warnings.clone();
    let mut w = Writer {
        text: String::new(),
        map: SourceMap::default(),
    };
    w.from(Span::new(0, 0));
    w.line(&format!(
        "# Imported by `blazes import {}`: every annotation says which catalogue entry",
        engine.name()
    ));
    w.line("# produced it and why. Review them, then own this spec.");
    w.line(&format!("name: {}", quote(&sanitise(name))));

    let mut namer = Namer::default();
    // Components first, so that they keep their names when a topic has the same one.
    let comp: Vec<String> = topology
        .operators
        .iter()
        .map(|op| namer.give(&op.name))
        .collect();
    // Inputs per operator: from edges, in the order of the file.
    let mut inputs: Vec<Vec<Input>> = topology.operators.iter().map(|_| Vec::new()).collect();
    // Where each (operator, input name) is in `inputs`: an operator may have many inputs.
    let mut input_at: HashMap<(usize, &str), usize> = HashMap::new();
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
    // External inputs: sources of the spec, one per external name.
    let mut source_names: HashMap<&str, String> = HashMap::new();
    let mut sources: Vec<(String, &super::External)> = Vec::new();
    for (i, op) in topology.operators.iter().enumerate() {
        for r in &op.reads {
            if !source_names.contains_key(r.name.as_str()) {
                let n = namer.give(&r.name);
                source_names.insert(&r.name, n.clone());
                sources.push((n, r));
            }
        }
        if !op.reads.is_empty() && !input_at.contains_key(&(i, "in")) {
            inputs[i].insert(
                0,
                Input {
                    name: "in".into(),
                    partition: Partition::None,
                    store: None,
                    via: Vec::new(),
                },
            );
        }
        if inputs[i].is_empty() {
            // No predecessor at all: its input is an external `Async` source (the analysis
            // warns about it, located at the operator).
            inputs[i].push(Input {
                name: "in".into(),
                partition: Partition::None,
                store: None,
                via: Vec::new(),
            });
        }
    }
    let mut sink_names: HashMap<&str, String> = HashMap::new();
    let mut sinks: Vec<(String, &super::External)> = Vec::new();
    for op in &topology.operators {
        for t in &op.writes {
            if !sink_names.contains_key(t.name.as_str()) {
                let n = namer.give(&t.name);
                sink_names.insert(&t.name, n.clone());
                sinks.push((n, t));
            }
        }
    }

    if !sources.is_empty() {
        w.from(Span::new(0, 0));
        w.line("sources:");
        for (n, r) in &sources {
            w.from(r.span);
            w.line(&format!("  {}: {{}}  # {}", quote(n), c(&r.what)));
        }
    }

    w.from(Span::new(0, 0));
    w.line("components:");
    // Seals an entry puts on the streams into its operator.
    let mut seal_of: Vec<Option<(Vec<String>, String)>> = vec![None; topology.operators.len()];
    for (i, op) in topology.operators.iter().enumerate() {
        let entry: Option<&Entry> = entries[i].map(|e| &catalog.entries[e]);
        w.from(op.span);
        let shown_name = if comp[i] == op.name {
            String::new()
        } else {
            format!(" (named `{}` here: spec names are plain)", comp[i])
        };
        w.line(&format!(
            "  # {} `{}`, class `{}`{shown_name}",
            op.kind,
            c(&op.name),
            c(&op.class),
        ));
        w.line(&format!("  {}:", quote(&comp[i])));
        let mut unnamed_key = false;
        let paths: Vec<(String, PathOut)> = inputs[i]
            .iter()
            .map(|input| {
                let out = path_of(op, entry, input, &mut unnamed_key);
                (input.name.clone(), out)
            })
            .collect();
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
                .help(format!(
                    "if you know what it does, add to a catalogue passed with --catalog: `- {{ class: {}, label: CR, reason: \"what it does\" }}` (see docs/import.md)",
                    quote(&op.class)
                )),
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
                            "catalogue entry {}; a user catalogue entry for this {}'s name can say what it does",
                            e.title_for(&op.class, &op.name),
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
        // Order: the entry's, else the engine's (a Kafka topic partition's), where it covers
        // an order-sensitive path's gate; elsewhere it would change nothing.
        let sensitive_gates: Vec<&Vec<String>> =
            paths.iter().filter_map(|(_, p)| p.gate.as_ref()).collect();
        let order: Option<(String, String)> = match entry.and_then(|e| e.order.clone()) {
            Some(Order::Global) => Some((
                "global".into(),
                format!(
                    "from catalogue entry {}",
                    entry
                        .map(|e| e.title_for(&op.class, &op.name))
                        .unwrap_or_default()
                ),
            )),
            Some(Order::Keys(k)) => Some((
                list(&k),
                format!(
                    "from catalogue entry {}",
                    entry
                        .map(|e| e.title_for(&op.class, &op.name))
                        .unwrap_or_default()
                ),
            )),
            None => op.order.as_ref().and_then(|(keys, why)| {
                let useful = sensitive_gates
                    .iter()
                    .any(|g| keys.iter().all(|k| g.contains(k)));
                useful.then(|| (list(keys), why.clone()))
            }),
        };
        if let Some((o, why)) = order {
            w.line(&format!("    # order: {}", c(&why)));
            w.line(&format!("    order: {o}"));
        }
        // Replication: the entry's, the engine's, or a broadcast input.
        let broadcast = inputs[i].iter().any(|x| x.partition == Partition::All)
            && op.parallelism.is_none_or(|p| p > 1);
        if let Some(n) = entry.and_then(|e| e.replicas) {
            w.line(&format!(
                "    # replicas: from catalogue entry {}",
                entry
                    .map(|e| e.title_for(&op.class, &op.name))
                    .unwrap_or_default()
            ));
            w.line(&format!("    replicas: {n}"));
        } else if let Some(r) = entry.and_then(|e| e.replicated) {
            w.line(&format!(
                "    # replicated: from catalogue entry {}",
                entry
                    .map(|e| e.title_for(&op.class, &op.name))
                    .unwrap_or_default()
            ));
            w.line(&format!("    replicated: {r}"));
        } else if let Some(why) = &op.replicated {
            w.line(&format!("    # replicated: {}", c(why)));
            w.line("    replicated: true");
        } else if broadcast {
            w.line("    # replicated: every instance receives every record (a broadcast input), each in its own order");
            match op.parallelism {
                Some(p) => w.line(&format!("    replicas: {p}")),
                None => w.line("    replicated: true"),
            }
        }
        w.line("    paths:");
        for (input, p) in &paths {
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
                "      - {{ from: {}, to: \"out\", label: {}{gate} }}",
                quote(input),
                p.label.as_str()
            ));
        }
        if let Some(e) = entry
            && let Some(s) = &e.seal
        {
            seal_of[i] = Some((s.clone(), e.title_for(&op.class, &op.name)));
        }
    }

    let has_streams = !edges.is_empty() || !sources.is_empty() || !sinks.is_empty();
    if has_streams {
        w.from(Span::new(0, 0));
        w.line("streams:");
    }
    // Sources into their readers, in the order of the operators.
    for (i, op) in topology.operators.iter().enumerate() {
        for r in &op.reads {
            w.from(r.span);
            let seal = seal_text(&seal_of[i]);
            w.line(&format!(
                "  - {{ from: {}, to: {}{} }}  # {}{}",
                quote(&source_names[r.name.as_str()]),
                quote(&format!("{}.in", comp[i])),
                seal.0,
                c(&r.what),
                seal.1
            ));
        }
    }
    for e in &edges {
        w.from(e.span);
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
        let via = match (via.is_empty(), seal.1.is_empty()) {
            (true, true) => String::new(),
            (true, false) => format!("  #{}", seal.1.trim_start_matches(';')),
            _ => format!("{via}{}", seal.1),
        };
        w.line(&format!(
            "  - {{ from: {}, to: {}{} }}{via}",
            quote(&format!("{}.out", comp[e.from])),
            quote(&format!("{}.{}", comp[e.to], e.input)),
            seal.0,
        ));
    }
    for (i, op) in topology.operators.iter().enumerate() {
        for t in &op.writes {
            w.from(t.span);
            w.line(&format!(
                "  - {{ from: {}, to: {} }}  # {}",
                quote(&format!("{}.out", comp[i])),
                quote(&sink_names[t.name.as_str()]),
                c(&t.what)
            ));
        }
    }
    if !sinks.is_empty() {
        w.from(Span::new(0, 0));
        w.line("sinks:");
        for (n, t) in &sinks {
            w.from(t.span);
            w.line(&format!("  {}: {{}}  # {}", quote(n), c(&t.what)));
        }
    }
    Imported {
        spec: w.text,
        map: w.map,
        warnings,
    }
}

/// The `seal:` of a stream into an operator whose entry seals its inputs, and its comment.
fn seal_text(seal: &Option<(Vec<String>, String)>) -> (String, String) {
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
        };
    };
    let mut notes = String::new();
    let gate = e.gate.as_ref().map(|g| {
        if g.len() == 1 && g[0] == "*" {
            return g.clone();
        }
        let mut out: Vec<String> = Vec::new();
        for k in g {
            if k != PARTITION_KEY {
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
        comment: format!(
            "{signature} from catalogue entry {}: {}{notes}",
            e.title_for(&op.class, &op.name),
            e.reason
        ),
    }
}
