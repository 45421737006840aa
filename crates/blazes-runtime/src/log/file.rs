//! [`FileLog`]: the log on local segment files (the format and its invariants are in the
//! `log` module's documentation): opening with recovery, appends with undo, durable reads,
//! trimming whole segments, the directory lock, and fault injection for the tests.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::crc::crc32c_update;
use super::{Log, LogError, RECORD_HEADER_LEN, Record};

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> LogError + '_ {
    move |source| LogError::Io {
        path: path.to_path_buf(),
        source,
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
#[non_exhaustive]
pub struct FileLogConfig {
    /// A new segment starts once the current one reaches this size.
    pub segment_bytes: u64,
    /// Largest payload accepted; also bounds what recovery believes a length field can say.
    pub max_record_bytes: usize,
    /// Durability policy.
    pub fsync: FsyncPolicy,
}

setters!(FileLogConfig {
    /// A new segment starts once the current one reaches this size (default: 64 MiB).
    segment_bytes: u64,
    /// Largest payload accepted; also bounds what recovery believes a length field can say
    /// (default: 16 MiB).
    max_record_bytes: usize,
    /// Durability policy (default: [`FsyncPolicy::EveryBatch`]).
    fsync: FsyncPolicy,
});

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
    /// Offset of the first record still held ([`Log::trim`] drops whole segments before it).
    first: u64,
    /// Per record from `first`: (segment index, byte position of its header). Keeps reads to
    /// one pread.
    index: Vec<(u32, u64)>,
    durable_end: u64,
    last_sync: Instant,
    recovery: RecoveryReport,
    /// Set when a failed fsync (or a failed undo) left the files in an unknown state.
    poisoned: bool,
    fault: Option<(IoOp, u32)>,
    /// Holds the directory's exclusive lock for as long as this handle lives.
    _lock: File,
}

/// A kind of file operation of [`Log::append_expected`] on a [`FileLog`], for fault injection.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoOp {
    /// Writing record bytes to a segment.
    Write,
    /// Creating a new segment on a roll.
    Create,
    /// An fsync of a segment or of the directory.
    Sync,
}

/// Where an append failed: before any fsync failed (it can be undone) or in an fsync.
enum Failure {
    Undoable(LogError),
    Sync(LogError),
}

const SEGMENT_SUFFIX: &str = ".seg";
const LOCK_FILE: &str = "LOCK";

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

fn sync_dir(dir: &Path) -> Result<(), LogError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_err(dir))
}

/// Reads exactly `buf.len()` bytes at `pos` without moving the file's cursor, so that reads
/// need only `&File` (positional reads: `pread` on Unix, `ReadFile` with an offset on Windows).
#[cfg(unix)]
fn read_exact_at(file: &File, buf: &mut [u8], pos: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, pos)
}

/// Windows has no `read_exact_at`: `seek_read` may read less than asked, so loop.
#[cfg(windows)]
fn read_exact_at(file: &File, mut buf: &mut [u8], mut pos: u64) -> std::io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        match file.seek_read(buf, pos)? {
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            n => {
                buf = &mut buf[n..];
                pos += n as u64;
            }
        }
    }
    Ok(())
}

/// Takes an exclusive, non-blocking lock on `dir/LOCK` (`flock` on Unix, `LockFileEx` on
/// Windows, through std). The system drops it when the file is closed or the process dies, so
/// a crash never leaves a stale lock behind.
fn lock_dir(dir: &Path) -> Result<File, LogError> {
    let path = dir.join(LOCK_FILE);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(io_err(&path))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(LogError::Locked {
            path: dir.to_path_buf(),
        }),
        Err(std::fs::TryLockError::Error(source)) => Err(LogError::Io { path, source }),
    }
}

impl FileLog {
    /// Opens (or creates) the log in `dir`, recovering from a torn or corrupt tail. Fails with
    /// [`LogError::Locked`] while another handle has the directory open.
    pub fn open(dir: impl AsRef<Path>, config: FileLogConfig) -> Result<Self, LogError> {
        let dir = dir.as_ref().to_path_buf();
        fs::create_dir_all(&dir).map_err(io_err(&dir))?;
        let lock = lock_dir(&dir)?;
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
            first: bases.first().copied().unwrap_or(0),
            index: Vec::new(),
            durable_end: 0,
            last_sync: Instant::now(),
            recovery: RecoveryReport::default(),
            poisoned: false,
            fault: None,
            _lock: lock,
        };
        let mut broken = false;
        for base in bases {
            let path = segment_path(&dir, base);
            if broken || base != log.end() {
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
                log.recovery.truncated_bytes += len - valid;
                broken = true;
            }
            // What the previous handle wrote may still sit in the page cache only (a process
            // crash loses no page-cache data, but a power cut after it would): what recovery
            // keeps is durable only once this returns.
            file.sync_all().map_err(io_err(&path))?;
            log.segments.push(Segment {
                path,
                file,
                len: valid,
            });
        }
        if broken {
            sync_dir(&dir)?;
        }
        log.durable_end = log.end();
        log.recovery.records = log.index.len() as u64;
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
                || offset != self.end()
                || record_crc(offset, &bytes[start..start + len]) != crc
            {
                break;
            }
            self.index.push((seg_idx, pos as u64));
            pos = start + len;
        }
        Ok(pos as u64)
    }

    /// Records held in segment `seg` (an index into `segments`).
    fn segment_records(&self, seg: usize) -> usize {
        let seg = seg as u32;
        let start = self.index.partition_point(|&(s, _)| s < seg);
        let end = self.index.partition_point(|&(s, _)| s <= seg);
        end - start
    }

    /// What recovery did when this log was opened.
    pub fn recovery(&self) -> &RecoveryReport {
        &self.recovery
    }

    /// Directory holding the segment files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Makes the `nth` (0-based) next file operation of kind `op` fail with an I/O error, once.
    /// Exists for the fault-injection tests of the append path.
    #[doc(hidden)]
    pub fn inject_fault(&mut self, op: IoOp, nth: u32) {
        self.fault = Some((op, nth));
    }

    fn fault(&mut self, op: IoOp) -> std::io::Result<()> {
        match &mut self.fault {
            Some((o, 0)) if *o == op => {
                self.fault = None;
                Err(std::io::Error::other("injected fault"))
            }
            Some((o, n)) if *o == op => {
                *n -= 1;
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn roll(&mut self) -> Result<(), Failure> {
        let base = self.end();
        let path = segment_path(&self.dir, base);
        let file = self
            .fault(IoOp::Create)
            .and_then(|_| {
                OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .open(&path)
            })
            .map_err(|e| Failure::Undoable(io_err(&path)(e)))?;
        self.segments.push(Segment { path, file, len: 0 });
        // The new file's directory entry must be durable before records in it can be.
        self.fault(IoOp::Sync)
            .map_err(io_err(&self.dir))
            .and_then(|_| sync_dir(&self.dir))
            .map_err(Failure::Sync)
    }

    fn fsync_tail(&mut self) -> Result<(), LogError> {
        // Earlier segments were synced before the roll away from them (see `write_batch`).
        let injected = self.fault(IoOp::Sync);
        if let Some(seg) = self.segments.last() {
            injected
                .and_then(|_| seg.file.sync_data())
                .map_err(io_err(&seg.path))?;
        }
        self.durable_end = self.end();
        self.last_sync = Instant::now();
        Ok(())
    }

    /// Writes the batch, rolling segments as needed; on failure says whether it can be undone.
    fn write_batch(&mut self, batch: &[&[u8]]) -> Result<Vec<u64>, Failure> {
        let mut offsets = Vec::with_capacity(batch.len());
        let mut buf = Vec::new();
        let mut i = 0;
        while i < batch.len() {
            match self.segments.last() {
                None => self.roll()?,
                Some(s) if s.len >= self.config.segment_bytes => {
                    if self.durable_end < self.end() {
                        // Keep "only the last segment can hold unsynced records" true.
                        self.fsync_tail().map_err(Failure::Sync)?;
                    }
                    self.roll()?;
                }
                Some(_) => {}
            }
            let seg_idx = (self.segments.len() - 1) as u32;
            let seg_len = self.segments[seg_idx as usize].len;
            buf.clear();
            let mut pos = seg_len;
            let first = i;
            while i < batch.len() && (pos < self.config.segment_bytes || pos == seg_len) {
                encode_header(self.end() + (i - first) as u64, batch[i], &mut buf);
                buf.extend_from_slice(batch[i]);
                pos = seg_len + buf.len() as u64;
                i += 1;
            }
            let injected = self.fault(IoOp::Write);
            let seg = &mut self.segments[seg_idx as usize];
            injected
                .and_then(|_| seg.file.seek(SeekFrom::Start(seg.len)))
                .and_then(|_| seg.file.write_all(&buf))
                .map_err(|e| Failure::Undoable(io_err(&seg.path)(e)))?;
            seg.len = pos;
            // Index only what is written, so the index never names bytes that are not there.
            let mut at = seg_len;
            for p in &batch[first..i] {
                offsets.push(self.end());
                self.index.push((seg_idx, at));
                at += (RECORD_HEADER_LEN + p.len()) as u64;
            }
        }
        let due = match self.config.fsync {
            FsyncPolicy::EveryBatch => true,
            FsyncPolicy::Interval(every) => self.last_sync.elapsed() >= every,
            FsyncPolicy::Manual => false,
        };
        if due {
            self.fsync_tail().map_err(Failure::Sync)?;
        }
        Ok(offsets)
    }

    /// Undoes a partly written batch: cuts the segment it started in back to `seg_len`, removes
    /// segments it created, forgets its records, and makes all of that durable (a record the
    /// batch had fsynced before the failure must not come back after a crash). If the undo
    /// itself fails, the handle is poisoned.
    fn undo(&mut self, index_len: usize, segments: usize, seg_len: Option<u64>) {
        let mut undo = || -> std::io::Result<()> {
            let removed = self.segments.len() > segments;
            for seg in self.segments.drain(segments..) {
                fs::remove_file(&seg.path)?;
            }
            if let (Some(seg), Some(len)) = (self.segments.last_mut(), seg_len)
                && seg.len != len
            {
                seg.file.set_len(len)?;
                seg.file.sync_all()?;
                seg.len = len;
            }
            if removed {
                File::open(&self.dir)?.sync_all()?;
            }
            Ok(())
        };
        if undo().is_err() {
            self.poisoned = true;
        }
        self.index.truncate(index_len);
        self.durable_end = self.durable_end.min(self.first + index_len as u64);
    }
}

impl Log for FileLog {
    fn append_expected(
        &mut self,
        batch: &[&[u8]],
        expected_end: u64,
    ) -> Result<Vec<u64>, LogError> {
        if self.poisoned {
            return Err(LogError::Poisoned);
        }
        let end = self.end();
        if expected_end != end {
            return Err(LogError::Conflict {
                expected: expected_end,
                actual: end,
            });
        }
        if let Some(p) = batch
            .iter()
            .find(|p| p.len() > self.config.max_record_bytes)
        {
            return Err(LogError::RecordTooLarge {
                len: p.len(),
                max: self.config.max_record_bytes,
            });
        }
        let mark = (
            self.index.len(),
            self.segments.len(),
            self.segments.last().map(|s| s.len),
        );
        match self.write_batch(batch) {
            Ok(offsets) => Ok(offsets),
            Err(Failure::Undoable(e)) => {
                self.undo(mark.0, mark.1, mark.2);
                Err(e)
            }
            Err(Failure::Sync(e)) => {
                // After a failed fsync the kernel may have dropped the dirty pages or kept
                // them; nothing this handle believes about the tail is reliable any more.
                self.poisoned = true;
                Err(e)
            }
        }
    }

    fn read_durable(&self, offset: u64, max: usize) -> Result<Vec<Record>, LogError> {
        if offset < self.first {
            return Err(LogError::Trimmed {
                offset,
                first: self.first,
            });
        }
        let start = usize::try_from(offset - self.first).unwrap_or(usize::MAX);
        let durable = usize::try_from(self.durable_end - self.first).unwrap_or(usize::MAX);
        let mut out = Vec::new();
        for (i, &(seg_idx, pos)) in self.index[..durable.min(self.index.len())]
            .iter()
            .enumerate()
            .skip(start)
            .take(max)
        {
            let i = self.first + i as u64;
            let seg = &self.segments[seg_idx as usize];
            let mut header = [0u8; RECORD_HEADER_LEN];
            read_exact_at(&seg.file, &mut header, pos).map_err(io_err(&seg.path))?;
            let len = u32::from_le_bytes(header[0..4].try_into().expect("4 bytes")) as usize;
            let crc = u32::from_le_bytes(header[4..8].try_into().expect("4 bytes"));
            let rec_offset = u64::from_le_bytes(header[8..16].try_into().expect("8 bytes"));
            if len > self.config.max_record_bytes || rec_offset != i {
                return Err(LogError::Corrupt { offset: i });
            }
            let mut payload = vec![0u8; len];
            read_exact_at(&seg.file, &mut payload, pos + RECORD_HEADER_LEN as u64)
                .map_err(io_err(&seg.path))?;
            if record_crc(rec_offset, &payload) != crc {
                return Err(LogError::Corrupt { offset: i });
            }
            out.push(Record { offset: i, payload });
        }
        Ok(out)
    }

    fn first(&self) -> u64 {
        self.first
    }

    fn end(&self) -> u64 {
        self.first + self.index.len() as u64
    }

    fn durable_end(&self) -> u64 {
        self.durable_end
    }

    fn sync(&mut self) -> Result<(), LogError> {
        if self.poisoned {
            return Err(LogError::Poisoned);
        }
        if self.durable_end < self.end()
            && let Err(e) = self.fsync_tail()
        {
            self.poisoned = true;
            return Err(e);
        }
        Ok(())
    }

    fn trim(&mut self, before: u64) -> Result<(), LogError> {
        if self.poisoned {
            return Err(LogError::Poisoned);
        }
        let before = before.min(self.durable_end);
        // Whole segments whose every record lies below `before`, oldest first, never the one
        // appends go to. Removing the oldest first keeps the remaining files contiguous if a
        // crash interrupts the removal.
        let mut dropped = 0usize;
        let mut records = 0usize;
        let mut failed = None;
        while dropped + 1 < self.segments.len() {
            let held = self.segment_records(dropped);
            if self.first + (records + held) as u64 > before {
                break;
            }
            let path = &self.segments[dropped].path;
            if let Err(e) = fs::remove_file(path) {
                // The files removed so far are gone: account for them, then report.
                failed = Some(io_err(path)(e));
                break;
            }
            records += held;
            dropped += 1;
        }
        if dropped == 0 {
            return failed.map_or(Ok(()), Err);
        }
        self.segments.drain(..dropped);
        self.index.drain(..records);
        for entry in &mut self.index {
            entry.0 -= dropped as u32;
        }
        self.first += records as u64;
        failed.map_or(Ok(()), Err)?;
        sync_dir(&self.dir)
    }
}
