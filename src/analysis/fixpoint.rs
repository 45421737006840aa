//! The fixpoint of section 6: a worklist over components, exact on cycles because every rule
//! is monotone over a finite lattice, and its naive reference for differential tests. Streams
//! that no source reaches keep the label `None` ("unreached").

use std::collections::{BTreeMap, VecDeque};

use crate::graph::{CompId, Consumer, Dataflow, IfaceId, Producer, StreamId};
use crate::label::{Label, join_opt};

use super::Labels;
use super::rules::{contribute, is_unfed_input, reconcile, stream_label};

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
    let seeds: Vec<Option<Label>> = df
        .sources
        .iter()
        .map(|s| Some(Label::of_source(s.seal)))
        .collect();
    propagate_from(df, &seeds)
}

/// [`propagate`] with each source giving its streams `seeds[i]` instead of its declared label
/// (`None`: the source gives nothing): how a module behaves when the outer graph feeds it.
pub fn propagate_from(df: &mut Dataflow, seeds: &[Option<Label>]) -> Labels {
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
        if is_unfed_input(f) {
            labels.iface[i] = Some(Label::UNFED_INPUT);
            let c = f.component;
            enqueue(c, &mut queue, &mut queued);
        }
    }
    for si in 0..df.sources.len() {
        let Some(l) = seeds.get(si).copied().flatten().map(Some) else {
            continue;
        };
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
                Producer::Source(k) => Some(Label::of_source(df.sources[k.index()].seal)),
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
                Some(Label::UNFED_INPUT)
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
