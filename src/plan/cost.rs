//! The cost model: what each mechanism the plan may add costs, in abstract units. The search
//! minimises the sum; [`super::EXPLAIN`] states the same model for users.
//!
//! Must not know: the search, or how candidates are found; only what a choice costs.

use crate::graph::{CompId, Dataflow, Order, Producer};
use crate::label::Keys;

use super::model::Choice;

/// The cost of `choice` on `df`, whose key sets are interned in `keys` (the planner moves the
/// key table out of the dataflow while it interns the candidates' intersections).
/// `consumers` is, for an add-seal, the number of components where the seal is consumed by a
/// seal barrier; it is ignored for orders. A seal of an internal stream costs what a seal of
/// a source does: the producer punctuates instead of the source.
pub fn cost(df: &Dataflow, keys: &Keys, choice: Choice, consumers: usize) -> u32 {
    match choice {
        Choice::AddSeal { .. } | Choice::SealStream { .. } => 2 + consumers as u32,
        Choice::Order {
            order: Order::Keys(k),
            ..
        } => 4 + 6 / keys.attrs(k).len().max(1) as u32,
        Choice::Order {
            component,
            order: Order::Global,
        } => 12 + 2 * producers_of(df, component) as u32,
    }
}

/// Streams feeding a component, or, when its order covers a task, every member of the task
/// together (the streams between two members are the task's own, not producers); an input
/// with none is fed by one implicit source.
pub fn producers_of(df: &Dataflow, c: CompId) -> usize {
    let task = df
        .component(c)
        .task
        .filter(|_| df.order_group(c).nth(1).is_some());
    let group: &[CompId] = match task {
        Some(t) => &df.tasks[t as usize].members,
        None => std::slice::from_ref(&c),
    };
    group
        .iter()
        .flat_map(|&m| &df.component(m).inputs)
        .map(|&i| {
            let streams = &df.iface(i).streams;
            let outside = streams
                .iter()
                .filter(|s| match df.streams[s.index()].from {
                    Producer::Output(o) => {
                        task.is_none() || df.component(df.iface(o).component).task != task
                    }
                    Producer::Source(_) => true,
                })
                .count();
            if streams.is_empty() { 1 } else { outside }
        })
        .sum::<usize>()
        .max(1)
}
