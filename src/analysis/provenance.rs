//! Provenance: the chain of streams that brought a label somewhere (each input records the
//! stream whose arrival last raised it, each output the path that decided it), for points of
//! order and failing sinks, and the producers a seal barrier waits for.

use std::collections::{BTreeMap, BTreeSet};

use crate::graph::{Dataflow, IfaceId, Producer, StreamId};
use crate::label::Label;

use super::{Labels, SealProducer, SinkVerdict, work};

/// Streams that brought the label of input `start` there, upstream first.
pub fn chain(df: &Dataflow, labels: &Labels, start: IfaceId) -> Vec<StreamId> {
    const MAX: usize = 12;
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    let mut cur = start;
    while out.len() < MAX && seen.insert(cur) {
        work::add(1);
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
            if let Some(&s) =
                work::each(sink.streams.iter()).find(|s| labels.stream[s.index()] == v.label)
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

/// Who originates the seal an input carries: the sources with `seal:` and the producers of
/// streams with an effective `seal:` declaration, found by walking back through the confluent
/// paths that passed the seal on.
#[derive(Default)]
pub(super) struct Origins {
    memo: BTreeMap<IfaceId, BTreeSet<SealProducer>>,
}

impl Origins {
    pub(super) fn of_input(
        &mut self,
        df: &Dataflow,
        labels: &Labels,
        input: IfaceId,
        visiting: &mut BTreeSet<IfaceId>,
    ) -> BTreeSet<SealProducer> {
        if let Some(m) = self.memo.get(&input) {
            work::add(m.len() as u64 + 1);
            return m.clone();
        }
        if !visiting.insert(input) {
            return BTreeSet::new();
        }
        let mut out = BTreeSet::new();
        for &s in work::each(df.ifaces[input.index()].streams.iter()) {
            let stream = &df.streams[s.index()];
            if !matches!(labels.stream[s.index()], Some(Label::Seal(_))) {
                continue;
            }
            match stream.from {
                Producer::Source(k) => {
                    out.insert(SealProducer::Source(k));
                }
                Producer::Output(o) => {
                    let cid = df.ifaces[o.index()].component;
                    let c = &df.components[cid.index()];
                    let produced_sealed = matches!(labels.iface[o.index()], Some(Label::Seal(_)));
                    if stream.seal.is_some() && !produced_sealed {
                        out.insert(SealProducer::Component(cid));
                        continue;
                    }
                    if stream.seal.is_some() {
                        // The producer re-seals a sealed stream: it is the one punctuating.
                        out.insert(SealProducer::Component(cid));
                        continue;
                    }
                    for p in work::each(c.paths.iter())
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
        work::add(out.len() as u64);
        self.memo.insert(input, out.clone());
        out
    }
}
