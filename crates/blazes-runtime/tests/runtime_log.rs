//! Durable log: acknowledged records survive torn and corrupt tails.
//!
//! The property test appends acknowledged (synced) batches and then unacknowledged ones, then
//! simulates a crash by cutting or corrupting the segment files at a random byte position past
//! the durable point, reopens, and checks that every acknowledged record is intact and that
//! anything after it is a prefix of what was appended. The negative control cuts *inside* the
//! durable region and checks that the same checker reports the loss.

use std::fs::{self, OpenOptions};
use std::path::{Path, PathBuf};

use blazes_runtime::log::RECORD_HEADER_LEN;
use blazes_runtime::{FileLog, FileLogConfig, FsyncPolicy, Log, LogError, MemLog};
use proptest::prelude::*;

fn config(segment_bytes: u64) -> FileLogConfig {
    FileLogConfig::default()
        .segment_bytes(segment_bytes)
        .max_record_bytes(1024)
        .fsync(FsyncPolicy::Manual)
}

fn segments(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "seg"))
        .collect();
    v.sort();
    v
}

#[derive(Debug, Clone, Copy)]
enum Damage {
    Truncate,
    FlipByte,
}

/// Damages the concatenation of all segments at global byte `pos`.
fn damage(dir: &Path, pos: u64, how: Damage) {
    let mut start = 0;
    for seg in segments(dir) {
        let len = fs::metadata(&seg).unwrap().len();
        if pos < start + len || (pos == start + len && matches!(how, Damage::Truncate)) {
            let local = pos - start;
            match how {
                Damage::Truncate => {
                    let f = OpenOptions::new().write(true).open(&seg).unwrap();
                    f.set_len(local).unwrap();
                }
                Damage::FlipByte => {
                    let mut bytes = fs::read(&seg).unwrap();
                    bytes[local as usize] ^= 0x5A;
                    fs::write(&seg, bytes).unwrap();
                }
            }
            return;
        }
        start += len;
    }
}

fn read_all(log: &impl Log) -> Vec<Vec<u8>> {
    log.read_durable(0, usize::MAX)
        .unwrap()
        .into_iter()
        .map(|r| r.payload)
        .collect()
}

/// Checks recovery: `None` if every acknowledged record survived and the rest is a prefix of the
/// unacknowledged appends; otherwise a description of the violation.
fn check_recovered(
    recovered: &[Vec<u8>],
    acked: &[Vec<u8>],
    unacked: &[Vec<u8>],
) -> Option<String> {
    if recovered.len() < acked.len() {
        return Some(format!(
            "lost acknowledged records: {} of {} survived",
            recovered.len(),
            acked.len()
        ));
    }
    if recovered[..acked.len()] != *acked {
        return Some("acknowledged records changed".into());
    }
    let rest = &recovered[acked.len()..];
    if rest.len() > unacked.len() || rest != &unacked[..rest.len()] {
        return Some("records after the durable point are not a prefix of the appends".into());
    }
    None
}

fn payloads() -> impl Strategy<Value = Vec<Vec<Vec<u8>>>> {
    prop::collection::vec(
        prop::collection::vec(prop::collection::vec(any::<u8>(), 0..40), 1..4),
        1..5,
    )
}

struct Crashed {
    _dir: tempfile::TempDir,
    path: PathBuf,
    acked: Vec<Vec<u8>>,
    unacked: Vec<Vec<u8>>,
    durable_bytes: u64,
    total_bytes: u64,
}

fn run_until_crash(
    acked_batches: &[Vec<Vec<u8>>],
    unacked_batches: &[Vec<Vec<u8>>],
    seg: u64,
) -> Crashed {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log");
    let mut log = FileLog::open(&path, config(seg)).unwrap();
    let mut appended = Vec::new();
    for b in acked_batches {
        let refs: Vec<&[u8]> = b.iter().map(Vec::as_slice).collect();
        log.append(&refs).unwrap();
        log.sync().unwrap();
        appended.extend(b.iter().cloned());
    }
    for b in unacked_batches {
        let refs: Vec<&[u8]> = b.iter().map(Vec::as_slice).collect();
        log.append(&refs).unwrap();
        appended.extend(b.iter().cloned());
    }
    // Acknowledged = durable at the moment of the crash (segment rolls also sync).
    let durable = log.durable_end() as usize;
    drop(log);
    let durable_bytes: u64 = appended[..durable]
        .iter()
        .map(|p| (RECORD_HEADER_LEN + p.len()) as u64)
        .sum();
    let total_bytes: u64 = appended
        .iter()
        .map(|p| (RECORD_HEADER_LEN + p.len()) as u64)
        .sum();
    Crashed {
        _dir: dir,
        path,
        acked: appended[..durable].to_vec(),
        unacked: appended[durable..].to_vec(),
        durable_bytes,
        total_bytes,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn acknowledged_records_survive_torn_tails(
        acked in payloads(),
        unacked in payloads(),
        seg in prop_oneof![Just(64u64), Just(256), Just(1 << 20)],
        cut in 0.0f64..=1.0,
        flip in any::<bool>(),
    ) {
        let c = run_until_crash(&acked, &unacked, seg);
        let span = c.total_bytes - c.durable_bytes;
        let pos = c.durable_bytes + (span as f64 * cut) as u64;
        let how = if flip && pos < c.total_bytes { Damage::FlipByte } else { Damage::Truncate };
        damage(&c.path, pos, how);

        let mut log = FileLog::open(&c.path, config(seg)).unwrap();
        let recovered = read_all(&log);
        prop_assert_eq!(check_recovered(&recovered, &c.acked, &c.unacked), None);
        prop_assert_eq!(log.durable_end(), recovered.len() as u64);

        // The recovered log keeps working: offsets continue densely and survive another reopen.
        let next = log.append(&[b"after"]).unwrap();
        prop_assert_eq!(next, vec![recovered.len() as u64]);
        log.sync().unwrap();
        drop(log);
        let log = FileLog::open(&c.path, config(seg)).unwrap();
        let again = read_all(&log);
        prop_assert_eq!(&again[..recovered.len()], &recovered[..]);
        prop_assert_eq!(again.last().unwrap().as_slice(), b"after");
    }
}

/// Negative control: damage inside the acknowledged region is a loss, and the checker says so.
#[test]
fn negative_control_damage_before_durable_point_is_detected() {
    let acked = vec![
        vec![b"one".to_vec(), b"two".to_vec()],
        vec![b"three".to_vec()],
    ];
    let unacked = vec![vec![b"four".to_vec()]];
    for how in [Damage::Truncate, Damage::FlipByte] {
        let c = run_until_crash(&acked, &unacked, 64);
        assert!(c.durable_bytes > 10);
        damage(&c.path, c.durable_bytes - 10, how);
        let log = FileLog::open(&c.path, config(64)).unwrap();
        assert!(log.recovery().truncated_bytes > 0);
        let recovered = read_all(&log);
        assert!(
            check_recovered(&recovered, &c.acked, &c.unacked).is_some(),
            "{how:?} inside the durable region must be reported as a loss"
        );
    }
}

#[test]
fn garbage_segments_and_bogus_lengths_are_recovered_not_panicked() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = FileLog::open(dir.path(), config(1 << 20)).unwrap();
    log.append(&[b"a", b"bb"]).unwrap();
    log.sync().unwrap();
    drop(log);
    // A header claiming a 4 GiB record, and a stray segment that does not continue the log.
    let seg = &segments(dir.path())[0];
    let mut bytes = fs::read(seg).unwrap();
    bytes.extend_from_slice(&u32::MAX.to_le_bytes());
    bytes.extend_from_slice(&[0u8; 20]);
    fs::write(seg, bytes).unwrap();
    fs::write(dir.path().join(format!("{:020}.seg", 99)), b"junk").unwrap();
    let log = FileLog::open(dir.path(), config(1 << 20)).unwrap();
    assert_eq!(read_all(&log), vec![b"a".to_vec(), b"bb".to_vec()]);
    assert_eq!(log.recovery().truncated_bytes, 24 + 4);
    assert_eq!(segments(dir.path()).len(), 1);
}

#[test]
fn oversized_records_are_refused_with_a_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = FileLog::open(dir.path(), config(1 << 20)).unwrap();
    let big = vec![0u8; 2000];
    assert!(matches!(
        log.append(&[&big]),
        Err(LogError::RecordTooLarge {
            len: 2000,
            max: 1024
        })
    ));
    assert_eq!(log.end(), 0);
}

#[test]
fn every_batch_policy_is_durable_on_return_and_matches_mem_log() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(100).fsync(FsyncPolicy::EveryBatch);
    let mut file = FileLog::open(dir.path(), cfg.clone()).unwrap();
    let mut mem = MemLog::new();
    for i in 0..50u32 {
        let p = i.to_le_bytes();
        assert_eq!(
            file.append(&[&p, b"x"]).unwrap(),
            mem.append(&[&p, b"x"]).unwrap()
        );
        assert_eq!(file.durable_end(), file.end());
    }
    assert!(segments(dir.path()).len() > 1, "small segments must roll");
    assert_eq!(
        file.read_durable(37, 5).unwrap(),
        mem.read_durable(37, 5).unwrap()
    );
    drop(file);
    let file = FileLog::open(dir.path(), cfg).unwrap();
    assert_eq!(read_all(&file), read_all(&mem));
}

#[test]
fn interval_policy_defers_durability_until_due_or_synced() {
    let dir = tempfile::tempdir().unwrap();
    let hour = config(1 << 20).fsync(FsyncPolicy::Interval(std::time::Duration::from_secs(3600)));
    let mut log = FileLog::open(dir.path().join("a"), hour).unwrap();
    log.append(&[b"x", b"y"]).unwrap();
    assert_eq!(
        (log.end(), log.durable_end()),
        (2, 0),
        "not due yet: not acknowledged"
    );
    log.sync().unwrap();
    assert_eq!(log.durable_end(), 2);

    let due = config(1 << 20).fsync(FsyncPolicy::Interval(std::time::Duration::ZERO));
    let mut log = FileLog::open(dir.path().join("b"), due).unwrap();
    log.append(&[b"x"]).unwrap();
    assert_eq!(log.durable_end(), 1, "an elapsed interval syncs on append");
}

// ---------------------------------------------------------------- failures inside `append`
//
// Each test drives the real append path with one file operation made to fail (`inject_fault`),
// then checks that the log's in-memory view, its files and a reopened log agree, and that a
// caller retrying the failed batch ends with every record exactly once.

use blazes_runtime::log::IoOp;
use blazes_runtime::{Envelope, Sequencer, Submitted};

/// Records of 20 payload bytes (36 with the header): two fill a 64-byte segment, so a batch of
/// four writes two records, rolls, and writes two more.
fn rec(i: u8) -> Vec<u8> {
    vec![i; 20]
}

fn every_batch(seg: u64) -> FileLogConfig {
    config(seg).fsync(FsyncPolicy::EveryBatch)
}

#[test]
fn failed_write_after_a_roll_leaves_no_trace() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = FileLog::open(dir.path(), every_batch(64)).unwrap();
    let batch = [rec(1), rec(2), rec(3), rec(4)];
    let refs: Vec<&[u8]> = batch.iter().map(Vec::as_slice).collect();
    // Write 0 fills the first segment; write 1 goes to the segment the roll created.
    log.inject_fault(IoOp::Write, 1);
    assert!(log.append(&refs).is_err());
    assert_eq!(log.end(), 0, "a failed batch leaves nothing behind");
    assert!(log.durable_end() <= log.end(), "durable_end past the end");
    assert_eq!(log.append(&[&rec(9)]).unwrap(), vec![0]);
    assert_eq!(read_all(&log), vec![rec(9)]);
    drop(log);
    let log = FileLog::open(dir.path(), every_batch(64)).unwrap();
    assert_eq!(log.recovery().truncated_bytes, 0, "{:?}", log.recovery());
    assert_eq!(read_all(&log), vec![rec(9)]);
}

#[test]
fn failed_roll_leaves_no_trace() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = FileLog::open(dir.path(), every_batch(64)).unwrap();
    log.append(&[&rec(0)]).unwrap();
    let batch = [rec(1), rec(2), rec(3)];
    let refs: Vec<&[u8]> = batch.iter().map(Vec::as_slice).collect();
    // Create 0 is the roll after record 1 fills the first segment.
    log.inject_fault(IoOp::Create, 0);
    assert!(log.append(&refs).is_err());
    assert_eq!(log.end(), 1);
    assert_eq!(log.append(&refs).unwrap(), vec![1, 2, 3]);
    drop(log);
    let log = FileLog::open(dir.path(), every_batch(64)).unwrap();
    assert_eq!(read_all(&log), vec![rec(0), rec(1), rec(2), rec(3)]);
}

fn envelopes(seqs: std::ops::RangeInclusive<u64>) -> Vec<Envelope> {
    seqs.map(|seq| Envelope {
        producer: 7,
        epoch: 0,
        seq,
        payload: vec![seq as u8; 20],
    })
    .collect()
}

/// Submits `batch` once with `op` failing, then retries until it succeeds (reopening the log
/// when it asks for that), and returns every sequence number in the final log.
fn retried_submission(op: IoOp, nth: u32) -> Vec<u64> {
    let dir = tempfile::tempdir().unwrap();
    let mut log = FileLog::open(dir.path(), every_batch(64)).unwrap();
    log.inject_fault(op, nth);
    let mut seq = Sequencer::open(log).unwrap();
    let batch = envelopes(1..=3);
    assert!(seq.submit(&batch).is_err(), "the fault must surface");
    let mut acked = false;
    for _ in 0..2 {
        match seq.submit(&batch) {
            Ok(out) => {
                assert!(
                    out.iter()
                        .all(|s| matches!(s, Submitted::Appended(_) | Submitted::Duplicate))
                );
                acked = true;
                break;
            }
            Err(_) => {
                // The log refuses until reopened: recovery decides what the failed batch left.
                drop(seq);
                let log = FileLog::open(dir.path(), every_batch(64)).unwrap();
                seq = Sequencer::open(log).unwrap();
            }
        }
    }
    assert!(acked, "a retry after reopening must succeed");
    let log = seq.into_log();
    read_all(&log)
        .iter()
        .map(|p| Envelope::decode(p).unwrap().seq)
        .collect()
}

#[test]
fn a_retry_after_a_failed_roll_appends_each_message_once() {
    // Create 0 makes the first segment; create 1 is the roll after two records filled it.
    assert_eq!(retried_submission(IoOp::Create, 1), vec![1, 2, 3]);
}

#[test]
fn a_retry_after_a_failed_fsync_appends_each_message_once() {
    // On an empty log a batch of three: create the first segment and fsync the directory (sync
    // 0), write two records, fsync them before the roll (sync 1), create the next segment and
    // fsync the directory (sync 2), write the third, fsync it (sync 3). Each failure leaves the
    // batch's fate to the log's own recovery, and the retry must not add a second copy.
    for nth in [0, 1, 2, 3] {
        assert_eq!(
            retried_submission(IoOp::Sync, nth),
            vec![1, 2, 3],
            "sync #{nth}"
        );
    }
}

#[test]
fn a_second_open_of_the_same_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let log = FileLog::open(dir.path(), config(1 << 20)).unwrap();
    let err = FileLog::open(dir.path(), config(1 << 20)).unwrap_err();
    assert!(err.to_string().contains("in use"), "{err}");
    drop(log);
    // Negative control: once the first handle is gone the directory opens again.
    FileLog::open(dir.path(), config(1 << 20)).unwrap();
}

/// `trim` drops whole durable segments below the cut, never the segment appends go to and never
/// an unsynced record; offsets of the rest, reads, appends and a reopen carry on from `first`.
/// Control: the same log untrimmed keeps every segment.
#[test]
fn trim_drops_whole_durable_segments_and_survives_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let payload = [7u8; 40];
    let mut log = FileLog::open(dir.path(), config(200)).unwrap();
    for _ in 0..20 {
        log.append(&[&payload]).unwrap();
    }
    log.sync().unwrap();
    log.append(&[&payload]).unwrap(); // offset 20, not durable
    let before = segments(dir.path()).len();
    assert!(before >= 5, "{before} segments");

    log.trim(13).unwrap();
    let first = log.first();
    assert!(first > 0 && first <= 13, "first {first}");
    let left = segments(dir.path());
    assert!(left.len() < before);
    assert_eq!(
        left[0]
            .file_stem()
            .unwrap()
            .to_str()
            .unwrap()
            .parse::<u64>(),
        Ok(first),
        "the oldest file left starts at first"
    );
    assert!(matches!(
        log.read_durable(0, 1),
        Err(LogError::Trimmed { offset: 0, .. })
    ));
    assert_eq!(
        log.read_durable(first, 100).unwrap().len() as u64,
        20 - first
    );
    // An unsynced record is never trimmed, whatever the cut says.
    log.trim(u64::MAX).unwrap();
    assert!(log.first() <= 20);
    log.sync().unwrap();
    assert_eq!(log.append(&[b"next"]).unwrap(), vec![21]);
    log.sync().unwrap();
    let first = log.first();
    drop(log);

    let log = FileLog::open(dir.path(), config(200)).unwrap();
    assert_eq!((log.first(), log.end(), log.durable_end()), (first, 22, 22));
    let tail = log.read_durable(first, 100).unwrap();
    assert_eq!(tail.first().unwrap().offset, first);
    assert_eq!(tail.last().unwrap().payload, b"next");
    assert_eq!(log.recovery().truncated_bytes, 0);

    // Control: without trim every segment stays and offset 0 is readable.
    let dir = tempfile::tempdir().unwrap();
    let mut log = FileLog::open(dir.path(), config(200)).unwrap();
    for _ in 0..21 {
        log.append(&[&payload]).unwrap();
    }
    log.sync().unwrap();
    assert_eq!(segments(dir.path()).len(), before);
    assert_eq!(log.read_durable(0, 1).unwrap()[0].offset, 0);
}
