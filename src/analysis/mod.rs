//! The Blazes analysis: label propagation to a fixpoint, points of order, seal barriers, and
//! sink verdicts, with provenance (the chain of streams that brought a label somewhere), and
//! the diagnostics that report them.
//!
//! The parts, in the order `analyze` runs them:
//! - `rules`: section 5 of the label algebra, one path at a time (`contribute`,
//!   `reconcile`, read protection, a stream's label);
//! - `fixpoint`: the worklist fixpoint of section 6 (`propagate`), and its naive reference;
//! - `verdicts`: points of order, seal barriers, sink verdicts, and the point that causes a
//!   failing sink's label;
//! - `provenance`: the chains of streams that explain a label, and the producers a barrier
//!   waits for;
//! - `diagnostics`: one module per diagnostic code (`C001`...), whose doc comment is what
//!   `blazes explain` prints for it, and which builds that code's findings.
//!
//! Must not know: YAML, files, output formats. It returns data and diagnostics.

pub(crate) mod diagnostics;
mod fixpoint;
mod provenance;
mod rules;
pub mod summary;
mod verdicts;
#[doc(hidden)]
pub mod work;

use crate::diagnostic::Diagnostic;
use crate::graph::{CompId, Dataflow, IfaceId, SinkId, SourceId, StreamId};
use crate::label::{KeySet, Label};

pub use crate::label::FailOn;
pub use diagnostics::{INST_WRITE, PLAN_HELP, needs_advice, point_code};
pub(crate) use fixpoint::eval_component;
pub use fixpoint::propagate;
// The tests' reference fixpoint, not part of the API.
#[doc(hidden)]
pub use fixpoint::propagate_naive;
pub use provenance::{chain, sink_chain};
pub use rules::{
    Contribution, contribute, read_protected, reconcile, stream_label, unprotecting_input,
};
pub use verdicts::{PointsByComponent, component_points, sink_cause};

/// Why a path is a point of order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum PointKind {
    /// An order-sensitive (or Inst-receiving) write corrupts state.
    Taint,
    /// An order-sensitive read observes nondeterministic state.
    NdRead,
}

impl PointKind {
    /// The analysis's own name of the kind, for tests and debugging. Reports never show it:
    /// they name a point by its diagnostic code ([`point_code`]).
    pub fn as_str(self) -> &'static str {
        match self {
            PointKind::Taint => "taint",
            PointKind::NdRead => "ndread",
        }
    }
}

/// A path where coordination must be inserted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PointOfOrder {
    pub component: CompId,
    /// Index into the component's paths.
    pub path: usize,
    pub kind: PointKind,
    /// The joined label of the input that causes the point of order: the path's own input for
    /// a write, the first unsealed writing input for a read.
    pub input_label: Label,
    pub cause_input: IfaceId,
    /// Streams that brought `input_label` to the path, upstream first.
    pub chain: Vec<StreamId>,
}

/// A place where the runtime must buffer partitions until they are sealed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SealBarrier {
    pub component: CompId,
    pub input: IfaceId,
    pub key: KeySet,
    /// Sources and components whose seals the barrier waits for, sorted by name (then by id);
    /// reports print them with [`producer_names`].
    pub producers: Vec<SealProducer>,
}

/// Who punctuates a seal a barrier waits for: a source with `seal:`, or the component that
/// produces a stream with an effective `seal:` declaration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SealProducer {
    Source(SourceId),
    Component(CompId),
}

impl SealProducer {
    /// The source's or the component's name.
    pub fn name(self, df: &Dataflow) -> &str {
        match self {
            SealProducer::Source(s) => &df.sources[s.index()].name,
            SealProducer::Component(c) => &df.component(c).name,
        }
    }
}

/// The names of a barrier's producers as reports list them: sorted, each name once (a source
/// and a component may share a name; the barrier waits for "it" once in the prose and in the
/// count).
pub fn producer_names<'a>(df: &'a Dataflow, producers: &[SealProducer]) -> Vec<&'a str> {
    let mut names: Vec<&str> = producers.iter().map(|p| p.name(df)).collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// A sink's label at the fixpoint (`None`: no source reaches it) and whether it fails.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SinkVerdict {
    pub sink: SinkId,
    pub label: Option<Label>,
    pub failing: bool,
}

/// The labels at the fixpoint, with the provenance needed to explain them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Labels {
    pub iface: Vec<Option<Label>>,
    pub stream: Vec<Option<Label>>,
    pub sink: Vec<Option<Label>>,
    /// For an input: the stream whose arrival last raised its label.
    pub witness: Vec<Option<StreamId>>,
    /// For an output: the path (index in its component) whose contribution set its label.
    pub cause: Vec<Option<u32>>,
}

/// What the analysis found: the labels at the fixpoint, the points of order, the seal
/// barriers, each sink's verdict and the diagnostics that report them.
#[derive(Clone, Debug)]
pub struct Analysis {
    pub labels: Labels,
    pub points: Vec<PointOfOrder>,
    pub barriers: Vec<SealBarrier>,
    pub sinks: Vec<SinkVerdict>,
    /// Findings (points of order, unsafe sinks) and warnings, sorted by position.
    /// `check::check_bytes` moves them into `Analysed::diagnostics`, leaving this empty.
    pub diagnostics: Vec<Diagnostic>,
}

impl Analysis {
    /// Whether a sink fails: what makes `blazes check` exit with status 1.
    pub fn failing(&self) -> bool {
        self.sinks.iter().any(|s| s.failing)
    }
}

/// Runs the whole analysis of a built dataflow: labels, points of order, barriers, sink
/// verdicts and their diagnostics. [`check::check_bytes`](crate::check::check_bytes) runs the
/// whole pipeline from bytes; this is the step after [`graph::build`](crate::graph::build).
///
/// ```
/// use blazes::{analysis, graph, spec};
///
/// let text = "
/// sources:
///   clicks: {}
/// components:
///   Count:
///     paths:
///       - { from: in, to: out, label: OW, gate: [user] }
/// streams:
///   - { from: clicks, to: Count.in }
///   - { from: Count.out, to: report }
/// sinks:
///   report: { tolerate: Run }
/// ";
/// let (spec, diags) = spec::parse(text, &spec::Limits::default());
/// assert!(diags.is_empty());
/// let (mut df, diags) = graph::build(spec.unwrap(), "clicks");
/// assert!(diags.is_empty());
/// let a = analysis::analyze(&mut df, analysis::FailOn::default());
/// // The write in arrival order is a point of order; `report` tolerates the `Run` it causes.
/// assert_eq!(a.points.len(), 1);
/// assert!(!a.failing());
/// let finding = &a.diagnostics[0];
/// assert_eq!((finding.code.id, finding.severity.as_str()), ("C001", "warning"));
/// ```
pub fn analyze(df: &mut Dataflow, fail_on: FailOn) -> Analysis {
    analyze_with(df, fail_on, true)
}

/// Runs the whole analysis; `chain_notes` says whether findings carry their provenance chain
/// as related notes, one per stream. The chains are in `points` either way: the notes repeat
/// them for the formats that print them, and a big spec has millions of them.
pub fn analyze_with(df: &mut Dataflow, fail_on: FailOn, chain_notes: bool) -> Analysis {
    let mut a = verdicts(df, fail_on);
    a.diagnostics = diagnostics::diagnose(df, &a, chain_notes, fail_on, work::NameLookup::Set);
    a
}

/// The analysis without its diagnostics (which hold a message and a chain of notes per point
/// of order): for callers that only read labels, points, barriers and verdicts.
pub fn verdicts(df: &mut Dataflow, fail_on: FailOn) -> Analysis {
    let labels = propagate(df);
    let (points, barriers) = verdicts::points_and_barriers(df, &labels);
    let sinks = verdicts::sink_verdicts(df, &labels, fail_on);
    Analysis {
        labels,
        points,
        barriers,
        sinks,
        diagnostics: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{graph, spec};

    /// A barrier fed by a sealed source `p` and by a component `p` that seals its own output:
    /// the analysis keeps both producers apart, by id; the formats name them once.
    #[test]
    fn a_barrier_holds_its_producers_by_id_and_names_each_once() {
        let text = "
sources:
  p: { seal: [k] }
  q: {}
components:
  p:
    paths:
      - { from: in, to: out, label: CR }
  Sum:
    paths:
      - { from: in, to: out, label: OW, gate: [k] }
streams:
  - { from: q, to: p.in }
  - { from: p.out, to: Sum.in, seal: [k] }
  - { from: p, to: Sum.in }
  - { from: Sum.out, to: db }
sinks:
  db: {}
";
        let (spec, diags) = spec::parse(text, &spec::Limits::default());
        assert!(diags.is_empty(), "{diags:?}");
        let (mut df, diags) = graph::build(spec.unwrap(), "t");
        assert!(diags.is_empty(), "{diags:?}");
        let a = verdicts(&mut df, FailOn::default());
        let [b] = a.barriers.as_slice() else {
            panic!("one barrier: {:?}", a.barriers)
        };
        let source = SealProducer::Source(
            df.sources
                .iter()
                .position(|s| s.name == "p")
                .map(|i| SourceId(i as u32))
                .unwrap(),
        );
        let component = SealProducer::Component(CompId(0));
        assert_eq!(df.component(CompId(0)).name, "p");
        assert_eq!(b.producers, [source, component]);
        assert_eq!(producer_names(&df, &b.producers), ["p"]);
    }
}
