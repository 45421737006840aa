//! The dataflow IR: components with their interfaces and paths, sources, sinks and streams,
//! with every name resolved to an index and every key set interned. Built from a [`Spec`],
//! reporting the cross-reference errors the spec reader cannot see (dangling endpoints,
//! streams in the wrong direction).
//!
//! The topology is also a petgraph graph (one vertex per component, source and sink, one edge
//! per stream) for traversals that do not care about interfaces.
//!
//! Must not know: labels beyond the key sets, how results are printed.

use std::collections::BTreeSet;

use foldhash::{HashMap, HashMapExt};

use petgraph::graph::{DiGraph, NodeIndex};

use crate::codes;
use crate::diagnostic::{Diagnostic, Span};
use crate::label::{Annotation, FailOn, Gate, KeySet, Keys, Label, Tolerance, sink_fails};
use crate::spec::{self, GateDecl, KeyList, OrderDecl, Spec};

macro_rules! id {
    ($name:ident) => {
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub u32);
        impl $name {
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }
    };
}
id!(CompId);
id!(IfaceId);
id!(StreamId);
id!(SourceId);
id!(SinkId);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    Global,
    Keys(KeySet),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Input,
    Output,
}

#[derive(Clone, Debug)]
pub struct Iface {
    pub component: CompId,
    pub name: String,
    pub direction: Direction,
    /// First mention in a path (`from` for inputs, `to` for outputs).
    pub span: Span,
    /// Streams into an input, or out of an output.
    pub streams: Vec<StreamId>,
    /// The implicit sink of an output no stream leaves.
    pub implicit_sink: Option<SinkId>,
}

#[derive(Clone, Debug)]
pub struct Path {
    pub input: IfaceId,
    pub output: IfaceId,
    pub annotation: Annotation,
    pub gate: Option<Gate>,
    pub label_span: Span,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct Component {
    pub name: String,
    pub span: Span,
    pub body: Span,
    pub replicated: bool,
    pub order: Option<Order>,
    pub paths: Vec<Path>,
    pub inputs: Vec<IfaceId>,
    pub outputs: Vec<IfaceId>,
}

impl Component {
    /// Whether the component's order makes an `O(gate)` path deterministic: a global order, or
    /// a keyed order whose keys lie within the gate.
    pub fn ordered_for(&self, gate: Gate, keys: &Keys) -> bool {
        match (self.order, gate) {
            (Some(Order::Global), _) => true,
            (Some(Order::Keys(k)), Gate::Keys(g)) => keys.is_subset(k, g),
            _ => false,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Source {
    pub name: String,
    pub span: Span,
    pub body: Span,
    pub seal: Option<KeySet>,
    pub sealable: Vec<KeySet>,
    pub streams: Vec<StreamId>,
}

#[derive(Clone, Debug)]
pub struct Sink {
    pub name: String,
    pub span: Span,
    /// The declared `tolerate:`, if any (see [`Sink::tolerance`]).
    pub tolerate: Option<Tolerance>,
    /// `Some` for the implicit sink of an output that no stream leaves.
    pub implicit: Option<IfaceId>,
    pub streams: Vec<StreamId>,
}

impl Sink {
    /// The worst label the sink accepts by its own declaration: `Async` when it declares none.
    pub fn tolerance(&self) -> Tolerance {
        self.tolerate.unwrap_or(Tolerance::Async)
    }

    /// Whether receiving `l` fails the sink: see [`sink_fails`].
    pub fn fails(&self, l: Label, fail_on: FailOn) -> bool {
        sink_fails(self.tolerate, fail_on, l)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Producer {
    Source(SourceId),
    Output(IfaceId),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Consumer {
    Input(IfaceId),
    Sink(SinkId),
}

#[derive(Clone, Debug)]
pub struct Stream {
    pub from: Producer,
    pub to: Consumer,
    pub from_text: String,
    pub to_text: String,
    pub seal: Option<KeySet>,
    pub seal_span: Option<Span>,
    pub from_span: Span,
    pub to_span: Span,
    pub span: Span,
}

/// A petgraph edge: a declared stream, or the implicit stream from an unconsumed output to
/// its implicit sink.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Edge {
    Stream(StreamId),
    Implicit(IfaceId),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Vertex {
    Component(CompId),
    Source(SourceId),
    Sink(SinkId),
}

#[derive(Clone, Debug)]
pub struct Dataflow {
    pub name: String,
    pub keys: Keys,
    pub components: Vec<Component>,
    pub ifaces: Vec<Iface>,
    pub sources: Vec<Source>,
    pub sinks: Vec<Sink>,
    pub streams: Vec<Stream>,
    pub graph: DiGraph<Vertex, Edge>,
    pub component_vertex: Vec<NodeIndex>,
    pub source_vertex: Vec<NodeIndex>,
    pub sink_vertex: Vec<NodeIndex>,
}

impl Dataflow {
    pub fn iface(&self, i: IfaceId) -> &Iface {
        &self.ifaces[i.index()]
    }

    pub fn component(&self, c: CompId) -> &Component {
        &self.components[c.index()]
    }

    /// `Component.interface`.
    pub fn iface_name(&self, i: IfaceId) -> String {
        let f = self.iface(i);
        format!("{}.{}", self.component(f.component).name, f.name)
    }

    pub fn producer_name(&self, p: Producer) -> String {
        match p {
            Producer::Source(s) => self.sources[s.index()].name.clone(),
            Producer::Output(i) => self.iface_name(i),
        }
    }

    pub fn component_by_name(&self, name: &str) -> Option<CompId> {
        self.components
            .iter()
            .position(|c| c.name == name)
            .map(|i| CompId(i as u32))
    }
}

/// Builds the IR. Returns the dataflow and the resolution diagnostics; the dataflow is
/// complete only when no diagnostic is an error.
///
/// The spec is consumed: its names move into the dataflow, and each declaration is freed as
/// it is converted, so that a big spec and its dataflow are never in memory whole together.
pub fn build(spec: Spec, fallback_name: &str) -> (Dataflow, Vec<Diagnostic>) {
    Builder::default().build(spec, fallback_name)
}

struct Builder {
    keys: Keys,
    diags: Vec<Diagnostic>,
    /// Name comparisons "did you mean" may still make in this file. A hostile spec with
    /// thousands of dangling endpoints and thousands of components would otherwise spend
    /// quadratic time on suggestions; past the budget, errors come without one.
    suggestions_left: usize,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            keys: Keys::default(),
            diags: Vec::new(),
            suggestions_left: 250_000,
        }
    }
}

impl Builder {
    /// `did_you_mean` within the file's budget. All or nothing per call, so that the result
    /// never depends on the iteration order of the candidates.
    fn suggest<'a>(
        &mut self,
        word: &str,
        candidates: impl ExactSizeIterator<Item = &'a str>,
    ) -> Option<&'a str> {
        if candidates.len() > self.suggestions_left {
            self.suggestions_left = 0;
            return None;
        }
        self.suggestions_left -= candidates.len();
        spec::did_you_mean(word, candidates)
    }

    fn key_set(&mut self, list: &KeyList) -> KeySet {
        let attrs: Vec<_> = list.names.iter().map(|n| self.keys.attr(&n.text)).collect();
        self.keys.set(attrs)
    }

    fn build(mut self, spec: Spec, fallback_name: &str) -> (Dataflow, Vec<Diagnostic>) {
        let Spec {
            name: spec_name,
            sources: source_decls,
            components: component_decls,
            streams: stream_decls,
            sinks: sink_decls,
            sources_key: _,
        } = spec;
        let mut components = Vec::with_capacity(component_decls.len());
        let mut ifaces: Vec<Iface> = Vec::new();
        let mut incomplete: Vec<bool> = Vec::with_capacity(component_decls.len());
        for decl in freeing(component_decls) {
            let cid = CompId(components.len() as u32);
            let mut c = Component {
                name: decl.name.text,
                span: decl.name.span,
                body: decl.body,
                replicated: decl.replicated,
                order: None,
                paths: Vec::with_capacity(decl.paths.len()),
                inputs: Vec::new(),
                outputs: Vec::new(),
            };
            // Interfaces by name, inputs and outputs separately (the same name may be both an
            // input and an output, as in the paper's Cache); maps only for many interfaces.
            let mut ins = None;
            let mut outs = None;
            for p in decl.paths {
                let input = add_iface(
                    &mut ifaces,
                    &mut c.inputs,
                    &mut ins,
                    cid,
                    p.from,
                    Direction::Input,
                );
                let output = add_iface(
                    &mut ifaces,
                    &mut c.outputs,
                    &mut outs,
                    cid,
                    p.to,
                    Direction::Output,
                );
                let gate = p.gate.as_ref().map(|g| match g {
                    GateDecl::Star(_) => Gate::Star,
                    GateDecl::Keys(k) => Gate::Keys(self.key_set(k)),
                });
                c.paths.push(Path {
                    input,
                    output,
                    annotation: p.label,
                    gate,
                    label_span: p.label_span,
                    span: p.span,
                });
            }
            c.order = decl.order.as_ref().map(|o| match o {
                OrderDecl::Global(_) => Order::Global,
                OrderDecl::Keys(k) => Order::Keys(self.key_set(k)),
            });
            components.push(c);
            incomplete.push(decl.incomplete);
        }

        let mut sources = Vec::with_capacity(source_decls.len());
        for s in source_decls {
            let seal = s.seal.as_ref().map(|k| self.key_set(k));
            let sealable = s.sealable.iter().map(|k| self.key_set(k)).collect();
            sources.push(Source {
                name: s.name.text,
                span: s.name.span,
                body: s.body,
                seal,
                sealable,
                streams: Vec::new(),
            });
        }
        let mut sinks = Vec::with_capacity(sink_decls.len());
        for s in sink_decls {
            sinks.push(Sink {
                name: s.name.text,
                span: s.name.span,
                tolerate: s.tolerate.map(|(t, _)| t),
                implicit: None,
                streams: Vec::new(),
            });
        }

        // The names are looked up in the dataflow itself, which stays unchanged while the
        // streams are resolved (each one's place in the stream lists is filled in after).
        let mut streams = Vec::with_capacity(stream_decls.len());
        {
            let names = Names::new(&components, &incomplete, &ifaces, &sources, &sinks);
            for decl in freeing(stream_decls) {
                let from = self.resolve_from(&names, &decl.from);
                let to = self.resolve_to(&names, &decl.to);
                let (Some(from), Some(to)) = (from, to) else {
                    continue;
                };
                let seal = decl.seal.as_ref().map(|k| self.key_set(k));
                streams.push(Stream {
                    from,
                    to,
                    from_text: decl.from.text,
                    to_text: decl.to.text,
                    seal,
                    seal_span: decl.seal.as_ref().map(|k| k.span),
                    from_span: decl.from.span,
                    to_span: decl.to.span,
                    span: decl.span,
                });
            }
        }
        for (i, s) in streams.iter().enumerate() {
            let sid = StreamId(i as u32);
            match s.from {
                Producer::Source(k) => sources[k.index()].streams.push(sid),
                Producer::Output(f) => ifaces[f.index()].streams.push(sid),
            }
            match s.to {
                Consumer::Input(f) => ifaces[f.index()].streams.push(sid),
                Consumer::Sink(k) => sinks[k.index()].streams.push(sid),
            }
        }

        // Outputs that no stream leaves are sinks of their own.
        for (i, f) in ifaces.iter_mut().enumerate() {
            if f.direction == Direction::Output && f.streams.is_empty() {
                let id = SinkId(sinks.len() as u32);
                f.implicit_sink = Some(id);
                sinks.push(Sink {
                    name: format!("{}.{}", components[f.component.index()].name, f.name),
                    span: f.span,
                    tolerate: None,
                    implicit: Some(IfaceId(i as u32)),
                    streams: Vec::new(),
                });
            }
        }

        let mut graph = DiGraph::with_capacity(
            components.len() + sources.len() + sinks.len(),
            streams.len(),
        );
        let component_vertex: Vec<_> = (0..components.len())
            .map(|i| graph.add_node(Vertex::Component(CompId(i as u32))))
            .collect();
        let source_vertex: Vec<_> = (0..sources.len())
            .map(|i| graph.add_node(Vertex::Source(SourceId(i as u32))))
            .collect();
        let sink_vertex: Vec<_> = (0..sinks.len())
            .map(|i| graph.add_node(Vertex::Sink(SinkId(i as u32))))
            .collect();
        let vertex_of_producer = |p: Producer| match p {
            Producer::Source(s) => source_vertex[s.index()],
            Producer::Output(i) => component_vertex[ifaces[i.index()].component.index()],
        };
        for (i, s) in streams.iter().enumerate() {
            let a = vertex_of_producer(s.from);
            let b = match s.to {
                Consumer::Input(f) => component_vertex[ifaces[f.index()].component.index()],
                Consumer::Sink(k) => sink_vertex[k.index()],
            };
            graph.add_edge(a, b, Edge::Stream(StreamId(i as u32)));
        }
        for (i, f) in ifaces.iter().enumerate() {
            if let Some(k) = f.implicit_sink {
                graph.add_edge(
                    component_vertex[f.component.index()],
                    sink_vertex[k.index()],
                    Edge::Implicit(IfaceId(i as u32)),
                );
            }
        }

        let name = spec_name.map_or_else(|| fallback_name.to_string(), |n| n.text);
        let dataflow = Dataflow {
            name,
            keys: self.keys,
            components,
            ifaces,
            sources,
            sinks,
            streams,
            graph,
            component_vertex,
            source_vertex,
            sink_vertex,
        };
        (dataflow, self.diags)
    }

    fn resolve_from(&mut self, n: &Names, e: &spec::Endpoint) -> Option<Producer> {
        Some(match self.resolve(n, e, &FROM)? {
            Resolved::Iface(i) => Producer::Output(i),
            Resolved::Declared(k) => Producer::Source(SourceId(k)),
        })
    }

    fn resolve_to(&mut self, n: &Names, e: &spec::Endpoint) -> Option<Consumer> {
        Some(match self.resolve(n, e, &TO)? {
            Resolved::Iface(i) => Consumer::Input(i),
            Resolved::Declared(k) => Consumer::Sink(SinkId(k)),
        })
    }

    /// Resolves one end of a stream, or reports why it cannot be: the two ends are mirror
    /// images (outputs and sources upstream, inputs and sinks downstream), told apart by `end`.
    fn resolve(&mut self, n: &Names, e: &spec::Endpoint, end: &End) -> Option<Resolved> {
        let (own_dir, other_dir) = match end.field {
            "from" => (Direction::Output, Direction::Input),
            _ => (Direction::Input, Direction::Output),
        };
        let name = e.name();
        let (own_decl, other_decl) = match end.field {
            "from" => (n.sources.get(name).map(|s| s.0), n.sinks.contains_key(name)),
            _ => (n.sinks.get(name).map(|s| s.0), n.sources.contains_key(name)),
        };
        match e.component() {
            Some(c) => {
                let cid = self.component(n, c, e)?;
                let own_ifaces = n.ifaces_of(cid, own_dir);
                if let Some(i) = own_ifaces.get(name) {
                    return Some(Resolved::Iface(i));
                }
                if n.incomplete[cid.index()] {
                    return None;
                }
                if n.ifaces_of(cid, other_dir).get(name).is_some() {
                    self.push(
                        Diagnostic::new(
                            &codes::WRONG_DIRECTION,
                            format!(
                                "stream {} `{}`, which is an {} of {c}",
                                end.flows, e.text, end.other_iface
                            ),
                        )
                        .at(
                            e.span,
                            format!("an {}, not an {}", end.other_iface, end.own_iface),
                        )
                        .help(format!(
                            "a stream's `{}` must be an {}; the {}s of {c} are: {}",
                            end.field,
                            end.own_iface,
                            end.own_iface,
                            list(&own_ifaces)
                        )),
                    );
                } else {
                    self.unknown_iface(e, c, end.own_iface, &own_ifaces);
                }
                None
            }
            None => {
                if let Some(k) = own_decl {
                    return Some(Resolved::Declared(k));
                }
                let d = if other_decl {
                    Diagnostic::new(
                        &codes::WRONG_DIRECTION,
                        format!(
                            "stream {} `{}`, which is a {}",
                            end.flows, e.text, end.other_decl
                        ),
                    )
                    .at(
                        e.span,
                        format!("a {}, not a {}", end.other_decl, end.own_decl),
                    )
                    .help(end.direction_help)
                } else if n.comp_index.contains_key(name) {
                    Diagnostic::new(
                        &codes::DANGLING_ENDPOINT,
                        format!(
                            "stream endpoint `{}` names a component but not its interface",
                            e.text
                        ),
                    )
                    .at(e.span, "missing `.interface`")
                    .help(format!("write `{}.<{}>`", e.text, end.own_iface))
                } else {
                    let d = Diagnostic::new(
                        &codes::DANGLING_ENDPOINT,
                        format!(
                            "stream {} `{}`, which is not a declared {}",
                            end.names, e.text, end.own_decl
                        ),
                    )
                    .at(e.span, format!("unknown {}", end.own_decl));
                    let known: Vec<&str> = match end.field {
                        "from" => n.sources.keys().copied().collect(),
                        _ => n.sinks.keys().copied().collect(),
                    };
                    match self.suggest(name, known.into_iter()) {
                        Some(s) => d.help(format!("did you mean `{s}`?")),
                        None => d.help(format!(
                            "declare it under `{}s:` (`{}: {{}}`), or write `Component.{}`",
                            end.own_decl, name, end.own_iface
                        )),
                    }
                };
                self.push(d);
                None
            }
        }
    }

    fn component(&mut self, n: &Names, c: &str, e: &spec::Endpoint) -> Option<CompId> {
        if let Some(&id) = n.comp_index.get(c) {
            return Some(id);
        }
        let mut d = Diagnostic::new(
            &codes::DANGLING_ENDPOINT,
            format!(
                "stream endpoint `{}` names component `{c}`, which is not defined",
                e.text
            ),
        )
        .at(e.span, "unknown component");
        if let Some(s) = self.suggest(c, n.comp_index.keys().copied()) {
            d = d.help(format!("did you mean `{s}.{}`?", e.name()));
        }
        self.push(d);
        None
    }

    fn unknown_iface(&mut self, e: &spec::Endpoint, c: &str, dir: &str, known: &IfaceView<'_>) {
        let mut d = Diagnostic::new(
            &codes::DANGLING_ENDPOINT,
            format!("component {c} has no {dir} `{}`", e.name()),
        )
        .at(e.span, format!("unknown {dir}"));
        d = match self.suggest(e.name(), known.keys()) {
            Some(s) => d.help(format!("did you mean `{c}.{s}`?")),
            None => d.help(format!("the {dir}s of {c} are: {}", list(known))),
        };
        self.push(d);
    }

    fn push(&mut self, d: Diagnostic) {
        self.diags.push(d);
    }
}

/// A resolved endpoint: a component interface, or a declared source (upstream) or sink
/// (downstream), by index.
enum Resolved {
    Iface(IfaceId),
    Declared(u32),
}

/// The words that tell the two ends of a stream apart in messages.
struct End {
    field: &'static str,
    own_iface: &'static str,
    other_iface: &'static str,
    own_decl: &'static str,
    other_decl: &'static str,
    flows: &'static str,
    names: &'static str,
    direction_help: &'static str,
}

const FROM: End = End {
    field: "from",
    own_iface: "output",
    other_iface: "input",
    own_decl: "source",
    other_decl: "sink",
    flows: "flows out of",
    names: "comes from",
    direction_help: "streams flow into sinks; a stream's `from` is a source or `Component.output`",
};

const TO: End = End {
    field: "to",
    own_iface: "input",
    other_iface: "output",
    own_decl: "sink",
    other_decl: "source",
    flows: "flows into",
    names: "goes to",
    direction_help: "streams flow out of sources; a stream's `to` is a sink or `Component.input`",
};

struct Names<'a> {
    comp_index: HashMap<&'a str, CompId>,
    incomplete: &'a [bool],
    components: &'a [Component],
    ifaces: &'a [Iface],
    /// Interfaces by name of the components that have more than [`IFACES_INDEXED`] of one
    /// direction; the others are searched in their short lists.
    indexed: HashMap<(CompId, bool), HashMap<&'a str, IfaceId>>,
    sources: HashMap<&'a str, SourceId>,
    sinks: HashMap<&'a str, SinkId>,
}

impl<'a> Names<'a> {
    fn new(
        components: &'a [Component],
        incomplete: &'a [bool],
        ifaces: &'a [Iface],
        sources: &'a [Source],
        sinks: &'a [Sink],
    ) -> Self {
        let mut comp_index = HashMap::with_capacity(components.len());
        let mut indexed = HashMap::new();
        for (i, c) in components.iter().enumerate() {
            let cid = CompId(i as u32);
            comp_index.insert(c.name.as_str(), cid);
            for (list, input) in [(&c.inputs, true), (&c.outputs, false)] {
                if list.len() > IFACES_INDEXED {
                    let map = list
                        .iter()
                        .map(|&f| (ifaces[f.index()].name.as_str(), f))
                        .collect();
                    indexed.insert((cid, input), map);
                }
            }
        }
        Names {
            comp_index,
            incomplete,
            components,
            ifaces,
            indexed,
            sources: sources
                .iter()
                .enumerate()
                .map(|(i, s)| (s.name.as_str(), SourceId(i as u32)))
                .collect(),
            sinks: sinks
                .iter()
                .enumerate()
                .map(|(i, s)| (s.name.as_str(), SinkId(i as u32)))
                .collect(),
        }
    }

    fn ifaces_of(&self, cid: CompId, dir: Direction) -> IfaceView<'_> {
        let c = &self.components[cid.index()];
        let input = dir == Direction::Input;
        IfaceView {
            ids: if input { &c.inputs } else { &c.outputs },
            ifaces: self.ifaces,
            index: self.indexed.get(&(cid, input)),
        }
    }
}

/// A component's interfaces of one direction, by name: its short list, searched, or past
/// [`IFACES_INDEXED`] names a map. Components have a handful of interfaces, and a map for each
/// costs more than it saves; but a hostile spec can give one component a hundred thousand,
/// and linear lookups would make building it quadratic.
struct IfaceView<'a> {
    ids: &'a [IfaceId],
    ifaces: &'a [Iface],
    index: Option<&'a HashMap<&'a str, IfaceId>>,
}

const IFACES_INDEXED: usize = 32;

impl<'a> IfaceView<'a> {
    fn get(&self, name: &str) -> Option<IfaceId> {
        match self.index {
            Some(m) => m.get(name).copied(),
            None => self
                .ids
                .iter()
                .copied()
                .find(|f| self.ifaces[f.index()].name == name),
        }
    }
    fn len(&self) -> usize {
        self.ids.len()
    }
    fn keys(&self) -> impl ExactSizeIterator<Item = &'a str> + use<'a> {
        let ifaces = self.ifaces;
        self.ids
            .iter()
            .map(move |f| ifaces[f.index()].name.as_str())
    }
}

/// The interface `name` of direction `dir` of the component being built: the one already in
/// `list` (found through `index` once it has more than [`IFACES_INDEXED`] names), or a new
/// one, which takes the name (and the span of this first mention).
fn add_iface(
    ifaces: &mut Vec<Iface>,
    list: &mut Vec<IfaceId>,
    index: &mut Option<HashMap<String, IfaceId>>,
    cid: CompId,
    name: spec::Name,
    dir: Direction,
) -> IfaceId {
    let found = match index {
        Some(m) => m.get(&name.text).copied(),
        None => list
            .iter()
            .copied()
            .find(|f| ifaces[f.index()].name == name.text),
    };
    if let Some(f) = found {
        return f;
    }
    let id = IfaceId(ifaces.len() as u32);
    match index {
        Some(m) => {
            m.insert(name.text.clone(), id);
        }
        None if list.len() + 1 > IFACES_INDEXED => {
            let mut m: HashMap<String, IfaceId> = list
                .iter()
                .map(|&f| (ifaces[f.index()].name.clone(), f))
                .collect();
            m.insert(name.text.clone(), id);
            *index = Some(m);
        }
        None => {}
    }
    ifaces.push(Iface {
        component: cid,
        name: name.text,
        direction: dir,
        span: name.span,
        streams: Vec::new(),
        implicit_sink: None,
    });
    list.push(id);
    id
}

/// The items of `items` in order, giving the list's memory back as they are taken: a spec's
/// list of streams is hundreds of megabytes at a million components, and the dataflow built
/// from it would otherwise be allocated beside all of it.
fn freeing<T>(mut items: Vec<T>) -> impl Iterator<Item = T> {
    items.reverse();
    std::iter::from_fn(move || {
        let item = items.pop();
        // Halving keeps the copies linear in all; small lists are not worth it.
        if items.capacity() > 1 << 12 && items.len() < items.capacity() / 2 {
            items.shrink_to_fit();
        }
        item
    })
}

/// Sorted, backquoted list of interface names (`none` when empty).
fn list(names: &IfaceView<'_>) -> String {
    // A help line, not a dump: a component with thousands of interfaces would make every
    // error about it thousands of names long.
    if names.len() > 12 {
        return format!(
            "{} names (run `blazes check --format json` to list them)",
            names.len()
        );
    }
    let sorted: BTreeSet<&str> = names.keys().collect();
    if sorted.is_empty() {
        return "none".into();
    }
    sorted
        .iter()
        .map(|k| format!("`{k}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
