//! How a change reaches the labels: marking what it touches, re-deriving components SCC by
//! SCC upstream first (a cycle from unreached, or from its current labels when not exact),
//! publishing changed outputs to their streams and sinks, and logging every write for
//! [`Labeling::rollback`].

use std::cmp::Reverse;

use super::{Labeling, Undo};
use crate::analysis;
use crate::graph::{CompId, Consumer, IfaceId, Order, Producer, SinkId, SourceId, StreamId};
use crate::label::{KeySet, Label, join_opt};
use crate::plan::scoring::local_score;

impl Labeling {
    pub(super) fn fails(&self, k: usize) -> bool {
        let s = &self.df.sinks[k];
        self.sink[k].is_some_and(|l| s.fails(l, self.fail_on))
    }

    pub(super) fn set_seal(&mut self, source: SourceId, key: Option<KeySet>) {
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

    /// Declares (or removes) the `seal:` of stream `s`, and re-derives the stream from its
    /// producer's current label.
    pub(super) fn set_stream_seal(&mut self, s: StreamId, key: Option<KeySet>) {
        let si = s.index();
        if self.df.streams[si].seal == key {
            return;
        }
        self.log
            .push(Undo::StreamSeal(si as u32, self.df.streams[si].seal));
        self.df.streams[si].seal = key;
        let produced = match self.df.streams[si].from {
            Producer::Source(k) => Some(Label::of_source(self.df.sources[k.index()].seal)),
            Producer::Output(o) => self.iface[o.index()],
        };
        self.set_stream(si, produced);
        // The stream's label may not change (a seal replaces only `Async`, and a cycle can
        // hold a `Run` on it by itself) while the least fixpoint does: the seal would turn
        // the cycle's `Async` into `Seal` from unreached. Re-derive the consumer regardless,
        // so that a cycle it is in is solved again.
        if let Consumer::Input(i) = self.df.streams[si].to {
            self.mark(self.df.ifaces[i.index()].component);
        }
    }

    pub(super) fn set_order(&mut self, component: CompId, order: Option<Order>) {
        let ci = component.index();
        if self.df.components[ci].order == order {
            return;
        }
        self.log
            .push(Undo::Order(ci as u32, self.df.components[ci].order));
        self.df.components[ci].order = order;
        self.mark(component);
    }

    pub(super) fn mark(&mut self, c: CompId) {
        if !self.queued[c.index()] {
            self.queued[c.index()] = true;
            self.dirty.push(Reverse((self.scc_of[c.index()], c.0)));
        }
    }

    /// Sets stream `s` from its producer's label; on a change, marks its consumer.
    pub(super) fn set_stream(&mut self, s: usize, produced: Option<Label>) {
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

    pub(super) fn rederive_sink(&mut self, k: SinkId) {
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

    pub(super) fn set_iface(&mut self, i: IfaceId, l: Option<Label>) -> bool {
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
    pub(super) fn input_label(&mut self, i: IfaceId) -> Option<Label> {
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
    pub(super) fn eval_outputs(&mut self, c: CompId, changed: &mut Vec<IfaceId>) {
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

    pub(super) fn rederive_local(&mut self, c: CompId) {
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
    pub(super) fn publish(&mut self, o: IfaceId) {
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
    pub(super) fn settle(&mut self) {
        self.settle_until(Stop::Never);
    }

    /// Settles, or stops early (see [`Stop`]); returns whether it stopped early. A stopped
    /// state is only fit for [`rollback`](Self::rollback).
    pub(super) fn settle_until(&mut self, stop: Stop) -> bool {
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

    pub(super) fn scc_range(&self, scc: u32) -> (usize, usize) {
        (
            self.scc_start[scc as usize] as usize,
            self.scc_start[scc as usize + 1] as usize,
        )
    }

    pub(super) fn rederive_inputs(&mut self, c: CompId) -> bool {
        let mut any = false;
        for k in 0..self.df.components[c.index()].inputs.len() {
            let i = self.df.components[c.index()].inputs[k];
            let l = self.input_label(i);
            any |= self.set_iface(i, l);
        }
        any
    }

    pub(super) fn rederive_one(&mut self, c: CompId) {
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
    pub(super) fn rederive_cycle(&mut self, scc: u32) {
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

    pub(super) fn consumer_scc(&self, s: usize) -> Option<u32> {
        match self.df.streams[s].to {
            Consumer::Input(i) => Some(self.scc_of[self.df.ifaces[i.index()].component.index()]),
            Consumer::Sink(_) => None,
        }
    }

    pub(super) fn set_stream_quietly(&mut self, s: usize, l: Option<Label>) {
        if self.stream[s] != l {
            self.log.push(Undo::Stream(s as u32, self.stream[s]));
            self.stream[s] = l;
        }
    }
}

/// When [`Labeling::settle_until`] stops early.
#[derive(Clone, Copy, Debug)]
pub(super) enum Stop {
    Never,
    /// At the first failing sink, or doomed interface.
    Failure,
    /// After re-deriving this many components.
    Budget(usize),
}
