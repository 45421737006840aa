//! What the findings of a point of order share, whichever its code (C001-C003): which code a
//! point is reported with, its primary note, its severity, and the cheapest fix as its help.

use crate::codes::Code;
use crate::diagnostic::{Diagnostic, Severity, Subject};
use crate::graph::{Component, Dataflow, Order, Path, Producer};
use crate::label::{Annotation, Gate, KeySet, Keys, Label};

use super::super::rules::external_writer;
use super::super::{PointKind, PointOfOrder, work};
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
    let clock = p.note.is_some() && df.iface(p.input).name == crate::whitebox::CLOCK;
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
        // A path derived from the component's program says why it has its annotation.
        Some(n) => d.related(
            p.span,
            format!(
                "derived from the component's {}: {}",
                n.origin.as_str(),
                n.reason
            ),
        ),
        None => d,
    }
}

/// The cheapest fix for one point of order, as a one-line help.
fn fix_hint(df: &Dataflow, point: &PointOfOrder) -> String {
    let c = &df.components[point.component.index()];
    let p = &c.paths[point.path];
    if point.input_label == Label::Inst && p.annotation.is_confluent() {
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
    if let Gate::Keys(g) = gate {
        // A source at the head of the chain that can punctuate a key within the gate.
        let head = point.chain.first().map(|s| df.streams[s.index()].from);
        if let Some(Producer::Source(k)) = head {
            let src = &df.sources[k.index()];
            if let Some(key) =
                work::each(src.sealable.iter()).find(|key| df.keys.is_subset(**key, g))
            {
                if *key == KeySet::EMPTY {
                    return format!(
                        "ask source `{}` to mark the end of its stream (`seal: []`; it declares it sealable) and buffer the whole stream at {} (a seal barrier)",
                        src.name, c.name
                    );
                }
                return format!(
                    "ask source `{}` to seal on `{}` (it declares it sealable) and buffer each partition at {} (a seal barrier)",
                    src.name,
                    df.keys.display(*key),
                    c.name
                );
            }
        }
        if let Some(Order::Keys(k)) = c.order {
            return existing_order_hint(df, c, k, g);
        }
        return format!(
            "order {}'s inputs per ({}): `order: [{}]`, or seal the input on a key within the gate",
            c.name,
            df.keys.display(g),
            df.keys.display(g)
        );
    }
    format!(
        "the gate is `*`, so only a global order helps: `order: global` on {}",
        c.name
    )
}

/// The hint for a point of order on a component whose keyed order `k` does not cover the gate
/// `g`: why not, and the order that would (it must keep covering every gate `k` covers now).
fn existing_order_hint(df: &Dataflow, c: &Component, k: KeySet, g: KeySet) -> String {
    let keys = &df.keys;
    let why = format!(
        "{}'s `order: [{}]` does not cover the gate ({}): an order protects a path only when all its keys are in the path's gate",
        c.name,
        keys.display(k),
        keys.display(g)
    );
    // The keys of every gate the existing order protects, and of this one.
    let mut common: Vec<&str> = keys.names(g);
    for p in work::each(c.paths.iter()) {
        if let Some(pg @ Gate::Keys(pk)) = p.gate
            && c.ordered_for(pg, keys)
        {
            let names = keys.names(pk);
            common.retain(|n| names.contains(n));
        }
    }
    match common.is_empty() {
        false => format!(
            "{why}; replace it with `order: [{}]`, or seal the input on a key within the gate",
            common.join(", ")
        ),
        true => format!(
            "{why}, and no keyed order covers both this gate and the ones it protects; use `order: global`, or seal the input on a key within the gate"
        ),
    }
}
