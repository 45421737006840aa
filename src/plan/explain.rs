//! What the plan says about itself: the long explanation of `blazes explain plan`
//! ([`EXPLAIN`]), why each mechanism is there (the points of order and sinks that come back
//! without it), the runtime's part of each mechanism, the seal barriers, the sinks before and
//! after, and why a sink cannot be repaired. The plan holds ids and facts; names only order
//! what reports list by name here, and the formats word the rest (`report::plan_prose`).

use std::collections::BTreeSet;

use crate::analysis::{self, PointKind};
use crate::graph::{CompId, Dataflow, IfaceId, Order, SinkId, StreamId};
use crate::label::{Gate, KeySet, Label};

use super::candidates::Candidate;
use super::evaluator::Evaluator;
use super::labeling::Labeling;
use super::model::{Barrier, Choice, Kind, Mechanism, Obstacle, PointRef, Reason, SinkOutcome};
use super::search::apply_all;
use super::{EXPLANATION_BUDGET, Options};

/// The long explanation printed by `blazes explain plan`.
pub const EXPLAIN: &str = "\
blazes plan: coordination synthesis

`blazes plan SPEC` finds the cheapest set of coordination mechanisms that makes every sink
meet its tolerance (`sinks.<name>.tolerate`, and `--fail-on`), and `--apply OUT.yaml` writes
them into a copy of the spec (`seal:` on sources and streams, `order:` on components).

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
                 Or `seal: [K]` on an internal stream: its producer punctuates its output
                 per K, which it can only when every input of its paths to that output is
                 sealed on keys within K (so it knows when each partition is complete).
                 Same cost. A stream seal the producer cannot punctuate counts as a failing
                 sink, so such a seal only comes with the seals upstream that make it hold.
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

Components with the same `task:` run in one engine task (a Kafka Streams sub-topology), on
one order of the task's inputs: an order of one is an order of all. Orders are then proposed
per task, at one cost, and written on each of its order-sensitive members; a task's global
order counts the streams into the task from outside it.

Algorithm:
  1. Analyse the spec. If no sink fails, the status is `ok` and the plan lists the seal
     barriers only.
  2. Candidates: an add-seal for every sealable key of every source without a seal whose
     key reaches (through confluent paths, ignoring joins) an input of a point of order
     whose gate contains it; an add-seal on every unsealed stream an order-sensitive path
     writes, by each key that sources can seal upstream of it and that reaches a point of
     order downstream (with the source seals that let its producer punctuate); a keyed order (intersection of the gates of the component's
     points of order, and each single gate) and a global order for every component with an
     order-sensitive point of order. Candidates on the same component (or source, or
     stream) exclude each other.
  3. Upper bound: apply every candidate at once (the strongest order per component, the
     intersection of the keys per source and per stream, trusting every stream seal). If
     a sink still fails, nothing in reach can fix it: the status is `unrepairable`, with
     each failing sink and the points of order that remain; if it passes only while
     trusting stream seals their producers cannot punctuate, it is `unrepairable` and says
     so.
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
     A source seal that lets a producer punctuate a stream the plan seals lists that stream
     (`punctuates`): without it the stream seal fails too.
  6. Verification: the final analysis runs with the plan applied, and every stream seal
     the plan adds must be punctuable by its producer; the seal barriers are listed for
     the runtime.

Exit status: 0 when the spec is ok or the plan repairs it, 1 when it is unrepairable, 2 when
the spec is invalid or the output cannot be written.
";

/// A point of order; `iface` holds the labels of the state it was found in (the
/// input's label and the component's order tell an unordered write from a written `Inst`).
pub(super) fn point_ref(
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
        component,
        input: path.input,
        output: path.output,
        annotation: path.annotation,
        gate: path.gate.map(|g| g.names(&df.keys)).unwrap_or_default(),
        kind: analysis::point_code(c, path, kind, input, &df.keys).name,
    }
}

/// A label as reports print it; `None` when no source reaches the stream.
fn label_text(df: &Dataflow, l: Option<Label>) -> Option<String> {
    l.map(|l| l.display(&df.keys))
}

/// The seal barriers of analysis `a`, by component and input; `added` when `before` (the
/// spec's own analysis) does not have them.
pub(super) fn barrier_list(
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
            component: b.component,
            input: b.input,
            key: names(df, b.key),
            producers: b.producers.clone(),
            cost: analysis::producer_names(df, &b.producers).len().max(1) as u32,
            added: !existing.contains(&(b.component, b.input, b.key)),
        })
        .collect();
    out.sort_by(|a, b| {
        let name = |b: &Barrier| (&df.component(b.component).name, &df.iface(b.input).name);
        name(a).cmp(&name(b))
    });
    out
}

/// Points of order in the order reports list them: by the names of their component, input
/// and output, then annotation, gate and kind.
fn sort_points(df: &Dataflow, points: &mut [PointRef]) {
    let key = |p: &PointRef| {
        (
            &df.component(p.component).name,
            &df.iface(p.input).name,
            &df.iface(p.output).name,
            p.annotation.as_str(),
            p.gate.clone(),
            p.kind,
        )
    };
    points.sort_by(|a, b| key(a).cmp(&key(b)));
}

fn names(df: &Dataflow, k: KeySet) -> Vec<String> {
    df.keys.names(k).into_iter().map(str::to_string).collect()
}

/// Each sink's label before the plan (`base`) and after it.
pub(super) fn sink_outcomes(
    df: &Dataflow,
    base: &analysis::Analysis,
    after: &analysis::Analysis,
) -> Vec<SinkOutcome> {
    df.sinks
        .iter()
        .enumerate()
        .map(|(i, s)| SinkOutcome {
            sink: SinkId(i as u32),
            tolerate: s.tolerance(),
            before: label_text(df, base.sinks[i].label),
            after: label_text(df, after.sinks[i].label),
            failing_before: base.sinks[i].failing,
            failing_after: after.sinks[i].failing,
        })
        .collect()
}

pub(super) fn reasons(
    df: &Dataflow,
    after: &analysis::Analysis,
    options: &Options,
    obstacle: Obstacle,
) -> Vec<Reason> {
    let points: Vec<PointRef> = after
        .points
        .iter()
        .map(|p| point_ref(df, &after.labels.iface, p.component, p.path, p.kind))
        .collect();
    let a = options.allowed;
    let disallowed: Vec<Kind> = [
        (a.seal, Kind::AddSeal),
        (a.keyed, Kind::KeyedOrder),
        (a.global, Kind::GlobalOrder),
    ]
    .into_iter()
    .filter_map(|(allowed, kind)| (!allowed).then_some(kind))
    .collect();
    let star = after.points.iter().any(|p| {
        let path = &df.component(p.component).paths[p.path];
        path.gate == Some(Gate::Star)
    });
    after
        .sinks
        .iter()
        .filter(|v| v.failing)
        .map(|v| Reason {
            sink: v.sink,
            label: label_text(df, v.label).unwrap_or_default(),
            tolerate: df.sinks[v.sink.index()].tolerance(),
            obstacle,
            disallowed: disallowed.clone(),
            star_needs_global: star && !a.global,
            points: points.clone(),
        })
        .collect()
}

/// The chosen mechanisms, named and explained: for each, what comes back when it alone is
/// removed from the plan (`after` is the full analysis with every choice applied). Only the
/// components the removal re-derives can change, so only they are looked at, and at most
/// [`EXPLANATION_BUDGET`] of them. Sorted as reports list them.
pub(super) fn mechanisms(
    ev: &Evaluator,
    lab: &mut Labeling,
    cands: &[Candidate],
    chosen: &[usize],
    after: &analysis::Analysis,
) -> Vec<Mechanism> {
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
    let choices: Vec<Choice> = chosen.iter().map(|&i| cands[i].choice).collect();
    let mut mechanisms = Vec::new();
    let with_plan = lab.checkpoint();
    apply_all(lab, &choices);
    for &i in chosen {
        let cp = lab.checkpoint();
        let mut complete = lab.revert_within(cands[i].choice, EXPLANATION_BUDGET);
        // A seal that lets a producer punctuate a stream the plan seals is needed for all that
        // stream seal does: without it the producer's promise fails, so those seals go too
        // (and the ones they let punctuate, in turn).
        let mut punctuates: Vec<StreamId> = Vec::new();
        loop {
            let lost: Vec<StreamId> = lab
                .unpunctuated_streams()
                .filter(|t| !punctuates.contains(t))
                .collect();
            if lost.is_empty() {
                break;
            }
            for t in lost {
                punctuates.push(t);
                let choice = Choice::SealStream {
                    stream: t,
                    key: KeySet::EMPTY,
                };
                complete &= lab.revert_within(choice, EXPLANATION_BUDGET);
            }
        }
        let mut fixes: Vec<PointRef> = lab
            .touched_since(&cp)
            .into_iter()
            .flat_map(|c| {
                lab.points_of(c)
                    .into_iter()
                    .map(move |(path, kind)| (c, path, kind))
            })
            .map(|(c, path, kind)| point_ref(lab.dataflow(), lab.labels().iface, c, path, kind))
            .filter(|p| !after_points.contains(p))
            // Cut at the budget, the labels lie between the plan's and the truth without the
            // mechanism. Every point of order is there for good once its input is that bad,
            // but one: a written `Inst` (C003) is no point once its input rises to `Diverge`,
            // which the rest of the propagation may do. An incomplete list leaves those out
            // rather than list a point that does not come back.
            .filter(|p| complete || p.kind != analysis::INST_WRITE.name)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        sort_points(ev.dataflow(), &mut fixes);
        let mut failing: Vec<SinkId> = lab
            .failing_sinks_since(&cp)
            .into_iter()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let sinks = &ev.dataflow().sinks;
        failing.sort_by(|a, b| sinks[a.index()].name.cmp(&sinks[b.index()].name));
        lab.rollback(cp);
        let mut m = mechanism(ev, &cands[i], fixes, complete, failing);
        let d = ev.dataflow();
        punctuates.sort_by(|&a, &b| {
            let (a, b) = (&d.streams[a.index()], &d.streams[b.index()]);
            (&a.from_text, &a.to_text).cmp(&(&b.from_text, &b.to_text))
        });
        m.punctuates = punctuates;
        mechanisms.push(m);
    }
    lab.rollback(with_plan);
    lab.set_exact(true);
    let d = ev.dataflow();
    let key = |m: &Mechanism| {
        (
            m.kind,
            m.stream.is_some(),
            m.source.map(|s| &d.sources[s.index()].name),
            m.stream.map(|t| {
                let st = &d.streams[t.index()];
                (&st.from_text, &st.to_text)
            }),
            m.components
                .iter()
                .map(|&c| &d.component(c).name)
                .collect::<Vec<_>>(),
            m.key.clone(),
        )
    };
    mechanisms.sort_by(|a, b| key(a).cmp(&key(b)));
    mechanisms
}

/// One chosen candidate as the plan reports it.
fn mechanism(
    ev: &Evaluator,
    cand: &Candidate,
    fixes: Vec<PointRef>,
    fixes_complete: bool,
    sinks: Vec<SinkId>,
) -> Mechanism {
    let d = ev.dataflow();
    let mut stream = None;
    let (components, source, key, replaces) = match cand.choice {
        Choice::AddSeal { source, key } => {
            (cand.consumers.clone(), Some(source), names(d, key), None)
        }
        Choice::SealStream { stream: t, key } => {
            stream = Some(t);
            (cand.consumers.clone(), None, names(d, key), None)
        }
        Choice::Order { component, order } => {
            // A task's members already ordered so keep their order: the mechanism takes
            // effect at the others.
            let group: Vec<CompId> = d.order_group(component).collect();
            let mut changed: Vec<CompId> = group
                .iter()
                .copied()
                .filter(|&m| ev.base_order(m) != Some(order))
                .collect();
            if changed.is_empty() {
                changed = group;
            }
            changed.sort_unstable_by(|&a, &b| d.component(a).name.cmp(&d.component(b).name));
            let replaces = changed.iter().find_map(|&m| match ev.base_order(m) {
                Some(Order::Keys(k)) => Some(names(d, k)),
                _ => None,
            });
            (
                changed,
                None,
                match order {
                    Order::Keys(k) => names(d, k),
                    Order::Global => Vec::new(),
                },
                replaces,
            )
        }
    };
    Mechanism {
        kind: cand.kind(),
        choice: cand.choice,
        components,
        source,
        stream,
        punctuates: Vec::new(),
        key,
        replaces,
        cost: cand.cost,
        fixes,
        fixes_complete,
        sinks,
    }
}
