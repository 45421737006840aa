//! Durable append-only log: the substrate of every ordering mechanism.
//!
//! A log assigns each appended record a dense offset (0, 1, 2, ...) and returns records in offset
//! order to every reader. The [`Log`] trait is the seam where another engine plugs in, so it says
//! only what such an engine can honour:
//! - a *conditional* append: [`Log::append_expected`] appends a batch only if the log still ends
//!   where the caller expects, and otherwise appends nothing and says where it ends
//!   ([`LogError::Conflict`]);
//! - appends can fail *ambiguously* (an I/O error, a timeout): the batch may or may not be in the
//!   log ([`LogError::is_ambiguous`]). Callers resolve that by idempotency, never by appending
//!   blindly again: they read back (or let recovery decide) and skip what is already there;
//! - readers see durable records only ([`Log::read_durable`]): a record that a crash can still
//!   erase is invisible, so no reader ever acts on an offset that may later hold another record.
//!
//! [`FileLog`] (module `file`) stores records in segment files named by their first offset. Each record is
//! `len: u32 | crc32c: u32 | offset: u64 | payload`, all little-endian, where the CRC covers the
//! offset and the payload. Invariants:
//! - offsets are dense and strictly increasing across segments;
//! - a record at an offset below [`Log::durable_end`] has been fsynced and survives a crash;
//! - an append that fails before any fsync failed leaves no trace (its bytes are cut off again,
//!   durably); a failed fsync *poisons* the handle ([`LogError::Poisoned`]): what the kernel kept
//!   is unknown, so only a reopen, whose recovery reads the files, decides what the log holds;
//! - recovery on open keeps the longest valid prefix (length in bounds, CRC matches, offset is
//!   the expected one), truncates everything after it and fsyncs what it keeps, so a torn or
//!   corrupt tail never produces a garbage record and never hides an acknowledged one;
//! - one handle per directory: an exclusive `flock` on `LOCK` in the directory, held until the
//!   handle is dropped, refuses a second open from this or another process
//!   ([`LogError::Locked`]).
//!
//! [`MemLog`] has the same semantics without files, for tests and model checking; its
//! [`MemLog::manual_sync`] mode keeps unsynced records apart so a test can [`MemLog::crash`] it.
//!
//! This module holds the contract (the [`Log`] trait, [`Record`], [`LogError`]); `file` the
//! segment files, their recovery and fault injection; `crc` the checksum records carry.

use std::path::PathBuf;

mod crc;
mod file;
mod mem;

pub use crc::crc32c;
pub use file::{FileLog, FileLogConfig, FsyncPolicy, IoOp, RecoveryReport};
pub use mem::MemLog;

/// Header bytes in front of every payload: length, CRC32C, offset.
pub const RECORD_HEADER_LEN: usize = 4 + 4 + 8;

/// Errors of a log.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LogError {
    /// The operating system refused a file operation.
    #[error("log I/O failed on {path}: {source}")]
    Io {
        /// File or directory the operation touched.
        path: PathBuf,
        /// Underlying error.
        source: std::io::Error,
    },
    /// A payload is larger than the configured maximum record size.
    #[error("record of {len} bytes exceeds the maximum record size of {max} bytes")]
    RecordTooLarge {
        /// Payload length.
        len: usize,
        /// Configured maximum.
        max: usize,
    },
    /// A read found a record that no longer matches its checksum (the file changed under us).
    #[error("record at offset {offset} is corrupt on disk")]
    Corrupt {
        /// Offset of the damaged record.
        offset: u64,
    },
    /// A conditional append found the log ending elsewhere than expected; nothing was appended.
    #[error("conditional append expected the log to end at {expected} but it ends at {actual}")]
    Conflict {
        /// End the caller expected.
        expected: u64,
        /// End the log has.
        actual: u64,
    },
    /// An earlier fsync (or the undoing of a failed write) failed, so what is on disk is
    /// unknown; the handle refuses everything until the log is reopened.
    #[error("log is unusable after an earlier failure; reopen it to recover")]
    Poisoned,
    /// A read asked for records that [`Log::trim`] dropped.
    #[error("log records below offset {first} were trimmed; offset {offset} is gone")]
    Trimmed {
        /// Offset asked for.
        offset: u64,
        /// First offset the log still holds.
        first: u64,
    },
    /// Another handle (in this or another process) has the log directory open.
    #[error("log directory {path} is in use by another handle")]
    Locked {
        /// The directory.
        path: PathBuf,
    },
}

impl LogError {
    /// Whether an append that returned this error may nevertheless have appended its batch
    /// (or part of it, as seen after recovery). A caller must resolve such an outcome by reading
    /// back, not by appending again. [`LogError::Conflict`] and [`LogError::RecordTooLarge`]
    /// appended nothing.
    pub fn is_ambiguous(&self) -> bool {
        matches!(self, LogError::Io { .. } | LogError::Poisoned)
    }
}

/// One record read back from a log.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Record {
    /// Position in the log.
    pub offset: u64,
    /// Bytes as appended.
    pub payload: Vec<u8>,
}

/// An append-only, totally ordered log (the seam between the cores and a storage engine).
///
/// Implementations: [`FileLog`] (local files), [`MemLog`] (tests, model checking). An engine
/// such as a replicated stream implements the same contract: `append_expected` maps to an
/// append conditioned on the last sequence number, `durable_end` to what the engine has
/// acknowledged as stored.
pub trait Log {
    /// Appends a batch, in order and atomically, if and only if the log ends at `expected_end`;
    /// returns the offsets assigned (`expected_end`, `expected_end + 1`, ...). Otherwise appends
    /// nothing and returns [`LogError::Conflict`]. Whether the batch is durable on return
    /// depends on the implementation's sync policy; it is durable once [`Log::durable_end`]
    /// exceeds its last offset. An error for which [`LogError::is_ambiguous`] holds leaves the
    /// batch's presence unknown.
    fn append_expected(&mut self, batch: &[&[u8]], expected_end: u64)
    -> Result<Vec<u64>, LogError>;
    /// Appends a batch at the current end (for the single writer that owns the log).
    fn append(&mut self, batch: &[&[u8]]) -> Result<Vec<u64>, LogError> {
        let end = self.end();
        self.append_expected(batch, end)
    }
    /// Returns up to `max` records starting at `offset`, in offset order, none at or beyond
    /// [`Log::durable_end`].
    fn read_durable(&self, offset: u64, max: usize) -> Result<Vec<Record>, LogError>;
    /// Offset of the first record the log still holds (0 until [`Log::trim`] dropped some).
    fn first(&self) -> u64 {
        0
    }
    /// Offset one past the last appended record.
    fn end(&self) -> u64;
    /// Offset one past the last durable record: every record below it survives a crash.
    fn durable_end(&self) -> u64;
    /// Makes every appended record durable.
    fn sync(&mut self) -> Result<(), LogError>;
    /// Lets the log drop durable records below `before` (a writer that keeps its state in a
    /// snapshot record no longer needs what precedes it). Offsets of the rest do not change, and
    /// [`Log::first`] says where reading starts. An implementation may keep more than asked (the
    /// default keeps everything; [`FileLog`] drops whole segments only).
    fn trim(&mut self, before: u64) -> Result<(), LogError> {
        let _ = before;
        Ok(())
    }
}
