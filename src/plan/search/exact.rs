//! The exact search: branch and bound over include/exclude decisions, within an evaluation
//! budget.

use std::collections::HashMap;

use super::{choices_of, total_cost};
use crate::plan::candidates::Candidate;
use crate::plan::evaluator::upper_bound;
use crate::plan::labeling::Labeling;

/// Exact branch and bound over include/exclude decisions, candidates in cost order.
struct Bb<'a> {
    lab: &'a mut Labeling,
    cands: &'a [Candidate],
    conflicts: Vec<u64>,
    memo: HashMap<u64, bool>,
    best: Option<(u32, u64)>,
    budget: usize,
    aborted: bool,
}

impl Bb<'_> {
    fn indices(mask: u64) -> Vec<usize> {
        (0..64).filter(|i| mask & (1 << i) != 0).collect()
    }

    fn feasible(&mut self, mask: u64) -> bool {
        if let Some(&f) = self.memo.get(&mask) {
            return f;
        }
        if self.lab.evaluations >= self.budget {
            self.aborted = true;
            return false;
        }
        let f = self
            .lab
            .feasible(&choices_of(self.cands, &Self::indices(mask)));
        self.memo.insert(mask, f);
        f
    }

    fn bound_feasible(&mut self, mask: u64) -> bool {
        if self.lab.evaluations >= self.budget {
            self.aborted = true;
            return false;
        }
        let all = choices_of(self.cands, &Self::indices(mask));
        let ub = upper_bound(self.lab.keys_mut(), &all);
        self.lab.feasible_trusting_seals(&ub)
    }

    fn go(&mut self, idx: usize, chosen: u64, cost: u32, excluded: u64) {
        if self.aborted || self.best.is_some_and(|(b, _)| cost >= b) {
            return;
        }
        if self.feasible(chosen) {
            self.best = Some((cost, chosen));
            return;
        }
        let n = self.cands.len();
        let remaining: u64 = (idx..n)
            .filter(|&i| excluded & (1 << i) == 0)
            .fold(0, |m, i| m | (1 << i));
        if remaining == 0 {
            return;
        }
        // Another candidate is needed: the cheapest remaining one is a lower bound.
        let cheapest = Self::indices(remaining)
            .iter()
            .map(|&i| self.cands[i].cost)
            .min()
            .unwrap_or(0);
        if self.best.is_some_and(|(b, _)| cost + cheapest >= b) {
            return;
        }
        if !self.bound_feasible(chosen | remaining) {
            return;
        }
        let i = remaining.trailing_zeros() as usize;
        self.go(
            i + 1,
            chosen | (1 << i),
            cost + self.cands[i].cost,
            excluded | self.conflicts[i],
        );
        self.go(i + 1, chosen, cost, excluded | (1 << i));
    }
}

/// The cheapest feasible set of candidates (`Some(None)`: none is feasible), or `None` when
/// the budget ran out first. `seed` is a known plan, whose cost bounds the search.
pub(super) fn exact(
    lab: &mut Labeling,
    cands: &[Candidate],
    seed: Option<&[usize]>,
    budget: usize,
) -> Option<Option<Vec<usize>>> {
    let conflicts = cands
        .iter()
        .map(|a| {
            cands
                .iter()
                .enumerate()
                .filter(|(_, b)| a.choice.conflicts(b.choice))
                .fold(0u64, |m, (j, _)| m | (1 << j))
        })
        .collect();
    let best = seed.map(|s| {
        (
            total_cost(cands, s),
            s.iter().fold(0u64, |m, &i| m | (1 << i)),
        )
    });
    let mut bb = Bb {
        lab,
        cands,
        conflicts,
        memo: HashMap::new(),
        best,
        budget,
        aborted: false,
    };
    bb.go(0, 0, 0, 0);
    if bb.aborted {
        return None;
    }
    Some(bb.best.map(|(_, m)| Bb::indices(m)))
}
