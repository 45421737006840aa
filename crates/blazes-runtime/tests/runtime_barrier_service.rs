//! The barrier service (`--features tokio`): a `DurableBarrier` owned by one task.
//!
//! - A push into a full buffer waits (its future stays pending) until a release frees room,
//!   then completes; core errors come back to the caller.
//! - A producer that stops sealing is reported after `stall_after`, once.
//! - The service killed at seeded points (its task aborted mid-batch, the journal losing what
//!   was not synced, every handle of the dead incarnation failing) and reopened on the same
//!   journal: every partition is released with exactly its records, nothing is handed out
//!   again after the consumer acknowledged it, and what was not acknowledged is handed out
//!   again. Negative control: the same service over a journal whose `sync` does not make the
//!   records durable (messages acknowledged and releases handed on before they are durable)
//!   loses or repeats releases in the same harness.
#![cfg(feature = "tokio")]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use blazes_runtime::{
    BarrierConfig, BarrierError, BarrierService, Log, LogError, MemLog, Record, SealBarrier,
    ServiceError,
};
use tokio::time::{Instant, timeout};

mod common;
use common::rng::Rng;

fn s(x: &str) -> String {
    x.to_string()
}
#[tokio::test(start_paused = true)]
async fn barrier_push_waits_while_full_until_a_release() {
    let BarrierService {
        handle: barrier,
        mut releases,
        ..
    } = BarrierService::open(
        SealBarrier::<u32, String>::new([1], 2),
        MemLog::new(),
        BarrierConfig::default()
            .max_waiting(4)
            .stall_after(Duration::from_secs(3600))
            .compact_every(64),
    )
    .unwrap();
    barrier.push(1, 0, 0, s("a")).await.unwrap();
    barrier.push(1, 0, 1, s("b")).await.unwrap();

    // The buffer is full: this push must wait, not fail and not be accepted.
    let waiting = tokio::spawn({
        let barrier = barrier.clone();
        async move { barrier.push(1, 1, 0, s("c")).await }
    });
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert!(!waiting.is_finished(), "push into a full barrier returned");

    // Completing partition 0 frees room; the parked push goes through.
    barrier.seal(1, 0, 2).await.unwrap();
    let r0 = releases.recv().await.unwrap();
    assert_eq!((r0.partition, r0.records), (0, vec![s("a"), s("b")]));
    waiting.await.unwrap().unwrap();
    barrier.seal(1, 1, 1).await.unwrap();
    let r1 = releases.recv().await.unwrap();
    assert_eq!((r1.partition, r1.records), (1, vec![s("c")]));

    // Other refusals are not back-pressure: they come back at once.
    let err = barrier.push(1, 0, 2, s("late")).await.unwrap_err();
    assert!(
        matches!(err, ServiceError::Core(BarrierError::Late { .. })),
        "{err}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_producer_that_stops_sealing_is_reported_not_waited_for_silently() {
    const STALL: Duration = Duration::from_secs(30);
    let BarrierService {
        handle: barrier,
        mut releases,
        mut stalls,
        ..
    } = BarrierService::open(
        SealBarrier::<u32, String>::new([1, 2], 16),
        MemLog::new(),
        BarrierConfig::default()
            .max_waiting(4)
            .stall_after(STALL)
            .compact_every(64),
    )
    .unwrap();
    let start = Instant::now();
    // Partition 0: producer 1 seals, producer 2 never does.
    barrier.push(1, 0, 0, s("a")).await.unwrap();
    barrier.seal(1, 0, 1).await.unwrap();
    // Control: partition 1 completes in time and is never reported.
    barrier.push(2, 1, 0, s("b")).await.unwrap();
    barrier.seal(1, 1, 0).await.unwrap();
    barrier.seal(2, 1, 1).await.unwrap();
    assert_eq!(releases.recv().await.unwrap().partition, 1);
    assert!(
        timeout(STALL - Duration::from_secs(1), stalls.recv())
            .await
            .is_err(),
        "reported before the stall time"
    );
    let stalled = stalls.recv().await.unwrap();
    assert_eq!((stalled.partition, stalled.missing), (0, vec![2]));
    assert!(
        stalled.waiting >= STALL && start.elapsed() <= STALL + STALL / 4 + Duration::from_millis(1)
    );
    // Reported once; the partition still completes if the producer comes back.
    barrier.seal(2, 0, 0).await.unwrap();
    assert_eq!(releases.recv().await.unwrap().partition, 0);
    assert!(timeout(STALL * 4, stalls.recv()).await.is_err());
}
// ---------------------------------------------------------------- crashes of the service

/// A journal that outlives the service's "process": `crash` loses the unsynced tail and kills
/// the handles of the incarnation that held it (their calls fail), as the death of the process
/// would. With `sync_lags` (the control), `sync` makes durable everything but the batch
/// appended last: the service then acknowledges messages and hands on releases one batch
/// before they are durable.
#[derive(Clone)]
struct Disk {
    inner: Arc<Mutex<Platter>>,
    generation: u64,
    sync_lags: bool,
}

#[derive(Default)]
struct Platter {
    first: u64,
    records: Vec<Vec<u8>>,
    /// Durable records, counted from `first`.
    durable: usize,
    /// `records.len()` before the last append.
    before_last: usize,
    generation: u64,
}

impl Disk {
    fn new(sync_lags: bool) -> Self {
        Disk {
            inner: Arc::default(),
            generation: 0,
            sync_lags,
        }
    }

    /// A handle for the next incarnation.
    fn handle(&self) -> Disk {
        let generation = self.inner.lock().unwrap().generation;
        Disk {
            generation,
            ..self.clone()
        }
    }

    fn crash(&self) {
        let mut p = self.inner.lock().unwrap();
        let durable = p.durable;
        p.records.truncate(durable);
        p.before_last = durable;
        p.generation += 1;
    }

    fn live<T>(&self, op: impl FnOnce(&mut Platter) -> Result<T, LogError>) -> Result<T, LogError> {
        let mut p = self.inner.lock().unwrap();
        if p.generation != self.generation {
            return Err(LogError::Io {
                path: "disk".into(),
                source: std::io::Error::other("the process holding this handle died"),
            });
        }
        op(&mut p)
    }
}

impl Log for Disk {
    fn append_expected(
        &mut self,
        batch: &[&[u8]],
        expected_end: u64,
    ) -> Result<Vec<u64>, LogError> {
        self.live(|p| {
            let end = p.first + p.records.len() as u64;
            if end != expected_end {
                return Err(LogError::Conflict {
                    expected: expected_end,
                    actual: end,
                });
            }
            p.before_last = p.records.len();
            p.records.extend(batch.iter().map(|b| b.to_vec()));
            Ok((end..end + batch.len() as u64).collect())
        })
    }
    fn read_durable(&self, offset: u64, max: usize) -> Result<Vec<Record>, LogError> {
        let p = self.inner.lock().unwrap();
        let start = offset.saturating_sub(p.first) as usize;
        Ok(p.records[..p.durable]
            .iter()
            .enumerate()
            .skip(start)
            .take(max)
            .map(|(i, r)| Record {
                offset: p.first + i as u64,
                payload: r.clone(),
            })
            .collect())
    }
    fn first(&self) -> u64 {
        self.inner.lock().unwrap().first
    }
    fn end(&self) -> u64 {
        let p = self.inner.lock().unwrap();
        p.first + p.records.len() as u64
    }
    fn durable_end(&self) -> u64 {
        let p = self.inner.lock().unwrap();
        p.first + p.durable as u64
    }
    fn sync(&mut self) -> Result<(), LogError> {
        let lags = self.sync_lags;
        self.live(|p| {
            p.durable = if lags { p.before_last } else { p.records.len() }.max(p.durable);
            Ok(())
        })
    }
    fn trim(&mut self, before: u64) -> Result<(), LogError> {
        self.live(|p| {
            let cut = (before.saturating_sub(p.first) as usize).min(p.durable);
            p.records.drain(..cut);
            p.durable -= cut;
            p.before_last = p.before_last.saturating_sub(cut);
            p.first += cut as u64;
            Ok(())
        })
    }
}

const PARTITIONS: u32 = 12;
const PRODUCERS: u64 = 3;

fn records(partition: u32, producer: u64) -> Vec<String> {
    let n = (partition as u64 + producer) % 3 + 1;
    (0..n)
        .map(|i| format!("p{partition}-from{producer}-{i}"))
        .collect()
}

fn expected(partition: u32) -> Vec<String> {
    (0..PRODUCERS).flat_map(|p| records(partition, p)).collect()
}

#[derive(Debug, Clone, PartialEq)]
enum Msg {
    Record(u64, u32, u64, String),
    Seal(u64, u32, u64),
}

#[derive(Debug, Default)]
struct Seen {
    /// Every release received, in order, re-deliveries included.
    received: Vec<(u32, Vec<String>)>,
    /// Partitions whose acknowledgement the service confirmed.
    acknowledged: BTreeSet<u32>,
    /// Releases received after their acknowledgement was confirmed.
    after_ack: usize,
}

/// Producers send every record and seal, resending what was not acknowledged; the service is
/// killed after some waves (mid-batch: pushes still in flight) and reopened on the same disk.
/// Returns what the consumer saw and how many crashes there were.
async fn crash_run(seed: u64, sync_lags: bool) -> (Seen, usize) {
    let mut rng = Rng(seed);
    let disk = Disk::new(sync_lags);
    let mut network: Vec<Msg> = Vec::new();
    for partition in 0..PARTITIONS {
        for producer in 0..PRODUCERS {
            let recs = records(partition, producer);
            network.push(Msg::Seal(producer, partition, recs.len() as u64));
            for (i, r) in recs.into_iter().enumerate() {
                network.push(Msg::Record(producer, partition, i as u64, r));
            }
        }
    }
    let seen = Arc::new(Mutex::new(Seen::default()));
    let config = BarrierConfig::default()
        .max_waiting(4)
        .stall_after(Duration::from_secs(3600))
        .compact_every(if rng.chance(50) {
            1 + rng.below(8) as u64
        } else {
            u64::MAX
        });
    let mut crashes = 0;
    for _incarnation in 0..200 {
        let svc = BarrierService::open(
            SealBarrier::<u32, String>::new(0..PRODUCERS, 64),
            disk.handle(),
            config,
        )
        .unwrap();
        let BarrierService {
            handle,
            mut releases,
            task,
            ..
        } = svc;
        let consumer = tokio::spawn({
            let seen = seen.clone();
            let handle = handle.clone();
            let mut rng = Rng(rng.next());
            async move {
                while let Some(rel) = releases.recv().await {
                    let partition = rel.partition;
                    {
                        let mut seen = seen.lock().unwrap();
                        if seen.acknowledged.contains(&partition) {
                            seen.after_ack += 1;
                        }
                        seen.received.push((partition, rel.records));
                    }
                    if rng.chance(70) && handle.delivered(partition).await.is_ok() {
                        seen.lock().unwrap().acknowledged.insert(partition);
                    }
                }
            }
        });
        // One wave of concurrent pushes (a group commit or several), then the process dies:
        // either while they are in flight or once they are answered and the consumer had a
        // moment. Once every message is acknowledged, incarnations only hand out releases.
        let wave: Vec<Msg> = (0..1 + rng.below(10))
            .filter(|_| !network.is_empty())
            .map(|_| network[rng.below(network.len())].clone())
            .collect();
        let pushes: Vec<_> = wave
            .into_iter()
            .map(|msg| {
                let handle = handle.clone();
                tokio::spawn(async move {
                    let result = match &msg {
                        Msg::Record(p, part, i, r) => handle.push(*p, *part, *i, r.clone()).await,
                        Msg::Seal(p, part, n) => handle.seal(*p, *part, *n).await,
                    };
                    (msg, result)
                })
            })
            .collect();
        drop(handle);
        if rng.chance(50) {
            for _ in 0..rng.below(40) {
                tokio::task::yield_now().await;
            }
        } else {
            tokio::time::sleep(Duration::from_millis(3)).await;
        }
        task.abort();
        consumer.abort();
        let _ = consumer.await;
        disk.crash();
        crashes += 1;
        for push in pushes {
            let (msg, result) = push.await.unwrap();
            match result {
                // Acknowledged: the producer forgets it.
                Ok(()) => network.retain(|m| *m != msg),
                Err(ServiceError::Stopped | ServiceError::Fatal(_)) => {}
                Err(e) => panic!("seed {seed}: {msg:?} refused: {e}"),
            }
        }
        if network.is_empty() && all_acknowledged(&seen) {
            break;
        }
    }
    let seen = Arc::try_unwrap(seen).unwrap().into_inner().unwrap();
    (seen, crashes)
}

fn all_acknowledged(seen: &Arc<Mutex<Seen>>) -> bool {
    let seen = seen.lock().unwrap();
    (0..PARTITIONS).all(|p| seen.acknowledged.contains(&p))
}

/// What went wrong in a run: partitions never released, releases with other records, releases
/// received after their acknowledgement.
fn violations(seen: &Seen) -> Vec<String> {
    let mut out = Vec::new();
    let released: BTreeMap<u32, usize> = seen.received.iter().fold(BTreeMap::new(), |mut m, r| {
        *m.entry(r.0).or_default() += 1;
        m
    });
    for p in 0..PARTITIONS {
        if !released.contains_key(&p) {
            out.push(format!("partition {p} never released"));
        }
    }
    for (p, records) in &seen.received {
        if *records != expected(*p) {
            out.push(format!("partition {p} released with {records:?}"));
        }
    }
    if seen.after_ack > 0 {
        out.push(format!(
            "{} releases after their acknowledgement",
            seen.after_ack
        ));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_service_releases_each_partition_once_after_restart() {
    let mut crashes = 0;
    for seed in 0..16 {
        let (seen, c) = crash_run(seed, false).await;
        crashes += c;
        let v = violations(&seen);
        assert!(v.is_empty(), "seed {seed}: {v:?}");
    }
    assert!(
        crashes >= 160,
        "the schedules must kill the service ({crashes})"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn negative_control_acknowledging_before_durable_loses_or_repeats_releases() {
    let mut broken = 0;
    for seed in 0..4 {
        let (seen, _) = crash_run(seed, true).await;
        let v = violations(&seen);
        if !v.is_empty() {
            eprintln!("seed {seed}: {}", v.join("; "));
            broken += 1;
        }
    }
    assert!(broken > 0, "no schedule showed a lost or repeated release");
}
