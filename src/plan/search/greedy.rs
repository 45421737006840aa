//! The greedy search: lazy, by gain per unit of cost, from nothing and from every source's
//! cheapest seal.

use std::collections::BinaryHeap;

use crate::graph::{Dataflow, Order};

use super::irredundant::irredundant;
use super::total_cost;
use crate::plan::candidates::Candidate;
use crate::plan::labeling::Labeling;
use crate::plan::model::Choice;
use crate::plan::scoring::{Score, weight};

/// A candidate in the lazy greedy's heap: its gain per unit of cost as last evaluated
/// (`None`: never evaluated, which sorts first), and the round that evaluation was made in.
/// Ties go to the lower candidate index, so the search is deterministic.
#[derive(Clone, Copy, Debug)]
struct Entry {
    gain: Option<(u64, u64)>,
    index: usize,
    round: usize,
}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        use std::cmp::Ordering;
        let by_gain = match (self.gain, other.gain) {
            (None, None) => Ordering::Equal,
            (None, Some(_)) => Ordering::Greater,
            (Some(_), None) => Ordering::Less,
            (Some((b1, d1)), Some((b2, d2))) => {
                (u128::from(b1) * u128::from(d2)).cmp(&(u128::from(b2) * u128::from(d1)))
            }
        };
        by_gain.then(other.index.cmp(&self.index))
    }
}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for Entry {}

/// Whether choice `a` protects strictly more than `b` on the same source or component: a
/// global order more than a keyed one, an order or seal by fewer keys more than by more
/// (an order by K protects every gate containing K; a seal by K is compatible with every
/// gate containing K).
fn stronger(df: &Dataflow, a: Choice, b: Choice) -> bool {
    match (a, b) {
        (Choice::Order { order: x, .. }, Choice::Order { order: y, .. }) => match (x, y) {
            (Order::Global, Order::Keys(_)) => true,
            (Order::Keys(k), Order::Keys(l)) => k != l && df.keys.is_subset(k, l),
            _ => false,
        },
        (Choice::AddSeal { key: k, .. }, Choice::AddSeal { key: l, .. }) => {
            k != l && df.keys.is_subset(k, l)
        }
        // Not for a stream's seals: a seal by more keys may be one its producer can punctuate
        // where the stronger one is not, so the weaker one can gain.
        _ => false,
    }
}

/// Which chosen candidate sits on each source, stream and component: a new choice there
/// replaces it.
struct Slots {
    source: Vec<Option<usize>>,
    stream: Vec<Option<usize>>,
    component: Vec<Option<usize>>,
}

impl Slots {
    fn new(df: &Dataflow) -> Self {
        Slots {
            source: vec![None; df.sources.len()],
            stream: vec![None; df.streams.len()],
            component: vec![None; df.components.len()],
        }
    }

    fn get(&self, choice: Choice) -> Option<usize> {
        match choice {
            Choice::AddSeal { source, .. } => self.source[source.index()],
            Choice::SealStream { stream, .. } => self.stream[stream.index()],
            Choice::Order { component, .. } => self.component[component.index()],
        }
    }

    fn slot(&mut self, choice: Choice) -> &mut Option<usize> {
        match choice {
            Choice::AddSeal { source, .. } => &mut self.source[source.index()],
            Choice::SealStream { stream, .. } => &mut self.stream[stream.index()],
            Choice::Order { component, .. } => &mut self.component[component.index()],
        }
    }
}

/// Greedy: repeatedly take the move (add a candidate, replacing the one on the same source or
/// component) that lowers the [`weight`] of the score the most per unit of added cost.
///
/// Lazy evaluation: a candidate's gain ratio from an earlier round is kept as an estimate in
/// a max-heap; the top is re-evaluated until the top is fresh (evaluated this round), which
/// is then the best move. Gains rarely grow as the plan grows, so this usually takes the same
/// step as trying every candidate, at a fraction of the evaluations. Where a gain did grow,
/// the step is still a valid, verified move; only its greediness is approximate. Every move
/// lowers the weight, so the search ends.
///
/// Moves are evaluated and taken on over-approximate labels ([`Labeling::set_exact`]): a cycle
/// may keep a label it only held up by itself, so a gain can be underestimated but never
/// overestimated, and "every sink is safe" is proven when reached. When no move seems to
/// gain, the labels are made exact and every estimate refreshed; then, still stuck, the
/// estimates are refreshed with exact trials before the search gives up.
fn greedy(lab: &mut Labeling, cands: &[Candidate], start: &[usize]) -> Option<Vec<usize>> {
    let origin = lab.checkpoint();
    lab.set_exact(false);
    let mut slots = Slots::new(lab.dataflow());
    let mut chosen = vec![false; cands.len()];
    for &i in start {
        lab.apply(cands[i].choice);
        if let Some(old) = slots.slot(cands[i].choice).replace(i) {
            chosen[old] = false;
        }
        chosen[i] = true;
    }
    let mut score = lab.score();
    let mut heap: BinaryHeap<Entry> = (0..cands.len())
        .filter(|&i| !chosen[i])
        .map(|index| Entry {
            gain: None,
            index,
            round: 0,
        })
        .collect();
    let mut round = 1;
    let mut stuck = 0;
    let mut found = true;
    // What moving to candidate `i` gains (lower weight) for what it adds to the cost.
    let gain = |lab: &mut Labeling, slots: &Slots, score: Score, i: usize| {
        let choice = cands[i].choice;
        let replaced = slots.get(choice);
        let delta = (i64::from(cands[i].cost) - i64::from(replaced.map_or(0, |j| cands[j].cost)))
            .max(1) as u64;
        // A weaker replacement only raises labels (monotonicity): it cannot gain.
        if let Some(j) = replaced
            && stronger(lab.dataflow(), cands[j].choice, choice)
        {
            return (0, delta);
        }
        let s = lab.trial(choice);
        (weight(score).saturating_sub(weight(s)), delta)
    };
    while score.0 > 0 {
        let Some(top) = heap.pop() else {
            found = false;
            break;
        };
        let i = top.index;
        if chosen[i] {
            continue;
        }
        let choice = cands[i].choice;
        if top.round == round {
            if top.gain.is_none_or(|(b, _)| b == 0) {
                // The best fresh move gains nothing. Estimates of nothing may be outdated
                // or underestimated: sharpen the labels, then the trials, re-evaluating
                // every estimate each time, before giving up.
                match stuck {
                    0 => {
                        lab.reanchor();
                        score = lab.score();
                        if score.0 == 0 {
                            break;
                        }
                    }
                    1 => lab.set_exact(true),
                    _ => {
                        found = false;
                        break;
                    }
                }
                stuck += 1;
                round += 1;
                heap = std::mem::take(&mut heap)
                    .into_iter()
                    .chain([top])
                    .filter(|e| !chosen[e.index])
                    .map(|e| Entry {
                        gain: Some(gain(lab, &slots, score, e.index)),
                        index: e.index,
                        round,
                    })
                    .collect();
                continue;
            }
            lab.apply(choice);
            chosen[i] = true;
            if let Some(old) = slots.slot(choice).replace(i) {
                chosen[old] = false;
                heap.push(Entry {
                    gain: None,
                    index: old,
                    round: 0,
                });
            }
            score = lab.score();
            round += 1;
            stuck = 0;
            lab.set_exact(false);
            continue;
        }
        heap.push(Entry {
            gain: Some(gain(lab, &slots, score, i)),
            index: i,
            round,
        });
    }
    let out: Vec<usize> = (0..cands.len()).filter(|&i| chosen[i]).collect();
    lab.rollback(origin);
    lab.set_exact(true);
    found.then_some(out)
}

/// The greedy plan: the cheaper (after irredundancy) of two greedy runs, one from nothing
/// and one from every source's cheapest seal. The second exists because greedy steps are
/// myopic: where a point of order needs the seals of two sources, no single seal fixes
/// anything and an order always looks better, although sealing every source (then dropping
/// the seals that are not needed) can be much cheaper.
pub(super) fn greedy_plan(lab: &mut Labeling, cands: &[Candidate]) -> Option<Vec<usize>> {
    let plain = greedy(lab, cands, &[]).map(|g| irredundant(lab, cands, g));
    let mut seals: Vec<usize> = Vec::new();
    let mut sealed_source = vec![false; lab.dataflow().sources.len()];
    for (i, c) in cands.iter().enumerate() {
        if let Choice::AddSeal { source, .. } = c.choice
            && !std::mem::replace(&mut sealed_source[source.index()], true)
        {
            seals.push(i);
        }
    }
    if seals.is_empty() {
        return plain;
    }
    let sealed = greedy(lab, cands, &seals).map(|g| irredundant(lab, cands, g));
    match (plain, sealed) {
        (Some(a), Some(b)) if total_cost(cands, &b) < total_cost(cands, &a) => Some(b),
        (Some(a), _) => Some(a),
        (None, b) => b,
    }
}
