//! The dataflow IR: components with their interfaces and paths, sources, sinks and streams,
//! with every name resolved to an index and every key set interned. Built from a [`Spec`],
//! reporting the cross-reference errors the spec reader cannot see (dangling endpoints,
//! streams in the wrong direction).
//!
//! The topology is also a petgraph graph (one vertex per component, source and sink, one edge
//! per stream) for traversals that do not care about interfaces.
//!
//! Must not know: labels beyond the key sets, how results are printed.

use petgraph::graph::{DiGraph, NodeIndex};

use crate::diagnostic::{Diagnostic, Span};
use crate::label::{Annotation, FailOn, Gate, KeySet, Keys, Label, Tolerance, sink_fails};
use crate::spec::Spec;

mod build;
mod resolve;

use build::Builder;

macro_rules! id {
    ($name:ident) => {
        /// An index into one of the [`Dataflow`]'s lists (its `index()`), given out by [`build`].
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub u32);
        impl $name {
            /// The position in the dataflow's list.
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

/// A component's `order:`: `global`, or by a set of keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    Global,
    Keys(KeySet),
}

/// Whether an interface receives streams (input) or emits them (output).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Input,
    Output,
}

/// An input or output interface of a component, named in its paths.
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

/// One path of a component: from an input to an output, with its annotation (`CR`, `CW`,
/// `OR`, `OW`) and, for the order-sensitive ones, its gate.
#[derive(Clone, Debug)]
pub struct Path {
    pub input: IfaceId,
    pub output: IfaceId,
    pub annotation: Annotation,
    pub gate: Option<Gate>,
    /// `state: static`: an `OR` path reading state that does not change while the dataflow
    /// runs. Only on a component without a writing path (the spec checks it).
    pub static_state: bool,
    pub label_span: Span,
    pub span: Span,
    /// Origin and reason of a path derived from the component's program; `None` if declared.
    pub note: Option<Box<crate::spec::PathNote>>,
}

/// A component: its paths, its interfaces, whether it is replicated and how it is ordered.
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
    /// The engine task that runs it (`task:`), an index into [`Dataflow::tasks`].
    pub task: Option<u32>,
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

/// Components that one engine task runs together (`task:` on each, a Kafka Streams
/// sub-topology): records pass through them in one thread, in the order of the task's input
/// partitions, so an order of one of them is an order of all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Task {
    pub name: String,
    /// Every component of the task, by id.
    pub members: Vec<CompId>,
    /// The members with an order-sensitive path, by id: where an order of the task has an
    /// effect, and what the planner orders together.
    pub ordered: Vec<CompId>,
}

/// A declared source: what it seals, and which keys it could seal (`sealable:`).
#[derive(Clone, Debug)]
pub struct Source {
    pub name: String,
    pub span: Span,
    pub body: Span,
    pub seal: Option<KeySet>,
    pub sealable: Vec<KeySet>,
    pub streams: Vec<StreamId>,
}

/// A sink: declared, or the implicit one of an output no stream leaves.
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

/// The upstream end of a stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Producer {
    Source(SourceId),
    Output(IfaceId),
}

/// The downstream end of a stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Consumer {
    Input(IfaceId),
    Sink(SinkId),
}

/// A stream from a producer to a consumer, with its optional `seal:` and the spans of what
/// was written.
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

/// A petgraph vertex: a component, a source or a sink.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Vertex {
    Component(CompId),
    Source(SourceId),
    Sink(SinkId),
}

/// The analysed form of a spec: every name resolved to an id, every key set interned in
/// `keys`, and the topology as a petgraph graph. Built by [`build`]; the analysis reads it
/// and sets only what the planner changes (`order`, `seal`).
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
    /// The engine whose topology this was imported from (`check`/`plan --from`), so that the
    /// plan can also be stated in the engine's terms; `None` for a spec.
    pub engine: Option<crate::import::Engine>,
    /// The engine tasks the spec names (`task:`), sorted by name.
    pub tasks: Vec<Task>,
}

impl Dataflow {
    /// The interface `i`.
    pub fn iface(&self, i: IfaceId) -> &Iface {
        &self.ifaces[i.index()]
    }

    /// The component `c`.
    pub fn component(&self, c: CompId) -> &Component {
        &self.components[c.index()]
    }

    /// `Component.interface`.
    pub fn iface_name(&self, i: IfaceId) -> String {
        let f = self.iface(i);
        format!("{}.{}", self.component(f.component).name, f.name)
    }

    /// A producer as a spec names it: the source, or `Component.output`.
    pub fn producer_name(&self, p: Producer) -> String {
        match p {
            Producer::Source(s) => self.sources[s.index()].name.clone(),
            Producer::Output(i) => self.iface_name(i),
        }
    }

    /// The components an order of `c` covers: the order-sensitive members of its task, or `c`
    /// alone. The first is the one the planner's choice names.
    pub fn order_group(&self, c: CompId) -> impl Iterator<Item = CompId> + '_ {
        let members: &[CompId] = match self.component(c).task {
            Some(t) => &self.tasks[t as usize].ordered,
            None => &[],
        };
        let alone = members.is_empty() || !members.contains(&c);
        std::iter::once(c)
            .filter(move |_| alone)
            .chain(members.iter().copied().filter(move |_| !alone))
    }

    /// The component named `name` (a linear search: for tools, not for loops over a dataflow).
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
/// The declarations keep their order: `CompId(i)` is the spec's `components[i]`, `SourceId(i)`
/// its `sources[i]` (`plan --apply` edits the spec by the plan's ids).
pub fn build(spec: Spec, fallback_name: &str) -> (Dataflow, Vec<Diagnostic>) {
    Builder::default().build(spec, fallback_name)
}
