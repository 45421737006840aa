//! The help of a point of order (C001, C002): the fixes that the analysis shows remove that
//! very point, cheapest first.
//!
//! Why: a fix read off the shape of the spec can be wrong. A seal at the head of the chain is
//! consumed by the first `OW` on the way (an order-sensitive path never passes a seal on), so it
//! never reaches a second one; a read whose state two inputs write is not protected by sealing
//! one of them. So every fix suggested here was applied to the planner's incremental labeling
//! ([`Labeling`]) and the point was gone afterwards; `check` calls [`advise`] after the
//! analysis, whose own help for these points only names `blazes plan`.
//!
//! What is tried for a point at component C, on the inputs it depends on (an `OW` path's own
//! input; every writing input of an `OR` path's component):
//! - per seal key within the gate found upstream (a `sealable:` key of an unsealed source, the
//!   `seal:` of a sealed one): every such source sealed on that key, and every stream on the
//!   way that a component writes from an order-sensitive path, declared sealed on the key
//!   (`seal:` on the stream: its producer punctuates its output). The combination is made
//!   irredundant (each part whose removal keeps the point away is dropped), and kept only when
//!   every producer asked to punctuate can: every input of its paths to that output is sealed
//!   on a key within the key, so it knows when each partition is complete;
//! - a keyed order of C by the gate (within the gates its existing order protects, which a new
//!   order replaces), as the planner's candidates propose it;
//! - a global order of C.
//!
//! Bounded: the upstream walk of one point follows at most [`WALK`] streams, one trial
//! re-derives at most [`TRIAL`] components, and the trials of one file re-derive at most
//! [`BUDGET`] components in all (errors are advised first); a spec of more than
//! [`MAX_COMPONENTS`] components is not given a second labeling at all. A point left out says
//! so and names `blazes plan`. Every step is counted in [`crate::analysis::work`].

use std::collections::{BTreeMap, BTreeSet};

use crate::analysis::{self, Analysis, FailOn, PointKind, PointOfOrder, work};
use crate::diagnostic::{Diagnostic, Severity, Subject};
use crate::graph::{CompId, Dataflow, IfaceId, Order, Producer, SourceId, StreamId};
use crate::label::{Gate, KeySet, Keys, Label};

use super::cost::cost;
use super::labeling::Labeling;
use super::model::Choice;
use super::scoring::punctuates;

/// Streams the upstream walk of one point follows, at most.
pub const WALK: usize = 256;
/// Components one trial re-derives, at most; a fix that reaches the point only further away
/// is not proven.
pub const TRIAL: usize = 256;
/// Components the trials of one file re-derive, at most.
pub const BUDGET: usize = 20_000;
/// Above this many components, `check` does not copy the dataflow for a second labeling (it
/// would double the memory of a big check): the help names `blazes plan` instead.
pub const MAX_COMPONENTS: usize = 100_000;
/// Verified fixes a help lists, at most.
const SHOWN: usize = 2;
/// Seal keys tried per point, at most.
const KEYS_TRIED: usize = 4;

/// One fix for one point: choices the planner knows, and `seal:` declarations on streams.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fix {
    /// Seals of sources and orders of components, as the planner applies them.
    pub choices: Vec<Choice>,
    /// Streams declared sealed on a key (`seal:` on the stream: its producer punctuates).
    pub streams: Vec<(StreamId, KeySet)>,
    /// The planner's cost of the choices; a stream's seal costs what an add-seal does.
    pub cost: u32,
}

/// The verified fixes of every point of `a` (in its order), cheapest first, within the same
/// budget as [`advise`], and the key table they are interned in (`df`'s, with the
/// intersections a keyed order replacing an existing one needs): for the tests, which apply
/// each fix to a copy of `df` given that table and run the full analysis.
#[doc(hidden)]
pub fn verified_fixes(df: &Dataflow, a: &Analysis, fail_on: FailOn) -> (Keys, Vec<Vec<Fix>>) {
    let mut lab = Labeling::with_labels(df, &a.labels, fail_on);
    let mut left = BUDGET;
    let fixes = a
        .points
        .iter()
        .map(|p| {
            Advisor {
                df,
                lab: &mut lab,
                left: &mut left,
            }
            .fixes(p)
        })
        .collect();
    (lab.dataflow().keys.clone(), fixes)
}

/// Replaces the help of every C001/C002 finding among `diags` that the analysis left to the
/// planner ([`analysis::needs_advice`]) with the fixes that remove its point, cheapest first.
/// `df` is the analysed dataflow and `a` its analysis (whose diagnostics `diags` are: `check`
/// moves them out of it).
pub fn advise(df: &Dataflow, a: &Analysis, diags: &mut [Diagnostic], fail_on: FailOn) {
    let by_path: BTreeMap<(CompId, usize), usize> = work::each(a.points.iter())
        .enumerate()
        .map(|(i, p)| ((p.component, p.path), i))
        .collect();
    // Errors first: a budget spent is spent on the findings that fail the check.
    let mut todo: Vec<(usize, usize)> = Vec::new();
    for (di, d) in work::each(diags.iter()).enumerate() {
        let Some(Subject::Point { component, path }) = d.subject else {
            continue;
        };
        if !analysis::needs_advice(d) {
            continue;
        }
        if let Some(&pi) = by_path.get(&(component, path as usize)) {
            todo.push((di, pi));
        }
    }
    if todo.is_empty() {
        return;
    }
    todo.sort_by_key(|&(di, _)| (diags[di].severity != Severity::Error, di));
    if df.components.len() > MAX_COMPONENTS {
        let help = format!(
            "run `blazes plan` for the cheapest fix (check verifies fixes only on specs of at most {MAX_COMPONENTS} components)"
        );
        for (di, _) in todo {
            diags[di].help = Some(help.clone());
        }
        return;
    }
    work::add((df.components.len() + df.streams.len()) as u64);
    let mut lab = Labeling::with_labels(df, &a.labels, fail_on);
    let mut left = BUDGET;
    for (di, pi) in todo {
        let help = if left == 0 {
            format!(
                "run `blazes plan` for the cheapest fix (check stopped verifying fixes after re-deriving {BUDGET} components for the points of order before this one)"
            )
        } else {
            let mut advisor = Advisor {
                df,
                lab: &mut lab,
                left: &mut left,
            };
            advisor.help(&a.points[pi])
        };
        diags[di].help = Some(help);
    }
}

struct Advisor<'a> {
    df: &'a Dataflow,
    lab: &'a mut Labeling,
    left: &'a mut usize,
}

impl Advisor<'_> {
    /// The fixes that remove the point, cheapest first (by cost, then seals before orders).
    fn fixes(&mut self, point: &PointOfOrder) -> Vec<Fix> {
        let c = self.df.component(point.component);
        let mut verified: Vec<Fix> = Vec::new();
        if let Some(Gate::Keys(g)) = c.paths[point.path].gate {
            verified.extend(self.seal_fixes(point, g));
        }
        for fix in self.order_fixes(point) {
            if self.removes(point, &fix) {
                verified.push(fix);
            }
        }
        verified.sort_by_key(|f| f.cost);
        verified
    }

    /// The help of one point: its verified fixes, or why there are none.
    fn help(&mut self, point: &PointOfOrder) -> String {
        let df = self.df;
        let c = df.component(point.component);
        let verified = self.fixes(point);
        let keys = &self.lab.dataflow().keys;
        let why = existing_order_why(df, keys, point);
        if verified.is_empty() {
            let reason = if point.input_label == Label::Inst {
                format!(
                    "the input is Inst because of a point of order upstream: fix that one first (no seal or order tried at {} alone removes this one)",
                    c.name
                )
            } else {
                format!(
                    "no seal or order that check tried removes this point on its own (seals of the sources upstream, an order of {}): `blazes plan` searches combinations",
                    c.name
                )
            };
            return match why {
                Some(w) => format!("{w}; {reason}"),
                None => reason,
            };
        }
        let keyed_shown = verified.iter().take(SHOWN).any(|f| {
            f.choices
                .iter()
                .any(|ch| ch.kind() == super::model::Kind::KeyedOrder)
        });
        let shown: Vec<String> = verified
            .iter()
            .take(SHOWN)
            .map(|f| describe(df, keys, point.component, point.path, keyed_shown, f))
            .collect();
        let fixes = shown.join("; or ");
        match why {
            Some(w) => format!("{w}; {fixes}"),
            None => fixes,
        }
    }

    /// Whether the point is gone with `fix` applied; counts the trial's work.
    fn removes(&mut self, point: &PointOfOrder, fix: &Fix) -> bool {
        if *self.left == 0 {
            return false;
        }
        let cp = self.lab.checkpoint();
        self.lab
            .try_within(&fix.choices, &fix.streams, TRIAL.min(*self.left));
        let spent = self.lab.work_since(&cp);
        work::add(spent as u64 + 1);
        *self.left = self.left.saturating_sub(spent.max(1));
        // Re-derived from exact inputs, or not at all (then it keeps the point): see
        // `Labeling::try_within`.
        let gone = self.lab.touched_since_contains(&cp, point.component)
            && !self
                .lab
                .points_of(point.component)
                .contains(&(point.path, point.kind));
        self.lab.rollback(cp);
        gone
    }

    /// The seal combinations that remove the point, one per key within the gate `g`, each
    /// irredundant and with producers that can punctuate.
    fn seal_fixes(&mut self, point: &PointOfOrder, g: KeySet) -> Vec<Fix> {
        let df = self.df;
        let pool = upstream(df, point);
        let keys = &df.keys;
        let mut tried: Vec<KeySet> = pool
            .keys
            .iter()
            .copied()
            .filter(|&k| keys.is_subset(k, g))
            .collect();
        tried.truncate(KEYS_TRIED);
        let mut out = Vec::new();
        for k in tried {
            let mut parts: Vec<Part> = pool
                .sources
                .iter()
                .filter(|&&(_, sk)| sk == k)
                .map(|&(s, _)| Part::Source(s))
                .chain(pool.punctuate.iter().map(|&t| Part::Stream(t)))
                .collect();
            if !self.removes(point, &fix_of(df, &parts, k)) {
                continue;
            }
            // Irredundant: drop each part the point can do without (streams first: a
            // punctuation is the larger claim about a component).
            let mut i = parts.len();
            while i > 0 {
                i -= 1;
                let mut without = parts.clone();
                without.remove(i);
                if self.removes(point, &fix_of(df, &without, k)) {
                    parts = without;
                }
            }
            let fix = fix_of(df, &parts, k);
            if self.punctuations_hold(&fix) {
                out.push(fix);
            }
        }
        out
    }

    /// Whether every producer `fix` asks to punctuate can, with the fix applied: each input
    /// of its paths to that output is unreached or sealed on a key within the stream's key.
    fn punctuations_hold(&mut self, fix: &Fix) -> bool {
        if fix.streams.is_empty() {
            return true;
        }
        let cp = self.lab.checkpoint();
        self.lab
            .try_within(&fix.choices, &fix.streams, TRIAL.min(*self.left));
        let spent = self.lab.work_since(&cp);
        work::add(spent as u64 + 1);
        *self.left = self.left.saturating_sub(spent.max(1));
        let ok = fix.streams.iter().all(|&(t, k)| {
            work::add(1);
            punctuates(self.lab.dataflow(), self.lab.labels().iface, t, k)
        });
        self.lab.rollback(cp);
        ok
    }

    /// A keyed order by the gate and a global order of the point's component.
    fn order_fixes(&mut self, point: &PointOfOrder) -> Vec<Fix> {
        let df = self.df;
        let c = df.component(point.component);
        let p = &c.paths[point.path];
        let mut out = Vec::new();
        if let Some(Gate::Keys(g)) = p.gate {
            let keys = &mut *self.lab.keys_mut();
            // A new keyed order replaces the existing one: it keeps every gate that one
            // protects protected (as the planner's candidates do).
            let mut k = g;
            if let Some(Order::Keys(_)) = c.order {
                for q in work::each(c.paths.iter()).filter(|q| !q.annotation.is_confluent()) {
                    if let Some(qg @ Gate::Keys(qk)) = q.gate
                        && c.ordered_for(qg, &*keys)
                    {
                        k = keys.intersection(k, qk);
                    }
                }
            }
            let order = Order::Keys(k);
            if k != KeySet::EMPTY && c.order != Some(order) {
                let choice = Choice::Order {
                    component: point.component,
                    order,
                };
                out.push(Fix {
                    choices: vec![choice],
                    streams: Vec::new(),
                    cost: cost(df, &*keys, choice, 0),
                });
            }
        }
        if c.order != Some(Order::Global) {
            let choice = Choice::Order {
                component: point.component,
                order: Order::Global,
            };
            out.push(Fix {
                choices: vec![choice],
                streams: Vec::new(),
                cost: cost(df, &df.keys, choice, 0),
            });
        }
        out
    }
}

/// One part of a seal combination.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Part {
    Source(SourceId),
    Stream(StreamId),
}

/// A seal combination on key `k`: each part costs what an add-seal consumed at one
/// component does.
fn fix_of(df: &Dataflow, parts: &[Part], k: KeySet) -> Fix {
    let mut fix = Fix {
        choices: Vec::new(),
        streams: Vec::new(),
        cost: 0,
    };
    for &part in parts {
        match part {
            Part::Source(source) => {
                let choice = Choice::AddSeal { source, key: k };
                fix.cost += cost(df, &df.keys, choice, 1);
                fix.choices.push(choice);
            }
            Part::Stream(t) => {
                let like = Choice::AddSeal {
                    source: SourceId(0),
                    key: k,
                };
                fix.cost += cost(df, &df.keys, like, 1);
                fix.streams.push((t, k));
            }
        }
    }
    fix
}

/// What the upstream walk of a point found.
struct Pool {
    /// Unsealed sources and a key each could seal.
    sources: Vec<(SourceId, KeySet)>,
    /// Streams written by a component from an order-sensitive path: where a seal stops.
    punctuate: Vec<StreamId>,
    /// Keys sealable or sealed upstream.
    keys: BTreeSet<KeySet>,
}

/// The inputs a point depends on: an `OW` path's own input, or every writing input of a
/// read's component.
fn inputs_of(df: &Dataflow, point: &PointOfOrder) -> Vec<IfaceId> {
    let c = df.component(point.component);
    let p = &c.paths[point.path];
    match point.kind {
        PointKind::Taint => vec![p.input],
        PointKind::NdRead => {
            let mut v: Vec<IfaceId> = work::each(c.paths.iter())
                .filter(|w| w.annotation.writes())
                .map(|w| w.input)
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        }
    }
}

/// Walks upstream from the point's inputs through streams and paths, at most [`WALK`]
/// streams, stopping at streams that declare their own seal.
fn upstream(df: &Dataflow, point: &PointOfOrder) -> Pool {
    let mut pool = Pool {
        sources: Vec::new(),
        punctuate: Vec::new(),
        keys: BTreeSet::new(),
    };
    let mut stack: Vec<StreamId> = Vec::new();
    for i in inputs_of(df, point) {
        stack.extend(df.iface(i).streams.iter().rev());
    }
    let mut seen: BTreeSet<StreamId> = BTreeSet::new();
    let mut walked = 0;
    while let Some(t) = stack.pop() {
        if walked == WALK {
            break;
        }
        if !seen.insert(t) {
            continue;
        }
        walked += 1;
        work::add(1);
        let st = &df.streams[t.index()];
        if st.seal.is_some() {
            continue;
        }
        match st.from {
            Producer::Source(s) => {
                let src = &df.sources[s.index()];
                match src.seal {
                    Some(k) => {
                        pool.keys.insert(k);
                    }
                    None => {
                        for &k in work::each(src.sealable.iter()) {
                            if !pool.sources.contains(&(s, k)) {
                                pool.sources.push((s, k));
                            }
                            pool.keys.insert(k);
                        }
                    }
                }
            }
            Producer::Output(o) => {
                let c = df.component(df.iface(o).component);
                let mut order_sensitive = false;
                for p in work::each(c.paths.iter()).filter(|p| p.output == o) {
                    order_sensitive |= !p.annotation.is_confluent();
                    stack.extend(df.iface(p.input).streams.iter().rev());
                }
                if order_sensitive {
                    pool.punctuate.push(t);
                }
            }
        }
    }
    pool
}

/// Why a component's existing keyed order does not protect the point, if it has one.
fn existing_order_why(df: &Dataflow, keys: &Keys, point: &PointOfOrder) -> Option<String> {
    let c = df.component(point.component);
    let p = &c.paths[point.path];
    match (c.order, p.gate) {
        (Some(Order::Keys(k)), Some(Gate::Keys(g))) if !keys.is_subset(k, g) => Some(format!(
            "{}'s `order: [{}]` does not cover the gate ({}): an order protects a path only when all its keys are in the path's gate",
            c.name,
            keys.display(k),
            keys.display(g)
        )),
        _ => None,
    }
}

/// Asking the producer of internal stream `t` to punctuate it per `key`, in words (`None`
/// for a source's stream, which a producer cannot be asked for).
fn punctuate_phrase(df: &Dataflow, keys: &Keys, t: StreamId, key: KeySet) -> Option<String> {
    let st = &df.streams[t.index()];
    let Producer::Output(o) = st.from else {
        return None;
    };
    let producer = &df.component(df.iface(o).component).name;
    let output = &df.iface(o).name;
    let (per, seal) = if key == KeySet::EMPTY {
        ("the end of it".to_string(), "[]".to_string())
    } else {
        let k = keys.display(key);
        (format!("per `{k}`"), format!("[{k}]"))
    };
    Some(format!(
        "{producer} to punctuate its output `{output}` {per} (`seal: {seal}` on the stream {} -> {}; with its input sealed so, it knows when each is complete)",
        st.from_text, st.to_text
    ))
}

/// A verified fix in words.
fn describe(
    df: &Dataflow,
    keys: &Keys,
    at: CompId,
    point_path: usize,
    keyed_shown: bool,
    fix: &Fix,
) -> String {
    let c = &df.component(at).name;
    // An order of a member of an engine task is an order of the task (`task:`).
    let group: Vec<CompId> = df.order_group(at).collect();
    let task = df.component(at).task.filter(|_| group.len() > 1).map(|t| {
        let members: Vec<&str> = group
            .iter()
            .map(|&m| df.component(m).name.as_str())
            .collect();
        (df.tasks[t as usize].name.as_str(), members.join(", "))
    });
    let mut parts: Vec<String> = Vec::new();
    for &ch in &fix.choices {
        match ch {
            Choice::SealStream { stream, key } => {
                parts.extend(punctuate_phrase(df, keys, stream, key));
            }
            Choice::AddSeal { source, key } => {
                let name = &df.sources[source.index()].name;
                parts.push(if key == KeySet::EMPTY {
                    format!(
                        "ask source `{name}` to mark the end of its stream (`seal: []`; it declares it sealable)"
                    )
                } else {
                    format!(
                        "ask source `{name}` to seal on `{}` (it declares it sealable)",
                        keys.display(key)
                    )
                });
            }
            Choice::Order {
                order: Order::Keys(k),
                ..
            } => {
                let k = keys.display(k);
                // The help has just said why the existing keyed order does not cover the gate.
                if let Some(Order::Keys(_)) = df.component(at).order {
                    return format!("replace it with `order: [{k}]`");
                }
                if let Some((task, members)) = &task {
                    return format!(
                        "order task `{task}`'s inputs per ({k}): `order: [{k}]` on {members}, which the task runs together"
                    );
                }
                return format!("order {c}'s inputs per ({k}): `order: [{k}]`");
            }
            Choice::Order {
                order: Order::Global,
                ..
            } => {
                let p = &df.component(at).paths[point_path];
                if let Some(Order::Keys(_)) = df.component(at).order {
                    return match keyed_shown {
                        true => "replace it with `order: global`".to_string(),
                        false => "no keyed order covers both this gate and the ones it protects; use `order: global`".to_string(),
                    };
                }
                if let Some((task, members)) = &task {
                    return format!(
                        "order task `{task}`'s inputs globally: `order: global` on {members}, which the task runs together"
                    );
                }
                return match p.gate {
                    Some(Gate::Keys(_)) => format!("order {c}'s inputs globally: `order: global`"),
                    _ => format!(
                        "the gate is `*`, so only a global order helps: `order: global` on {c}"
                    ),
                };
            }
        }
    }
    for &(t, key) in &fix.streams {
        parts.extend(punctuate_phrase(df, keys, t, key));
    }
    // A stream's producer is asked as a source is: "ask source `s` to ... and P to ...".
    let what = match parts.len() {
        1 if fix.choices.is_empty() => format!("ask {}", parts.remove(0)),
        1 => parts.remove(0),
        _ => {
            let last = parts.pop().unwrap_or_default();
            let head = parts.join(", ");
            if fix.choices.is_empty() {
                format!("ask {head} and {last},")
            } else {
                format!("{head} and {last},")
            }
        }
    };
    let whole = fix
        .choices
        .iter()
        .all(|ch| matches!(ch, Choice::AddSeal { key, .. } if *key == KeySet::EMPTY))
        && fix.streams.iter().all(|&(_, k)| k == KeySet::EMPTY);
    let buffered = if whole {
        "the whole stream"
    } else {
        "each partition"
    };
    format!("{what} and buffer {buffered} at {c} (a seal barrier)")
}
