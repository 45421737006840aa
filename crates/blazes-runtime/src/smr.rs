//! Replicated state machine: replicas that apply one sequenced log and number outputs alike.
//!
//! A user implements a deterministic [`StateMachine`]. Every [`Replica`] applies the records of
//! the same log in offset order, so all replicas pass through the same states. Each output gets
//! an [`OutputId`] derived from the log: the offset of the input that produced it and its index
//! among that input's outputs. Replicas therefore number their outputs identically, and a
//! downstream [`Dedup`](super::dedup::Dedup) can drop the copies that replication and failover
//! produce.
//!
//! Invariants:
//! - a replica applies offset `n` only after every offset below `n`, exactly once per
//!   incarnation (out-of-order or repeated inputs are refused, not applied);
//! - [`Replica::step`] applies durable records only: a record a crash of the log can still erase
//!   (and the log then reuse its offset for another record) is never applied, so replicas and a
//!   downstream dedup never act on an input that later turns out to be a different one;
//! - [`Replica::recover`] checks the snapshot against the log: the snapshot's position must be
//!   durable in the log, and the input before it must be the one the snapshot saw (its CRC32C),
//!   so a snapshot of another log, or of records a crash erased, is refused rather than resumed;
//! - recovery from a [`Snapshot`] (state + next offset to apply) followed by replay of the log
//!   reaches the same state and emits the same outputs with the same ids as an uninterrupted run
//!   (outputs already emitted before the crash are emitted again, which is what dedup is for).
//!
//! Output commit: a snapshot must only cover inputs whose outputs have already been delivered
//! downstream; otherwise a crash after the snapshot loses outputs that replay will not re-emit.

use super::log::{Log, LogError, crc32c};

/// A deterministic state machine: same inputs in the same order give the same outputs.
pub trait StateMachine {
    /// Applies one input and returns the outputs it causes, in order.
    fn apply(&mut self, input: &[u8]) -> Vec<Vec<u8>>;
    /// Serializes the state.
    fn snapshot(&self) -> Vec<u8>;
    /// Rebuilds a state from [`StateMachine::snapshot`] bytes.
    fn restore(snapshot: &[u8]) -> Result<Self, SmrError>
    where
        Self: Sized;
}

/// The identity of an output, the same on every replica.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OutputId {
    /// Log offset of the input that produced the output.
    pub offset: u64,
    /// Position of the output among that input's outputs.
    pub index: u32,
}

/// An output with its identity.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Output {
    /// Deterministic identity.
    pub id: OutputId,
    /// Application bytes.
    pub payload: Vec<u8>,
}

/// A durable point to recover from: the state after applying every offset below `next_offset`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Snapshot {
    /// Serialized state.
    pub state: Vec<u8>,
    /// First offset not reflected in `state`.
    pub next_offset: u64,
    /// CRC32C of the payload of the input at `next_offset - 1` (none at offset 0): what
    /// recovery compares with the log.
    pub last_input_crc: Option<u32>,
}

/// Errors of a replica.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SmrError {
    /// The log failed.
    #[error(transparent)]
    Log(#[from] LogError),
    /// An input was offered out of log order.
    #[error("replica expected input at offset {expected} but was given offset {got}")]
    OutOfOrder {
        /// Next offset the replica can apply.
        expected: u64,
        /// Offset offered.
        got: u64,
    },
    /// The snapshot does not belong to this log as it is now.
    #[error(
        "snapshot at offset {next_offset} does not match the log (durable end {durable_end}): {reason}"
    )]
    SnapshotMismatch {
        /// The snapshot's position.
        next_offset: u64,
        /// The log's durable end.
        durable_end: u64,
        /// What differs.
        reason: &'static str,
    },
    /// Snapshot bytes could not be restored.
    #[error("snapshot cannot be restored: {reason}")]
    BadSnapshot {
        /// Why.
        reason: String,
    },
}

/// One replica of a state machine.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Replica<M> {
    machine: M,
    next_offset: u64,
    last_input_crc: Option<u32>,
}

impl<M: StateMachine> Replica<M> {
    /// A replica starting from `machine`'s state at the beginning of the log.
    pub fn new(machine: M) -> Self {
        Replica {
            machine,
            next_offset: 0,
            last_input_crc: None,
        }
    }

    /// A replica restored from a snapshot, after checking it against `log`; it continues at
    /// the snapshot's offset.
    pub fn recover(snapshot: &Snapshot, log: &impl Log) -> Result<Self, SmrError> {
        let mismatch = |reason| SmrError::SnapshotMismatch {
            next_offset: snapshot.next_offset,
            durable_end: log.durable_end(),
            reason,
        };
        if snapshot.next_offset > log.durable_end() {
            return Err(mismatch(
                "the snapshot covers inputs the log does not hold durably",
            ));
        }
        let found = match snapshot.next_offset.checked_sub(1) {
            None => None,
            Some(last) => log
                .read_durable(last, 1)?
                .first()
                .map(|r| crc32c(&r.payload)),
        };
        if found != snapshot.last_input_crc {
            return Err(mismatch(
                "the last input it covers differs from the log's record",
            ));
        }
        Ok(Replica {
            machine: M::restore(&snapshot.state)?,
            next_offset: snapshot.next_offset,
            last_input_crc: snapshot.last_input_crc,
        })
    }

    /// Applies the input at `offset`, which must be the next one.
    pub fn apply(&mut self, offset: u64, input: &[u8]) -> Result<Vec<Output>, SmrError> {
        if offset != self.next_offset {
            return Err(SmrError::OutOfOrder {
                expected: self.next_offset,
                got: offset,
            });
        }
        self.next_offset += 1;
        self.last_input_crc = Some(crc32c(input));
        Ok(self
            .machine
            .apply(input)
            .into_iter()
            .enumerate()
            .map(|(i, payload)| Output {
                id: OutputId {
                    offset,
                    index: i as u32,
                },
                payload,
            })
            .collect())
    }

    /// Reads and applies up to `max` further durable records of `log`.
    pub fn step(&mut self, log: &impl Log, max: usize) -> Result<Vec<Output>, SmrError> {
        let mut out = Vec::new();
        for rec in log.read_durable(self.next_offset, max)? {
            out.extend(self.apply(rec.offset, &rec.payload)?);
        }
        Ok(out)
    }

    /// The state and position to recover from later.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            state: self.machine.snapshot(),
            next_offset: self.next_offset,
            last_input_crc: self.last_input_crc,
        }
    }

    /// Next offset to apply.
    pub fn next_offset(&self) -> u64 {
        self.next_offset
    }

    /// The machine's current state.
    pub fn machine(&self) -> &M {
        &self.machine
    }
}
