//! The Blazes analysis: label propagation to a fixpoint, points of order, seal barriers, and
//! sink verdicts, with provenance (the chain of streams that brought a label somewhere).
//!
//! The rules are section 5 of the label algebra, the traversal section 6: a worklist over
//! components, exact on cycles because every rule is monotone over a finite lattice. Streams
//! that no source reaches keep the label `None` ("unreached").
//!
//! Must not know: YAML, files, output formats. It returns data and diagnostics.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

use petgraph::visit::Bfs;
use petgraph::visit::Reversed;

use crate::codes;
use crate::diagnostic::{self, Diagnostic, Severity};
use crate::graph::{
    CompId, Component, Consumer, Dataflow, IfaceId, Order, Path, Producer, SinkId, StreamId, Vertex,
};
use crate::label::{Annotation, Gate, KeySet, Keys, Label, Tolerance, join_opt, show};

pub use crate::label::FailOn;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum PointKind {
    /// An order-sensitive (or Inst-receiving) write corrupts state.
    Taint,
    /// An order-sensitive read observes nondeterministic state.
    NdRead,
}

impl PointKind {
    /// The analysis's own name of the kind, for tests and debugging. Reports never show it:
    /// they name a point by its diagnostic code ([`point_code`]).
    pub fn as_str(self) -> &'static str {
        match self {
            PointKind::Taint => "taint",
            PointKind::NdRead => "ndread",
        }
    }
}

/// The diagnostic code a point of order is reported with, and by whose name (`name`) every
/// report calls it: `unordered-write` (C001), `transient-write` (C003) or `unprotected-read`
/// (C002). A write point on an `OW` path is unordered unless the component is ordered for its
/// gate and the input is `Inst`: then, as on a `CW` path, what is wrong is the `Inst` written.
pub fn point_code(
    c: &Component,
    p: &Path,
    kind: PointKind,
    input: Label,
    keys: &Keys,
) -> &'static codes::Code {
    match (kind, p.annotation) {
        (PointKind::Taint, Annotation::OW)
            if input != Label::Inst || !c.ordered_for(p.gate.unwrap_or(Gate::Star), keys) =>
        {
            &codes::UNORDERED_WRITE
        }
        (PointKind::Taint, _) => &codes::INST_WRITE,
        (PointKind::NdRead, _) => &codes::UNPROTECTED_READ,
    }
}

/// A path where coordination must be inserted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PointOfOrder {
    pub component: CompId,
    /// Index into the component's paths.
    pub path: usize,
    pub kind: PointKind,
    /// The joined label of the input that causes the point of order: the path's own input for
    /// a write, the first unsealed writing input for a read.
    pub input_label: Label,
    pub cause_input: IfaceId,
    /// Streams that brought `input_label` to the path, upstream first.
    pub chain: Vec<StreamId>,
}

/// A place where the runtime must buffer partitions until they are sealed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SealBarrier {
    pub component: CompId,
    pub input: IfaceId,
    pub key: KeySet,
    /// Sources and components whose seals the barrier waits for, sorted.
    pub producers: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SinkVerdict {
    pub sink: SinkId,
    pub label: Option<Label>,
    pub failing: bool,
}

/// The labels at the fixpoint, with the provenance needed to explain them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Labels {
    pub iface: Vec<Option<Label>>,
    pub stream: Vec<Option<Label>>,
    pub sink: Vec<Option<Label>>,
    /// For an input: the stream whose arrival last raised its label.
    pub witness: Vec<Option<StreamId>>,
    /// For an output: the path (index in its component) whose contribution set its label.
    pub cause: Vec<Option<u32>>,
}

#[derive(Clone, Debug)]
pub struct Analysis {
    pub labels: Labels,
    pub points: Vec<PointOfOrder>,
    pub barriers: Vec<SealBarrier>,
    pub sinks: Vec<SinkVerdict>,
    /// Findings (points of order, unsafe sinks) and warnings, sorted by position.
    /// `check::check_bytes` moves them into `Analysed::diagnostics`, leaving this empty.
    pub diagnostics: Vec<Diagnostic>,
}

impl Analysis {
    pub fn failing(&self) -> bool {
        self.sinks.iter().any(|s| s.failing)
    }
}

/// Runs the whole analysis.
pub fn analyze(df: &mut Dataflow, fail_on: FailOn) -> Analysis {
    analyze_with(df, fail_on, true)
}

/// Runs the whole analysis; `chain_notes` says whether findings carry their provenance chain
/// as related notes, one per stream. The chains are in `points` either way: the notes repeat
/// them for the formats that print them, and a big spec has millions of them.
pub fn analyze_with(df: &mut Dataflow, fail_on: FailOn, chain_notes: bool) -> Analysis {
    let mut a = verdicts(df, fail_on);
    let mut diagnostics = Vec::new();
    findings(
        df,
        &a.labels,
        &a.points,
        &a.sinks,
        chain_notes,
        fail_on,
        &mut diagnostics,
    );
    warnings(df, &a.labels, &mut diagnostics);
    diagnostic::sort(&mut diagnostics);
    a.diagnostics = diagnostics;
    a
}

/// The analysis without its diagnostics (which hold a message and a chain of notes per point
/// of order): for callers that only read labels, points, barriers and verdicts.
pub fn verdicts(df: &mut Dataflow, fail_on: FailOn) -> Analysis {
    let labels = propagate(df);
    let (points, barriers) = points_and_barriers(df, &labels);
    let sinks: Vec<SinkVerdict> = df
        .sinks
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let label = labels.sink[i];
            let failing = label.is_some_and(|l| s.fails(l, fail_on));
            SinkVerdict {
                sink: SinkId(i as u32),
                label,
                failing,
            }
        })
        .collect();
    Analysis {
        labels,
        points,
        barriers,
        sinks,
        diagnostics: Vec::new(),
    }
}

/// What one path contributes to its output interface, before reconciliation (section 5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Contribution {
    pub label: Label,
    pub taint: bool,
    pub ndread: bool,
    /// A compatible seal consumed by an `O` path.
    pub barrier: bool,
}

/// Seals do not pass order-sensitive paths: the best such a path outputs is `Async`.
fn unsealed(l: Label) -> Label {
    match l {
        Label::Seal(_) => Label::Async,
        other => other,
    }
}

/// The label a stream carries given its producer's label and its own `seal:` declaration.
pub fn stream_label(produced: Option<Label>, seal: Option<KeySet>) -> Option<Label> {
    match (produced, seal) {
        (Some(Label::Async | Label::Seal(_)), Some(k)) => Some(Label::Seal(k)),
        (l, _) => l,
    }
}

/// Whether an `OR(gate)` read of component `c` is protected: ordered for the gate, or every
/// input feeding a writing path carries a seal compatible with the gate (unreached inputs
/// carry nothing and protect trivially).
pub fn read_protected(df: &Dataflow, c: &Component, gate: Gate, iface: &[Option<Label>]) -> bool {
    if c.ordered_for(gate, &df.keys) {
        return true;
    }
    c.paths
        .iter()
        .filter(|p| p.annotation.writes())
        .all(|w| match iface[w.input.index()] {
            None => true,
            Some(Label::Seal(k)) => gate.compatible(k, &df.keys),
            Some(_) => false,
        })
}

/// The first writing input of `c` whose label does not protect an `OR(gate)` read.
pub fn unprotecting_input(
    df: &Dataflow,
    c: &Component,
    gate: Gate,
    iface: &[Option<Label>],
) -> Option<IfaceId> {
    c.paths
        .iter()
        .filter(|p| p.annotation.writes())
        .map(|w| w.input)
        .find(|i| match iface[i.index()] {
            None => false,
            Some(Label::Seal(k)) => !gate.compatible(k, &df.keys),
            Some(_) => true,
        })
}

/// Section 5, rules 1-5, for one path whose input carries `l`.
pub fn contribute(
    df: &Dataflow,
    c: &Component,
    p: &Path,
    l: Label,
    iface: &[Option<Label>],
) -> Contribution {
    let none = Contribution {
        label: l,
        taint: false,
        ndread: false,
        barrier: false,
    };
    match p.annotation {
        Annotation::CR => none,
        Annotation::CW => Contribution {
            taint: l == Label::Inst,
            ..none
        },
        Annotation::OW => {
            let gate = p.gate.unwrap_or(Gate::Star);
            match l {
                Label::Seal(k) if gate.compatible(k, &df.keys) => Contribution {
                    label: Label::Async,
                    barrier: true,
                    ..none
                },
                // An order fixes the order, not the contents: an Inst input still writes a
                // transient disagreement into state, as on a CW path.
                _ if c.ordered_for(gate, &df.keys) => Contribution {
                    label: unsealed(l),
                    taint: l == Label::Inst,
                    ..none
                },
                _ => Contribution {
                    label: unsealed(l),
                    taint: true,
                    ..none
                },
            }
        }
        Annotation::OR => {
            let gate = p.gate.unwrap_or(Gate::Star);
            let protected = read_protected(df, c, gate, iface);
            Contribution {
                label: unsealed(l),
                ndread: !protected,
                ..none
            }
        }
    }
}

/// Reconciliation at an output interface: the final label of one contribution.
pub fn reconcile(c: &Component, k: Contribution) -> Label {
    let mut rank_floor = k.label;
    let worse = |a: Label, b: Label| if b.rank() > a.rank() { b } else { a };
    if k.taint {
        let tainted = if c.replicated {
            Label::Diverge
        } else {
            Label::Run
        };
        // The written input passes through as well (rule 2): an Inst written by one instance
        // stays Inst (the worst of Inst and the taint's Run). Consuming it into the taint's
        // Run would make writing an Inst stream look better than forwarding it, which breaks
        // the annotation monotonicity law.
        rank_floor = worse(rank_floor, tainted);
    }
    if k.ndread {
        rank_floor = worse(
            rank_floor,
            if c.replicated {
                Label::Inst
            } else {
                Label::Run
            },
        );
    }
    rank_floor
}

/// Evaluates every output of component `cid` from the current input labels, joining into
/// `scratch` (indexed by interface, reset before returning). Returns `(output, label, cause)`.
pub(crate) fn eval_component(
    df: &mut Dataflow,
    cid: CompId,
    iface: &[Option<Label>],
    scratch: &mut [Option<(Label, u32)>],
    out: &mut Vec<(IfaceId, Label, u32)>,
) {
    out.clear();
    let c = &df.components[cid.index()];
    // `out` first holds each path's contribution (the joins below need the key table
    // mutably, so they cannot run while `c` is borrowed), then the joined outputs.
    for (pi, p) in c.paths.iter().enumerate() {
        let Some(l) = iface[p.input.index()] else {
            continue;
        };
        let k = contribute(df, c, p, l, iface);
        out.push((p.output, reconcile(c, k), pi as u32));
    }
    for &(o, l, pi) in out.iter() {
        let slot = &mut scratch[o.index()];
        *slot = Some(match *slot {
            None => (l, pi),
            Some((old, opi)) => {
                let j = old.join(l, &mut df.keys);
                // The cause is the path whose contribution decided the join.
                (j, if j == old { opi } else { pi })
            }
        });
    }
    out.clear();
    for &o in &df.components[cid.index()].outputs {
        if let Some((l, pi)) = scratch[o.index()].take() {
            out.push((o, l, pi));
        }
    }
}

/// The worklist fixpoint of section 6.
pub fn propagate(df: &mut Dataflow) -> Labels {
    let n_if = df.ifaces.len();
    let mut labels = Labels {
        iface: vec![None; n_if],
        stream: vec![None; df.streams.len()],
        sink: vec![None; df.sinks.len()],
        witness: vec![None; n_if],
        cause: vec![None; n_if],
    };
    let mut queue: VecDeque<CompId> = VecDeque::new();
    let mut queued = vec![false; df.components.len()];
    let enqueue = |c: CompId, queue: &mut VecDeque<CompId>, queued: &mut Vec<bool>| {
        if !queued[c.index()] {
            queued[c.index()] = true;
            queue.push_back(c);
        }
    };
    for i in 0..n_if {
        let f = &df.ifaces[i];
        if f.direction == crate::graph::Direction::Input && f.streams.is_empty() {
            labels.iface[i] = Some(Label::Async);
            let c = f.component;
            enqueue(c, &mut queue, &mut queued);
        }
    }
    for si in 0..df.sources.len() {
        let src = &df.sources[si];
        let l = Some(src.seal.map_or(Label::Async, Label::Seal));
        for k in 0..df.sources[si].streams.len() {
            let s = df.sources[si].streams[k];
            if let Some(c) = deliver(df, &mut labels, s, l) {
                enqueue(c, &mut queue, &mut queued);
            }
        }
    }
    let mut scratch: Vec<Option<(Label, u32)>> = vec![None; n_if];
    let mut outs = Vec::new();
    while let Some(c) = queue.pop_front() {
        queued[c.index()] = false;
        eval_component(df, c, &labels.iface, &mut scratch, &mut outs);
        for &(o, l, pi) in &outs {
            if labels.iface[o.index()] == Some(l) {
                continue;
            }
            labels.iface[o.index()] = Some(l);
            labels.cause[o.index()] = Some(pi);
            if let Some(k) = df.ifaces[o.index()].implicit_sink {
                labels.sink[k.index()] = Some(l);
            }
            for k in 0..df.ifaces[o.index()].streams.len() {
                let s = df.ifaces[o.index()].streams[k];
                if let Some(next) = deliver(df, &mut labels, s, Some(l)) {
                    enqueue(next, &mut queue, &mut queued);
                }
            }
        }
    }
    labels
}

/// Sets a stream's label from its producer's and joins it into the consumer. Returns the
/// component to re-evaluate, if the consumer's input changed.
fn deliver(
    df: &mut Dataflow,
    labels: &mut Labels,
    s: StreamId,
    produced: Option<Label>,
) -> Option<CompId> {
    let stream = &df.streams[s.index()];
    let l = stream_label(produced, stream.seal);
    if labels.stream[s.index()] == l {
        return None;
    }
    labels.stream[s.index()] = l;
    match stream.to {
        Consumer::Sink(k) => {
            labels.sink[k.index()] = join_opt(labels.sink[k.index()], l, &mut df.keys);
            None
        }
        Consumer::Input(i) => {
            let joined = join_opt(labels.iface[i.index()], l, &mut df.keys);
            if joined == labels.iface[i.index()] {
                return None;
            }
            labels.iface[i.index()] = joined;
            labels.witness[i.index()] = Some(s);
            Some(df.ifaces[i.index()].component)
        }
    }
}

/// The reference fixpoint for differential testing: recompute everything from scratch until
/// nothing changes. Quadratic; only for tests.
#[doc(hidden)]
pub fn propagate_naive(df: &mut Dataflow) -> (Vec<Option<Label>>, Vec<Option<Label>>) {
    let mut iface: Vec<Option<Label>> = vec![None; df.ifaces.len()];
    let mut stream: Vec<Option<Label>> = vec![None; df.streams.len()];
    loop {
        let mut changed = false;
        for (slot, st) in stream.iter_mut().zip(&df.streams) {
            let produced = match st.from {
                Producer::Source(k) => {
                    Some(df.sources[k.index()].seal.map_or(Label::Async, Label::Seal))
                }
                Producer::Output(o) => iface[o.index()],
            };
            let l = stream_label(produced, st.seal);
            changed |= *slot != l;
            *slot = l;
        }
        for i in 0..df.ifaces.len() {
            if df.ifaces[i].direction != crate::graph::Direction::Input {
                continue;
            }
            let l = if df.ifaces[i].streams.is_empty() {
                Some(Label::Async)
            } else {
                let mut acc = None;
                for k in 0..df.ifaces[i].streams.len() {
                    acc = join_opt(acc, stream[df.ifaces[i].streams[k].index()], &mut df.keys);
                }
                acc
            };
            changed |= iface[i] != l;
            iface[i] = l;
        }
        for c in 0..df.components.len() {
            let mut acc: BTreeMap<IfaceId, Label> = BTreeMap::new();
            let comp = &df.components[c];
            let mut results = Vec::new();
            for p in &comp.paths {
                if let Some(l) = iface[p.input.index()] {
                    results.push((
                        p.output,
                        reconcile(comp, contribute(df, comp, p, l, &iface)),
                    ));
                }
            }
            for (o, l) in results {
                let j = match acc.get(&o) {
                    Some(&old) => old.join(l, &mut df.keys),
                    None => l,
                };
                acc.insert(o, j);
            }
            for (o, l) in acc {
                changed |= iface[o.index()] != Some(l);
                iface[o.index()] = Some(l);
            }
        }
        if !changed {
            return (iface, stream);
        }
    }
}

/// Streams that brought the label of input `start` there, upstream first.
pub fn chain(df: &Dataflow, labels: &Labels, start: IfaceId) -> Vec<StreamId> {
    const MAX: usize = 12;
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    let mut cur = start;
    while out.len() < MAX && seen.insert(cur) {
        let Some(s) = labels.witness[cur.index()] else {
            break;
        };
        out.push(s);
        let Producer::Output(o) = df.streams[s.index()].from else {
            break;
        };
        let Some(pi) = labels.cause[o.index()] else {
            break;
        };
        let c = df.ifaces[o.index()].component;
        cur = df.components[c.index()].paths[pi as usize].input;
    }
    out.reverse();
    out
}

/// What point of order, if any, a path's contribution makes.
fn point_kind(k: &Contribution) -> Option<PointKind> {
    if k.taint {
        Some(PointKind::Taint)
    } else if k.ndread {
        Some(PointKind::NdRead)
    } else {
        None
    }
}

/// The points of order of one component under `iface`: (path index, kind), in path order.
pub fn component_points(
    df: &Dataflow,
    cid: CompId,
    iface: &[Option<Label>],
) -> Vec<(usize, PointKind)> {
    let c = &df.components[cid.index()];
    c.paths
        .iter()
        .enumerate()
        .filter_map(|(pi, p)| {
            let l = iface[p.input.index()]?;
            point_kind(&contribute(df, c, p, l, iface)).map(|k| (pi, k))
        })
        .collect()
}

fn points_and_barriers(df: &Dataflow, labels: &Labels) -> (Vec<PointOfOrder>, Vec<SealBarrier>) {
    let mut points = Vec::new();
    let mut barrier_keys: BTreeSet<(CompId, IfaceId, KeySet)> = BTreeSet::new();
    for (ci, c) in df.components.iter().enumerate() {
        let cid = CompId(ci as u32);
        for (pi, p) in c.paths.iter().enumerate() {
            let Some(l) = labels.iface[p.input.index()] else {
                continue;
            };
            let k = contribute(df, c, p, l, &labels.iface);
            if let Some(kind) = point_kind(&k) {
                let cause_input = match kind {
                    PointKind::Taint => p.input,
                    PointKind::NdRead => {
                        unprotecting_input(df, c, p.gate.unwrap_or(Gate::Star), &labels.iface)
                            .unwrap_or(p.input)
                    }
                };
                let input_label = labels.iface[cause_input.index()].unwrap_or(l);
                points.push(PointOfOrder {
                    component: cid,
                    path: pi,
                    kind,
                    input_label,
                    cause_input,
                    chain: chain(df, labels, cause_input),
                });
            }
            if k.barrier
                && let Label::Seal(key) = l
            {
                barrier_keys.insert((cid, p.input, key));
            }
            if p.annotation == Annotation::OR
                && !k.ndread
                && !c.ordered_for(p.gate.unwrap_or(Gate::Star), &df.keys)
            {
                // A read protected by seals: each sealed writing input needs its barrier.
                for w in c.paths.iter().filter(|w| w.annotation.writes()) {
                    if let Some(Label::Seal(key)) = labels.iface[w.input.index()] {
                        barrier_keys.insert((cid, w.input, key));
                    }
                }
            }
        }
    }
    let mut origins = Origins {
        memo: BTreeMap::new(),
    };
    let barriers = barrier_keys
        .into_iter()
        .map(|(component, input, key)| SealBarrier {
            component,
            input,
            key,
            producers: origins
                .of_input(df, labels, input, &mut BTreeSet::new())
                .into_iter()
                .collect(),
        })
        .collect();
    (points, barriers)
}

/// Who originates the seal an input carries: the sources with `seal:` and the producers of
/// streams with an effective `seal:` declaration, found by walking back through the confluent
/// paths that passed the seal on.
struct Origins {
    memo: BTreeMap<IfaceId, BTreeSet<String>>,
}

impl Origins {
    fn of_input(
        &mut self,
        df: &Dataflow,
        labels: &Labels,
        input: IfaceId,
        visiting: &mut BTreeSet<IfaceId>,
    ) -> BTreeSet<String> {
        if let Some(m) = self.memo.get(&input) {
            return m.clone();
        }
        if !visiting.insert(input) {
            return BTreeSet::new();
        }
        let mut out = BTreeSet::new();
        for &s in &df.ifaces[input.index()].streams {
            let stream = &df.streams[s.index()];
            if !matches!(labels.stream[s.index()], Some(Label::Seal(_))) {
                continue;
            }
            match stream.from {
                Producer::Source(k) => {
                    out.insert(df.sources[k.index()].name.clone());
                }
                Producer::Output(o) => {
                    let c = &df.components[df.ifaces[o.index()].component.index()];
                    let produced_sealed = matches!(labels.iface[o.index()], Some(Label::Seal(_)));
                    if stream.seal.is_some() && !produced_sealed {
                        out.insert(c.name.clone());
                        continue;
                    }
                    if stream.seal.is_some() {
                        // The producer re-seals a sealed stream: it is the one punctuating.
                        out.insert(c.name.clone());
                        continue;
                    }
                    for p in c
                        .paths
                        .iter()
                        .filter(|p| p.output == o && p.annotation.is_confluent())
                    {
                        if matches!(labels.iface[p.input.index()], Some(Label::Seal(_))) {
                            out.extend(self.of_input(df, labels, p.input, visiting));
                        }
                    }
                }
            }
        }
        visiting.remove(&input);
        self.memo.insert(input, out.clone());
        out
    }
}

fn path_desc(df: &Dataflow, p: &Path) -> String {
    match p.gate {
        Some(g) => format!("{}({})", p.annotation.as_str(), g.display(&df.keys)),
        None => p.annotation.as_str().to_string(),
    }
}

/// Adds the chain of streams as related notes.
fn with_chain(mut d: Diagnostic, df: &Dataflow, labels: &Labels, chain: &[StreamId]) -> Diagnostic {
    // Exactly: a big spec has millions of these notes, and growing would leave a quarter of
    // the room unused.
    d.related.reserve_exact(chain.len());
    for &s in chain {
        let st = &df.streams[s.index()];
        let text: Cow<'static, str> = match labels.stream[s.index()] {
            None => "no source reaches this stream".into(),
            Some(Label::Async) => "Async from here".into(),
            Some(Label::Run) => "Run from here".into(),
            Some(Label::Inst) => "Inst from here".into(),
            Some(Label::Diverge) => "Diverge from here".into(),
            Some(l @ Label::Seal(_)) => format!("{} from here", l.display(&df.keys)).into(),
        };
        d = d.related(st.from_span, text);
    }
    d
}

/// The cheapest fix for one point of order, as a one-line help.
fn fix_hint(df: &Dataflow, point: &PointOfOrder) -> String {
    let c = &df.components[point.component.index()];
    let p = &c.paths[point.path];
    if point.input_label == Label::Inst && p.annotation.is_confluent() {
        return "the input is Inst because of a point of order upstream; fix that one and this one goes away".to_string();
    }
    let gate = p.gate.unwrap_or(Gate::Star);
    if let Gate::Keys(g) = gate {
        // A source at the head of the chain that can punctuate a key within the gate.
        let head = point.chain.first().map(|s| df.streams[s.index()].from);
        if let Some(Producer::Source(k)) = head {
            let src = &df.sources[k.index()];
            if let Some(key) = src.sealable.iter().find(|key| df.keys.is_subset(**key, g)) {
                if *key == KeySet::EMPTY {
                    return format!(
                        "ask source `{}` to mark the end of its stream (`seal: []`; it declares it sealable) and buffer the whole stream at {} (a seal barrier)",
                        src.name, c.name
                    );
                }
                return format!(
                    "ask source `{}` to seal on `{}` (it declares it sealable) and buffer each partition at {} (a seal barrier)",
                    src.name,
                    df.keys.display(*key),
                    c.name
                );
            }
        }
        if let Some(Order::Keys(k)) = c.order {
            return existing_order_hint(df, c, k, g);
        }
        return format!(
            "order {}'s inputs per ({}): `order: [{}]`, or seal the input on a key within the gate",
            c.name,
            df.keys.display(g),
            df.keys.display(g)
        );
    }
    format!(
        "the gate is `*`, so only a global order helps: `order: global` on {}",
        c.name
    )
}

/// The hint for a point of order on a component whose keyed order `k` does not cover the gate
/// `g`: why not, and the order that would (it must keep covering every gate `k` covers now).
fn existing_order_hint(df: &Dataflow, c: &Component, k: KeySet, g: KeySet) -> String {
    let keys = &df.keys;
    let why = format!(
        "{}'s `order: [{}]` does not cover the gate ({}): an order protects a path only when all its keys are in the path's gate",
        c.name,
        keys.display(k),
        keys.display(g)
    );
    // The keys of every gate the existing order protects, and of this one.
    let mut common: Vec<&str> = keys.names(g);
    for p in &c.paths {
        if let Some(pg @ Gate::Keys(pk)) = p.gate
            && c.ordered_for(pg, keys)
        {
            let names = keys.names(pk);
            common.retain(|n| names.contains(n));
        }
    }
    match common.is_empty() {
        false => format!(
            "{why}; replace it with `order: [{}]`, or seal the input on a key within the gate",
            common.join(", ")
        ),
        true => format!(
            "{why}, and no keyed order covers both this gate and the ones it protects; use `order: global`, or seal the input on a key within the gate"
        ),
    }
}

/// The provenance chain of a failing sink's label: for an implicit sink, the chain into the
/// path that set its output; for a declared sink, the chain into the producer of the first
/// stream that brings the sink's label, then that stream.
pub fn sink_chain(df: &Dataflow, labels: &Labels, v: &SinkVerdict) -> Vec<StreamId> {
    let sink = &df.sinks[v.sink.index()];
    match sink.implicit {
        Some(o) => {
            let c = df.ifaces[o.index()].component;
            labels.cause[o.index()].map_or_else(Vec::new, |pi| {
                chain(
                    df,
                    labels,
                    df.components[c.index()].paths[pi as usize].input,
                )
            })
        }
        None => {
            let mut ch = Vec::new();
            if let Some(&s) = sink
                .streams
                .iter()
                .find(|s| labels.stream[s.index()] == v.label)
            {
                if let Producer::Output(o) = df.streams[s.index()].from
                    && let Some(pi) = labels.cause[o.index()]
                {
                    let c = df.ifaces[o.index()].component;
                    ch = chain(
                        df,
                        labels,
                        df.components[c.index()].paths[pi as usize].input,
                    );
                }
                ch.push(s);
            }
            ch
        }
    }
}

/// Where each component's points of order are in the list of points (they are contiguous:
/// points are found component by component), for [`sink_cause`].
pub struct PointsByComponent {
    first: Vec<u32>,
}

impl PointsByComponent {
    pub fn new(df: &Dataflow, points: &[PointOfOrder]) -> Self {
        let mut first = vec![u32::MAX; df.components.len()];
        for (i, p) in points.iter().enumerate().rev() {
            first[p.component.index()] = i as u32;
        }
        PointsByComponent { first }
    }

    fn has(&self, c: CompId) -> bool {
        self.first[c.index()] != u32::MAX
    }
}

/// The point of order that causes a failing sink's label, as an index into `points`: on the
/// first-declared component of the sink's chain (`chain`, from [`sink_chain`]) that has a point
/// of order (the one the C004 help names), the point on the path the chain leaves that
/// component by (or its first point).
/// Only streams already carrying a bad label count: the point that spoilt the label is the
/// cause, not an earlier one the chain merely passes through. A lookup per chain step, not a
/// scan of all points: big specs have thousands of both.
pub fn sink_cause(
    df: &Dataflow,
    labels: &Labels,
    points: &[PointOfOrder],
    by_component: &PointsByComponent,
    v: &SinkVerdict,
    chain: &[StreamId],
) -> Option<usize> {
    let producers = chain
        .iter()
        .filter_map(|s| match df.streams[s.index()].from {
            Producer::Output(o) if !labels.stream[s.index()].is_none_or(Label::is_safe) => Some(o),
            _ => None,
        });
    let own = df.sinks[v.sink.index()].implicit;
    let output = producers
        .chain(own)
        .filter(|o| by_component.has(df.ifaces[o.index()].component))
        .min_by_key(|o| df.ifaces[o.index()].component.index())?;
    let c = df.ifaces[output.index()].component;
    let first = by_component.first[c.index()] as usize;
    let on_chain = labels.cause[output.index()].map(|pi| pi as usize);
    let of_c = points[first..]
        .iter()
        .take_while(|p| p.component == c)
        .position(|p| Some(p.path) == on_chain)
        .unwrap_or(0);
    Some(first + of_c)
}

fn findings(
    df: &Dataflow,
    labels: &Labels,
    points: &[PointOfOrder],
    sinks: &[SinkVerdict],
    chain_notes: bool,
    fail_on: FailOn,
    out: &mut Vec<Diagnostic>,
) {
    let chained = |d: Diagnostic, chain: &[StreamId]| match chain_notes {
        true => with_chain(d, df, labels, chain),
        false => d,
    };
    // Components upstream of a failing sink: their points of order are errors, the others
    // (whose damage every sink tolerates) warnings.
    let mut upstream = vec![false; df.components.len()];
    let rev = Reversed(&df.graph);
    let mut failing = sinks
        .iter()
        .filter(|v| v.failing)
        .map(|v| df.sink_vertex[v.sink.index()]);
    if let Some(first) = failing.next() {
        // One breadth-first walk from all failing sinks at once: linear in the graph.
        let mut bfs = Bfs::new(rev, first);
        for v in failing {
            if !bfs.discovered.contains(v.index()) {
                bfs.discovered.insert(v.index());
                bfs.stack.push_back(v);
            }
        }
        while let Some(n) = bfs.next(rev) {
            if let Vertex::Component(c) = df.graph[n] {
                upstream[c.index()] = true;
            }
        }
    }
    for point in points {
        let c = &df.components[point.component.index()];
        let p = &c.paths[point.path];
        let input = df.ifaces[p.input.index()].name.as_str();
        let output = df.ifaces[p.output.index()].name.as_str();
        let l = point.input_label.display(&df.keys);
        let result = if c.replicated {
            "replicas can disagree"
        } else {
            "a replay can produce different output"
        };
        let code = point_code(c, p, point.kind, point.input_label, &df.keys);
        let message = if code == &codes::UNORDERED_WRITE {
            format!(
                "{} writes order-sensitive state on {input} -> {output} ({}) from an input labelled {l}, so {result}",
                c.name,
                path_desc(df, p)
            )
        } else if code == &codes::INST_WRITE {
            format!(
                "{} writes the Inst stream {input} into state ({input} -> {output}, {}), making a transient replica disagreement permanent",
                c.name,
                path_desc(df, p)
            )
        } else {
            format!(
                "{} answers order-sensitive reads on {input} -> {output} ({}) from state written by input `{}` labelled {l}, so {result}",
                c.name,
                path_desc(df, p),
                df.ifaces[point.cause_input.index()].name
            )
        };
        let primary = match point.kind {
            PointKind::Taint => format!("point of order: {} receives {l}", path_desc(df, p)),
            PointKind::NdRead => format!(
                "point of order: {} reads state written from {l}",
                path_desc(df, p)
            ),
        };
        let severity = if upstream[point.component.index()] {
            Severity::Error
        } else {
            Severity::Warning
        };
        let d = Diagnostic::new(code, message)
            .severity(severity)
            .at(p.label_span, primary)
            .help(fix_hint(df, point));
        out.push(chained(d, &point.chain));
    }
    let by_component = PointsByComponent::new(df, points);
    for v in sinks.iter().filter(|v| v.failing) {
        let sink = &df.sinks[v.sink.index()];
        let l = show(v.label, &df.keys);
        let tol = match (sink.tolerate, fail_on) {
            (Some(Tolerance::Async), _) | (None, FailOn::Run | FailOn::Never) => {
                "Async or Seal".to_string()
            }
            (Some(t), _) => format!("at worst {}", t.as_str()),
            // No declaration: `--fail-on` raised the threshold.
            (None, FailOn::Inst) => "at worst Run (`--fail-on inst`)".to_string(),
            (None, FailOn::Diverge) => "at worst Inst (`--fail-on diverge`)".to_string(),
        };
        let chain = sink_chain(df, labels, v);
        let kind = if sink.implicit.is_some() {
            "implicit sink"
        } else {
            "sink"
        };
        let tolerate = v.label.map_or("Run", |l| l.kind());
        // An implicit sink is not written in the spec: say how to write it, with its tolerance.
        let accept = match sink.implicit {
            Some(o) => {
                let c = &df.components[df.ifaces[o.index()].component.index()];
                let output = &df.ifaces[o.index()].name;
                let taken = |n: &str| {
                    df.sinks.iter().any(|s| s.name == n) || df.sources.iter().any(|s| s.name == n)
                };
                let name = if taken(output) {
                    format!("{}_{output}", c.name)
                } else {
                    output.clone()
                };
                format!(
                    "declare the sink if this is acceptable: add `- {{ from: {}, to: {name} }}` to `streams:` and `{name}: {{ tolerate: {tolerate} }}` under `sinks:`",
                    sink.name
                )
            }
            None => format!("declare `tolerate: {tolerate}` on the sink if this is acceptable"),
        };
        let culprit = sink_cause(df, labels, points, &by_component, v, &chain)
            .map(|i| df.components[points[i].component.index()].name.clone());
        let help = match culprit {
            Some(c) => format!(
                "the point of order at {c} causes this; fix it (see `blazes plan`), or {accept}"
            ),
            None => accept,
        };
        let d = Diagnostic::new(
            &codes::UNSAFE_SINK,
            format!(
                "{kind} `{}` receives {l}, but it tolerates {tol}",
                sink.name
            ),
        )
        .at(sink.span, format!("receives {l}"))
        .help(help);
        out.push(chained(d, &chain));
    }
}

fn warnings(df: &Dataflow, labels: &Labels, out: &mut Vec<Diagnostic>) {
    for f in &df.ifaces {
        if f.direction == crate::graph::Direction::Input && f.streams.is_empty() {
            let c = &df.components[f.component.index()];
            out.push(
                Diagnostic::new(&codes::IMPLICIT_SOURCE, format!("input `{}.{}` has no stream into it, so it is an external source labelled Async", c.name, f.name))
                    .at(f.span, "no stream feeds this input")
                    .help(format!("declare the source under `sources:` and add `- {{ from: <source>, to: {}.{} }}` to `streams:`", c.name, f.name)),
            );
        }
    }
    for (i, s) in df.streams.iter().enumerate() {
        let produced = match s.from {
            Producer::Source(k) => {
                Some(df.sources[k.index()].seal.map_or(Label::Async, Label::Seal))
            }
            Producer::Output(o) => labels.iface[o.index()],
        };
        if let (Some(span), Some(l)) = (s.seal_span, produced)
            && !matches!(l, Label::Async | Label::Seal(_))
        {
            out.push(
                Diagnostic::new(&codes::INEFFECTIVE_SEAL, format!("stream {} -> {} declares a seal, but it carries {}, so the seal changes nothing", s.from_text, s.to_text, l.display(&df.keys)))
                    .at(span, "seal on a nondeterministic stream")
                    .help("fix the point of order upstream of this stream first"),
            );
        }
        if labels.stream[i].is_none() {
            out.push(
                Diagnostic::new(
                    &codes::UNREACHED,
                    format!("no source reaches stream {} -> {}", s.from_text, s.to_text),
                )
                .at(s.from_span, "no source reaches this stream")
                .help("connect this part of the dataflow to a source, or remove it"),
            );
        }
    }
    for c in &df.components {
        let writes = c.paths.iter().any(|p| p.annotation.writes());
        if let Some(p) = c.paths.iter().find(|p| p.annotation == Annotation::OR)
            && !writes
        {
            out.push(
                Diagnostic::new(&codes::READ_WITHOUT_WRITER, format!("{} has an OR path but no path that writes state, so the read is treated as protected", c.name))
                    .at(p.label_span, "reads state nobody writes")
                    .help("check the annotation: a stateless path is CR; or add the missing writing path"),
            );
        }
    }
    for s in &df.sources {
        if s.streams.is_empty() {
            out.push(
                Diagnostic::new(
                    &codes::UNUSED_DECLARATION,
                    format!("source `{}` feeds no stream", s.name),
                )
                .at(s.span, "unused source")
                .help(format!(
                    "connect it: `- {{ from: {}, to: Component.input }}`, or remove it",
                    s.name
                )),
            );
        }
    }
    for s in df.sinks.iter().filter(|s| s.implicit.is_none()) {
        if s.streams.is_empty() {
            out.push(
                Diagnostic::new(
                    &codes::UNUSED_DECLARATION,
                    format!("sink `{}` receives no stream", s.name),
                )
                .at(s.span, "unused sink")
                .help(format!(
                    "connect it: `- {{ from: Component.output, to: {} }}`, or remove it",
                    s.name
                )),
            );
        }
    }
}
