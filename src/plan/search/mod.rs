//! The search: which combination of candidates to add. [`search`] runs the greedy search,
//! splits the candidates into independent parts ([`split`]), and searches each part with the
//! exact branch and bound, seeded with the greedy plan's share of it, when the part has few
//! enough candidates; the others parts are held at their greedy plan meanwhile. The union
//! finishes with the irredundancy pass. Every evaluation is on the incremental [`Labeling`].
//!
//! Must not know: names, reports, or how a mechanism is explained.

mod bound;
mod exact;
mod greedy;
mod irredundant;
mod split;

pub(super) use irredundant::apply_all;

use super::Options;
use super::candidates::Candidate;
use super::labeling::Labeling;
use super::model::{Choice, Part, SearchMode};
use crate::graph::SinkId;

use exact::exact;
use greedy::greedy_plan;
use irredundant::irredundant;

/// The planner's result before naming: the chosen candidate indices.
pub(super) struct Chosen {
    pub indices: Vec<usize>,
    /// `Exact` when every part is; otherwise `Greedy` when a part had more candidates than
    /// the limit, and `GreedyBudget` when only budgets ran out.
    pub mode: SearchMode,
    pub parts: Vec<Part>,
}

pub(super) fn choices_of(cands: &[Candidate], idx: &[usize]) -> Vec<Choice> {
    idx.iter().map(|&i| cands[i].choice).collect()
}

fn total_cost(cands: &[Candidate], idx: &[usize]) -> u32 {
    idx.iter().map(|&i| cands[i].cost).sum()
}

/// The cheapest plan the search finds, or `None` when no combination of candidates repairs
/// every sink.
pub(super) fn search(lab: &mut Labeling, cands: &[Candidate], options: &Options) -> Option<Chosen> {
    let failing = lab.failing_sinks();
    let greedy_plan = greedy_plan(lab, cands);
    let Some(greedy_plan) = greedy_plan else {
        return search_whole(lab, cands, options);
    };
    let split = split::parts(lab.dataflow(), cands, &failing);
    let mut in_greedy = vec![false; cands.len()];
    for &i in &greedy_plan {
        in_greedy[i] = true;
    }
    let several = split.groups.len() > 1;
    let origin = lab.checkpoint();
    if several {
        // Every part is searched with the others at their greedy plan: their sinks safe and
        // fixed, so a part's plan is judged by its own sinks alone.
        apply_all(lab, &choices_of(cands, &greedy_plan));
    }
    let mut indices = Vec::new();
    let mut solved: Vec<(Vec<usize>, SearchMode)> = Vec::new();
    for members in &split.groups {
        let seed: Vec<usize> = members.iter().copied().filter(|&i| in_greedy[i]).collect();
        let (chosen, mode) = if members.len() > options.exact_limit {
            (seed, SearchMode::Greedy)
        } else {
            let cp = lab.checkpoint();
            if several {
                for &i in &seed {
                    lab.revert(cands[i].choice);
                }
                lab.set_exact(true);
            }
            let budget = lab.evaluations + options.evaluation_budget;
            let found = exact(lab, cands, members, Some(&seed), budget);
            lab.rollback(cp);
            if several {
                lab.set_exact(false);
            }
            match found {
                Some(Some(best)) => (best, SearchMode::Exact),
                // The seed repairs the part, so the exact search always has a plan; kept
                // as the greedy one should it not.
                Some(None) | None => (seed, SearchMode::GreedyBudget),
            }
        };
        indices.extend_from_slice(&chosen);
        solved.push((chosen, mode));
    }
    lab.rollback(origin);
    lab.set_exact(true);
    indices.sort_unstable();
    let mode = overall(solved.iter().map(|(_, m)| *m));
    let indices = if solved.iter().any(|(_, m)| *m == SearchMode::Exact) {
        irredundant(lab, cands, indices)
    } else {
        indices
    };
    let mut kept = vec![false; cands.len()];
    for &i in &indices {
        kept[i] = true;
    }
    let mut sinks_of: Vec<Vec<SinkId>> = vec![Vec::new(); split.groups.len()];
    for &k in &failing {
        if let Some(g) = split.group_of_sink[k.index()] {
            sinks_of[g].push(k);
        }
    }
    let parts = split
        .groups
        .iter()
        .zip(solved)
        .zip(sinks_of)
        .map(|((members, (_, mode)), sinks)| {
            let cost = members
                .iter()
                .filter(|&&i| kept[i])
                .map(|&i| cands[i].cost)
                .sum();
            let lower_bound = if mode == SearchMode::Exact {
                cost
            } else {
                bound::lower_bound(lab.dataflow(), cands, members, &sinks)
            };
            Part {
                candidates: members.len(),
                mode,
                sinks,
                cost,
                lower_bound,
            }
        })
        .collect();
    Some(Chosen {
        indices,
        mode,
        parts,
    })
}

/// When the greedy search finds no plan: the exact search over every candidate at once, if
/// they are few enough, may still find one.
fn search_whole(lab: &mut Labeling, cands: &[Candidate], options: &Options) -> Option<Chosen> {
    if cands.len() > options.exact_limit {
        return None;
    }
    let budget = lab.evaluations + options.evaluation_budget;
    let all: Vec<usize> = (0..cands.len()).collect();
    let found = exact(lab, cands, &all, None, budget)??;
    let indices = irredundant(lab, cands, found);
    let cost = total_cost(cands, &indices);
    let sinks = lab.failing_sinks();
    Some(Chosen {
        indices,
        mode: SearchMode::Exact,
        parts: vec![Part {
            candidates: cands.len(),
            mode: SearchMode::Exact,
            sinks,
            cost,
            lower_bound: cost,
        }],
    })
}

/// The mode of the whole search from its parts'.
fn overall(modes: impl Iterator<Item = SearchMode>) -> SearchMode {
    modes.fold(SearchMode::Exact, |acc, m| match (acc, m) {
        (SearchMode::Greedy, _) | (_, SearchMode::Greedy) => SearchMode::Greedy,
        (SearchMode::GreedyBudget, _) | (_, SearchMode::GreedyBudget) => SearchMode::GreedyBudget,
        _ => SearchMode::Exact,
    })
}
