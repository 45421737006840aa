//! A lower bound on the cost of a part the exact search did not finish: what lets a greedy
//! plan say how far from the cheapest it can be.
//!
//! Why it is a bound: a failing sink passes only once some candidate that reaches it is in
//! the plan (nothing else changes its label). So the cheapest candidate reaching a sink is a
//! bound, and so is the sum of the cheapest over sinks whose reaching candidates are
//! disjoint (each needs one of its own). Any such set of sinks gives a valid bound, so the
//! packing may stop early, and it may call two sinks overlapping when they are not.
//!
//! How, in time linear in the graph (plus a budget): the cheapest candidate reaching each
//! vertex comes from walks downstream in order of cost, each stopping where a cheaper walk
//! already passed. The packing takes sinks dearest first and walks upstream from each: a
//! sink whose walk meets the region of a sink already taken is skipped (their candidates
//! may overlap), otherwise its region is claimed. Skipped walks can repeat work, so the
//! packing stops after a few times the graph's size in steps.
//!
//! Must not know: how a part is searched, or which candidate a plan takes.

use petgraph::Direction;
use petgraph::graph::NodeIndex;

use super::split::starts;
use crate::graph::{Dataflow, SinkId};
use crate::plan::candidates::Candidate;

/// Steps of the packing's upstream walks, in multiples of the graph's vertices and edges.
const PACKING_BUDGET: usize = 4;

/// No plan repairs `sinks` with fewer than this spent on `members` (see the module's
/// documentation).
pub(super) fn lower_bound(
    df: &Dataflow,
    cands: &[Candidate],
    members: &[usize],
    sinks: &[SinkId],
) -> u32 {
    let cheapest = cheapest_reaching(df, cands, members);
    let cost_of = |k: SinkId| cheapest[df.sink_vertex[k.index()].index()].unwrap_or(0);
    let single = sinks.iter().map(|&k| cost_of(k)).max().unwrap_or(0);

    let mut order: Vec<SinkId> = sinks.to_vec();
    order.sort_by_key(|&k| (std::cmp::Reverse(cost_of(k)), k));
    let mut owner = vec![false; df.graph.node_count()];
    let mut budget = PACKING_BUDGET * (df.graph.node_count() + df.graph.edge_count());
    let mut seen = vec![false; df.graph.node_count()];
    let mut region: Vec<NodeIndex> = Vec::new();
    let mut stack: Vec<NodeIndex> = Vec::new();
    let mut packed = 0;
    for k in order {
        let mut overlaps = false;
        stack.push(df.sink_vertex[k.index()]);
        while let Some(v) = stack.pop() {
            if owner[v.index()] {
                overlaps = true;
                break;
            }
            if std::mem::replace(&mut seen[v.index()], true) {
                continue;
            }
            region.push(v);
            for u in df.graph.neighbors_directed(v, Direction::Incoming) {
                budget = budget.saturating_sub(1);
                stack.push(u);
            }
        }
        stack.clear();
        for &v in &region {
            seen[v.index()] = false;
            if !overlaps {
                owner[v.index()] = true;
            }
        }
        budget = budget.saturating_sub(region.len());
        region.clear();
        if !overlaps {
            packed += cost_of(k);
        }
        if budget == 0 {
            break;
        }
    }
    packed.max(single)
}

/// Per vertex, the cost of the cheapest of `members` whose walk downstream reaches it.
fn cheapest_reaching(df: &Dataflow, cands: &[Candidate], members: &[usize]) -> Vec<Option<u32>> {
    let mut by_cost: Vec<usize> = members.to_vec();
    by_cost.sort_by_key(|&i| (cands[i].cost, i));
    let mut cheapest: Vec<Option<u32>> = vec![None; df.graph.node_count()];
    let mut stack: Vec<NodeIndex> = Vec::new();
    for i in by_cost {
        stack.extend(starts(df, cands[i].choice));
        while let Some(v) = stack.pop() {
            // A walk in cost order stops where an earlier (no dearer) walk passed: everything
            // downstream of that vertex already has its cheapest.
            if cheapest[v.index()].is_none() {
                cheapest[v.index()] = Some(cands[i].cost);
                stack.extend(df.graph.neighbors_directed(v, Direction::Outgoing));
            }
        }
    }
    cheapest
}
