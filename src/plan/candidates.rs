//! Candidate generation: every mechanism that could fix a point of order of the baseline
//! analysis (an add-seal, a keyed order, a global order), each with its cost.

use std::collections::{BTreeMap, BTreeSet};

use crate::analysis::{self, PointKind};
use crate::graph::{CompId, Consumer, Dataflow, IfaceId, Order, SourceId};
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
}

/// Inputs reached from a source through streams and confluent paths, ignoring joins with
/// other streams (an over-approximation of where its seal can arrive). Streams that declare
/// their own seal replace the label, so the walk stops there. `seen` is scratch space, all
/// false on entry and on return.
fn reached_inputs(df: &Dataflow, source: SourceId, seen: &mut [bool]) -> Vec<IfaceId> {
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
    follow(&df.sources[source.index()].streams, &mut stack);
    while let Some(i) = stack.pop() {
        if std::mem::replace(&mut seen[i.index()], true) {
            continue;
        }
        out.push(i);
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
    out
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
        for (si, src) in df.sources.iter().enumerate() {
            if src.seal.is_some() {
                continue;
            }
            let sid = SourceId(si as u32);
            let reached = reached_inputs(df, sid, &mut seen);
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
                let mut consumers: Vec<CompId> = Vec::new();
                for &pi in &points {
                    let p = &base.points[pi];
                    let gate = df.component(p.component).paths[p.path].gate;
                    if gate.unwrap_or(Gate::Star).compatible(key, keys) {
                        consumers.push(p.component);
                    }
                }
                if consumers.is_empty() {
                    continue;
                }
                consumers
                    .sort_unstable_by(|&a, &b| df.component(a).name.cmp(&df.component(b).name));
                consumers.dedup();
                let choice = Choice::AddSeal { source: sid, key };
                out.push(Candidate {
                    choice,
                    cost: cost(df, keys, choice, consumers.len()),
                    consumers,
                });
            }
        }
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
                out.push(Candidate {
                    choice,
                    cost: cost(df, keys, choice, 0),
                    consumers: Vec::new(),
                });
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
            out.push(Candidate {
                choice,
                cost: cost(df, keys, choice, 0),
                consumers: Vec::new(),
            });
        }
    }
    out.sort_by_key(|c| (c.cost, c.kind()));
    out
}
