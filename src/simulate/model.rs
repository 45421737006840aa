//! The executable meaning of a dataflow (see `docs/simulation.md`): records, the four path
//! kinds, seal punctuation, seal barriers, ordered components and replicas, and one execution
//! driven by a chooser that picks the next delivery.
//!
//! Everything here is ordered (`BTreeMap`, `BTreeSet`, vectors): an execution is a function of
//! the dataflow, the input records and the chooser's answers, nothing else.

use std::collections::{BTreeMap, BTreeSet};

use crate::analysis::{Analysis, read_protected};
use crate::graph::{CompId, Consumer, Dataflow, Direction, IfaceId, Producer};
use crate::label::{Annotation, Attr, Gate, KeySet, Label};

/// A record: one value (0 or 1) per attribute the spec names, a payload, and its depth: how
/// many order-sensitive paths (`OW` states, `OR` answers) made it from a source's record.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rec {
    pub attrs: Vec<u8>,
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
    /// Most deliveries one execution may make (see [`DELIVERY_BUDGET`]).
    pub delivery_budget: usize,
    /// Whether some component is ordered (else no ordered step is ever due).
    pub any_ordered: bool,
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
    pub fn new(df: &Dataflow, analysis: &Analysis, replicas: usize, knobs: Knobs) -> Model {
        let mut attr_ids: BTreeMap<Attr, usize> = BTreeMap::new();
        let note = |k: KeySet, ids: &mut BTreeMap<Attr, usize>| {
            for &a in df.keys.attrs(k) {
                let n = ids.len();
                ids.entry(a).or_insert(n);
            }
        };
        for c in &df.components {
            for p in &c.paths {
                if let Some(Gate::Keys(k)) = p.gate {
                    note(k, &mut attr_ids);
                }
            }
            if let Some(crate::graph::Order::Keys(k)) = c.order {
                note(k, &mut attr_ids);
            }
        }
        for s in &df.sources {
            for &k in s.seal.iter().chain(&s.sealable) {
                note(k, &mut attr_ids);
            }
        }
        for s in &df.streams {
            if let Some(k) = s.seal {
                note(k, &mut attr_ids);
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
        let idx = |k: KeySet| -> Vec<usize> {
            let mut v: Vec<usize> = df.keys.attrs(k).iter().map(|a| index[a]).collect();
            v.sort_unstable();
            v
        };
        let labels = &analysis.labels;
        let seal_of = |l: Option<Label>| match l {
            Some(Label::Seal(k)) => Some(idx(k)),
            _ => None,
        };

        let n_if = df.ifaces.len();
        let mut edges = Vec::new();
        let mut into = vec![Vec::new(); n_if];
        let mut out_of = vec![Vec::new(); n_if];
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
                seal: seal_of(labels.stream[si]),
            });
        }
        for (i, f) in df.ifaces.iter().enumerate() {
            let id = IfaceId(i as u32);
            if let Some(sink) = f.implicit_sink {
                edges.push(Edge {
                    from: From::Output(id),
                    to: To::Sink(sink.index()),
                    seal: seal_of(labels.iface[i]),
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

        let mut comps = Vec::with_capacity(df.components.len());
        for (ci, c) in df.components.iter().enumerate() {
            let paths = c
                .paths
                .iter()
                .map(|p| {
                    let gate = match p.gate {
                        Some(Gate::Keys(k)) => idx(k),
                        _ => Vec::new(),
                    };
                    let barrier = p.annotation == Annotation::OW
                        && analysis
                            .barriers
                            .iter()
                            .any(|b| b.component.index() == ci && b.input == p.input);
                    let waits_for_seals = p.annotation == Annotation::OR
                        && !c.ordered_for(p.gate.unwrap_or(Gate::Star), &df.keys)
                        && read_protected(df, c, p.gate.unwrap_or(Gate::Star), &labels.iface);
                    PathModel {
                        input: p.input,
                        output: p.output,
                        annotation: p.annotation,
                        gate,
                        barrier,
                        waits_for_seals,
                    }
                })
                .collect();
            let mut written_inputs: Vec<IfaceId> = c
                .paths
                .iter()
                .filter(|p| p.annotation.writes() && labels.iface[p.input.index()].is_some())
                .map(|p| p.input)
                .collect();
            written_inputs.sort();
            written_inputs.dedup();
            comps.push(CompModel {
                name: c.name.clone(),
                replicas: if c.replicated { replicas.max(1) } else { 1 },
                ordered: c.order.is_some(),
                paths,
                inputs: c.inputs.clone(),
                outputs: c.outputs.clone(),
                written_inputs,
                seals_out: c
                    .outputs
                    .iter()
                    .any(|o| out_of[o.index()].iter().any(|&e| edges[e].seal.is_some())),
            });
        }

        // Which sinks each output reaches: backwards from every sink over edges and paths.
        let mut reaches = vec![BTreeSet::new(); n_if];
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
                let live = |p: &&crate::graph::Path| labels.iface[p.input.index()].is_some();
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

        let n_c = df.components.len();
        let mut upstream = vec![vec![false; n_c]; n_c];
        for (c, up) in upstream.iter_mut().enumerate() {
            let mut stack = vec![c];
            while let Some(v) = stack.pop() {
                if std::mem::replace(&mut up[v], true) {
                    continue;
                }
                for &i in &df.components[v].inputs {
                    for &e in &into[i.index()] {
                        if let From::Output(o) = edges[e].from {
                            stack.push(df.ifaces[o.index()].component.index());
                        }
                    }
                }
            }
        }

        let commuting = (0..n_if)
            .map(|i| {
                let comp = &comps[df.ifaces[i].component.index()];
                !knobs.no_reduction && input_commutes(comp, IfaceId(i as u32), knobs)
            })
            .collect();

        Model {
            delivery_budget: DELIVERY_BUDGET.max(DELIVERY_BUDGET_PER_EDGE * edges.len()),
            any_ordered: comps.iter().any(|c| c.ordered),
            commuting,
            upstream,
            attrs: names.into_iter().map(|(n, _)| n).collect(),
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
    /// order); a seal into an unordered component (it only releases what a closed partition
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
        comp.ordered || matches!(msg.body, Body::Seal(_)) || self.commuting[input.index()]
    }

    /// How many instances the producer of an edge has.
    fn producer_instances(&self, e: usize) -> usize {
        match self.edges[e].from {
            From::Output(o) => self.comps[self.iface_comp[o.index()].index()].replicas,
            _ => 1,
        }
    }
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

/// The input of one execution: the records each source emits (same order as
/// `Model::source_edges`).
pub type Inputs = Vec<Vec<Rec>>;

/// A message in flight on an edge, from one producer instance to one consumer instance.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Msg {
    pub edge: usize,
    pub from: usize,
    pub to: usize,
    pub body: Body,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Body {
    Rec(Rec),
    /// No more records whose attributes (at the edge's seal key) have these values.
    Seal(Vec<u8>),
}

/// One delivery of a record into a component instance's input, for traces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    pub comp: usize,
    pub instance: usize,
    pub input: IfaceId,
    pub rec: Rec,
}

#[derive(Clone, Debug, Default, Hash)]
struct Instance {
    received: BTreeMap<IfaceId, BTreeSet<Rec>>,
    /// Seals received: (edge, producer instance, values).
    seals: BTreeSet<(usize, usize, Vec<u8>)>,
    /// Ordered components: records and seals waiting for their turn.
    queue: BTreeSet<(Rec, IfaceId)>,
    queued_seals: BTreeSet<(usize, usize, Vec<u8>)>,
    /// Per path: the OW fold state per gate partition.
    fold: Folds,
    /// Per path: barrier buffers per gate partition, and the partitions released.
    held: BTreeMap<(usize, Vec<u8>), BTreeSet<Rec>>,
    released: BTreeSet<(usize, Vec<u8>)>,
    /// Per path: reads waiting for their partition to be sealed.
    waiting: BTreeMap<usize, BTreeSet<Rec>>,
    /// Records written by the writing paths (what reads observe).
    written: BTreeSet<Rec>,
    emitted: BTreeMap<IfaceId, BTreeSet<Rec>>,
    sealed_out: BTreeSet<(usize, Vec<u8>)>,
}

/// The fold state of an instance's `OW` paths: (path, gate partition) -> state.
pub type Folds = BTreeMap<(usize, Vec<u8>), u64>;

/// What one execution ends with, at quiescence.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Per sink: the set of records it received.
    pub sinks: Vec<BTreeSet<Rec>>,
    /// Per component, per instance: what each output emitted.
    pub emitted: Vec<Vec<BTreeMap<IfaceId, BTreeSet<Rec>>>>,
    /// Per component, per instance: the fold state of each `OW` path, per partition.
    pub fold: Vec<Vec<Folds>>,
    pub trace: Vec<Delivery>,
}

/// Chooses the next delivery among those that do not commute (`n > 1`).
pub trait Chooser {
    fn choose(&mut self, n: usize) -> usize;
}

/// Most deliveries one execution may make, at least, and per edge of the dataflow: past it the
/// execution is inconclusive and observes nothing. A large dataflow needs more deliveries (a
/// record crosses every edge on its way, once per consumer instance).
pub const DELIVERY_BUDGET: usize = 4000;
pub const DELIVERY_BUDGET_PER_EDGE: usize = 200;

/// The deepest record a path emits. An `OW` state or an `OR` answer is a new record, one
/// deeper than the record it answers; in a cycle, answers would be read and answered forever.
/// Deeper records are dropped where they are made: the depth is a function of how a record
/// was derived, never of the schedule, so the cut keeps a deterministic stream deterministic
/// (a cap on the number of answers would not: which answers pass would depend on the order).
pub const MAX_DEPTH: u8 = 2;

/// One execution in progress: every instance's state and the messages in flight. Cloned at
/// the choice points of the exhaustive search.
#[derive(Clone)]
pub struct Exec<'m> {
    m: &'m Model,
    inst: Vec<Vec<Instance>>,
    /// Messages in flight, kept sorted: the state does not depend on the order they were sent
    /// in, and the choices are numbered the same way whatever path led to the state.
    pending: Vec<Msg>,
    sinks: Vec<BTreeSet<Rec>>,
    trace: Vec<Delivery>,
    steps: usize,
}

fn project(rec_attrs: &[u8], key: &[usize]) -> Vec<u8> {
    key.iter().map(|&a| rec_attrs[a]).collect()
}

/// Runs one execution; `None` when the delivery budget runs out.
pub fn execute(m: &Model, inputs: &Inputs, chooser: &mut dyn Chooser) -> Option<Outcome> {
    let mut x = Exec::start(m, inputs);
    loop {
        let choices = x.advance()?;
        if choices.is_empty() {
            return Some(x.finish());
        }
        let pick = chooser.choose(choices.len()).min(choices.len() - 1);
        x.deliver_at(choices[pick]);
    }
}

impl<'m> Exec<'m> {
    /// The state before any delivery: every source's records and seals in flight.
    pub fn start(m: &'m Model, inputs: &Inputs) -> Exec<'m> {
        let mut x = Exec {
            m,
            inst: m
                .comps
                .iter()
                .map(|c| vec![Instance::default(); c.replicas])
                .collect(),
            pending: Vec::new(),
            sinks: vec![BTreeSet::new(); m.sink_names.len()],
            trace: Vec::new(),
            steps: 0,
        };
        for (s, (_, edges)) in m.source_edges.iter().enumerate() {
            for &e in edges {
                for r in &inputs[s] {
                    x.send(e, 0, Body::Rec(r.clone()));
                }
                if let Some(key) = &m.edges[e].seal {
                    for v in values(key.len()) {
                        x.send(e, 0, Body::Seal(v));
                    }
                }
            }
        }
        x
    }

    /// Does everything that needs no choice: the ordered components' steps, and every
    /// delivery that commutes with all others (see `Model::commutes`), until the next choice
    /// point. Returns the deliveries to choose from (indexes of the messages in flight),
    /// empty at quiescence, `None` once the delivery budget is spent.
    pub fn advance(&mut self) -> Option<Vec<usize>> {
        loop {
            if self.ordered_step(false) {
                continue;
            }
            if self.steps >= self.m.delivery_budget && !self.pending.is_empty() {
                return None;
            }
            // Records that commute are always enabled (no need to look at the seals), and may
            // be delivered in any order: all of them at once, in one pass over the messages.
            if !self.m.knobs.fixed_order {
                let (now, rest): (Vec<Msg>, Vec<Msg>) = std::mem::take(&mut self.pending)
                    .into_iter()
                    .partition(|m| matches!(m.body, Body::Rec(_)) && self.m.commutes(m));
                self.pending = rest;
                if !now.is_empty() {
                    for msg in now {
                        self.steps += 1;
                        self.deliver(msg);
                    }
                    continue;
                }
            }
            let enabled = self.enabled();
            if enabled.is_empty() {
                if self.ordered_step(true) {
                    continue;
                }
                return Some(Vec::new());
            }
            let forced = if self.m.knobs.fixed_order || enabled.len() == 1 {
                Some(enabled[0])
            } else {
                enabled
                    .iter()
                    .copied()
                    .find(|&i| self.m.commutes(&self.pending[i]))
            };
            match forced {
                Some(i) => self.deliver_at(i),
                None => return Some(enabled),
            }
        }
    }

    /// Delivers the message in flight at `index`.
    pub fn deliver_at(&mut self, index: usize) {
        self.steps += 1;
        let msg = self.pending.remove(index);
        self.deliver(msg);
    }

    /// A hash of the state (instances, messages in flight, sinks; not the trace): two
    /// executions with the same fingerprint continue identically.
    pub fn fingerprint(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        // SipHash with fixed keys: the same state hashes the same in every run.
        let mut h = std::hash::DefaultHasher::new();
        self.inst.hash(&mut h);
        self.pending.hash(&mut h);
        self.sinks.hash(&mut h);
        h.finish()
    }

    /// What the execution ends with.
    pub fn finish(self) -> Outcome {
        Outcome {
            sinks: self.sinks,
            emitted: self
                .inst
                .iter()
                .map(|is| is.iter().map(|i| i.emitted.clone()).collect())
                .collect(),
            fold: self
                .inst
                .iter()
                .map(|is| is.iter().map(|i| i.fold.clone()).collect())
                .collect(),
            trace: self.trace,
        }
    }
}

/// Every assignment of 0/1 to `n` attributes (none past 8 attributes: such a key is never
/// sealed by the simulator, which only delays barriers, never breaks them).
fn values(n: usize) -> Vec<Vec<u8>> {
    if n > 8 {
        return Vec::new();
    }
    (0..1u32 << n)
        .map(|bits| (0..n).map(|i| ((bits >> i) & 1) as u8).collect())
        .collect()
}

impl Exec<'_> {
    fn consumers(&self, e: usize) -> usize {
        match self.m.edges[e].to {
            To::Input(i) => self.m.comps[self.m.iface_comp[i.index()].index()].replicas,
            To::Sink(_) => 1,
        }
    }

    fn send(&mut self, edge: usize, from: usize, body: Body) {
        if matches!(body, Body::Seal(_)) && matches!(self.m.edges[edge].to, To::Sink(_)) {
            return;
        }
        for to in 0..self.consumers(edge) {
            let msg = Msg {
                edge,
                from,
                to,
                body: body.clone(),
            };
            let at = self.pending.partition_point(|p| *p <= msg);
            self.pending.insert(at, msg);
        }
    }

    /// The messages that may be delivered now: every record, and the seals none of whose
    /// partition's records is still in flight on the same channel (edge, producer instance,
    /// consumer instance).
    fn enabled(&self) -> Vec<usize> {
        if !self.pending.iter().any(|m| matches!(m.body, Body::Seal(_))) {
            return (0..self.pending.len()).collect();
        }
        let mut busy: BTreeSet<(usize, usize, usize, Vec<u8>)> = BTreeSet::new();
        for o in &self.pending {
            if let (Body::Rec(r), Some(key)) = (&o.body, &self.m.edges[o.edge].seal) {
                busy.insert((o.edge, o.from, o.to, project(&r.attrs, key)));
            }
        }
        (0..self.pending.len())
            .filter(|&i| {
                let msg = &self.pending[i];
                match &msg.body {
                    Body::Rec(_) => true,
                    Body::Seal(v) => !busy.contains(&(msg.edge, msg.from, msg.to, v.clone())),
                }
            })
            .collect()
    }

    fn deliver(&mut self, msg: Msg) {
        let edge = &self.m.edges[msg.edge];
        let input = match edge.to {
            To::Sink(s) => {
                if let Body::Rec(r) = msg.body {
                    self.sinks[s].insert(r);
                }
                return;
            }
            To::Input(i) => i,
        };
        let c = self.m.iface_comp[input.index()].index();
        let ordered = self.m.comps[c].ordered;
        match msg.body {
            Body::Rec(r) => {
                let inst = &mut self.inst[c][msg.to];
                if !inst.received.entry(input).or_default().insert(r.clone()) {
                    return;
                }
                if ordered {
                    inst.queue.insert((r, input));
                } else {
                    self.process(c, msg.to, input, r);
                }
            }
            Body::Seal(v) => {
                let inst = &mut self.inst[c][msg.to];
                if ordered {
                    inst.queued_seals.insert((msg.edge, msg.from, v));
                } else {
                    inst.seals.insert((msg.edge, msg.from, v));
                    self.settle(c, msg.to);
                }
            }
        }
    }

    fn has_work(&self, c: usize) -> bool {
        self.inst[c]
            .iter()
            .any(|i| !i.queue.is_empty() || !i.queued_seals.is_empty())
    }

    /// Whether everything that can feed ordered component `c` is idle: nothing in flight into
    /// it or its upstream, and no other ordered component upstream with queued work. Its
    /// queue then holds every record it will get before its own next output.
    fn upstream_idle(&self, c: usize) -> bool {
        let up = &self.m.upstream[c];
        let in_flight = self
            .pending
            .iter()
            .any(|msg| match self.m.edges[msg.edge].to {
                To::Input(i) => up[self.m.iface_comp[i.index()].index()],
                To::Sink(_) => false,
            });
        !in_flight
            && (0..self.m.comps.len())
                .all(|u| u == c || !up[u] || !self.m.comps[u].ordered || !self.has_work(u))
    }

    /// The first ordered component whose upstream is idle (with `any`, the first with work:
    /// used when nothing at all is in flight) takes its next record in the canonical order
    /// (every instance the same), or, once no record is queued, its queued seals. Returns
    /// whether anything happened.
    fn ordered_step(&mut self, any: bool) -> bool {
        if !self.m.any_ordered {
            return false;
        }
        for c in 0..self.m.comps.len() {
            if !self.m.comps[c].ordered || !self.has_work(c) {
                continue;
            }
            if !any && !self.upstream_idle(c) {
                continue;
            }
            let mut any = false;
            for k in 0..self.inst[c].len() {
                let inst = &mut self.inst[c][k];
                if let Some((r, input)) = inst.queue.pop_first() {
                    any = true;
                    self.process(c, k, input, r);
                } else if !inst.queued_seals.is_empty() {
                    any = true;
                    let seals = std::mem::take(&mut inst.queued_seals);
                    inst.seals.extend(seals);
                    self.settle(c, k);
                }
            }
            if any {
                return true;
            }
        }
        false
    }

    fn process(&mut self, c: usize, k: usize, input: IfaceId, r: Rec) {
        self.trace.push(Delivery {
            comp: c,
            instance: k,
            input,
            rec: r.clone(),
        });
        let comp = &self.m.comps[c];
        for (pi, p) in comp.paths.iter().enumerate() {
            if p.input != input {
                continue;
            }
            match p.annotation {
                Annotation::CR => self.emit(c, k, p.output, r.clone()),
                // The input already dropped repeats; the set of written records grows the same
                // whatever the order, and each new record is forwarded once.
                Annotation::CW => {
                    self.inst[c][k].written.insert(r.clone());
                    self.emit(c, k, p.output, r.clone());
                }
                Annotation::OW => {
                    let part = project(&r.attrs, &p.gate);
                    let inst = &mut self.inst[c][k];
                    inst.written.insert(r.clone());
                    if p.barrier && !self.m.knobs.no_barrier {
                        inst.held.entry((pi, part)).or_default().insert(r.clone());
                    } else {
                        let st = inst.fold.entry((pi, part)).or_insert(0);
                        *st = mix(*st, r.payload);
                        let out = Rec {
                            attrs: r.attrs.clone(),
                            payload: *st,
                            depth: r.depth.saturating_add(1),
                        };
                        self.emit(c, k, p.output, out);
                    }
                }
                Annotation::OR => {
                    if p.waits_for_seals {
                        self.inst[c][k]
                            .waiting
                            .entry(pi)
                            .or_default()
                            .insert(r.clone());
                    } else {
                        let out = self.answer(c, k, pi, &r);
                        self.emit(c, k, p.output, out);
                    }
                }
            }
        }
        self.settle(c, k);
    }

    /// A read's answer: the read record with a payload that summarises the written records
    /// of its gate partition (as a set: which writes, not their order).
    fn answer(&self, c: usize, k: usize, pi: usize, r: &Rec) -> Rec {
        let gate = &self.m.comps[c].paths[pi].gate;
        let want = project(&r.attrs, gate);
        let mut h = r.payload;
        for w in &self.inst[c][k].written {
            if project(&w.attrs, gate) == want {
                h = mix(h, w.payload);
            }
        }
        Rec {
            attrs: r.attrs.clone(),
            payload: mix(h, 0x5EED),
            depth: r.depth.saturating_add(1),
        }
    }

    /// Whether no more records with `rec_attrs` (at each edge's seal key) can reach `input`
    /// of instance `k`: every edge into it sealed that partition from every producer instance.
    fn closed(&self, c: usize, k: usize, input: IfaceId, attrs: &[Option<u8>]) -> bool {
        self.m.into[input.index()].iter().all(|&e| {
            let Some(key) = &self.m.edges[e].seal else {
                return false;
            };
            let Some(v) = key.iter().map(|&a| attrs[a]).collect::<Option<Vec<u8>>>() else {
                return false;
            };
            (0..self.m.producer_instances(e))
                .all(|j| self.inst[c][k].seals.contains(&(e, j, v.clone())))
        })
    }

    /// Releases what seals allow (barrier partitions, waiting reads), then emits the seals of
    /// outputs whose partitions can receive nothing more.
    fn settle(&mut self, c: usize, k: usize) {
        let comp = &self.m.comps[c];
        let inst = &self.inst[c][k];
        if inst.held.is_empty() && inst.waiting.values().all(BTreeSet::is_empty) && !comp.seals_out
        {
            return;
        }
        let n_attrs = self.m.attrs.len();
        let full = |r: &Rec| -> Vec<Option<u8>> { r.attrs.iter().map(|&a| Some(a)).collect() };
        loop {
            let mut progress = false;
            let held: Vec<(usize, Vec<u8>)> = self.inst[c][k].held.keys().cloned().collect();
            for key in held {
                let p = &comp.paths[key.0];
                let first = self.inst[c][k].held[&key].first().cloned();
                let Some(first) = first else { continue };
                if !self.closed(c, k, p.input, &full(&first)) {
                    continue;
                }
                let recs = self.inst[c][k].held.remove(&key).unwrap_or_default();
                let inst = &mut self.inst[c][k];
                inst.released.insert(key.clone());
                let st = inst.fold.entry(key.clone()).or_insert(0);
                for r in &recs {
                    *st = mix(*st, r.payload);
                }
                let out = Rec {
                    attrs: first.attrs.clone(),
                    payload: *st,
                    depth: recs
                        .iter()
                        .map(|r| r.depth)
                        .max()
                        .unwrap_or(0)
                        .saturating_add(1),
                };
                self.emit(c, k, p.output, out);
                progress = true;
            }
            let waiting: Vec<(usize, Rec)> = self.inst[c][k]
                .waiting
                .iter()
                .flat_map(|(&pi, rs)| rs.iter().map(move |r| (pi, r.clone())))
                .collect();
            for (pi, r) in waiting {
                let attrs = full(&r);
                if comp
                    .written_inputs
                    .iter()
                    .all(|&w| self.closed(c, k, w, &attrs))
                {
                    if let Some(rs) = self.inst[c][k].waiting.get_mut(&pi) {
                        rs.remove(&r);
                    }
                    let out = self.answer(c, k, pi, &r);
                    self.emit(c, k, comp.paths[pi].output, out);
                    progress = true;
                }
            }
            if !progress {
                break;
            }
        }
        // Output seals: a partition of an output is closed when every input with a path to it
        // is closed for it and nothing held, queued or waiting in the instance belongs to it.
        for &o in &comp.outputs {
            for &e in &self.m.out_of[o.index()] {
                let Some(key) = self.m.edges[e].seal.clone() else {
                    continue;
                };
                for v in values(key.len()) {
                    if self.inst[c][k].sealed_out.contains(&(e, v.clone())) {
                        continue;
                    }
                    let mut attrs = vec![None; n_attrs];
                    for (i, &a) in key.iter().enumerate() {
                        attrs[a] = Some(v[i]);
                    }
                    let matches = |r: &Rec| project(&r.attrs, &key) == v;
                    let inst = &self.inst[c][k];
                    let busy = inst.held.values().flatten().any(matches)
                        || inst.waiting.values().flatten().any(matches)
                        || inst.queue.iter().any(|(r, _)| matches(r))
                        || !inst.queued_seals.is_empty();
                    if busy {
                        continue;
                    }
                    let inputs_closed = comp
                        .paths
                        .iter()
                        .filter(|p| p.output == o)
                        .all(|p| self.closed(c, k, p.input, &attrs));
                    if inputs_closed {
                        self.inst[c][k].sealed_out.insert((e, v.clone()));
                        self.send(e, k, Body::Seal(v));
                    }
                }
            }
        }
    }

    fn emit(&mut self, c: usize, k: usize, o: IfaceId, r: Rec) {
        if r.depth > MAX_DEPTH {
            return;
        }
        if !self.inst[c][k]
            .emitted
            .entry(o)
            .or_default()
            .insert(r.clone())
        {
            return;
        }
        for &e in &self.m.out_of[o.index()] {
            self.send(e, k, Body::Rec(r.clone()));
        }
    }
}
