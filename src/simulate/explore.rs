//! Which executions run: every schedule (depth-first over the delivery choices) when there
//! are few enough, else seeded random ones. The input records are fixed per exploration.

use super::model::{Chooser, Inputs, Model, Outcome, Rec, execute, mix};

/// Most schedules the exhaustive search may take: past it, exploration is random.
pub const EXHAUSTIVE_BOUND: usize = 2000;

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

/// Depth-first enumeration of choice sequences: replays a prefix, then takes the first choice.
#[derive(Default)]
struct Dfs {
    prefix: Vec<usize>,
    widths: Vec<usize>,
    pos: usize,
}

impl Chooser for Dfs {
    fn choose(&mut self, n: usize) -> usize {
        let c = if self.pos < self.prefix.len() {
            self.prefix[self.pos]
        } else {
            self.prefix.push(0);
            0
        };
        self.widths.truncate(self.pos);
        self.widths.push(n);
        self.pos += 1;
        c
    }
}

impl Dfs {
    /// Moves to the next unexplored sequence; false when every sequence was run.
    fn advance(&mut self) -> bool {
        self.prefix.truncate(self.pos);
        self.pos = 0;
        while let Some(last) = self.prefix.pop() {
            let width = self.widths[self.prefix.len()];
            if last + 1 < width {
                self.prefix.push(last + 1);
                return true;
            }
        }
        false
    }
}

/// The default input: per source, three records (attributes all 0, all 1, all 0) with
/// distinct payloads, so that every gate partition of value 0 holds two records.
pub fn default_inputs(m: &Model) -> Inputs {
    (0..m.source_edges.len())
        .map(|s| {
            (0..3u64)
                .map(|t| Rec {
                    attrs: vec![(t % 2) as u8; m.attrs.len()],
                    payload: mix(s as u64 + 1, t + 1),
                })
                .collect()
        })
        .collect()
}

/// How the schedules were chosen, and how many ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Exploration {
    pub schedules: usize,
    pub exhaustive: bool,
}

/// Runs the schedules of `inputs`, handing each execution (None: inconclusive) to `visit`
/// with its index, until `visit` returns false or the schedules run out.
pub fn explore(
    m: &Model,
    inputs: &Inputs,
    schedules: usize,
    seed: u64,
    visit: &mut dyn FnMut(usize, Option<&Outcome>) -> bool,
) -> Exploration {
    let schedules = schedules.max(1);
    // Exhaustive first, while it fits the bound: its executions are kept only if it finishes.
    let bound = schedules.min(EXHAUSTIVE_BOUND);
    let mut dfs = Dfs::default();
    let mut all = Vec::new();
    let mut finished = false;
    while all.len() < bound {
        all.push(execute(m, inputs, &mut dfs));
        if !dfs.advance() {
            finished = true;
            break;
        }
    }
    if finished {
        for (i, o) in all.iter().enumerate() {
            if !visit(i, o.as_ref()) {
                break;
            }
        }
        return Exploration {
            schedules: all.len(),
            exhaustive: true,
        };
    }
    drop(all);
    // The first schedule is the fixed one (always the first enabled delivery), the reference
    // the random ones are compared with.
    let mut run = 0;
    while run < schedules {
        let o = if run == 0 {
            execute(m, inputs, &mut Dfs::default())
        } else {
            let mut rng = SplitMix::new(mix(seed, run as u64));
            execute(m, inputs, &mut rng)
        };
        run += 1;
        if !visit(run - 1, o.as_ref()) {
            break;
        }
    }
    Exploration {
        schedules: run,
        exhaustive: false,
    }
}

/// Re-runs schedule `index` of an exploration with the same parameters.
pub fn replay(
    m: &Model,
    inputs: &Inputs,
    schedules: usize,
    seed: u64,
    index: usize,
) -> Option<Outcome> {
    let mut found = None;
    explore(m, inputs, schedules, seed, &mut |i, o| {
        if i == index {
            found = o.cloned();
            false
        } else {
            true
        }
    });
    found
}
