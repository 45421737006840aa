//! Candidate generation: every mechanism that could fix a point of order of the baseline
//! analysis (an add-seal on a source or on an internal stream, a keyed order, a global
//! order), each with its cost.

use std::collections::{BTreeMap, BTreeSet};

use crate::analysis::{self, PointKind};
use crate::graph::{CompId, Consumer, Dataflow, IfaceId, Order, Producer, SourceId, StreamId};
use crate::label::{Annotation, Gate, KeySet, Keys};

use super::Allowed;
use super::cost::cost;
use super::model::{Choice, Kind};

/// A mechanism the search may choose, with its cost.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub choice: Choice,
    pub cost: u32,
    /// For an add-seal: the components where the seal would be consumed, sorted by name.
    pub consumers: Vec<CompId>,
}

impl Candidate {
    /// The kind of mechanism the candidate adds.
    pub fn kind(&self) -> Kind {
        self.choice.kind()
    }

    /// `choice` at the cost model's price; `consumers` as for the field (empty for an order).
    fn priced(df: &Dataflow, keys: &Keys, choice: Choice, consumers: Vec<CompId>) -> Self {
        Candidate {
            choice,
            cost: cost(df, keys, choice, consumers.len()),
            consumers,
        }
    }
}

/// Inputs reached from `start` (a source's streams, or one internal stream) through streams
/// and confluent paths, ignoring joins with other streams (an over-approximation of where a
/// seal put on them can arrive). Streams that declare their own seal replace the label, so
/// the walk stops there. `seen` is scratch space, all false on entry and on return.
fn reached_inputs(df: &Dataflow, start: &[StreamId], seen: &mut [bool]) -> Vec<IfaceId> {
    reached_inputs_within(df, start, seen, usize::MAX).unwrap_or_default()
}

/// [`reached_inputs`], or `None` once more than `budget` inputs are reached.
fn reached_inputs_within(
    df: &Dataflow,
    start: &[StreamId],
    seen: &mut [bool],
    budget: usize,
) -> Option<Vec<IfaceId>> {
    let mut out: Vec<IfaceId> = Vec::new();
    let mut stack: Vec<IfaceId> = Vec::new();
    let follow = |streams: &[crate::graph::StreamId], stack: &mut Vec<IfaceId>| {
        for s in streams {
            let st = &df.streams[s.index()];
            if st.seal.is_some() {
                continue;
            }
            if let Consumer::Input(i) = st.to {
                stack.push(i);
            }
        }
    };
    follow(start, &mut stack);
    while let Some(i) = stack.pop() {
        if std::mem::replace(&mut seen[i.index()], true) {
            continue;
        }
        out.push(i);
        if out.len() > budget {
            break;
        }
        let c = df.component(df.iface(i).component);
        for p in c
            .paths
            .iter()
            .filter(|p| p.input == i && p.annotation.is_confluent())
        {
            follow(&df.iface(p.output).streams, &mut stack);
        }
    }
    for i in &out {
        seen[i.index()] = false;
    }
    (out.len() <= budget).then_some(out)
}

/// The components of the points among `points` (indexes into `base.points`) whose gate a
/// seal on `key` is compatible with: where that seal would be consumed, sorted by name.
fn consumers_of(
    df: &Dataflow,
    keys: &Keys,
    base: &analysis::Analysis,
    points: &[usize],
    key: KeySet,
) -> Vec<CompId> {
    let mut consumers: Vec<CompId> = Vec::new();
    for &pi in points {
        let p = &base.points[pi];
        let gate = df.component(p.component).paths[p.path].gate;
        if gate.unwrap_or(Gate::Star).compatible(key, keys) {
            consumers.push(p.component);
        }
    }
    consumers.sort_unstable_by(|&a, &b| df.component(a).name.cmp(&df.component(b).name));
    consumers.dedup();
    consumers
}

/// The most inputs a seal on an internal stream may reach through confluent paths for the
/// planner to offer it. One walk per stream an order-sensitive path writes would otherwise be
/// quadratic in a fleet whose confluent paths tie most components together; a stream seal
/// reaching further is not offered (the plan uses a source seal or an order there).
pub const STREAM_SEAL_REACH: usize = 64;

/// Seals of internal streams. A component that writes a stream from an order-sensitive path
/// stops every seal from upstream (an `O` path never passes one on), so the points of order
/// behind it can be sealed only by its producer punctuating the stream. It can when its
/// inputs are sealed within the key, so the keys offered are those that could reach its
/// inputs ([`upstream_keys`]); whether they do in a plan is checked by the search (see
/// `scoring::punctuates`). `at_input` lists, per input, the points a seal arriving there
/// could fix.
fn stream_seals(
    df: &Dataflow,
    keys: &Keys,
    base: &analysis::Analysis,
    at_input: &[Vec<usize>],
    seen: &mut [bool],
) -> Vec<Candidate> {
    let mut found: Vec<(StreamId, IfaceId, Vec<usize>)> = Vec::new();
    for (ti, st) in df.streams.iter().enumerate() {
        let (None, Producer::Output(o), Consumer::Input(_)) = (st.seal, st.from, st.to) else {
            continue;
        };
        let c = df.component(df.iface(o).component);
        if c.paths
            .iter()
            .all(|p| p.output != o || p.annotation.is_confluent())
        {
            continue;
        }
        let t = StreamId(ti as u32);
        let Some(reached) = reached_inputs_within(df, &[t], seen, STREAM_SEAL_REACH) else {
            continue;
        };
        let mut points: Vec<usize> = reached
            .iter()
            .flat_map(|i| at_input[i.index()].iter().copied())
            .collect();
        if points.is_empty() {
            continue;
        }
        points.sort_unstable();
        points.dedup();
        found.push((t, o, points));
    }
    if found.is_empty() {
        return Vec::new();
    }
    let up = upstream_keys(df);
    let mut out = Vec::new();
    for (t, o, points) in found {
        for &key in &up[o.index()] {
            let consumers = consumers_of(df, keys, base, &points, key);
            if consumers.is_empty() {
                continue;
            }
            out.push(Candidate::priced(
                df,
                keys,
                Choice::SealStream { stream: t, key },
                consumers,
            ));
        }
    }
    out
}

/// Per output interface, sorted: the seal keys that could reach it from upstream, which its
/// producer could then punctuate it by: a `sealable:` key of an unsealed source, the seal of
/// a sealed source or of a stream that declares one, carried through every path (a seal an
/// order-sensitive path stops can be restored by sealing the stream after it). A fixpoint
/// over the graph, cycles included: the sets only grow, and there are few distinct keys.
fn upstream_keys(df: &Dataflow) -> Vec<Vec<KeySet>> {
    let mut up: Vec<Vec<KeySet>> = vec![Vec::new(); df.ifaces.len()];
    let mut queued = vec![true; df.components.len()];
    let mut work: std::collections::VecDeque<CompId> =
        (0..df.components.len()).map(|c| CompId(c as u32)).collect();
    while let Some(cid) = work.pop_front() {
        queued[cid.index()] = false;
        let c = df.component(cid);
        for &o in &c.outputs {
            let mut set: BTreeSet<KeySet> = up[o.index()].iter().copied().collect();
            for p in c.paths.iter().filter(|p| p.output == o) {
                for s in &df.iface(p.input).streams {
                    let st = &df.streams[s.index()];
                    match (st.seal, st.from) {
                        (Some(k), _) => {
                            set.insert(k);
                        }
                        (None, Producer::Source(src)) => {
                            let src = &df.sources[src.index()];
                            set.extend(src.seal);
                            if src.seal.is_none() {
                                set.extend(src.sealable.iter().copied());
                            }
                        }
                        (None, Producer::Output(from)) => set.extend(up[from.index()].iter()),
                    }
                }
            }
            if set.len() == up[o.index()].len() {
                continue;
            }
            up[o.index()] = set.into_iter().collect();
            for s in &df.iface(o).streams {
                if let Consumer::Input(i) = df.streams[s.index()].to {
                    let next = df.iface(i).component;
                    if !std::mem::replace(&mut queued[next.index()], true) {
                        work.push_back(next);
                    }
                }
            }
        }
    }
    up
}

/// Every candidate mechanism, cheapest first (ties in a fixed order: seals, keyed, global, by
/// index), from the baseline analysis.
pub fn candidates(
    df: &mut Dataflow,
    base: &analysis::Analysis,
    allowed: Allowed,
) -> Vec<Candidate> {
    // Intersections are interned into the dataflow's own key table, so the candidates' keys
    // mean the same in every later analysis of it.
    let mut keys = std::mem::take(&mut df.keys);
    let out = candidates_with(df, &mut keys, base, allowed);
    df.keys = keys;
    out
}

fn candidates_with(
    df: &Dataflow,
    keys: &mut Keys,
    base: &analysis::Analysis,
    allowed: Allowed,
) -> Vec<Candidate> {
    let mut out = Vec::new();
    // Components whose order-sensitive paths are points of order: ordering can help there.
    // The members of one engine task are ordered together ([`Dataflow::order_group`]), so
    // their points are gathered under the member the choice names.
    let mut ordered_points: BTreeMap<CompId, Vec<(CompId, usize)>> = BTreeMap::new();
    for p in &base.points {
        let path = &df.component(p.component).paths[p.path];
        if !path.annotation.is_confluent() {
            let named = df.order_group(p.component).next().unwrap_or(p.component);
            ordered_points
                .entry(named)
                .or_default()
                .push((p.component, p.path));
        }
    }
    if allowed.seal {
        // The points of order a seal arriving at each input could fix: an `OW` point at its
        // own input, an `OR` point at every writing input of its component.
        let mut at_input: Vec<Vec<usize>> = vec![Vec::new(); df.ifaces.len()];
        for (pi, p) in base.points.iter().enumerate() {
            let c = df.component(p.component);
            let path = &c.paths[p.path];
            match (p.kind, path.annotation) {
                (PointKind::Taint, Annotation::OW) => at_input[path.input.index()].push(pi),
                (
                    PointKind::NdRead,
                    Annotation::CR | Annotation::CW | Annotation::OR | Annotation::OW,
                ) => {
                    for w in c.paths.iter().filter(|w| w.annotation.writes()) {
                        at_input[w.input.index()].push(pi);
                    }
                }
                // A write point on another path is the `Inst` it writes (C003): a seal
                // arriving at its input does not fix it.
                (PointKind::Taint, Annotation::CR | Annotation::CW | Annotation::OR) => {}
            }
        }
        let mut seen = vec![false; df.ifaces.len()];
        let streams = stream_seals(df, keys, base, &at_input, &mut seen);
        // The inputs each stream seal's producer needs sealed, with the key (a source seal
        // within it supports the stream's punctuation, so it is a candidate even where it
        // fixes no point itself: the producer may be ordered already).
        let mut needs: Vec<Vec<(KeySet, CompId)>> = vec![Vec::new(); df.ifaces.len()];
        for c in &streams {
            let Choice::SealStream { stream, key } = c.choice else {
                continue;
            };
            let Producer::Output(o) = df.streams[stream.index()].from else {
                continue;
            };
            let producer = df.iface(o).component;
            for p in df
                .component(producer)
                .paths
                .iter()
                .filter(|p| p.output == o)
            {
                needs[p.input.index()].push((key, producer));
            }
        }
        for (si, src) in df.sources.iter().enumerate() {
            if src.seal.is_some() {
                continue;
            }
            let sid = SourceId(si as u32);
            let reached = reached_inputs(df, &src.streams, &mut seen);
            let mut points: Vec<usize> = reached
                .iter()
                .flat_map(|i| at_input[i.index()].iter().copied())
                .collect();
            points.sort_unstable();
            points.dedup();
            let mut seen_keys = BTreeSet::new();
            for &key in &src.sealable {
                if !seen_keys.insert(key) {
                    continue;
                }
                let mut consumers = consumers_of(df, keys, base, &points, key);
                let supported: Vec<CompId> = reached
                    .iter()
                    .flat_map(|i| &needs[i.index()])
                    .filter(|&&(k, _)| keys.is_subset(key, k))
                    .map(|&(_, producer)| producer)
                    .collect();
                if !supported.is_empty() {
                    consumers.extend(supported);
                    consumers
                        .sort_unstable_by(|&a, &b| df.component(a).name.cmp(&df.component(b).name));
                    consumers.dedup();
                }
                if consumers.is_empty() {
                    continue;
                }
                out.push(Candidate::priced(
                    df,
                    keys,
                    Choice::AddSeal { source: sid, key },
                    consumers,
                ));
            }
        }
        out.extend(streams);
    }
    for (&cid, paths) in &ordered_points {
        if allowed.keyed {
            let gates: Vec<Option<KeySet>> = paths
                .iter()
                .map(|&(c, pi)| match df.component(c).paths[pi].gate {
                    Some(Gate::Keys(k)) => Some(k),
                    _ => None,
                })
                .collect();
            // A new keyed order replaces the existing one, so it must keep protecting every
            // path the existing order protects (this keeps mechanisms monotone): its keys lie
            // within each of their gates. An existing order that protects nothing (its keys
            // lie in no gate) constrains nothing: replacing it costs no protection. A task's
            // order replaces the orders of all its members.
            let protected: Vec<KeySet> = df
                .order_group(cid)
                .map(|m| df.component(m))
                .filter(|c| matches!(c.order, Some(Order::Keys(_))))
                .flat_map(|c| {
                    c.paths
                        .iter()
                        .filter(|p| !p.annotation.is_confluent())
                        .filter_map(|p| match p.gate {
                            Some(g @ Gate::Keys(k)) if c.ordered_for(g, keys) => Some(k),
                            _ => None,
                        })
                })
                .collect();
            let within = protected.into_iter().reduce(|a, b| keys.intersection(a, b));
            let mut keyed: Vec<KeySet> = Vec::new();
            if gates.iter().all(Option::is_some) {
                let mut all = gates[0].unwrap_or(KeySet::EMPTY);
                for g in gates.iter().flatten() {
                    all = keys.intersection(all, *g);
                }
                keyed.push(all);
            }
            for g in gates.iter().flatten() {
                keyed.push(*g);
            }
            let mut seen = BTreeSet::new();
            for mut k in keyed {
                if let Some(w) = within {
                    k = keys.intersection(k, w);
                }
                // Ordering by no key at all is a global order: offered as such.
                if k == KeySet::EMPTY || !seen.insert(k) {
                    continue;
                }
                let choice = Choice::Order {
                    component: cid,
                    order: Order::Keys(k),
                };
                out.push(Candidate::priced(df, keys, choice, Vec::new()));
            }
        }
        if allowed.global
            && df
                .order_group(cid)
                .any(|m| df.component(m).order != Some(Order::Global))
        {
            let choice = Choice::Order {
                component: cid,
                order: Order::Global,
            };
            out.push(Candidate::priced(df, keys, choice, Vec::new()));
        }
    }
    out.sort_by_key(|c| (c.cost, c.kind()));
    out
}
