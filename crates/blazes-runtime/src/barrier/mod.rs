//! Seal barrier: release a partition of a sealed stream once it is complete.
//!
//! Producers send records tagged with a partition value of the seal key, each with its index
//! among that producer's records for the partition, and per partition one seal announcing how
//! many records the producer sent. The barrier buffers records per partition and releases a
//! partition exactly once, as one batch, when every producer in the partition's producer set has
//! sealed it and every announced record has arrived. Seals may arrive before their data.
//!
//! Invariants:
//! - completeness is a monotone aggregate: each producer's set of sealed partitions and the set
//!   of arrived records only grow, so a partition, once complete, stays complete; the order in
//!   which messages arrive never changes what is released, only when;
//! - a released batch is ordered by (producer, index), so its contents *and* order are identical
//!   across schedules, which is what lets an order-sensitive consumer sit behind the barrier;
//! - a partition is released at most once, with the records of the producers in its set only
//!   (a producer removed by [`SealBarrier::set_producers`] takes its buffered records and its
//!   seal with it);
//! - after the release, a retransmission of a record or seal that was part of it (index below
//!   the count its producer sealed, same seal count) is absorbed like any retransmission, while
//!   a record that was *not* part of it is [`BarrierError::Late`]: the two are told apart
//!   because the barrier keeps each released partition's seal counts;
//! - at most `max_buffered` records are held, and the bound cannot deadlock: records of
//!   partitions other than the *head* (the pending partition that started first) may fill only
//!   half of it (rounded down), so the head always has room for half of it rounded up, and a
//!   partition of at most that many records always completes once its records and seals
//!   arrive, whatever the other partitions hold. Beyond the bound
//!   [`BarrierError::Full`] pushes back on the caller without accepting the record;
//! - [`SealBarrier::missing`] names the producers a pending partition waits for, so a caller
//!   with a clock (the service) can report a producer that stopped sealing instead of stalling
//!   silently.
//!
//! A partition whose producer set has one member is an "independent seal": that producer's seal
//! alone completes it, with no agreement among producers.
//!
//! [`DurableBarrier`] adds crash safety: every accepted message ([`BarrierOp`]) is journaled in
//! a [`Log`](super::log::Log) and synced before its caller hears back or the release it
//! completed is handed on, and so is each acknowledgement of a delivered release. Reopening
//! replays the journal through the same deterministic core, which reaches the same state and
//! therefore decides the same releases with the same contents: a partition is released once,
//! across crashes. A release that was decided but not acknowledged as delivered before the
//! crash is handed out again by [`DurableBarrier::open`] (identical, so a consumer that keys its
//! effect by partition applies it once); an acknowledged one never is. The journal is compacted:
//! a snapshot record (the core's state and the unacknowledged releases) replaces everything
//! before it, so released partitions' records leave the journal, and
//! [`SealBarrier::forget_released_below`] bounds what is remembered of released partitions.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;

use serde::{Deserialize, Serialize};

use super::sequencer::ProducerId;

mod durable;

#[cfg(feature = "tokio")]
pub(crate) use durable::COMPACT_EVERY;
pub use durable::{DurableBarrier, DurableBarrierError};

/// Errors of the seal barrier.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BarrierError {
    /// The partition was already released and the message was not part of the release.
    #[error(
        "partition {partition} was already released without this message from producer {producer}; it came too late"
    )]
    Late {
        /// Partition (debug-formatted).
        partition: String,
        /// Sender.
        producer: ProducerId,
    },
    /// A record's index is at or beyond the count its producer announced in the seal.
    #[error(
        "producer {producer} announced {announced} records for partition {partition} but sent record index {index}"
    )]
    Overflow {
        /// Partition (debug-formatted).
        partition: String,
        /// Sender.
        producer: ProducerId,
        /// Count in the seal.
        announced: u64,
        /// Offending index.
        index: u64,
    },
    /// Two seals from one producer for one partition disagree on the count.
    #[error(
        "producer {producer} sealed partition {partition} with {first} records and then with {second}"
    )]
    SealConflict {
        /// Partition (debug-formatted).
        partition: String,
        /// Sender.
        producer: ProducerId,
        /// Count first announced.
        first: u64,
        /// Count announced later.
        second: u64,
    },
    /// Two different records claim the same index.
    #[error(
        "producer {producer} sent two different records with index {index} for partition {partition}"
    )]
    RecordConflict {
        /// Partition (debug-formatted).
        partition: String,
        /// Sender.
        producer: ProducerId,
        /// Index claimed twice.
        index: u64,
    },
    /// The sender is not in the partition's producer set.
    #[error("producer {producer} is not a producer of partition {partition}")]
    UnknownProducer {
        /// Partition (debug-formatted).
        partition: String,
        /// Sender.
        producer: ProducerId,
    },
    /// The buffer is at its limit; retry after some partition has been released.
    #[error("seal barrier buffer is full ({limit} records); retry later")]
    Full {
        /// Configured limit.
        limit: usize,
    },
    /// A membership change for a partition that has already been released.
    #[error("producer set of partition {partition} cannot change after its release")]
    ViewAfterRelease {
        /// Partition (debug-formatted).
        partition: String,
    },
}

/// One message to a barrier, in the form [`DurableBarrier`] journals it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum BarrierOp<P, R> {
    /// [`SealBarrier::offer_record`].
    Record {
        /// Sender.
        producer: ProducerId,
        /// Partition value of the seal key.
        partition: P,
        /// The record's index among the producer's records for the partition.
        index: u64,
        /// The record.
        record: R,
    },
    /// [`SealBarrier::offer_seal`].
    Seal {
        /// Sender.
        producer: ProducerId,
        /// Partition value of the seal key.
        partition: P,
        /// Records the producer sent for the partition.
        count: u64,
    },
    /// [`SealBarrier::set_producers`].
    Producers {
        /// Partition value of the seal key.
        partition: P,
        /// Its producer set.
        producers: Vec<ProducerId>,
    },
    /// [`SealBarrier::forget_released_below`].
    ForgetBelow(P),
    /// [`DurableBarrier::delivered`]: the consumer has dealt with the partition's release.
    Delivered(P),
}

impl<P, R> BarrierOp<P, R> {
    /// The partition the message is about.
    pub fn partition(&self) -> &P {
        match self {
            BarrierOp::Record { partition, .. }
            | BarrierOp::Seal { partition, .. }
            | BarrierOp::Producers { partition, .. }
            | BarrierOp::ForgetBelow(partition)
            | BarrierOp::Delivered(partition) => partition,
        }
    }
}

/// A complete partition, released once.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Release<P, R> {
    /// Partition value of the seal key.
    pub partition: P,
    /// Every record of the partition, ordered by (producer, index).
    pub records: Vec<R>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Pending<R> {
    records: BTreeMap<(ProducerId, u64), R>,
    seals: BTreeMap<ProducerId, u64>,
    /// Arrival rank of the partition's first message: the smallest pending one is the head.
    started: u64,
}

/// Buffers records per partition until every producer has sealed the partition.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SealBarrier<P: Ord, R> {
    default_producers: BTreeSet<ProducerId>,
    view: BTreeMap<P, BTreeSet<ProducerId>>,
    max_buffered: usize,
    buffered: usize,
    pending: BTreeMap<P, Pending<R>>,
    /// Released partitions with the seal counts they were released with.
    released: BTreeMap<P, BTreeMap<ProducerId, u64>>,
    /// Partitions below it that are not pending count as released and forgotten.
    floor: Option<P>,
    /// Arrival rank for the next partition that starts.
    next_start: u64,
}

/// A pending partition in a snapshot: its records, its seals and its arrival rank.
type PendingImage<P, R> = (P, Vec<(ProducerId, u64, R)>, Vec<(ProducerId, u64)>, u64);

/// The state of a [`SealBarrier`] apart from its configuration, as a journal snapshot holds it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct CoreImage<P, R> {
    view: Vec<(P, Vec<ProducerId>)>,
    pending: Vec<PendingImage<P, R>>,
    released: Vec<(P, Vec<(ProducerId, u64)>)>,
    floor: Option<P>,
    next_start: u64,
}

impl<P: Ord + Clone + Debug, R: Clone + PartialEq> SealBarrier<P, R> {
    /// A barrier where every partition is produced by `producers`, holding at most
    /// `max_buffered` records. Any partition of at most `max_buffered / 2` records (rounded up)
    /// completes whatever the other partitions hold (see the module documentation).
    pub fn new(producers: impl IntoIterator<Item = ProducerId>, max_buffered: usize) -> Self {
        SealBarrier {
            default_producers: producers.into_iter().collect(),
            view: BTreeMap::new(),
            max_buffered,
            buffered: 0,
            pending: BTreeMap::new(),
            released: BTreeMap::new(),
            floor: None,
            next_start: 0,
        }
    }

    /// Applies one message ([`BarrierOp::Delivered`] concerns the consumer, not the barrier:
    /// it is accepted and changes nothing here).
    pub fn apply(&mut self, op: BarrierOp<P, R>) -> Result<Option<Release<P, R>>, BarrierError> {
        match op {
            BarrierOp::Record {
                producer,
                partition,
                index,
                record,
            } => self.offer_record(producer, partition, index, record),
            BarrierOp::Seal {
                producer,
                partition,
                count,
            } => self.offer_seal(producer, partition, count),
            BarrierOp::Producers {
                partition,
                producers,
            } => self.set_producers(partition, producers),
            BarrierOp::ForgetBelow(floor) => {
                self.forget_released_below(floor);
                Ok(None)
            }
            BarrierOp::Delivered(_) => Ok(None),
        }
    }

    /// Forgets the released partitions below `floor` (for seal keys that only grow, such as time
    /// windows: once no message for them is expected). A message for a partition below the
    /// floor that is not pending is [`BarrierError::Late`] from then on, retransmission or
    /// not, since what was released there is no longer known; pending partitions below it
    /// complete as usual. The floor never moves down.
    pub fn forget_released_below(&mut self, floor: P) {
        if self.floor.as_ref().is_some_and(|f| *f >= floor) {
            return;
        }
        self.released = self.released.split_off(&floor);
        self.floor = Some(floor);
    }

    /// Whether messages for `partition` come after its release was forgotten.
    fn forgotten(&self, partition: &P) -> bool {
        self.floor.as_ref().is_some_and(|f| partition < f) && !self.pending.contains_key(partition)
    }

    /// The state to journal in a snapshot.
    pub(crate) fn image(&self) -> CoreImage<P, R> {
        CoreImage {
            view: self
                .view
                .iter()
                .map(|(p, set)| (p.clone(), set.iter().copied().collect()))
                .collect(),
            pending: self
                .pending
                .iter()
                .map(|(p, pend)| {
                    (
                        p.clone(),
                        pend.records
                            .iter()
                            .map(|(&(prod, i), r)| (prod, i, r.clone()))
                            .collect(),
                        pend.seals.iter().map(|(&prod, &n)| (prod, n)).collect(),
                        pend.started,
                    )
                })
                .collect(),
            released: self
                .released
                .iter()
                .map(|(p, seals)| (p.clone(), seals.iter().map(|(&a, &b)| (a, b)).collect()))
                .collect(),
            floor: self.floor.clone(),
            next_start: self.next_start,
        }
    }

    /// This (empty, configured) barrier with the state of `image`.
    pub(crate) fn restore(mut self, image: CoreImage<P, R>) -> Self {
        self.view = image
            .view
            .into_iter()
            .map(|(p, set)| (p, set.into_iter().collect()))
            .collect();
        self.pending = image
            .pending
            .into_iter()
            .map(|(p, records, seals, started)| {
                let records: BTreeMap<(ProducerId, u64), R> = records
                    .into_iter()
                    .map(|(prod, i, r)| ((prod, i), r))
                    .collect();
                let seals = seals.into_iter().collect();
                (
                    p,
                    Pending {
                        records,
                        seals,
                        started,
                    },
                )
            })
            .collect();
        self.buffered = self.pending.values().map(|p| p.records.len()).sum();
        self.released = image
            .released
            .into_iter()
            .map(|(p, seals)| (p, seals.into_iter().collect()))
            .collect();
        self.floor = image.floor;
        self.next_start = image.next_start;
        self
    }

    /// Sets the producer set of one partition from a membership view. It must be set before the
    /// partition can complete (a partition released under a smaller set cannot be recalled).
    /// Buffered records and seals of producers outside the new set are dropped: the release
    /// contains exactly the records of the producers in the set.
    pub fn set_producers(
        &mut self,
        partition: P,
        producers: impl IntoIterator<Item = ProducerId>,
    ) -> Result<Option<Release<P, R>>, BarrierError> {
        if self.released.contains_key(&partition) || self.forgotten(&partition) {
            return Err(BarrierError::ViewAfterRelease {
                partition: format!("{partition:?}"),
            });
        }
        let set: BTreeSet<ProducerId> = producers.into_iter().collect();
        if let Some(pending) = self.pending.get_mut(&partition) {
            let before = pending.records.len();
            pending.records.retain(|(prod, _), _| set.contains(prod));
            pending.seals.retain(|prod, _| set.contains(prod));
            self.buffered -= before - pending.records.len();
        }
        self.view.insert(partition.clone(), set);
        Ok(self.try_release(&partition))
    }

    fn pending_entry(&mut self, partition: &P) -> &mut Pending<R> {
        if !self.pending.contains_key(partition) {
            let started = self.next_start;
            self.next_start += 1;
            self.pending.insert(
                partition.clone(),
                Pending {
                    records: BTreeMap::new(),
                    seals: BTreeMap::new(),
                    started,
                },
            );
        }
        self.pending.get_mut(partition).expect("inserted above")
    }

    /// The pending partition that started first: the one the buffer keeps room for.
    fn head(&self) -> Option<&P> {
        self.pending
            .iter()
            .min_by_key(|(_, p)| p.started)
            .map(|(k, _)| k)
    }

    /// Whether one more record of `partition` fits: anywhere below the limit for the head,
    /// within half of it for every other partition.
    fn has_room(&self, partition: &P) -> bool {
        let head = self.head();
        if self.buffered >= self.max_buffered {
            return false;
        }
        if head.is_none_or(|h| h == partition) {
            return true;
        }
        let head_records = head
            .and_then(|h| self.pending.get(h))
            .map_or(0, |p| p.records.len());
        self.buffered - head_records < self.max_buffered / 2
    }

    fn producers(&self, partition: &P) -> &BTreeSet<ProducerId> {
        self.view.get(partition).unwrap_or(&self.default_producers)
    }

    fn admit(&self, producer: ProducerId, partition: &P) -> Result<(), BarrierError> {
        if !self.producers(partition).contains(&producer) {
            return Err(BarrierError::UnknownProducer {
                partition: format!("{partition:?}"),
                producer,
            });
        }
        Ok(())
    }

    /// Offers record number `index` of `producer` for `partition`. Returns the partition's
    /// release if this record completed it.
    pub fn offer_record(
        &mut self,
        producer: ProducerId,
        partition: P,
        index: u64,
        record: R,
    ) -> Result<Option<Release<P, R>>, BarrierError> {
        if let Some(seals) = self.released.get(&partition) {
            return match seals.get(&producer) {
                Some(&count) if index < count => Ok(None),
                _ => Err(BarrierError::Late {
                    partition: format!("{partition:?}"),
                    producer,
                }),
            };
        }
        if self.forgotten(&partition) {
            return Err(BarrierError::Late {
                partition: format!("{partition:?}"),
                producer,
            });
        }
        self.admit(producer, &partition)?;
        let pending = self.pending.get(&partition);
        if let Some(&announced) = pending.and_then(|p| p.seals.get(&producer))
            && index >= announced
        {
            return Err(BarrierError::Overflow {
                partition: format!("{partition:?}"),
                producer,
                announced,
                index,
            });
        }
        if let Some(existing) = pending.and_then(|p| p.records.get(&(producer, index))) {
            return if *existing == record {
                Ok(None)
            } else {
                Err(BarrierError::RecordConflict {
                    partition: format!("{partition:?}"),
                    producer,
                    index,
                })
            };
        }
        if !self.has_room(&partition) {
            return Err(BarrierError::Full {
                limit: self.max_buffered,
            });
        }
        self.buffered += 1;
        self.pending_entry(&partition)
            .records
            .insert((producer, index), record);
        Ok(self.try_release(&partition))
    }

    /// Offers `producer`'s seal of `partition`, announcing `count` records. Returns the
    /// partition's release if this seal completed it.
    pub fn offer_seal(
        &mut self,
        producer: ProducerId,
        partition: P,
        count: u64,
    ) -> Result<Option<Release<P, R>>, BarrierError> {
        if let Some(seals) = self.released.get(&partition) {
            return match seals.get(&producer) {
                Some(&first) if first == count => Ok(None),
                _ => Err(BarrierError::Late {
                    partition: format!("{partition:?}"),
                    producer,
                }),
            };
        }
        if self.forgotten(&partition) {
            return Err(BarrierError::Late {
                partition: format!("{partition:?}"),
                producer,
            });
        }
        self.admit(producer, &partition)?;
        let pending = self.pending_entry(&partition);
        match pending.seals.get(&producer) {
            Some(&first) if first != count => {
                return Err(BarrierError::SealConflict {
                    partition: format!("{partition:?}"),
                    producer,
                    first,
                    second: count,
                });
            }
            Some(_) => return Ok(None),
            None => {}
        }
        if let Some(&(_, index)) = pending
            .records
            .range((producer, count)..=(producer, u64::MAX))
            .next()
            .map(|(k, _)| k)
        {
            return Err(BarrierError::Overflow {
                partition: format!("{partition:?}"),
                producer,
                announced: count,
                index,
            });
        }
        pending.seals.insert(producer, count);
        Ok(self.try_release(&partition))
    }

    fn try_release(&mut self, partition: &P) -> Option<Release<P, R>> {
        let producers = self.producers(partition);
        let pending = self.pending.get(partition)?;
        let complete = producers.iter().all(|prod| {
            pending.seals.get(prod).is_some_and(|&count| {
                pending.records.range((*prod, 0)..(*prod, count)).count() as u64 == count
            })
        });
        if !complete {
            return None;
        }
        let pending = self.pending.remove(partition)?;
        self.buffered -= pending.records.len();
        // The set cannot change after the release (`ViewAfterRelease`): it need not be kept.
        self.view.remove(partition);
        self.released.insert(partition.clone(), pending.seals);
        Some(Release {
            partition: partition.clone(),
            records: pending.records.into_values().collect(),
        })
    }

    /// Records currently buffered.
    pub fn buffered(&self) -> usize {
        self.buffered
    }

    /// Whether `partition` has been released.
    pub fn is_released(&self, partition: &P) -> bool {
        self.released.contains_key(partition)
    }

    /// The producers a pending partition still waits for (no seal yet, or records missing
    /// below the count they sealed), in id order; empty for a partition that is not pending.
    pub fn missing(&self, partition: &P) -> Vec<ProducerId> {
        let Some(pending) = self.pending.get(partition) else {
            return Vec::new();
        };
        self.producers(partition)
            .iter()
            .copied()
            .filter(|prod| {
                pending.seals.get(prod).is_none_or(|&count| {
                    (pending.records.range((*prod, 0)..(*prod, count)).count() as u64) < count
                })
            })
            .collect()
    }

    /// Partitions with buffered records or seals that are not yet complete, in order.
    pub fn pending_partitions(&self) -> Vec<P> {
        self.pending.keys().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seal_before_data_and_single_producer() {
        let mut b: SealBarrier<u32, &str> = SealBarrier::new([7], 10);
        assert_eq!(b.offer_seal(7, 1, 2).unwrap(), None);
        assert_eq!(b.offer_record(7, 1, 1, "b").unwrap(), None);
        let r = b.offer_record(7, 1, 0, "a").unwrap().unwrap();
        assert_eq!(r.records, vec!["a", "b"]);
        // A retransmission of a released record is absorbed; a record beyond the seal is late.
        assert_eq!(b.offer_record(7, 1, 0, "a"), Ok(None));
        assert!(matches!(
            b.offer_record(7, 1, 2, "c"),
            Err(BarrierError::Late { .. })
        ));
        assert_eq!(b.buffered(), 0);
    }

    #[test]
    fn overflow_and_backpressure_are_errors() {
        let mut b: SealBarrier<u32, u8> = SealBarrier::new([1, 2], 2);
        b.offer_seal(1, 0, 1).unwrap();
        assert!(matches!(
            b.offer_record(1, 0, 1, 9),
            Err(BarrierError::Overflow { .. })
        ));
        b.offer_record(2, 0, 0, 1).unwrap();
        b.offer_record(2, 0, 1, 1).unwrap();
        assert_eq!(
            b.offer_record(1, 0, 0, 1),
            Err(BarrierError::Full { limit: 2 })
        );
    }
}
