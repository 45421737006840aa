//! `blazes plan` human output: reads like a short review comment. One line per mechanism
//! (what, where, cost, why, what the runtime must provide), then the sinks and the totals.

use super::escape;
use super::format::{Format, PlanWrite, Planned, Settings};
use super::plan_prose;
use super::witness;
use crate::plan::{Kind, Named, PointRef, Status};
use crate::simulate::verify::Verification;
use crate::vocabulary::plural;

fn point(plan: &Named, p: &PointRef) -> String {
    let gate = if p.gate.is_empty() {
        String::new()
    } else {
        format!("({})", p.gate.join(", "))
    };
    // The kind is a diagnostic code's name; said as words here.
    let kind = match p.kind {
        "unordered-write" => "an unordered write",
        "transient-write" => "a write of Inst",
        "unprotected-read" => "an unprotected read",
        other => other,
    };
    format!(
        "{} {} -> {} {}{gate} ({kind})",
        plan.component(p.component),
        plan.iface(p.input),
        plan.iface(p.output),
        p.annotation.as_str()
    )
}

/// A label, or what stands for the absence of one.
fn label(l: &Option<String>) -> &str {
    l.as_deref().unwrap_or("(no source reaches it)")
}

fn list<S: AsRef<str>>(items: &[S]) -> String {
    items
        .iter()
        .map(AsRef::as_ref)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The plan of one valid spec (`path` as the user wrote it).
pub fn render(path: &str, plan: Named) -> String {
    let mut s = String::new();
    let head = match plan.status {
        Status::Ok => "ok, nothing to coordinate".to_string(),
        Status::Repaired => format!(
            "repaired by {} (cost {})",
            plural(plan.mechanisms.len(), "mechanism", "mechanisms"),
            plan.cost
        ),
        Status::Unrepairable => "unrepairable".to_string(),
    };
    s.push_str(&format!("{path}: plan for `{}`: {head}\n", plan.name));
    for m in &plan.mechanisms {
        let what = match m.kind {
            Kind::AddSeal => match m.stream {
                Some(t) => format!(
                    "add `seal: [{}]` to the stream {} ({} punctuates it)",
                    list(&m.key),
                    plan.stream(t),
                    plan.stream_producer(t).unwrap_or("its producer")
                ),
                None => format!(
                    "add `seal: [{}]` to source `{}`",
                    list(&m.key),
                    m.source.map_or("?", |s| plan.source(s))
                ),
            },
            Kind::KeyedOrder | Kind::GlobalOrder => {
                let order = match m.kind {
                    Kind::KeyedOrder => format!("`order: [{}]`", list(&m.key)),
                    _ => "`order: global`".to_string(),
                };
                let at = match plan.task(m) {
                    Some(task) => format!(
                        "task `{task}` ({})",
                        list(&plan.component_names(&m.components))
                    ),
                    None => list(&plan.component_names(&m.components)),
                };
                match &m.replaces {
                    Some(old) => format!("replace `order: [{}]` with {order} on {at}", list(old)),
                    None => format!("add {order} to {at}"),
                }
            }
            Kind::SealBarrier => String::new(),
        };
        let mut fixes: Vec<String> = m.fixes.iter().map(|p| point(&plan, p)).collect();
        if !m.fixes_complete {
            fixes.push(format!(
                "and possibly more (its removal was followed through {})",
                plural(crate::plan::EXPLANATION_BUDGET, "component", "components")
            ));
        }
        let lets: String = m
            .punctuates
            .iter()
            .map(|&t| {
                format!(
                    "lets {} punctuate {}; ",
                    plan.stream_producer(t).unwrap_or("its producer"),
                    plan.stream(t)
                )
            })
            .collect();
        s.push_str(&format!(
            "  {:<13} {what} (cost {}): {lets}fixes {}; repairs {}; runtime: {}\n",
            m.kind.as_str(),
            m.cost,
            if fixes.is_empty() {
                "-".to_string()
            } else {
                fixes.join("; ")
            },
            if m.sinks.is_empty() {
                "-".to_string()
            } else {
                list(&plan.sink_names(&m.sinks))
            },
            plan_prose::runtime(&plan, m)
        ));
    }
    for b in &plan.barriers {
        s.push_str(&format!(
            "  {:<13} {}.{} {} (cost {}, {})\n",
            Kind::SealBarrier.as_str(),
            plan.component(b.component),
            plan.iface(b.input),
            plan_prose::barrier_buffers(&plan, b),
            b.cost,
            if b.added {
                "added by the plan"
            } else {
                "already in the spec"
            }
        ));
    }
    for r in &plan.reasons {
        s.push_str(&format!(
            "  unrepairable  sink `{}`: {}\n",
            plan.sink(r.sink),
            plan_prose::reason(&plan, r)
        ));
        for p in &r.points {
            s.push_str(&format!(
                "                remaining point of order: {}\n",
                point(&plan, p)
            ));
        }
    }
    let sinks: Vec<String> = plan
        .sinks
        .iter()
        .map(|k| {
            let name = plan.sink(k.sink);
            if k.before == k.after {
                format!("{name} {}", label(&k.after))
            } else {
                format!("{name} {} -> {}", label(&k.before), label(&k.after))
            }
        })
        .collect();
    if !sinks.is_empty() {
        s.push_str(&format!("  sinks: {}\n", sinks.join(", ")));
    }
    s.push_str(&format!(
        "  search: {}, {}, {}\n",
        plan.search.describe(),
        plural(plan.search.candidates, "candidate", "candidates"),
        plural(plan.search.evaluations, "analysis", "analyses"),
    ));
    s.push_str(&format!(
        "  total: cost {} for {}; {} for the runtime (cost {})\n",
        plan.cost,
        plural(plan.mechanisms.len(), "added mechanism", "added mechanisms"),
        plural(plan.barriers.len(), "seal barrier", "seal barriers"),
        plan.barrier_cost
    ));
    s
}

/// The plan's verification by execution, as the lines that follow the plan: `verified: ...`
/// with how many schedules ran, or a loud `NOT VERIFIED` with the witness.
pub fn render_verification(v: &Verification) -> String {
    if let Some(reason) = &v.skipped {
        return format!("  not verified by execution: {reason}\n");
    }
    let how = format!(
        "{}, {} per replicated component",
        witness::exploration(v.schedules, v.exhaustive, v.seed),
        plural(v.replicas, "instance", "instances")
    );
    let inconclusive = match v.inconclusive {
        0 => String::new(),
        n => format!(
            "; {} inconclusive (delivery budget exhausted)",
            plural(n, "execution", "executions")
        ),
    };
    let Some(f) = &v.failure else {
        return format!(
            "  verified: no sink observed worse than it tolerates in {how}{inconclusive}\n"
        );
    };
    let label = f.label.map_or("no label", |l| l.kind());
    let mut s = format!(
        "  NOT VERIFIED: sink `{}` (label {label} with the plan in force) was observed {} in {how}{inconclusive}, but it tolerates {}; the plan does not hold when executed, which is a bug in blazes (the analysis or the planner): please report it with this spec\n",
        f.sink,
        f.observed.as_str(),
        f.tolerate.as_str()
    );
    match &f.witness {
        Some(w) => s.push_str(&witness::side_by_side(w, &f.sink, "    ")),
        None => s.push_str("    (the simulator could not replay its evidence)\n"),
    }
    s
}

/// `--format human` of `blazes plan`: [`render`] for each valid spec, the human diagnostics
/// of `blazes check` (coloured as [`Settings::color`] says) for each invalid one.
pub const FORMAT: Format<PlanWrite> = Format {
    name: "human",
    help: None,
    chain_notes: false,
    write: write_format,
};

fn write_format(
    planned: &[Planned],
    s: &Settings,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let mut text = String::new();
    for p in planned {
        match p.named() {
            // The plan's text quotes the spec's names: escaped (the check's report escapes
            // its own, around the colours it adds).
            Some(plan) => {
                text.push_str(&escape::visible(&render(&p.report.path, plan)));
                if let Some(v) = p.simulation {
                    text.push_str(&escape::visible(&render_verification(v)));
                }
            }
            None => text.push_str(&super::human::render(
                std::slice::from_ref(p.report),
                super::human::Style {
                    color: s.color,
                    ..Default::default()
                },
            )),
        }
    }
    out.write_all(text.as_bytes())
}
