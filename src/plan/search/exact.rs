//! The exact search: branch and bound over include/exclude decisions, within an evaluation
//! budget.

use std::collections::HashMap;

use crate::plan::candidates::Candidate;
use crate::plan::evaluator::upper_bound;
use crate::plan::labeling::Labeling;
use crate::plan::model::Choice;

/// A set of candidates by index, any number of them: one bit per candidate.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
struct Mask(Vec<u64>);

impl Mask {
    fn empty(n: usize) -> Mask {
        Mask(vec![0; n.div_ceil(64)])
    }

    fn of(n: usize, items: impl IntoIterator<Item = usize>) -> Mask {
        let mut m = Mask::empty(n);
        for i in items {
            m.insert(i);
        }
        m
    }

    fn insert(&mut self, i: usize) {
        self.0[i / 64] |= 1 << (i % 64);
    }

    fn with(&self, i: usize) -> Mask {
        let mut m = self.clone();
        m.insert(i);
        m
    }

    fn contains(&self, i: usize) -> bool {
        self.0[i / 64] & (1 << (i % 64)) != 0
    }

    fn union(&self, other: &Mask) -> Mask {
        Mask(self.0.iter().zip(&other.0).map(|(a, b)| a | b).collect())
    }

    fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }

    /// The members, in increasing order.
    fn indices(&self) -> Vec<usize> {
        let mut out = Vec::new();
        for (w, &word) in self.0.iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                out.push(w * 64 + bits.trailing_zeros() as usize);
                bits &= bits - 1;
            }
        }
        out
    }

    fn first(&self) -> Option<usize> {
        self.0
            .iter()
            .enumerate()
            .find(|(_, w)| **w != 0)
            .map(|(i, w)| i * 64 + w.trailing_zeros() as usize)
    }
}

/// Exact branch and bound over include/exclude decisions, candidates in cost order. A mask
/// holds positions in `members`.
struct Bb<'a> {
    lab: &'a mut Labeling,
    cands: &'a [Candidate],
    members: &'a [usize],
    conflicts: Vec<Mask>,
    memo: HashMap<Mask, bool>,
    best: Option<(u32, Mask)>,
    budget: usize,
    aborted: bool,
}

impl Bb<'_> {
    fn candidate(&self, p: usize) -> &Candidate {
        &self.cands[self.members[p]]
    }

    fn choices(&self, mask: &Mask) -> Vec<Choice> {
        mask.indices()
            .into_iter()
            .map(|p| self.candidate(p).choice)
            .collect()
    }

    fn feasible(&mut self, mask: &Mask) -> bool {
        if let Some(&f) = self.memo.get(mask) {
            return f;
        }
        if self.lab.evaluations >= self.budget {
            self.aborted = true;
            return false;
        }
        let choices = self.choices(mask);
        let f = self.lab.feasible(&choices);
        self.memo.insert(mask.clone(), f);
        f
    }

    fn bound_feasible(&mut self, mask: &Mask) -> bool {
        if self.lab.evaluations >= self.budget {
            self.aborted = true;
            return false;
        }
        let all = self.choices(mask);
        let ub = upper_bound(self.lab.keys_mut(), &all);
        self.lab.feasible_trusting_seals(&ub)
    }

    fn go(&mut self, idx: usize, chosen: Mask, cost: u32, excluded: Mask) {
        if self.aborted || self.best.as_ref().is_some_and(|(b, _)| cost >= *b) {
            return;
        }
        if self.feasible(&chosen) {
            self.best = Some((cost, chosen));
            return;
        }
        let n = self.members.len();
        let remaining = Mask::of(n, (idx..n).filter(|&i| !excluded.contains(i)));
        if remaining.is_empty() {
            return;
        }
        // Another candidate is needed: the cheapest remaining one is a lower bound.
        let cheapest = remaining
            .indices()
            .iter()
            .map(|&i| self.candidate(i).cost)
            .min()
            .unwrap_or(0);
        if self
            .best
            .as_ref()
            .is_some_and(|(b, _)| cost + cheapest >= *b)
        {
            return;
        }
        if !self.bound_feasible(&chosen.union(&remaining)) {
            return;
        }
        let Some(i) = remaining.first() else {
            return;
        };
        let conflicts = self.conflicts[i].clone();
        self.go(
            i + 1,
            chosen.with(i),
            cost + self.candidate(i).cost,
            excluded.union(&conflicts),
        );
        self.go(i + 1, chosen, cost, excluded.with(i));
    }
}

/// The cheapest set of `members` (indices into `cands`, in cost order) that makes every sink
/// safe on top of the labeling's current state (`Some(None)`: none does), or `None` when the
/// budget ran out first. `seed` is a known such set, whose cost bounds the search.
pub(super) fn exact(
    lab: &mut Labeling,
    cands: &[Candidate],
    members: &[usize],
    seed: Option<&[usize]>,
    budget: usize,
) -> Option<Option<Vec<usize>>> {
    let n = members.len();
    let conflicts = members
        .iter()
        .map(|&a| {
            Mask::of(
                n,
                members
                    .iter()
                    .enumerate()
                    .filter(|&(_, &b)| cands[a].choice.conflicts(cands[b].choice))
                    .map(|(q, _)| q),
            )
        })
        .collect();
    let position = |i: usize| members.binary_search(&i).ok();
    let best = seed.map(|s| {
        (
            s.iter().map(|&i| cands[i].cost).sum(),
            Mask::of(n, s.iter().filter_map(|&i| position(i))),
        )
    });
    let mut bb = Bb {
        lab,
        cands,
        members,
        conflicts,
        memo: HashMap::new(),
        best,
        budget,
        aborted: false,
    };
    bb.go(0, Mask::empty(n), 0, Mask::empty(n));
    if bb.aborted {
        return None;
    }
    Some(
        bb.best
            .map(|(_, m)| m.indices().into_iter().map(|p| members[p]).collect()),
    )
}

#[cfg(test)]
mod tests {
    use super::Mask;

    /// Past one word the set is the same set: members in order, union, first.
    #[test]
    fn a_mask_holds_any_number_of_candidates() {
        let m = Mask::of(130, [0, 63, 64, 129]);
        assert_eq!(m.indices(), [0, 63, 64, 129]);
        assert!(m.contains(64) && !m.contains(65));
        assert_eq!(m.first(), Some(0));
        let u = Mask::of(130, [5]).union(&Mask::of(130, [100]));
        assert_eq!(u.indices(), [5, 100]);
        assert_eq!(Mask::of(130, [100]).first(), Some(100));
        assert!(Mask::empty(130).is_empty());
        assert_eq!(Mask::empty(130).first(), None);
    }
}
