//! What a sink is observed to receive, in the terms of the labels (see `docs/simulation.md`):
//! `Run` when two executions deliver different sets to it, `Inst` when, in one execution, the
//! instances of a replicated component upstream emit different sets towards it, `Diverge`
//! when a replicated component upstream ends with instance states that differ.

use std::collections::{BTreeMap, BTreeSet};

use crate::graph::IfaceId;
use crate::label::Label;

use super::model::{Model, Outcome};

/// The worst thing observed at a sink, from best to worst.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Observed {
    Deterministic,
    Run,
    Inst,
    Diverge,
}

impl Observed {
    pub fn as_str(self) -> &'static str {
        match self {
            Observed::Deterministic => "deterministic",
            Observed::Run => "Run",
            Observed::Inst => "Inst",
            Observed::Diverge => "Diverge",
        }
    }

    /// The worst observation a label allows: `Seal` and `Async` promise the same contents on
    /// every run and on every replica.
    pub fn allowed_by(label: Option<Label>) -> Observed {
        match label {
            None | Some(Label::Seal(_)) | Some(Label::Async) => Observed::Deterministic,
            Some(Label::Run) => Observed::Run,
            Some(Label::Inst) => Observed::Inst,
            Some(Label::Diverge) => Observed::Diverge,
        }
    }

    /// Whether this observation is within what `label` allows.
    pub fn within(self, label: Option<Label>) -> bool {
        self <= Observed::allowed_by(label)
    }
}

/// Where an observation comes from: two executions, or two instances of one execution. The
/// executions are kept: a witness is built from them without running anything again.
#[derive(Clone, Debug)]
pub enum Evidence {
    /// Two executions (schedule indexes, outcomes) whose sink contents differ.
    Runs(Box<[(usize, Outcome); 2]>),
    /// In the execution of schedule `run`, instances 0 and `other` of component `comp`
    /// emitted different sets on `output` (Inst), or ended with different fold states on path
    /// `path` (Diverge).
    Instances {
        run: usize,
        outcome: Box<Outcome>,
        comp: usize,
        other: usize,
        output: IfaceId,
        path: Option<usize>,
    },
}

/// The observation at one sink so far, with the first evidence of its worst level.
#[derive(Clone, Debug)]
pub struct SinkObservation {
    pub observed: Observed,
    pub evidence: Option<Evidence>,
}

/// Raises a sink's observation to `level`; the evidence is built only when it is new.
fn raise(
    sinks: &mut [SinkObservation],
    sink: usize,
    level: Observed,
    evidence: &dyn Fn() -> Evidence,
) {
    let s = &mut sinks[sink];
    if level > s.observed {
        s.observed = level;
        s.evidence = Some(evidence());
    }
}

/// Folds executions into per-sink observations, one execution at a time (the executions are
/// not kept: only the first one, as the reference runs are compared with).
pub struct Observer<'m> {
    m: &'m Model,
    pub sinks: Vec<SinkObservation>,
    /// The first complete execution: its schedule index and outcome.
    reference: Option<(usize, Outcome)>,
    pub complete: usize,
    pub inconclusive: usize,
}

impl<'m> Observer<'m> {
    pub fn new(m: &'m Model) -> Self {
        Observer {
            m,
            sinks: vec![
                SinkObservation {
                    observed: Observed::Deterministic,
                    evidence: None,
                };
                m.sink_names.len()
            ],
            reference: None,
            complete: 0,
            inconclusive: 0,
        }
    }

    fn raise(&mut self, sink: usize, level: Observed, evidence: &dyn Fn() -> Evidence) {
        raise(&mut self.sinks, sink, level, evidence);
    }

    /// Takes one execution into account; `None` is an inconclusive one (budget exhausted).
    pub fn add(&mut self, run: usize, outcome: Option<&Outcome>) {
        let Some(o) = outcome else {
            self.inconclusive += 1;
            return;
        };
        self.complete += 1;
        match self.reference.take() {
            None => self.reference = Some((run, o.clone())),
            Some((first, r)) => {
                for s in 0..r.sinks.len() {
                    if r.sinks[s] != o.sinks[s] {
                        self.raise(s, Observed::Run, &|| {
                            Evidence::Runs(Box::new([(first, r.clone()), (run, o.clone())]))
                        });
                    }
                }
                self.reference = Some((first, r));
            }
        }
        for (c, comp) in self.m.comps.iter().enumerate() {
            if comp.replicas < 2 {
                continue;
            }
            let empty = BTreeMap::new();
            for &out in &comp.outputs {
                // Borrowed, not cloned: this runs for every execution.
                let none = BTreeSet::new();
                let set = |k: usize| o.emitted[c][k].get(&out).unwrap_or(&none);
                let first = set(0);
                if let Some(other) = (1..comp.replicas).find(|&k| set(k) != first) {
                    for &s in &self.m.reaches[out.index()] {
                        let ev = || Evidence::Instances {
                            run,
                            outcome: Box::new(o.clone()),
                            comp: c,
                            other,
                            output: out,
                            path: None,
                        };
                        raise(&mut self.sinks, s, Observed::Inst, &ev);
                    }
                }
            }
            for (pi, p) in comp.paths.iter().enumerate() {
                let state = |k: usize| -> Vec<(&Vec<u8>, &u64)> {
                    o.fold
                        .get(c)
                        .and_then(|is| is.get(k))
                        .unwrap_or(&empty)
                        .iter()
                        .filter(|((q, _), _)| *q == pi)
                        .map(|((_, part), st)| (part, st))
                        .collect()
                };
                let first = state(0);
                if let Some(other) = (1..comp.replicas).find(|&k| state(k) != first) {
                    for &s in &self.m.reaches[p.output.index()] {
                        let ev = || Evidence::Instances {
                            run,
                            outcome: Box::new(o.clone()),
                            comp: c,
                            other,
                            output: p.output,
                            path: Some(pi),
                        };
                        raise(&mut self.sinks, s, Observed::Diverge, &ev);
                    }
                }
            }
        }
    }
}
