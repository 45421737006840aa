//! C004 `unsafe-sink`: a sink receives a label worse than it tolerates. The one finding that
//! fails `check`; its help names the point of order that causes it (the culprit).

use foldhash::{HashSet, HashSetExt};

use crate::diagnostic::{Diagnostic, Subject};
use crate::graph::{Dataflow, Sink, StreamId};
use crate::label::{FailOn, Tolerance, show};

use super::super::provenance::sink_chain;
use super::super::verdicts::{PointsByComponent, sink_cause};
use super::super::work::{self, NameLookup};
use super::super::{Labels, PointOfOrder, SinkVerdict};

crate::codes::code! {
    /// Each sink accepts deterministic contents (`Seal`, `Async`) unless it declares `tolerate:
    /// Run|Inst|Diverge`. A declared tolerance decides alone; `--fail-on` sets how bad the label of
    /// a sink without one must be before it fails (default `run`). This is the finding that sets
    /// exit code 1; the points of order upstream of the sink (C001-C003) say where coordination is
    /// missing.
    pub static UNSAFE_SINK = "C004", "unsafe-sink", Error,
        "a sink receives a label worse than it tolerates";
}

/// The names of every sink and source of a dataflow, built once per analysis: the help of an
/// implicit sink proposes a name for it that none of them has. (A scan of all sinks and
/// sources per implicit sink made `check` quadratic: half of it at 300k components.)
pub(super) enum TakenNames<'a> {
    Set(HashSet<&'a str>),
    /// The old scan, for the negative control of the work guard ([`NameLookup::Scan`]).
    Scan(&'a Dataflow),
}

impl<'a> TakenNames<'a> {
    pub(super) fn new(df: &'a Dataflow, lookup: NameLookup) -> Self {
        match lookup {
            NameLookup::Set => {
                let mut names = HashSet::with_capacity(df.sinks.len() + df.sources.len());
                names.extend(work::each(df.sinks.iter()).map(|s| s.name.as_str()));
                names.extend(work::each(df.sources.iter()).map(|s| s.name.as_str()));
                TakenNames::Set(names)
            }
            NameLookup::Scan => TakenNames::Scan(df),
        }
    }

    /// Whether a sink or a source is named `name`.
    fn contains(&self, name: &str) -> bool {
        work::add(1);
        match self {
            TakenNames::Set(names) => names.contains(name),
            TakenNames::Scan(df) => {
                work::each(df.sinks.iter()).any(|s| s.name == name)
                    || work::each(df.sources.iter()).any(|s| s.name == name)
            }
        }
    }
}

/// The finding of a failing sink, and the chain of streams that brought its label (for the
/// related notes).
pub(super) fn finding(
    df: &Dataflow,
    labels: &Labels,
    points: &[PointOfOrder],
    by_component: &PointsByComponent,
    taken: &TakenNames<'_>,
    v: &SinkVerdict,
    fail_on: FailOn,
) -> (Diagnostic, Vec<StreamId>) {
    let sink = &df.sinks[v.sink.index()];
    let l = show(v.label, &df.keys);
    let chain = sink_chain(df, labels, v);
    let kind = if sink.implicit.is_some() {
        "implicit sink"
    } else {
        "sink"
    };
    let accept = accept_help(df, taken, sink, v);
    let help = match culprit(df, labels, points, by_component, v, &chain) {
        Some(c) => format!(
            "the point of order at {c} causes this; fix it (see `blazes plan`), or {accept}"
        ),
        None => accept,
    };
    let d = Diagnostic::new(
        &UNSAFE_SINK,
        format!(
            "{kind} `{}` receives {l}, but it tolerates {}",
            sink.name,
            tolerated(sink, fail_on)
        ),
    )
    .at(sink.span, format!("receives {l}"))
    .help(help)
    .about(Subject::Sink(v.sink));
    (d, chain)
}

/// What the sink tolerates, as the message says it.
fn tolerated(sink: &Sink, fail_on: FailOn) -> String {
    match (sink.tolerate, fail_on) {
        (Some(Tolerance::Async), _) | (None, FailOn::Run | FailOn::Never) => {
            "Async or Seal".to_string()
        }
        (Some(t), _) => format!("at worst {}", t.as_str()),
        // No declaration: `--fail-on` raised the threshold.
        (None, FailOn::Inst) => "at worst Run (`--fail-on inst`)".to_string(),
        (None, FailOn::Diverge) => "at worst Inst (`--fail-on diverge`)".to_string(),
    }
}

/// How to accept the label instead: declare the tolerance. An implicit sink is not written in
/// the spec, so the help says how to write it, with its tolerance.
fn accept_help(df: &Dataflow, taken: &TakenNames<'_>, sink: &Sink, v: &SinkVerdict) -> String {
    let tolerate = v.label.map_or("Run", |l| l.kind());
    match sink.implicit {
        Some(o) => {
            let c = &df.components[df.ifaces[o.index()].component.index()];
            let output = &df.ifaces[o.index()].name;
            let name = if taken.contains(output) {
                format!("{}_{output}", c.name)
            } else {
                output.clone()
            };
            format!(
                "declare the sink if this is acceptable: add `- {{ from: {}, to: {name} }}` to `streams:` and `{name}: {{ tolerate: {tolerate} }}` under `sinks:`",
                sink.name
            )
        }
        None => format!("declare `tolerate: {tolerate}` on the sink if this is acceptable"),
    }
}

/// The component whose point of order causes the sink's label ([`sink_cause`]), if any.
fn culprit(
    df: &Dataflow,
    labels: &Labels,
    points: &[PointOfOrder],
    by_component: &PointsByComponent,
    v: &SinkVerdict,
    chain: &[StreamId],
) -> Option<String> {
    sink_cause(df, labels, points, by_component, v, chain)
        .map(|i| df.components[points[i].component.index()].name.clone())
}
