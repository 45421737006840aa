//! The search: which combination of candidates to add. [`search`] runs the greedy search,
//! then, with few enough candidates, the exact branch and bound seeded with it; both finish
//! with the irredundancy pass. Every evaluation is on the incremental [`Labeling`].
//!
//! Must not know: names, reports, or how a mechanism is explained.

mod exact;
mod greedy;
mod irredundant;

pub(super) use irredundant::apply_all;

use super::Options;
use super::candidates::Candidate;
use super::labeling::Labeling;
use super::model::{Choice, SearchMode};

use exact::exact;
use greedy::greedy_plan;
use irredundant::irredundant;

/// The planner's result before naming: the chosen candidate indices.
pub(super) struct Chosen {
    pub indices: Vec<usize>,
    pub mode: SearchMode,
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
    let greedy_plan = greedy_plan(lab, cands);
    if cands.len() > options.exact_limit.min(63) {
        return greedy_plan.map(|indices| Chosen {
            indices,
            mode: SearchMode::Greedy,
        });
    }
    let budget = lab.evaluations + options.evaluation_budget;
    match exact(lab, cands, greedy_plan.as_deref(), budget) {
        Some(found) => found.map(|indices| Chosen {
            indices: irredundant(lab, cands, indices),
            mode: SearchMode::Exact,
        }),
        None => greedy_plan.map(|indices| Chosen {
            indices,
            mode: SearchMode::GreedyBudget,
        }),
    }
}
