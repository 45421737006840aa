//! The dataflow compiled for execution (see `docs/simulation.md`): records, streams, the
//! four path kinds with their gates, barriers and protected reads, ordered components,
//! replicas, and which deliveries commute. `exec` runs it; `paths` is what a delivery does.
//!
//! Everything here is ordered (`BTreeMap`, `BTreeSet`, vectors): an execution is a function of
//! the dataflow, the input records and the chooser's answers, nothing else.

use std::collections::{BTreeMap, BTreeSet};

use crate::analysis::{Analysis, read_protected};
use crate::graph::{CompId, Component, Consumer, Dataflow, Direction, IfaceId, Path, Producer};
use crate::label::{Annotation, Attr, Gate, KeySet, Keys, Label};

pub use super::exec::{Body, Chooser, Delivery, Exec, Folds, Inputs, Msg, Outcome, execute};

/// A record: one value (0 or 1) per attribute the spec names, a payload, and its depth: how
/// many order-sensitive paths (`OW` states, `OR` answers) made it from a source's record.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rec {
    /// Shared: records are cloned at every step and into every message in flight, and
    /// their attributes never change.
    pub attrs: std::sync::Arc<[u8]>,
    pub payload: u64,
    pub depth: u8,
}

/// Mixes two words; the non-commutative step of an `OW` fold and the hash of a read answer.
pub(crate) fn mix(a: u64, b: u64) -> u64 {
    let mut z = a.rotate_left(17) ^ b.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Where records of an edge come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum From {
    /// A declared source, by index.
    Source(usize),
    /// An input that no stream feeds: an external unsealed source of its own.
    External(IfaceId),
    Output(IfaceId),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum To {
    Input(IfaceId),
    Sink(usize),
}

/// A stream (declared, implicit towards an implicit sink, or from an external source).
#[derive(Clone, Debug)]
pub struct Edge {
    pub from: From,
    pub to: To,
    /// The attribute indexes the producer punctuates this edge on: its label's seal key.
    pub seal: Option<Vec<usize>>,
}

#[derive(Clone, Debug)]
pub struct PathModel {
    pub input: IfaceId,
    pub output: IfaceId,
    pub annotation: Annotation,
    /// Attribute indexes of the gate; `*` is the empty list (one partition).
    pub gate: Vec<usize>,
    /// An `OW` path fed a compatible seal buffers partitions until they are sealed.
    pub barrier: bool,
    /// An `OR` read that waits for the written partitions to be sealed.
    pub waits_for_seals: bool,
}

#[derive(Clone, Debug)]
pub struct CompModel {
    pub name: String,
    pub replicas: usize,
    pub ordered: bool,
    /// A keyed order's attribute indexes: records are taken in the canonical order within
    /// each partition of these, and the partitions interleave as the schedule chooses.
    /// `None` for a global order (and for an unordered component).
    pub order_key: Option<Vec<usize>>,
    pub paths: Vec<PathModel>,
    pub inputs: Vec<IfaceId>,
    pub outputs: Vec<IfaceId>,
    /// Inputs that feed a writing path and that some source reaches.
    pub written_inputs: Vec<IfaceId>,
    /// Whether some edge out of the component carries seals (it punctuates its outputs).
    pub seals_out: bool,
}

/// The dataflow compiled for execution.
#[derive(Clone, Debug)]
pub struct Model {
    pub attrs: Vec<String>,
    pub comps: Vec<CompModel>,
    pub edges: Vec<Edge>,
    pub sink_names: Vec<String>,
    pub iface_comp: Vec<CompId>,
    pub iface_names: Vec<String>,
    /// Edges into each input, by interface index.
    pub into: Vec<Vec<usize>>,
    /// Edges out of each output, by interface index.
    pub out_of: Vec<Vec<usize>>,
    /// Sources in order: declared sources, then external inputs; their edges.
    pub source_edges: Vec<(String, Vec<usize>)>,
    /// Per output interface: the sinks it reaches (through streams, paths, and the state an
    /// `OR` path reads).
    pub reaches: Vec<BTreeSet<usize>>,
    /// Per component: the components whose work can reach it (itself included), through
    /// streams, whatever the paths. An ordered component steps only when these are idle.
    pub upstream: Vec<Vec<bool>>,
    /// Per interface: whether a record delivered to this input (of an unordered component)
    /// commutes with every other delivery (see [`Model::commutes`]).
    pub commuting: Vec<bool>,
    /// Per interface: whether it is a white box's clock (processing time, nondeterministic
    /// functions). An order of the component does not queue it: the wall clock is read when
    /// the component runs, not in the order's sequence, so its deliveries stay choices.
    pub clock: Vec<bool>,
    /// Most deliveries one execution may make (see [`DELIVERY_BUDGET`]).
    pub delivery_budget: usize,
    /// Whether some component is ordered (else no ordered step is ever due).
    pub any_ordered: bool,
    /// The deepest record a path emits (see [`MAX_DEPTH`]).
    pub max_depth: u8,
    /// Switches for the negative controls of the tests.
    pub knobs: Knobs,
}

/// Mechanisms the tests switch off to show that the simulator notices their absence.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Knobs {
    /// Seal barriers pass records through at once, as an unsealed `OW` would.
    pub no_barrier: bool,
    /// Every delivery follows one fixed order (the first enabled one): no schedule differs.
    pub fixed_order: bool,
    /// Every delivery is a choice: no delivery is taken as commuting with the others.
    pub no_reduction: bool,
}

impl Model {
    /// Compiles `df` with its analysis: `replicas` instances of each replicated component.
    pub fn new(df: &Dataflow, analysis: &Analysis, replicas: usize, knobs: Knobs) -> Model {
        let cx = Context {
            df,
            analysis,
            attrs: AttrIndex::of(df),
        };
        let wires = Wires::of(&cx);
        let comps: Vec<CompModel> = df
            .components
            .iter()
            .enumerate()
            .map(|(ci, c)| cx.comp_model(&wires, ci, c, replicas))
            .collect();
        let reaches = sinks_reached(&cx, &wires);
        let upstream = upstream(df, &wires);
        let n_if = df.ifaces.len();
        let commuting = (0..n_if)
            .map(|i| {
                let comp = &comps[df.ifaces[i].component.index()];
                !knobs.no_reduction && input_commutes(comp, IfaceId(i as u32), knobs)
            })
            .collect();
        let mut clock = vec![false; n_if];
        for c in &df.components {
            for p in &c.paths {
                if crate::whitebox::is_clock(p.note.as_deref(), &df.iface(p.input).name) {
                    clock[p.input.index()] = true;
                }
            }
        }
        let Wires {
            edges,
            into,
            out_of,
            source_edges,
        } = wires;
        Model {
            delivery_budget: DELIVERY_BUDGET.max(DELIVERY_BUDGET_PER_EDGE * edges.len()),
            any_ordered: comps.iter().any(|c| c.ordered),
            max_depth: depth_bound(&comps, &edges, n_if),
            commuting,
            clock,
            upstream,
            attrs: cx.attrs.names,
            comps,
            edges,
            sink_names: df.sinks.iter().map(|s| s.name.clone()).collect(),
            iface_comp: df.ifaces.iter().map(|f| f.component).collect(),
            iface_names: (0..n_if)
                .map(|i| df.iface_name(IfaceId(i as u32)))
                .collect(),
            into,
            out_of,
            source_edges,
            reaches,
            knobs,
        }
    }

    /// Whether delivering `msg` now commutes with every other delivery that can happen before
    /// it in any execution from here, so that delivering it first loses no outcome (partial
    /// order reduction). It does when it changes only state that every order of deliveries
    /// ends with alike: a sink's set; an ordered component's queue (a set, taken in canonical
    /// order; never its clock, which is not queued); a seal into an unordered component (it only releases what a closed partition
    /// holds, whose contents are final); a record into an input whose paths are all
    /// confluent or buffered (see `input_commutes`).
    pub fn commutes(&self, msg: &Msg) -> bool {
        if self.knobs.no_reduction {
            return false;
        }
        let input = match self.edges[msg.edge].to {
            To::Sink(_) => return true,
            To::Input(i) => i,
        };
        let comp = &self.comps[self.iface_comp[input.index()].index()];
        (comp.ordered && !self.clock[input.index()])
            || matches!(msg.body, Body::Seal(_))
            || self.commuting[input.index()]
    }

    /// How many instances the producer of an edge has.
    pub(super) fn producer_instances(&self, e: usize) -> usize {
        match self.edges[e].from {
            From::Output(o) => self.comps[self.iface_comp[o.index()].index()].replicas,
            _ => 1,
        }
    }
}

/// The attributes the dataflow names (in gates, orders and seals), numbered.
struct AttrIndex<'d> {
    keys: &'d Keys,
    /// The attributes' names, by number.
    names: Vec<String>,
    index: BTreeMap<Attr, usize>,
}

impl<'d> AttrIndex<'d> {
    fn of(df: &'d Dataflow) -> AttrIndex<'d> {
        let mut attr_ids: BTreeMap<Attr, usize> = BTreeMap::new();
        let mut note = |k: KeySet| {
            for &a in df.keys.attrs(k) {
                let n = attr_ids.len();
                attr_ids.entry(a).or_insert(n);
            }
        };
        for c in &df.components {
            for p in &c.paths {
                if let Some(Gate::Keys(k)) = p.gate {
                    note(k);
                }
            }
            if let Some(crate::graph::Order::Keys(k)) = c.order {
                note(k);
            }
        }
        for s in &df.sources {
            for &k in s.seal.iter().chain(&s.sealable) {
                note(k);
            }
        }
        for s in &df.streams {
            if let Some(k) = s.seal {
                note(k);
            }
        }
        // Attributes are numbered by name, so the numbering never depends on interning order.
        let mut names: Vec<(String, Attr)> = attr_ids
            .keys()
            .map(|&a| (df.keys.attr_name(a).to_string(), a))
            .collect();
        names.sort();
        let index: BTreeMap<Attr, usize> = names
            .iter()
            .enumerate()
            .map(|(i, (_, a))| (*a, i))
            .collect();
        AttrIndex {
            keys: &df.keys,
            names: names.into_iter().map(|(n, _)| n).collect(),
            index,
        }
    }

    /// The sorted attribute numbers of a key set.
    fn idx(&self, k: KeySet) -> Vec<usize> {
        let mut v: Vec<usize> = self.keys.attrs(k).iter().map(|a| self.index[a]).collect();
        v.sort_unstable();
        v
    }

    /// The seal key of a label, numbered.
    fn seal_of(&self, l: Option<Label>) -> Option<Vec<usize>> {
        match l {
            Some(Label::Seal(k)) => Some(self.idx(k)),
            _ => None,
        }
    }
}

/// The edges of the model, and their indexes by interface and by source.
struct Wires {
    edges: Vec<Edge>,
    into: Vec<Vec<usize>>,
    out_of: Vec<Vec<usize>>,
    source_edges: Vec<(String, Vec<usize>)>,
}

impl Wires {
    /// The streams, then per interface its implicit sink's edge and an unfed input's external
    /// source; then the indexes.
    fn of(cx: &Context) -> Wires {
        let (df, labels, attrs) = (cx.df, &cx.analysis.labels, &cx.attrs);
        let n_if = df.ifaces.len();
        let mut edges = Vec::new();
        let mut source_edges: Vec<(String, Vec<usize>)> = df
            .sources
            .iter()
            .map(|s| (s.name.clone(), Vec::new()))
            .collect();
        for (si, s) in df.streams.iter().enumerate() {
            let from = match s.from {
                Producer::Source(x) => From::Source(x.index()),
                Producer::Output(i) => From::Output(i),
            };
            let to = match s.to {
                Consumer::Input(i) => To::Input(i),
                Consumer::Sink(x) => To::Sink(x.index()),
            };
            edges.push(Edge {
                from,
                to,
                seal: attrs.seal_of(labels.stream[si]),
            });
        }
        for (i, f) in df.ifaces.iter().enumerate() {
            let id = IfaceId(i as u32);
            if let Some(sink) = f.implicit_sink {
                edges.push(Edge {
                    from: From::Output(id),
                    to: To::Sink(sink.index()),
                    seal: attrs.seal_of(labels.iface[i]),
                });
            }
            if f.direction == Direction::Input && f.streams.is_empty() {
                source_edges.push((df.iface_name(id), Vec::new()));
                edges.push(Edge {
                    from: From::External(id),
                    to: To::Input(id),
                    seal: None,
                });
            }
        }
        let mut into = vec![Vec::new(); n_if];
        let mut out_of = vec![Vec::new(); n_if];
        // External sources were listed in the order of their edges, after the declared ones.
        let mut external = df.sources.len();
        for (e, edge) in edges.iter().enumerate() {
            match edge.from {
                From::Source(s) => source_edges[s].1.push(e),
                From::External(_) => {
                    source_edges[external].1.push(e);
                    external += 1;
                }
                From::Output(o) => out_of[o.index()].push(e),
            }
            if let To::Input(i) = edge.to {
                into[i.index()].push(e);
            }
        }
        Wires {
            edges,
            into,
            out_of,
            source_edges,
        }
    }
}

/// What compiling the dataflow reads: the dataflow, its analysis, its attributes numbered.
struct Context<'a> {
    df: &'a Dataflow,
    analysis: &'a Analysis,
    attrs: AttrIndex<'a>,
}

impl Context<'_> {
    /// Component `ci` compiled: its paths with their barriers and protected reads, its order and
    /// replicas, the inputs it writes.
    fn comp_model(&self, wires: &Wires, ci: usize, c: &Component, replicas: usize) -> CompModel {
        let (labels, attrs) = (&self.analysis.labels, &self.attrs);
        let paths = c.paths.iter().map(|p| self.path_model(ci, c, p)).collect();
        let mut written_inputs: Vec<IfaceId> = c
            .paths
            .iter()
            .filter(|p| p.annotation.writes() && labels.iface[p.input.index()].is_some())
            .map(|p| p.input)
            .collect();
        written_inputs.sort();
        written_inputs.dedup();
        CompModel {
            name: c.name.clone(),
            replicas: if c.replicated { replicas.max(1) } else { 1 },
            ordered: c.order.is_some(),
            order_key: match c.order {
                Some(crate::graph::Order::Keys(k)) => Some(attrs.idx(k)),
                _ => None,
            },
            paths,
            inputs: c.inputs.clone(),
            outputs: c.outputs.clone(),
            written_inputs,
            seals_out: c.outputs.iter().any(|o| {
                wires.out_of[o.index()]
                    .iter()
                    .any(|&e| wires.edges[e].seal.is_some())
            }),
        }
    }

    /// Path `p` of component `ci` (`c`) compiled: its gate numbered, whether it is buffered by a
    /// barrier, whether it is a read that waits for seals.
    fn path_model(&self, ci: usize, c: &Component, p: &Path) -> PathModel {
        let (df, analysis, attrs) = (self.df, self.analysis, &self.attrs);
        let gate = match p.gate {
            Some(Gate::Keys(k)) => attrs.idx(k),
            _ => Vec::new(),
        };
        // A barrier holds a gate partition whole only when the gate lies inside
        // one partition of the seal key. A barrier placed on the input for a
        // protected read of the component releases seal partitions one by one, in
        // any order: an `OW` with an incompatible gate still folds across them in
        // that order, so it is executed unbuffered, as the analysis labels it.
        let barrier = p.annotation == Annotation::OW
            && analysis.barriers.iter().any(|b| {
                b.component.index() == ci
                    && b.input == p.input
                    && matches!(p.gate, Some(Gate::Keys(g)) if df.keys.is_subset(b.key, g))
            });
        let waits_for_seals = p.annotation == Annotation::OR
            && !c.ordered_for(p.gate.unwrap_or(Gate::Star), &df.keys)
            && read_protected(
                df,
                c,
                p,
                p.gate.unwrap_or(Gate::Star),
                &analysis.labels.iface,
            );
        PathModel {
            input: p.input,
            output: p.output,
            annotation: p.annotation,
            gate,
            barrier,
            waits_for_seals,
        }
    }
}

/// Which sinks each output reaches: backwards from every sink over edges and paths.
fn sinks_reached(cx: &Context, wires: &Wires) -> Vec<BTreeSet<usize>> {
    let (df, labels) = (cx.df, &cx.analysis.labels);
    let (edges, into) = (&wires.edges, &wires.into);
    let mut reaches = vec![BTreeSet::new(); df.ifaces.len()];
    for sink in 0..df.sinks.len() {
        let mut stack: Vec<usize> = edges
            .iter()
            .filter(|e| e.to == To::Sink(sink))
            .filter_map(|e| match e.from {
                From::Output(o) => Some(o.index()),
                _ => None,
            })
            .collect();
        while let Some(o) = stack.pop() {
            if !reaches[o].insert(sink) {
                continue;
            }
            let comp = &df.components[df.ifaces[o].component.index()];
            // A read's answers depend on its input and on the state it reads: what the
            // component's writing paths take in.
            let writing = comp.paths.iter().filter(|w| w.annotation.writes());
            // A path whose input no source reaches carries nothing, whatever it reads.
            let live = |p: &&Path| labels.iface[p.input.index()].is_some();
            for p in comp
                .paths
                .iter()
                .filter(|p| p.output.index() == o)
                .filter(live)
            {
                let state = writing
                    .clone()
                    .filter(|_| p.annotation == Annotation::OR)
                    .map(|w| w.input);
                for i in std::iter::once(p.input).chain(state) {
                    for &e in &into[i.index()] {
                        if let From::Output(up) = edges[e].from {
                            stack.push(up.index());
                        }
                    }
                }
            }
        }
    }
    reaches
}

/// Per component: the components whose work can reach it (itself included), through streams.
fn upstream(df: &Dataflow, wires: &Wires) -> Vec<Vec<bool>> {
    let n_c = df.components.len();
    let mut upstream = vec![vec![false; n_c]; n_c];
    for (c, up) in upstream.iter_mut().enumerate() {
        let mut stack = vec![c];
        while let Some(v) = stack.pop() {
            if std::mem::replace(&mut up[v], true) {
                continue;
            }
            for &i in &df.components[v].inputs {
                for &e in &wires.into[i.index()] {
                    if let From::Output(o) = wires.edges[e].from {
                        stack.push(df.ifaces[o.index()].component.index());
                    }
                }
            }
        }
    }
    upstream
}

/// Whether a record into `input` of (unordered) `comp` commutes with every other delivery
/// into the component: every path it feeds forwards it (`CR`), answers it only once the
/// partition read is final (a protected `OR`), or writes it into state (`CW`, a barriered
/// `OW`) that no unprotected read of the component observes. An unbarriered `OW` folds in
/// delivery order and an unprotected `OR` answers with the state of the moment: those
/// deliveries are choices.
fn input_commutes(comp: &CompModel, input: IfaceId, knobs: Knobs) -> bool {
    let barriered = |p: &PathModel| p.barrier && !knobs.no_barrier;
    let writes = comp.paths.iter().any(|p| p.annotation.writes());
    let reads = comp
        .paths
        .iter()
        .any(|p| p.annotation == Annotation::OR && !p.waits_for_seals);
    comp.paths
        .iter()
        .filter(|p| p.input == input)
        .all(|p| match p.annotation {
            Annotation::CR => true,
            Annotation::CW => !reads,
            Annotation::OW => barriered(p) && !reads,
            Annotation::OR => p.waits_for_seals || !writes,
        })
}

/// Most deliveries one execution may make, at least, and per edge of the dataflow: past it the
/// execution is inconclusive and observes nothing. A large dataflow needs more deliveries (a
/// record crosses every edge on its way, once per consumer instance).
pub const DELIVERY_BUDGET: usize = 4000;
pub const DELIVERY_BUDGET_PER_EDGE: usize = 200;

/// The deepest record a path emits, at least, and at most. An `OW` state or an `OR` answer is
/// a new record, one deeper than the record it answers; in a cycle, answers would be read and
/// answered forever. Deeper records are dropped where they are made: the depth is a function
/// of how a record was derived, never of the schedule, so the cut keeps a deterministic stream
/// deterministic (a cap on the number of answers would not: which answers pass would depend on
/// the order). The bound of a dataflow is its longest chain of order-sensitive paths (see
/// `depth_bound`), so that outside cycles no record is cut.
pub const MAX_DEPTH: u8 = 2;
pub const MAX_DEPTH_CAP: u8 = 6;

/// How many order-sensitive paths a record can cross on its way to a sink: the longest chain
/// of `OW`/`OR` paths through the dataflow's strongly connected components, each cycle's own
/// order-sensitive paths counted at most twice (once around it, and once more into a read of
/// what went around), within [`MAX_DEPTH`] and [`MAX_DEPTH_CAP`].
fn depth_bound(comps: &[CompModel], edges: &[Edge], n_if: usize) -> u8 {
    use petgraph::graph::{DiGraph, NodeIndex};
    let mut g: DiGraph<(), u32> = DiGraph::with_capacity(n_if, edges.len());
    for _ in 0..n_if {
        g.add_node(());
    }
    for c in comps {
        for p in &c.paths {
            let w = u32::from(!p.annotation.is_confluent());
            g.add_edge(
                NodeIndex::new(p.input.index()),
                NodeIndex::new(p.output.index()),
                w,
            );
        }
    }
    for e in edges {
        if let (From::Output(o), To::Input(i)) = (e.from, e.to) {
            g.add_edge(NodeIndex::new(o.index()), NodeIndex::new(i.index()), 0);
        }
    }
    // Components in reverse topological order: each after every component it feeds.
    let sccs = petgraph::algo::tarjan_scc(&g);
    let mut scc_of = vec![0usize; n_if];
    for (k, scc) in sccs.iter().enumerate() {
        for n in scc {
            scc_of[n.index()] = k;
        }
    }
    let mut longest = vec![0u32; sccs.len()];
    for (k, scc) in sccs.iter().enumerate() {
        let mut inside = 0u32;
        let mut after = 0u32;
        for &n in scc {
            for e in g.edges(n) {
                use petgraph::visit::EdgeRef;
                let t = scc_of[e.target().index()];
                if t == k {
                    inside += e.weight();
                } else {
                    after = after.max(e.weight() + longest[t]);
                }
            }
        }
        longest[k] = inside.min(2) + after;
    }
    let deepest = longest.into_iter().max().unwrap_or(0);
    u8::try_from(deepest)
        .unwrap_or(u8::MAX)
        .clamp(MAX_DEPTH, MAX_DEPTH_CAP)
}
