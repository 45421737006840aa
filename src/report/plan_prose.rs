//! The plan in sentences, written once for every plan format (human, JSON and YAML): what the
//! runtime must provide for each mechanism, one function per mechanism kind, and what a seal
//! barrier buffers. The plan holds the facts (kinds, ids, keys); the words are here.

use crate::plan::{Barrier, Named};

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
        (false, true) => (format!("each partition of `{}`", b.key.join(", ")), "sealed"),
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
