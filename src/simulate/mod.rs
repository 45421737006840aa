//! `blazes simulate`: the dataflow executed under adversarial schedules, as an independent
//! check of the analysis. The executable meaning of a spec and its limits are in
//! `docs/simulation.md`.
//!
//! - `model`: the dataflow compiled for execution: records, paths, seals, orders, replicas;
//! - `exec`: one execution (and `paths`: what a delivered record does);
//! - `explore`: which schedules run (exhaustive under a bound, else seeded random);
//! - `observe`: what each sink is observed to receive (`Run`, `Inst`, `Diverge`);
//! - `witness`: the evidence of an observation, shrunk and made readable (`reorder`: shrunk
//!   in reordered deliveries);
//! - `verify`: a plan verified by execution (the spec with the plan in force, simulated).
//!
//! Must not know: files, output formats. Never prints.

pub mod exec;
pub mod explore;
pub mod model;
pub mod observe;
mod paths;
pub mod reorder;
pub mod verify;
pub mod witness;

use crate::analysis::Analysis;
use crate::graph::Dataflow;
use crate::label::{FailOn, Label};

pub use model::Knobs;
pub use observe::Observed;
pub use witness::{Side, Witness};

/// Default number of schedules.
pub const DEFAULT_SCHEDULES: usize = 10_000;
/// Default number of instances of a replicated component.
pub const DEFAULT_REPLICAS: usize = 2;

#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Options {
    pub replicas: usize,
    pub schedules: usize,
    pub seed: u64,
    /// Shrink witnesses (costs up to [`witness::SHRINK_SCHEDULES`] schedules per record).
    pub shrink: bool,
    pub knobs: Knobs,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            replicas: DEFAULT_REPLICAS,
            schedules: DEFAULT_SCHEDULES,
            seed: 1,
            shrink: true,
            knobs: Knobs::default(),
        }
    }
}

blazes_plan::setters!(Options {
    /// Instances of each replicated component (default: 2).
    replicas: usize,
    /// Schedules to run at most (default: 10,000).
    schedules: usize,
    /// The seed of the schedules (default: 1).
    seed: u64,
    /// Whether witnesses are shrunk (default: true).
    shrink: bool,
    /// Mechanisms switched off, for the tests' negative controls.
    knobs: Knobs,
});

#[derive(Clone, Debug)]
pub struct SinkResult {
    pub name: String,
    /// The analysis' label of the sink.
    pub label: Option<Label>,
    pub observed: Observed,
    pub witness: Option<Witness>,
    /// Whether the observation is worse than the sink tolerates.
    pub fails: bool,
}

#[derive(Clone, Debug)]
pub struct Simulation {
    pub schedules: usize,
    pub exhaustive: bool,
    /// Executions that ran out of their delivery budget and observed nothing.
    pub inconclusive: usize,
    pub sinks: Vec<SinkResult>,
}

impl Simulation {
    /// Whether some sink was observed worse than it tolerates.
    pub fn failing(&self) -> bool {
        self.sinks.iter().any(|s| s.fails)
    }
}

/// The label an observation stands for, to judge it against a sink's tolerance.
fn as_label(o: Observed) -> Option<Label> {
    match o {
        Observed::Deterministic => None,
        Observed::Run => Some(Label::Run),
        Observed::Inst => Some(Label::Inst),
        Observed::Diverge => Some(Label::Diverge),
    }
}

/// Simulates an analysed dataflow.
pub fn simulate(df: &Dataflow, analysis: &Analysis, o: &Options) -> Simulation {
    simulate_with_progress(df, analysis, o, &mut |_| {})
}

/// How far a simulation is, for a caller's progress display.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    /// This many schedules have run.
    Schedules(usize),
    /// The witness of the `n`-th of `of` sinks that received different contents is being
    /// replayed and shrunk (which can take longer than the schedules).
    Witness { n: usize, of: usize },
}

/// [`simulate`], calling `progress` after each schedule and before each witness (a caller's
/// progress display; the simulation itself does no IO).
pub fn simulate_with_progress(
    df: &Dataflow,
    analysis: &Analysis,
    o: &Options,
    progress: &mut dyn FnMut(Progress),
) -> Simulation {
    let m = model::Model::new(df, analysis, o.replicas, o.knobs);
    let inputs = explore::default_inputs(&m);
    let mut obs = observe::Observer::new(&m);
    let ex = explore::explore(&m, &inputs, o.schedules, o.seed, &mut |i, out| {
        obs.add(i, out);
        progress(Progress::Schedules(i + 1));
        true
    });
    let witnesses = obs.sinks.iter().filter(|so| so.evidence.is_some()).count();
    let mut nth = 0;
    let sinks = obs
        .sinks
        .iter()
        .enumerate()
        .map(|(s, so)| {
            let witness = so.evidence.clone().and_then(|ev| {
                nth += 1;
                progress(Progress::Witness {
                    n: nth,
                    of: witnesses,
                });
                witness::witness(
                    &m,
                    analysis,
                    &inputs,
                    ex.schedules,
                    o.seed,
                    s,
                    so.observed,
                    ev,
                    o.shrink,
                )
            });
            SinkResult {
                name: m.sink_names[s].clone(),
                label: analysis.labels.sink[s],
                observed: so.observed,
                fails: as_label(so.observed)
                    .is_some_and(|l| df.sinks[s].fails(l, FailOn::default())),
                witness,
            }
        })
        .collect();
    Simulation {
        schedules: ex.schedules,
        exhaustive: ex.exhaustive,
        inconclusive: obs.inconclusive,
        sinks,
    }
}
