//! Durable append-only log: the substrate of every ordering mechanism.
//!
//! A log assigns each appended record a dense offset (0, 1, 2, ...) and returns records in offset
//! order to every reader. The [`Log`] trait is deliberately small (append, read from an offset,
//! the durable end, sync) because it is the seam where a distributed engine plugs in later.
//!
//! [`FileLog`] stores records in segment files named by their first offset. Each record is
//! `len: u32 | crc32c: u32 | offset: u64 | payload`, all little-endian, where the CRC covers the
//! offset and the payload. Invariants:
//! - offsets are dense and strictly increasing across segments;
//! - a record at an offset below [`Log::durable_end`] has been fsynced and survives a crash;
//! - recovery on open keeps the longest valid prefix (length in bounds, CRC matches, offset is
//!   the expected one) and truncates everything after it, so a torn or corrupt tail never
//!   produces a garbage record and never hides an acknowledged one.
//!
//! [`MemLog`] has the same semantics without files, for tests and model checking.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Header bytes in front of every payload: length, CRC32C, offset.
pub const RECORD_HEADER_LEN: usize = 4 + 4 + 8;

/// Errors of a log.
#[derive(Debug, thiserror::Error)]
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
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> LogError + '_ {
    move |source| LogError::Io {
        path: path.to_path_buf(),
        source,
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

/// An append-only, totally ordered log.
pub trait Log {
    /// Appends a batch atomically in order and returns the offsets assigned to its records.
    /// Whether the batch is durable on return depends on the implementation's sync policy; it is
    /// durable once [`Log::durable_end`] exceeds its last offset.
    fn append(&mut self, batch: &[&[u8]]) -> Result<Vec<u64>, LogError>;
    /// Returns up to `max` records starting at `offset`, in offset order.
    fn read_from(&self, offset: u64, max: usize) -> Result<Vec<Record>, LogError>;
    /// Offset one past the last appended record.
    fn end(&self) -> u64;
    /// Offset one past the last durable record: every record below it survives a crash.
    fn durable_end(&self) -> u64;
    /// Makes every appended record durable.
    fn sync(&mut self) -> Result<(), LogError>;
}

/// In-memory log: every append is immediately "durable" (there is nothing to crash).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct MemLog {
    records: Vec<Vec<u8>>,
}

impl MemLog {
    /// An empty log.
    pub fn new() -> Self {
        Self::default()
    }
}

impl Log for MemLog {
    fn append(&mut self, batch: &[&[u8]]) -> Result<Vec<u64>, LogError> {
        let first = self.records.len() as u64;
        self.records.extend(batch.iter().map(|p| p.to_vec()));
        Ok((first..first + batch.len() as u64).collect())
    }

    fn read_from(&self, offset: u64, max: usize) -> Result<Vec<Record>, LogError> {
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        Ok(self
            .records
            .iter()
            .enumerate()
            .skip(start)
            .take(max)
            .map(|(i, p)| Record {
                offset: i as u64,
                payload: p.clone(),
            })
            .collect())
    }

    fn end(&self) -> u64 {
        self.records.len() as u64
    }

    fn durable_end(&self) -> u64 {
        self.end()
    }

    fn sync(&mut self) -> Result<(), LogError> {
        Ok(())
    }
}

/// When a [`FileLog`] calls fsync.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsyncPolicy {
    /// After every appended batch: an append returns only once it is durable.
    EveryBatch,
    /// At the first append at least this long after the previous fsync, and on [`Log::sync`].
    /// Trades a bounded window of loss on crash for throughput.
    Interval(Duration),
    /// Only on an explicit [`Log::sync`] (the caller decides, e.g. per group commit).
    Manual,
}

/// Configuration of a [`FileLog`].
#[derive(Debug, Clone)]
pub struct FileLogConfig {
    /// A new segment starts once the current one reaches this size.
    pub segment_bytes: u64,
    /// Largest payload accepted; also bounds what recovery believes a length field can say.
    pub max_record_bytes: usize,
    /// Durability policy.
    pub fsync: FsyncPolicy,
}

impl Default for FileLogConfig {
    fn default() -> Self {
        Self {
            segment_bytes: 64 << 20,
            max_record_bytes: 16 << 20,
            fsync: FsyncPolicy::EveryBatch,
        }
    }
}

/// What recovery found when opening a [`FileLog`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// Valid records kept.
    pub records: u64,
    /// Bytes cut from a torn or corrupt tail (including whole segments removed after it).
    pub truncated_bytes: u64,
}

#[derive(Debug)]
struct Segment {
    path: PathBuf,
    file: File,
    len: u64,
}

/// Append-only log on local segment files.
#[derive(Debug)]
pub struct FileLog {
    dir: PathBuf,
    config: FileLogConfig,
    segments: Vec<Segment>,
    /// Per record: (segment index, byte position of its header). Keeps reads to one pread.
    index: Vec<(u32, u64)>,
    durable_end: u64,
    last_sync: Instant,
    recovery: RecoveryReport,
}

const SEGMENT_SUFFIX: &str = ".seg";

fn segment_path(dir: &Path, base: u64) -> PathBuf {
    dir.join(format!("{base:020}{SEGMENT_SUFFIX}"))
}

fn encode_header(offset: u64, payload: &[u8], out: &mut Vec<u8>) {
    let crc = record_crc(offset, payload);
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(&offset.to_le_bytes());
}

fn record_crc(offset: u64, payload: &[u8]) -> u32 {
    !crc32c_update(crc32c_update(!0, &offset.to_le_bytes()), payload)
}

impl FileLog {
    /// Opens (or creates) the log in `dir`, recovering from a torn or corrupt tail.
    pub fn open(dir: impl AsRef<Path>, config: FileLogConfig) -> Result<Self, LogError> {
        let dir = dir.as_ref().to_path_buf();
        fs::create_dir_all(&dir).map_err(io_err(&dir))?;
        let mut bases = Vec::new();
        for entry in fs::read_dir(&dir).map_err(io_err(&dir))? {
            let entry = entry.map_err(io_err(&dir))?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if let Some(stem) = name.strip_suffix(SEGMENT_SUFFIX)
                && let Ok(base) = stem.parse::<u64>()
            {
                bases.push(base);
            }
        }
        bases.sort_unstable();

        let mut log = FileLog {
            dir: dir.clone(),
            config,
            segments: Vec::new(),
            index: Vec::new(),
            durable_end: 0,
            last_sync: Instant::now(),
            recovery: RecoveryReport::default(),
        };
        let mut broken = false;
        for base in bases {
            let path = segment_path(&dir, base);
            if broken || base != log.index.len() as u64 {
                // Everything after the first damage is unreachable: a later segment cannot
                // continue a log whose earlier records are gone.
                let len = fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
                log.recovery.truncated_bytes += len;
                fs::remove_file(&path).map_err(io_err(&path))?;
                broken = true;
                continue;
            }
            let valid = log.scan_segment(&path)?;
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .open(&path)
                .map_err(io_err(&path))?;
            let len = file.metadata().map_err(io_err(&path))?.len();
            if valid < len {
                file.set_len(valid).map_err(io_err(&path))?;
                file.sync_all().map_err(io_err(&path))?;
                log.recovery.truncated_bytes += len - valid;
                broken = true;
            }
            log.segments.push(Segment {
                path,
                file,
                len: valid,
            });
        }
        if broken {
            File::open(&dir)
                .and_then(|d| d.sync_all())
                .map_err(io_err(&dir))?;
        }
        log.durable_end = log.index.len() as u64;
        log.recovery.records = log.durable_end;
        Ok(log)
    }

    /// Reads one segment, indexing its valid prefix; returns the byte length of that prefix.
    fn scan_segment(&mut self, path: &Path) -> Result<u64, LogError> {
        let mut bytes = Vec::new();
        File::open(path)
            .and_then(|mut f| f.read_to_end(&mut bytes))
            .map_err(io_err(path))?;
        let seg_idx = self.segments.len() as u32;
        let mut pos = 0usize;
        while bytes.len() - pos >= RECORD_HEADER_LEN {
            let len = u32::from_le_bytes(bytes[pos..pos + 4].try_into().expect("4 bytes")) as usize;
            let crc = u32::from_le_bytes(bytes[pos + 4..pos + 8].try_into().expect("4 bytes"));
            let offset = u64::from_le_bytes(bytes[pos + 8..pos + 16].try_into().expect("8 bytes"));
            let start = pos + RECORD_HEADER_LEN;
            if len > self.config.max_record_bytes
                || bytes.len() - start < len
                || offset != self.index.len() as u64
                || record_crc(offset, &bytes[start..start + len]) != crc
            {
                break;
            }
            self.index.push((seg_idx, pos as u64));
            pos = start + len;
        }
        Ok(pos as u64)
    }

    /// What recovery did when this log was opened.
    pub fn recovery(&self) -> &RecoveryReport {
        &self.recovery
    }

    /// Directory holding the segment files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn roll_if_needed(&mut self) -> Result<(), LogError> {
        let need_new = match self.segments.last() {
            None => true,
            Some(s) => s.len >= self.config.segment_bytes,
        };
        if need_new {
            let base = self.index.len() as u64;
            let path = segment_path(&self.dir, base);
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .open(&path)
                .map_err(io_err(&path))?;
            // The new file's directory entry must be durable before records in it can be.
            File::open(&self.dir)
                .and_then(|d| d.sync_all())
                .map_err(io_err(&self.dir))?;
            self.segments.push(Segment { path, file, len: 0 });
        }
        Ok(())
    }

    fn fsync_tail(&mut self) -> Result<(), LogError> {
        // Earlier segments were synced before the roll away from them (see `append`).
        if let Some(seg) = self.segments.last() {
            seg.file.sync_data().map_err(io_err(&seg.path))?;
        }
        self.durable_end = self.index.len() as u64;
        self.last_sync = Instant::now();
        Ok(())
    }
}

impl Log for FileLog {
    fn append(&mut self, batch: &[&[u8]]) -> Result<Vec<u64>, LogError> {
        if let Some(p) = batch
            .iter()
            .find(|p| p.len() > self.config.max_record_bytes)
        {
            return Err(LogError::RecordTooLarge {
                len: p.len(),
                max: self.config.max_record_bytes,
            });
        }
        let mut offsets = Vec::with_capacity(batch.len());
        let mut buf = Vec::new();
        let mut i = 0;
        while i < batch.len() {
            let rolling = self
                .segments
                .last()
                .is_some_and(|s| s.len >= self.config.segment_bytes);
            if rolling && self.durable_end < self.index.len() as u64 {
                // Keep "only the last segment can hold unsynced records" true.
                self.fsync_tail()?;
            }
            self.roll_if_needed()?;
            let seg_idx = (self.segments.len() - 1) as u32;
            let seg_len = self.segments[seg_idx as usize].len;
            buf.clear();
            let mut pos = seg_len;
            while i < batch.len() && (pos < self.config.segment_bytes || pos == seg_len) {
                let offset = self.index.len() as u64;
                encode_header(offset, batch[i], &mut buf);
                buf.extend_from_slice(batch[i]);
                self.index.push((seg_idx, pos));
                offsets.push(offset);
                pos = seg_len + buf.len() as u64;
                i += 1;
            }
            let seg = &mut self.segments[seg_idx as usize];
            let write = seg
                .file
                .seek(SeekFrom::Start(seg.len))
                .and_then(|_| seg.file.write_all(&buf));
            if let Err(source) = write {
                // Forget the records we could not write so offsets stay dense on retry.
                self.index.truncate(offsets[0] as usize);
                return Err(LogError::Io {
                    path: seg.path.clone(),
                    source,
                });
            }
            seg.len = pos;
        }
        match self.config.fsync {
            FsyncPolicy::EveryBatch => self.fsync_tail()?,
            FsyncPolicy::Interval(every) if self.last_sync.elapsed() >= every => {
                self.fsync_tail()?
            }
            FsyncPolicy::Interval(_) | FsyncPolicy::Manual => {}
        }
        Ok(offsets)
    }

    fn read_from(&self, offset: u64, max: usize) -> Result<Vec<Record>, LogError> {
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        let mut out = Vec::new();
        for (i, &(seg_idx, pos)) in self.index.iter().enumerate().skip(start).take(max) {
            let seg = &self.segments[seg_idx as usize];
            let mut header = [0u8; RECORD_HEADER_LEN];
            seg.file
                .read_exact_at(&mut header, pos)
                .map_err(io_err(&seg.path))?;
            let len = u32::from_le_bytes(header[0..4].try_into().expect("4 bytes")) as usize;
            let crc = u32::from_le_bytes(header[4..8].try_into().expect("4 bytes"));
            let rec_offset = u64::from_le_bytes(header[8..16].try_into().expect("8 bytes"));
            if len > self.config.max_record_bytes || rec_offset != i as u64 {
                return Err(LogError::Corrupt { offset: i as u64 });
            }
            let mut payload = vec![0u8; len];
            seg.file
                .read_exact_at(&mut payload, pos + RECORD_HEADER_LEN as u64)
                .map_err(io_err(&seg.path))?;
            if record_crc(rec_offset, &payload) != crc {
                return Err(LogError::Corrupt { offset: i as u64 });
            }
            out.push(Record {
                offset: i as u64,
                payload,
            });
        }
        Ok(out)
    }

    fn end(&self) -> u64 {
        self.index.len() as u64
    }

    fn durable_end(&self) -> u64 {
        self.durable_end
    }

    fn sync(&mut self) -> Result<(), LogError> {
        if self.durable_end < self.index.len() as u64 {
            self.fsync_tail()?;
        }
        Ok(())
    }
}

/// CRC32C (Castagnoli) table, computed at compile time.
const CRC32C_TABLE: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = i as u32;
        let mut k = 0;
        while k < 8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0x82F6_3B78
            } else {
                crc >> 1
            };
            k += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
};

fn crc32c_update(mut crc: u32, bytes: &[u8]) -> u32 {
    for &b in bytes {
        crc = CRC32C_TABLE[((crc ^ b as u32) & 0xFF) as usize] ^ (crc >> 8);
    }
    crc
}

/// CRC32C of `bytes` (the checksum the log stores, exposed so tools can verify segments).
pub fn crc32c(bytes: &[u8]) -> u32 {
    !crc32c_update(!0, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32c_matches_the_standard_check_value() {
        // RFC 3720 / iSCSI check value for "123456789".
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
        assert_ne!(crc32c(b"123456780"), 0xE306_9283);
    }

    #[test]
    fn mem_log_reads_in_offset_order() {
        let mut log = MemLog::new();
        assert_eq!(log.append(&[b"a", b"b"]).unwrap(), vec![0, 1]);
        assert_eq!(log.append(&[b"c"]).unwrap(), vec![2]);
        let got: Vec<_> = log.read_from(1, 10).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].payload, b"b");
        assert_eq!(got[1].offset, 2);
    }
}
