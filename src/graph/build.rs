//! Building the IR from a spec: components with their paths and interfaces, sources and
//! sinks, then the streams (their endpoints resolved in `resolve`), the implicit sinks of
//! unconsumed outputs, and the petgraph topology. The spec is freed as it is converted.

use foldhash::HashMap;
use petgraph::graph::DiGraph;

use super::resolve::{IFACES_INDEXED, Names};
use super::{
    CompId, Component, Consumer, Dataflow, Direction, Edge, Iface, IfaceId, Order, Path, Producer,
    Sink, SinkId, Source, SourceId, Stream, StreamId, Task, Vertex,
};
use crate::diagnostic::Diagnostic;
use crate::label::{Gate, KeySet, Keys};
use crate::spec::{self, GateDecl, KeyList, OrderDecl, Spec};

pub(super) struct Builder {
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
    pub(super) fn suggest<'a>(
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

    pub(super) fn build(mut self, spec: Spec, fallback_name: &str) -> (Dataflow, Vec<Diagnostic>) {
        let Spec {
            name: spec_name,
            sources: source_decls,
            components: component_decls,
            streams: stream_decls,
            sinks: sink_decls,
            sources_key: _,
            lint: _,
            engine,
        } = spec;
        let mut components = Vec::with_capacity(component_decls.len());
        let mut ifaces: Vec<Iface> = Vec::new();
        let mut incomplete: Vec<bool> = Vec::with_capacity(component_decls.len());
        let mut task_members: std::collections::BTreeMap<String, Vec<CompId>> = Default::default();
        for decl in freeing(component_decls) {
            let cid = CompId(components.len() as u32);
            if let Some(t) = decl.task {
                task_members.entry(t.text).or_default().push(cid);
            }
            let mut c = Component {
                name: decl.name.text,
                span: decl.name.span,
                body: decl.body,
                replicated: decl.replicated,
                order: None,
                paths: Vec::with_capacity(decl.paths.len()),
                inputs: Vec::new(),
                outputs: Vec::new(),
                task: None,
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
                    static_state: p.static_state.is_some(),
                    label_span: p.label_span,
                    span: p.span,
                    note: p.note,
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

        let tasks = task_members
            .into_iter()
            .enumerate()
            .map(|(t, (name, members))| {
                for &c in &members {
                    components[c.index()].task = Some(t as u32);
                }
                let ordered = members
                    .iter()
                    .copied()
                    .filter(|&c| {
                        components[c.index()]
                            .paths
                            .iter()
                            .any(|p| !p.annotation.is_confluent())
                    })
                    .collect();
                Task {
                    name,
                    members,
                    ordered,
                }
            })
            .collect();
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
            engine,
            tasks,
        };
        (dataflow, self.diags)
    }

    pub(super) fn push(&mut self, d: Diagnostic) {
        self.diags.push(d);
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
