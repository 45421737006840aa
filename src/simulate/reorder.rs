//! Shrinking a witness in reordered deliveries: after its input is shrunk to the fewest
//! records, the second execution (or the second instance's deliveries) is moved back, one
//! delivery at a time, to the order of the first, as long as the observation survives. What
//! is left differs from the first execution in as few deliveries as this greedy search finds.

use std::collections::HashMap;

use super::model::{Delivery, Exec, Inputs, Model, Outcome};
use super::observe::{Evidence, Observed, Observer};

/// Most executions the shrinking replays per witness (fewer when the exploration ran fewer
/// schedules: shrinking never costs more than the search that found the witness).
pub const REORDER_REPLAYS: usize = 500;

fn positions(order: &[Delivery]) -> HashMap<&Delivery, usize> {
    let mut pos = HashMap::with_capacity(order.len());
    for (i, d) in order.iter().enumerate() {
        pos.entry(d).or_insert(i);
    }
    pos
}

/// Replays the execution that, at every choice point, makes the delivery that comes first in
/// `order`; where none of the choices is in it, the first choice (the reference schedule's).
pub fn replay(m: &Model, inputs: &Inputs, order: &[Delivery]) -> Option<Outcome> {
    let pos = positions(order);
    let mut x = Exec::start(m, inputs);
    loop {
        let choices = x.advance()?;
        let Some(&first) = choices.first() else {
            return Some(x.finish());
        };
        let pick = choices
            .iter()
            .copied()
            .min_by_key(|&i| {
                x.choice(i)
                    .and_then(|d| pos.get(&d).copied())
                    .unwrap_or(usize::MAX)
            })
            .unwrap_or(first);
        x.deliver_at(pick);
    }
}

/// How many deliveries of `moving` are out of the order of `reference`: of the deliveries
/// both make, all but a longest run that `moving` makes in `reference`'s order.
pub fn reordered(reference: &[Delivery], moving: &[Delivery]) -> usize {
    let pos = positions(reference);
    let ranks: Vec<usize> = moving.iter().filter_map(|d| pos.get(d).copied()).collect();
    // Longest increasing subsequence, by patience sorting.
    let mut tails: Vec<usize> = Vec::new();
    for r in &ranks {
        let at = tails.partition_point(|t| t < r);
        if at == tails.len() {
            tails.push(*r);
        } else {
            tails[at] = *r;
        }
    }
    ranks.len() - tails.len()
}

/// The two delivery sequences a witness compares: the first execution's and the second's, or
/// (for two instances) the first instance's at the component (named as the second) and the
/// second instance's.
pub fn compared(ev: &Evidence) -> (Vec<Delivery>, Vec<Delivery>) {
    match ev {
        Evidence::Runs(pair) => (pair[0].1.trace.clone(), pair[1].1.trace.clone()),
        Evidence::Instances {
            outcome,
            comp,
            other,
            ..
        } => {
            let at = |k: usize| {
                outcome
                    .trace
                    .iter()
                    .filter(|d| d.comp == *comp && d.instance == k)
                    .map(|d| Delivery {
                        instance: *other,
                        ..d.clone()
                    })
                    .collect::<Vec<_>>()
            };
            (at(0), at(*other))
        }
    }
}

/// The order to replay for the second side `moved`: itself for two executions; for two
/// instances, the execution's deliveries with the second instance's, at the component, in
/// the order of `moved`.
fn target(ev: &Evidence, moved: &[Delivery]) -> Vec<Delivery> {
    match ev {
        Evidence::Runs(_) => moved.to_vec(),
        Evidence::Instances {
            outcome,
            comp,
            other,
            ..
        } => {
            let mut next = moved.iter();
            outcome
                .trace
                .iter()
                .map(|d| {
                    if d.comp == *comp && d.instance == *other {
                        next.next().unwrap_or(d).clone()
                    } else {
                        d.clone()
                    }
                })
                .collect()
        }
    }
}

/// The evidence a replay gives, if it still shows `level` at `sink` (for two instances, in
/// the same component).
fn still_shows(
    m: &Model,
    ev: &Evidence,
    replayed: Outcome,
    sink: usize,
    level: Observed,
) -> Option<Evidence> {
    match ev {
        Evidence::Runs(pair) => (pair[0].1.sinks[sink] != replayed.sinks[sink])
            .then(|| Evidence::Runs(Box::new([pair[0].clone(), (pair[1].0, replayed)]))),
        Evidence::Instances { run, comp, .. } => {
            let mut obs = Observer::new(m);
            obs.add(*run, Some(&replayed));
            let s = obs.sinks.swap_remove(sink);
            match s.evidence {
                Some(e @ Evidence::Instances { comp: c, .. })
                    if s.observed == level && c == *comp =>
                {
                    Some(e)
                }
                _ => None,
            }
        }
    }
}

/// Moves the second side's deliveries back to the first side's order, one at a time (each
/// to just before the first delivery that comes after it in the first side's order), keeping
/// a move when the observation survives it and fewer deliveries are out of order, within
/// `max_replays` executions. Returns the evidence, and whether it changed.
pub fn shrink(
    m: &Model,
    inputs: &Inputs,
    sink: usize,
    level: Observed,
    evidence: Evidence,
    max_replays: usize,
) -> (Evidence, bool) {
    let mut ev = evidence;
    let mut changed = false;
    let mut replays = 0;
    'improve: loop {
        let (reference, moving) = compared(&ev);
        let now = reordered(&reference, &moving);
        if now == 0 {
            break;
        }
        let pos = positions(&reference);
        for j in 0..moving.len() {
            let Some(&rank) = pos.get(&moving[j]) else {
                continue;
            };
            let mut moved = moving.clone();
            let d = moved.remove(j);
            let at = moved
                .iter()
                .position(|e| pos.get(e).is_some_and(|&q| q > rank))
                .unwrap_or(moved.len());
            moved.insert(at, d);
            if moved == moving {
                continue;
            }
            if replays >= max_replays {
                break 'improve;
            }
            replays += 1;
            let Some(o) = replay(m, inputs, &target(&ev, &moved)) else {
                continue;
            };
            if let Some(next) = still_shows(m, &ev, o, sink, level) {
                let (r, t) = compared(&next);
                if reordered(&r, &t) < now {
                    ev = next;
                    changed = true;
                    continue 'improve;
                }
            }
        }
        break;
    }
    (ev, changed)
}
