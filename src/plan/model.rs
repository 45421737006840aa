//! The plan as reports see it: what the planner decided ([`Plan`], [`Mechanism`], [`Barrier`],
//! [`Reason`], [`SinkOutcome`]) and the vocabulary it is written in ([`Choice`], [`Kind`],
//! [`Status`], [`SearchMode`]).
//!
//! The plan holds ids of the dataflow it was made for (components, interfaces, sources,
//! sinks); reports turn them into names through [`Named`], the plan seen with that dataflow.
//! Key names are kept as text because the planner interns the key sets it invents (the
//! intersection of two gates) in its own copy of the key table, so their `KeySet`s mean
//! nothing in the caller's dataflow. Labels are text for the same reason. The model holds
//! facts, never sentences: what the runtime must provide for a mechanism and why a sink
//! cannot be repaired are worded by the formats (`report::plan_prose`).

use std::ops::Deref;

use crate::analysis::{self, SealProducer};
use crate::graph::{CompId, Dataflow, IfaceId, Order, SinkId, SourceId, StreamId};
use crate::label::{Annotation, KeySet, Tolerance};

/// One change to the dataflow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Choice {
    AddSeal {
        source: SourceId,
        key: KeySet,
    },
    /// `seal:` on an internal stream: its producer punctuates its output per key, which it
    /// can only when its own inputs are sealed within that key (the plan checks that
    /// it is).
    SealStream {
        stream: StreamId,
        key: KeySet,
    },
    Order {
        component: CompId,
        order: Order,
    },
}

impl Choice {
    /// The kind of mechanism the choice adds.
    pub fn kind(self) -> Kind {
        match self {
            Choice::AddSeal { .. } | Choice::SealStream { .. } => Kind::AddSeal,
            Choice::Order {
                order: Order::Global,
                ..
            } => Kind::GlobalOrder,
            Choice::Order { .. } => Kind::KeyedOrder,
        }
    }

    /// Two choices on the same source, stream or component cannot both be applied: a source
    /// or a stream has one seal, a component one order.
    pub fn conflicts(self, other: Choice) -> bool {
        match (self, other) {
            (Choice::AddSeal { source: a, .. }, Choice::AddSeal { source: b, .. }) => a == b,
            (Choice::SealStream { stream: a, .. }, Choice::SealStream { stream: b, .. }) => a == b,
            (Choice::Order { component: a, .. }, Choice::Order { component: b, .. }) => a == b,
            _ => false,
        }
    }
}

/// The kinds of coordination mechanism: the name every plan format prints ([`Kind::as_str`])
/// and the runtime piece that provides each ([`Kind::runtime_piece`]); what the runtime must
/// provide for one in a plan is worded once for every format by `report::plan_prose`.
/// Declared in the order reports list them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// A seal already reaches an order-sensitive path: the consumer buffers each partition
    /// until every producer sealed it. Not a choice: the runtime must provide it.
    SealBarrier,
    /// `seal:` on a source that declares the key sealable, or on an internal stream whose
    /// producer punctuates it.
    AddSeal,
    /// `order: [keys]` on a component.
    KeyedOrder,
    /// `order: global` on a component.
    GlobalOrder,
}

impl Kind {
    /// Every kind, in the order reports list them.
    pub const ALL: [Kind; 4] = [
        Kind::SealBarrier,
        Kind::AddSeal,
        Kind::KeyedOrder,
        Kind::GlobalOrder,
    ];

    /// The kind as the plan document names it: the one list of kinds the planner and the
    /// runtime share (the crate `blazes-plan`). The match is exhaustive, so a kind added here
    /// must be given its document kind, which the runtime then refuses or deploys.
    pub fn document_kind(self) -> blazes_plan::MechanismKind {
        use blazes_plan::MechanismKind as K;
        match self {
            Kind::SealBarrier => K::SealBarrier,
            Kind::AddSeal => K::AddSeal,
            Kind::KeyedOrder => K::KeyedOrder,
            Kind::GlobalOrder => K::GlobalOrder,
        }
    }

    /// The kind's name in every plan format and in `--allow`'s messages.
    pub fn as_str(self) -> &'static str {
        self.document_kind().as_str()
    }

    /// The piece of the runtime crate that enforces this kind once the plan is applied, as a
    /// path: an added seal is consumed by a seal barrier
    /// ([`SealBarrier`](blazes_runtime::SealBarrier)), a keyed order by keyed sessions
    /// ([`SessionBroker`](blazes_runtime::SessionBroker)), a global order by a
    /// [`Sequencer`](blazes_runtime::Sequencer).
    ///
    /// ```
    /// use blazes::plan::Kind;
    ///
    /// assert_eq!(Kind::AddSeal.runtime_piece(), "blazes_runtime::barrier::SealBarrier");
    /// assert_eq!(Kind::GlobalOrder.runtime_piece(), "blazes_runtime::sequencer::Sequencer");
    /// ```
    pub fn runtime_piece(self) -> &'static str {
        match self {
            Kind::SealBarrier | Kind::AddSeal => "blazes_runtime::barrier::SealBarrier",
            Kind::KeyedOrder => "blazes_runtime::session::SessionBroker",
            Kind::GlobalOrder => "blazes_runtime::sequencer::Sequencer",
        }
    }
}

/// A point of order: the path of `component` from `input` to `output`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct PointRef {
    pub component: CompId,
    pub input: IfaceId,
    pub output: IfaceId,
    pub annotation: Annotation,
    /// The gate's key names, sorted (`["*"]` for `*`; empty without a gate).
    pub gate: Vec<String>,
    /// The name of the diagnostic code that reports the point (`unordered-write`, ...).
    pub kind: &'static str,
}

/// A mechanism the plan adds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mechanism {
    pub kind: Kind,
    pub choice: Choice,
    /// Where it takes effect: the ordered component, or for an add-seal the components
    /// that consume the seal (sorted by name).
    pub components: Vec<CompId>,
    /// The source an add-seal seals.
    pub source: Option<SourceId>,
    /// The internal stream an add-seal seals (its producer punctuates it); `None` for a seal
    /// of a source.
    pub stream: Option<StreamId>,
    /// The internal streams the plan seals whose producers can punctuate them only with this
    /// mechanism (a seal upstream that seals their inputs); what they fix is in `fixes` too.
    pub punctuates: Vec<StreamId>,
    /// Sorted by name; empty for a global order.
    pub key: Vec<String>,
    /// For an order: the keys of the component's existing keyed order, which this one
    /// replaces (sorted by name); `None` when the component had no order.
    pub replaces: Option<Vec<String>>,
    pub cost: u32,
    /// Points of order that come back when this mechanism is removed from the plan.
    pub fixes: Vec<PointRef>,
    /// Whether `fixes` and `sinks` are all of them: the removal is followed through at most
    /// [`EXPLANATION_BUDGET`](super::EXPLANATION_BUDGET) components, and what it reaches further is not listed.
    pub fixes_complete: bool,
    /// Sinks that fail again when this mechanism is removed from the plan (sorted by name).
    pub sinks: Vec<SinkId>,
}

/// A seal barrier the runtime must provide once the plan is applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Barrier {
    /// The consuming component.
    pub component: CompId,
    /// The consuming input.
    pub input: IfaceId,
    pub key: Vec<String>,
    /// Who punctuates the seals it waits for, as the analysis found them: read them with
    /// [`Named::producer_names`].
    pub producers: Vec<SealProducer>,
    /// The number of producers it waits for (at least 1).
    pub cost: u32,
    /// Introduced by the plan (an added seal), rather than present in the spec.
    pub added: bool,
}

/// What the plan concluded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Ok,
    Repaired,
    Unrepairable,
}

impl Status {
    /// The status as the plan document names it (`blazes-plan`, shared with the runtime).
    pub fn document_status(self) -> blazes_plan::PlanStatus {
        use blazes_plan::PlanStatus as S;
        match self {
            Status::Ok => S::Ok,
            Status::Repaired => S::Repaired,
            Status::Unrepairable => S::Unrepairable,
        }
    }

    /// The status as the plan formats print it.
    pub fn as_str(self) -> &'static str {
        self.document_status().as_str()
    }
}

/// How the plan was searched for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SearchMode {
    /// Nothing to search: the spec is ok, or no candidate could help.
    None,
    Exact,
    /// Greedy, because there were more candidates than the exact limit.
    Greedy,
    /// Greedy, because the exact search ran out of its evaluation budget.
    GreedyBudget,
}

impl SearchMode {
    /// The mode as JSON prints it (`none`, `exact`, `greedy`).
    pub fn as_str(self) -> &'static str {
        match self {
            SearchMode::None => "none",
            SearchMode::Exact => "exact",
            SearchMode::Greedy | SearchMode::GreedyBudget => "greedy",
        }
    }

    /// The mode in a sentence, with the flag that changes it; `limit` and `budget` are the
    /// search's `--exact-limit` and `--exact-budget`.
    pub fn describe(self, limit: usize, budget: usize) -> String {
        match self {
            SearchMode::None => "no search needed".to_string(),
            SearchMode::Exact => "exact (branch and bound)".to_string(),
            SearchMode::Greedy => {
                format!("greedy (more than {limit} candidates; --exact-limit raises it)")
            }
            SearchMode::GreedyBudget => format!(
                "greedy (the exact search stopped after {budget} analyses; --exact-budget raises it)"
            ),
        }
    }
}

/// How the search went: its mode, how many candidates it weighed and analyses it ran, and
/// the independent parts it split them into.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Search {
    /// `Exact` when every part is; otherwise why some part is greedy (more candidates than
    /// the limit before a budget that ran out).
    pub mode: SearchMode,
    pub candidates: usize,
    pub evaluations: usize,
    pub exact_limit: usize,
    pub budget: usize,
    /// The parts, ordered by their first candidate; empty when nothing was searched.
    pub parts: Vec<Part>,
}

/// A part of the search: candidates that share no sink (nor a vertex upstream of one) with
/// another part's, searched on its own. Its cost is what the plan spends on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Part {
    pub candidates: usize,
    pub mode: SearchMode,
    /// The sinks failing before the plan that this part's candidates repair, sorted by id.
    pub sinks: Vec<SinkId>,
    pub cost: u32,
    /// No plan repairs the part's sinks for less: its cost when the search was exact, and
    /// otherwise a bound from sinks that share no candidate (each needs one of its own).
    pub lower_bound: u32,
}

impl Search {
    /// The least any plan can cost: the sum of the parts' lower bounds.
    pub fn lower_bound(&self) -> u32 {
        self.parts.iter().map(|p| p.lower_bound).sum()
    }

    /// The search in a sentence, with the flag that changes it, for every format.
    pub fn describe(&self) -> String {
        let (limit, budget) = (self.exact_limit, self.budget);
        let n = self.parts.len();
        let inexact: Vec<&Part> = self
            .parts
            .iter()
            .filter(|p| p.mode != SearchMode::Exact)
            .collect();
        let bound = |s: String| {
            if inexact.is_empty() {
                s
            } else {
                let gap: u32 = inexact
                    .iter()
                    .map(|p| p.cost.saturating_sub(p.lower_bound))
                    .sum();
                format!(
                    "{s}; no plan costs less than {} (this one is at most {gap} above)",
                    self.lower_bound()
                )
            }
        };
        if n <= 1 {
            return bound(self.mode.describe(limit, budget));
        }
        if inexact.is_empty() {
            return format!("exact (branch and bound) in each of {n} independent parts");
        }
        let why: Vec<String> = [SearchMode::Greedy, SearchMode::GreedyBudget]
            .into_iter()
            .filter_map(|m| {
                let k = inexact.iter().filter(|p| p.mode == m).count();
                (k > 0).then(|| {
                    let largest = inexact
                        .iter()
                        .filter(|p| p.mode == m)
                        .map(|p| p.candidates)
                        .max()
                        .unwrap_or(0);
                    match m {
                        SearchMode::Greedy => format!(
                            "{k} with more than {limit} candidates (largest {largest}; --exact-limit raises it)"
                        ),
                        _ => format!(
                            "{k} where the exact search stopped after {budget} analyses (--exact-budget raises it)"
                        ),
                    }
                })
            })
            .collect();
        bound(format!(
            "greedy in {} of {n} independent parts ({}), exact in the others",
            inexact.len(),
            why.join("; ")
        ))
    }
}

/// Why no plan repairs a sink.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Obstacle {
    /// No allowed mechanism applies to the points of order behind the sink.
    NoCandidate,
    /// Every candidate together repairs it, but only by combining candidates that exclude each
    /// other (two seals of one source, two keyed orders of one component).
    Conflicts,
    /// Even with every candidate applied the sink receives worse than it tolerates.
    Bound,
    /// Only seals of internal streams would repair it, and their producers' inputs cannot be
    /// sealed within those keys, so the producers could not punctuate them.
    Punctuation,
}

/// Why a sink cannot be repaired: the facts; the formats word them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reason {
    pub sink: SinkId,
    /// The sink's label with every candidate applied.
    pub label: String,
    pub tolerate: Tolerance,
    pub obstacle: Obstacle,
    /// The kinds `--allow` left out, in the order of [`Kind`].
    pub disallowed: Vec<Kind>,
    /// A remaining point of order has the gate `*`, which only a global order fixes, and
    /// global orders are not allowed.
    pub star_needs_global: bool,
    /// Points of order that remain with every candidate applied.
    pub points: Vec<PointRef>,
}

/// A sink's label and verdict without the plan and with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SinkOutcome {
    pub sink: SinkId,
    pub tolerate: Tolerance,
    /// `None` when no source reaches the sink.
    pub before: Option<String>,
    pub after: Option<String>,
    pub failing_before: bool,
    pub failing_after: bool,
}

/// The cheapest coordination found for a dataflow ([`plan`](super::plan())), with why each
/// mechanism is there, the seal barriers the runtime must provide, and each sink before and
/// after. It holds the dataflow's ids: read names through [`Plan::named`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub name: String,
    pub status: Status,
    pub search: Search,
    /// Added mechanisms: add-seals, then keyed orders, then global orders, each sorted by
    /// name.
    pub mechanisms: Vec<Mechanism>,
    /// Seal barriers with the plan applied, sorted by the names of component and input.
    pub barriers: Vec<Barrier>,
    pub reasons: Vec<Reason>,
    pub sinks: Vec<SinkOutcome>,
    /// Sum of the added mechanisms' costs: what the search minimises.
    pub cost: u32,
    pub barrier_cost: u32,
}

impl Plan {
    /// The choices to write into the spec.
    pub fn choices(&self) -> Vec<Choice> {
        self.mechanisms.iter().map(|m| m.choice).collect()
    }

    /// The plan with the dataflow it was made for (`plan::plan`'s argument, or the checked
    /// dataflow it was a copy of), to read it by name.
    pub fn named<'a>(&'a self, df: &'a Dataflow) -> Named<'a> {
        Named {
            plan: self,
            dataflow: df,
        }
    }
}

/// A plan read with the dataflow it was made for: where the plan's ids become the names every
/// plan format prints. Dereferences to the [`Plan`].
///
/// ```
/// use blazes::check::{self, Outcome};
/// use blazes::plan;
///
/// let spec = "
/// sources:
///   tweets: {}
/// components:
///   Count:
///     paths:
///       - { from: words, to: counts, label: OW, gate: [word] }
/// streams:
///   - { from: tweets, to: Count.words }
///   - { from: Count.counts, to: db }
/// sinks:
///   db: {}
/// ";
/// let report = check::check_bytes("count.yaml", spec.as_bytes(), &Default::default());
/// let Outcome::Analysed(a) = &report.outcome else { panic!("a valid spec") };
/// let p = plan::plan(&a.dataflow, &plan::Options::default());
/// let named = p.named(&a.dataflow);
/// // The cheapest fix orders Count by word; the mechanism holds Count's id.
/// assert_eq!(named.component_names(&named.mechanisms[0].components), ["Count"]);
/// assert_eq!(named.sink_names(&named.mechanisms[0].sinks), ["db"]);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Named<'a> {
    pub plan: &'a Plan,
    pub dataflow: &'a Dataflow,
}

impl<'a> Named<'a> {
    /// A component's name.
    pub fn component(&self, c: CompId) -> &'a str {
        &self.dataflow.component(c).name
    }

    /// The names of `cs`, in their order.
    pub fn component_names(&self, cs: &[CompId]) -> Vec<&'a str> {
        cs.iter().map(|&c| self.component(c)).collect()
    }

    /// An interface's name, without its component.
    pub fn iface(&self, i: IfaceId) -> &'a str {
        &self.dataflow.iface(i).name
    }

    /// A source's name.
    pub fn source(&self, s: SourceId) -> &'a str {
        &self.dataflow.sources[s.index()].name
    }

    /// A stream as the spec writes it: `Producer.output -> Consumer.input`.
    pub fn stream(&self, s: StreamId) -> String {
        let st = &self.dataflow.streams[s.index()];
        format!("{} -> {}", st.from_text, st.to_text)
    }

    /// The component that punctuates a sealed internal stream (its producer).
    pub fn stream_producer(&self, s: StreamId) -> Option<&'a str> {
        match self.dataflow.streams[s.index()].from {
            crate::graph::Producer::Output(o) => {
                Some(self.component(self.dataflow.iface(o).component))
            }
            crate::graph::Producer::Source(_) => None,
        }
    }

    /// A sink's name (`Component.output` for an implicit one).
    pub fn sink(&self, k: SinkId) -> &'a str {
        &self.dataflow.sinks[k.index()].name
    }

    /// The names of a barrier's producers: sorted, each once.
    pub fn producer_names(&self, producers: &[SealProducer]) -> Vec<&'a str> {
        analysis::producer_names(self.dataflow, producers)
    }

    /// The number of streams feeding a component (an input no stream feeds counts as one):
    /// the producers a global order sequences.
    pub fn producer_streams(&self, c: CompId) -> usize {
        super::cost::producers_of(self.dataflow, c)
    }

    /// The engine task an order mechanism covers as a whole (the members of a task, `task:`,
    /// are ordered together); `None` for a seal, or an order of one component.
    pub fn task(&self, m: &Mechanism) -> Option<&'a str> {
        let Choice::Order { component, .. } = m.choice else {
            return None;
        };
        let df = self.dataflow;
        let t = df.component(component).task?;
        (df.order_group(component).nth(1).is_some()).then(|| df.tasks[t as usize].name.as_str())
    }

    /// The names of `ks`, in their order.
    pub fn sink_names(&self, ks: &[SinkId]) -> Vec<&'a str> {
        ks.iter().map(|&k| self.sink(k)).collect()
    }
}

impl Deref for Named<'_> {
    type Target = Plan;

    fn deref(&self) -> &Plan {
        self.plan
    }
}
