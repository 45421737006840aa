//! Plans verified by execution: the spec with a plan in force (its added seals and orders, and
//! the seal barriers they bring) is simulated, and every sink is judged against what it
//! tolerates. A sink observed worse than that is a counterexample to the plan, hence to the
//! analysis or the planner: `blazes plan` fails loudly on it.
//!
//! Built on the public API of this module ([`simulate`](super::simulate)); it adds no model of
//! its own.

use crate::analysis::Analysis;
use crate::graph::Dataflow;
use crate::label::{FailOn, Label, Tolerance};
use crate::plan::{Plan, apply};

use super::{Observed, Options, Witness, simulate};

/// Default number of schedules `blazes plan` runs per spec: a tenth of `blazes simulate`'s, so
/// that planning stays fast on big specs (a schedule of a spec with thousands of components
/// makes thousands of deliveries).
pub const PLAN_SCHEDULES: usize = 1_000;

/// The outcome of a verification.
#[derive(Clone, Debug)]
pub struct Verification {
    pub schedules: usize,
    pub exhaustive: bool,
    /// Executions that ran out of their delivery budget and observed nothing.
    pub inconclusive: usize,
    pub seed: u64,
    pub replicas: usize,
    /// The first sink (in the spec's order) observed worse than it tolerates, if any.
    pub failure: Option<Failure>,
}

impl Verification {
    /// Whether no sink was observed worse than it tolerates.
    pub fn verified(&self) -> bool {
        self.failure.is_none()
    }
}

/// A sink observed worse than it tolerates, with the plan in force.
#[derive(Clone, Debug)]
pub struct Failure {
    pub sink: String,
    /// The analysis' label of the sink with the plan in force.
    pub label: Option<Label>,
    pub tolerate: Tolerance,
    pub observed: Observed,
    /// The evidence; `None` only when the simulator could not replay it.
    pub witness: Option<Witness>,
}

/// The label an observation stands for.
fn as_label(o: Observed) -> Option<Label> {
    match o {
        Observed::Deterministic => None,
        Observed::Run => Some(Label::Run),
        Observed::Inst => Some(Label::Inst),
        Observed::Diverge => Some(Label::Diverge),
    }
}

/// Simulates an analysed dataflow and judges every sink by its tolerance under `fail_on` (the
/// threshold of the sinks that declare none, as `blazes check` and `blazes plan` use it).
pub fn verify(df: &Dataflow, analysis: &Analysis, fail_on: FailOn, o: &Options) -> Verification {
    let sim = simulate(df, analysis, o);
    let failure = sim
        .sinks
        .iter()
        .zip(&df.sinks)
        .find(|(r, sink)| as_label(r.observed).is_some_and(|l| sink.fails(l, fail_on)))
        .map(|(r, sink)| Failure {
            sink: r.name.clone(),
            label: r.label,
            tolerate: sink.tolerance(),
            observed: r.observed,
            witness: r.witness.clone(),
        });
    Verification {
        schedules: sim.schedules,
        exhaustive: sim.exhaustive,
        inconclusive: sim.inconclusive,
        seed: o.seed,
        replicas: o.replicas,
        failure,
    }
}

/// Verifies `plan` on the dataflow it was made for: the plan's seals and orders are put in
/// force ([`apply::applied`], the dataflow `--apply` writes), the result analysed again, and
/// simulated. A plan that adds nothing verifies the spec itself.
pub fn verify_plan(df: &Dataflow, plan: &Plan, fail_on: FailOn, o: &Options) -> Verification {
    let (repaired, analysis) = apply::applied(df, plan, fail_on);
    verify(&repaired, &analysis, fail_on, o)
}
