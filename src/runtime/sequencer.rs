//! Sequencer: one global order for the inputs of a component.
//!
//! Producers submit [`Envelope`]s carrying `(producer id, producer sequence number)`; the
//! sequencer appends each new message to a single [`Log`] that every consumer and replica reads
//! in the same order. Invariants:
//! - producers are idempotent: a message whose sequence number is at or below the producer's
//!   high-water mark is a retry and is dropped, never appended twice;
//! - per producer, sequence numbers in the log are exactly 1, 2, 3, ... (a gap is refused, so a
//!   delayed earlier message cannot be skipped and then discarded as a "duplicate");
//! - the high-water marks are a function of the log alone and are rebuilt from it on open, so
//!   idempotence survives a sequencer restart.

use std::collections::BTreeMap;

use super::log::{Log, LogError, Record};

/// Identifies a producer.
pub type ProducerId = u64;

/// A message as a producer submits it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Envelope {
    /// Who sent it.
    pub producer: ProducerId,
    /// The producer's own counter, starting at 1.
    pub seq: u64,
    /// Application bytes.
    pub payload: Vec<u8>,
}

/// A message as consumers read it back, with its global position.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Sequenced {
    /// Global position in the log.
    pub offset: u64,
    /// The envelope as submitted.
    pub envelope: Envelope,
}

/// Outcome of submitting one envelope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Submitted {
    /// Appended at this offset.
    Appended(u64),
    /// A retry of a message already in the log; nothing was appended.
    Duplicate,
}

/// Errors of the sequencer.
#[derive(Debug, thiserror::Error)]
pub enum SequencerError {
    /// The underlying log failed.
    #[error(transparent)]
    Log(#[from] LogError),
    /// A producer skipped sequence numbers; it must resend the missing ones first.
    #[error("producer {producer} sent sequence number {got} but {expected} is the next one")]
    Gap {
        /// Producer at fault.
        producer: ProducerId,
        /// The sequence number the sequencer expects.
        expected: u64,
        /// The sequence number received.
        got: u64,
    },
    /// A log record is not an envelope (the log belongs to something else, or is damaged).
    #[error("log record at offset {offset} is not a sequencer envelope")]
    Malformed {
        /// Offset of the bad record.
        offset: u64,
    },
}

const ENVELOPE_HEADER: usize = 16;

impl Envelope {
    /// Wire form in the log: `producer: u64 | seq: u64 | payload`.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(ENVELOPE_HEADER + self.payload.len());
        out.extend_from_slice(&self.producer.to_le_bytes());
        out.extend_from_slice(&self.seq.to_le_bytes());
        out.extend_from_slice(&self.payload);
        out
    }

    /// Parses the wire form; `None` when the bytes are too short.
    pub fn decode(bytes: &[u8]) -> Option<Self> {
        if bytes.len() < ENVELOPE_HEADER {
            return None;
        }
        Some(Envelope {
            producer: u64::from_le_bytes(bytes[0..8].try_into().ok()?),
            seq: u64::from_le_bytes(bytes[8..16].try_into().ok()?),
            payload: bytes[ENVELOPE_HEADER..].to_vec(),
        })
    }
}

/// Decodes a log record into a sequenced message.
pub fn decode_record(record: &Record) -> Result<Sequenced, SequencerError> {
    Envelope::decode(&record.payload)
        .map(|envelope| Sequenced {
            offset: record.offset,
            envelope,
        })
        .ok_or(SequencerError::Malformed {
            offset: record.offset,
        })
}

/// Assigns one global order to the messages of many producers.
#[derive(Debug)]
pub struct Sequencer<L: Log> {
    log: L,
    high_water: BTreeMap<ProducerId, u64>,
}

impl<L: Log> Sequencer<L> {
    /// Opens a sequencer on `log`, rebuilding every producer's high-water mark from its contents.
    pub fn open(log: L) -> Result<Self, SequencerError> {
        let mut high_water = BTreeMap::new();
        let mut offset = 0;
        loop {
            let batch = log.read_from(offset, 4096)?;
            if batch.is_empty() {
                break;
            }
            for record in &batch {
                let msg = decode_record(record)?;
                let hw = high_water.entry(msg.envelope.producer).or_insert(0);
                *hw = (*hw).max(msg.envelope.seq);
            }
            offset = batch.last().map_or(offset, |r| r.offset + 1);
        }
        Ok(Sequencer { log, high_water })
    }

    /// Appends the new messages of `batch` in batch order and reports, per envelope, whether it
    /// was appended or dropped as a retry. A gap rejects the whole batch (nothing is appended),
    /// so a producer can resend it unchanged after filling the gap.
    pub fn submit(&mut self, batch: &[Envelope]) -> Result<Vec<Submitted>, SequencerError> {
        let mut staged: BTreeMap<ProducerId, u64> = BTreeMap::new();
        let mut fresh = Vec::new();
        let mut fresh_idx = Vec::new();
        for (i, env) in batch.iter().enumerate() {
            let hw = staged
                .get(&env.producer)
                .or_else(|| self.high_water.get(&env.producer))
                .copied()
                .unwrap_or(0);
            if env.seq <= hw {
                continue;
            }
            if env.seq != hw + 1 {
                return Err(SequencerError::Gap {
                    producer: env.producer,
                    expected: hw + 1,
                    got: env.seq,
                });
            }
            staged.insert(env.producer, env.seq);
            fresh.push(env.encode());
            fresh_idx.push(i);
        }
        let refs: Vec<&[u8]> = fresh.iter().map(Vec::as_slice).collect();
        let offsets = if refs.is_empty() {
            Vec::new()
        } else {
            self.log.append(&refs)?
        };
        self.high_water.extend(staged);
        let mut out = vec![Submitted::Duplicate; batch.len()];
        for (i, off) in fresh_idx.into_iter().zip(offsets) {
            out[i] = Submitted::Appended(off);
        }
        Ok(out)
    }

    /// Reads up to `max` sequenced messages from `offset`.
    pub fn read_from(&self, offset: u64, max: usize) -> Result<Vec<Sequenced>, SequencerError> {
        self.log
            .read_from(offset, max)?
            .iter()
            .map(decode_record)
            .collect()
    }

    /// Highest sequence number appended for `producer` (0 if none).
    pub fn high_water(&self, producer: ProducerId) -> u64 {
        self.high_water.get(&producer).copied().unwrap_or(0)
    }

    /// The underlying log (replicas read it directly).
    pub fn log(&self) -> &L {
        &self.log
    }

    /// Mutable access to the log, e.g. to [`Log::sync`] a group of submissions.
    pub fn log_mut(&mut self) -> &mut L {
        &mut self.log
    }

    /// Gives the log back (e.g. to simulate a restart by reopening on it).
    pub fn into_log(self) -> L {
        self.log
    }
}
