//! Durable log: acknowledged records survive torn and corrupt tails.
//!
//! The property test appends acknowledged (synced) batches and then unacknowledged ones, then
//! simulates a crash by cutting or corrupting the segment files at a random byte position past
//! the durable point, reopens, and checks that every acknowledged record is intact and that
//! anything after it is a prefix of what was appended. The negative control cuts *inside* the
//! durable region and checks that the same checker reports the loss.

use std::fs::{self, OpenOptions};
use std::path::{Path, PathBuf};

use blazes::runtime::log::RECORD_HEADER_LEN;
use blazes::runtime::{FileLog, FileLogConfig, FsyncPolicy, Log, LogError, MemLog};
use proptest::prelude::*;

fn config(segment_bytes: u64) -> FileLogConfig {
    FileLogConfig {
        segment_bytes,
        max_record_bytes: 1024,
        fsync: FsyncPolicy::Manual,
    }
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
    log.read_from(0, usize::MAX)
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
    let cfg = FileLogConfig {
        fsync: FsyncPolicy::EveryBatch,
        ..config(100)
    };
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
        file.read_from(37, 5).unwrap(),
        mem.read_from(37, 5).unwrap()
    );
    drop(file);
    let file = FileLog::open(dir.path(), cfg).unwrap();
    assert_eq!(read_all(&file), read_all(&mem));
}

#[test]
fn interval_policy_defers_durability_until_due_or_synced() {
    let dir = tempfile::tempdir().unwrap();
    let hour = FileLogConfig {
        fsync: FsyncPolicy::Interval(std::time::Duration::from_secs(3600)),
        ..config(1 << 20)
    };
    let mut log = FileLog::open(dir.path().join("a"), hour).unwrap();
    log.append(&[b"x", b"y"]).unwrap();
    assert_eq!(
        (log.end(), log.durable_end()),
        (2, 0),
        "not due yet: not acknowledged"
    );
    log.sync().unwrap();
    assert_eq!(log.durable_end(), 2);

    let due = FileLogConfig {
        fsync: FsyncPolicy::Interval(std::time::Duration::ZERO),
        ..config(1 << 20)
    };
    let mut log = FileLog::open(dir.path().join("b"), due).unwrap();
    log.append(&[b"x"]).unwrap();
    assert_eq!(log.durable_end(), 1, "an elapsed interval syncs on append");
}
