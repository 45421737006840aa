//! Runtime benchmarks, each next to a baseline measured in the same group and run:
//! - `log_append`: `FileLog` with one fsync per batch between two runs of raw `write` + `fsync`
//!   of the same bytes (before and after, to expose drift of the machine);
//! - `sequencer`: sequenced, deduplicated submission vs a bare channel carrying the same messages;
//! - `seal_barrier`: the barrier vs a pass-through consumer on the same stream;
//! - `sessions`: keyed sessions drained by 1 and by 2 workers (poll + commit per 64 messages).

use std::hint::black_box;
use std::io::Write;
use std::sync::mpsc;

use blazes_runtime::{
    BrokerConfig, Envelope, FileLog, FileLogConfig, FsyncPolicy, Log, MemLog, SealBarrier,
    Sequencer, SessionBroker,
};
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};

const BATCH: usize = 64;
const RECORD: usize = 100;

/// A file created the way `FileLog` creates a segment: read-write, truncated, its directory
/// entry fsynced; in a directory of its own, so no variant shares a file or directory with
/// another.
fn fresh_file(root: &std::path::Path, name: &str) -> std::fs::File {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(dir.join("raw"))
        .unwrap();
    std::fs::File::open(&dir).unwrap().sync_all().unwrap();
    file
}

fn log_append(c: &mut Criterion) {
    let mut g = c.benchmark_group("log_append");
    g.throughput(Throughput::Elements(BATCH as u64));
    let payload = vec![7u8; RECORD];
    let batch: Vec<&[u8]> = (0..BATCH).map(|_| payload.as_slice()).collect();
    let root = tempfile::tempdir().unwrap();
    // Same bytes as the log writes (header + payload per record), one write and one fsync.
    let raw = vec![7u8; BATCH * (RECORD + blazes_runtime::log::RECORD_HEADER_LEN)];
    let raw_bench = |g: &mut criterion::BenchmarkGroup<'_, _>, name: &str| {
        let mut file = fresh_file(root.path(), name);
        g.bench_function(name, |b| {
            b.iter(|| {
                file.write_all(&raw).unwrap();
                file.sync_data().unwrap();
            })
        });
    };

    // The raw baseline runs both before and after the log: on this shared VM the second of two
    // fsync-bound benchmarks measured slower whichever it was (see docs/benchmarks.md), so one
    // baseline on each side shows how much of a difference is drift rather than the log.
    raw_bench(&mut g, "baseline_raw_write_fsync_before");
    let mut log = FileLog::open(
        root.path().join("log"),
        FileLogConfig::default().fsync(FsyncPolicy::EveryBatch),
    )
    .unwrap();
    g.bench_function("filelog_fsync_per_batch", |b| {
        b.iter(|| black_box(log.append(&batch).unwrap()))
    });
    raw_bench(&mut g, "baseline_raw_write_fsync_after");
    g.finish();
}

fn sequencer(c: &mut Criterion) {
    let mut g = c.benchmark_group("sequencer");
    g.throughput(Throughput::Elements(BATCH as u64));
    let mut next = [0u64; 4];
    let mut seq = Sequencer::open(MemLog::new()).unwrap();
    g.bench_function("sequencer_memlog", |b| {
        b.iter(|| {
            let batch: Vec<Envelope> = (0..BATCH)
                .map(|i| {
                    let p = i % 4;
                    next[p] += 1;
                    Envelope {
                        producer: p as u64,
                        epoch: 0,
                        seq: next[p],
                        payload: vec![1u8; RECORD],
                    }
                })
                .collect();
            black_box(seq.submit(&batch).unwrap())
        })
    });
    let (tx, rx) = mpsc::channel::<Envelope>();
    g.bench_function("baseline_bare_channel", |b| {
        b.iter(|| {
            for i in 0..BATCH {
                tx.send(Envelope {
                    producer: (i % 4) as u64,
                    epoch: 0,
                    seq: i as u64,
                    payload: vec![1u8; RECORD],
                })
                .unwrap();
            }
            for _ in 0..BATCH {
                black_box(rx.recv().unwrap());
            }
        })
    });
    g.finish();
}

enum Msg {
    Record(u64, u32, u64),
    Seal(u64, u32, u64),
}

fn seal_stream() -> Vec<Msg> {
    let mut out = Vec::new();
    for part in 0..100u32 {
        for p in 0..3u64 {
            for i in 0..10 {
                out.push(Msg::Record(p, part, i));
            }
        }
        for p in 0..3u64 {
            out.push(Msg::Seal(p, part, 10));
        }
    }
    out
}

fn seal_barrier(c: &mut Criterion) {
    let mut g = c.benchmark_group("seal_barrier");
    let stream = seal_stream();
    g.throughput(Throughput::Elements(stream.len() as u64));
    g.bench_function("barrier", |b| {
        b.iter(|| {
            let mut barrier: SealBarrier<u32, u64> = SealBarrier::new(0..3, 1 << 16);
            let mut released = 0usize;
            for m in &stream {
                let r = match *m {
                    Msg::Record(p, part, i) => barrier.offer_record(p, part, i, i).unwrap(),
                    Msg::Seal(p, part, n) => barrier.offer_seal(p, part, n).unwrap(),
                };
                released += r.map_or(0, |r| r.records.len());
            }
            black_box(released)
        })
    });
    g.bench_function("baseline_pass_through", |b| {
        b.iter(|| {
            let mut consumed = 0usize;
            for m in &stream {
                if let Msg::Record(_, _, i) = *m {
                    consumed += black_box(i) as usize & 1 | 1;
                }
            }
            black_box(consumed)
        })
    });
    g.finish();
}

const SESSION_MSGS: usize = 4096;

fn loaded_broker() -> SessionBroker<MemLog> {
    let mut b = SessionBroker::open(
        (0..8).map(|_| MemLog::new()).collect(),
        MemLog::new(),
        BrokerConfig::new(1_000, 0),
    )
    .unwrap();
    for i in 0..SESSION_MSGS {
        // One producer per key, so its per-partition sequence numbers are the key's count.
        let key = i % 64;
        b.publish(
            key as u64,
            0,
            (i / 64) as u64 + 1,
            format!("key-{key}").as_bytes(),
            &[0u8; RECORD],
        )
        .unwrap();
    }
    b
}

/// Drains every session with `workers` workers taking turns; each poll of up to 64 messages is
/// followed by a commit of the session state, as a real worker would.
fn drain(mut broker: SessionBroker<MemLog>, workers: u64) -> usize {
    let mut held = Vec::new();
    for w in 0..workers {
        while let Some(s) = broker.accept(w, 0).unwrap() {
            held.push((s.lease, 0u64));
            if held.len() as u64 * workers >= (w + 1) * broker.partitions() as u64 {
                break;
            }
        }
    }
    let mut processed = 0;
    let mut active = true;
    while active {
        active = false;
        for (lease, count) in held.iter_mut() {
            let msgs = broker.poll(lease, 1, 64).unwrap();
            if let Some(last) = msgs.last() {
                *count += msgs.len() as u64;
                processed += msgs.len();
                broker
                    .commit(lease, last.offset + 1, &count.to_le_bytes(), 1)
                    .unwrap();
                active = true;
            }
        }
    }
    processed
}

fn sessions(c: &mut Criterion) {
    let mut g = c.benchmark_group("sessions");
    g.throughput(Throughput::Elements(SESSION_MSGS as u64));
    for workers in [1u64, 2] {
        g.bench_function(format!("workers_{workers}"), |b| {
            b.iter_batched(
                loaded_broker,
                |br| assert_eq!(drain(br, workers), SESSION_MSGS),
                BatchSize::LargeInput,
            )
        });
    }
    g.finish();
}

criterion_group!(benches, log_append, sequencer, seal_barrier, sessions);
criterion_main!(benches);
