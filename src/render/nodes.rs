//! The nodes of the drawing: sources (with their seals, added ones marked), sinks (with their
//! verdicts) and components (their paths, points of order highlighted, and their order).

use std::collections::BTreeMap;

use graphviz_rust::dot_structures::Stmt;

use super::dot::*;
use crate::analysis::{Analysis, PointOfOrder};
use crate::graph::{CompId, Dataflow, Order, SourceId};
use crate::vocabulary;

pub(super) fn sources(
    df: &Dataflow,
    add_seals: &BTreeMap<SourceId, Vec<String>>,
    stmts: &mut Vec<Stmt>,
) {
    for (i, s) in df.sources.iter().enumerate() {
        let mut rows = vec![(format!("<B>{}</B>", html(&s.name)), None)];
        let added = add_seals.get(&SourceId(i as u32));
        // In a plan's picture the source already carries the added seal: drawn once, marked.
        if let Some(k) = s.seal.filter(|_| added.is_none()) {
            rows.push((
                small(&format!("seal: {}", html(&df.keys.display(k))), None),
                None,
            ));
        }
        for k in &s.sealable {
            rows.push((
                small(&format!("sealable: {}", html(&df.keys.display(*k))), None),
                None,
            ));
        }
        if let Some(k) = added {
            rows.push((
                small(
                    &format!("<B>+</B> seal: {}", html(&k.join(", "))),
                    Some(PLAN),
                ),
                Some(PLAN_BG),
            ));
        }
        let unused = s.streams.is_empty();
        let tooltip = match added {
            Some(k) => format!(
                "source {}, seal on {} added by the plan",
                s.name,
                k.join(", ")
            ),
            None => format!("source {}", s.name),
        };
        let mut a = vec![
            attr("shape", "cds"),
            html_attr("label", &table(&rows)),
            attr("tooltip", &tooltip),
        ];
        if added.is_some() {
            a.push(attr("color", PLAN));
            a.push(attr("style", "dashed,bold"));
        } else if unused {
            a.push(attr("color", GREY));
            a.push(attr("fontcolor", GREY));
            a.push(attr("style", "dashed"));
        }
        stmts.push(node(&format!("s{i}"), a));
    }
}

pub(super) fn sinks(df: &Dataflow, an: &Analysis, stmts: &mut Vec<Stmt>) {
    for (i, s) in df.sinks.iter().enumerate() {
        let v = &an.sinks[i];
        let shown = match s.implicit {
            Some(o) => df.iface_name(o),
            None => s.name.clone(),
        };
        let mut rows = vec![(format!("<B>{}</B>", html(&shown)), None)];
        if s.implicit.is_some() {
            rows.push((small("implicit sink", None), None));
        }
        if let Some(t) = s.tolerate {
            rows.push((
                small(&format!("tolerate: {}", html(t.as_str())), None),
                None,
            ));
        }
        let (color, _) = style_of(v.label);
        if v.failing {
            rows.push((
                small(
                    &format!("✗ receives {}", html(&label_text(v.label, df))),
                    Some(ALARM),
                ),
                Some("#ffebee"),
            ));
        }
        let mut a = vec![
            attr("shape", "cylinder"),
            html_attr("label", &table(&rows)),
            attr(
                "tooltip",
                &format!("sink {shown}: receives {}", label_text(v.label, df)),
            ),
        ];
        if v.label.is_none() {
            a.push(attr("color", GREY));
            a.push(attr("fontcolor", GREY));
            a.push(attr("style", "dashed"));
        } else if v.failing {
            a.push(attr("color", ALARM));
            a.push(attr("penwidth", "2"));
        } else {
            a.push(attr("color", color));
        }
        if s.implicit.is_some() && v.label.is_some() {
            a.push(attr("style", "dashed"));
        }
        stmts.push(node(&format!("k{i}"), a));
    }
}

/// `ordered_by_plan`: the component's order is drawn as an added ordering node, so its own
/// `order:` row (which in a plan's picture is that same order) is left out.
pub(super) fn component_node(
    df: &Dataflow,
    an: &Analysis,
    cid: CompId,
    points: &[&PointOfOrder],
    ordered_by_plan: bool,
) -> Stmt {
    let c = df.component(cid);
    let mut rows = vec![(format!("<B>{}</B>", html(&c.name)), None)];
    if c.replicated {
        rows.push((small("replicated", Some("#4a148c")), None));
    }
    match c.order.filter(|_| !ordered_by_plan) {
        Some(Order::Global) => rows.push((small("order: global", None), None)),
        Some(Order::Keys(k)) => rows.push((
            small(&format!("order: {}", html(&df.keys.display(k))), None),
            None,
        )),
        None => {}
    }
    for (pi, p) in c.paths.iter().enumerate() {
        // Only order-sensitive paths have a gate to show (a valid spec gives no other one).
        let gate = p.gate.filter(|_| !p.annotation.is_confluent());
        let ann = vocabulary::signature(p.annotation, gate, &df.keys);
        let text = format!(
            "{} → {}  {}",
            html(&df.iface(p.input).name),
            html(&df.iface(p.output).name),
            html(&ann)
        );
        match points.iter().find(|pt| pt.path == pi) {
            Some(pt) => {
                // The point's diagnostic code names it, as in every other format.
                let why = crate::analysis::point_code(c, p, pt.kind, pt.input_label, &df.keys)
                    .name
                    .replace('-', " ");
                rows.push((
                    small(
                        &format!(
                            "⚠ {text}<BR/>point of order: {why} of {}",
                            html(&pt.input_label.display(&df.keys))
                        ),
                        Some(ALARM),
                    ),
                    Some("#ffebee"),
                ));
            }
            None => rows.push((small(&text, None), None)),
        }
    }
    let unreached = c
        .inputs
        .iter()
        .all(|i| an.labels.iface[i.index()].is_none());
    let mut a = vec![
        attr("shape", if c.replicated { "box3d" } else { "box" }),
        html_attr("label", &table(&rows)),
        attr(
            "tooltip",
            &format!(
                "component {}{}",
                c.name,
                if c.replicated { " (replicated)" } else { "" }
            ),
        ),
    ];
    if unreached {
        a.push(attr("color", GREY));
        a.push(attr("fontcolor", GREY));
        a.push(attr("style", "dashed"));
    } else if !points.is_empty() {
        a.push(attr("color", ALARM));
        a.push(attr("penwidth", "2"));
    }
    node(&comp_id(cid), a)
}
