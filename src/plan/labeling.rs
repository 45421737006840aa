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
//! Must not know: candidates, costs, or the search: it applies choices and keeps the score.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use petgraph::algo::kosaraju_scc;

use crate::analysis::{self, FailOn, PointKind};
use crate::graph::{CompId, Consumer, Dataflow, IfaceId, Order, SinkId, SourceId, Vertex};
use crate::label::{KeySet, Keys, Label, join_opt};

use super::model::Choice;
use super::scoring::{Score, local_score};

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
}

/// A position in the undo log, and the score there.
#[derive(Clone, Copy, Debug)]
pub struct Checkpoint {
    log: usize,
    touched: usize,
    touched_sinks: usize,
    score: Score,
}

pub struct Labeling {
    df: Dataflow,
    fail_on: FailOn,
    base_order: Vec<Option<Order>>,
    base_seal: Vec<Option<KeySet>>,
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
        let (scc_of, scc_start, scc_list, cyclic) = sccs(&df);
        let n_if = df.ifaces.len();
        let mut me = Labeling {
            base_order: df.components.iter().map(|c| c.order).collect(),
            base_seal: df.sources.iter().map(|s| s.seal).collect(),
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

    /// `(failing sinks, points of order, unsealed arrivals)`, as [`super::Evaluator::score`].
    pub fn score(&self) -> Score {
        self.score
    }

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
        let s = self.score;
        self.rollback(cp);
        s
    }

    fn set_choice(&mut self, choice: Choice) {
        match choice {
            Choice::AddSeal { source, key } => self.set_seal(source, Some(key)),
            Choice::Order { component, order } => self.set_order(component, Some(order)),
        }
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
            Choice::Order { component, .. } => {
                self.set_order(component, self.base_order[component.index()])
            }
        }
    }

    /// Counts one trial evaluation: the score with `choice` applied on top of the current
    /// state, which is then restored.
    pub fn trial(&mut self, choice: Choice) -> Score {
        self.score_with(&[choice])
    }

    fn fails(&self, k: usize) -> bool {
        let s = &self.df.sinks[k];
        self.sink[k].is_some_and(|l| s.fails(l, self.fail_on))
    }

    fn set_seal(&mut self, source: SourceId, key: Option<KeySet>) {
        let si = source.index();
        if self.df.sources[si].seal == key {
            return;
        }
        self.log
            .push(Undo::Seal(si as u32, self.df.sources[si].seal));
        self.df.sources[si].seal = key;
        let produced = Some(Label::of_source(key));
        for k in 0..self.df.sources[si].streams.len() {
            let s = self.df.sources[si].streams[k];
            self.set_stream(s.index(), produced);
        }
    }

    fn set_order(&mut self, component: CompId, order: Option<Order>) {
        let ci = component.index();
        if self.df.components[ci].order == order {
            return;
        }
        self.log
            .push(Undo::Order(ci as u32, self.df.components[ci].order));
        self.df.components[ci].order = order;
        self.mark(component);
    }

    fn mark(&mut self, c: CompId) {
        if !self.queued[c.index()] {
            self.queued[c.index()] = true;
            self.dirty.push(Reverse((self.scc_of[c.index()], c.0)));
        }
    }

    /// Sets stream `s` from its producer's label; on a change, marks its consumer.
    fn set_stream(&mut self, s: usize, produced: Option<Label>) {
        let st = &self.df.streams[s];
        let l = analysis::stream_label(produced, st.seal);
        if self.stream[s] == l {
            return;
        }
        self.log.push(Undo::Stream(s as u32, self.stream[s]));
        self.stream[s] = l;
        match st.to {
            Consumer::Input(i) => self.mark(self.df.ifaces[i.index()].component),
            Consumer::Sink(k) => self.rederive_sink(k),
        }
    }

    fn rederive_sink(&mut self, k: SinkId) {
        let ki = k.index();
        let sink = &self.df.sinks[ki];
        let mut l = sink.implicit.and_then(|i| self.iface[i.index()]);
        for &s in &sink.streams {
            l = join_opt(l, self.stream[s.index()], &mut self.df.keys);
        }
        self.touched_sinks.push(k);
        if self.sink[ki] == l {
            return;
        }
        let before = self.fails(ki);
        self.log.push(Undo::Sink(ki as u32, self.sink[ki]));
        self.sink[ki] = l;
        match (before, self.fails(ki)) {
            (false, true) => self.score.0 += 1,
            (true, false) => self.score.0 -= 1,
            _ => {}
        }
    }

    fn set_iface(&mut self, i: IfaceId, l: Option<Label>) -> bool {
        if self.iface[i.index()] == l {
            return false;
        }
        self.log
            .push(Undo::Iface(i.index() as u32, self.iface[i.index()]));
        self.iface[i.index()] = l;
        if l.is_some_and(|l| l.is_at_least(Label::Run)) && self.dooms[i.index()] {
            self.doomed = true;
        }
        true
    }

    /// An input's label: the join of its streams, `Async` for an input no stream feeds.
    fn input_label(&mut self, i: IfaceId) -> Option<Label> {
        let f = &self.df.ifaces[i.index()];
        if f.streams.is_empty() {
            return Some(Label::UNFED_INPUT);
        }
        let mut l = None;
        for &s in &f.streams {
            l = join_opt(l, self.stream[s.index()], &mut self.df.keys);
        }
        l
    }

    /// Evaluates `c`'s outputs from its current inputs; returns the outputs that changed.
    fn eval_outputs(&mut self, c: CompId, changed: &mut Vec<IfaceId>) {
        analysis::eval_component(
            &mut self.df,
            c,
            &self.iface,
            &mut self.scratch,
            &mut self.outs,
        );
        let outs = std::mem::take(&mut self.outs);
        // `eval_component` lists the reached outputs in the component's order.
        let mut reached = outs.iter().peekable();
        for k in 0..self.df.components[c.index()].outputs.len() {
            let o = self.df.components[c.index()].outputs[k];
            let l = reached.next_if(|(x, _, _)| *x == o).map(|&(_, l, _)| l);
            if self.set_iface(o, l) {
                changed.push(o);
            }
        }
        self.outs = outs;
    }

    fn rederive_local(&mut self, c: CompId) {
        let l = local_score(&self.df, c, &self.iface, &self.stream);
        let old = self.local[c.index()];
        if l != old {
            self.log.push(Undo::Local(c.index() as u32, old));
            self.local[c.index()] = l;
            self.score.1 = self.score.1 + l.0 as usize - old.0 as usize;
            self.score.2 = self.score.2 + l.1 as usize - old.1 as usize;
        }
        self.touched.push(c);
    }

    /// Output `o` changed: its implicit sink and its streams follow.
    fn publish(&mut self, o: IfaceId) {
        let l = self.iface[o.index()];
        if let Some(k) = self.df.ifaces[o.index()].implicit_sink {
            self.rederive_sink(k);
        }
        for k in 0..self.df.ifaces[o.index()].streams.len() {
            let s = self.df.ifaces[o.index()].streams[k];
            self.set_stream(s.index(), l);
        }
    }

    /// Re-derives every marked SCC, upstream first.
    fn settle(&mut self) {
        self.settle_until(Stop::Never);
    }

    /// Settles, or stops early (see [`Stop`]); returns whether it stopped early. A stopped
    /// state is only fit for [`rollback`](Self::rollback).
    fn settle_until(&mut self, stop: Stop) -> bool {
        self.doomed = false;
        let start = self.touched.len();
        // Re-derivations in the cycle being iterated from current labels, and their limit.
        let (mut current, mut spent, mut limit) = (u32::MAX, 0usize, 0usize);
        while let Some(Reverse((scc, c))) = self.dirty.pop() {
            let stopped = match stop {
                Stop::Never => false,
                Stop::Failure => self.doomed || self.score.0 > 0,
                Stop::Budget(n) => self.touched.len() - start >= n,
            };
            if stopped {
                self.queued[c as usize] = false;
                while let Some(Reverse((_, c))) = self.dirty.pop() {
                    self.queued[c as usize] = false;
                }
                return true;
            }
            let c = CompId(c);
            if !self.queued[c.index()] {
                continue;
            }
            self.queued[c.index()] = false;
            if self.cyclic[scc as usize] && !self.exact {
                if scc != current {
                    let (start, end) = self.scc_range(scc);
                    (current, spent, limit) = (scc, 0, 8 * (end - start) + 64);
                }
                spent += 1;
            }
            // A change that lowers some labels and raises others (one order replaced by
            // another) need not settle when a cycle is iterated from its current labels;
            // past a generous number of steps the cycle is solved exactly instead.
            if self.cyclic[scc as usize] && (self.exact || spent > limit) {
                let (start, end) = self.scc_range(scc);
                for m in start..end {
                    let member = self.scc_list[m];
                    self.queued[member.index()] = false;
                }
                self.rederive_cycle(scc);
                spent = 0;
            } else {
                // Acyclic, or a cycle iterated from its current labels (see `exact`).
                self.rederive_one(c);
            }
        }
        false
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
        if stopped || self.doomed || self.score.0 > 0 {
            self.rollback(cp);
            return false;
        }
        true
    }

    /// Reverts `choice` from exact labels, re-deriving at most `budget` components; returns
    /// whether the propagation completed. Incomplete, the labels are a lower bound of the
    /// true ones (the revert only raises them): every point of order and failing sink seen
    /// is real, some may be missing. Call [`rollback`](Self::rollback) afterwards.
    pub fn revert_within(&mut self, choice: Choice, budget: usize) -> bool {
        self.evaluations += 1;
        self.revert_choice(choice);
        !self.settle_until(Stop::Budget(budget))
    }

    fn scc_range(&self, scc: u32) -> (usize, usize) {
        (
            self.scc_start[scc as usize] as usize,
            self.scc_start[scc as usize + 1] as usize,
        )
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

    fn rederive_inputs(&mut self, c: CompId) -> bool {
        let mut any = false;
        for k in 0..self.df.components[c.index()].inputs.len() {
            let i = self.df.components[c.index()].inputs[k];
            let l = self.input_label(i);
            any |= self.set_iface(i, l);
        }
        any
    }

    fn rederive_one(&mut self, c: CompId) {
        self.rederive_inputs(c);
        let mut changed = std::mem::take(&mut self.changed);
        changed.clear();
        self.eval_outputs(c, &mut changed);
        for &o in &changed {
            self.publish(o);
        }
        self.changed = changed;
        self.rederive_local(c);
    }

    /// Solves a cycle from scratch: every output unreached, then a worklist over its members
    /// until nothing changes, then the results leave the cycle.
    fn rederive_cycle(&mut self, scc: u32) {
        let (start, end) = self.scc_range(scc);
        // The negative control (`without_cycle_reset`) skips the reset: no members to reset.
        let reset_end = if self.reset_cycles { end } else { start };
        for m in start..reset_end {
            let c = self.scc_list[m];
            for k in 0..self.df.components[c.index()].outputs.len() {
                let o = self.df.components[c.index()].outputs[k];
                self.set_iface(o, None);
                for j in 0..self.df.ifaces[o.index()].streams.len() {
                    let s = self.df.ifaces[o.index()].streams[j].index();
                    if self.consumer_scc(s) == Some(scc) {
                        self.set_stream_quietly(s, None);
                    }
                }
            }
        }
        let mut queue = std::collections::VecDeque::new();
        for m in start..end {
            let c = self.scc_list[m];
            self.rederive_inputs(c);
            self.in_queue[c.index()] = true;
            queue.push_back(c);
        }
        let mut changed = std::mem::take(&mut self.changed);
        while let Some(c) = queue.pop_front() {
            self.in_queue[c.index()] = false;
            changed.clear();
            self.eval_outputs(c, &mut changed);
            for &o in &changed {
                let l = self.iface[o.index()];
                for j in 0..self.df.ifaces[o.index()].streams.len() {
                    let s = self.df.ifaces[o.index()].streams[j].index();
                    if self.consumer_scc(s) != Some(scc) {
                        continue;
                    }
                    let nl = analysis::stream_label(l, self.df.streams[s].seal);
                    self.set_stream_quietly(s, nl);
                    let Consumer::Input(i) = self.df.streams[s].to else {
                        continue;
                    };
                    let il = self.input_label(i);
                    let next = self.df.ifaces[i.index()].component;
                    if self.set_iface(i, il) && !self.in_queue[next.index()] {
                        self.in_queue[next.index()] = true;
                        queue.push_back(next);
                    }
                }
            }
        }
        self.changed = changed;
        // Streams inside the cycle are final; those leaving it notify their consumers.
        for m in start..end {
            let c = self.scc_list[m];
            for k in 0..self.df.components[c.index()].outputs.len() {
                let o = self.df.components[c.index()].outputs[k];
                self.publish(o);
            }
            self.rederive_local(c);
        }
    }

    fn consumer_scc(&self, s: usize) -> Option<u32> {
        match self.df.streams[s].to {
            Consumer::Input(i) => Some(self.scc_of[self.df.ifaces[i.index()].component.index()]),
            Consumer::Sink(_) => None,
        }
    }

    fn set_stream_quietly(&mut self, s: usize, l: Option<Label>) {
        if self.stream[s] != l {
            self.log.push(Undo::Stream(s as u32, self.stream[s]));
            self.stream[s] = l;
        }
    }
}

/// When [`Labeling::settle_until`] stops early.
#[derive(Clone, Copy, Debug)]
enum Stop {
    Never,
    /// At the first failing sink, or doomed interface.
    Failure,
    /// After re-deriving this many components.
    Budget(usize),
}

/// [`Labeling::dooms`]: interfaces from which a label of rank `Run` or more reaches a sink
/// that fails on `Run` (and so on anything above it: failing is upward closed). A walk back
/// from those sinks along streams and paths.
fn dooms(df: &Dataflow, fail_on: FailOn) -> Vec<bool> {
    let fails_on_run = |k: SinkId| df.sinks[k.index()].fails(Label::Run, fail_on);
    let mut doomed = vec![false; df.ifaces.len()];
    let mut stack: Vec<IfaceId> = Vec::new();
    for (i, f) in df.ifaces.iter().enumerate() {
        // Only outputs have implicit sinks or streams into sinks.
        let to_sink = f.implicit_sink.is_some_and(fails_on_run)
            || f.streams
                .iter()
                .any(|s| matches!(df.streams[s.index()].to, Consumer::Sink(k) if fails_on_run(k)));
        if to_sink {
            doomed[i] = true;
            stack.push(IfaceId(i as u32));
        }
    }
    // Walking back: an output is fed by its component's paths, an input by its streams.
    let mut feeding: Vec<Vec<IfaceId>> = vec![Vec::new(); df.ifaces.len()];
    for c in &df.components {
        for p in &c.paths {
            feeding[p.output.index()].push(p.input);
        }
    }
    while let Some(i) = stack.pop() {
        let f = df.iface(i);
        let back: Vec<IfaceId> = match f.direction {
            crate::graph::Direction::Output => feeding[i.index()].clone(),
            crate::graph::Direction::Input => f
                .streams
                .iter()
                .filter_map(|s| match df.streams[s.index()].from {
                    crate::graph::Producer::Output(o) => Some(o),
                    crate::graph::Producer::Source(_) => None,
                })
                .collect(),
        };
        for j in back {
            if !doomed[j.index()] {
                doomed[j.index()] = true;
                stack.push(j);
            }
        }
    }
    doomed
}

/// Components by SCC, SCCs in topological order (upstream first): `(scc of each component,
/// start of each SCC in the list (plus the end), the list, whether each SCC is a cycle)`.
/// Kosaraju's algorithm, because petgraph's Tarjan recurses once per vertex on a path and a
/// million-component chain would overflow the stack.
fn sccs(df: &Dataflow) -> (Vec<u32>, Vec<u32>, Vec<CompId>, Vec<bool>) {
    let mut found = kosaraju_scc(&df.graph);
    // kosaraju_scc lists SCCs downstream first.
    found.reverse();
    let mut scc_of = vec![0u32; df.components.len()];
    let mut start = Vec::new();
    let mut list = Vec::with_capacity(df.components.len());
    let mut cyclic = Vec::new();
    for members in found {
        let comps: Vec<CompId> = members
            .iter()
            .filter_map(|&v| match df.graph[v] {
                Vertex::Component(c) => Some(c),
                _ => None,
            })
            .collect();
        if comps.is_empty() {
            continue;
        }
        let id = start.len() as u32;
        start.push(list.len() as u32);
        let self_loop = comps.len() == 1 && {
            let c = df.component(comps[0]);
            c.outputs.iter().any(|&o| {
                df.iface(o).streams.iter().any(|s| {
                    matches!(df.streams[s.index()].to,
                        Consumer::Input(i) if df.iface(i).component == comps[0])
                })
            })
        };
        cyclic.push(comps.len() > 1 || self_loop);
        for c in comps {
            scc_of[c.index()] = id;
            list.push(c);
        }
    }
    start.push(list.len() as u32);
    (scc_of, start, list, cyclic)
}
