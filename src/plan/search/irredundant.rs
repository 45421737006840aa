//! Irredundancy: drop every mechanism the plan does not need.

use super::choices_of;
use crate::plan::candidates::Candidate;
use crate::plan::labeling::Labeling;
use crate::plan::model::Choice;

/// Drops mechanisms (dearest first) whose removal keeps every sink safe. `idx` must be a
/// feasible set of candidates, one per source and component.
pub(super) fn irredundant(
    lab: &mut Labeling,
    cands: &[Candidate],
    mut idx: Vec<usize>,
) -> Vec<usize> {
    let origin = lab.checkpoint();
    apply_all(lab, &choices_of(cands, &idx));
    let mut order = idx.clone();
    order.sort_by_key(|&i| std::cmp::Reverse((cands[i].cost, i)));
    let mut dropped = vec![false; cands.len()];
    for i in order {
        dropped[i] = lab.revert_if_safe(cands[i].choice);
    }
    lab.rollback(origin);
    lab.set_exact(true);
    idx.retain(|&i| !dropped[i]);
    idx.sort_unstable();
    idx
}

/// Applies `choices` and leaves the labels exact, in a mode where removing one of them again
/// is evaluated exactly without re-solving cycles (it only raises labels; see
/// [`Labeling::set_exact`]): cheap for the irredundancy pass and the explanations.
pub(in crate::plan) fn apply_all(lab: &mut Labeling, choices: &[Choice]) {
    lab.set_exact(false);
    for &c in choices {
        lab.apply(c);
    }
    lab.reanchor();
}
