//! Deduplication of replicated outputs by high-water mark.
//!
//! Every replica of an upstream component emits the same outputs under the same
//! [`OutputId`]s (see [`smr`](super::smr)), in increasing id order. [`Dedup`] keeps, per upstream
//! component, the highest id it has passed on and drops every output at or below it: the copy
//! from another replica, or the re-emission of a replica replaying after recovery.
//!
//! Invariant, given that each replica's outputs reach the dedup in id order (a FIFO link per
//! replica; a crash may cut a suffix, never a middle) and that all replicas agree on the
//! outputs: the sequence passed on is each upstream's output sequence, every output exactly
//! once, as long as some replica eventually emits every output. State is one id per upstream.

use std::collections::BTreeMap;

use super::smr::{Output, OutputId};

/// Identifies an upstream replicated component (shared by all its replicas).
pub type UpstreamId = u64;

/// Drops outputs already passed on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Dedup {
    high_water: BTreeMap<UpstreamId, OutputId>,
}

impl Dedup {
    /// An empty dedup that has seen nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether `id` from `upstream` is new; if so it becomes the high-water mark.
    pub fn accept(&mut self, upstream: UpstreamId, id: OutputId) -> bool {
        match self.high_water.get(&upstream) {
            Some(hw) if id <= *hw => false,
            _ => {
                self.high_water.insert(upstream, id);
                true
            }
        }
    }

    /// Keeps the outputs of `batch` that are new, in order.
    pub fn filter(&mut self, upstream: UpstreamId, batch: Vec<Output>) -> Vec<Output> {
        batch
            .into_iter()
            .filter(|o| self.accept(upstream, o.id))
            .collect()
    }

    /// Highest id passed on for `upstream`.
    pub fn high_water(&self, upstream: UpstreamId) -> Option<OutputId> {
        self.high_water.get(&upstream).copied()
    }
}
