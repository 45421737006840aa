//! The full analysis on a private copy of the dataflow with a set of choices applied: the
//! planner's baseline, its upper bound, and the proof of the final plan. (The search's many
//! evaluations use the incremental [`super::labeling`] instead.)

use std::collections::BTreeMap;

use crate::analysis::{self, FailOn};
use crate::graph::{CompId, Dataflow, Order, SourceId, StreamId};
use crate::label::{KeySet, Keys};

use super::Allowed;
use super::candidates::{Candidate, candidates};
use super::model::Choice;
use super::scoring::{Score, local_score, punctuates};

/// Runs the analysis on a private copy of the dataflow with a set of choices applied.
pub struct Evaluator {
    df: Dataflow,
    base_order: Vec<Option<Order>>,
    base_seal: Vec<Option<KeySet>>,
    base_stream_seal: Vec<Option<KeySet>>,
    fail_on: FailOn,
    /// Full analyses run so far (what `plan` reports as analyses, with the labeling's).
    pub evaluations: usize,
}

impl Evaluator {
    /// An evaluator of `df` (copied) against `fail_on`; its orders and seals are the baseline
    /// the choices are applied to.
    pub fn new(df: &Dataflow, fail_on: FailOn) -> Self {
        Evaluator {
            base_order: df.components.iter().map(|c| c.order).collect(),
            base_seal: df.sources.iter().map(|s| s.seal).collect(),
            base_stream_seal: df.streams.iter().map(|s| s.seal).collect(),
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

    /// The component's order in the spec, before any choice.
    pub fn base_order(&self, c: CompId) -> Option<Order> {
        self.base_order[c.index()]
    }

    /// Resets the copy to the spec and applies `choices` (later ones win on conflicts).
    pub fn set(&mut self, choices: &[Choice]) {
        for (c, o) in self.df.components.iter_mut().zip(&self.base_order) {
            c.order = *o;
        }
        for (s, k) in self.df.sources.iter_mut().zip(&self.base_seal) {
            s.seal = *k;
        }
        for (s, k) in self.df.streams.iter_mut().zip(&self.base_stream_seal) {
            s.seal = *k;
        }
        for &ch in choices {
            match ch {
                Choice::AddSeal { source, key } => self.df.sources[source.index()].seal = Some(key),
                Choice::SealStream { stream, key } => {
                    self.df.streams[stream.index()].seal = Some(key)
                }
                Choice::Order { component, order } => {
                    let group: Vec<CompId> = self.df.order_group(component).collect();
                    for m in group {
                        self.df.components[m.index()].order = Some(order);
                    }
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

    /// Whether every sink passes with `choices` applied, trusting every stream seal among
    /// them (a relaxation: [`punctuations_hold`](Self::punctuations_hold) is the rest of the
    /// proof). So it bounds: when this fails, every plan made of `choices` does.
    pub fn feasible(&mut self, choices: &[Choice]) -> bool {
        self.score(choices).0 == 0
    }

    /// Whether every stream seal among `choices` can be punctuated by its producer under the
    /// labels `labels` (the analysis of these very choices): each input of the producer's
    /// paths to the stream is unreached or sealed within the stream's key.
    pub fn punctuations_hold(&self, choices: &[Choice], labels: &analysis::Labels) -> bool {
        choices.iter().all(|&ch| match ch {
            Choice::SealStream { stream, key } => punctuates(&self.df, &labels.iface, stream, key),
            Choice::AddSeal { .. } | Choice::Order { .. } => true,
        })
    }

    /// Whether `choices` make a plan: every sink passes with them applied, and every stream
    /// seal among them can be punctuated by its producer.
    pub fn holds(&mut self, choices: &[Choice]) -> bool {
        let a = self.analyze(choices);
        !a.failing() && self.punctuations_hold(choices, &a.labels)
    }

    /// `choices` without the stream seals their producers cannot punctuate, dropped until the
    /// rest hold (dropping one can undo the seal another's producer relied on): what remains of
    /// a set of choices once the promises nobody can keep are taken out.
    pub fn punctuated(&mut self, choices: &[Choice]) -> Vec<Choice> {
        let mut kept = choices.to_vec();
        loop {
            let labels = self.analyze(&kept).labels;
            let before = kept.len();
            kept.retain(|&ch| match ch {
                Choice::SealStream { stream, key } => {
                    punctuates(&self.df, &labels.iface, stream, key)
                }
                Choice::AddSeal { .. } | Choice::Order { .. } => true,
            });
            if kept.len() == before {
                return kept;
            }
        }
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
/// the intersection of the keys), per source and per stream the intersection of the seal
/// keys. By monotonicity, if this fails a sink with every stream seal trusted, every
/// combination of `choices` does.
pub fn upper_bound(keys: &mut Keys, choices: &[Choice]) -> Vec<Choice> {
    let mut orders: BTreeMap<CompId, Order> = BTreeMap::new();
    let mut seals: BTreeMap<SourceId, KeySet> = BTreeMap::new();
    let mut stream_seals: BTreeMap<StreamId, KeySet> = BTreeMap::new();
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
            Choice::SealStream { stream, key } => {
                let merged = match stream_seals.get(&stream) {
                    None => key,
                    Some(&k) => keys.intersection(k, key),
                };
                stream_seals.insert(stream, merged);
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
        .chain(
            stream_seals
                .into_iter()
                .map(|(stream, key)| Choice::SealStream { stream, key }),
        )
        .collect()
}
