//! A module's summary as users read it: a `paths:` block that can stand in for the module
//! (`blazes summarize`), one line per path (`check`), and JSON.

use serde_json::{Value, json};

use crate::analysis::summary::{DerivedGate, GreyBox, Summary, SummaryPath};

/// A name as YAML reads it back: bare when it is plain, else double-quoted (JSON's quoting is
/// YAML's).
fn name(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && !s.starts_with('-');
    if plain {
        s.to_string()
    } else {
        Value::String(s.to_string()).to_string()
    }
}

fn gate_yaml(g: &DerivedGate) -> String {
    match g {
        DerivedGate::Star => "\"*\"".to_string(),
        DerivedGate::Keys(k) => format!(
            "[{}]",
            k.iter().map(|a| name(a)).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// One path as a spec writes it: `{ from: clicks, to: answers, label: OR, gate: [id] }`.
pub fn path_yaml(p: &SummaryPath) -> String {
    let gate = p
        .gate
        .as_ref()
        .map(|g| format!(", gate: {}", gate_yaml(g)))
        .unwrap_or_default();
    format!(
        "{{ from: {}, to: {}, label: {}{gate} }}",
        name(&p.from),
        name(&p.to),
        p.annotation.as_str()
    )
}

/// The grey box as the body of a component: `replicated: false` when it is not, and its
/// `paths:`, indented by `indent` spaces.
pub fn grey_box_yaml(g: &GreyBox, indent: usize) -> String {
    let pad = " ".repeat(indent);
    let mut out = String::new();
    if !g.replicated {
        out.push_str(&format!("{pad}replicated: false\n"));
    }
    out.push_str(&format!("{pad}paths:\n"));
    for p in &g.paths {
        out.push_str(&format!("{pad}  - {}\n", path_yaml(p)));
    }
    out
}

/// `from -> to: OW(gate)`, one per path, joined by `; `.
pub fn one_line(g: &GreyBox) -> String {
    let mut parts: Vec<String> = g
        .paths
        .iter()
        .map(|p| format!("{} -> {}: {}", p.from, p.to, p.signature()))
        .collect();
    if !g.replicated {
        parts.push("not replicated".to_string());
    }
    parts.join("; ")
}

/// The summary as JSON: `{"exact": true, "replicated": .., "paths": [..]}`, or
/// `{"exact": false, "reason": ..}`.
pub fn json(s: &Summary) -> Value {
    match s {
        Summary::Exact(g) => json!({
            "exact": true,
            "replicated": g.replicated,
            "paths": g.paths.iter().map(|p| {
                let mut o = json!({
                    "from": p.from,
                    "to": p.to,
                    "annotation": p.annotation.as_str(),
                });
                if let Some(g) = &p.gate {
                    o["gate"] = json!(match g {
                        DerivedGate::Star => vec!["*".to_string()],
                        DerivedGate::Keys(k) => k.clone(),
                    });
                }
                o
            }).collect::<Vec<_>>(),
        }),
        Summary::None(why) => json!({ "exact": false, "reason": why }),
        Summary::TooBig(why) => json!({ "exact": false, "too_big": true, "reason": why }),
    }
}

/// The lines `check` prints under a composed spec's findings: each used file's summary, or
/// why it has none.
pub fn human(summaries: &[crate::check::ModuleSummary]) -> String {
    let mut out = String::new();
    for m in summaries {
        let used = m
            .instances
            .iter()
            .map(|i| format!("`{i}`"))
            .collect::<Vec<_>>()
            .join(", ");
        let line = match &m.summary {
            Summary::Exact(g) => {
                format!("summary of `{}` (used as {used}): {}", m.file, one_line(g))
            }
            Summary::None(why) | Summary::TooBig(why) => {
                format!("no summary of `{}` (used as {used}): {why}", m.file)
            }
        };
        out.push_str(&super::escape::visible(&line));
        out.push('\n');
        for c in &m.coordinated {
            let used = c
                .instances
                .iter()
                .map(|i| format!("`{i}`"))
                .collect::<Vec<_>>()
                .join(", ");
            let how = c.describe();
            let line = match &c.summary {
                Summary::Exact(g) => format!(
                    "summary of `{}` as {used} (with {how}): {}",
                    m.file,
                    one_line(g)
                ),
                Summary::None(why) | Summary::TooBig(why) => {
                    format!("no summary of `{}` as {used} (with {how}): {why}", m.file)
                }
            };
            out.push_str(&super::escape::visible(&line));
            out.push('\n');
        }
    }
    out
}

/// The summaries as JSON, for `check --format json`.
pub fn json_list(summaries: &[crate::check::ModuleSummary]) -> Vec<Value> {
    summaries
        .iter()
        .map(|m| {
            let coordinated: Vec<Value> = m
                .coordinated
                .iter()
                .map(|c| {
                    json!({
                        "instances": c.instances,
                        "coordination": c.describe(),
                        "summary": json(&c.summary),
                    })
                })
                .collect();
            json!({
                "file": m.file,
                "instances": m.instances,
                "summary": json(&m.summary),
                "coordinated": coordinated,
            })
        })
        .collect()
}
