//! The tokio adapters (`--features tokio`) around the runtime cores.
//!
//! - Sequencer: concurrent producers with lost acknowledgements (every few batches resent, some
//!   overlapping the previous one) end up in one dense order, each message exactly once and in
//!   producer order, acknowledged at the offset it is read back at; a restarted service still
//!   drops old retries. Negative control: the same producers appending to the shared log
//!   directly fail the same check (retries become duplicates).
//! - Group commit: eight concurrent submissions are acknowledged after one `sync`, each only once
//!   durable; a failed `sync` fails the group and stops the service.
//! - Sessions, on tokio's paused clock so expiry is exact: no `LeaseLost` before the TTL, one at
//!   the first tick after it; a renewing worker never loses its lease; a takeover resumes from
//!   the last commit; the former holder's commit is refused (expired, then fenced).
//!
//! The barrier service has its own file, `runtime_barrier_service.rs`.
#![cfg(feature = "tokio")]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use blazes_runtime::{
    AsyncLog, BarrierConfig, BarrierService, Envelope, Log, LogError, MemLog, ProducerId, Record,
    SealBarrier, SequencerError, SequencerService, ServiceError, SessionConfig, SessionError,
    SessionEvent, SessionService, Submitted, sequencer::decode_record,
};
use tokio::time::{Instant, advance, timeout};

const PRODUCERS: u64 = 8;
const MESSAGES: u64 = 60;

fn envelope(producer: ProducerId, seq: u64) -> Envelope {
    Envelope {
        producer,
        epoch: 0,
        seq,
        payload: format!("p{producer}-m{seq}").into_bytes(),
    }
}

/// The batches a producer sends, retries included: batch sizes cycle 1..=4; every third batch is
/// sent twice (its acknowledgement was "lost"), and every fifth starts with the last message of
/// the previous batch again (a partial resend).
fn schedule(producer: ProducerId) -> Vec<Vec<Envelope>> {
    let mut out = Vec::new();
    let mut next = 1;
    let mut i = 0u64;
    while next <= MESSAGES {
        let size = 1 + (i + producer) % 4;
        let end = (next + size).min(MESSAGES + 1);
        let start = if i % 5 == 4 && next > 1 {
            next - 1
        } else {
            next
        };
        let batch: Vec<Envelope> = (start..end).map(|s| envelope(producer, s)).collect();
        out.push(batch.clone());
        if i % 3 == 2 {
            out.push(batch);
        }
        next = end;
        i += 1;
    }
    out
}

/// One order without loss or duplicates: offsets dense from 0, every (producer, seq) exactly
/// once, and each producer's messages in its own order.
fn check_order(log: &[Envelope]) -> Result<(), String> {
    let mut next: BTreeMap<ProducerId, u64> = BTreeMap::new();
    for (offset, env) in log.iter().enumerate() {
        let expected = next.entry(env.producer).or_insert(1);
        if env.seq != *expected {
            return Err(format!(
                "offset {offset}: producer {} seq {} where {} was due",
                env.producer, env.seq, expected
            ));
        }
        *expected += 1;
    }
    for p in 0..PRODUCERS {
        let got = next.get(&p).copied().unwrap_or(1) - 1;
        if got != MESSAGES {
            return Err(format!("producer {p}: {got} of {MESSAGES} messages"));
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_producers_get_one_order_without_duplicates() {
    let (seq, task) = SequencerService::spawn(MemLog::new()).unwrap();
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let seq = seq.clone();
            tokio::spawn(async move {
                let mut acked: BTreeMap<u64, u64> = BTreeMap::new();
                let mut duplicates = 0;
                for batch in schedule(p) {
                    let result = seq.submit(batch.clone()).await.unwrap();
                    assert_eq!(result.len(), batch.len());
                    for (env, r) in batch.iter().zip(result) {
                        match r {
                            Submitted::Appended(off) => {
                                assert!(acked.insert(env.seq, off).is_none(), "appended twice");
                            }
                            Submitted::Duplicate => {
                                assert!(acked.contains_key(&env.seq), "dropped before appended");
                                duplicates += 1;
                            }
                        }
                    }
                    tokio::task::yield_now().await;
                }
                (p, acked, duplicates)
            })
        })
        .collect();
    let mut acks = BTreeMap::new();
    let mut duplicates = 0;
    for h in producers {
        let (p, acked, dups) = h.await.unwrap();
        duplicates += dups;
        for (s, off) in acked {
            acks.insert(off, (p, s));
        }
    }
    assert!(duplicates > 0, "the schedule must exercise retries");

    let read = seq.read_from(0, usize::MAX).await.unwrap();
    let envelopes: Vec<Envelope> = read.iter().map(|m| m.envelope.clone()).collect();
    check_order(&envelopes).unwrap();
    assert_eq!(read.len() as u64, PRODUCERS * MESSAGES);
    for m in &read {
        // Each acknowledgement names the offset the message is read back at.
        assert_eq!(acks[&m.offset], (m.envelope.producer, m.envelope.seq));
    }

    // The task hands the log back once every handle is gone; a new service on it has rebuilt
    // the high-water marks and still drops an old retry.
    drop(seq);
    let log = task.await.unwrap();
    let (seq, _task) = SequencerService::spawn(log).unwrap();
    let again = seq.submit(schedule(3).remove(0)).await.unwrap();
    assert!(
        again.iter().all(|r| *r == Submitted::Duplicate),
        "{again:?}"
    );
    let fresh = seq.submit(vec![envelope(3, MESSAGES + 1)]).await.unwrap();
    assert_eq!(fresh, vec![Submitted::Appended(PRODUCERS * MESSAGES)]);
}

/// Negative control: the same producers and retries appending straight to one shared log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_sequencer_retries_become_duplicates() {
    let log = Arc::new(Mutex::new(MemLog::new()));
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let log = log.clone();
            tokio::spawn(async move {
                for batch in schedule(p) {
                    let bytes: Vec<Vec<u8>> = batch.iter().map(Envelope::encode).collect();
                    let refs: Vec<&[u8]> = bytes.iter().map(Vec::as_slice).collect();
                    log.lock().unwrap().append(&refs).unwrap();
                    tokio::task::yield_now().await;
                }
            })
        })
        .collect();
    for h in producers {
        h.await.unwrap();
    }
    let log = log.lock().unwrap();
    let envelopes: Vec<Envelope> = log
        .read_durable(0, usize::MAX)
        .unwrap()
        .iter()
        .map(|r| decode_record(r).unwrap().envelope)
        .collect();
    let err = check_order(&envelopes).unwrap_err();
    assert!(err.contains("was due"), "{err}");
}

#[tokio::test]
async fn a_gap_is_refused_and_the_service_goes_on() {
    let (seq, _task) = SequencerService::spawn(MemLog::new()).unwrap();
    let err = seq.submit(vec![envelope(1, 2)]).await.unwrap_err();
    assert!(
        matches!(
            err,
            ServiceError::Core(SequencerError::Gap {
                producer: 1,
                epoch: 0,
                expected: 1,
                got: 2
            })
        ),
        "{err}"
    );
    let ok = seq
        .submit(vec![envelope(1, 1), envelope(1, 2)])
        .await
        .unwrap();
    assert_eq!(ok, vec![Submitted::Appended(0), Submitted::Appended(1)]);
}

/// A log whose appends become durable only on `sync`, counting syncs, with a switch that makes
/// `sync` fail; the test keeps a clone to look inside while the service owns the other.
#[derive(Clone, Default)]
struct WatchedLog(Arc<Mutex<Watched>>);

#[derive(Default)]
struct Watched {
    log: MemLog,
    durable_end: u64,
    syncs: usize,
    fail_sync: bool,
}

impl Log for WatchedLog {
    fn append_expected(
        &mut self,
        batch: &[&[u8]],
        expected_end: u64,
    ) -> Result<Vec<u64>, LogError> {
        self.0
            .lock()
            .unwrap()
            .log
            .append_expected(batch, expected_end)
    }
    fn read_durable(&self, offset: u64, max: usize) -> Result<Vec<Record>, LogError> {
        let w = self.0.lock().unwrap();
        let durable = w.durable_end.saturating_sub(offset) as usize;
        w.log.read_durable(offset, max.min(durable))
    }
    fn end(&self) -> u64 {
        self.0.lock().unwrap().log.end()
    }
    fn durable_end(&self) -> u64 {
        self.0.lock().unwrap().durable_end
    }
    fn sync(&mut self) -> Result<(), LogError> {
        let mut w = self.0.lock().unwrap();
        if w.fail_sync {
            return Err(LogError::Io {
                path: "watched".into(),
                source: std::io::Error::other("injected fsync failure"),
            });
        }
        w.syncs += 1;
        w.durable_end = w.log.end();
        Ok(())
    }
}

#[tokio::test]
async fn acknowledgements_wait_for_one_sync_per_group() {
    let log = WatchedLog::default();
    let (seq, _task) = SequencerService::spawn(log.clone()).unwrap();
    // On the current-thread runtime all eight submissions are queued before the service task
    // runs again, so they form one group.
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let seq = seq.clone();
            let log = log.clone();
            tokio::spawn(async move {
                let acked = seq.submit(vec![envelope(p, 1), envelope(p, 2)]).await;
                (acked.unwrap(), log.durable_end())
            })
        })
        .collect();
    for h in producers {
        let (acked, durable_end) = h.await.unwrap();
        for r in acked {
            let Submitted::Appended(off) = r else {
                panic!("{r:?}")
            };
            assert!(
                off < durable_end,
                "acknowledged {off} before it was durable"
            );
        }
    }
    assert_eq!(log.0.lock().unwrap().syncs, 1, "one sync for the group");

    // A failed sync leaves durability unknown: the group is failed and the service stops.
    log.0.lock().unwrap().fail_sync = true;
    let err = seq.submit(vec![envelope(0, 3)]).await.unwrap_err();
    assert!(matches!(err, ServiceError::Fatal(_)), "{err}");
    let after = seq.submit(vec![envelope(1, 3)]).await.unwrap_err();
    assert!(matches!(after, ServiceError::Stopped), "{after}");
}

const TTL: Duration = Duration::from_millis(100);
const TICK: Duration = Duration::from_millis(10);

fn config() -> SessionConfig {
    SessionConfig::new(TTL).tick(TICK)
}

#[tokio::test(start_paused = true)]
async fn lease_lost_after_ttl_then_takeover_from_last_commit() {
    let start = Instant::now();
    let (svc, _task) = SessionService::spawn(vec![MemLog::new()], MemLog::new(), config()).unwrap();
    for i in 0..5u8 {
        svc.publish(1, 0, u64::from(i) + 1, b"k".to_vec(), vec![i])
            .await
            .unwrap();
    }
    let mut events1 = svc.register(1).await.unwrap();
    let s1 = svc.accept(1).await.unwrap().unwrap();
    assert_eq!(s1.committed_offset, 0);
    let first = svc.poll(s1.lease, 3).await.unwrap();
    assert_eq!(
        first.iter().map(|m| m.offset).collect::<Vec<_>>(),
        [0, 1, 2]
    );
    svc.commit(s1.lease, 2, b"upto2".to_vec()).await.unwrap();
    // Delivered but never committed: the successor must see it again.
    assert_eq!(svc.poll(s1.lease, 10).await.unwrap().len(), 2);

    // Worker 1 stops renewing. Just before the TTL nothing has been said (negative control).
    let early = timeout(TTL - Duration::from_millis(1), events1.recv()).await;
    assert!(early.is_err(), "event before the TTL: {early:?}");
    assert!(svc.accept(2).await.unwrap().is_none(), "lease still valid");

    let event = timeout(TICK + Duration::from_millis(1), events1.recv())
        .await
        .expect("no LeaseLost within a tick after the TTL")
        .unwrap();
    let at = start.elapsed();
    assert_eq!(
        event,
        SessionEvent::LeaseLost {
            worker: 1,
            partition: 0,
            epoch: s1.lease.epoch
        }
    );
    assert!(at >= TTL && at <= TTL + TICK, "delivered at {at:?}");

    // Expired and not yet taken over: refused as expired.
    let err = svc.commit(s1.lease, 4, b"late".to_vec()).await.unwrap_err();
    assert!(
        matches!(err, ServiceError::Core(SessionError::LeaseExpired { .. })),
        "{err}"
    );

    let mut events2 = svc.register(2).await.unwrap();
    let s2 = svc.accept(2).await.unwrap().unwrap();
    assert!(s2.lease.epoch > s1.lease.epoch);
    assert_eq!(
        (s2.committed_offset, s2.state.as_slice()),
        (2, &b"upto2"[..])
    );
    let redelivered = svc.poll(s2.lease, 10).await.unwrap();
    assert_eq!(
        redelivered.iter().map(|m| m.offset).collect::<Vec<_>>(),
        [2, 3, 4]
    );

    // The former holder is fenced by the new epoch, whatever it tries.
    for err in [
        svc.commit(s1.lease, 4, b"stale".to_vec())
            .await
            .unwrap_err(),
        svc.renew(s1.lease).await.map(|_| ()).unwrap_err(),
        svc.poll(s1.lease, 1).await.map(|_| ()).unwrap_err(),
    ] {
        assert!(
            matches!(err, ServiceError::Core(SessionError::Fenced { .. })),
            "{err}"
        );
    }
    svc.commit(s2.lease, 5, b"upto5".to_vec()).await.unwrap();
    svc.release(s2.lease).await.unwrap();
    // A release is not a loss: no event for worker 2, and worker 1 got exactly one.
    advance(TTL * 3).await;
    tokio::task::yield_now().await;
    assert!(events2.try_recv().is_err());
    assert!(events1.try_recv().is_err());
    let s3 = svc.accept(3).await.unwrap().unwrap();
    assert_eq!(
        (s3.committed_offset, s3.state.as_slice()),
        (5, &b"upto5"[..])
    );
}

#[tokio::test(start_paused = true)]
async fn a_renewing_worker_keeps_its_lease() {
    let (svc, _task) = SessionService::spawn(vec![MemLog::new()], MemLog::new(), config()).unwrap();
    let mut events = svc.register(1).await.unwrap();
    let mut lease = svc.accept(1).await.unwrap().unwrap().lease;
    for _ in 0..40 {
        // Renew at 60% of the TTL: 40 rounds span 24 TTLs.
        let quiet = timeout(TTL * 6 / 10, events.recv()).await;
        assert!(quiet.is_err(), "lost a renewed lease: {quiet:?}");
        lease = svc.renew(lease).await.unwrap();
        assert!(svc.accept(2).await.unwrap().is_none());
    }
    // Stop renewing: the loss follows within TTL + TICK.
    let event = timeout(TTL + TICK, events.recv()).await.unwrap().unwrap();
    assert!(matches!(event, SessionEvent::LeaseLost { worker: 1, .. }));
    assert!(svc.accept(2).await.unwrap().is_some());
}

/// An engine reached by round trips (each call yields to the runtime), whose acknowledgement of
/// one append can be lost: the append lands, the caller sees a timeout. Shared with the test so
/// that another writer can append too.
#[derive(Clone, Default)]
struct Engine {
    log: Arc<Mutex<MemLog>>,
    lose_next_ack: Arc<Mutex<bool>>,
}

impl AsyncLog for Engine {
    async fn append_expected(
        &mut self,
        batch: Vec<Vec<u8>>,
        expected_end: u64,
    ) -> Result<Vec<u64>, LogError> {
        tokio::task::yield_now().await;
        let refs: Vec<&[u8]> = batch.iter().map(Vec::as_slice).collect();
        let offsets = self
            .log
            .lock()
            .unwrap()
            .append_expected(&refs, expected_end)?;
        if std::mem::take(&mut *self.lose_next_ack.lock().unwrap()) {
            return Err(LogError::Io {
                path: "engine".into(),
                source: std::io::Error::from(std::io::ErrorKind::TimedOut),
            });
        }
        Ok(offsets)
    }
    async fn read_durable(&mut self, offset: u64, max: usize) -> Result<Vec<Record>, LogError> {
        tokio::task::yield_now().await;
        self.log.lock().unwrap().read_durable(offset, max)
    }
    async fn sync(&mut self) -> Result<(), LogError> {
        Ok(())
    }
}

#[tokio::test]
async fn over_an_async_engine_lost_acks_and_other_writers_are_resolved_by_idempotency() {
    let engine = Engine::default();
    let (seq, _task) = SequencerService::spawn_on(engine.clone()).await.unwrap();
    seq.submit(vec![envelope(1, 1)]).await.unwrap();
    // The acknowledgement of this append is lost: the caller sees a timeout...
    *engine.lose_next_ack.lock().unwrap() = true;
    let err = seq
        .submit(vec![envelope(1, 2), envelope(2, 1)])
        .await
        .unwrap_err();
    assert!(err.to_string().contains("timed out"), "{err}");
    // ...and resends: both messages are recognised as already in the order.
    assert_eq!(
        seq.submit(vec![envelope(1, 2), envelope(2, 1)])
            .await
            .unwrap(),
        vec![Submitted::Duplicate, Submitted::Duplicate]
    );
    // Another writer on the same engine appends producer 3's first message.
    let other = envelope(3, 1).encode();
    engine.log.lock().unwrap().append(&[&other]).unwrap();
    assert_eq!(
        seq.submit(vec![envelope(3, 1), envelope(3, 2)])
            .await
            .unwrap(),
        vec![Submitted::Duplicate, Submitted::Appended(4)]
    );
    let order: Vec<(u64, u64)> = seq
        .read_from(0, 100)
        .await
        .unwrap()
        .iter()
        .map(|m| (m.envelope.producer, m.envelope.seq))
        .collect();
    assert_eq!(order, vec![(1, 1), (1, 2), (2, 1), (3, 1), (3, 2)]);
}

/// A log whose `sync` blocks its thread for a while, like an fsync on a slow disk.
#[derive(Clone, Default)]
struct SlowSync(MemLog);

const SLOW: Duration = Duration::from_millis(300);

impl Log for SlowSync {
    fn append_expected(&mut self, batch: &[&[u8]], end: u64) -> Result<Vec<u64>, LogError> {
        self.0.append_expected(batch, end)
    }
    fn read_durable(&self, offset: u64, max: usize) -> Result<Vec<Record>, LogError> {
        self.0.read_durable(offset, max)
    }
    fn end(&self) -> u64 {
        self.0.end()
    }
    fn durable_end(&self) -> u64 {
        self.0.durable_end()
    }
    fn sync(&mut self) -> Result<(), LogError> {
        std::thread::sleep(SLOW);
        self.0.sync()
    }
}

/// Counts how often a ticker task on the same single-threaded runtime gets to run while `work`
/// is awaited: it can only run if `work` does not block the runtime's one thread.
async fn ticks_during(work: impl std::future::Future<Output = ()>) -> u32 {
    let ticks = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let ticker = tokio::spawn({
        let ticks = ticks.clone();
        async move {
            loop {
                tokio::time::sleep(Duration::from_millis(5)).await;
                ticks.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
    });
    tokio::task::yield_now().await;
    work.await;
    ticker.abort();
    ticks.load(std::sync::atomic::Ordering::Relaxed)
}

#[tokio::test(flavor = "current_thread")]
async fn fsyncs_run_off_the_runtime_thread() {
    let (seq, _task) = SequencerService::spawn(SlowSync::default()).unwrap();
    let during_submit = ticks_during(async {
        seq.submit(vec![envelope(1, 1)]).await.unwrap();
    })
    .await;
    let logs = vec![SlowSync::default()];
    let (svc, _task) = SessionService::spawn(logs, SlowSync::default(), config()).unwrap();
    let during_publish = ticks_during(async {
        svc.publish(1, 0, 1, b"k".to_vec(), b"m".to_vec())
            .await
            .unwrap();
    })
    .await;
    let barrier = BarrierService::open(
        SealBarrier::<u32, String>::new([1], 4),
        SlowSync::default(),
        BarrierConfig::default()
            .max_waiting(4)
            .stall_after(Duration::from_secs(3600))
            .compact_every(64),
    )
    .unwrap();
    let during_push = ticks_during(async {
        barrier.handle.push(1, 0, 0, "r".into()).await.unwrap();
    })
    .await;
    // Negative control: the same sync called on the runtime's thread starves the ticker.
    let during_inline = ticks_during(async {
        SlowSync::default().sync().unwrap();
    })
    .await;
    assert!(during_submit > 3, "{during_submit}");
    assert!(during_publish > 3, "{during_publish}");
    assert!(during_push > 3, "{during_push}");
    assert!(during_inline <= 1, "{during_inline}");
}

/// A log whose appends take a while and which counts them: the blocking work of a dropped call
/// goes on after its caller is gone.
struct SlowLog {
    inner: MemLog,
    gate: Arc<std::sync::Barrier>,
}

impl Log for SlowLog {
    fn append_expected(
        &mut self,
        batch: &[&[u8]],
        expected_end: u64,
    ) -> Result<Vec<u64>, LogError> {
        self.gate.wait();
        self.inner.append_expected(batch, expected_end)
    }
    fn read_durable(&self, offset: u64, max: usize) -> Result<Vec<Record>, LogError> {
        self.inner.read_durable(offset, max)
    }
    fn end(&self) -> u64 {
        self.inner.end()
    }
    fn durable_end(&self) -> u64 {
        self.inner.durable_end()
    }
    fn sync(&mut self) -> Result<(), LogError> {
        self.inner.sync()
    }
}

/// A call on `Blocking` dropped while its append runs on the blocking pool (a `timeout` around
/// it) neither loses the log nor panics the next call: the next call waits for the log to come
/// back and sees the dropped call's append, which did happen.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_blocking_call_hands_the_log_back_to_the_next() {
    let gate = Arc::new(std::sync::Barrier::new(2));
    let mut log = blazes_runtime::Blocking::new(SlowLog {
        inner: MemLog::new(),
        gate: gate.clone(),
    });
    let first = timeout(
        Duration::from_millis(50),
        log.append_expected(vec![b"a".to_vec()], 0),
    )
    .await;
    assert!(
        first.is_err(),
        "the append waits on the gate, so the call times out"
    );
    // Let the abandoned append finish, then append after it.
    let release = std::thread::spawn(move || {
        gate.wait();
        gate.wait();
    });
    let second = log.append_expected(vec![b"b".to_vec()], 1).await;
    assert_eq!(second.unwrap(), vec![1]);
    release.join().unwrap();
    let records = log.read_durable(0, 10).await.unwrap();
    assert_eq!(records.len(), 2);
    let inner = log.into_inner().await.unwrap();
    assert_eq!(inner.inner.end(), 2);
}
