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
//! - Every mechanism has a positive cost, so a cheapest plan is irredundant.
//!
//! Cost model and algorithm are described in [`EXPLAIN`] (`blazes explain plan`).
//!
//! Must not know: YAML text (that is [`apply`]), output formats, files.

pub mod apply;
pub mod labeling;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::analysis::{self, FailOn, PointKind};
use crate::graph::{CompId, Consumer, Dataflow, IfaceId, Order, SourceId};
use crate::label::{Annotation, Gate, KeySet, Keys, Label};

use labeling::Labeling;

/// Above this many candidates the search is greedy instead of exact.
pub const EXACT_LIMIT: usize = 24;
/// The exact search stops (and the greedy plan is kept) after this many analyses.
pub const EVALUATION_BUDGET: usize = 20_000;
/// How many components the explanation of one mechanism follows its removal through. In a
/// fleet where feedback streams tie most components into one cycle, removing one mechanism
/// can bring back thousands of points of order; listing them all for every mechanism would
/// make the plan quadratic in size and time.
pub const EXPLANATION_BUDGET: usize = 256;

/// The long explanation printed by `blazes explain plan`.
pub const EXPLAIN: &str = "\
blazes plan: coordination synthesis

`blazes plan SPEC` finds the cheapest set of coordination mechanisms that makes every sink
meet its tolerance (`sinks.<name>.tolerate`, and `--fail-on`), and `--apply OUT.yaml` writes
them into a copy of the spec (`seal:` on sources, `order:` on components).

Mechanisms and their costs (abstract units; the plan minimises the sum over the mechanisms
it adds):

  seal-barrier   a compatible seal already reaches an order-sensitive path; the consumer
                 buffers each partition until every producer has sealed it. Not a choice,
                 but the runtime must provide it: listed with cost = number of producers
                 it waits for (at least 1), reported apart from the plan's cost.
  add-seal       a source that declares `sealable: [[k...]]` punctuates on key K.
                 cost = 2 + number of components where the seal is consumed by a seal
                 barrier (K reaches them through confluent paths and K is within the gate).
                 One seal can fix several points of order.
  keyed-order    `order: [keys]` on a component, keys within the gate of every point of
                 order it fixes. It replaces an existing keyed order, so its keys also lie
                 within every gate the existing order covers.
                 More keys means more partitions, each ordered independently, so it is
                 cheaper: cost = 4 + 6 / |keys| (integer division): 10 for one key, 7 for
                 two, 6 for three, 5 for four to six, 4 from seven. The planner proposes the
                 largest key set within all gates (the finest partitioning). Impossible for
                 the gate `*`.
  global-order   `order: global`: one total order (a sequencer or replicated log) over all
                 of the component's inputs. cost = 12 + 2 x producers, producers = streams
                 feeding the component (an input no stream feeds counts as one). Always
                 dearer than any keyed order.

Algorithm:
  1. Analyse the spec. If no sink fails, the status is `ok` and the plan lists the seal
     barriers only.
  2. Candidates: an add-seal for every sealable key of every source without a seal whose
     key reaches (through confluent paths, ignoring joins) an input of a point of order
     whose gate contains it; a keyed order (intersection of the gates of the component's
     points of order, and each single gate) and a global order for every component with an
     order-sensitive point of order. Candidates on the same component (or source) exclude
     each other.
  3. Upper bound: apply every candidate at once (the strongest order per component, the
     intersection of the keys per source). If a sink still fails, nothing in reach can fix
     it: the status is `unrepairable`, with each failing sink and the points of order that
     remain.
  4. Search: with at most 24 candidates, branch and bound over include/exclude decisions
     (cheapest first; prune when the cost reaches the best plan found, when the cost plus
     the cheapest remaining candidate does, or when applying every remaining candidate
     still fails a sink), seeded with the greedy plan. It is exact: no cheaper combination
     of candidates exists. Above 24 candidates, or past 20000 analyses, the plan is greedy:
     repeatedly add the candidate with the best (repaired sinks; removed points of order
     plus newly sealed streams into them) per unit of cost (lazily: earlier gains serve as
     estimates), once from nothing and once from every source's cheapest seal, and keep the
     cheaper. The output says which search was used. Each evaluation re-derives only the
     labels downstream of the change (an incremental analysis, checked against the full
     one in the tests), so the greedy search scales to generated fleets of 100k components.
  5. Irredundancy: drop every mechanism whose removal keeps every sink safe (a no-op for
     an exact plan). For each kept mechanism the plan reports the points of order and the
     sinks that fail again without it: that is why it is there. The removal is followed
     through at most 256 components; where it reaches further (a cycle through most of a
     fleet), the list is marked incomplete ('and possibly more'; `fixes_complete: false`).
  6. Verification: the final analysis runs with the plan applied; its seal barriers are
     listed for the runtime.

Exit status: 0 when the spec is ok or the plan repairs it, 1 when it is unrepairable, 2 when
the spec is invalid or the output cannot be written.
";

/// Which mechanisms the plan may use (`--allow`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Allowed {
    pub seal: bool,
    pub keyed: bool,
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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    pub fail_on: FailOn,
    pub allowed: Allowed,
    pub exact_limit: usize,
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

/// One change to the dataflow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Choice {
    AddSeal { source: SourceId, key: KeySet },
    Order { component: CompId, order: Order },
}

impl Choice {
    /// Two choices on the same source or component cannot both be applied: a source has one
    /// seal, a component one order.
    pub fn conflicts(self, other: Choice) -> bool {
        match (self, other) {
            (Choice::AddSeal { source: a, .. }, Choice::AddSeal { source: b, .. }) => a == b,
            (Choice::Order { component: a, .. }, Choice::Order { component: b, .. }) => a == b,
            _ => false,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    SealBarrier,
    AddSeal,
    KeyedOrder,
    GlobalOrder,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::SealBarrier => "seal-barrier",
            Kind::AddSeal => "add-seal",
            Kind::KeyedOrder => "keyed-order",
            Kind::GlobalOrder => "global-order",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub choice: Choice,
    pub cost: u32,
    /// For an add-seal: the components where the seal would be consumed, sorted by name.
    pub consumers: Vec<String>,
}

impl Candidate {
    pub fn kind(&self) -> Kind {
        match self.choice {
            Choice::AddSeal { .. } => Kind::AddSeal,
            Choice::Order {
                order: Order::Global,
                ..
            } => Kind::GlobalOrder,
            Choice::Order { .. } => Kind::KeyedOrder,
        }
    }
}

/// A point of order, by name, as the reports show it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct PointRef {
    pub component: String,
    pub input: String,
    pub output: String,
    pub annotation: &'static str,
    pub gate: Vec<String>,
    pub kind: &'static str,
}

/// A mechanism the plan adds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mechanism {
    pub kind: Kind,
    pub choice: Choice,
    /// Where it takes effect: the ordered component, or for an add-seal the components
    /// that consume the seal.
    pub components: Vec<String>,
    pub source: Option<String>,
    /// Sorted by name; empty for a global order.
    pub key: Vec<String>,
    /// For an order: the keys of the component's existing keyed order, which this one
    /// replaces (sorted by name); `None` when the component had no order.
    pub replaces: Option<Vec<String>>,
    pub cost: u32,
    /// Points of order that come back when this mechanism is removed from the plan.
    pub fixes: Vec<PointRef>,
    /// Whether `fixes` and `sinks` are all of them: the removal is followed through at most
    /// [`EXPLANATION_BUDGET`] components, and what it reaches further is not listed.
    pub fixes_complete: bool,
    /// Sinks that fail again when this mechanism is removed from the plan.
    pub sinks: Vec<String>,
    pub runtime: String,
}

/// A seal barrier the runtime must provide once the plan is applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Barrier {
    pub component: String,
    pub input: String,
    pub key: Vec<String>,
    pub producers: Vec<String>,
    pub cost: u32,
    /// Introduced by the plan (an added seal), rather than present in the spec.
    pub added: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Ok,
    Repaired,
    Unrepairable,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Repaired => "repaired",
            Status::Unrepairable => "unrepairable",
        }
    }
}

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
    pub fn as_str(self) -> &'static str {
        match self {
            SearchMode::None => "none",
            SearchMode::Exact => "exact",
            SearchMode::Greedy | SearchMode::GreedyBudget => "greedy",
        }
    }

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

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Search {
    pub mode: SearchMode,
    pub candidates: usize,
    pub evaluations: usize,
    pub exact_limit: usize,
    pub budget: usize,
}

/// Why a sink cannot be repaired.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reason {
    pub sink: String,
    /// The sink's label with every candidate applied.
    pub label: String,
    pub tolerate: &'static str,
    pub message: String,
    /// Points of order that remain with every candidate applied.
    pub points: Vec<PointRef>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SinkOutcome {
    pub name: String,
    pub tolerate: &'static str,
    /// `None` when no source reaches the sink.
    pub before: Option<String>,
    pub after: Option<String>,
    pub failing_before: bool,
    pub failing_after: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub name: String,
    pub status: Status,
    pub search: Search,
    /// Added mechanisms: add-seals, then keyed orders, then global orders, each by name.
    pub mechanisms: Vec<Mechanism>,
    /// Seal barriers with the plan applied, by component and input.
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
}

fn keyed_cost(n_keys: usize) -> u32 {
    4 + 6 / n_keys.max(1) as u32
}

/// Streams feeding a component; an input with none is fed by one implicit source.
fn producers_of(df: &Dataflow, c: CompId) -> usize {
    df.component(c)
        .inputs
        .iter()
        .map(|&i| df.iface(i).streams.len().max(1))
        .sum()
}

/// The cost model (see [`EXPLAIN`]).
pub fn cost(df: &Dataflow, choice: Choice, consumers: usize) -> u32 {
    match choice {
        Choice::AddSeal { .. } => 2 + consumers as u32,
        Choice::Order {
            order: Order::Keys(k),
            ..
        } => keyed_cost(df.keys.attrs(k).len()),
        Choice::Order {
            component,
            order: Order::Global,
        } => 12 + 2 * producers_of(df, component) as u32,
    }
}

/// Runs the analysis on a private copy of the dataflow with a set of choices applied.
pub struct Evaluator {
    df: Dataflow,
    base_order: Vec<Option<Order>>,
    base_seal: Vec<Option<KeySet>>,
    fail_on: FailOn,
    pub evaluations: usize,
}

impl Evaluator {
    pub fn new(df: &Dataflow, fail_on: FailOn) -> Self {
        Evaluator {
            base_order: df.components.iter().map(|c| c.order).collect(),
            base_seal: df.sources.iter().map(|s| s.seal).collect(),
            df: df.clone(),
            fail_on,
            evaluations: 0,
        }
    }

    /// The evaluator's copy of the dataflow: its key table holds every key set the
    /// evaluations interned, so names of labels it returned must be looked up here.
    pub fn dataflow(&self) -> &Dataflow {
        &self.df
    }

    /// The candidates for the baseline analysis `base` (interned in this copy's keys).
    pub fn candidates(&mut self, base: &analysis::Analysis, allowed: Allowed) -> Vec<Candidate> {
        candidates(&mut self.df, base, allowed)
    }

    /// Resets the copy to the spec and applies `choices` (later ones win on conflicts).
    pub fn set(&mut self, choices: &[Choice]) {
        for (c, o) in self.df.components.iter_mut().zip(&self.base_order) {
            c.order = *o;
        }
        for (s, k) in self.df.sources.iter_mut().zip(&self.base_seal) {
            s.seal = *k;
        }
        for &ch in choices {
            match ch {
                Choice::AddSeal { source, key } => self.df.sources[source.index()].seal = Some(key),
                Choice::Order { component, order } => {
                    self.df.components[component.index()].order = Some(order)
                }
            }
        }
    }

    /// The [`Score`] with `choices` applied; a plan is feasible when its first part is zero.
    pub fn score(&mut self, choices: &[Choice]) -> Score {
        self.set(choices);
        self.evaluations += 1;
        let labels = analysis::propagate(&mut self.df);
        let failing = self
            .df
            .sinks
            .iter()
            .zip(&labels.sink)
            .filter(|(s, l)| l.is_some_and(|l| s.fails(l, self.fail_on)))
            .count();
        let (mut points, mut unsealed) = (0, 0);
        for c in 0..self.df.components.len() {
            let (p, u) = local_score(&self.df, CompId(c as u32), &labels.iface, &labels.stream);
            points += p as usize;
            unsealed += u as usize;
        }
        (failing, points, unsealed)
    }

    pub fn feasible(&mut self, choices: &[Choice]) -> bool {
        self.score(choices).0 == 0
    }

    /// The analysis (points, barriers, sink verdicts; no diagnostics) with `choices` applied.
    pub fn analyze(&mut self, choices: &[Choice]) -> analysis::Analysis {
        self.set(choices);
        self.evaluations += 1;
        analysis::verdicts(&mut self.df, self.fail_on)
    }

    /// [`upper_bound`] in this evaluator's key table.
    pub fn upper_bound(&mut self, choices: &[Choice]) -> Vec<Choice> {
        upper_bound(&mut self.df.keys, choices)
    }
}

/// The strongest combination of `choices`: per component the strongest order (global, else
/// the intersection of the keys), per source the intersection of the seal keys. By
/// monotonicity, if this fails a sink, every combination of `choices` does.
pub fn upper_bound(keys: &mut Keys, choices: &[Choice]) -> Vec<Choice> {
    let mut orders: BTreeMap<CompId, Order> = BTreeMap::new();
    let mut seals: BTreeMap<SourceId, KeySet> = BTreeMap::new();
    for &ch in choices {
        match ch {
            Choice::Order { component, order } => {
                let merged = match (orders.get(&component), order) {
                    (None, o) => o,
                    (Some(Order::Global), _) | (_, Order::Global) => Order::Global,
                    (Some(&Order::Keys(a)), Order::Keys(b)) => Order::Keys(keys.intersection(a, b)),
                };
                orders.insert(component, merged);
            }
            Choice::AddSeal { source, key } => {
                let merged = match seals.get(&source) {
                    None => key,
                    Some(&k) => keys.intersection(k, key),
                };
                seals.insert(source, merged);
            }
        }
    }
    orders
        .into_iter()
        .map(|(component, order)| Choice::Order { component, order })
        .chain(
            seals
                .into_iter()
                .map(|(source, key)| Choice::AddSeal { source, key }),
        )
        .collect()
}

/// `(failing sinks, points of order, unsealed arrivals)`: the score the greedy search lowers.
/// Unsealed arrivals are the streams into the inputs a point of order depends on (an `OW`
/// path's input, an `OR` path's writing inputs) that carry no seal compatible with its gate:
/// they measure progress that fixes no point yet, such as the first of the two seals an input
/// fed by two sources needs.
pub type Score = (usize, usize, usize);

/// Component `cid`'s share of the [`Score`]: (points of order, unsealed arrivals at them).
pub(crate) fn local_score(
    df: &Dataflow,
    cid: CompId,
    iface: &[Option<Label>],
    stream: &[Option<Label>],
) -> (u32, u32) {
    let c = df.component(cid);
    let arrivals = |input: IfaceId, gate: Gate| {
        df.iface(input)
            .streams
            .iter()
            .filter(|s| match stream[s.index()] {
                Some(Label::Seal(k)) => !gate.compatible(k, &df.keys),
                Some(_) => true,
                None => false,
            })
            .count() as u32
    };
    let (mut points, mut unsealed) = (0, 0);
    for p in &c.paths {
        let Some(l) = iface[p.input.index()] else {
            continue;
        };
        let k = analysis::contribute(df, c, p, l, iface);
        if !(k.taint || k.ndread) {
            continue;
        }
        points += 1;
        let gate = p.gate.unwrap_or(Gate::Star);
        unsealed += match p.annotation {
            Annotation::OW => arrivals(p.input, gate),
            Annotation::OR => c
                .paths
                .iter()
                .filter(|w| w.annotation.writes())
                .map(|w| arrivals(w.input, gate))
                .sum(),
            _ => 0,
        };
    }
    (points, unsealed)
}

/// Inputs reached from a source through streams and confluent paths, ignoring joins with
/// other streams (an over-approximation of where its seal can arrive). Streams that declare
/// their own seal replace the label, so the walk stops there. `seen` is scratch space, all
/// false on entry and on return.
fn reached_inputs(df: &Dataflow, source: SourceId, seen: &mut [bool]) -> Vec<IfaceId> {
    let mut out: Vec<IfaceId> = Vec::new();
    let mut stack: Vec<IfaceId> = Vec::new();
    let follow = |streams: &[crate::graph::StreamId], stack: &mut Vec<IfaceId>| {
        for s in streams {
            let st = &df.streams[s.index()];
            if st.seal.is_some() {
                continue;
            }
            if let Consumer::Input(i) = st.to {
                stack.push(i);
            }
        }
    };
    follow(&df.sources[source.index()].streams, &mut stack);
    while let Some(i) = stack.pop() {
        if std::mem::replace(&mut seen[i.index()], true) {
            continue;
        }
        out.push(i);
        let c = df.component(df.iface(i).component);
        for p in c
            .paths
            .iter()
            .filter(|p| p.input == i && p.annotation.is_confluent())
        {
            follow(&df.iface(p.output).streams, &mut stack);
        }
    }
    for i in &out {
        seen[i.index()] = false;
    }
    out
}

/// Every candidate mechanism, cheapest first (ties in a fixed order: seals, keyed, global, by
/// index), from the baseline analysis.
pub fn candidates(
    df: &mut Dataflow,
    base: &analysis::Analysis,
    allowed: Allowed,
) -> Vec<Candidate> {
    // Intersections are interned into the dataflow's own key table, so the candidates' keys
    // mean the same in every later analysis of it.
    let mut keys = std::mem::take(&mut df.keys);
    let out = candidates_with(df, &mut keys, base, allowed);
    df.keys = keys;
    out
}

fn candidates_with(
    df: &Dataflow,
    keys: &mut crate::label::Keys,
    base: &analysis::Analysis,
    allowed: Allowed,
) -> Vec<Candidate> {
    let mut out = Vec::new();
    // Components whose order-sensitive paths are points of order: ordering can help there.
    let mut ordered_points: BTreeMap<CompId, Vec<usize>> = BTreeMap::new();
    for p in &base.points {
        let path = &df.component(p.component).paths[p.path];
        if !path.annotation.is_confluent() {
            ordered_points.entry(p.component).or_default().push(p.path);
        }
    }
    if allowed.seal {
        // The points of order a seal arriving at each input could fix: an `OW` point at its
        // own input, an `OR` point at every writing input of its component.
        let mut at_input: Vec<Vec<usize>> = vec![Vec::new(); df.ifaces.len()];
        for (pi, p) in base.points.iter().enumerate() {
            let c = df.component(p.component);
            let path = &c.paths[p.path];
            match (p.kind, path.annotation) {
                (PointKind::Taint, Annotation::OW) => at_input[path.input.index()].push(pi),
                (PointKind::NdRead, _) => {
                    for w in c.paths.iter().filter(|w| w.annotation.writes()) {
                        at_input[w.input.index()].push(pi);
                    }
                }
                _ => {}
            }
        }
        let mut seen = vec![false; df.ifaces.len()];
        for (si, src) in df.sources.iter().enumerate() {
            if src.seal.is_some() {
                continue;
            }
            let sid = SourceId(si as u32);
            let reached = reached_inputs(df, sid, &mut seen);
            let mut points: Vec<usize> = reached
                .iter()
                .flat_map(|i| at_input[i.index()].iter().copied())
                .collect();
            points.sort_unstable();
            points.dedup();
            let mut seen_keys = BTreeSet::new();
            for &key in &src.sealable {
                if !seen_keys.insert(key) {
                    continue;
                }
                let mut consumers: BTreeSet<String> = BTreeSet::new();
                for &pi in &points {
                    let p = &base.points[pi];
                    let c = df.component(p.component);
                    let gate = c.paths[p.path].gate.unwrap_or(Gate::Star);
                    if gate.compatible(key, keys) {
                        consumers.insert(c.name.clone());
                    }
                }
                if consumers.is_empty() {
                    continue;
                }
                let choice = Choice::AddSeal { source: sid, key };
                out.push(Candidate {
                    choice,
                    cost: 2 + consumers.len() as u32,
                    consumers: consumers.into_iter().collect(),
                });
            }
        }
    }
    for (&cid, paths) in &ordered_points {
        let c = df.component(cid);
        if allowed.keyed {
            let gates: Vec<Option<KeySet>> = paths
                .iter()
                .map(|&pi| match c.paths[pi].gate {
                    Some(Gate::Keys(k)) => Some(k),
                    _ => None,
                })
                .collect();
            // A new keyed order replaces the existing one, so it must keep protecting every
            // path the existing order protects (this keeps mechanisms monotone): its keys lie
            // within each of their gates. An existing order that protects nothing (its keys
            // lie in no gate) constrains nothing: replacing it costs no protection.
            let protected: Vec<KeySet> = match c.order {
                Some(Order::Keys(_)) => c
                    .paths
                    .iter()
                    .filter(|p| !p.annotation.is_confluent())
                    .filter_map(|p| match p.gate {
                        Some(g @ Gate::Keys(k)) if c.ordered_for(g, keys) => Some(k),
                        _ => None,
                    })
                    .collect(),
                _ => Vec::new(),
            };
            let within = protected.into_iter().reduce(|a, b| keys.intersection(a, b));
            let mut keyed: Vec<KeySet> = Vec::new();
            if gates.iter().all(Option::is_some) {
                let mut all = gates[0].unwrap_or(KeySet::EMPTY);
                for g in gates.iter().flatten() {
                    all = keys.intersection(all, *g);
                }
                keyed.push(all);
            }
            for g in gates.iter().flatten() {
                keyed.push(*g);
            }
            let mut seen = BTreeSet::new();
            for mut k in keyed {
                if let Some(w) = within {
                    k = keys.intersection(k, w);
                }
                // Ordering by no key at all is a global order: offered as such.
                if k == KeySet::EMPTY || !seen.insert(k) {
                    continue;
                }
                let choice = Choice::Order {
                    component: cid,
                    order: Order::Keys(k),
                };
                out.push(Candidate {
                    choice,
                    cost: keyed_cost(keys.attrs(k).len()),
                    consumers: Vec::new(),
                });
            }
        }
        if allowed.global && c.order != Some(Order::Global) {
            let choice = Choice::Order {
                component: cid,
                order: Order::Global,
            };
            out.push(Candidate {
                choice,
                cost: cost(df, choice, 0),
                consumers: Vec::new(),
            });
        }
    }
    out.sort_by_key(|c| (c.cost, c.kind()));
    out
}

/// The planner's result before naming: the chosen candidate indices.
struct Chosen {
    indices: Vec<usize>,
    mode: SearchMode,
}

fn choices_of(cands: &[Candidate], idx: &[usize]) -> Vec<Choice> {
    idx.iter().map(|&i| cands[i].choice).collect()
}

fn total_cost(cands: &[Candidate], idx: &[usize]) -> u32 {
    idx.iter().map(|&i| cands[i].cost).sum()
}

/// Failing sinks dominate; then a point of order weighs as much as one unsealed arrival
/// (removing a point also removes its arrivals), so that a cheap seal that is half of a fix
/// can beat a dearer order that fixes one point outright.
fn weight(s: Score) -> u64 {
    s.0 as u64 * 1_000_000_000 + s.1 as u64 + s.2 as u64
}

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
        _ => false,
    }
}

/// Which chosen candidate sits on each source and component: a new choice there replaces it.
struct Slots {
    source: Vec<Option<usize>>,
    component: Vec<Option<usize>>,
}

impl Slots {
    fn new(df: &Dataflow) -> Self {
        Slots {
            source: vec![None; df.sources.len()],
            component: vec![None; df.components.len()],
        }
    }

    fn get(&self, choice: Choice) -> Option<usize> {
        match choice {
            Choice::AddSeal { source, .. } => self.source[source.index()],
            Choice::Order { component, .. } => self.component[component.index()],
        }
    }

    fn slot(&mut self, choice: Choice) -> &mut Option<usize> {
        match choice {
            Choice::AddSeal { source, .. } => &mut self.source[source.index()],
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
    let mut heap: std::collections::BinaryHeap<Entry> = (0..cands.len())
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

/// Exact branch and bound over include/exclude decisions, candidates in cost order.
struct Bb<'a> {
    lab: &'a mut Labeling,
    cands: &'a [Candidate],
    conflicts: Vec<u64>,
    memo: HashMap<u64, bool>,
    best: Option<(u32, u64)>,
    budget: usize,
    aborted: bool,
}

impl Bb<'_> {
    fn indices(mask: u64) -> Vec<usize> {
        (0..64).filter(|i| mask & (1 << i) != 0).collect()
    }

    fn feasible(&mut self, mask: u64) -> bool {
        if let Some(&f) = self.memo.get(&mask) {
            return f;
        }
        if self.lab.evaluations >= self.budget {
            self.aborted = true;
            return false;
        }
        let f = self
            .lab
            .feasible(&choices_of(self.cands, &Self::indices(mask)));
        self.memo.insert(mask, f);
        f
    }

    fn bound_feasible(&mut self, mask: u64) -> bool {
        if self.lab.evaluations >= self.budget {
            self.aborted = true;
            return false;
        }
        let all = choices_of(self.cands, &Self::indices(mask));
        let ub = upper_bound(self.lab.keys_mut(), &all);
        self.lab.feasible(&ub)
    }

    fn go(&mut self, idx: usize, chosen: u64, cost: u32, excluded: u64) {
        if self.aborted || self.best.is_some_and(|(b, _)| cost >= b) {
            return;
        }
        if self.feasible(chosen) {
            self.best = Some((cost, chosen));
            return;
        }
        let n = self.cands.len();
        let remaining: u64 = (idx..n)
            .filter(|&i| excluded & (1 << i) == 0)
            .fold(0, |m, i| m | (1 << i));
        if remaining == 0 {
            return;
        }
        // Another candidate is needed: the cheapest remaining one is a lower bound.
        let cheapest = Self::indices(remaining)
            .iter()
            .map(|&i| self.cands[i].cost)
            .min()
            .unwrap_or(0);
        if self.best.is_some_and(|(b, _)| cost + cheapest >= b) {
            return;
        }
        if !self.bound_feasible(chosen | remaining) {
            return;
        }
        let i = remaining.trailing_zeros() as usize;
        self.go(
            i + 1,
            chosen | (1 << i),
            cost + self.cands[i].cost,
            excluded | self.conflicts[i],
        );
        self.go(i + 1, chosen, cost, excluded | (1 << i));
    }
}

fn exact(
    lab: &mut Labeling,
    cands: &[Candidate],
    seed: Option<&[usize]>,
    budget: usize,
) -> Option<Option<Vec<usize>>> {
    let conflicts = cands
        .iter()
        .map(|a| {
            cands
                .iter()
                .enumerate()
                .filter(|(_, b)| a.choice.conflicts(b.choice))
                .fold(0u64, |m, (j, _)| m | (1 << j))
        })
        .collect();
    let best = seed.map(|s| {
        (
            total_cost(cands, s),
            s.iter().fold(0u64, |m, &i| m | (1 << i)),
        )
    });
    let mut bb = Bb {
        lab,
        cands,
        conflicts,
        memo: HashMap::new(),
        best,
        budget,
        aborted: false,
    };
    bb.go(0, 0, 0, 0);
    if bb.aborted {
        return None;
    }
    Some(bb.best.map(|(_, m)| Bb::indices(m)))
}

/// Drops mechanisms (dearest first) whose removal keeps every sink safe. `idx` must be a
/// feasible set of candidates, one per source and component.
fn irredundant(lab: &mut Labeling, cands: &[Candidate], mut idx: Vec<usize>) -> Vec<usize> {
    let origin = lab.checkpoint();
    apply_all(lab, &choices_of(cands, &idx));
    let mut order = idx.clone();
    order.sort_by_key(|&i| std::cmp::Reverse((cands[i].cost, i)));
    let mut dropped = vec![false; cands.len()];
    for i in order {
        dropped[i] = lab.revert_if_safe(cands[i].choice);
    }
    lab.rollback(origin);
    lab.set_exact(true);
    idx.retain(|&i| !dropped[i]);
    idx.sort_unstable();
    idx
}

/// Applies `choices` and leaves the labels exact, in a mode where removing one of them again
/// is evaluated exactly without re-solving cycles (it only raises labels; see
/// [`Labeling::set_exact`]): cheap for the irredundancy pass and the explanations.
fn apply_all(lab: &mut Labeling, choices: &[Choice]) {
    lab.set_exact(false);
    for &c in choices {
        lab.apply(c);
    }
    lab.reanchor();
}

/// The greedy plan: the cheaper (after irredundancy) of two greedy runs, one from nothing
/// and one from every source's cheapest seal. The second exists because greedy steps are
/// myopic: where a point of order needs the seals of two sources, no single seal fixes
/// anything and an order always looks better, although sealing every source (then dropping
/// the seals that are not needed) can be much cheaper.
fn greedy_plan(lab: &mut Labeling, cands: &[Candidate]) -> Option<Vec<usize>> {
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

fn search(lab: &mut Labeling, cands: &[Candidate], options: &Options) -> Option<Chosen> {
    let greedy_plan = greedy_plan(lab, cands);
    if cands.len() > options.exact_limit.min(63) {
        return greedy_plan.map(|indices| Chosen {
            indices,
            mode: SearchMode::Greedy,
        });
    }
    let budget = lab.evaluations + options.evaluation_budget;
    match exact(lab, cands, greedy_plan.as_deref(), budget) {
        Some(found) => found.map(|indices| Chosen {
            indices: irredundant(lab, cands, indices),
            mode: SearchMode::Exact,
        }),
        None => greedy_plan.map(|indices| Chosen {
            indices,
            mode: SearchMode::GreedyBudget,
        }),
    }
}

/// A point of order by name; `iface` holds the labels of the state it was found in (the
/// input's label and the component's order tell an unordered write from a written `Inst`).
fn point_ref(
    df: &Dataflow,
    iface: &[Option<Label>],
    component: CompId,
    path: usize,
    kind: PointKind,
) -> PointRef {
    let c = df.component(component);
    let path = &c.paths[path];
    let input = iface[path.input.index()].unwrap_or(Label::Async);
    PointRef {
        component: c.name.clone(),
        input: df.iface(path.input).name.clone(),
        output: df.iface(path.output).name.clone(),
        annotation: path.annotation.as_str(),
        gate: path.gate.map(|g| g.names(&df.keys)).unwrap_or_default(),
        kind: analysis::point_code(c, path, kind, input, &df.keys).name,
    }
}

/// A label as reports print it; `None` when no source reaches the stream.
fn label_text(df: &Dataflow, l: Option<Label>) -> Option<String> {
    l.map(|l| l.display(&df.keys))
}

fn barrier_list(
    df: &Dataflow,
    a: &analysis::Analysis,
    before: &analysis::Analysis,
) -> Vec<Barrier> {
    let existing: BTreeSet<(CompId, IfaceId, KeySet)> = before
        .barriers
        .iter()
        .map(|b| (b.component, b.input, b.key))
        .collect();
    let mut out: Vec<Barrier> = a
        .barriers
        .iter()
        .map(|b| Barrier {
            component: df.component(b.component).name.clone(),
            input: df.iface(b.input).name.clone(),
            key: names(df, b.key),
            producers: b.producers.clone(),
            cost: b.producers.len().max(1) as u32,
            added: !existing.contains(&(b.component, b.input, b.key)),
        })
        .collect();
    out.sort_by(|a, b| (&a.component, &a.input).cmp(&(&b.component, &b.input)));
    out
}

fn runtime_text(df: &Dataflow, cand: &Candidate) -> String {
    match cand.choice {
        Choice::AddSeal { source, key } if key == KeySet::EMPTY => format!(
            "source `{}` marks the end of its stream; {} buffer{} the whole stream until it has ended (a seal barrier)",
            df.sources[source.index()].name,
            cand.consumers.join(", "),
            if cand.consumers.len() == 1 { "s" } else { "" },
        ),
        Choice::AddSeal { source, key } => format!(
            "source `{}` punctuates every `{}` partition; {} buffer{} each partition until it is sealed (a seal barrier)",
            df.sources[source.index()].name,
            df.keys.display(key),
            cand.consumers.join(", "),
            if cand.consumers.len() == 1 { "s" } else { "" },
        ),
        Choice::Order {
            component,
            order: Order::Keys(k),
        } => format!(
            "one durable order per ({}) partition of {}'s inputs (keyed sessions with leases, or a partitioned log)",
            df.keys.display(k),
            df.component(component).name
        ),
        Choice::Order { component, .. } => {
            let n = producers_of(df, component);
            format!(
                "one durable total order of the {} into {} (a sequencer or replicated log)",
                if n == 1 {
                    "producer stream".to_string()
                } else {
                    format!("{n} producer streams")
                },
                df.component(component).name
            )
        }
    }
}

/// Plans the coordination for an analysed dataflow.
pub fn plan(df: &Dataflow, options: &Options) -> Plan {
    let mut ev = Evaluator::new(df, options.fail_on);
    let base = ev.analyze(&[]);
    let mut result = Plan {
        name: df.name.clone(),
        status: Status::Ok,
        search: Search {
            mode: SearchMode::None,
            candidates: 0,
            evaluations: 0,
            exact_limit: options.exact_limit,
            budget: options.evaluation_budget,
        },
        mechanisms: Vec::new(),
        barriers: barrier_list(ev.dataflow(), &base, &base),
        reasons: Vec::new(),
        sinks: sink_outcomes(ev.dataflow(), &base, &base),
        cost: 0,
        barrier_cost: 0,
    };
    if !base.failing() {
        result.barrier_cost = result.barriers.iter().map(|b| b.cost).sum();
        result.search.evaluations = ev.evaluations;
        return result;
    }
    let cands = ev.candidates(&base, options.allowed);
    result.search.candidates = cands.len();
    // Built after the candidates (their intersections are interned in `ev`'s key table) and
    // before `ev` applies any choice (it starts from `ev`'s current orders and seals).
    let mut lab = Labeling::new(ev.dataflow(), options.fail_on);
    let all: Vec<Choice> = cands.iter().map(|c| c.choice).collect();
    let ub = ev.upper_bound(&all);
    let bound_ok = ev.feasible(&ub);
    let chosen = if bound_ok {
        search(&mut lab, &cands, options)
    } else {
        None
    };
    let Some(chosen) = chosen else {
        // Either even the strongest combination fails a sink, or it passes only by merging
        // choices that exclude each other (two seals of one source, two keyed orders of one
        // component): then the remaining damage is the baseline's.
        let after = if bound_ok {
            ev.analyze(&[])
        } else {
            ev.analyze(&ub)
        };
        let d = ev.dataflow();
        result.status = Status::Unrepairable;
        let why = if cands.is_empty() {
            Why::NoCandidate
        } else if bound_ok {
            Why::Conflicts
        } else {
            Why::Bound
        };
        result.reasons = reasons(d, &after, options, why);
        result.sinks = sink_outcomes(d, &base, &after);
        result.search.evaluations = ev.evaluations + lab.evaluations;
        return result;
    };
    let choices = choices_of(&cands, &chosen.indices);
    let after = ev.analyze(&choices);
    // The planner must not guess: a plan the full analysis rejects is not reported. (The
    // search checks feasibility with the same propagation, so this is a safety net.)
    if after.failing() {
        let d = ev.dataflow();
        result.status = Status::Unrepairable;
        result.reasons = reasons(d, &after, options, Why::Bound);
        result.sinks = sink_outcomes(d, &base, &after);
        result.search.evaluations = ev.evaluations + lab.evaluations;
        return result;
    }
    let after_points: BTreeSet<PointRef> = after
        .points
        .iter()
        .map(|p| {
            point_ref(
                ev.dataflow(),
                &after.labels.iface,
                p.component,
                p.path,
                p.kind,
            )
        })
        .collect();
    // Why each mechanism is there: what comes back when it alone is removed. Only the
    // components the removal re-derives can change, so only they are looked at.
    let mut mechanisms = Vec::new();
    let with_plan = lab.checkpoint();
    apply_all(&mut lab, &choices);
    for &i in &chosen.indices {
        let cp = lab.checkpoint();
        let complete = lab.revert_within(cands[i].choice, EXPLANATION_BUDGET);
        let fixes: Vec<PointRef> = lab
            .touched_since(&cp)
            .into_iter()
            .flat_map(|c| {
                lab.points_of(c)
                    .into_iter()
                    .map(move |(path, kind)| (c, path, kind))
            })
            .map(|(c, path, kind)| point_ref(lab.dataflow(), lab.labels().iface, c, path, kind))
            .filter(|p| !after_points.contains(p))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let failing: BTreeSet<String> = lab
            .failing_sinks_since(&cp)
            .into_iter()
            .map(|k| ev.dataflow().sinks[k.index()].name.clone())
            .collect();
        lab.rollback(cp);
        let d = ev.dataflow();
        let cand = &cands[i];
        let (components, source, key, replaces) = match cand.choice {
            Choice::AddSeal { source, key } => (
                cand.consumers.clone(),
                Some(d.sources[source.index()].name.clone()),
                names(d, key),
                None,
            ),
            Choice::Order { component, order } => (
                vec![d.component(component).name.clone()],
                None,
                match order {
                    Order::Keys(k) => names(d, k),
                    Order::Global => Vec::new(),
                },
                match ev.base_order[component.index()] {
                    Some(Order::Keys(k)) => Some(names(d, k)),
                    _ => None,
                },
            ),
        };
        mechanisms.push(Mechanism {
            kind: cand.kind(),
            choice: cand.choice,
            components,
            source,
            key,
            replaces,
            cost: cand.cost,
            fixes,
            fixes_complete: complete,
            sinks: failing.into_iter().collect(),
            runtime: runtime_text(d, cand),
        });
    }
    lab.rollback(with_plan);
    lab.set_exact(true);
    mechanisms.sort_by(|a, b| {
        (a.kind, &a.source, &a.components, &a.key).cmp(&(b.kind, &b.source, &b.components, &b.key))
    });
    let d = ev.dataflow();
    result.status = Status::Repaired;
    result.cost = mechanisms.iter().map(|m| m.cost).sum();
    result.mechanisms = mechanisms;
    result.barriers = barrier_list(d, &after, &base);
    result.barrier_cost = result.barriers.iter().map(|b| b.cost).sum();
    result.sinks = sink_outcomes(d, &base, &after);
    result.search.mode = chosen.mode;
    result.search.evaluations = ev.evaluations + lab.evaluations;
    result
}

fn names(df: &Dataflow, k: KeySet) -> Vec<String> {
    df.keys.names(k).into_iter().map(str::to_string).collect()
}

fn sink_outcomes(
    df: &Dataflow,
    base: &analysis::Analysis,
    after: &analysis::Analysis,
) -> Vec<SinkOutcome> {
    df.sinks
        .iter()
        .enumerate()
        .map(|(i, s)| SinkOutcome {
            name: s.name.clone(),
            tolerate: s.tolerance().as_str(),
            before: label_text(df, base.sinks[i].label),
            after: label_text(df, after.sinks[i].label),
            failing_before: base.sinks[i].failing,
            failing_after: after.sinks[i].failing,
        })
        .collect()
}

/// Why each sink still fails with every candidate applied.
enum Why {
    NoCandidate,
    Conflicts,
    Bound,
}

fn reasons(df: &Dataflow, after: &analysis::Analysis, options: &Options, why: Why) -> Vec<Reason> {
    let points: Vec<PointRef> = after
        .points
        .iter()
        .map(|p| point_ref(df, &after.labels.iface, p.component, p.path, p.kind))
        .collect();
    let a = options.allowed;
    let mut disallowed = Vec::new();
    if !a.seal {
        disallowed.push("add-seal");
    }
    if !a.keyed {
        disallowed.push("keyed-order");
    }
    if !a.global {
        disallowed.push("global-order");
    }
    after
        .sinks
        .iter()
        .filter(|v| v.failing)
        .map(|v| {
            let sink = &df.sinks[v.sink.index()];
            let label = label_text(df, v.label).unwrap_or_default();
            let mut message = match why {
                Why::NoCandidate => format!(
                    "no allowed mechanism applies to the points of order behind `{}`",
                    sink.name
                ),
                Why::Conflicts => format!(
                    "no combination of candidates repairs `{}`: it would need two seals of one source or two keyed orders of one component at once, and a keyed order by the keys they share would be no keyed order at all",
                    sink.name
                ),
                Why::Bound => format!(
                    "with every candidate mechanism applied, `{}` still receives {label}, worse than it tolerates ({})",
                    sink.name,
                    sink.tolerance().as_str()
                ),
            };
            if !disallowed.is_empty() {
                message.push_str(&format!(
                    "; not allowed by --allow: {}",
                    disallowed.join(", ")
                ));
            }
            let star = after.points.iter().any(|p| {
                let path = &df.component(p.component).paths[p.path];
                path.gate == Some(Gate::Star)
            });
            if star && !a.global {
                message.push_str("; a gate `*` can only be fixed by a global order");
            }
            Reason {
                sink: sink.name.clone(),
                label,
                tolerate: sink.tolerance().as_str(),
                message,
                points: points.clone(),
            }
        })
        .collect()
}
