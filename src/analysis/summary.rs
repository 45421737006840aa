//! A module's summary (the algebra's §10): the grey box that behaves as the module does. For
//! each of the module's input→output pairs it is an annotation (with its gate) such that a
//! component with those paths gives every output the label the module's own dataflow gives it,
//! for every labelling of the inputs; when no grey box does (a seal made or consumed inside,
//! an order-sensitive step after a seal is consumed), there is no summary, and the answer says
//! why with the inputs that tell the two apart.
//!
//! "Every labelling" is finite: a label matters to the rules only through its rank and, for a
//! seal, through which gates it is compatible with, and the module's gates name finitely many
//! attributes. So the inputs range over unreached, `Async`, `Run`, `Inst`, `Diverge`, and a
//! seal on every subset of those attributes plus one on an attribute no gate names; on that
//! grid the comparison is exact. The grid grows with the inputs: past [`MAX_WORK`] evaluations
//! the module is not summarized, and the answer says so.
//!
//! Must not know: files, YAML beyond building the grey box it compares, output formats.

use std::collections::BTreeSet;

use crate::graph::{Consumer, Dataflow, IfaceId, Producer};
use crate::label::{Annotation, Gate, Label};
pub use crate::whitebox::DerivedGate;

use super::fixpoint::propagate_from;

/// The most evaluations of a dataflow (module or grey box, weighted by its size) a summary
/// may take: a module with many inputs and attributes is answered "too big" rather than
/// searched for minutes.
pub const MAX_WORK: u64 = 8_000_000;

/// The most attributes whose every subset is a candidate gate; past it, the candidates are
/// the module's own gates, the empty gate and all of them.
const MAX_SUBSET_ATTRS: usize = 4;

/// The attribute no gate names: not a name a spec can write.
const UNNAMED: &str = "\u{2}unnamed";

/// One path of a summary: the module's input (a source of its file) to its output (a sink).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SummaryPath {
    pub from: String,
    pub to: String,
    pub annotation: Annotation,
    /// For `OR`/`OW`.
    pub gate: Option<DerivedGate>,
}

impl SummaryPath {
    /// `OW(customer)`, `CR`.
    pub fn signature(&self) -> String {
        match &self.gate {
            Some(g) => format!("{}({})", self.annotation.as_str(), g.show()),
            None => self.annotation.as_str().to_string(),
        }
    }
}

/// The grey box a module behaves as.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GreyBox {
    /// Whether the grey box is replicated (`replicated:`), which decides what a write of a
    /// disordered input does (section 5's reconciliation).
    pub replicated: bool,
    /// One path per input→output pair that data can flow along, by input then output.
    pub paths: Vec<SummaryPath>,
}

/// A module's summary, or why it has none.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Summary {
    Exact(GreyBox),
    /// No grey box behaves as the module: why, with the inputs that tell them apart.
    None(String),
    /// The comparison would take more than [`MAX_WORK`]: how big it is.
    TooBig(String),
}

/// A label as names, so that labels of two dataflows (two key tables) compare.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Named {
    Unreached,
    Seal(Vec<String>),
    Async,
    Run,
    Inst,
    Diverge,
}

impl Named {
    fn of(l: Option<Label>, df: &Dataflow) -> Named {
        match l {
            None => Named::Unreached,
            Some(Label::Seal(k)) => {
                let mut v: Vec<String> = df.keys.names(k).into_iter().map(String::from).collect();
                v.sort();
                Named::Seal(v)
            }
            Some(Label::Async) => Named::Async,
            Some(Label::Run) => Named::Run,
            Some(Label::Inst) => Named::Inst,
            Some(Label::Diverge) => Named::Diverge,
        }
    }

    fn to_label(&self, df: &mut Dataflow) -> Option<Label> {
        Some(match self {
            Named::Unreached => return None,
            Named::Seal(k) => Label::Seal(df.keys.set_of(k.iter().map(String::as_str))),
            Named::Async => Label::Async,
            Named::Run => Label::Run,
            Named::Inst => Label::Inst,
            Named::Diverge => Label::Diverge,
        })
    }

    fn display(&self) -> String {
        match self {
            Named::Unreached => "nothing".to_string(),
            Named::Seal(k) if k.is_empty() => "Seal(∅)".to_string(),
            Named::Seal(k) if k == &[UNNAMED] => "a seal on an attribute no gate names".to_string(),
            Named::Seal(k) => format!("Seal({})", k.join(", ")),
            Named::Async => "Async".to_string(),
            Named::Run => "Run".to_string(),
            Named::Inst => "Inst".to_string(),
            Named::Diverge => "Diverge".to_string(),
        }
    }
}

/// An order given to the grey box, by names: the `order:` of the composite that uses the
/// module, which the expansion puts on every component inside.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum OrderNames {
    Global,
    Keys(Vec<String>),
}

/// The summary of the module whose dataflow is `df` (a spec checked on its own: its sources
/// are the module's inputs, its sinks its outputs).
pub fn summarize(df: &Dataflow) -> Summary {
    summarize_with(df, None, None)
}

/// [`summarize`] for a grey box that carries `order` (the module's components carry what the
/// composite put on them already): the paths such that a component with them and that order
/// behaves as the module. `prefer` is compared first where it has a pair (the module's own
/// summary: an ordered grey box is often as exact with it as with a weaker annotation, and the
/// file's own reads best).
pub fn summarize_with(
    df: &Dataflow,
    order: Option<&OrderNames>,
    prefer: Option<&GreyBox>,
) -> Summary {
    let mut module = df.clone();
    // The outer stream into an input replaces the module's source, and its seal with it.
    for s in &mut module.streams {
        if matches!(s.from, Producer::Source(_)) {
            s.seal = None;
            s.seal_span = None;
        }
    }
    let inputs: Vec<String> = module.sources.iter().map(|s| s.name.clone()).collect();
    let outputs: Vec<String> = module.sinks.iter().map(|s| s.name.clone()).collect();
    let pairs = pairs(&module);
    let attrs = attributes(&module);
    let gates = candidate_gates(&module, &attrs);
    let tests = test_labels(&gates);
    let grid = (tests.len() as u64).saturating_pow(inputs.len() as u32);
    let size = (module.components.len() + module.streams.len() + 1) as u64;
    if grid.saturating_mul(size) > MAX_WORK {
        return Summary::TooBig(format!(
            "comparing {} inputs over {} labels each is {grid} evaluations of {size} nodes, more than the {MAX_WORK} a summary takes",
            inputs.len(),
            tests.len()
        ));
    }
    let assignments: Vec<Vec<usize>> = (0..grid)
        .map(|mut g| {
            (0..inputs.len())
                .map(|_| {
                    let t = (g % tests.len() as u64) as usize;
                    g /= tests.len() as u64;
                    t
                })
                .collect()
        })
        .collect();
    let expected: Vec<Vec<Named>> = assignments
        .iter()
        .map(|a| outputs_of(&mut module, a, &tests))
        .collect();
    // An input inside the module that no stream feeds is a source of its own (C005): an
    // output it reaches has a label with nothing fed, which no grey box gives.
    let unfed: Vec<String> = module
        .ifaces
        .iter()
        .filter(|f| super::rules::is_unfed_input(f))
        .map(|f| format!("`{}.{}`", module.component(f.component).name, f.name))
        .collect();
    if let Some(o) = expected
        .first()
        .and_then(|e| e.iter().position(|l| *l != Named::Unreached))
    {
        return Summary::None(format!(
            "with nothing fed, the module's `{}` is {}: {}, which no stream feeds, {} of its own, and no grey box has one; feed {} from a source of the module",
            outputs[o],
            expected[0][o].display(),
            if unfed.is_empty() {
                "an input inside it".to_string()
            } else {
                unfed.join(", ")
            },
            if unfed.len() > 1 {
                "are sources"
            } else {
                "is a source"
            },
            if unfed.len() > 1 { "them" } else { "it" },
        ));
    }
    let Some(mut grey) = grey_box(&inputs, &outputs, &pairs) else {
        return Summary::None("the module's dataflow has no input and output to summarize".into());
    };
    grey.components[0].order = order.map(|o| match o {
        OrderNames::Global => crate::graph::Order::Global,
        OrderNames::Keys(k) => {
            crate::graph::Order::Keys(grey.keys.set_of(k.iter().map(String::as_str)))
        }
    });
    let mut guess = structural(&module, &pairs);
    for (g, &(i, o)) in guess.iter_mut().zip(&pairs) {
        let preferred = prefer
            .into_iter()
            .flat_map(|p| &p.paths)
            .find(|p| p.from == inputs[i] && p.to == outputs[o]);
        if let Some(p) = preferred {
            *g = (p.annotation, p.gate.clone());
        }
    }
    let replicated_guess = module.components.iter().any(|c| c.replicated);
    let candidates: Vec<Vec<(Annotation, Option<DerivedGate>)>> = pairs
        .iter()
        .zip(&guess)
        .map(|(_, g)| {
            // The guess, then its kind (an equally exact `OW(*)` reads better than an `OR`
            // for a chain of writes), then the rest, least order-sensitive first.
            let mut all = vec![g.clone()];
            let rest = candidates(&gates).into_iter().filter(|c| c != g);
            let (same, other): (Vec<_>, Vec<_>) = rest.partition(|c| c.0 == g.0);
            all.extend(same);
            all.extend(other);
            all
        })
        .collect();
    let combos: u64 = candidates
        .iter()
        .map(|c| c.len() as u64)
        .fold(2, u64::saturating_mul);
    let grey_size = (grey.streams.len() + 2) as u64;
    let budget = MAX_WORK / grid.max(1) / grey_size.max(1);
    let mut first_miss: Option<String> = None;
    let mut tried = 0u64;
    // The structural guess first (it is usually the answer), then every combination in order,
    // while the budget lasts.
    let mut choice = vec![0usize; pairs.len()];
    // The grey box's paths for a choice of a candidate per pair.
    let chosen = |choice: &[usize]| -> Vec<SummaryPath> {
        pairs
            .iter()
            .zip(choice)
            .enumerate()
            .map(|(p, (&(i, o), &c))| SummaryPath {
                from: inputs[i].clone(),
                to: outputs[o].clone(),
                annotation: candidates[p][c].0,
                gate: candidates[p][c].1.clone(),
            })
            .collect()
    };
    'search: loop {
        for replicated in [replicated_guess, !replicated_guess] {
            tried += 1;
            set(&mut grey, replicated, &choice, &candidates);
            match first_difference(
                &mut grey,
                &assignments,
                &expected,
                &tests,
                &inputs,
                &outputs,
            ) {
                None => {
                    return Summary::Exact(GreyBox {
                        replicated,
                        paths: chosen(&choice),
                    });
                }
                Some((miss, grey_gives)) => {
                    if first_miss.is_none() {
                        let shown: Vec<String> = chosen(&choice)
                            .iter()
                            .map(|p| format!("{} -> {}: {}", p.from, p.to, p.signature()))
                            .collect();
                        first_miss = Some(format!(
                            "{miss}, where the nearest grey box ({}{}) gives {}",
                            shown.join("; "),
                            if replicated { ", replicated" } else { "" },
                            grey_gives
                        ));
                    }
                }
            }
        }
        if tried >= budget || tried >= combos {
            break 'search;
        }
        // The next combination, the last pair fastest.
        let mut p = pairs.len();
        loop {
            if p == 0 {
                break 'search;
            }
            p -= 1;
            choice[p] += 1;
            if choice[p] < candidates[p].len() {
                break;
            }
            choice[p] = 0;
        }
    }
    let why = first_miss.unwrap_or_default();
    if tried < combos {
        return Summary::TooBig(format!(
            "no grey box among the {tried} compared behaves as the module ({why}); the other {} were not compared",
            combos - tried
        ));
    }
    Summary::None(why)
}

/// Every (input, output) pair of source and sink indices that data can flow along.
fn pairs(df: &Dataflow) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for si in 0..df.sources.len() {
        let reached = reach_from_source(df, si);
        for (ki, sink) in df.sinks.iter().enumerate() {
            let fed = sink
                .streams
                .iter()
                .any(|s| match df.streams[s.index()].from {
                    Producer::Source(x) => x.index() == si,
                    Producer::Output(o) => reached.contains(&o),
                })
                || sink.implicit.is_some_and(|o| reached.contains(&o));
            if fed {
                out.push((si, ki));
            }
        }
    }
    out
}

/// The interfaces data from source `si` reaches.
fn reach_from_source(df: &Dataflow, si: usize) -> BTreeSet<IfaceId> {
    let start = df.sources[si]
        .streams
        .iter()
        .filter_map(|s| match df.streams[s.index()].to {
            Consumer::Input(i) => Some(i),
            Consumer::Sink(_) => None,
        })
        .collect();
    reach(df, start, true)
}

/// The interfaces from which data reaches sink `ki`.
fn reach_to_sink(df: &Dataflow, ki: usize) -> BTreeSet<IfaceId> {
    let sink = &df.sinks[ki];
    let start = sink
        .streams
        .iter()
        .filter_map(|s| match df.streams[s.index()].from {
            Producer::Output(o) => Some(o),
            Producer::Source(_) => None,
        })
        .chain(sink.implicit)
        .collect();
    reach(df, start, false)
}

/// The interfaces reachable from `stack` along paths and streams, downstream when `forward`,
/// else upstream.
fn reach(df: &Dataflow, mut stack: Vec<IfaceId>, forward: bool) -> BTreeSet<IfaceId> {
    use crate::graph::Direction;
    let mut seen = BTreeSet::new();
    while let Some(i) = stack.pop() {
        if !seen.insert(i) {
            continue;
        }
        let f = df.iface(i);
        let c = df.component(f.component);
        // Through the component from the side data enters, along streams from the other.
        let through = if forward {
            Direction::Input
        } else {
            Direction::Output
        };
        if f.direction == through {
            stack.extend(c.paths.iter().filter_map(|p| match forward {
                true if p.input == i => Some(p.output),
                false if p.output == i => Some(p.input),
                _ => None,
            }));
        } else {
            stack.extend(f.streams.iter().filter_map(|s| {
                let s = &df.streams[s.index()];
                match (forward, s.to, s.from) {
                    (true, Consumer::Input(x), _) => Some(x),
                    (false, _, Producer::Output(o)) => Some(o),
                    _ => None,
                }
            }));
        }
    }
    seen
}

/// The attributes the module's gates name, sorted.
fn attributes(df: &Dataflow) -> Vec<String> {
    let mut a = BTreeSet::new();
    for c in &df.components {
        for p in &c.paths {
            if let Some(Gate::Keys(k)) = p.gate {
                a.extend(df.keys.names(k).into_iter().map(String::from));
            }
        }
    }
    a.into_iter().collect()
}

fn gate_names(g: Gate, df: &Dataflow) -> DerivedGate {
    match g {
        Gate::Star => DerivedGate::Star,
        Gate::Keys(k) => {
            let mut v: Vec<String> = df.keys.names(k).into_iter().map(String::from).collect();
            v.sort();
            DerivedGate::Keys(v)
        }
    }
}

/// The gates a summary path may have, largest (least order-sensitive) first.
fn candidate_gates(df: &Dataflow, attrs: &[String]) -> Vec<Vec<String>> {
    let mut gates: BTreeSet<Vec<String>> = BTreeSet::new();
    if attrs.len() <= MAX_SUBSET_ATTRS {
        for mask in 0u32..(1 << attrs.len()) {
            gates.insert(
                (0..attrs.len())
                    .filter(|b| mask & (1 << b) != 0)
                    .map(|b| attrs[b].clone())
                    .collect(),
            );
        }
    } else {
        gates.insert(attrs.to_vec());
        for c in &df.components {
            for p in &c.paths {
                if let Some(g @ Gate::Keys(_)) = p.gate
                    && let DerivedGate::Keys(k) = gate_names(g, df)
                {
                    gates.insert(k);
                }
            }
        }
    }
    // A spec cannot write the empty gate (order across every record is `*` to it).
    gates.remove(&Vec::new());
    let mut v: Vec<Vec<String>> = gates.into_iter().collect();
    v.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
    v
}

/// The labels the inputs range over: see the module documentation.
fn test_labels(gates: &[Vec<String>]) -> Vec<Named> {
    let mut t = vec![Named::Unreached];
    let mut seals: BTreeSet<Vec<String>> = gates.iter().cloned().collect();
    seals.insert(Vec::new());
    // An attribute no gate names: a seal no gate of the module is compatible with but `∅`.
    seals.insert(vec![UNNAMED.to_string()]);
    t.extend(seals.into_iter().map(Named::Seal));
    t.extend([Named::Async, Named::Run, Named::Inst, Named::Diverge]);
    t
}

/// Every annotation a summary path may have, least order-sensitive first.
fn candidates(gates: &[Vec<String>]) -> Vec<(Annotation, Option<DerivedGate>)> {
    let mut v = vec![(Annotation::CR, None), (Annotation::CW, None)];
    for a in [Annotation::OR, Annotation::OW] {
        v.extend(
            gates
                .iter()
                .map(|g| (a, Some(DerivedGate::Keys(g.clone())))),
        );
        v.push((a, Some(DerivedGate::Star)));
    }
    v
}

/// The annotation the module's inner paths compose to along the pair: it writes if any of
/// them writes, is order-sensitive if any unordered one is, and its gate is what their gates
/// share (`*` if one is `*`).
fn structural(df: &Dataflow, pairs: &[(usize, usize)]) -> Vec<(Annotation, Option<DerivedGate>)> {
    pairs
        .iter()
        .map(|&(si, ki)| {
            let from = reach_from_source(df, si);
            let to = reach_to_sink(df, ki);
            let (mut writes, mut ordered_sensitive) = (false, false);
            let mut gate: Option<DerivedGate> = None;
            for c in &df.components {
                for p in &c.paths {
                    if !(from.contains(&p.input) && to.contains(&p.output)) {
                        continue;
                    }
                    writes |= p.annotation.writes();
                    let sensitive = !p.annotation.is_confluent()
                        && !p.gate.is_some_and(|g| c.ordered_for(g, &df.keys));
                    if !sensitive {
                        continue;
                    }
                    ordered_sensitive = true;
                    let g = p.gate.map_or(DerivedGate::Star, |g| gate_names(g, df));
                    gate = Some(match (gate, g) {
                        (None, g) => g,
                        (Some(DerivedGate::Star), _) | (_, DerivedGate::Star) => DerivedGate::Star,
                        (Some(DerivedGate::Keys(a)), DerivedGate::Keys(b)) => {
                            DerivedGate::Keys(a.into_iter().filter(|x| b.contains(x)).collect())
                        }
                    });
                }
            }
            // Gates that share nothing leave no partition a spec can name.
            let gate = gate.map(|g| match g {
                DerivedGate::Keys(k) if k.is_empty() => DerivedGate::Star,
                g => g,
            });
            match (ordered_sensitive, writes) {
                (false, false) => (Annotation::CR, None),
                (false, true) => (Annotation::CW, None),
                (true, false) => (Annotation::OR, gate),
                (true, true) => (Annotation::OW, gate),
            }
        })
        .collect()
}

/// A one-component dataflow `M` with a path per pair (annotations set by [`set`]), a source
/// per input and a sink per output, named by position so that no module name needs quoting.
fn grey_box(inputs: &[String], outputs: &[String], pairs: &[(usize, usize)]) -> Option<Dataflow> {
    if pairs.is_empty() {
        return None;
    }
    let mut t = String::from("name: summary\nsources:\n");
    for i in 0..inputs.len() {
        t.push_str(&format!("  s{i}: {{}}\n"));
    }
    t.push_str("components:\n  M:\n    paths:\n");
    for &(i, o) in pairs {
        t.push_str(&format!("      - {{ from: i{i}, to: o{o}, label: CR }}\n"));
    }
    t.push_str("streams:\n");
    let used_in: BTreeSet<usize> = pairs.iter().map(|p| p.0).collect();
    let used_out: BTreeSet<usize> = pairs.iter().map(|p| p.1).collect();
    for i in &used_in {
        t.push_str(&format!("  - {{ from: s{i}, to: M.i{i} }}\n"));
    }
    for o in &used_out {
        t.push_str(&format!("  - {{ from: M.o{o}, to: k{o} }}\n"));
    }
    t.push_str("sinks:\n");
    for o in 0..outputs.len() {
        t.push_str(&format!("  k{o}: {{}}\n"));
    }
    let (spec, diags, _) = crate::spec::parse_vec(t.into_bytes(), &Default::default());
    let (df, more) = crate::graph::build(spec?, "summary");
    let errors = diags
        .iter()
        .chain(&more)
        .any(|d| d.severity == crate::diagnostic::Severity::Error);
    (!errors).then_some(df)
}

/// Sets the grey box's annotations to the `choice` of each pair's candidates.
fn set(
    grey: &mut Dataflow,
    replicated: bool,
    choice: &[usize],
    candidates: &[Vec<(Annotation, Option<DerivedGate>)>],
) {
    grey.components[0].replicated = replicated;
    for (p, &c) in choice.iter().enumerate() {
        let (a, g) = &candidates[p][c];
        let gate = g.as_ref().map(|g| match g {
            DerivedGate::Star => Gate::Star,
            DerivedGate::Keys(k) => Gate::Keys(grey.keys.set_of(k.iter().map(String::as_str))),
        });
        let path = &mut grey.components[0].paths[p];
        path.annotation = *a;
        path.gate = gate;
    }
}

/// The label of every output of `df` when its inputs carry `assignment` (indices into
/// `tests`).
fn outputs_of(df: &mut Dataflow, assignment: &[usize], tests: &[Named]) -> Vec<Named> {
    let seeds: Vec<Option<Label>> = assignment.iter().map(|&t| tests[t].to_label(df)).collect();
    let labels = propagate_from(df, &seeds);
    labels.sink.iter().map(|&l| Named::of(l, df)).collect()
}

/// The first labelling of the inputs where the grey box and the module differ, as text
/// ("fed `orders` Async, the module's `invoices` is Run"), and what the grey box gives there.
fn first_difference(
    grey: &mut Dataflow,
    assignments: &[Vec<usize>],
    expected: &[Vec<Named>],
    tests: &[Named],
    inputs: &[String],
    outputs: &[String],
) -> Option<(String, String)> {
    for (a, want) in assignments.iter().zip(expected) {
        let got = outputs_of(grey, a, tests);
        if let Some(o) = (0..outputs.len()).find(|&o| got[o] != want[o]) {
            let fed: Vec<String> = a
                .iter()
                .enumerate()
                .filter(|(_, t)| tests[**t] != Named::Unreached)
                .map(|(i, &t)| format!("`{}` {}", inputs[i], tests[t].display()))
                .collect();
            let fed = if fed.is_empty() {
                "fed nothing".to_string()
            } else {
                format!("fed {}", fed.join(" and "))
            };
            return Some((
                format!(
                    "{fed}, the module's `{}` is {}",
                    outputs[o],
                    want[o].display()
                ),
                got[o].display(),
            ));
        }
    }
    None
}
