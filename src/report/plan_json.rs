//! `blazes plan --format json`: one versioned document per invocation (`"version": 2`),
//! shaped like `blazes check --format json`: a `files` array with one entry per spec, in the
//! order given, each with its `path` and `status` (`ok`, `repaired`, `unrepairable`, or
//! `invalid` with its `diagnostics`).
//!
//! The field names are a contract: add fields, never rename or remove them within a version.
//! Version 1 was the entry of a single spec at the top level; version 2 put the entries in
//! `files`, for several specs. Seal barriers are mechanisms of kind `seal-barrier` (with
//! `"added"` telling whether the plan introduced them), listed after the mechanisms the plan
//! adds. `applied` says what `--apply`/`--in-place` did with the spec (`null` without them).
//! `simulation` is the plan's verification by execution ([`simulation_json`]); the key is
//! absent when the verification did not run (`--no-simulate`, an unrepairable plan).

use serde_json::{Value, json};

use super::format::{Format, PlanWrite, Planned, Settings};
use super::plan_prose;
use super::witness::WitnessOut;
use crate::diagnostic::{Diagnostic, Severity};
use crate::plan::{Kind, Named, PointRef};
use crate::simulate::verify::Verification;

/// The version of the document's shape (`"version"`); see the module's documentation.
pub const VERSION: u64 = blazes_plan::VERSION;

/// What `--apply` or `--in-place` did with one spec.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Applied {
    /// The file written to, as the user named it.
    pub output: String,
    pub status: AppliedStatus,
    /// Why nothing was written (`skipped`, `failed`).
    pub message: Option<String>,
    /// The files written (`written`): the output, and with `--in-place` on a composed spec
    /// every used file the plan changed.
    pub files: Vec<AppliedFile>,
}

/// One file `--apply` or `--in-place` wrote, and what it added there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AppliedFile {
    pub path: String,
    /// Each edit in the file's own words (`` `order: [id]` on component `Report` ``).
    pub edits: Vec<String>,
}

/// What happened to the spec `--apply` or `--in-place` was to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppliedStatus {
    Written,
    /// The plan cannot repair the spec: nothing to write.
    Skipped,
    /// The edit or the write failed; the file is untouched.
    Failed,
    /// `--in-place` on a spec the plan does not change: the file is left as it is.
    Unchanged,
}

impl AppliedStatus {
    /// The status as the document writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            AppliedStatus::Written => "written",
            AppliedStatus::Skipped => "skipped",
            AppliedStatus::Failed => "failed",
            AppliedStatus::Unchanged => "unchanged",
        }
    }
}

/// One spec of the document.
pub struct PlannedFile<'a> {
    /// The path as the user wrote it (`<stdin>` for `-`).
    pub path: &'a str,
    /// The checked spec, whose diagnostics the entry lists as `blazes check` reports them
    /// (located in the file each is in): an invalid spec's entry lists them all, a valid
    /// one's only the warnings (its findings are what the plan fixes). `None`: no diagnostics.
    pub report: Option<&'a crate::check::FileReport>,
    /// `None` when the spec is invalid.
    pub plan: Option<Named<'a>>,
    pub applied: Option<&'a Applied>,
    /// The plan's verification by execution, when it ran.
    pub simulation: Option<&'a Verification>,
}

/// Diagnostics in the fields and order of `blazes check --format json`; only the warnings
/// unless `errors`.
fn diagnostics_json(f: &PlannedFile, errors: bool) -> Vec<Value> {
    let Some(r) = f.report else {
        return Vec::new();
    };
    let shown: Vec<Diagnostic> = r
        .diagnostics()
        .iter()
        .filter(|d| errors || d.severity != Severity::Error)
        .cloned()
        .collect();
    super::json::diagnostic_values(r, &shown)
}

fn applied_json(a: Option<&Applied>) -> Value {
    a.map_or(Value::Null, |a| {
        json!({
            "output": a.output,
            "status": a.status.as_str(),
            "message": a.message,
            "files": a.files.iter().map(|f| json!({"path": f.path, "edits": f.edits})).collect::<Vec<_>>(),
        })
    })
}

fn point_json(plan: &Named, p: &PointRef) -> Value {
    json!({
        "component": plan.component(p.component),
        "input": plan.iface(p.input),
        "output": plan.iface(p.output),
        "annotation": p.annotation.as_str(),
        "gate": p.gate,
        "kind": p.kind,
    })
}

/// The entry of one spec in `files`.
pub fn file_value(f: &PlannedFile) -> Value {
    let Some(plan) = f.plan else {
        return json!({
            "path": f.path,
            "status": blazes_plan::PlanStatus::Invalid.as_str(),
            "diagnostics": diagnostics_json(f, true),
            "mechanisms": [],
            "sinks": [],
            "reasons": [],
            "applied": applied_json(f.applied),
        });
    };
    let mut mechanisms: Vec<Value> = plan
        .mechanisms
        .iter()
        .map(|m| {
            let components = plan.component_names(&m.components);
            json!({
                "kind": m.kind.as_str(),
                "component": components.first(),
                "components": components,
                "task": plan.task(m),
                "source": m.source.map(|s| plan.source(s)),
                "stream": m.stream.map(|t| {
                    let st = &plan.dataflow.streams[t.index()];
                    json!({ "from": st.from_text, "to": st.to_text, "producer": plan.stream_producer(t) })
                }),
                "punctuates": m.punctuates.iter().map(|&t| plan.stream(t)).collect::<Vec<_>>(),
                "key": m.key,
                "replaces": m.replaces.as_ref().map(|k| json!({ "order": k })),
                "cost": m.cost,
                "fixes": m.fixes.iter().map(|p| point_json(&plan, p)).collect::<Vec<_>>(),
                "fixes_complete": m.fixes_complete,
                "sinks": plan.sink_names(&m.sinks),
                "runtime": plan_prose::runtime(&plan, m),
            })
        })
        .collect();
    mechanisms.extend(plan.barriers.iter().map(|b| {
        let component = plan.component(b.component);
        json!({
            "kind": Kind::SealBarrier.as_str(),
            "component": component,
            "components": [component],
            "task": Value::Null,
            "input": plan.iface(b.input),
            "source": Value::Null,
            "stream": Value::Null,
            "punctuates": [],
            "key": b.key,
            "replaces": Value::Null,
            "producers": plan.producer_names(&b.producers),
            "cost": b.cost,
            "added": b.added,
            "fixes": [],
            "fixes_complete": true,
            "sinks": [],
            "runtime": plan_prose::seal_barrier(&plan, b),
        })
    }));
    let mut entry = json!({
        "path": f.path,
        "name": plan.name,
        "diagnostics": diagnostics_json(f, false),
        "applied": applied_json(f.applied),
        "status": plan.status.as_str(),
        "search": {
            "mode": plan.search.mode.as_str(),
            "detail": plan.search.describe(),
            "candidates": plan.search.candidates,
            "evaluations": plan.search.evaluations,
            "exact_limit": plan.search.exact_limit,
            "lower_bound": plan.search.lower_bound(),
            "parts": plan.search.parts.iter().map(|p| json!({
                "mode": p.mode.as_str(),
                "candidates": p.candidates,
                "sinks": p.sinks.iter().map(|&k| plan.sink(k)).collect::<Vec<_>>(),
                "cost": p.cost,
                "lower_bound": p.lower_bound,
            })).collect::<Vec<_>>(),
        },
        "cost": plan.cost,
        "barrier_cost": plan.barrier_cost,
        "mechanisms": mechanisms,
        "sinks": plan.sinks.iter().map(|s| json!({
            "name": plan.sink(s.sink),
            "tolerate": s.tolerate.as_str(),
            "before": s.before,
            "after": s.after,
            "failing_before": s.failing_before,
            "failing_after": s.failing_after,
        })).collect::<Vec<_>>(),
        "reasons": plan.reasons.iter().map(|r| json!({
            "sink": plan.sink(r.sink),
            "label": r.label,
            "tolerate": r.tolerate.as_str(),
            "message": plan_prose::reason(&plan, r),
            "points_of_order": r.points.iter().map(|p| point_json(&plan, p)).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    });
    // Only when the verification ran: without it the entry is what it always was.
    if let Some(v) = f.simulation {
        entry["simulation"] = simulation_json(v);
    }
    entry
}

/// The `simulation` object: how the verification ran, whether it held, and the witness of
/// the first sink observed worse than it tolerates (`null` when none was).
pub fn simulation_json(v: &Verification) -> Value {
    let witness = v.failure.as_ref().map_or(Value::Null, |f| {
        let mut w = f
            .witness
            .as_ref()
            .and_then(|w| serde_json::to_value(WitnessOut::new(w)).ok())
            .unwrap_or_else(|| json!({ "observed": f.observed.as_str() }));
        w["sink"] = json!(f.sink);
        w["label"] = json!(f.label.map(|l| l.kind()));
        w["tolerate"] = json!(f.tolerate.as_str());
        w
    });
    let mut out = json!({
        "schedules": v.schedules,
        "exhaustive": v.exhaustive,
        "inconclusive": v.inconclusive,
        "seed": v.seed,
        "replicas": v.replicas,
        "verified": v.verified(),
        "witness": witness,
    });
    if let Some(reason) = &v.skipped {
        out["skipped"] = json!(reason);
    }
    out
}

/// The whole document for the specs of one invocation.
pub fn document(files: &[PlannedFile]) -> Value {
    json!({
        "version": VERSION,
        "files": files.iter().map(file_value).collect::<Vec<_>>(),
    })
}

/// The document, pretty-printed, with a trailing newline.
pub fn render_files(files: &[PlannedFile]) -> String {
    let mut s = serde_json::to_string_pretty(&document(files)).unwrap_or_default();
    s.push('\n');
    s
}

/// One valid spec's plan (`path` as the user wrote it), with no diagnostics and nothing applied.
pub fn single<'a>(path: &'a str, plan: Named<'a>) -> PlannedFile<'a> {
    PlannedFile {
        path,
        report: None,
        plan: Some(plan),
        applied: None,
        simulation: None,
    }
}

/// The document of one valid spec's plan.
pub fn render(path: &str, plan: Named) -> String {
    render_files(&[single(path, plan)])
}

/// `--format json` of `blazes plan`: [`render_files`].
pub const FORMAT: Format<PlanWrite> = Format {
    name: "json",
    help: None,
    chain_notes: false,
    write: write_format,
};

fn write_format(
    planned: &[Planned],
    _: &Settings,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let files: Vec<PlannedFile> = planned.iter().map(Planned::file).collect();
    out.write_all(render_files(&files).as_bytes())
}
