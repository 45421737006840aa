//! What the findings of a point of order share, whichever its code (C001-C003): which code a
//! point is reported with, its primary note, its severity, and the cheapest fix as its help.

use crate::codes::Code;
use crate::diagnostic::{Diagnostic, Severity, Subject};
use crate::graph::{Component, Dataflow, Path};
use crate::label::{Annotation, Gate, Keys, Label};

use super::super::rules::external_writer;
use super::super::{PointKind, PointOfOrder};
use super::{c001_unordered_write, c002_unprotected_read, c003_transient_write, path_desc};

/// The diagnostic code a point of order is reported with, and by whose name (`name`) every
/// report calls it: `unordered-write` (C001), `transient-write` (C003) or `unprotected-read`
/// (C002). A write point on an `OW` path is unordered unless the component is ordered for its
/// gate and the input is `Inst`: then, as on a `CW` path, what is wrong is the `Inst` written.
pub fn point_code(
    c: &Component,
    p: &Path,
    kind: PointKind,
    input: Label,
    keys: &Keys,
) -> &'static Code {
    match (kind, p.annotation) {
        (PointKind::Taint, Annotation::OW)
            if input != Label::Inst || !c.ordered_for(p.gate.unwrap_or(Gate::Star), keys) =>
        {
            &c001_unordered_write::UNORDERED_WRITE
        }
        (PointKind::Taint, _) => &c003_transient_write::INST_WRITE,
        (PointKind::NdRead, _) => &c002_unprotected_read::UNPROTECTED_READ,
    }
}

/// The words of a point of order that its code's message is built from.
pub(super) struct PointText<'a> {
    pub component: &'a str,
    pub input: &'a str,
    pub output: &'a str,
    /// The path's annotation and gate: `OW(word)`.
    pub path: String,
    /// The label of the input that causes the point.
    pub label: String,
    /// What goes wrong: replicas disagree, or a replay differs.
    pub result: &'static str,
}

/// The finding of one point of order: an error when it is upstream of a failing sink, a
/// warning otherwise.
pub(super) fn finding(df: &Dataflow, point: &PointOfOrder, error: bool) -> Diagnostic {
    let c = &df.components[point.component.index()];
    let p = &c.paths[point.path];
    let text = PointText {
        component: &c.name,
        input: df.ifaces[p.input.index()].name.as_str(),
        output: df.ifaces[p.output.index()].name.as_str(),
        path: path_desc(df, p),
        label: point.input_label.display(&df.keys),
        result: if c.replicated {
            "replicas can disagree"
        } else {
            "a replay can produce different output"
        },
    };
    let code = point_code(c, p, point.kind, point.input_label, &df.keys);
    let message = if code == &c001_unordered_write::UNORDERED_WRITE {
        c001_unordered_write::message(&text)
    } else if code == &c003_transient_write::INST_WRITE {
        c003_transient_write::message(&text)
    } else if point.kind == PointKind::NdRead && external_writer(c, p) {
        c002_unprotected_read::external_message(&text)
    } else {
        let cause = &df.ifaces[point.cause_input.index()].name;
        c002_unprotected_read::message(&text, cause)
    };
    let (path, l) = (&text.path, &text.label);
    let primary = match point.kind {
        PointKind::Taint => format!("point of order: {path} receives {l}"),
        PointKind::NdRead => format!("point of order: {path} reads state written from {l}"),
    };
    let severity = if error {
        Severity::Error
    } else {
        Severity::Warning
    };
    let clock = crate::whitebox::is_clock(p.note.as_deref(), &df.iface(p.input).name);
    let help = if clock {
        "processing time or a nondeterministic function inside the component: no order or seal of its inputs fixes it; use event time (a watermarked attribute) instead".to_string()
    } else {
        fix_hint(df, point)
    };
    let d = Diagnostic::new(code, message)
        .about(Subject::Point {
            component: point.component,
            path: point.path as u32,
        })
        .severity(severity)
        .at(p.label_span, primary)
        .help(help);
    match &p.note {
        // A path derived from the component's program, or given by an importer's catalogue,
        // says why it has its annotation.
        Some(n) if n.origin.from_program() => d.related(
            p.span,
            format!(
                "derived from the component's {}: {}",
                n.origin.as_str(),
                n.reason
            ),
        ),
        // In the topology file the path is its operator, where the point itself is.
        Some(n) => d.related(p.label_span, format!("annotated on import: {}", n.reason)),
        None => d,
    }
}

/// The help of a C001 or C002 point whose fix the planner's evaluation finds
/// (`plan::advise`, which `check` runs after the analysis, replaces it): the analysis alone
/// cannot tell which seal or order removes a point, since that depends on what the change
/// reaches.
pub const PLAN_HELP: &str = "run `blazes plan` for the cheapest fix";

/// Whether `d` is a finding whose help is left to the planner's evaluation ([`PLAN_HELP`]).
pub fn needs_advice(d: &Diagnostic) -> bool {
    (d.code == &c001_unordered_write::UNORDERED_WRITE
        || d.code == &c002_unprotected_read::UNPROTECTED_READ)
        && d.help.as_deref() == Some(PLAN_HELP)
}

/// The help of one point of order: what the analysis can say itself (an `Inst` written, state
/// the spec does not model), else [`PLAN_HELP`].
fn fix_hint(df: &Dataflow, point: &PointOfOrder) -> String {
    let c = &df.components[point.component.index()];
    let p = &c.paths[point.path];
    let code = point_code(c, p, point.kind, point.input_label, &df.keys);
    if code == &c003_transient_write::INST_WRITE {
        return "the input is Inst because of a point of order upstream; fix that one and this one goes away".to_string();
    }
    let gate = p.gate.unwrap_or(Gate::Star);
    if point.kind == PointKind::NdRead && external_writer(c, p) {
        let order = match gate {
            Gate::Keys(g) => format!("`order: [{}]`", df.keys.display(g)),
            Gate::Star => "`order: global`".to_string(),
        };
        return format!(
            "no path of {} writes the state this path reads: if nothing writes it while the dataflow runs, declare `state: static` on the path; if something does, model it (a CW or OW path fed by its stream, sealed on a key within the gate if it is) or order {}'s inputs, the writes included: {order}",
            c.name, c.name
        );
    }
    PLAN_HELP.to_string()
}
