//! Sequencer: one global order for the inputs of a component.
//!
//! Producers submit [`Envelope`]s carrying `(producer id, epoch, sequence number)`; the
//! sequencer appends each new message to a single [`Log`] that every consumer and replica reads
//! in the same order. Invariants:
//! - producers are idempotent: a message whose `(epoch, seq)` is at or below the producer's
//!   high-water mark is a retry and is dropped, never appended twice;
//! - per producer and epoch, sequence numbers in the log are exactly 1, 2, 3, ... (a gap is
//!   refused, so a delayed earlier message cannot be skipped and then discarded as a
//!   "duplicate");
//! - a producer that restarts without its counter starts a larger epoch at sequence number 1;
//!   messages of an earlier epoch are refused from then on ([`SequencerError::Fenced`]), so a
//!   zombie incarnation cannot interleave with its successor;
//! - the high-water marks are a function of the log alone and are rebuilt from it on open, so
//!   idempotence survives a sequencer restart;
//! - every append is conditional on the end the sequencer has folded into its marks
//!   ([`Log::append_expected`]); a conflict (another writer, or an earlier ambiguous append that
//!   did land) makes it read the new records first, and an ambiguous failure makes the next
//!   submission do the same, so a retry after a timeout is recognised as a duplicate.

use std::collections::BTreeMap;

use super::log::{Log, LogError, Record};

/// Identifies a producer.
pub type ProducerId = u64;

/// A message as a producer submits it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Envelope {
    /// Who sent it.
    pub producer: ProducerId,
    /// The producer's incarnation: a restarted producer that lost its counter uses a larger one
    /// (e.g. [`Sequencer::epoch`] + 1 read at start-up, or a counter it persists).
    pub epoch: u64,
    /// The producer's own counter within the epoch, starting at 1.
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
    /// The underlying log failed. If [`LogError::is_ambiguous`], the batch may be in the log:
    /// resubmit it unchanged and the sequencer sorts out which messages are duplicates.
    #[error(transparent)]
    Log(#[from] LogError),
    /// A producer skipped sequence numbers; it must resend the missing ones first.
    #[error(
        "producer {producer} sent sequence number {got} in epoch {epoch} but {expected} is the next one"
    )]
    Gap {
        /// Producer at fault.
        producer: ProducerId,
        /// Epoch of the message.
        epoch: u64,
        /// The sequence number the sequencer expects.
        expected: u64,
        /// The sequence number received.
        got: u64,
    },
    /// The producer has since started a later epoch; this message is from an old incarnation.
    #[error("producer {producer} sent epoch {epoch} but epoch {current} has started")]
    Fenced {
        /// Producer at fault.
        producer: ProducerId,
        /// Epoch of the message.
        epoch: u64,
        /// The producer's latest epoch in the log.
        current: u64,
    },
    /// A log record is not an envelope (the log belongs to something else, or is damaged).
    #[error("log record at offset {offset} is not a sequencer envelope")]
    Malformed {
        /// Offset of the bad record.
        offset: u64,
    },
    /// Other writers kept appending between every catch-up and the next attempt.
    #[error("the log kept changing under the sequencer ({attempts} conditional appends lost)")]
    Contended {
        /// Attempts made.
        attempts: u32,
    },
}

const ENVELOPE_HEADER: usize = 24;

impl Envelope {
    /// Wire form in the log: `producer: u64 | epoch: u64 | seq: u64 | payload`.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(ENVELOPE_HEADER + self.payload.len());
        out.extend_from_slice(&self.producer.to_le_bytes());
        out.extend_from_slice(&self.epoch.to_le_bytes());
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
            epoch: u64::from_le_bytes(bytes[8..16].try_into().ok()?),
            seq: u64::from_le_bytes(bytes[16..24].try_into().ok()?),
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

/// How often `submit` catches up and retries after losing a conditional append.
const ATTEMPTS: u32 = 8;

/// Assigns one global order to the messages of many producers.
#[derive(Debug)]
pub struct Sequencer<L: Log> {
    log: L,
    /// Per producer, the highest `(epoch, seq)` in the log up to `end`.
    high_water: BTreeMap<ProducerId, (u64, u64)>,
    /// Offset up to which the log's records are folded into `high_water`.
    end: u64,
    /// An append failed ambiguously: catch up before the next one.
    unsure: bool,
}

impl<L: Log> Sequencer<L> {
    /// Opens a sequencer on `log`, rebuilding every producer's high-water mark from its contents.
    pub fn open(log: L) -> Result<Self, SequencerError> {
        let mut seq = Sequencer {
            log,
            high_water: BTreeMap::new(),
            end: 0,
            unsure: true,
        };
        seq.catch_up()?;
        Ok(seq)
    }

    /// Folds every record between `end` and the log's end into the marks. Records past the
    /// durable end are synced first: readers see durable records only, and an unsynced record
    /// another writer (or an ambiguous append) left behind is still part of the order.
    fn catch_up(&mut self) -> Result<(), SequencerError> {
        if self.log.durable_end() < self.log.end() {
            self.log.sync()?;
        }
        loop {
            let batch = self.log.read_durable(self.end, 4096)?;
            let Some(last) = batch.last() else { break };
            let next = last.offset + 1;
            for record in &batch {
                let msg = decode_record(record)?;
                let hw = self.high_water.entry(msg.envelope.producer).or_default();
                *hw = (*hw).max((msg.envelope.epoch, msg.envelope.seq));
            }
            self.end = next;
        }
        self.unsure = false;
        Ok(())
    }

    /// Appends the new messages of `batch` in batch order and reports, per envelope, whether it
    /// was appended or dropped as a retry. A gap or a fenced epoch rejects the whole batch
    /// (nothing is appended), so a producer can resend it unchanged after filling the gap.
    pub fn submit(&mut self, batch: &[Envelope]) -> Result<Vec<Submitted>, SequencerError> {
        for _ in 0..ATTEMPTS {
            if self.unsure {
                self.catch_up()?;
            }
            let (staged, fresh, fresh_idx) = self.stage(batch)?;
            let refs: Vec<&[u8]> = fresh.iter().map(Vec::as_slice).collect();
            let offsets = if refs.is_empty() {
                Vec::new()
            } else {
                match self.log.append_expected(&refs, self.end) {
                    Ok(offsets) => offsets,
                    Err(LogError::Conflict { .. }) => {
                        self.unsure = true;
                        continue;
                    }
                    Err(e) => {
                        // The batch may or may not be in the log: find out before the next
                        // append, so a resubmission is matched against what did land.
                        self.unsure = e.is_ambiguous();
                        return Err(e.into());
                    }
                }
            };
            self.end += offsets.len() as u64;
            self.high_water.extend(staged);
            let mut out = vec![Submitted::Duplicate; batch.len()];
            for (i, off) in fresh_idx.into_iter().zip(offsets) {
                out[i] = Submitted::Appended(off);
            }
            return Ok(out);
        }
        Err(SequencerError::Contended { attempts: ATTEMPTS })
    }

    /// Splits `batch` into retries and new messages (encoded), checking gaps and epochs.
    #[allow(clippy::type_complexity)]
    fn stage(
        &self,
        batch: &[Envelope],
    ) -> Result<(BTreeMap<ProducerId, (u64, u64)>, Vec<Vec<u8>>, Vec<usize>), SequencerError> {
        let mut staged: BTreeMap<ProducerId, (u64, u64)> = BTreeMap::new();
        let mut fresh = Vec::new();
        let mut fresh_idx = Vec::new();
        for (i, env) in batch.iter().enumerate() {
            let (epoch, hw) = staged
                .get(&env.producer)
                .or_else(|| self.high_water.get(&env.producer))
                .copied()
                .unwrap_or((0, 0));
            if env.epoch < epoch {
                return Err(SequencerError::Fenced {
                    producer: env.producer,
                    epoch: env.epoch,
                    current: epoch,
                });
            }
            // A new epoch restarts the count.
            let hw = if env.epoch > epoch { 0 } else { hw };
            if env.seq <= hw {
                continue;
            }
            if env.seq != hw + 1 {
                return Err(SequencerError::Gap {
                    producer: env.producer,
                    epoch: env.epoch,
                    expected: hw + 1,
                    got: env.seq,
                });
            }
            staged.insert(env.producer, (env.epoch, env.seq));
            fresh.push(env.encode());
            fresh_idx.push(i);
        }
        Ok((staged, fresh, fresh_idx))
    }

    /// Reads up to `max` sequenced messages from `offset`; only durable ones, so nothing a
    /// reader acts on can be replaced by another message after a crash.
    pub fn read_from(&self, offset: u64, max: usize) -> Result<Vec<Sequenced>, SequencerError> {
        self.log
            .read_durable(offset, max)?
            .iter()
            .map(decode_record)
            .collect()
    }

    /// Highest sequence number appended for `producer` in its latest epoch (0 if none).
    pub fn high_water(&self, producer: ProducerId) -> u64 {
        self.high_water.get(&producer).map_or(0, |&(_, seq)| seq)
    }

    /// Latest epoch of `producer` in the log (0 if none): a restarted producer that lost its
    /// counter continues with epoch + 1 and sequence number 1.
    pub fn epoch(&self, producer: ProducerId) -> u64 {
        self.high_water
            .get(&producer)
            .map_or(0, |&(epoch, _)| epoch)
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
