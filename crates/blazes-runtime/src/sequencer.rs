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
#[non_exhaustive]
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
pub(crate) const ATTEMPTS: u32 = 8;

/// The sequencer without its log: the high-water marks and the end of the log they cover. It
/// does no IO; [`Sequencer`] drives it over a [`Log`], and an async driver (the tokio service
/// over an engine) can drive it over anything that appends conditionally.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SequencerState {
    /// Per producer, the highest `(epoch, seq)` in the log up to `end`.
    high_water: BTreeMap<ProducerId, (u64, u64)>,
    /// Offset up to which the log's records are folded into `high_water`.
    end: u64,
    /// An append failed ambiguously: catch up before the next one.
    unsure: bool,
}

/// A submission split into retries and new messages, ready to append at `expected_end`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prepared {
    expected_end: u64,
    records: Vec<Vec<u8>>,
    staged: BTreeMap<ProducerId, (u64, u64)>,
    fresh_idx: Vec<usize>,
    len: usize,
}

impl Prepared {
    /// Encoded new messages, to append in this order.
    pub fn records(&self) -> &[Vec<u8>] {
        &self.records
    }

    /// The log end the append must be conditional on.
    pub fn expected_end(&self) -> u64 {
        self.expected_end
    }
}

impl SequencerState {
    /// Nothing folded yet: fold the whole log (from offset 0) before the first submission.
    pub fn new() -> Self {
        SequencerState {
            unsure: true,
            ..Self::default()
        }
    }

    /// Offset up to which the log is folded in; where a catch-up reads from.
    pub fn end(&self) -> u64 {
        self.end
    }

    /// Whether the log must be read from [`SequencerState::end`] (and folded) before the next
    /// [`SequencerState::prepare`]: after opening, a conflict or an ambiguous append.
    pub fn needs_catch_up(&self) -> bool {
        self.unsure
    }

    /// Folds durable records read from [`SequencerState::end`] on, in order.
    pub fn fold(&mut self, records: &[Record]) -> Result<(), SequencerError> {
        for record in records {
            if record.offset != self.end {
                // Only a contiguous read continues the marks.
                return Err(SequencerError::Malformed {
                    offset: record.offset,
                });
            }
            let msg = decode_record(record)?;
            let hw = self.high_water.entry(msg.envelope.producer).or_default();
            *hw = (*hw).max((msg.envelope.epoch, msg.envelope.seq));
            self.end += 1;
        }
        Ok(())
    }

    /// Marks the catch-up done: every record up to the log's end has been folded.
    pub fn caught_up(&mut self) {
        self.unsure = false;
    }

    /// Splits `batch` into retries and new messages, checking gaps and epochs. A gap or a
    /// fenced epoch rejects the whole batch.
    pub fn prepare(&self, batch: &[Envelope]) -> Result<Prepared, SequencerError> {
        let mut staged: BTreeMap<ProducerId, (u64, u64)> = BTreeMap::new();
        let mut records = Vec::new();
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
            records.push(env.encode());
            fresh_idx.push(i);
        }
        Ok(Prepared {
            expected_end: self.end,
            records,
            staged,
            fresh_idx,
            len: batch.len(),
        })
    }

    /// Records the outcome of appending `prepared`: `Ok(offsets)` folds it in and gives the
    /// per-envelope answer; an error marks the state for a catch-up if the append may have
    /// landed (a conflict, or [`LogError::is_ambiguous`]) and hands the error back.
    pub fn complete(
        &mut self,
        prepared: Prepared,
        appended: Result<Vec<u64>, LogError>,
    ) -> Result<Vec<Submitted>, LogError> {
        let offsets = match appended {
            Ok(offsets) => offsets,
            Err(e) => {
                self.unsure = matches!(e, LogError::Conflict { .. }) || e.is_ambiguous();
                return Err(e);
            }
        };
        self.end += offsets.len() as u64;
        self.high_water.extend(prepared.staged);
        let mut out = vec![Submitted::Duplicate; prepared.len];
        for (i, off) in prepared.fresh_idx.into_iter().zip(offsets) {
            out[i] = Submitted::Appended(off);
        }
        Ok(out)
    }

    /// Highest sequence number appended for `producer` in its latest epoch (0 if none).
    pub fn high_water(&self, producer: ProducerId) -> u64 {
        self.high_water.get(&producer).map_or(0, |&(_, seq)| seq)
    }

    /// Latest epoch of `producer` in the log (0 if none).
    pub fn epoch(&self, producer: ProducerId) -> u64 {
        self.high_water
            .get(&producer)
            .map_or(0, |&(epoch, _)| epoch)
    }
}

/// Assigns one global order to the messages of many producers.
#[derive(Debug)]
pub struct Sequencer<L: Log> {
    log: L,
    state: SequencerState,
}

impl<L: Log> Sequencer<L> {
    /// Opens a sequencer on `log`, rebuilding every producer's high-water mark from its contents.
    pub fn open(log: L) -> Result<Self, SequencerError> {
        let mut seq = Sequencer {
            log,
            state: SequencerState::new(),
        };
        seq.catch_up()?;
        Ok(seq)
    }

    /// Folds every record between the state's end and the log's end into the marks. Records
    /// past the durable end are synced first: readers see durable records only, and an
    /// unsynced record another writer (or an ambiguous append) left behind is still part of the
    /// order.
    fn catch_up(&mut self) -> Result<(), SequencerError> {
        if self.log.durable_end() < self.log.end() {
            self.log.sync()?;
        }
        loop {
            let batch = self.log.read_durable(self.state.end(), 4096)?;
            if batch.is_empty() {
                break;
            }
            self.state.fold(&batch)?;
        }
        self.state.caught_up();
        Ok(())
    }

    /// Appends the new messages of `batch` in batch order and reports, per envelope, whether it
    /// was appended or dropped as a retry. A gap or a fenced epoch rejects the whole batch
    /// (nothing is appended), so a producer can resend it unchanged after filling the gap.
    pub fn submit(&mut self, batch: &[Envelope]) -> Result<Vec<Submitted>, SequencerError> {
        for _ in 0..ATTEMPTS {
            if self.state.needs_catch_up() {
                self.catch_up()?;
            }
            let prepared = self.state.prepare(batch)?;
            let appended = if prepared.records.is_empty() {
                Ok(Vec::new())
            } else {
                let refs: Vec<&[u8]> = prepared.records.iter().map(Vec::as_slice).collect();
                self.log.append_expected(&refs, prepared.expected_end)
            };
            match self.state.complete(prepared, appended) {
                Ok(out) => return Ok(out),
                // Lost the race for the end: read what the other writer appended and retry.
                Err(LogError::Conflict { .. }) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(SequencerError::Contended { attempts: ATTEMPTS })
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
        self.state.high_water(producer)
    }

    /// Latest epoch of `producer` in the log (0 if none): a restarted producer that lost its
    /// counter continues with epoch + 1 and sequence number 1.
    pub fn epoch(&self, producer: ProducerId) -> u64 {
        self.state.epoch(producer)
    }

    /// Splits the sequencer into its log and its IO-free state (e.g. to drive the state over
    /// an async engine).
    pub fn into_parts(self) -> (L, SequencerState) {
        (self.log, self.state)
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
