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
//! - a partition is released at most once; a later record or seal for it is an error
//!   ([`BarrierError::AlreadyReleased`]), as is a record beyond the announced count;
//! - a retransmitted record (same producer, partition and index, same content) is absorbed;
//! - at most `max_buffered` records are held; beyond that [`BarrierError::Full`] pushes back on
//!   the caller without accepting the record.
//!
//! A partition whose producer set has one member is an "independent seal": that producer's seal
//! alone completes it, with no agreement among producers.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;

use super::sequencer::ProducerId;

/// Errors of the seal barrier.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BarrierError {
    /// The partition was already released; the message came too late to be part of it.
    #[error(
        "partition {partition} was already released; the late message from producer {producer} is rejected"
    )]
    AlreadyReleased {
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
}

impl<R> Default for Pending<R> {
    fn default() -> Self {
        Pending {
            records: BTreeMap::new(),
            seals: BTreeMap::new(),
        }
    }
}

/// Buffers records per partition until every producer has sealed the partition.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SealBarrier<P: Ord, R> {
    default_producers: BTreeSet<ProducerId>,
    view: BTreeMap<P, BTreeSet<ProducerId>>,
    max_buffered: usize,
    buffered: usize,
    pending: BTreeMap<P, Pending<R>>,
    released: BTreeSet<P>,
}

impl<P: Ord + Clone + Debug, R: Clone + PartialEq> SealBarrier<P, R> {
    /// A barrier where every partition is produced by `producers`, holding at most
    /// `max_buffered` records. The limit must exceed the largest partition, or that partition
    /// can never complete.
    pub fn new(producers: impl IntoIterator<Item = ProducerId>, max_buffered: usize) -> Self {
        SealBarrier {
            default_producers: producers.into_iter().collect(),
            view: BTreeMap::new(),
            max_buffered,
            buffered: 0,
            pending: BTreeMap::new(),
            released: BTreeSet::new(),
        }
    }

    /// Sets the producer set of one partition from a membership view. It must be set before the
    /// partition can complete (a partition released under a smaller set cannot be recalled).
    pub fn set_producers(
        &mut self,
        partition: P,
        producers: impl IntoIterator<Item = ProducerId>,
    ) -> Result<Option<Release<P, R>>, BarrierError> {
        if self.released.contains(&partition) {
            return Err(BarrierError::ViewAfterRelease {
                partition: format!("{partition:?}"),
            });
        }
        self.view
            .insert(partition.clone(), producers.into_iter().collect());
        Ok(self.try_release(&partition))
    }

    fn producers(&self, partition: &P) -> &BTreeSet<ProducerId> {
        self.view.get(partition).unwrap_or(&self.default_producers)
    }

    fn admit(&self, producer: ProducerId, partition: &P) -> Result<(), BarrierError> {
        if self.released.contains(partition) {
            return Err(BarrierError::AlreadyReleased {
                partition: format!("{partition:?}"),
                producer,
            });
        }
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
        if self.buffered >= self.max_buffered {
            return Err(BarrierError::Full {
                limit: self.max_buffered,
            });
        }
        self.buffered += 1;
        self.pending
            .entry(partition.clone())
            .or_default()
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
        self.admit(producer, &partition)?;
        let pending = self.pending.entry(partition.clone()).or_default();
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
        self.released.insert(partition.clone());
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
        self.released.contains(partition)
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
        assert!(matches!(
            b.offer_record(7, 1, 0, "a"),
            Err(BarrierError::AlreadyReleased { .. })
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
