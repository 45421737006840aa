//! Witnesses: the evidence of an observation made concrete (the input records, the point of
//! order, the deliveries there in the two executions or instances, the two outputs), after
//! shrinking the input to the fewest records that still show it.

use std::collections::BTreeSet;

use crate::analysis::Analysis;

use super::explore::explore;
use super::model::{Inputs, Model, Outcome, Rec};
use super::observe::{Evidence, Observed, Observer};
use crate::graph::IfaceId;

/// Most schedules each shrinking step may run.
pub const SHRINK_SCHEDULES: usize = 500;

/// One side of a witness: an execution, or one instance in an execution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Side {
    /// `schedule 3`, or `schedule 3, instance 2`.
    pub name: String,
    /// The records delivered at the point of order, in order.
    pub trace: Vec<String>,
    /// What the sink received (for two schedules) or what the instance emitted (for two
    /// instances), sorted.
    pub output: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Witness {
    pub observed: Observed,
    /// The point of order: component, and the path's input and output interfaces.
    pub component: String,
    pub from: String,
    pub to: String,
    /// The inputs whose deliveries the sides' traces show: the path's input, and for a read
    /// the writing inputs of its component too (then each delivery names its input).
    pub traced: Vec<String>,
    /// The input records, per source (sources that emit nothing are left out).
    pub inputs: Vec<(String, Vec<String>)>,
    pub sides: [Side; 2],
}

/// A record as users read it, by its attribute values: `(batch=0 word=1 #3fa2)`; the
/// payload's short hash only tells apart records with the same values. A dataflow that names
/// no attribute has records told apart by their payload alone: `(record #3fa2)`.
pub fn show_rec(m: &Model, r: &Rec) -> String {
    let mut s = String::from("(");
    for (i, name) in m.attrs.iter().enumerate() {
        s.push_str(&format!("{name}={} ", r.attrs[i]));
    }
    if m.attrs.is_empty() {
        s.push_str("record ");
    }
    s.push_str(&format!("#{:04x})", r.payload & 0xffff));
    s
}

fn show_set(m: &Model, set: Option<&BTreeSet<Rec>>) -> Vec<String> {
    set.map(|s| s.iter().map(|r| show_rec(m, r)).collect())
        .unwrap_or_default()
}

/// Explores `inputs` and returns what `sink` is observed to receive, with its evidence: the
/// first evidence of `level`, as soon as the sink is seen at `level` (the shrinking only asks
/// whether the observation survives), else the worst seen in `schedules`.
fn observe(
    m: &Model,
    inputs: &Inputs,
    schedules: usize,
    seed: u64,
    sink: usize,
    level: Observed,
) -> (Observed, Option<Evidence>) {
    let mut obs = Observer::new(m);
    explore(m, inputs, schedules, seed, &mut |i, o| {
        obs.add(i, o);
        obs.sinks[sink].observed < level
    });
    let s = obs.sinks.swap_remove(sink);
    (s.observed, s.evidence)
}

/// Builds the witness of `level` at `sink`: shrinks the input (one record at a time, keeping a
/// removal when the observation survives it), then presents the evidence.
#[allow(clippy::too_many_arguments)]
pub fn witness(
    m: &Model,
    analysis: &Analysis,
    inputs: &Inputs,
    schedules: usize,
    seed: u64,
    sink: usize,
    level: Observed,
    evidence: Evidence,
    shrink: bool,
) -> Option<Witness> {
    let mut inputs = inputs.clone();
    let mut evidence = evidence;
    if shrink {
        let steps = schedules.min(SHRINK_SCHEDULES);
        for s in 0..inputs.len() {
            let mut t = 0;
            while t < inputs[s].len() {
                let mut fewer = inputs.clone();
                fewer[s].remove(t);
                match observe(m, &fewer, steps, seed, sink, level) {
                    (o, Some(ev)) if o >= level => {
                        inputs = fewer;
                        evidence = ev;
                    }
                    _ => t += 1,
                }
            }
        }
    }
    // The second execution, once moved towards the first's order, is no longer the schedule
    // of that number: it is named as derived from it.
    let mut minimised = "";
    if shrink {
        let (shrunk, changed) = super::reorder::shrink(
            m,
            &inputs,
            sink,
            level,
            evidence,
            schedules.min(super::reorder::REORDER_REPLAYS),
        );
        evidence = shrunk;
        if changed {
            minimised = ", reordered less";
        }
    }
    let (a, b, comp, inst) = match evidence {
        Evidence::Runs(pair) => {
            let [(x, a), (y, b)] = *pair;
            (
                (a, 0, format!("schedule {x}")),
                (b, 0, format!("schedule {y}{minimised}")),
                None,
                None,
            )
        }
        Evidence::Instances {
            run,
            outcome,
            comp,
            other,
            output,
            path: _,
        } => {
            let a = *outcome;
            (
                (
                    a.clone(),
                    0,
                    format!("schedule {run}{minimised}, instance 1"),
                ),
                (
                    a,
                    other,
                    format!("schedule {run}{minimised}, instance {}", other + 1),
                ),
                Some(comp),
                Some(output),
            )
        }
    };
    // The point of order: one of the analysis' points whose path leads to the sink, in the
    // component the evidence names when it names one.
    let point = analysis
        .points
        .iter()
        .filter(|p| comp.is_none_or(|c| p.component.index() == c))
        .find(|p| {
            let path = &m.comps[p.component.index()].paths[p.path];
            m.reaches[path.output.index()].contains(&sink)
        })
        .map(|p| (p.component.index(), p.path));
    let deliveries = |o: &Outcome, k: usize, c: usize, input| -> Vec<String> {
        o.trace
            .iter()
            .filter(|d| d.comp == c && d.instance == k && d.input == input)
            .map(|d| show_rec(m, &d.rec))
            .collect()
    };
    let ka = 0;
    let kb = if inst.is_some() { b.1 } else { 0 };
    // Where the analysis sees no point of order (a mechanism switched off, or a disagreement
    // between the two), the first order-sensitive path whose deliveries differ stands for it.
    let differs = |c: usize, p: &super::model::PathModel| {
        deliveries(&a.0, ka, c, p.input) != deliveries(&b.0, kb, c, p.input)
    };
    let fallback = || {
        m.comps.iter().enumerate().find_map(|(c, comp)| {
            comp.paths
                .iter()
                .position(|p| !p.annotation.is_confluent() && differs(c, p))
                .map(|pi| (c, pi))
        })
    };
    let (pc, pp) = point.or_else(fallback).or_else(|| comp.map(|c| (c, 0)))?;
    let path = &m.comps[pc].paths.get(pp)?;
    // A read races with the writes of the state it reads: its trace interleaves the writing
    // inputs' deliveries with the read's, each named by its input, so that the two sides show
    // the reads landing before and after different writes. A write's trace is its input's.
    let mut traced = vec![path.input];
    if path.annotation.reads_written_state() {
        for w in m.comps[pc].paths.iter().filter(|w| w.annotation.writes()) {
            if !traced.contains(&w.input) {
                traced.push(w.input);
            }
        }
    }
    let short = |i: IfaceId| -> &str {
        let name = &m.iface_names[i.index()];
        name.rsplit_once('.').map_or(name.as_str(), |(_, s)| s)
    };
    let trace = |o: &Outcome, k: usize| -> Vec<String> {
        o.trace
            .iter()
            .filter(|d| d.comp == pc && d.instance == k && traced.contains(&d.input))
            .map(|d| match traced.len() {
                1 => show_rec(m, &d.rec),
                _ => format!("{} {}", short(d.input), show_rec(m, &d.rec)),
            })
            .collect()
    };
    let output = |o: &Outcome, k: usize| -> Vec<String> {
        match (inst, comp) {
            (Some(out), Some(c)) => show_set(m, o.emitted[c][k].get(&out)),
            _ => show_set(m, o.sinks.get(sink)),
        }
    };
    let side = |(o, k, name): &(Outcome, usize, String)| Side {
        name: name.clone(),
        trace: trace(o, if inst.is_some() { *k } else { 0 }),
        output: output(o, *k),
    };
    let sides = [side(&a), side(&b)];
    let traced_names = traced
        .iter()
        .map(|i| m.iface_names[i.index()].clone())
        .collect();
    Some(Witness {
        observed: level,
        component: m.comps[pc].name.clone(),
        traced: traced_names,
        from: m.iface_names[path.input.index()].clone(),
        to: m.iface_names[path.output.index()].clone(),
        inputs: m
            .source_edges
            .iter()
            .zip(&inputs)
            .filter(|(_, recs)| !recs.is_empty())
            .map(|((name, _), recs)| (name.clone(), recs.iter().map(|r| show_rec(m, r)).collect()))
            .collect(),
        sides,
    })
}
