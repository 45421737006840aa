//! The dataflow's labels under a changing set of choices, kept at the fixpoint incrementally.
//!
//! Why: the greedy search and the irredundancy pass evaluate one change at a time (add this
//! candidate, drop that mechanism), hundreds of thousands of times on a generated fleet. A
//! full [`analysis::propagate`] per evaluation makes the planner quadratic; a change only
//! alters the labels downstream of the source or component it touches, and usually far less
//! (a join with another unrepaired input stops it).
//!
//! How: components are grouped into strongly connected components (SCCs) in topological
//! order. A change marks the SCCs it touches; they are re-derived in topological order, each
//! from the final labels of everything upstream, and only SCCs whose incoming streams changed
//! are marked next. An acyclic component is evaluated once. A cycle is reset to unreached and
//! solved by a local worklist: a change can lower labels, and a cycle can hold a label up by
//! itself, so re-running the worklist from the old labels would keep a stale one. Every write
//! is logged, so a trial is undone by [`Labeling::rollback`].
//!
//! The result is the same fixpoint [`analysis::propagate`] computes (the fixpoint of a
//! monotone system is reached SCC by SCC in topological order); `tests/plan.rs` checks the two
//! agree on random specs under random sequences of changes.
//!
//! This module holds the state and what the search calls (apply, revert, trial, checkpoint
//! and rollback); `derive` re-derives what a change reaches, and `structure` computes once
//! what the dataflow's shape decides (the SCCs, the interfaces that doom a sink).
//!
//! Must not know: candidates, costs, or the search: it applies choices and keeps the score.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::analysis::{self, FailOn, PointKind};
use crate::graph::{CompId, Dataflow, IfaceId, Order, SinkId, StreamId};
use crate::label::{KeySet, Keys, Label};

mod derive;
mod structure;

use super::model::Choice;
use super::scoring::{Score, local_score, punctuates};
use derive::Stop;
use structure::{dooms, sccs};

/// Borrowed labels, indexed like [`analysis::Labels`].
pub struct LabelSlices<'a> {
    pub iface: &'a [Option<Label>],
    pub stream: &'a [Option<Label>],
    pub sink: &'a [Option<Label>],
}

/// One logged write, with the value it replaced.
#[derive(Clone, Copy, Debug)]
enum Undo {
    Iface(u32, Option<Label>),
    Stream(u32, Option<Label>),
    Sink(u32, Option<Label>),
    Local(u32, (u32, u32)),
    Order(u32, Option<Order>),
    Seal(u32, Option<KeySet>),
    StreamSeal(u32, Option<KeySet>),
    /// The last entry of `sealed_streams` was pushed.
    SealedStream,
}

/// A position in the undo log, and the score there.
#[derive(Clone, Copy, Debug)]
pub struct Checkpoint {
    log: usize,
    touched: usize,
    touched_sinks: usize,
    score: Score,
}

/// The labels of a copy of the dataflow at the fixpoint, under the choices applied so far,
/// re-derived incrementally (see the module's documentation).
pub struct Labeling {
    df: Dataflow,
    fail_on: FailOn,
    base_order: Vec<Option<Order>>,
    base_seal: Vec<Option<KeySet>>,
    base_stream_seal: Vec<Option<KeySet>>,
    /// Streams a choice has sealed since the checkpoints still open (each once, logged so a
    /// rollback forgets the trials'): where the score looks for seals whose producer cannot
    /// punctuate. Kept short so that the score's walk over it stays cheap.
    sealed_streams: Vec<StreamId>,
    /// Per stream: whether it is in `sealed_streams`.
    in_sealed: Vec<bool>,
    iface: Vec<Option<Label>>,
    stream: Vec<Option<Label>>,
    sink: Vec<Option<Label>>,
    /// Per component: (points of order, unsealed arrivals at them).
    local: Vec<(u32, u32)>,
    score: Score,
    /// Per component: its SCC's position in topological order.
    scc_of: Vec<u32>,
    /// SCC `k` is `scc_list[scc_start[k]..scc_start[k + 1]]`.
    scc_start: Vec<u32>,
    scc_list: Vec<CompId>,
    cyclic: Vec<bool>,
    in_queue: Vec<bool>,
    changed: Vec<IfaceId>,
    /// Components to re-derive, by (SCC position, component): upstream first.
    dirty: BinaryHeap<Reverse<(u32, u32)>>,
    queued: Vec<bool>,
    /// Whether a cycle a change reaches is solved from unreached (the least fixpoint) or
    /// iterated from its current labels (see [`Labeling::set_exact`]).
    exact: bool,
    log: Vec<Undo>,
    /// Components and sinks re-derived, in order (with repeats), since the start.
    touched: Vec<CompId>,
    touched_sinks: Vec<SinkId>,
    scratch: Vec<Option<(Label, u32)>>,
    outs: Vec<(IfaceId, Label, u32)>,
    /// Trial evaluations so far (what `plan` reports as analyses).
    pub evaluations: usize,
    /// Off only in the negative control of the differential test.
    reset_cycles: bool,
    /// Per interface: a label of rank `Run` or more there reaches a sink that fails on it.
    /// No path lowers such a label below `Run` (section 5: only seals are dropped, and a
    /// stream's `seal:` replaces only `Async`), so while labels only rise, reaching such an
    /// interface proves a sink will fail before the propagation gets there.
    dooms: Vec<bool>,
    doomed: bool,
}

impl Labeling {
    /// The labels of `df` as given (its own orders and seals), at the fixpoint.
    pub fn new(df: &Dataflow, fail_on: FailOn) -> Self {
        let mut df = df.clone();
        let labels = analysis::propagate(&mut df);
        Self::at(df, labels, fail_on)
    }

    /// The labeling of `df` from labels already at its fixpoint (an analysis of `df` as
    /// given): no second propagation.
    pub fn with_labels(df: &Dataflow, labels: &analysis::Labels, fail_on: FailOn) -> Self {
        let labels = analysis::Labels {
            iface: labels.iface.clone(),
            stream: labels.stream.clone(),
            sink: labels.sink.clone(),
            witness: Vec::new(),
            cause: Vec::new(),
        };
        Self::at(df.clone(), labels, fail_on)
    }

    fn at(df: Dataflow, labels: analysis::Labels, fail_on: FailOn) -> Self {
        let (scc_of, scc_start, scc_list, cyclic) = sccs(&df);
        let n_if = df.ifaces.len();
        let mut me = Labeling {
            base_order: df.components.iter().map(|c| c.order).collect(),
            base_seal: df.sources.iter().map(|s| s.seal).collect(),
            base_stream_seal: df.streams.iter().map(|s| s.seal).collect(),
            sealed_streams: Vec::new(),
            in_sealed: vec![false; df.streams.len()],
            iface: labels.iface,
            stream: labels.stream,
            sink: labels.sink,
            local: vec![(0, 0); df.components.len()],
            score: (0, 0, 0),
            scc_of,
            scc_start,
            scc_list,
            cyclic,
            in_queue: vec![false; df.components.len()],
            changed: Vec::new(),
            dirty: BinaryHeap::new(),
            queued: vec![false; df.components.len()],
            exact: true,
            log: Vec::new(),
            touched: Vec::new(),
            touched_sinks: Vec::new(),
            scratch: vec![None; n_if],
            outs: Vec::new(),
            evaluations: 0,
            reset_cycles: true,
            dooms: Vec::new(),
            doomed: false,
            fail_on,
            df,
        };
        for c in 0..me.df.components.len() {
            let l = local_score(&me.df, CompId(c as u32), &me.iface, &me.stream);
            me.local[c] = l;
            me.score.1 += l.0 as usize;
            me.score.2 += l.1 as usize;
        }
        for k in 0..me.df.sinks.len() {
            if me.fails(k) {
                me.score.0 += 1;
            }
        }
        me.dooms = dooms(&me.df, fail_on);
        me
    }

    /// The negative control of `tests/plan.rs`: solve cycles from their old labels instead
    /// of from unreached, which keeps a label a cycle held up by itself. Never use otherwise.
    #[doc(hidden)]
    pub fn without_cycle_reset(mut self) -> Self {
        self.reset_cycles = false;
        self
    }

    /// Exact (the default): a change that reaches a cycle re-solves the whole cycle from
    /// unreached, so the labels are always the least fixpoint; on a generated fleet whose
    /// feedback streams make one cycle of most components, that is a full analysis per change.
    ///
    /// Not exact: a cycle is iterated from its current labels, touching only what changes.
    /// That is still exact for a change that only raises labels (removing a mechanism: the
    /// iteration climbs from the old least fixpoint to the new one). For a change that lowers
    /// them (adding a mechanism) it stops at a fixpoint at or above the least one: a cycle can
    /// keep a label it only held up by itself. Every label is then at least the true one, so
    /// the score is never better than the truth: "every sink is safe" is still a proof, a
    /// failing sink may be a false alarm. [`reanchor`](Self::reanchor) makes the labels exact.
    pub fn set_exact(&mut self, exact: bool) {
        self.exact = exact;
    }

    /// The dataflow with the current orders and seals.
    pub fn dataflow(&self) -> &Dataflow {
        &self.df
    }

    /// The current labels of interfaces, streams and sinks, as [`analysis::Labels`] has them.
    pub fn labels(&self) -> LabelSlices<'_> {
        LabelSlices {
            iface: &self.iface,
            stream: &self.stream,
            sink: &self.sink,
        }
    }

    /// `(failing sinks, points of order, unsealed arrivals)`, as [`super::Evaluator::score`];
    /// a stream seal a choice added whose producer cannot punctuate it counts as a failing
    /// sink (the labels trust it, so the plan would rest on a promise nobody keeps).
    pub fn score(&self) -> Score {
        let mut s = self.score;
        s.0 += self.unpunctuated();
        s
    }

    /// How many stream seals choices added cannot be punctuated by their producer under the
    /// current labels ([`punctuates`]).
    fn unpunctuated(&self) -> usize {
        self.unpunctuated_streams().count()
    }

    /// The stream seals choices added whose producer cannot punctuate them under the current
    /// labels ([`punctuates`]).
    pub fn unpunctuated_streams(&self) -> impl Iterator<Item = StreamId> + '_ {
        self.sealed_streams.iter().copied().filter(|&t| {
            let seal = self.df.streams[t.index()].seal;
            seal != self.base_stream_seal[t.index()]
                && seal.is_some_and(|k| !punctuates(&self.df, &self.iface, t, k))
        })
    }

    /// Whether every sink is safe with `choices` applied on top of the current state, trusting
    /// every stream seal: the relaxation an upper bound is checked with (a stream seal's key
    /// intersected with another's may be one its producer cannot punctuate, while each alone
    /// can). Counts one evaluation.
    pub fn feasible_trusting_seals(&mut self, choices: &[Choice]) -> bool {
        self.evaluations += 1;
        let cp = self.checkpoint();
        for &c in choices {
            self.set_choice(c);
        }
        self.settle();
        let failing = self.score.0;
        self.rollback(cp);
        failing == 0
    }

    /// The current position, to [`rollback`](Self::rollback) to.
    pub fn checkpoint(&self) -> Checkpoint {
        Checkpoint {
            log: self.log.len(),
            touched: self.touched.len(),
            touched_sinks: self.touched_sinks.len(),
            score: self.score,
        }
    }

    /// Undoes every change since `cp`.
    pub fn rollback(&mut self, cp: Checkpoint) {
        while self.log.len() > cp.log {
            match self.log.pop().expect("log is longer than the checkpoint") {
                Undo::Iface(i, l) => self.iface[i as usize] = l,
                Undo::Stream(s, l) => self.stream[s as usize] = l,
                Undo::Sink(k, l) => self.sink[k as usize] = l,
                Undo::Local(c, l) => self.local[c as usize] = l,
                Undo::Order(c, o) => self.df.components[c as usize].order = o,
                Undo::Seal(s, k) => self.df.sources[s as usize].seal = k,
                Undo::StreamSeal(s, k) => self.df.streams[s as usize].seal = k,
                Undo::SealedStream => {
                    if let Some(t) = self.sealed_streams.pop() {
                        self.in_sealed[t.index()] = false;
                    }
                }
            }
        }
        self.touched.truncate(cp.touched);
        self.touched_sinks.truncate(cp.touched_sinks);
        self.score = cp.score;
    }

    /// Components re-derived since `cp`, sorted, without repeats.
    pub fn touched_since(&self, cp: &Checkpoint) -> Vec<CompId> {
        let mut v = self.touched[cp.touched..].to_vec();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Sinks that fail under the current labels, sorted.
    pub fn failing_sinks(&self) -> Vec<SinkId> {
        (0..self.sink.len())
            .filter(|&k| self.fails(k))
            .map(|k| SinkId(k as u32))
            .collect()
    }

    /// Sinks whose label was re-derived since `cp` and that fail now, sorted.
    pub fn failing_sinks_since(&self, cp: &Checkpoint) -> Vec<SinkId> {
        let mut v: Vec<SinkId> = self.touched_sinks[cp.touched_sinks..]
            .iter()
            .copied()
            .filter(|k| self.fails(k.index()))
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Points of order of component `c` under the current labels: (path index, kind).
    pub fn points_of(&self, c: CompId) -> Vec<(usize, PointKind)> {
        analysis::component_points(&self.df, c, &self.iface)
    }

    /// The key table of the labeling's copy, where choices' key sets must be interned.
    pub fn keys_mut(&mut self) -> &mut Keys {
        &mut self.df.keys
    }

    /// Counts one evaluation: whether every sink is safe with `choices` applied on top of the
    /// current state (later ones win on the same source or component).
    pub fn feasible(&mut self, choices: &[Choice]) -> bool {
        self.score_with(choices).0 == 0
    }

    /// Counts one evaluation: the score with `choices` applied on top of the current state,
    /// which is then restored.
    fn score_with(&mut self, choices: &[Choice]) -> Score {
        self.evaluations += 1;
        let cp = self.checkpoint();
        for &c in choices {
            self.set_choice(c);
        }
        self.settle();
        let s = self.score();
        self.rollback(cp);
        s
    }

    fn set_choice(&mut self, choice: Choice) {
        match choice {
            Choice::AddSeal { source, key } => self.set_seal(source, Some(key)),
            Choice::SealStream { stream, key } => {
                if !std::mem::replace(&mut self.in_sealed[stream.index()], true) {
                    self.sealed_streams.push(stream);
                    self.log.push(Undo::SealedStream);
                }
                self.set_stream_seal(stream, Some(key));
            }
            Choice::Order { component, order } => {
                for i in 0..self.group_len(component) {
                    let m = self.group_member(component, i);
                    self.set_order(m, Some(order));
                }
            }
        }
    }

    /// How many components an order of `c` covers ([`Dataflow::order_group`]).
    fn group_len(&self, c: CompId) -> usize {
        self.df.order_group(c).count()
    }

    /// The `i`th component an order of `c` covers.
    fn group_member(&self, c: CompId, i: usize) -> CompId {
        self.df.order_group(c).nth(i).unwrap_or(c)
    }

    /// Applies `choice` (replacing the source's seal or the component's order) and settles.
    pub fn apply(&mut self, choice: Choice) {
        self.set_choice(choice);
        self.settle();
    }

    /// Puts the source or component `choice` acts on back as the spec has it, and settles.
    pub fn revert(&mut self, choice: Choice) {
        self.revert_choice(choice);
        self.settle();
    }

    fn revert_choice(&mut self, choice: Choice) {
        match choice {
            Choice::AddSeal { source, .. } => self.set_seal(source, self.base_seal[source.index()]),
            Choice::SealStream { stream, .. } => {
                self.set_stream_seal(stream, self.base_stream_seal[stream.index()])
            }
            Choice::Order { component, .. } => {
                for i in 0..self.group_len(component) {
                    let m = self.group_member(component, i);
                    self.set_order(m, self.base_order[m.index()]);
                }
            }
        }
    }

    /// Counts one trial evaluation: the score with `choice` applied on top of the current
    /// state, which is then restored.
    pub fn trial(&mut self, choice: Choice) -> Score {
        self.score_with(&[choice])
    }

    /// Whether every sink is still safe with `choice` reverted, from labels that are exact:
    /// stops at the first sign of a failing sink (reverting only raises labels, so an
    /// intermediate failure is a final one). Leaves the revert applied when safe, and undoes
    /// it otherwise.
    pub fn revert_if_safe(&mut self, choice: Choice) -> bool {
        self.evaluations += 1;
        let cp = self.checkpoint();
        self.revert_choice(choice);
        let stopped = self.settle_until(Stop::Failure);
        if stopped || self.doomed || self.score().0 > 0 {
            self.rollback(cp);
            return false;
        }
        true
    }

    /// Reverts `choice` from exact labels, re-deriving at most `budget` components; returns
    /// whether the propagation completed. Incomplete, the labels are a lower bound of the
    /// true ones (the revert only raises them): every failing sink seen is real, and so is
    /// every point of order but a written `Inst` (C003), which an input raised further to
    /// `Diverge` no longer makes; some may be missing. Call [`rollback`](Self::rollback) afterwards.
    pub fn revert_within(&mut self, choice: Choice, budget: usize) -> bool {
        self.evaluations += 1;
        self.revert_choice(choice);
        !self.settle_until(Stop::Budget(budget))
    }

    /// Applies `choices` and declares `stream_seals` (a stream's `seal:`: its producer
    /// punctuates that key) on top of the current state, re-deriving at most `budget`
    /// components; returns whether the propagation completed. Every component it re-derived
    /// was re-derived from exact inputs (upstream first), and the others keep their labels,
    /// which only the change could have lowered: a point of order absent from a re-derived
    /// component is absent from the complete propagation too. Counts one evaluation; call
    /// [`rollback`](Self::rollback) afterwards.
    pub fn try_within(
        &mut self,
        choices: &[Choice],
        stream_seals: &[(StreamId, KeySet)],
        budget: usize,
    ) -> bool {
        self.evaluations += 1;
        for &c in choices {
            self.set_choice(c);
        }
        for &(s, k) in stream_seals {
            self.set_stream_seal(s, Some(k));
        }
        !self.settle_until(Stop::Budget(budget))
    }

    /// Whether component `c` was re-derived since `cp`.
    pub fn touched_since_contains(&self, cp: &Checkpoint, c: CompId) -> bool {
        self.touched[cp.touched..].contains(&c)
    }

    /// Components re-derived since `cp`, with repeats: the work a trial did.
    pub fn work_since(&self, cp: &Checkpoint) -> usize {
        self.touched.len() - cp.touched
    }

    /// Solves every cycle from unreached: afterwards the labels are the least fixpoint
    /// again, whatever was applied while not [`exact`](Self::set_exact).
    pub fn reanchor(&mut self) {
        let exact = std::mem::replace(&mut self.exact, true);
        for scc in 0..self.cyclic.len() {
            if self.cyclic[scc] {
                let first = self.scc_list[self.scc_start[scc] as usize];
                self.mark(first);
            }
        }
        self.settle();
        self.exact = exact;
    }
}
