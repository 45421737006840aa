//! Plans verified by execution: the spec with a plan in force (its added seals and orders, and
//! the seal barriers they bring) is simulated, and every sink is judged against what it
//! tolerates. A sink observed worse than that is a counterexample to the plan, hence to the
//! analysis or the planner: `blazes plan` fails loudly on it.
//!
//! Built on the public API of this module ([`simulate`]); it adds no model of
//! its own.

use crate::analysis::Analysis;
use crate::graph::Dataflow;
use crate::label::{FailOn, Label, Tolerance};
use crate::plan::{Plan, apply};

use super::{Observed, Options, Witness, simulate};

/// Most schedules `blazes plan` runs per spec by default: a tenth of `blazes simulate`'s.
pub const PLAN_SCHEDULES: usize = 1_000;

/// The work `blazes plan` spends on a verification by default, in schedules times components
/// squared: a schedule of a bigger spec makes more deliveries, and each costs more. A spec of
/// 20 components gets [`PLAN_SCHEDULES`], one of 100 gets 40, one of 200 gets 10.
pub const PLAN_WORK: usize = 400_000;

/// Largest spec, in components, that `blazes plan` verifies by default: past it a single
/// schedule costs more than the plan itself (`blazes simulate`, or `--schedules`, still runs).
pub const PLAN_MAX_COMPONENTS: usize = 200;

/// How many schedules a command whose default is `schedules` runs on a spec of `components`
/// components without `--schedules`: the default, cut so that schedules times components
/// squared stays within [`PLAN_WORK`]; `None` when the spec is past [`PLAN_MAX_COMPONENTS`].
/// `blazes plan` and `blazes check --witness` both use it.
pub fn size_budget(components: usize, schedules: usize) -> Option<usize> {
    (components <= PLAN_MAX_COMPONENTS)
        .then(|| (PLAN_WORK / components.max(1).pow(2)).clamp(1, schedules.max(1)))
}

/// How many schedules `blazes plan` runs on a spec of `components` components without
/// `--schedules`, or `None` when the spec is too big to verify within the budget.
pub fn plan_budget(components: usize) -> Option<usize> {
    size_budget(components, PLAN_SCHEDULES)
}

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
    /// Why nothing was simulated (the spec is past the budget), when nothing was.
    pub skipped: Option<String>,
}

impl Verification {
    /// Nothing simulated, for `reason`.
    pub fn skipped(reason: String, o: &Options) -> Self {
        Verification {
            schedules: 0,
            exhaustive: false,
            inconclusive: 0,
            seed: o.seed,
            replicas: o.replicas,
            failure: None,
            skipped: Some(reason),
        }
    }

    /// Whether the simulation ran and no sink was observed worse than it tolerates.
    pub fn verified(&self) -> bool {
        self.failure.is_none() && self.skipped.is_none()
    }

    /// Whether some sink was observed worse than it tolerates: the plan does not hold.
    pub fn refuted(&self) -> bool {
        self.failure.is_some()
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
        skipped: None,
    }
}

/// Verifies `plan` on the dataflow it was made for: the plan's seals and orders are put in
/// force ([`apply::applied`], the dataflow `--apply` writes), the result analysed again, and
/// simulated. A plan that adds nothing verifies the spec itself.
pub fn verify_plan(df: &Dataflow, plan: &Plan, fail_on: FailOn, o: &Options) -> Verification {
    let (repaired, analysis) = apply::applied(df, plan, fail_on);
    verify(&repaired, &analysis, fail_on, o)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_shrinks_with_the_spec_and_stops_past_the_limit() {
        assert_eq!(plan_budget(0), Some(PLAN_SCHEDULES));
        assert_eq!(plan_budget(3), Some(PLAN_SCHEDULES));
        assert_eq!(plan_budget(20), Some(PLAN_SCHEDULES));
        assert_eq!(plan_budget(100), Some(40));
        assert_eq!(plan_budget(PLAN_MAX_COMPONENTS), Some(10));
        assert_eq!(plan_budget(PLAN_MAX_COMPONENTS + 1), None);
    }

    #[test]
    fn the_witness_budget_is_the_same_work_from_a_larger_default() {
        let check = crate::simulate::DEFAULT_SCHEDULES;
        assert_eq!(size_budget(3, check), Some(check));
        // Below the plan's cap the two agree: the work bound decides.
        assert_eq!(size_budget(100, check), Some(40));
        assert_eq!(size_budget(100, check), plan_budget(100));
        assert_eq!(size_budget(10, check), Some(4_000));
        assert_eq!(size_budget(PLAN_MAX_COMPONENTS + 1, check), None);
    }
}
