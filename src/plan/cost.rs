//! The cost model: what each mechanism the plan may add costs, in abstract units. The search
//! minimises the sum; [`super::EXPLAIN`] states the same model for users.
//!
//! Must not know: the search, or how candidates are found; only what a choice costs.

use crate::graph::{CompId, Dataflow, Order};
use crate::label::Keys;

use super::model::Choice;

/// The cost of `choice` on `df`, whose key sets are interned in `keys` (the planner moves the
/// key table out of the dataflow while it interns the candidates' intersections).
/// `consumers` is, for an add-seal, the number of components where the seal is consumed by a
/// seal barrier; it is ignored for orders.
pub fn cost(df: &Dataflow, keys: &Keys, choice: Choice, consumers: usize) -> u32 {
    match choice {
        Choice::AddSeal { .. } => 2 + consumers as u32,
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

/// Streams feeding a component; an input with none is fed by one implicit source.
pub fn producers_of(df: &Dataflow, c: CompId) -> usize {
    df.component(c)
        .inputs
        .iter()
        .map(|&i| df.iface(i).streams.len().max(1))
        .sum()
}
