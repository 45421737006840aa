//! Coordination synthesis (`blazes plan`): the cheapest set of coordination mechanisms that
//! makes every sink meet its tolerance, and the proof that it does.
//!
//! The planner never reasons about labels on its own: every claim it makes ("this plan
//! repairs the dataflow", "this mechanism is needed") is checked by the analysis of
//! [`crate::analysis`] on the dataflow with the mechanisms applied (`Component.order`,
//! `Source.seal`): the search's many evaluations by its incremental form ([`labeling`]), the
//! final plan by a full re-run. The search only decides which combinations to check.
//!
//! Two facts make the search sound:
//! - Every mechanism is monotone: adding a seal lowers a source's label (`Async` to
//!   `Seal(K)`), adding or strengthening an order makes more `O` paths deterministic, and the
//!   derivation rules are monotone. So adding a mechanism never breaks a sink, feasibility is
//!   upward closed, and "apply every remaining candidate" is an upper bound used to prune.
//! - A seal the plan adds to an internal stream is a promise of its producer: it holds only
//!   when the producer's inputs are sealed within the key. The labels trust it, so the score
//!   counts each seal that does not hold as a failing sink; the bound trusts them all (a
//!   relaxation, so still a bound), and the final plan is checked for it.
//! - Every mechanism has a positive cost, so a cheapest plan is irredundant.
//!
//! Cost model and algorithm are described in [`EXPLAIN`] (`blazes explain plan`).
//!
//! The parts, each in its own module: the report model ([`Plan`] and what it holds), the cost
//! model ([`cost`]), candidate generation ([`candidates()`]), the score ([`Score`]), the
//! searches (greedy, exact, irredundancy), the explanations ([`EXPLAIN`] and why each
//! mechanism is there) and the full-analysis [`Evaluator`]. [`plan()`] runs them in order and
//! builds its result in one place.
//!
//! Must not know: YAML text (that is [`apply`]), output formats, files.

pub mod advice;
pub mod apply;
pub mod apply_composed;
mod candidates;
mod cost;
mod evaluator;
mod explain;
// The planner's incremental analysis: public for the tests that compare it with a full
// propagation, not part of the API.
#[doc(hidden)]
pub mod labeling;
mod model;
mod scoring;
mod search;

use crate::analysis::{self, FailOn};
use crate::graph::Dataflow;

pub use advice::advise;
pub use candidates::{Candidate, candidates};
pub use cost::cost;
pub use evaluator::{Evaluator, upper_bound};
pub use explain::EXPLAIN;
pub use model::{
    Barrier, Choice, Kind, Mechanism, Named, Obstacle, Part, Plan, PointRef, Reason, Search,
    SearchMode, SinkOutcome, Status,
};
pub use scoring::Score;

use labeling::Labeling;

/// Above this many candidates a part of the search is greedy instead of exact.
pub const EXACT_LIMIT: usize = 24;
/// The exact search of a part stops (and the part's greedy plan is kept) after this many
/// analyses.
pub const EVALUATION_BUDGET: usize = 20_000;
/// How many components the explanation of one mechanism follows its removal through. In a
/// fleet where feedback streams tie most components into one cycle, removing one mechanism
/// can bring back thousands of points of order; listing them all for every mechanism would
/// make the plan quadratic in size and time.
pub const EXPLANATION_BUDGET: usize = 256;

/// Which mechanisms the plan may use (`--allow`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Allowed {
    /// Add a seal to a source that declares the key `sealable`, or to an internal stream
    /// whose producer can punctuate it ([`Kind::AddSeal`]).
    pub seal: bool,
    /// Order a component by keys ([`Kind::KeyedOrder`]).
    pub keyed: bool,
    /// Order a component globally ([`Kind::GlobalOrder`]).
    pub global: bool,
}

impl Default for Allowed {
    fn default() -> Self {
        Allowed {
            seal: true,
            keyed: true,
            global: true,
        }
    }
}

/// How the planner searches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Options {
    /// Which sink verdicts the plan must repair (`--fail-on`).
    pub fail_on: FailOn,
    /// Which mechanisms the plan may add (`--allow`).
    pub allowed: Allowed,
    /// Above this many candidates a part of the search is greedy (`--exact-limit`).
    pub exact_limit: usize,
    /// Analyses the exact search of a part may run before its greedy plan is kept
    /// (`--exact-budget`).
    pub evaluation_budget: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            fail_on: FailOn::default(),
            allowed: Allowed::default(),
            exact_limit: EXACT_LIMIT,
            evaluation_budget: EVALUATION_BUDGET,
        }
    }
}

blazes_plan::setters!(Options {
    /// Which sink verdicts the plan must repair (`--fail-on`).
    fail_on: FailOn,
    /// Which mechanisms the plan may add (`--allow`).
    allowed: Allowed,
    /// Above this many candidates a part of the search is greedy (`--exact-limit`).
    exact_limit: usize,
    /// Analyses the exact search of a part may run before its greedy plan is kept
    /// (`--exact-budget`).
    evaluation_budget: usize,
});

/// Plans the coordination for an analysed dataflow.
///
/// ```
/// use blazes::check::{self, Outcome};
/// use blazes::plan::{self, Kind, Status};
///
/// let spec = "
/// sources:
///   tweets: { sealable: [[batch]] }
/// components:
///   Count:
///     paths:
///       - { from: words, to: counts, label: OW, gate: [word, batch] }
/// streams:
///   - { from: tweets, to: Count.words }
///   - { from: Count.counts, to: db }
/// sinks:
///   db: {}
/// ";
/// let report = check::check_bytes("count.yaml", spec.as_bytes(), &Default::default());
/// let Outcome::Analysed(a) = &report.outcome else { panic!("a valid spec") };
/// let p = plan::plan(&a.dataflow, &plan::Options::default());
/// assert_eq!(p.status, Status::Repaired);
/// // The cheapest fix: tweets punctuates each batch, and Count waits for the seal.
/// assert_eq!(p.mechanisms[0].kind, Kind::AddSeal);
/// let named = p.named(&a.dataflow);
/// assert_eq!(named.source(p.mechanisms[0].source.unwrap()), "tweets");
/// assert_eq!(named.component(p.barriers[0].component), "Count");
/// ```
pub fn plan(df: &Dataflow, options: &Options) -> Plan {
    let mut ev = Evaluator::new(df, options.fail_on);
    let base = ev.analyze(&[]);
    if !base.failing() {
        return finish(&ev, options, &base, Outcome::Ok, 0, 0);
    }
    let cands = ev.candidates(&base, options.allowed);
    // Built after the candidates (their intersections are interned in `ev`'s key table) and
    // before `ev` applies any choice (it starts from `ev`'s current orders and seals).
    let mut lab = Labeling::new(ev.dataflow(), options.fail_on);
    let outcome = repair(&mut ev, &mut lab, &cands, options);
    let lab_evaluations = lab.evaluations;
    finish(&ev, options, &base, outcome, cands.len(), lab_evaluations)
}

/// What the planner concluded, before it is reported.
enum Outcome {
    /// No sink fails: nothing to search.
    Ok,
    /// The chosen mechanisms, explained; `after` is the full analysis with them applied.
    Repaired {
        mechanisms: Vec<Mechanism>,
        after: analysis::Analysis,
        mode: SearchMode,
        parts: Vec<Part>,
    },
    /// No allowed combination repairs every sink; `after` is what remains.
    Unrepairable {
        after: analysis::Analysis,
        obstacle: Obstacle,
    },
}

/// Searches for a plan of `cands` and proves it with the full analysis.
fn repair(
    ev: &mut Evaluator,
    lab: &mut Labeling,
    cands: &[Candidate],
    options: &Options,
) -> Outcome {
    let all: Vec<Choice> = cands.iter().map(|c| c.choice).collect();
    let ub = ev.upper_bound(&all);
    let bound_ok = ev.feasible(&ub);
    let chosen = if bound_ok {
        search::search(lab, cands, options)
    } else {
        None
    };
    let Some(chosen) = chosen else {
        // Either even the strongest combination fails a sink, or it passes only by merging
        // choices that exclude each other (two seals of one source, two keyed orders of one
        // component): then the remaining damage is the baseline's.
        let obstacle = if cands.is_empty() {
            Obstacle::NoCandidate
        } else if !bound_ok {
            Obstacle::Bound
        } else if !{
            let labels = ev.analyze(&ub).labels;
            ev.punctuations_hold(&ub, &labels)
        } {
            Obstacle::Punctuation
        } else {
            Obstacle::Conflicts
        };
        let after = if bound_ok {
            ev.analyze(&[])
        } else {
            ev.analyze(&ub)
        };
        return Outcome::Unrepairable { after, obstacle };
    };
    let choices = search::choices_of(cands, &chosen.indices);
    let after = ev.analyze(&choices);
    // The planner must not guess: a plan the full analysis rejects, or one with a stream seal
    // whose producer cannot punctuate it, is not reported. (The search checks both with the
    // same propagation, so this is a safety net.)
    if after.failing() || !ev.punctuations_hold(&choices, &after.labels) {
        return Outcome::Unrepairable {
            after,
            obstacle: Obstacle::Bound,
        };
    }
    let mechanisms = explain::mechanisms(ev, lab, cands, &chosen.indices, &after);
    Outcome::Repaired {
        mechanisms,
        after,
        mode: chosen.mode,
        parts: chosen.parts,
    }
}

/// The plan of an outcome: the one place a [`Plan`] is built.
fn finish(
    ev: &Evaluator,
    options: &Options,
    base: &analysis::Analysis,
    outcome: Outcome,
    candidates: usize,
    lab_evaluations: usize,
) -> Plan {
    let d = ev.dataflow();
    let (status, mode, parts, mechanisms, reasons, after) = match outcome {
        Outcome::Ok => (
            Status::Ok,
            SearchMode::None,
            Vec::new(),
            Vec::new(),
            Vec::new(),
            None,
        ),
        Outcome::Repaired {
            mechanisms,
            after,
            mode,
            parts,
        } => (
            Status::Repaired,
            mode,
            parts,
            mechanisms,
            Vec::new(),
            Some(after),
        ),
        Outcome::Unrepairable { after, obstacle } => {
            let reasons = explain::reasons(d, &after, options, obstacle);
            (
                Status::Unrepairable,
                SearchMode::None,
                Vec::new(),
                Vec::new(),
                reasons,
                Some(after),
            )
        }
    };
    let after = after.as_ref().unwrap_or(base);
    // An unrepairable plan applies nothing: its barriers are the spec's own, and it asks the
    // runtime for none.
    let barriers = if status == Status::Unrepairable {
        explain::barrier_list(d, base, base)
    } else {
        explain::barrier_list(d, after, base)
    };
    let barrier_cost = if status == Status::Unrepairable {
        0
    } else {
        barriers.iter().map(|b| b.cost).sum()
    };
    Plan {
        name: d.name.clone(),
        status,
        search: Search {
            mode,
            candidates,
            evaluations: ev.evaluations + lab_evaluations,
            exact_limit: options.exact_limit,
            budget: options.evaluation_budget,
            parts,
        },
        cost: mechanisms.iter().map(|m| m.cost).sum(),
        mechanisms,
        barriers,
        reasons,
        sinks: explain::sink_outcomes(d, base, after),
        barrier_cost,
    }
}
