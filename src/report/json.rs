//! `--format json`: one versioned document per invocation (`"version": 1`).
//!
//! The field names are a contract other tools read: add fields, never rename or remove them
//! within a version.

use serde_json::{Value, json};

use crate::check::{FileReport, Outcome};
use crate::diagnostic::{Diagnostic, LineIndex};
use crate::graph::Dataflow;
use crate::report::label_parts;

pub const VERSION: u32 = 1;

fn label_json(
    obj: &mut serde_json::Map<String, Value>,
    l: Option<crate::label::Label>,
    df: &Dataflow,
) {
    let (name, key) = label_parts(l, &df.keys);
    obj.insert("label".into(), json!(name));
    if let Some(k) = key {
        obj.insert("key".into(), json!(k));
    }
}

fn diagnostics_json(diags: &[Diagnostic], text: &str, index: &LineIndex) -> Value {
    Value::Array(
        diags
            .iter()
            .map(|d| {
                let (line, column) = d
                    .primary
                    .as_ref()
                    .map_or((1, 1), |p| index.line_col(text, p.span.offset));
                let mut o = serde_json::Map::new();
                o.insert("code".into(), json!(d.code.id));
                o.insert("name".into(), json!(d.code.name));
                o.insert("severity".into(), json!(d.severity.as_str()));
                o.insert("message".into(), json!(d.message));
                o.insert("line".into(), json!(line));
                o.insert("column".into(), json!(column));
                if let Some(h) = &d.help {
                    o.insert("help".into(), json!(h));
                }
                Value::Object(o)
            })
            .collect(),
    )
}

/// The JSON value of one file.
pub fn file_json(r: &FileReport) -> Value {
    let index = LineIndex::new(&r.text);
    let mut o = serde_json::Map::new();
    o.insert("path".into(), json!(r.path));
    match &r.outcome {
        Outcome::Invalid(diags) => {
            o.insert("status".into(), json!("invalid"));
            for k in ["sinks", "streams", "points_of_order", "seal_barriers"] {
                o.insert(k.into(), json!([]));
            }
            o.insert(
                "diagnostics".into(),
                diagnostics_json(diags, &r.text, &index),
            );
        }
        Outcome::Analysed(a) => {
            let df = &a.dataflow;
            let an = &a.analysis;
            o.insert(
                "status".into(),
                json!(if an.failing() { "findings" } else { "ok" }),
            );
            o.insert("name".into(), json!(df.name));
            let sinks: Vec<Value> = an
                .sinks
                .iter()
                .map(|v| {
                    let s = &df.sinks[v.sink.index()];
                    let mut m = serde_json::Map::new();
                    m.insert("name".into(), json!(s.name));
                    label_json(&mut m, v.label, df);
                    m.insert("tolerate".into(), json!(s.tolerate.as_str()));
                    m.insert("implicit".into(), json!(s.implicit.is_some()));
                    m.insert("failing".into(), json!(v.failing));
                    Value::Object(m)
                })
                .collect();
            o.insert("sinks".into(), Value::Array(sinks));
            let streams: Vec<Value> = df
                .streams
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    let mut m = serde_json::Map::new();
                    m.insert("from".into(), json!(s.from_text));
                    m.insert("to".into(), json!(s.to_text));
                    label_json(&mut m, an.labels.stream[i], df);
                    Value::Object(m)
                })
                .collect();
            o.insert("streams".into(), Value::Array(streams));
            let points: Vec<Value> = an
                .points
                .iter()
                .map(|p| {
                    let c = df.component(p.component);
                    let path = &c.paths[p.path];
                    let (line, column) = index.line_col(&r.text, path.label_span.offset);
                    json!({
                        "component": c.name,
                        "from": df.iface(path.input).name,
                        "to": df.iface(path.output).name,
                        "kind": p.kind.as_str(),
                        "annotation": path.annotation.as_str(),
                        "gate": path.gate.map_or_else(Vec::new, |g| g.names(&df.keys)),
                        "input_label": p.input_label.kind(),
                        "line": line,
                        "column": column,
                    })
                })
                .collect();
            o.insert("points_of_order".into(), Value::Array(points));
            let barriers: Vec<Value> = an
                .barriers
                .iter()
                .map(|b| {
                    json!({
                        "component": df.component(b.component).name,
                        "input": df.iface(b.input).name,
                        "key": df.keys.names(b.key),
                        "producers": b.producers,
                    })
                })
                .collect();
            o.insert("seal_barriers".into(), Value::Array(barriers));
            o.insert(
                "diagnostics".into(),
                diagnostics_json(&a.diagnostics, &r.text, &index),
            );
        }
    }
    Value::Object(o)
}

/// The whole document, pretty-printed, with a trailing newline.
pub fn render(reports: &[FileReport]) -> String {
    let doc = json!({
        "version": VERSION,
        "files": reports.iter().map(file_json).collect::<Vec<_>>(),
    });
    let mut s = serde_json::to_string_pretty(&doc).expect("a JSON value always serialises");
    s.push('\n');
    s
}
