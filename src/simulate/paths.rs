//! What a delivered record does in a component instance: each path it feeds (`CR` forwards,
//! `CW` writes, `OW` folds or holds it at a barrier, `OR` answers or waits for seals), then
//! what seals release (barrier partitions, waiting reads) and which output partitions close.

use std::collections::BTreeSet;

use crate::graph::IfaceId;
use crate::label::Annotation;

use super::exec::{Body, Delivery, Exec, project, values};
use super::model::{Rec, mix};

impl Exec<'_> {
    pub(super) fn process(&mut self, c: usize, k: usize, input: IfaceId, r: Rec) {
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
                    self.inst_mut(c, k).written.insert(r.clone());
                    self.emit(c, k, p.output, r.clone());
                }
                Annotation::OW => {
                    let part = project(&r.attrs, &p.gate);
                    let barrier = p.barrier && !self.m.knobs.no_barrier;
                    let inst = self.inst_mut(c, k);
                    inst.written.insert(r.clone());
                    if barrier {
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
                        self.inst_mut(c, k)
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
    pub(super) fn settle(&mut self, c: usize, k: usize) {
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
                let inst = self.inst_mut(c, k);
                let recs = inst.held.remove(&key).unwrap_or_default();
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
                    if let Some(rs) = self.inst_mut(c, k).waiting.get_mut(&pi) {
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
                        self.inst_mut(c, k).sealed_out.insert((e, v.clone()));
                        self.send(e, k, Body::Seal(v));
                    }
                }
            }
        }
    }

    fn emit(&mut self, c: usize, k: usize, o: IfaceId, r: Rec) {
        if r.depth > self.m.max_depth {
            return;
        }
        // Looked up before the instance is copied: a repeat changes nothing.
        if self.inst[c][k]
            .emitted
            .get(&o)
            .is_some_and(|e| e.contains(&r))
        {
            return;
        }
        self.inst_mut(c, k)
            .emitted
            .entry(o)
            .or_default()
            .insert(r.clone());
        for &e in &self.m.out_of[o.index()] {
            self.send(e, k, Body::Rec(r.clone()));
        }
    }
}
