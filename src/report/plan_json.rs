//! `blazes plan --format json`: one versioned document (`"version": 1`) per spec.
//!
//! The field names are a contract: add fields, never rename or remove them within a version.
//! Seal barriers are mechanisms of kind `seal-barrier` (with `"added"` telling whether the
//! plan introduced them), listed after the mechanisms the plan adds.

use serde_json::{Value, json};

use crate::plan::{Plan, PointRef};

pub const VERSION: u32 = 1;

fn point_json(p: &PointRef) -> Value {
    json!({
        "component": p.component,
        "input": p.input,
        "output": p.output,
        "label": p.annotation,
        "gate": p.gate,
        "kind": p.kind,
    })
}

/// The document for one planned spec (`path` as the user wrote it).
pub fn value(path: &str, plan: &Plan) -> Value {
    let mut mechanisms: Vec<Value> = plan
        .mechanisms
        .iter()
        .map(|m| {
            json!({
                "kind": m.kind.as_str(),
                "component": m.components.first(),
                "components": m.components,
                "source": m.source,
                "key": m.key,
                "cost": m.cost,
                "fixes": m.fixes.iter().map(point_json).collect::<Vec<_>>(),
                "fixes_complete": m.fixes_complete,
                "sinks": m.sinks,
                "runtime": m.runtime,
            })
        })
        .collect();
    mechanisms.extend(plan.barriers.iter().map(|b| {
        json!({
            "kind": "seal-barrier",
            "component": b.component,
            "components": [b.component],
            "input": b.input,
            "source": Value::Null,
            "key": b.key,
            "producers": b.producers,
            "cost": b.cost,
            "added": b.added,
            "fixes": [],
            "fixes_complete": true,
            "sinks": [],
            "runtime": if b.key.is_empty() {
                format!(
                    "{} buffers the whole stream on input `{}` until {} finished it",
                    b.component,
                    b.input,
                    crate::report::plan_human::producers_text(&b.producers)
                )
            } else {
                format!(
                    "{} buffers each partition of `{}` on input `{}` until {} sealed it",
                    b.component,
                    b.key.join(", "),
                    b.input,
                    crate::report::plan_human::producers_text(&b.producers)
                )
            },
        })
    }));
    json!({
        "version": VERSION,
        "path": path,
        "name": plan.name,
        "status": plan.status.as_str(),
        "search": {
            "mode": plan.search.mode.as_str(),
            "detail": plan.search.mode.describe(plan.search.exact_limit, plan.search.budget),
            "candidates": plan.search.candidates,
            "evaluations": plan.search.evaluations,
            "exact_limit": plan.search.exact_limit,
        },
        "cost": plan.cost,
        "barrier_cost": plan.barrier_cost,
        "mechanisms": mechanisms,
        "sinks": plan.sinks.iter().map(|s| json!({
            "name": s.name,
            "tolerate": s.tolerate,
            "before": s.before,
            "after": s.after,
            "failing_before": s.failing_before,
            "failing_after": s.failing_after,
        })).collect::<Vec<_>>(),
        "reasons": plan.reasons.iter().map(|r| json!({
            "sink": r.sink,
            "label": r.label,
            "tolerate": r.tolerate,
            "message": r.message,
            "points_of_order": r.points.iter().map(point_json).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

pub fn render(path: &str, plan: &Plan) -> String {
    let mut s = serde_json::to_string_pretty(&value(path, plan)).unwrap_or_default();
    s.push('\n');
    s
}
