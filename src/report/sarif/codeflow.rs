//! `blazes check --witness --format sarif`: a failing sink's witness as a SARIF `codeFlow`,
//! which GitHub code scanning shows as the path of the alert. Its one thread flow walks the
//! streams of the sink's provenance chain, from where the bad label starts to the sink, each
//! step located in the spec: the source with the witness's input records, the streams with
//! their labels, the point of order with the deliveries of the two executions there, and the
//! sink with the two contents it received.

use serde::Serialize;

use super::{At, LocationOut, Text, sentence};
use crate::analysis;
use crate::check::Analysed;
use crate::diagnostic::Span;
use crate::graph::{Consumer, Dataflow, Producer};
use crate::report::witness::{self, Witnesses};
use crate::simulate::{Observed, Witness};

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct CodeFlow<'a> {
    message: Text,
    thread_flows: [ThreadFlow<'a>; 1],
}

#[derive(Serialize)]
struct ThreadFlow<'a> {
    locations: Vec<ThreadFlowLocation<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ThreadFlowLocation<'a> {
    execution_order: usize,
    location: LocationOut<'a>,
}

fn records(items: &[String]) -> String {
    if items.is_empty() {
        "nothing".to_string()
    } else {
        items.join(" ")
    }
}

/// The name an interface has in a witness: `Component.input`.
fn qualified(df: &Dataflow, iface: crate::graph::IfaceId) -> String {
    let i = df.iface(iface);
    format!("{}.{}", df.component(i.component).name, i.name)
}

/// The path of the witness's point of order: its component, input and output.
fn point_path<'d>(df: &'d Dataflow, w: &Witness) -> Option<&'d crate::graph::Path> {
    let c = df.component_by_name(&w.component)?;
    df.component(c)
        .paths
        .iter()
        .find(|p| qualified(df, p.input) == w.from && qualified(df, p.output) == w.to)
}

/// What `--witness` adds to the result of a failing sink (`verdict`, an index into the
/// analysis' sink verdicts) of report `file`: a sentence for the result's message, and the
/// code flow of its witness when one was found.
pub(super) fn witness_flow<'a>(
    a: &'a Analysed,
    witnesses: &Witnesses,
    file: usize,
    verdict: usize,
    at: &At<'a, '_>,
) -> (String, Option<CodeFlow<'a>>) {
    let (df, an) = (&a.dataflow, &a.analysis);
    let sink_id = an.sinks[verdict].sink;
    let sink = &df.sinks[sink_id.index()];
    let (Some(r), Some(how)) = (
        witnesses.sink(file, sink_id.index()),
        witnesses.exploration(file),
    ) else {
        return (String::new(), None);
    };
    let Some(w) = &r.witness else {
        return (
            sentence(&witness::none_found(&sink.name, r.observed, &how)),
            None,
        );
    };
    let [a_side, b_side] = &w.sides;
    let mut steps: Vec<LocationOut<'a>> = Vec::new();
    let mut step = |span: Span, text: String| {
        if let Some(pl) = at.location(span, false) {
            steps.push(LocationOut {
                id: None,
                message: Some(Text {
                    text: sentence(&text),
                }),
                physical_location: pl,
            });
        }
    };
    let point = point_path(df, w);
    let point_step = |step: &mut dyn FnMut(Span, String)| {
        if let Some(p) = point {
            step(
                p.label_span,
                format!(
                    "Point of order {} ({} -> {}): {} takes {}; {} takes {}",
                    w.component,
                    w.from,
                    w.to,
                    a_side.name,
                    records(&a_side.trace),
                    b_side.name,
                    records(&b_side.trace)
                ),
            );
        }
    };
    let mut point_shown = false;
    let chain = analysis::sink_chain(df, &an.labels, &an.sinks[verdict]);
    // A chain that starts inside a cycle reaches no source: the flow starts at the sources
    // of the witness's records instead.
    let from_source = chain
        .first()
        .is_some_and(|s| matches!(df.streams[s.index()].from, Producer::Source(_)));
    if !from_source {
        for (name, recs) in &w.inputs {
            if let Some(src) = df.sources.iter().find(|s| s.name == *name) {
                step(src.span, format!("`{name}` emits {}", records(recs)));
            }
        }
    }
    for s in chain {
        let st = &df.streams[s.index()];
        let label = crate::label::show(an.labels.stream[s.index()], &df.keys);
        let emitted = match st.from {
            Producer::Source(_) => w
                .inputs
                .iter()
                .find(|(source, _)| *source == st.from_text)
                .map(|(_, recs)| format!(", emitting {}", records(recs))),
            Producer::Output(_) => None,
        };
        step(
            st.from_span,
            format!(
                "`{}` -> `{}` ({label}){}",
                st.from_text,
                st.to_text,
                emitted.unwrap_or_default()
            ),
        );
        let into_point = matches!(st.to, Consumer::Input(i) if point.is_some_and(|p| p.input == i));
        if into_point && !point_shown {
            point_step(&mut step);
            point_shown = true;
        }
    }
    if !point_shown {
        point_step(&mut step);
    }
    let (who, whither) = match w.observed {
        Observed::Run | Observed::Deterministic => {
            (format!("`{}` receives", sink.name), String::new())
        }
        _ => (
            format!("`{}` emits", w.component),
            format!(", towards `{}`", sink.name),
        ),
    };
    step(
        sink.span,
        format!(
            "{who} {} in {}, and {} in {}{whither}",
            records(&a_side.output),
            a_side.name,
            records(&b_side.output),
            b_side.name
        ),
    );
    let headline = witness::headline(w, &sink.name, &how);
    let flow = CodeFlow {
        message: Text {
            text: sentence(&capitalised(&headline)),
        },
        thread_flows: [ThreadFlow {
            locations: steps
                .into_iter()
                .enumerate()
                .map(|(i, location)| ThreadFlowLocation {
                    execution_order: i + 1,
                    location,
                })
                .collect(),
        }],
    };
    let said = format!("{}; its code flow shows how", capitalised(&headline));
    (sentence(&said), Some(flow))
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    c.next().map_or_else(String::new, |f| {
        f.to_uppercase().collect::<String>() + c.as_str()
    })
}
