//! `--format json`: one versioned document per invocation (`"version": 1`).
//!
//! The field names are a contract other tools read: add fields, never rename or remove them
//! within a version. Keys are written in alphabetical order, so the document reads the same
//! whichever serde_json features are enabled. The document is serialised straight from
//! borrowed structs, never built as a `serde_json::Value`: on a 100k-component spec the value
//! tree would cost more memory than the analysis itself.

use serde::Serialize;

use crate::check::{FileReport, Outcome};
use crate::diagnostic::{Diagnostic, LineIndex};
use crate::label::Label;
use crate::report::label_parts;

pub const VERSION: u32 = 1;

#[derive(Serialize)]
struct Document<'a> {
    files: Vec<File<'a>>,
    version: u32,
}

#[derive(Serialize)]
struct File<'a> {
    diagnostics: Vec<Diag<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    path: &'a str,
    points_of_order: Vec<Point<'a>>,
    seal_barriers: Vec<Barrier<'a>>,
    sinks: Vec<Sink<'a>>,
    status: &'static str,
    streams: Vec<Stream<'a>>,
}

#[derive(Serialize)]
struct Diag<'a> {
    code: &'static str,
    column: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    help: Option<&'a str>,
    line: usize,
    message: &'a str,
    name: &'static str,
    severity: &'static str,
}

#[derive(Serialize)]
struct Sink<'a> {
    failing: bool,
    implicit: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    key: Option<Vec<String>>,
    label: &'static str,
    name: &'a str,
    tolerate: &'static str,
}

#[derive(Serialize)]
struct Stream<'a> {
    from: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    key: Option<Vec<String>>,
    label: &'static str,
    to: &'a str,
}

#[derive(Serialize)]
struct Point<'a> {
    annotation: &'static str,
    column: usize,
    component: &'a str,
    from: &'a str,
    gate: Vec<String>,
    input_label: &'static str,
    kind: &'static str,
    line: usize,
    to: &'a str,
}

#[derive(Serialize)]
struct Barrier<'a> {
    component: &'a str,
    input: &'a str,
    key: Vec<&'a str>,
    producers: &'a [String],
}

fn diagnostics<'a>(diags: &'a [Diagnostic], text: &str, index: &LineIndex) -> Vec<Diag<'a>> {
    diags
        .iter()
        .map(|d| {
            let (line, column) = d
                .primary
                .as_ref()
                .map_or((1, 1), |p| index.line_col(text, p.span.offset));
            Diag {
                code: d.code.id,
                column,
                help: d.help.as_deref(),
                line,
                message: &d.message,
                name: d.code.name,
                severity: d.severity.as_str(),
            }
        })
        .collect()
}

fn file(r: &FileReport) -> File<'_> {
    let index = LineIndex::new(&r.text);
    match &r.outcome {
        Outcome::Invalid(diags) => File {
            diagnostics: diagnostics(diags, &r.text, &index),
            name: None,
            path: &r.path,
            points_of_order: Vec::new(),
            seal_barriers: Vec::new(),
            sinks: Vec::new(),
            status: "invalid",
            streams: Vec::new(),
        },
        Outcome::Analysed(a) => {
            let df = &a.dataflow;
            let an = &a.analysis;
            let parts = |l: Option<Label>| label_parts(l, &df.keys);
            File {
                diagnostics: diagnostics(&a.diagnostics, &r.text, &index),
                name: Some(&df.name),
                path: &r.path,
                points_of_order: an
                    .points
                    .iter()
                    .map(|p| {
                        let c = df.component(p.component);
                        let path = &c.paths[p.path];
                        let (line, column) = index.line_col(&r.text, path.label_span.offset);
                        Point {
                            annotation: path.annotation.as_str(),
                            column,
                            component: &c.name,
                            from: &df.iface(path.input).name,
                            gate: path.gate.map_or_else(Vec::new, |g| g.names(&df.keys)),
                            input_label: p.input_label.kind(),
                            kind: p.kind.as_str(),
                            line,
                            to: &df.iface(path.output).name,
                        }
                    })
                    .collect(),
                seal_barriers: an
                    .barriers
                    .iter()
                    .map(|b| Barrier {
                        component: &df.component(b.component).name,
                        input: &df.iface(b.input).name,
                        key: df.keys.names(b.key),
                        producers: &b.producers,
                    })
                    .collect(),
                sinks: an
                    .sinks
                    .iter()
                    .map(|v| {
                        let s = &df.sinks[v.sink.index()];
                        let (label, key) = parts(v.label);
                        Sink {
                            failing: v.failing,
                            implicit: s.implicit.is_some(),
                            key,
                            label,
                            name: &s.name,
                            tolerate: s.tolerate.as_str(),
                        }
                    })
                    .collect(),
                status: if an.failing() { "findings" } else { "ok" },
                streams: df
                    .streams
                    .iter()
                    .zip(&an.labels.stream)
                    .map(|(s, &l)| {
                        let (label, key) = parts(l);
                        Stream {
                            from: &s.from_text,
                            key,
                            label,
                            to: &s.to_text,
                        }
                    })
                    .collect(),
            }
        }
    }
}

/// The whole document, pretty-printed, with a trailing newline.
pub fn render(reports: &[FileReport]) -> String {
    let doc = Document {
        files: reports.iter().map(file).collect(),
        version: VERSION,
    };
    let mut s = serde_json::to_string_pretty(&doc).expect("the report serialises");
    s.push('\n');
    s
}
