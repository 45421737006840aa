//! Seal barrier under seeded schedules: several producers send word records and seals for
//! several batches; the network reorders everything (seals often overtake data), duplicates
//! some messages, and delays others. Behind the barrier sits the paper's order-sensitive word
//! count, `OW(word, batch)`, which commits each batch's counts once to a write-once sink.
//!
//! Properties: every batch is released exactly once, with exactly its records, in a fixed
//! order; the committed counts are the true counts on every schedule; the buffer never exceeds
//! its limit; only late duplicates are rejected. Negative control: the same consumer without the
//! barrier (commit a batch's running counts when a seal for it arrives) commits wrong counts on
//! some schedules.

use std::collections::BTreeMap;

use blazes_runtime::{
    BarrierError, DurableBarrier, DurableBarrierError, Log, MemLog, Release, SealBarrier,
};
use proptest::prelude::*;

mod common;
use common::rng::Rng;

#[derive(Debug, Clone, PartialEq)]
enum Msg {
    Record {
        producer: u64,
        batch: u32,
        index: u64,
        word: String,
    },
    Seal {
        producer: u64,
        batch: u32,
        count: u64,
    },
}

/// Counts per (batch, word), as committed to the sink.
type Counts = BTreeMap<(u32, String), u64>;

struct Workload {
    producers: u64,
    batches: u32,
    /// records[producer][batch] = words.
    records: Vec<Vec<Vec<String>>>,
}

fn workload(producers: u64, batches: u32, sizes: &[u8]) -> Workload {
    let mut k = 0;
    let records = (0..producers)
        .map(|p| {
            (0..batches)
                .map(|b| {
                    let n = sizes[k % sizes.len()] as usize % 4;
                    k += 1;
                    (0..n)
                        .map(|i| format!("w{}", (p as usize + b as usize + i) % 3))
                        .collect()
                })
                .collect()
        })
        .collect();
    Workload {
        producers,
        batches,
        records,
    }
}

impl Workload {
    fn messages(&self) -> Vec<Msg> {
        let mut out = Vec::new();
        for p in 0..self.producers {
            for b in 0..self.batches {
                let words = &self.records[p as usize][b as usize];
                for (i, w) in words.iter().enumerate() {
                    out.push(Msg::Record {
                        producer: p,
                        batch: b,
                        index: i as u64,
                        word: w.clone(),
                    });
                }
                out.push(Msg::Seal {
                    producer: p,
                    batch: b,
                    count: words.len() as u64,
                });
            }
        }
        out
    }

    fn true_counts(&self) -> Counts {
        let mut c = Counts::new();
        for p in &self.records {
            for (b, words) in p.iter().enumerate() {
                for w in words {
                    *c.entry((b as u32, w.clone())).or_default() += 1;
                }
            }
        }
        c
    }

    fn batch_records(&self, b: u32) -> Vec<String> {
        self.records
            .iter()
            .flat_map(|p| p[b as usize].iter().cloned())
            .collect()
    }

    fn total(&self) -> usize {
        self.records.iter().flatten().map(Vec::len).sum()
    }
}

/// Delivers the workload's messages in a seeded order, duplicating some.
fn schedule(rng: &mut Rng, mut network: Vec<Msg>, mut deliver: impl FnMut(&Msg) -> bool) {
    while !network.is_empty() {
        let i = rng.below(network.len());
        let msg = network[i].clone();
        let duplicate = rng.below(5) == 0;
        // `deliver` returns false for back-pressure: the message stays in flight.
        if deliver(&msg) && !duplicate {
            network.swap_remove(i);
        }
    }
}

#[derive(Debug, Default)]
struct BarrierRun {
    releases: Vec<Release<u32, String>>,
    sink: Counts,
    late_rejections: usize,
    max_buffered: usize,
}

fn with_barrier(w: &Workload, seed: u64, limit: usize) -> BarrierRun {
    let mut rng = Rng(seed);
    let mut barrier: SealBarrier<u32, String> = SealBarrier::new(0..w.producers, limit);
    let mut run = BarrierRun::default();
    schedule(&mut rng, w.messages(), |m| {
        let r = match m {
            Msg::Record {
                producer,
                batch,
                index,
                word,
            } => barrier.offer_record(*producer, *batch, *index, word.clone()),
            Msg::Seal {
                producer,
                batch,
                count,
            } => barrier.offer_seal(*producer, *batch, *count),
        };
        run.max_buffered = run.max_buffered.max(barrier.buffered());
        match r {
            Ok(Some(release)) => {
                // The order-sensitive count sees one complete batch and commits it once.
                let mut counts = Counts::new();
                for word in &release.records {
                    *counts.entry((release.partition, word.clone())).or_default() += 1;
                }
                for (k, v) in counts {
                    run.sink.entry(k).or_insert(v);
                }
                run.releases.push(release);
                true
            }
            Ok(None) => true,
            Err(BarrierError::Late { .. }) => {
                run.late_rejections += 1;
                true
            }
            Err(BarrierError::Full { .. }) => false,
            Err(e) => panic!("unexpected barrier error: {e}"),
        }
    });
    run
}

/// The control: the same count with no barrier, committing a batch's running counts whenever
/// a seal for the batch arrives (the first commit of a (batch, word) is the one that sticks).
fn without_barrier(w: &Workload, seed: u64) -> Counts {
    let mut rng = Rng(seed);
    let mut running = Counts::new();
    let mut seen = std::collections::BTreeSet::new();
    let mut sink = Counts::new();
    schedule(&mut rng, w.messages(), |m| {
        match m {
            Msg::Record {
                producer,
                batch,
                index,
                word,
            } => {
                if seen.insert((*producer, *batch, *index)) {
                    *running.entry((*batch, word.clone())).or_default() += 1;
                }
            }
            Msg::Seal { batch, .. } => {
                for (k, v) in running.range((*batch, String::new())..(*batch + 1, String::new())) {
                    sink.entry(k.clone()).or_insert(*v);
                }
            }
        }
        true
    });
    sink
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn sealed_batches_release_once_with_exactly_their_records(
        seed in any::<u64>(),
        producers in 1u64..4,
        batches in 1u32..5,
        sizes in prop::collection::vec(any::<u8>(), 1..16),
    ) {
        let w = workload(producers, batches, &sizes);
        let run = with_barrier(&w, seed, w.total().max(1));
        let mut released: Vec<u32> = run.releases.iter().map(|r| r.partition).collect();
        released.sort();
        prop_assert_eq!(released, (0..batches).collect::<Vec<_>>());
        for r in &run.releases {
            prop_assert_eq!(&r.records, &w.batch_records(r.partition));
        }
        prop_assert_eq!(&run.sink, &w.true_counts());
        prop_assert!(run.max_buffered <= w.total().max(1));
    }
}

/// Negative control: without the barrier the order-sensitive count commits wrong counts.
#[test]
fn negative_control_without_barrier_counts_differ() {
    let w = workload(3, 3, &[3, 2, 1, 3, 3, 2, 1, 2, 3]);
    let truth = w.true_counts();
    let mut wrong = 0;
    for seed in 0..32 {
        if without_barrier(&w, seed) != truth {
            wrong += 1;
        }
        assert_eq!(with_barrier(&w, seed, w.total()).sink, truth);
    }
    assert!(wrong > 0, "the harness must be able to find a wrong count");
}

/// Back-pressure: with a limit below the workload, offers are refused (not dropped) and a
/// producer that retries in batch order still gets every batch through.
#[test]
fn back_pressure_refuses_without_losing() {
    let w = workload(2, 4, &[3, 3, 3, 3, 3, 3, 3, 3]);
    let limit = 6; // one batch of 2 x 3 records
    let mut barrier: SealBarrier<u32, String> = SealBarrier::new(0..2, limit);
    let mut refused = 0;
    let mut released = Vec::new();
    // Producers interleave record by record, batch after batch: the stream's natural order.
    let mut queue = std::collections::VecDeque::from(w.messages());
    queue.make_contiguous().sort_by_key(|m| match m {
        Msg::Record {
            batch,
            index,
            producer,
            ..
        } => (*batch, 0, *index, *producer),
        Msg::Seal {
            batch, producer, ..
        } => (*batch, 1, 0, *producer),
    });
    while let Some(m) = queue.pop_front() {
        let r = match &m {
            Msg::Record {
                producer,
                batch,
                index,
                word,
            } => barrier.offer_record(*producer, *batch, *index, word.clone()),
            Msg::Seal {
                producer,
                batch,
                count,
            } => barrier.offer_seal(*producer, *batch, *count),
        };
        match r {
            Ok(Some(rel)) => released.push(rel.partition),
            Ok(None) => {}
            Err(BarrierError::Full { limit: l }) => {
                assert_eq!(l, limit);
                refused += 1;
                queue.push_back(m);
            }
            Err(e) => panic!("{e}"),
        }
        assert!(barrier.buffered() <= limit);
    }
    assert_eq!(released, vec![0, 1, 2, 3]);
    assert_eq!(
        refused, 0,
        "batch-ordered delivery fits in one batch of buffer"
    );

    // A stream that runs ahead of its seals hits the limit and is pushed back.
    let mut b: SealBarrier<u32, u32> = SealBarrier::new([0], 2);
    b.offer_record(0, 0, 0, 1).unwrap();
    b.offer_record(0, 1, 0, 1).unwrap();
    assert_eq!(
        b.offer_record(0, 2, 0, 1),
        Err(BarrierError::Full { limit: 2 })
    );
    assert!(b.offer_seal(0, 0, 1).unwrap().is_some());
    assert!(
        b.offer_record(0, 2, 0, 1).is_ok(),
        "room again after a release"
    );
}

#[test]
fn errors_are_reported_not_merged() {
    let mut b: SealBarrier<&str, u32> = SealBarrier::new([1, 2], 100);
    b.offer_seal(1, "x", 1).unwrap();
    assert!(matches!(
        b.offer_record(1, "x", 1, 5),
        Err(BarrierError::Overflow {
            announced: 1,
            index: 1,
            ..
        })
    ));
    assert!(matches!(
        b.offer_seal(1, "x", 2),
        Err(BarrierError::SealConflict {
            first: 1,
            second: 2,
            ..
        })
    ));
    assert!(matches!(
        b.offer_record(3, "x", 0, 5),
        Err(BarrierError::UnknownProducer { producer: 3, .. })
    ));
    b.offer_record(1, "x", 0, 5).unwrap();
    assert!(matches!(
        b.offer_record(1, "x", 0, 6),
        Err(BarrierError::RecordConflict { .. })
    ));
    let rel = b.offer_seal(2, "x", 0).unwrap().unwrap();
    assert_eq!(rel.records, vec![5]);
    // Producer 2 sealed "x" with 0 records: its record 0 was never part of the release.
    let err = b.offer_record(2, "x", 0, 1).unwrap_err();
    assert_eq!(
        err.to_string(),
        "partition \"x\" was already released without this message from producer 2; it came too late"
    );
    // Producer 1's record 0 was part of it: its retransmission is absorbed, not an error.
    assert_eq!(b.offer_record(1, "x", 0, 5), Ok(None));
    assert_eq!(b.offer_seal(1, "x", 1), Ok(None));
    // A partition whose membership view names a single producer completes on that seal alone.
    assert!(b.set_producers("solo", [2]).unwrap().is_none());
    assert_eq!(
        b.offer_seal(2, "solo", 0).unwrap().map(|r| r.records),
        Some(vec![])
    );
    assert!(matches!(
        b.set_producers("solo", [1, 2]),
        Err(BarrierError::ViewAfterRelease { .. })
    ));
}

// ---------------------------------------------------------------- review findings

/// Offers every message of `network` in a seeded order, keeping refused (`Full`) ones in
/// flight, for at most `steps` deliveries. Returns the partitions released, or `None` if the
/// barrier stopped making progress (every remaining message refused for `steps` rounds).
fn drain_with_back_pressure(
    barrier: &mut SealBarrier<u32, String>,
    seed: u64,
    mut network: Vec<Msg>,
    steps: usize,
) -> Option<Vec<u32>> {
    let mut rng = Rng(seed);
    let mut released = Vec::new();
    for _ in 0..steps {
        if network.is_empty() {
            released.sort();
            return Some(released);
        }
        let i = rng.below(network.len());
        let r = match &network[i] {
            Msg::Record {
                producer,
                batch,
                index,
                word,
            } => barrier.offer_record(*producer, *batch, *index, word.clone()),
            Msg::Seal {
                producer,
                batch,
                count,
            } => barrier.offer_seal(*producer, *batch, *count),
        };
        match r {
            Ok(r) => {
                released.extend(r.map(|r| r.partition));
                network.swap_remove(i);
            }
            Err(BarrierError::Full { .. }) => {}
            Err(e) => panic!("{e}"),
        }
    }
    None
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// The buffer bound cannot deadlock: with room for twice the largest partition, every
    /// partition is released in every delivery order, however many partitions fill the buffer.
    #[test]
    fn a_full_buffer_never_deadlocks(
        seed in any::<u64>(),
        producers in 1u64..4,
        batches in 2u32..6,
        sizes in prop::collection::vec(any::<u8>(), 1..16),
    ) {
        let w = workload(producers, batches, &sizes);
        let largest = (0..batches).map(|b| w.batch_records(b).len()).max().unwrap_or(0);
        let limit = (2 * largest).max(2);
        let mut barrier: SealBarrier<u32, String> = SealBarrier::new(0..producers, limit);
        let released = drain_with_back_pressure(&mut barrier, seed, w.messages(), 100_000);
        prop_assert_eq!(released, Some((0..batches).collect::<Vec<_>>()));
        prop_assert_eq!(barrier.buffered(), 0);
    }
}

/// Three partitions of three records under a limit of six: today's rule ("the limit exceeds the
/// largest partition") holds, yet filling the buffer with two records of each partition left
/// none completable. The head partition keeps its room, so its third record goes in.
#[test]
fn partially_filled_partitions_leave_room_for_the_head() {
    let mut b: SealBarrier<u32, String> = SealBarrier::new([0], 6);
    let word = |p: u32, i: u64| format!("p{p}r{i}");
    for i in 0..2 {
        for p in 0..3 {
            // Refusals of non-head partitions are expected; the head's records always fit.
            let _ = b.offer_record(0, p, i, word(p, i));
        }
    }
    assert!(b.buffered() <= 6);
    b.offer_record(0, 0, 2, word(0, 2))
        .expect("the head partition has room");
    let release = b
        .offer_seal(0, 0, 3)
        .unwrap()
        .expect("partition 0 completes");
    assert_eq!(release.records, vec![word(0, 0), word(0, 1), word(0, 2)]);
    // The rest follows once retried, head after head.
    let mut rest: Vec<Msg> = Vec::new();
    for p in 1..3 {
        for i in 0..3 {
            rest.push(Msg::Record {
                producer: 0,
                batch: p,
                index: i,
                word: word(p, i),
            });
        }
        rest.push(Msg::Seal {
            producer: 0,
            batch: p,
            count: 3,
        });
    }
    // Records already buffered come back as absorbed retransmissions.
    assert_eq!(
        drain_with_back_pressure(&mut b, 7, rest, 10_000),
        Some(vec![1, 2])
    );
}

#[test]
fn a_removed_producer_takes_its_records_out_of_the_release() {
    let mut b: SealBarrier<u32, &str> = SealBarrier::new([1, 2], 10);
    b.offer_record(2, 0, 0, "from the removed producer")
        .unwrap();
    b.offer_record(1, 0, 0, "kept").unwrap();
    assert_eq!(b.set_producers(0, [1]).unwrap(), None);
    assert_eq!(b.buffered(), 1, "the removed producer's record is dropped");
    let release = b.offer_seal(1, 0, 1).unwrap().unwrap();
    assert_eq!(release.records, vec!["kept"]);
}

#[test]
fn missing_names_the_producers_a_partition_waits_for() {
    let mut b: SealBarrier<u32, u8> = SealBarrier::new([1, 2, 3], 10);
    assert_eq!(b.missing(&0), Vec::<u64>::new(), "nothing pending");
    b.offer_seal(1, 0, 1).unwrap();
    b.offer_seal(3, 0, 0).unwrap();
    assert_eq!(
        b.missing(&0),
        vec![1, 2],
        "1 lacks a record, 2 never sealed"
    );
    b.offer_record(1, 0, 0, 9).unwrap();
    assert_eq!(b.missing(&0), vec![2]);
    assert!(b.offer_seal(2, 0, 0).unwrap().is_some());
    assert_eq!(b.missing(&0), Vec::<u64>::new());
}

// ---------------------------------------------------------------- crashes of the barrier

#[derive(Debug, Default)]
struct CrashRun {
    /// Every release the consumer received, in order (re-deliveries included).
    received: Vec<Release<u32, String>>,
    /// Partitions the consumer acknowledged, and whether one came again after that.
    acknowledged: Vec<u32>,
    redelivered_after_ack: usize,
    /// Reopens that did not hand out again exactly the releases received and not acknowledged.
    unacknowledged_not_redelivered: usize,
    crashes: usize,
}

/// Delivers the workload in a seeded order; producers drop a message once the barrier accepted
/// it (they never resend acknowledged messages). The barrier crashes at random points, also
/// between handing out a release and the consumer's acknowledgement. With `journaled`, it is a
/// `DurableBarrier` reopened from its journal (compacted every `compact_every` records); the
/// control restarts a plain `SealBarrier` empty.
fn crash_run(w: &Workload, seed: u64, journaled: bool, compact_every: u64) -> CrashRun {
    let mut rng = Rng(seed);
    let fresh = || SealBarrier::<u32, String>::new(0..w.producers, w.total().max(1));
    let mut durable = DurableBarrier::open(fresh(), MemLog::new()).unwrap().0;
    durable.compact_every(compact_every);
    let mut plain = fresh();
    let mut run = CrashRun::default();
    let mut network = w.messages();
    let mut steps = 0;
    let receive = |run: &mut CrashRun, rel: Release<u32, String>| {
        if run.acknowledged.contains(&rel.partition) {
            run.redelivered_after_ack += 1;
        }
        run.received.push(rel);
    };
    while !network.is_empty() && steps < 10_000 {
        steps += 1;
        if rng.below(12) == 0 {
            run.crashes += 1;
            if journaled {
                let journal = std::mem::replace(
                    &mut durable,
                    DurableBarrier::open(fresh(), MemLog::new()).unwrap().0,
                )
                .into_journal();
                let (reopened, undelivered) = DurableBarrier::open(fresh(), journal).unwrap();
                durable = reopened;
                durable.compact_every(compact_every);
                let mut expected: Vec<u32> = run
                    .received
                    .iter()
                    .map(|r| r.partition)
                    .filter(|p| !run.acknowledged.contains(p))
                    .collect();
                expected.sort();
                expected.dedup();
                if undelivered.iter().map(|r| r.partition).collect::<Vec<_>>() != expected {
                    run.unacknowledged_not_redelivered += 1;
                }
                for rel in undelivered {
                    receive(&mut run, rel);
                }
            } else {
                plain = fresh();
            }
            continue;
        }
        let i = rng.below(network.len());
        let r = match (&network[i], journaled) {
            (
                Msg::Record {
                    producer,
                    batch,
                    index,
                    word,
                },
                true,
            ) => durable
                .offer_record(*producer, *batch, *index, word.clone())
                .map_err(|e| e.to_string()),
            (
                Msg::Seal {
                    producer,
                    batch,
                    count,
                },
                true,
            ) => durable
                .offer_seal(*producer, *batch, *count)
                .map_err(|e| e.to_string()),
            (
                Msg::Record {
                    producer,
                    batch,
                    index,
                    word,
                },
                false,
            ) => plain
                .offer_record(*producer, *batch, *index, word.clone())
                .map_err(|e| e.to_string()),
            (
                Msg::Seal {
                    producer,
                    batch,
                    count,
                },
                false,
            ) => plain
                .offer_seal(*producer, *batch, *count)
                .map_err(|e| e.to_string()),
        };
        let release = match r {
            // Back-pressure: the message stays in flight.
            Err(e) if e.contains("buffer is full") => continue,
            r => r.unwrap(),
        };
        network.swap_remove(i);
        if let Some(rel) = release {
            let partition = rel.partition;
            receive(&mut run, rel);
            // Sometimes the crash comes before the consumer's acknowledgement.
            if rng.below(3) != 0 {
                if journaled {
                    durable.delivered(partition).unwrap();
                }
                run.acknowledged.push(partition);
            }
        }
    }
    run
}

#[test]
fn a_journaled_barrier_releases_each_partition_once_across_crashes() {
    journaled_crash_runs(u64::MAX);
}

/// The same crashes with a snapshot every few journal records: a reopen starts from a snapshot
/// (its core state and the releases not yet acknowledged) and finds the same releases.
#[test]
fn a_compacted_journal_recovers_each_partition_once_across_crashes() {
    journaled_crash_runs(3);
}

fn journaled_crash_runs(compact_every: u64) {
    let w = workload(3, 4, &[3, 2, 1, 3, 3, 2, 1, 2, 3, 1, 2, 3]);
    let mut crashes = 0;
    for seed in 0..48 {
        let run = crash_run(&w, seed, true, compact_every);
        crashes += run.crashes;
        assert_eq!(run.redelivered_after_ack, 0, "seed {seed}");
        assert_eq!(run.unacknowledged_not_redelivered, 0, "seed {seed}");
        let mut partitions: Vec<u32> = run.received.iter().map(|r| r.partition).collect();
        partitions.sort();
        partitions.dedup();
        assert_eq!(
            partitions,
            vec![0, 1, 2, 3],
            "seed {seed}: every partition released"
        );
        for rel in &run.received {
            // A re-delivery (crash before the acknowledgement) has the same content.
            assert_eq!(rel.records, w.batch_records(rel.partition), "seed {seed}");
        }
    }
    assert!(crashes > 48, "the schedules must crash the barrier");
}

/// Negative control: a barrier that forgets on a crash loses acknowledged records, and the
/// partitions they belonged to never complete.
#[test]
fn negative_control_an_unjournaled_barrier_loses_partitions() {
    let w = workload(3, 4, &[3, 2, 1, 3, 3, 2, 1, 2, 3, 1, 2, 3]);
    let incomplete = (0..48)
        .filter(|&seed| {
            let run = crash_run(&w, seed, false, u64::MAX);
            let mut partitions: Vec<u32> = run.received.iter().map(|r| r.partition).collect();
            partitions.sort();
            partitions.dedup();
            partitions != vec![0, 1, 2, 3]
        })
        .count();
    assert!(incomplete > 0);
}

// ---------------------------------------------------------------- a bounded journal

/// Journal size over a long run of `partitions` windows (3 producers, 4 records each), each
/// release acknowledged at once. With `forget`, partitions more than 8 behind are forgotten.
/// Returns the most records the journal ever held and the largest snapshot, in bytes, in the
/// first and in the second half of the run.
fn long_run(partitions: u32, compact_every: u64, forget: bool) -> (u64, usize, usize) {
    let fresh = || SealBarrier::<u32, String>::new(0..3, 64);
    let (mut b, _) = DurableBarrier::open(fresh(), MemLog::new()).unwrap();
    b.compact_every(compact_every);
    let mut most = 0;
    let mut snapshots = Vec::new();
    for p in 0..partitions {
        for producer in 0..3 {
            for i in 0..4 {
                let released = b
                    .offer_record(producer, p, i, format!("{p}.{producer}.{i}"))
                    .unwrap();
                assert!(released.is_none());
            }
            if let Some(rel) = b.offer_seal(producer, p, 4).unwrap() {
                assert_eq!((rel.partition, rel.records.len()), (p, 12));
                b.delivered(p).unwrap();
            }
        }
        if forget && p >= 8 {
            b.forget_released_below(p - 8).unwrap();
        }
        let j = b.journal();
        most = most.max(j.end() - j.first());
        let first = j.read_durable(j.first(), 1).unwrap();
        if j.first() > 0 {
            snapshots.push(first[0].payload.len());
        }
    }
    // Recovery after compaction: nothing is handed out again, a retry of a released record is
    // absorbed, a record that was not released is late, and so is anything below the floor.
    let journal = b.into_journal();
    let (mut b, undelivered) = DurableBarrier::open(fresh(), journal).unwrap();
    assert!(undelivered.is_empty());
    let last = partitions - 1;
    assert!(b.barrier().is_released(&last));
    assert!(matches!(
        b.offer_record(0, last, 0, format!("{last}.0.0")),
        Ok(None)
    ));
    assert!(matches!(
        b.offer_record(0, last, 4, "extra".into()),
        Err(DurableBarrierError::Barrier(BarrierError::Late { .. }))
    ));
    if forget {
        assert!(matches!(
            b.offer_record(0, 0, 0, "0.0.0".into()),
            Err(DurableBarrierError::Barrier(BarrierError::Late { .. }))
        ));
    }
    let half = snapshots.len() / 2;
    let early = snapshots[..half].iter().copied().max().unwrap_or(0);
    let late = snapshots[half..].iter().copied().max().unwrap_or(0);
    (most, early, late)
}

/// Under a long run the journal holds at most one snapshot plus `compact_every` records, and
/// with released partitions forgotten behind a floor the snapshot does not grow either.
/// Controls: without compaction the journal holds every message of the run; without the floor
/// the snapshot grows with every released partition (the seal counts it keeps to tell late
/// records from retried ones).
#[test]
fn the_journal_stays_bounded_under_a_long_run() {
    let (most, early, late) = long_run(400, 64, true);
    assert!(most <= 64 + 1, "journal held {most} records");
    assert!(
        early > 0 && late <= early,
        "snapshot grew from {early} to {late} bytes"
    );

    let (uncompacted, _, _) = long_run(400, u64::MAX, true);
    assert!(
        uncompacted >= 400 * 15,
        "uncompacted journal held {uncompacted}"
    );
    let (_, early, late) = long_run(400, 64, false);
    assert!(
        late > early * 3 / 2,
        "snapshot without a floor: {early} -> {late} bytes"
    );
}
