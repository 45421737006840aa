//! One execution of a [`Model`]: the messages in flight, every instance's state, seal
//! punctuation, ordered components' steps, driven by a chooser that picks the next delivery
//! among those that do not commute. What a delivered record does on each path is in `paths`.
//!
//! Everything here is ordered (`BTreeMap`, `BTreeSet`, vectors): an execution is a function of
//! the dataflow, the input records and the chooser's answers, nothing else.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::graph::IfaceId;

use super::model::{Model, Rec, To};

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
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Delivery {
    pub comp: usize,
    pub instance: usize,
    pub input: IfaceId,
    pub rec: Rec,
}

#[derive(Clone, Debug, Default, Hash)]
pub(super) struct Instance {
    pub(super) received: BTreeMap<IfaceId, BTreeSet<Rec>>,
    /// Seals received: (edge, producer instance, values).
    pub(super) seals: BTreeSet<(usize, usize, Vec<u8>)>,
    /// Ordered components: records and seals waiting for their turn.
    pub(super) queue: BTreeSet<(Rec, IfaceId)>,
    pub(super) queued_seals: BTreeSet<(usize, usize, Vec<u8>)>,
    /// Per path: the OW fold state per gate partition.
    pub(super) fold: Folds,
    /// Per path: barrier buffers per gate partition, and the partitions released.
    pub(super) held: BTreeMap<(usize, Vec<u8>), BTreeSet<Rec>>,
    pub(super) released: BTreeSet<(usize, Vec<u8>)>,
    /// Per path: reads waiting for their partition to be sealed.
    pub(super) waiting: BTreeMap<usize, BTreeSet<Rec>>,
    /// Records written by the writing paths (what reads observe).
    pub(super) written: BTreeSet<Rec>,
    pub(super) emitted: BTreeMap<IfaceId, BTreeSet<Rec>>,
    pub(super) sealed_out: BTreeSet<(usize, Vec<u8>)>,
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
    /// Per component: whether some instance still holds records it never released (a
    /// barrier partition or a read whose seal never came, an ordered queue).
    pub stuck: Vec<bool>,
    pub trace: Vec<Delivery>,
}

/// Chooses the next delivery among those that do not commute (`n > 1`).
pub trait Chooser {
    fn choose(&mut self, n: usize) -> usize;
}

/// One execution in progress: every instance's state and the messages in flight. Cloned at
/// the choice points of the exhaustive search, so the parts a delivery does not touch are
/// shared: instances and sinks behind `Arc`s (copied on their first write, `inst_mut`), the
/// trace as a shared list. A clone costs a pointer per instance, not the whole state (which
/// made each schedule quadratic in the spec's size).
#[derive(Clone)]
pub struct Exec<'m> {
    pub(super) m: &'m Model,
    pub(super) inst: Vec<Vec<Arc<Shared<Instance>>>>,
    /// Messages in flight, kept sorted: the state does not depend on the order they were sent
    /// in, and the choices are numbered the same way whatever path led to the state.
    pub(super) pending: Pending,
    /// Records in flight that commute with every other delivery (`Model::commutes`), kept
    /// apart (unsorted; sorted when taken): they are delivered without a choice, all at once,
    /// so they never need to be picked out of `pending`. Empty at every choice point but a
    /// keyed one.
    pub(super) free: Vec<Msg>,
    /// The seals in `pending`, in the same order, counted: the first one enabled is found
    /// without a pass over every message in flight.
    pub(super) seals: BTreeMap<Msg, u32>,
    /// Records in flight (`pending` and `free`) on sealed edges, per channel and partition
    /// of the edge's seal key: a seal is enabled when none of its partition is in flight.
    pub(super) busy: BTreeMap<(usize, usize, usize, Vec<u8>), u32>,
    pub(super) sinks: Vec<Arc<Shared<BTreeSet<Rec>>>>,
    pub(super) trace: Trace,
    pub(super) steps: usize,
    /// At a keyed component's choice point: the component and the partitions of its order
    /// key that have a record queued (the choices past the messages in flight).
    pub(super) keyed: Option<(usize, Vec<Vec<u8>>)>,
}

/// What an ordered component did, if anything.
enum Step {
    Idle,
    /// It took a record (or its seals).
    Took,
    /// A keyed component's instance may take the next record of any of `n` partitions.
    Choose(usize),
}

pub(super) fn project(rec_attrs: &[u8], key: &[usize]) -> Vec<u8> {
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
                .map(|c| {
                    (0..c.replicas)
                        .map(|_| Arc::new(Shared::new(Instance::default())))
                        .collect()
                })
                .collect(),
            pending: Pending::default(),
            free: Vec::new(),
            seals: BTreeMap::new(),
            busy: BTreeMap::new(),
            sinks: (0..m.sink_names.len())
                .map(|_| Arc::new(Shared::new(BTreeSet::new())))
                .collect(),
            trace: Trace::default(),
            steps: 0,
            keyed: None,
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
            match self.ordered_step(false) {
                Step::Took => continue,
                Step::Choose(n) => return Some(self.keyed_choices(n)),
                Step::Idle => {}
            }
            if self.steps >= self.m.delivery_budget
                && !(self.pending.is_empty() && self.free.is_empty() && self.seals.is_empty())
            {
                return None;
            }
            // Records that commute are always enabled (no need to look at the seals), and may
            // be delivered in any order: all of them at once, in their sorted order.
            if !self.free.is_empty() {
                let mut now = std::mem::take(&mut self.free);
                now.sort_unstable();
                for msg in now {
                    self.steps += 1;
                    self.deliver(msg);
                }
                continue;
            }
            if !self.m.knobs.fixed_order && !self.m.knobs.no_reduction {
                // Every record left in `pending` does not commute; every seal does. So the first
                // enabled seal goes now, and without one the records are the choices (what the
                // general case below finds, without a pass over the messages per delivery).
                if let Some(seal) = self.first_enabled_seal() {
                    self.steps += 1;
                    self.deliver(seal);
                    continue;
                }
                match self.pending.len() {
                    0 => match self.ordered_step(true) {
                        Step::Took => continue,
                        Step::Choose(n) => return Some(self.keyed_choices(n)),
                        Step::Idle => return Some(Vec::new()),
                    },
                    1 => {
                        self.deliver_at(0);
                        continue;
                    }
                    n => return Some((0..n).collect()),
                }
            }
            let enabled = self.enabled();
            if enabled.is_empty() {
                match self.ordered_step(true) {
                    Step::Took => continue,
                    Step::Choose(n) => return Some(self.keyed_choices(n)),
                    Step::Idle => return Some(Vec::new()),
                }
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
        if let Some((c, parts)) = self.keyed.take() {
            // A keyed component's choice point: `index` past the messages names a partition,
            // whose next record every instance takes.
            let key = self.m.comps[c].order_key.as_deref().unwrap_or_default();
            let part = &parts[index - self.pending.len()];
            for k in 0..self.inst[c].len() {
                let inst = self.inst_mut(c, k);
                let next = inst
                    .queue
                    .iter()
                    .find(|(r, _)| project(&r.attrs, key) == *part)
                    .cloned();
                if let Some(next) = next {
                    inst.queue.remove(&next);
                    self.process(c, k, next.1, next.0);
                }
            }
            return;
        }
        let msg = self
            .pending
            .remove(index)
            .expect("a choice names a message in flight");
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
        let mut free: Vec<&Msg> = self.free.iter().collect();
        free.sort_unstable();
        free.hash(&mut h);
        self.seals.hash(&mut h);
        self.sinks.hash(&mut h);
        h.finish()
    }

    /// What the execution ends with.
    pub fn finish(self) -> Outcome {
        Outcome {
            sinks: self
                .sinks
                .into_iter()
                .map(|s| Arc::try_unwrap(s).map_or_else(|s| s.value.clone(), |s| s.value))
                .collect(),
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
            stuck: self
                .inst
                .iter()
                .map(|is| {
                    is.iter().any(|i| {
                        !i.held.is_empty()
                            || i.waiting.values().any(|w| !w.is_empty())
                            || !i.queue.is_empty()
                    })
                })
                .collect(),
            trace: self.trace.to_vec(),
        }
    }
}

/// Every assignment of 0/1 to `n` attributes (none past 8 attributes: such a key is never
/// sealed by the simulator, which only delays barriers, never breaks them).
pub(super) fn values(n: usize) -> Vec<Vec<u8>> {
    if n > 8 {
        return Vec::new();
    }
    (0..1u32 << n)
        .map(|bits| (0..n).map(|i| ((bits >> i) & 1) as u8).collect())
        .collect()
}

/// The messages in flight that are choices, sorted, in chunks: inserting and removing cost
/// the size of a chunk, not of every message in flight (tens of thousands on a big spec,
/// where a sorted vector spent half of a schedule moving them).
#[derive(Clone, Default, Hash)]
pub(super) struct Pending {
    chunks: Vec<Vec<Msg>>,
    len: usize,
}

/// Messages per chunk before it is split in two.
const CHUNK: usize = 256;

impl Pending {
    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = &Msg> {
        self.chunks.iter().flatten()
    }

    /// The chunk and the position in it of message `i`.
    fn locate(&self, mut i: usize) -> Option<(usize, usize)> {
        for (c, chunk) in self.chunks.iter().enumerate() {
            if i < chunk.len() {
                return Some((c, i));
            }
            i -= chunk.len();
        }
        None
    }

    pub(super) fn get(&self, i: usize) -> Option<&Msg> {
        let (c, j) = self.locate(i)?;
        Some(&self.chunks[c][j])
    }

    pub(super) fn remove(&mut self, i: usize) -> Option<Msg> {
        let (c, j) = self.locate(i)?;
        let msg = self.chunks[c].remove(j);
        if self.chunks[c].is_empty() {
            self.chunks.remove(c);
        }
        self.len -= 1;
        Some(msg)
    }

    /// Inserts `msg` after every message not greater than it.
    pub(super) fn insert(&mut self, msg: Msg) {
        // The first chunk whose last message is greater takes it; else the last chunk.
        let c = self
            .chunks
            .partition_point(|chunk| chunk.last().is_some_and(|last| *last <= msg));
        let c = c.min(self.chunks.len().saturating_sub(1));
        if self.chunks.is_empty() {
            self.chunks.push(Vec::with_capacity(CHUNK));
        }
        let chunk = &mut self.chunks[c];
        let at = chunk.partition_point(|p| *p <= msg);
        chunk.insert(at, msg);
        if chunk.len() > CHUNK {
            let tail = chunk.split_off(CHUNK / 2);
            self.chunks.insert(c + 1, tail);
        }
        self.len += 1;
    }
}

impl std::ops::Index<usize> for Pending {
    type Output = Msg;
    fn index(&self, i: usize) -> &Msg {
        self.get(i).expect("an index of a message in flight")
    }
}

/// A part of an execution's state with its hash, computed once and kept until the part
/// changes: the fingerprint of a state hashes the hashes of its parts, so that it costs a
/// word per part that did not change, not the whole state.
#[derive(Clone)]
pub(super) struct Shared<T> {
    value: T,
    hash: std::sync::OnceLock<u64>,
}

impl<T: std::hash::Hash> Shared<T> {
    fn new(value: T) -> Self {
        Shared {
            value,
            hash: std::sync::OnceLock::new(),
        }
    }

    /// The value, to change: its hash is forgotten.
    fn get_mut(&mut self) -> &mut T {
        self.hash = std::sync::OnceLock::new();
        &mut self.value
    }
}

impl<T> std::ops::Deref for Shared<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T: std::hash::Hash> std::hash::Hash for Shared<T> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        use std::hash::Hasher;
        let h = *self.hash.get_or_init(|| {
            // SipHash with fixed keys: the same value hashes the same in every run.
            let mut h = std::hash::DefaultHasher::new();
            self.value.hash(&mut h);
            h.finish()
        });
        state.write_u64(h);
    }
}

/// The deliveries of an execution so far, newest first: a list whose tail is shared with the
/// executions it was cloned from, so that a clone does not copy it.
#[derive(Clone, Default)]
pub(super) struct Trace(Option<Arc<TraceNode>>);

struct TraceNode {
    delivery: Delivery,
    before: Trace,
}

impl Trace {
    pub(super) fn push(&mut self, delivery: Delivery) {
        let before = Trace(self.0.take());
        self.0 = Some(Arc::new(TraceNode { delivery, before }));
    }

    /// The deliveries, oldest first.
    fn to_vec(&self) -> Vec<Delivery> {
        let mut out = Vec::new();
        let mut at = self.0.as_deref();
        while let Some(node) = at {
            out.push(node.delivery.clone());
            at = node.before.0.as_deref();
        }
        out.reverse();
        out
    }
}

impl Drop for Trace {
    /// One node at a time: dropping a long list recursively would overflow the stack.
    fn drop(&mut self) {
        let mut next = self.0.take();
        while let Some(node) = next {
            next = match Arc::try_unwrap(node) {
                Ok(mut node) => node.before.0.take(),
                Err(_) => None,
            };
        }
    }
}

impl Exec<'_> {
    /// Instance `k` of component `c`, to change: copied first if a clone shares it.
    pub(super) fn inst_mut(&mut self, c: usize, k: usize) -> &mut Instance {
        Arc::make_mut(&mut self.inst[c][k]).get_mut()
    }

    fn consumers(&self, e: usize) -> usize {
        match self.m.edges[e].to {
            To::Input(i) => self.m.comps[self.m.iface_comp[i.index()].index()].replicas,
            To::Sink(_) => 1,
        }
    }

    pub(super) fn send(&mut self, edge: usize, from: usize, body: Body) {
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
            self.track(&msg, true);
            let reduced = self.reduced();
            if reduced && matches!(msg.body, Body::Seal(_)) {
                // Kept in `seals` (by `track`).
            } else if !self.m.knobs.fixed_order
                && matches!(msg.body, Body::Rec(_))
                && self.m.commutes(&msg)
            {
                // Sorted when taken (`advance`).
                self.free.push(msg);
            } else {
                self.pending.insert(msg);
            }
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
        for o in self.pending.iter() {
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

    /// Whether deliveries that commute are delivered without a choice (the tests' knobs turn
    /// it off). Then seals are kept in `seals` alone, commuting records in `free`, and
    /// `pending` holds only the records that are choices.
    fn reduced(&self) -> bool {
        !self.m.knobs.fixed_order && !self.m.knobs.no_reduction
    }

    /// The first enabled seal in flight: none of its partition's records in flight on its
    /// channel.
    fn first_enabled_seal(&self) -> Option<Msg> {
        let (msg, _) = self.seals.iter().find(|(msg, _)| {
            let Body::Seal(v) = &msg.body else {
                return false;
            };
            !self
                .busy
                .contains_key(&(msg.edge, msg.from, msg.to, v.clone()))
        })?;
        Some(msg.clone())
    }

    /// The channel and partition of a record in flight on a sealed edge, for `busy`.
    fn busy_key(&self, msg: &Msg) -> Option<(usize, usize, usize, Vec<u8>)> {
        match (&msg.body, &self.m.edges[msg.edge].seal) {
            (Body::Rec(r), Some(key)) => Some((msg.edge, msg.from, msg.to, project(&r.attrs, key))),
            _ => None,
        }
    }

    /// Counts `msg` into (`sent`) or out of `seals` and `busy`.
    fn track(&mut self, msg: &Msg, sent: bool) {
        fn bump<K: Ord>(map: &mut BTreeMap<K, u32>, key: K, sent: bool) {
            if sent {
                *map.entry(key).or_insert(0) += 1;
            } else if let std::collections::btree_map::Entry::Occupied(mut e) = map.entry(key) {
                *e.get_mut() -= 1;
                if *e.get() == 0 {
                    e.remove();
                }
            }
        }
        if matches!(msg.body, Body::Seal(_)) {
            bump(&mut self.seals, msg.clone(), sent);
        } else if let Some(key) = self.busy_key(msg) {
            bump(&mut self.busy, key, sent);
        }
    }

    fn deliver(&mut self, msg: Msg) {
        self.track(&msg, false);
        let edge = &self.m.edges[msg.edge];
        let input = match edge.to {
            To::Sink(s) => {
                if let Body::Rec(r) = msg.body
                    && !self.sinks[s].contains(&r)
                {
                    Arc::make_mut(&mut self.sinks[s]).get_mut().insert(r);
                }
                return;
            }
            To::Input(i) => i,
        };
        let c = self.m.iface_comp[input.index()].index();
        // A clock is read whenever the component runs: no order queues it.
        let ordered = self.m.comps[c].ordered && !self.m.clock[input.index()];
        match msg.body {
            Body::Rec(r) => {
                // Looked up before the instance is copied: a repeat is dropped unchanged.
                if self.inst[c][msg.to]
                    .received
                    .get(&input)
                    .is_some_and(|s| s.contains(&r))
                {
                    return;
                }
                let inst = self.inst_mut(c, msg.to);
                inst.received.entry(input).or_default().insert(r.clone());
                if ordered {
                    inst.queue.insert((r, input));
                } else {
                    self.process(c, msg.to, input, r);
                }
            }
            Body::Seal(v) => {
                let inst = self.inst_mut(c, msg.to);
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
            .chain(&self.free)
            .chain(self.seals.keys())
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
    /// (every instance the same), or, once no record is queued, its queued seals. A keyed
    /// component whose queues hold several partitions of its key is a choice point instead:
    /// which partition's next record its instances take.
    fn ordered_step(&mut self, any: bool) -> Step {
        if !self.m.any_ordered {
            return Step::Idle;
        }
        for c in 0..self.m.comps.len() {
            if !self.m.comps[c].ordered || !self.has_work(c) {
                continue;
            }
            if !any && !self.upstream_idle(c) {
                continue;
            }
            // A keyed order is one sequence per key, shared by every instance (a per-key log):
            // the instances take the same partition's next record in the same step.
            if let Some(key) = &self.m.comps[c].order_key
                && !self.m.knobs.fixed_order
            {
                let parts: BTreeSet<Vec<u8>> = self.inst[c]
                    .iter()
                    .flat_map(|i| i.queue.iter().map(|(r, _)| project(&r.attrs, key)))
                    .collect();
                if parts.len() > 1 {
                    let n = parts.len();
                    self.keyed = Some((c, parts.into_iter().collect()));
                    return Step::Choose(n);
                }
            }
            let mut took = false;
            for k in 0..self.inst[c].len() {
                let idle =
                    self.inst[c][k].queue.is_empty() && self.inst[c][k].queued_seals.is_empty();
                if idle {
                    continue;
                }
                let inst = self.inst_mut(c, k);
                if let Some((r, input)) = inst.queue.pop_first() {
                    took = true;
                    self.process(c, k, input, r);
                } else if !inst.queued_seals.is_empty() {
                    took = true;
                    let seals = std::mem::take(&mut inst.queued_seals);
                    inst.seals.extend(seals);
                    self.settle(c, k);
                }
            }
            if took {
                return Step::Took;
            }
        }
        Step::Idle
    }

    /// The choices of a keyed component's choice point: numbered past the messages in flight.
    fn keyed_choices(&self, n: usize) -> Vec<usize> {
        (self.pending.len()..self.pending.len() + n).collect()
    }

    /// The delivery that choice `index` (one of those [`Exec::advance`] returned) makes: the
    /// record and where it goes; `None` for a seal or a delivery into a sink, which only the
    /// tests' knobs leave as choices.
    pub fn choice(&self, index: usize) -> Option<Delivery> {
        if let Some((c, parts)) = &self.keyed {
            let key = self.m.comps[*c].order_key.as_deref().unwrap_or_default();
            let part = parts.get(index.checked_sub(self.pending.len())?)?;
            let (k, (rec, input)) = self.inst[*c].iter().enumerate().find_map(|(k, i)| {
                i.queue
                    .iter()
                    .find(|(r, _)| project(&r.attrs, key) == *part)
                    .map(|q| (k, q))
            })?;
            return Some(Delivery {
                comp: *c,
                instance: k,
                input: *input,
                rec: rec.clone(),
            });
        }
        let msg = self.pending.get(index)?;
        match (self.m.edges[msg.edge].to, &msg.body) {
            (To::Input(input), Body::Rec(rec)) => Some(Delivery {
                comp: self.m.iface_comp[input.index()].index(),
                instance: msg.to,
                input,
                rec: rec.clone(),
            }),
            _ => None,
        }
    }
}
