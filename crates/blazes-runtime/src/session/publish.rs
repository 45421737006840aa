//! The publishing side of the broker: partition records, producer epochs and idempotence.

use std::collections::BTreeMap;

use super::{
    PartitionId, PartitionState, Published, SessionBroker, SessionError, TAG_EPOCH, partition_for,
};
use crate::log::Log;
use crate::sequencer::ProducerId;

/// A partition record as decoded.
pub(super) struct Message {
    pub(super) producer: ProducerId,
    pub(super) epoch: u64,
    pub(super) seq: u64,
    pub(super) key: Vec<u8>,
    pub(super) payload: Vec<u8>,
}

const HEADER: usize = 28;

/// Partition record: `producer: u64 | epoch: u64 | seq: u64 | key length: u32 | key | payload`.
fn encode_message(
    producer: ProducerId,
    epoch: u64,
    seq: u64,
    key: &[u8],
    payload: &[u8],
) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + key.len() + payload.len());
    out.extend_from_slice(&producer.to_le_bytes());
    out.extend_from_slice(&epoch.to_le_bytes());
    out.extend_from_slice(&seq.to_le_bytes());
    out.extend_from_slice(&(key.len() as u32).to_le_bytes());
    out.extend_from_slice(key);
    out.extend_from_slice(payload);
    out
}

pub(super) fn decode_message(bytes: &[u8]) -> Option<Message> {
    let u64_at = |at: usize| Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?));
    let len = u32::from_le_bytes(bytes.get(24..HEADER)?.try_into().ok()?) as usize;
    let key_end = HEADER.checked_add(len)?;
    Some(Message {
        producer: u64_at(0)?,
        epoch: u64_at(8)?,
        seq: u64_at(16)?,
        key: bytes.get(HEADER..key_end)?.to_vec(),
        payload: bytes[key_end..].to_vec(),
    })
}

impl<L: Log> PartitionState<L> {
    /// Folds the log's records from `end` into the producers' marks and `epochs` (syncing
    /// first, so that an unsynced record an ambiguous append left behind is seen and made
    /// durable).
    pub(super) fn catch_up(
        &mut self,
        epochs: &mut BTreeMap<ProducerId, u64>,
    ) -> Result<(), SessionError> {
        if self.log.durable_end() < self.log.end() {
            self.log.sync()?;
        }
        loop {
            let batch = self.log.read_durable(self.end, 1024)?;
            let Some(last) = batch.last() else { break };
            let next = last.offset + 1;
            for r in &batch {
                let m = decode_message(&r.payload).ok_or(SessionError::Malformed {
                    which: "partition",
                    offset: r.offset,
                })?;
                let mark = self.producers.entry(m.producer).or_insert((0, 0));
                *mark = (*mark).max((m.epoch, m.seq));
                let e = epochs.entry(m.producer).or_insert(0);
                *e = (*e).max(m.epoch);
            }
            self.end = next;
        }
        self.unsure = false;
        Ok(())
    }
}

impl<L: Log> SessionBroker<L> {
    /// The latest epoch of `producer` the broker knows (0 if none).
    pub fn producer_epoch(&self, producer: ProducerId) -> u64 {
        self.producer_epochs.get(&producer).copied().unwrap_or(0)
    }

    /// Starts a new epoch for `producer` (one past its latest) and returns it once it is
    /// durable: a restarted producer that lost its counters calls this and publishes from
    /// sequence number 1 in every partition. Its previous incarnation is fenced from then on,
    /// in every partition, including those the new one has not published to yet.
    pub fn begin_epoch(&mut self, producer: ProducerId) -> Result<u64, SessionError> {
        // Every partition log may hold a later epoch than the control log (a producer may
        // choose its own): fold them first.
        for p in &mut self.partitions {
            if p.unsure {
                p.catch_up(&mut self.producer_epochs)?;
            }
        }
        let epoch = self.producer_epoch(producer) + 1;
        let mut rec = vec![TAG_EPOCH];
        rec.extend_from_slice(&producer.to_le_bytes());
        rec.extend_from_slice(&epoch.to_le_bytes());
        self.control.append(&[&rec])?;
        self.control.sync()?;
        self.producer_epochs.insert(producer, epoch);
        Ok(epoch)
    }

    /// Appends message `seq` of `producer`'s `epoch` to its key's partition and returns once it
    /// is durable. Sequence numbers count a producer's messages *per partition* within an epoch
    /// (1, 2, 3, ...; the partition is [`partition_for`] the key); a retry at or below the mark
    /// is a [`Published::Duplicate`], a gap is [`SessionError::PublishGap`], an epoch older than
    /// the producer's latest is [`SessionError::ProducerFenced`]. A larger epoch starts at 1.
    /// After an ambiguous failure, resend the same message: the broker reads back what landed
    /// first.
    pub fn publish(
        &mut self,
        producer: ProducerId,
        epoch: u64,
        seq: u64,
        key: &[u8],
        payload: &[u8],
    ) -> Result<Published, SessionError> {
        let partition: PartitionId = partition_for(key, self.partitions());
        let p = &mut self.partitions[partition as usize];
        if p.unsure {
            p.catch_up(&mut self.producer_epochs)?;
        }
        let current = self.producer_epochs.get(&producer).copied().unwrap_or(0);
        if epoch < current {
            return Err(SessionError::ProducerFenced {
                producer,
                epoch,
                current,
            });
        }
        let (mark_epoch, mark_seq) = p.producers.get(&producer).copied().unwrap_or((0, 0));
        let expected = if epoch == mark_epoch {
            if seq <= mark_seq {
                return Ok(Published::Duplicate { partition });
            }
            mark_seq + 1
        } else {
            1
        };
        if seq != expected {
            return Err(SessionError::PublishGap {
                partition,
                producer,
                expected,
                got: seq,
            });
        }
        let rec = encode_message(producer, epoch, seq, key, payload);
        let appended = p
            .log
            .append_expected(&[&rec], p.end)
            .and_then(|off| p.log.sync().map(|()| off));
        match appended {
            Ok(off) => {
                p.end = off[0] + 1;
                p.producers.insert(producer, (epoch, seq));
                self.producer_epochs.insert(producer, epoch);
                Ok(Published::Appended {
                    partition,
                    offset: off[0],
                })
            }
            Err(e) => {
                // A conflict or an ambiguous failure: read back before the next publish.
                p.unsure = true;
                Err(e.into())
            }
        }
    }
}
