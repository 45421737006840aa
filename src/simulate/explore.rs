//! Which executions run: every schedule (depth-first over the delivery choices) when there
//! are few enough, else seeded random ones. The input records are fixed per exploration.

use super::model::{Chooser, Exec, Inputs, Model, Outcome, Rec, execute, mix};

/// SplitMix64, seeded per schedule: the same seed gives the same schedules.
pub(crate) struct SplitMix(u64);

impl SplitMix {
    pub(crate) fn new(seed: u64) -> Self {
        SplitMix(seed)
    }
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

impl Chooser for SplitMix {
    fn choose(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// The default input: per source, three records (attributes all 0, all 1, all 0) with
/// distinct payloads, so that every gate partition of value 0 holds two records; then one
/// record per pattern a keyed order needs (see `keyed_patterns`).
pub fn default_inputs(m: &Model) -> Inputs {
    let patterns = keyed_patterns(m);
    (0..m.source_edges.len())
        .map(|s| {
            let base = (0..3u64).map(|t| vec![(t % 2) as u8; m.attrs.len()]);
            base.chain(patterns.iter().cloned())
                .zip(1u64..)
                .map(|(attrs, t)| Rec {
                    attrs: attrs.into(),
                    payload: mix(s as u64 + 1, t),
                    depth: 0,
                })
                .collect()
        })
        .collect()
}

/// The attribute patterns that make a keyed order's partitions interleave inside one gate
/// partition: for each order-sensitive path of a component ordered by keys `K`, whose gate
/// `G` does not contain `K`, the record that agrees with the all-0 records on `G` and differs
/// on `K \ G`. With all-0 and all-1 records only, two records of one gate partition always
/// share their key partition, and the canonical order within it hides the path's sensitivity.
fn keyed_patterns(m: &Model) -> Vec<Vec<u8>> {
    let mut patterns = std::collections::BTreeSet::new();
    for c in &m.comps {
        let Some(key) = &c.order_key else { continue };
        for p in c.paths.iter().filter(|p| !p.annotation.is_confluent()) {
            let outside: Vec<usize> = key
                .iter()
                .copied()
                .filter(|a| !p.gate.contains(a))
                .collect();
            if outside.is_empty() {
                continue;
            }
            let mut attrs = vec![0u8; m.attrs.len()];
            for a in outside {
                attrs[a] = 1;
            }
            patterns.insert(attrs);
        }
    }
    patterns.into_iter().collect()
}

/// How the schedules were chosen, and how many ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Exploration {
    /// Executions run to their end (or to the delivery budget).
    pub schedules: usize,
    /// Whether every schedule that matters was run: the search visited every distinct state
    /// reachable through choices that do not commute, within its bound.
    pub exhaustive: bool,
    /// States the exhaustive search visited.
    pub states: usize,
}

/// States the exhaustive search may visit per schedule of the budget, and in all.
pub const STATES_PER_SCHEDULE: usize = 10;
pub const MAX_STATES: usize = 200_000;

/// A choice point of the exhaustive search: the state, its choices, the next one to take.
struct Node<'m> {
    exec: Exec<'m>,
    choices: Vec<usize>,
    next: usize,
}

/// Runs the executions of `inputs`, handing each (None: inconclusive) to `visit` with its
/// index, until `visit` returns false or the schedules run out.
///
/// First a depth-first search over the choice points (deliveries that do not commute; see
/// `Model::commutes`), skipping every state already visited; when it finishes within
/// `schedules` executions and `STATES_PER_SCHEDULE * schedules` states, exploration is
/// exhaustive. Otherwise the search stops at half the schedules and seeded random schedules
/// run the rest: each picks uniformly among the choices at every choice point. The first
/// execution always takes the first choice everywhere: the fixed schedule the others are
/// compared with.
pub fn explore(
    m: &Model,
    inputs: &Inputs,
    schedules: usize,
    seed: u64,
    visit: &mut dyn FnMut(usize, Option<&Outcome>) -> bool,
) -> Exploration {
    let schedules = schedules.max(1);
    let state_bound = schedules
        .saturating_mul(STATES_PER_SCHEDULE)
        .min(MAX_STATES);
    let mut run = 0;
    let mut states = 1;
    let mut seen = std::collections::HashSet::new();
    let mut stack: Vec<Node> = Vec::new();
    let mut root = Exec::start(m, inputs);
    match root.advance() {
        None => {
            visit(0, None);
            return Exploration {
                schedules: 1,
                exhaustive: true,
                states,
            };
        }
        Some(choices) if choices.is_empty() => {
            visit(0, Some(&root.finish()));
            return Exploration {
                schedules: 1,
                exhaustive: true,
                states,
            };
        }
        Some(choices) => {
            seen.insert(root.fingerprint());
            stack.push(Node {
                exec: root,
                choices,
                next: 0,
            });
        }
    }
    let limit = if schedules == 1 { 1 } else { schedules / 2 };
    while let Some(top) = stack.last_mut() {
        if top.next == top.choices.len() {
            stack.pop();
            continue;
        }
        if states >= state_bound || run >= limit {
            break;
        }
        let mut child = top.exec.clone();
        child.deliver_at(top.choices[top.next]);
        top.next += 1;
        states += 1;
        match child.advance() {
            None => {
                run += 1;
                if !visit(run - 1, None) {
                    return Exploration {
                        schedules: run,
                        exhaustive: false,
                        states,
                    };
                }
            }
            Some(choices) => {
                if !seen.insert(child.fingerprint()) {
                    continue;
                }
                if choices.is_empty() {
                    run += 1;
                    if !visit(run - 1, Some(&child.finish())) {
                        return Exploration {
                            schedules: run,
                            exhaustive: false,
                            states,
                        };
                    }
                } else {
                    stack.push(Node {
                        exec: child,
                        choices,
                        next: 0,
                    });
                }
            }
        }
    }
    if stack.is_empty() {
        return Exploration {
            schedules: run,
            exhaustive: true,
            states,
        };
    }
    drop(stack);
    drop(seen);
    while run < schedules {
        let mut rng = SplitMix::new(mix(seed, run as u64));
        let o = execute(m, inputs, &mut rng);
        run += 1;
        if !visit(run - 1, o.as_ref()) {
            break;
        }
    }
    Exploration {
        schedules: run,
        exhaustive: false,
        states,
    }
}
