//! The plan in sentences, written once for every plan format (human, JSON and YAML): what the
//! runtime must provide for each mechanism, one function per mechanism kind
//! ([`seal_barrier`], [`add_seal`], [`keyed_order`], [`global_order`]; [`runtime`] picks one),
//! what a seal barrier buffers, and why a sink cannot be repaired ([`reason`]). The plan
//! holds the facts (kinds, ids, keys, counts); the words are here.

use crate::graph::{CompId, Order, SourceId};
use crate::plan::{Barrier, Choice, Mechanism, Named, Obstacle, Reason};

/// The one wording of a barrier: buffer each partition of its key until every producer
/// sealed it, or with the empty key (`seal: []`, a bounded stream) the whole stream until
/// every producer finished it. `located` names the component and its input.
fn barrier(plan: &Named, b: &Barrier, located: bool) -> String {
    let producers = plan.producer_names(&b.producers);
    let producers = if producers.is_empty() {
        "its producer".to_string()
    } else {
        producers.join(" and ")
    };
    let (what, done) = match (b.key.is_empty(), located) {
        (true, _) => ("the whole stream".to_string(), "finished"),
        (false, false) => (format!("each [{}] partition", b.key.join(", ")), "sealed"),
        (false, true) => (
            format!("each partition of `{}`", b.key.join(", ")),
            "sealed",
        ),
    };
    if located {
        format!(
            "{} buffers {what} on input `{}` until {producers} {done} it",
            plan.component(b.component),
            plan.iface(b.input)
        )
    } else {
        format!("buffers {what} until {producers} {done} it")
    }
}

/// What a seal barrier does, as the human report says it after `component.input`.
pub fn barrier_buffers(plan: &Named, b: &Barrier) -> String {
    barrier(plan, b, false)
}

/// What the runtime must provide for a seal barrier, in a sentence naming the component and
/// its input.
pub fn seal_barrier(plan: &Named, b: &Barrier) -> String {
    barrier(plan, b, true)
}

/// What the runtime must provide for an added mechanism, in a sentence: the function of its
/// kind.
///
/// ```
/// use blazes::check::{self, Outcome};
/// use blazes::{plan, report::plan_prose};
///
/// let spec = "
/// sources:
///   tweets: {}
/// components:
///   Count:
///     paths:
///       - { from: words, to: counts, label: OW, gate: [word] }
/// streams:
///   - { from: tweets, to: Count.words }
///   - { from: Count.counts, to: db }
/// sinks:
///   db: {}
/// ";
/// let report = check::check_bytes("count.yaml", spec.as_bytes(), &Default::default());
/// let Outcome::Analysed(a) = &report.outcome else { panic!("a valid spec") };
/// let p = plan::plan(&a.dataflow, &plan::Options::default());
/// let named = p.named(&a.dataflow);
/// assert_eq!(
///     plan_prose::runtime(&named, &named.mechanisms[0]),
///     "one durable order per (word) partition of Count's inputs \
///      (keyed sessions with leases, or a partitioned log)"
/// );
/// ```
pub fn runtime(plan: &Named, m: &Mechanism) -> String {
    match m.choice {
        Choice::AddSeal { source, .. } => add_seal(plan, source, &m.key, &m.components),
        Choice::Order {
            component,
            order: Order::Keys(_),
        } => keyed_order(plan, component, &m.key),
        Choice::Order {
            component,
            order: Order::Global,
        } => global_order(plan, component),
    }
}

/// An added seal: `source` punctuates every partition of `key` (or, with the empty key, marks
/// the end of its stream) and `consumers` buffer until it does.
pub fn add_seal(plan: &Named, source: SourceId, key: &[String], consumers: &[CompId]) -> String {
    let consumers_buffer = format!(
        "{} buffer{}",
        plan.component_names(consumers).join(", "),
        if consumers.len() == 1 { "s" } else { "" }
    );
    if key.is_empty() {
        format!(
            "source `{}` marks the end of its stream; {consumers_buffer} the whole stream until it has ended (a seal barrier)",
            plan.source(source)
        )
    } else {
        format!(
            "source `{}` punctuates every `{}` partition; {consumers_buffer} each partition until it is sealed (a seal barrier)",
            plan.source(source),
            key.join(", ")
        )
    }
}

/// A keyed order: one durable order per partition of `key` of the component's inputs.
pub fn keyed_order(plan: &Named, component: CompId, key: &[String]) -> String {
    format!(
        "one durable order per ({}) partition of {}'s inputs (keyed sessions with leases, or a partitioned log)",
        key.join(", "),
        plan.component(component)
    )
}

/// A global order: one durable total order of every stream into the component.
pub fn global_order(plan: &Named, component: CompId) -> String {
    let n = plan.producer_streams(component);
    format!(
        "one durable total order of the {} into {} (a sequencer or replicated log)",
        if n == 1 {
            "producer stream".to_string()
        } else {
            format!("{n} producer streams")
        },
        plan.component(component)
    )
}

/// Why a sink cannot be repaired, in a sentence (with what `--allow` left out, and the gate
/// `*` that only a global order fixes when global orders are left out).
pub fn reason(plan: &Named, r: &Reason) -> String {
    let sink = plan.sink(r.sink);
    let mut message = match r.obstacle {
        Obstacle::NoCandidate => {
            format!("no allowed mechanism applies to the points of order behind `{sink}`")
        }
        Obstacle::Conflicts => format!(
            "no combination of candidates repairs `{sink}`: it would need two seals of one source or two keyed orders of one component at once, and a keyed order by the keys they share would be no keyed order at all"
        ),
        Obstacle::Bound => format!(
            "with every candidate mechanism applied, `{sink}` still receives {}, worse than it tolerates ({})",
            r.label,
            r.tolerate.as_str()
        ),
    };
    if !r.disallowed.is_empty() {
        let kinds: Vec<&str> = r.disallowed.iter().map(|k| k.as_str()).collect();
        message.push_str(&format!("; not allowed by --allow: {}", kinds.join(", ")));
    }
    if r.star_needs_global {
        message.push_str("; a gate `*` can only be fixed by a global order");
    }
    message
}
