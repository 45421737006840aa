//! [`DurableBarrier`]: a [`SealBarrier`] whose messages and acknowledgements are journaled.
//!
//! Journal records are JSON: an accepted [`BarrierOp`], or a snapshot (the core's state and the
//! releases not yet acknowledged). Invariants:
//! - a message is journaled *and synced* before its caller is answered and before a release it
//!   completed leaves the barrier, so the release is durable (as the message that decides it)
//!   before the batch is handed on, and an acknowledged message is never lost;
//! - replaying the journal from its first record through the same deterministic core reaches
//!   the same state, so a crash changes when a partition is released, never whether or with
//!   what; a release not acknowledged before the crash is handed out again, identical;
//! - a snapshot is appended and synced before the records it replaces are trimmed, and it
//!   carries the unacknowledged releases themselves (their records are about to leave the
//!   journal), so a crash at any point of a compaction recovers the same state.

use std::collections::BTreeMap;
use std::fmt::Debug;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::{BarrierError, BarrierOp, CoreImage, Release, SealBarrier};
use crate::log::{Log, LogError};
use crate::sequencer::ProducerId;

/// Errors of a [`DurableBarrier`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DurableBarrierError {
    /// The barrier refused the message; nothing was journaled.
    #[error(transparent)]
    Barrier(#[from] BarrierError),
    /// The journal failed. The message was accepted in memory but may not be durable, so the
    /// barrier refuses everything until reopened (the journal then decides).
    #[error(transparent)]
    Log(#[from] LogError),
    /// A journal record does not decode.
    #[error("barrier journal record at offset {offset} is malformed: {reason}")]
    Malformed {
        /// Offset of the record.
        offset: u64,
        /// Decoder message.
        reason: String,
    },
    /// An earlier journal failure left memory ahead of the journal.
    #[error("barrier is unusable after a journal failure; reopen it")]
    Poisoned,
}

/// One journal record.
#[derive(Serialize, Deserialize)]
enum Entry<P, R> {
    Op(BarrierOp<P, R>),
    Snapshot {
        core: CoreImage<P, R>,
        /// Releases decided and not yet acknowledged, with their records.
        undelivered: Vec<(P, Vec<R>)>,
    },
}

/// Journal records appended after the last snapshot before [`DurableBarrier`] writes a new
/// one, unless [`DurableBarrier::compact_every`] says otherwise.
pub const COMPACT_EVERY: u64 = 4096;

/// A [`SealBarrier`] whose accepted messages and delivered releases are journaled in a [`Log`].
#[derive(Debug)]
pub struct DurableBarrier<P: Ord, R, L> {
    core: SealBarrier<P, R>,
    journal: L,
    /// Releases decided but not yet acknowledged with [`DurableBarrier::delivered`].
    undelivered: BTreeMap<P, Release<P, R>>,
    /// Offset of the last snapshot (or of the journal's first record).
    snapshot_at: u64,
    compact_every: u64,
    poisoned: bool,
}

fn decode<P, R>(offset: u64, bytes: &[u8]) -> Result<Entry<P, R>, DurableBarrierError>
where
    P: DeserializeOwned,
    R: DeserializeOwned,
{
    serde_json::from_slice(bytes).map_err(|e| DurableBarrierError::Malformed {
        offset,
        reason: e.to_string(),
    })
}

impl<P, R, L> DurableBarrier<P, R, L>
where
    P: Ord + Clone + Debug + Serialize + DeserializeOwned,
    R: Clone + PartialEq + Serialize + DeserializeOwned,
    L: Log,
{
    /// Opens a barrier on `journal`, replaying it into `empty` (a fresh [`SealBarrier`] with the
    /// configuration the journal was written with). Returns the barrier and the releases that
    /// were decided before a crash but not acknowledged as delivered, in partition order.
    pub fn open(
        empty: SealBarrier<P, R>,
        mut journal: L,
    ) -> Result<(Self, Vec<Release<P, R>>), DurableBarrierError> {
        if journal.durable_end() < journal.end() {
            journal.sync()?;
        }
        let mut core = empty.clone();
        let mut decided: BTreeMap<P, Release<P, R>> = BTreeMap::new();
        let mut snapshot_at = journal.first();
        let mut offset = journal.first();
        loop {
            let batch = journal.read_durable(offset, 1024)?;
            let Some(last) = batch.last() else { break };
            offset = last.offset + 1;
            for rec in batch {
                match decode::<P, R>(rec.offset, &rec.payload)? {
                    Entry::Snapshot {
                        core: image,
                        undelivered,
                    } => {
                        core = empty.clone().restore(image);
                        decided = undelivered
                            .into_iter()
                            .map(|(partition, records)| {
                                let release = Release {
                                    partition: partition.clone(),
                                    records,
                                };
                                (partition, release)
                            })
                            .collect();
                        snapshot_at = rec.offset;
                    }
                    Entry::Op(BarrierOp::Delivered(p)) => {
                        decided.remove(&p);
                    }
                    // The core is deterministic: replaying what it accepted, in order, accepts
                    // it again and completes the same partitions with the same records.
                    Entry::Op(op) => {
                        if let Ok(Some(release)) = core.apply(op) {
                            decided.insert(release.partition.clone(), release);
                        }
                    }
                }
            }
        }
        let releases = decided.values().cloned().collect();
        let barrier = DurableBarrier {
            core,
            journal,
            undelivered: decided,
            snapshot_at,
            compact_every: COMPACT_EVERY,
            poisoned: false,
        };
        Ok((barrier, releases))
    }

    /// Sets how many journal records may follow the last snapshot before the next compaction
    /// (at least 1). The journal then holds one snapshot plus at most this many records, plus
    /// what the [`Log`] keeps of trimmed records (whole segments for a [`FileLog`]).
    ///
    /// [`FileLog`]: crate::log::FileLog
    pub fn compact_every(&mut self, records: u64) {
        self.compact_every = records.max(1);
    }

    fn usable(&self) -> Result<(), DurableBarrierError> {
        if self.poisoned {
            Err(DurableBarrierError::Poisoned)
        } else {
            Ok(())
        }
    }

    fn encode(&self, entry: &Entry<P, R>) -> Result<Vec<u8>, DurableBarrierError> {
        serde_json::to_vec(entry).map_err(|e| DurableBarrierError::Malformed {
            offset: self.journal.end(),
            reason: e.to_string(),
        })
    }

    /// Appends and syncs `entries`; a failure poisons the barrier (memory is ahead of a
    /// journal whose contents are unknown until reopened).
    fn write(&mut self, entries: &[Vec<u8>]) -> Result<u64, DurableBarrierError> {
        let refs: Vec<&[u8]> = entries.iter().map(Vec::as_slice).collect();
        match self
            .journal
            .append(&refs)
            .and_then(|offsets| self.journal.sync().map(|()| offsets))
        {
            Ok(offsets) => Ok(offsets.first().copied().unwrap_or(self.journal.end())),
            Err(e) => {
                self.poisoned = true;
                Err(e.into())
            }
        }
    }

    /// Applies `ops` in order and returns each one's outcome once every accepted one is
    /// journaled and synced (one append and one sync for the whole batch: a group commit).
    /// A refused op is not journaled and does not stop the others; a journal failure fails the
    /// whole batch and poisons the barrier. Releases in the outcomes are durable.
    #[allow(clippy::type_complexity)]
    pub fn apply_batch(
        &mut self,
        ops: &[BarrierOp<P, R>],
    ) -> Result<Vec<Result<Option<Release<P, R>>, BarrierError>>, DurableBarrierError> {
        self.usable()?;
        let mut entries = Vec::new();
        let mut outcomes = Vec::with_capacity(ops.len());
        for op in ops {
            let outcome = match op {
                BarrierOp::Delivered(p) => {
                    if self.undelivered.remove(p).is_none() {
                        outcomes.push(Ok(None));
                        continue;
                    }
                    Ok(None)
                }
                _ => self.core.apply(op.clone()),
            };
            if let Ok(release) = &outcome {
                entries.push(self.encode(&Entry::Op(op.clone()))?);
                if let Some(r) = release {
                    self.undelivered.insert(r.partition.clone(), r.clone());
                }
            }
            outcomes.push(outcome);
        }
        if !entries.is_empty() {
            self.write(&entries)?;
            if self.journal.end() - self.snapshot_at > self.compact_every {
                self.compact()?;
            }
        }
        Ok(outcomes)
    }

    fn apply_one(
        &mut self,
        op: BarrierOp<P, R>,
    ) -> Result<Option<Release<P, R>>, DurableBarrierError> {
        let mut outcomes = self.apply_batch(std::slice::from_ref(&op))?;
        Ok(outcomes.pop().expect("one outcome per op")?)
    }

    /// Writes a snapshot (the core's state and the unacknowledged releases) and trims the
    /// journal before it. Runs by itself every [`DurableBarrier::compact_every`] records.
    pub fn compact(&mut self) -> Result<(), DurableBarrierError> {
        self.usable()?;
        let entry = Entry::Snapshot {
            core: self.core.image(),
            undelivered: self
                .undelivered
                .values()
                .map(|r| (r.partition.clone(), r.records.clone()))
                .collect(),
        };
        let bytes = self.encode(&entry)?;
        let at = self.write(&[bytes])?;
        self.snapshot_at = at;
        // The snapshot is durable: what precedes it may go. A failed trim leaves more records
        // than needed, which replay handles (the snapshot resets the state).
        self.journal.trim(at)?;
        Ok(())
    }

    /// [`SealBarrier::offer_record`], durable on return.
    pub fn offer_record(
        &mut self,
        producer: ProducerId,
        partition: P,
        index: u64,
        record: R,
    ) -> Result<Option<Release<P, R>>, DurableBarrierError> {
        self.apply_one(BarrierOp::Record {
            producer,
            partition,
            index,
            record,
        })
    }

    /// [`SealBarrier::offer_seal`], durable on return.
    pub fn offer_seal(
        &mut self,
        producer: ProducerId,
        partition: P,
        count: u64,
    ) -> Result<Option<Release<P, R>>, DurableBarrierError> {
        self.apply_one(BarrierOp::Seal {
            producer,
            partition,
            count,
        })
    }

    /// [`SealBarrier::set_producers`], durable on return.
    pub fn set_producers(
        &mut self,
        partition: P,
        producers: impl IntoIterator<Item = ProducerId>,
    ) -> Result<Option<Release<P, R>>, DurableBarrierError> {
        self.apply_one(BarrierOp::Producers {
            partition,
            producers: producers.into_iter().collect(),
        })
    }

    /// [`SealBarrier::forget_released_below`], durable on return.
    pub fn forget_released_below(&mut self, floor: P) -> Result<(), DurableBarrierError> {
        self.apply_one(BarrierOp::ForgetBelow(floor)).map(|_| ())
    }

    /// Acknowledges that the consumer has durably dealt with `partition`'s release: it will not
    /// be handed out again after a crash.
    pub fn delivered(&mut self, partition: P) -> Result<(), DurableBarrierError> {
        self.apply_one(BarrierOp::Delivered(partition)).map(|_| ())
    }

    /// The in-memory barrier (for `buffered`, `missing`, `is_released`, ...).
    pub fn barrier(&self) -> &SealBarrier<P, R> {
        &self.core
    }

    /// The journal (e.g. to measure it).
    pub fn journal(&self) -> &L {
        &self.journal
    }

    /// Gives the journal back (e.g. to reopen after a simulated crash).
    pub fn into_journal(self) -> L {
        self.journal
    }
}
