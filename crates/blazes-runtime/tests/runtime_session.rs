//! Keyed sessions under seeded schedules: workers accept, poll, commit, renew, stall, crash,
//! and learn about lost leases late; time advances by random amounts so leases expire and
//! sessions are taken over. Each worker's session state is, per key, the list of message numbers
//! it has applied; applying message `n` of a key when the state's last entry is not `n - 1` is a
//! per-key order violation (a loss, a duplicate or a reordering).
//!
//! Properties: no violation ever, at most one worker commits per (partition, epoch), stale
//! commits are refused, and after draining, every key's committed list is exactly `0..N`.
//! Negative control: the same schedules against competing consumers without sessions (any
//! worker takes the next message of any partition and writes the state back, last writer wins)
//! find violations.

use std::collections::{BTreeMap, BTreeSet};

use blazes_runtime::{
    BrokerConfig, Lease, Log, MemLog, PartitionId, Published, SessionBroker, SessionError,
    SessionEvent, SessionMessage, WorkerId, partition_for,
};
use proptest::prelude::*;

mod common;
use common::rng::Rng;

type State = BTreeMap<String, Vec<u64>>;

fn decode(bytes: &[u8]) -> State {
    if bytes.is_empty() {
        State::new()
    } else {
        serde_json::from_slice(bytes).unwrap()
    }
}

const PARTITIONS: u32 = 3;
const TTL: u64 = 10;

/// What the harness needs from a session mechanism; the real broker and the control implement it.
trait Broker {
    fn publish(&mut self, key: &str, n: u64);
    /// Some session for `worker`: (lease, committed offset, state).
    fn accept(&mut self, worker: WorkerId, now: u64, pick: usize) -> Option<(Lease, u64, Vec<u8>)>;
    fn poll(
        &mut self,
        lease: &Lease,
        now: u64,
        max: usize,
    ) -> Result<Vec<SessionMessage>, SessionError>;
    fn commit(
        &mut self,
        lease: &Lease,
        next: u64,
        state: &[u8],
        now: u64,
    ) -> Result<(), SessionError>;
    fn renew(&mut self, lease: &Lease, now: u64) -> Result<Lease, SessionError>;
    fn tick(&mut self, now: u64) -> Vec<SessionEvent>;
    fn committed_state(&self, partition: PartitionId) -> State;
}

impl Broker for SessionBroker<MemLog> {
    fn publish(&mut self, key: &str, n: u64) {
        // One producer per key ("k3" is producer 3): keys map to one partition each, so the
        // per-key counter is the producer's per-partition sequence number.
        let producer = key[1..].parse::<u64>().unwrap();
        SessionBroker::publish(self, producer, 0, n + 1, key.as_bytes(), &n.to_le_bytes()).unwrap();
    }
    fn accept(
        &mut self,
        worker: WorkerId,
        now: u64,
        _pick: usize,
    ) -> Option<(Lease, u64, Vec<u8>)> {
        SessionBroker::accept(self, worker, now)
            .unwrap()
            .map(|s| (s.lease, s.committed_offset, s.state))
    }
    fn poll(
        &mut self,
        lease: &Lease,
        now: u64,
        max: usize,
    ) -> Result<Vec<SessionMessage>, SessionError> {
        SessionBroker::poll(self, lease, now, max)
    }
    fn commit(
        &mut self,
        lease: &Lease,
        next: u64,
        state: &[u8],
        now: u64,
    ) -> Result<(), SessionError> {
        SessionBroker::commit(self, lease, next, state, now)
    }
    fn renew(&mut self, lease: &Lease, now: u64) -> Result<Lease, SessionError> {
        SessionBroker::renew(self, lease, now)
    }
    fn tick(&mut self, now: u64) -> Vec<SessionEvent> {
        SessionBroker::tick(self, now)
    }
    fn committed_state(&self, partition: PartitionId) -> State {
        decode(self.committed(partition).unwrap().1)
    }
}

/// Control: competing consumers without sessions. Any worker may take any partition; each
/// message goes to whichever worker polls next; commits always succeed (last writer wins).
struct NoSessions {
    logs: Vec<MemLog>,
    cursor: Vec<u64>,
    committed: Vec<(u64, Vec<u8>)>,
}

impl Broker for NoSessions {
    fn publish(&mut self, key: &str, n: u64) {
        let p = partition_for(key.as_bytes(), PARTITIONS) as usize;
        let mut rec = vec![0u8; 24];
        rec.extend_from_slice(&(key.len() as u32).to_le_bytes());
        rec.extend_from_slice(key.as_bytes());
        rec.extend_from_slice(&n.to_le_bytes());
        self.logs[p].append(&[&rec]).unwrap();
    }
    fn accept(
        &mut self,
        worker: WorkerId,
        _now: u64,
        pick: usize,
    ) -> Option<(Lease, u64, Vec<u8>)> {
        let p = pick % PARTITIONS as usize;
        let lease = Lease {
            partition: p as u32,
            worker,
            epoch: 0,
            expires_at: u64::MAX,
            token: 0,
        };
        Some((lease, self.cursor[p], self.committed[p].1.clone()))
    }
    fn poll(
        &mut self,
        lease: &Lease,
        _now: u64,
        max: usize,
    ) -> Result<Vec<SessionMessage>, SessionError> {
        let p = lease.partition as usize;
        let recs = self.logs[p].read_durable(self.cursor[p], max).unwrap();
        self.cursor[p] += recs.len() as u64;
        Ok(recs
            .into_iter()
            .map(|r| {
                let klen = u32::from_le_bytes(r.payload[24..28].try_into().unwrap()) as usize;
                SessionMessage {
                    partition: lease.partition,
                    offset: r.offset,
                    key: r.payload[28..28 + klen].to_vec(),
                    payload: r.payload[28 + klen..].to_vec(),
                    producer: 0,
                    epoch: 0,
                    seq: 0,
                }
            })
            .collect())
    }
    fn commit(
        &mut self,
        lease: &Lease,
        next: u64,
        state: &[u8],
        _now: u64,
    ) -> Result<(), SessionError> {
        let c = &mut self.committed[lease.partition as usize];
        *c = (c.0.max(next), state.to_vec());
        Ok(())
    }
    fn renew(&mut self, lease: &Lease, _now: u64) -> Result<Lease, SessionError> {
        Ok(*lease)
    }
    fn tick(&mut self, _now: u64) -> Vec<SessionEvent> {
        Vec::new()
    }
    fn committed_state(&self, partition: PartitionId) -> State {
        decode(&self.committed[partition as usize].1)
    }
}

struct Held {
    lease: Lease,
    state: State,
    next: u64,
}

#[derive(Debug, Default)]
struct Report {
    violations: Vec<String>,
    final_states: BTreeMap<String, Vec<u64>>,
    commits_per_epoch: BTreeMap<(PartitionId, u64), BTreeSet<WorkerId>>,
    refused_commits: usize,
    lease_lost_events: usize,
    takeovers: usize,
}

fn apply(held: &mut Held, m: &SessionMessage, violations: &mut Vec<String>) {
    let key = String::from_utf8(m.key.clone()).unwrap();
    let n = u64::from_le_bytes(m.payload[..8].try_into().unwrap());
    let list = held.state.entry(key.clone()).or_default();
    let expected = list.last().map_or(0, |l| l + 1);
    if n != expected {
        violations.push(format!("key {key}: applied {n} after {:?}", list.last()));
    }
    list.push(n);
    held.next = m.offset + 1;
}

fn run(broker: &mut dyn Broker, seed: u64, workers: usize, keys: usize, per_key: u64) -> Report {
    let mut rng = Rng(seed);
    let mut rep = Report::default();
    let mut now = 0u64;
    let mut held: Vec<Option<Held>> = (0..workers).map(|_| None).collect();
    let mut published = vec![0u64; keys];
    // Lease-lost events reach workers late, so stale owners really do try to commit.
    let mut inbox: Vec<SessionEvent> = Vec::new();
    let mut ever_held: BTreeSet<PartitionId> = BTreeSet::new();

    for _ in 0..300 {
        let w = rng.below(workers);
        match rng.below(9) {
            0 | 1 => {
                let k = rng.below(keys);
                if published[k] < per_key {
                    broker.publish(&format!("k{k}"), published[k]);
                    published[k] += 1;
                }
            }
            2 => {
                now += 1 + rng.below(4) as u64;
                inbox.extend(broker.tick(now));
            }
            3 if !inbox.is_empty() => {
                let SessionEvent::LeaseLost { worker, epoch, .. } = inbox.remove(0);
                rep.lease_lost_events += 1;
                let h = &mut held[worker as usize];
                if h.as_ref().is_some_and(|h| h.lease.epoch == epoch) {
                    *h = None;
                }
            }
            4 if held[w].is_none() => {
                if let Some((lease, committed, state)) = broker.accept(w as u64, now, rng.below(8))
                {
                    if !ever_held.insert(lease.partition) {
                        rep.takeovers += 1;
                    }
                    held[w] = Some(Held {
                        lease,
                        state: decode(&state),
                        next: committed,
                    });
                }
            }
            5 | 6 if held[w].is_some() => {
                let h = held[w].as_mut().unwrap();
                let max = 1 + rng.below(3);
                match broker.poll(&h.lease, now, max) {
                    Ok(msgs) => {
                        for m in &msgs {
                            // Resumes exactly where the committed state ends: nothing skipped or redone.
                            if m.offset != h.next {
                                rep.violations.push(format!(
                                    "delivered offset {} but expected {}",
                                    m.offset, h.next
                                ));
                            }
                            apply(h, m, &mut rep.violations);
                        }
                    }
                    Err(_) => held[w] = None,
                }
            }
            7 if held[w].is_some() => {
                let h = held[w].as_ref().unwrap();
                let bytes = serde_json::to_vec(&h.state).unwrap();
                match broker.commit(&h.lease, h.next, &bytes, now) {
                    Ok(()) => {
                        rep.commits_per_epoch
                            .entry((h.lease.partition, h.lease.epoch))
                            .or_default()
                            .insert(w as u64);
                    }
                    Err(SessionError::Fenced { .. } | SessionError::LeaseExpired { .. }) => {
                        rep.refused_commits += 1;
                        held[w] = None;
                    }
                    Err(e) => panic!("unexpected commit error: {e}"),
                }
            }
            8 if held[w].is_some() => {
                match rng.below(3) {
                    // Renew, stall (let the TTL run), or crash (lose the session silently).
                    0 => {
                        let h = held[w].as_mut().unwrap();
                        match broker.renew(&h.lease, now) {
                            Ok(l) => h.lease = l,
                            Err(_) => held[w] = None,
                        }
                    }
                    1 => {}
                    _ => held[w] = None,
                }
            }
            _ => {}
        }
    }

    // Drain: publish the rest, let every lease lapse, and one worker finishes each session.
    for (k, p) in published.iter_mut().enumerate() {
        while *p < per_key {
            broker.publish(&format!("k{k}"), *p);
            *p += 1;
        }
    }
    now += TTL + 1;
    broker.tick(now);
    for pick in 0..PARTITIONS as usize {
        let (lease, committed, state) = broker.accept(0, now, pick).unwrap();
        let mut h = Held {
            lease,
            state: decode(&state),
            next: committed,
        };
        loop {
            let msgs = broker.poll(&h.lease, now, 16).unwrap();
            if msgs.is_empty() {
                break;
            }
            for m in &msgs {
                apply(&mut h, m, &mut rep.violations);
            }
        }
        broker
            .commit(
                &h.lease,
                h.next,
                &serde_json::to_vec(&h.state).unwrap(),
                now,
            )
            .unwrap();
    }
    for p in 0..PARTITIONS {
        rep.final_states.extend(broker.committed_state(p));
    }
    rep
}

fn broker_config(now: u64) -> BrokerConfig {
    BrokerConfig::new(TTL, 0x5ec2e7).now(now)
}

fn sessions() -> SessionBroker<MemLog> {
    SessionBroker::open(
        (0..PARTITIONS).map(|_| MemLog::new()).collect(),
        MemLog::new(),
        broker_config(0),
    )
    .unwrap()
}

fn no_sessions() -> NoSessions {
    NoSessions {
        logs: (0..PARTITIONS).map(|_| MemLog::new()).collect(),
        cursor: vec![0; PARTITIONS as usize],
        committed: vec![(0, Vec::new()); PARTITIONS as usize],
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn per_key_order_holds_across_takeover(seed in any::<u64>(), workers in 2usize..5, keys in 1usize..6, per_key in 1u64..8) {
        let rep = run(&mut sessions(), seed, workers, keys, per_key);
        prop_assert_eq!(&rep.violations, &Vec::<String>::new());
        for k in 0..keys {
            prop_assert_eq!(rep.final_states.get(&format!("k{k}")).cloned().unwrap_or_default(), (0..per_key).collect::<Vec<_>>());
        }
        for (pe, ws) in &rep.commits_per_epoch {
            prop_assert!(ws.len() == 1, "two owners committed under {:?}: {:?}", pe, ws);
        }
    }
}

/// The schedules do exercise takeover, fencing and lease-loss events (otherwise the property
/// above would hold vacuously).
#[test]
fn schedules_exercise_takeover_and_fencing() {
    let (mut takeovers, mut refused, mut lost) = (0, 0, 0);
    for seed in 0..32 {
        let rep = run(&mut sessions(), seed, 3, 4, 6);
        assert!(rep.violations.is_empty(), "{:?}", rep.violations);
        takeovers += rep.takeovers;
        refused += rep.refused_commits;
        lost += rep.lease_lost_events;
    }
    assert!(
        takeovers > 0 && refused > 0 && lost > 0,
        "{takeovers} {refused} {lost}"
    );
}

/// Negative control: competing consumers without sessions break per-key order.
#[test]
fn negative_control_without_sessions_order_breaks() {
    let broken = (0..32)
        .filter(|&seed| {
            let rep = run(&mut no_sessions(), seed, 3, 4, 6);
            !rep.violations.is_empty()
        })
        .count();
    assert!(
        broken > 0,
        "the harness must be able to find an order violation"
    );
}

#[test]
fn commit_state_epochs_and_leases_survive_a_broker_restart() {
    let mut b = sessions();
    b.publish(1, 0, 1, b"k0", b"x").unwrap();
    let p = partition_for(b"k0", PARTITIONS);
    let s = b.accept_partition(7, p, 0).unwrap().unwrap();
    let msgs = SessionBroker::poll(&mut b, &s.lease, 1, 10).unwrap();
    assert_eq!(msgs.len(), 1);
    let next = msgs[0].offset + 1;
    SessionBroker::commit(&mut b, &s.lease, next, b"state", 2).unwrap();
    let (logs, control) = b.into_logs();
    // The broker restarts at time 3 (its clock: the caller's).
    let mut b = SessionBroker::open(logs, control, broker_config(3)).unwrap();
    assert_eq!(b.committed(p), Some((next, &b"state"[..])));
    // The holder's lease survives with a full TTL from the restart; nobody else gets the
    // session meanwhile, and the holder carries on with the lease it has.
    assert_eq!(b.accept_partition(8, p, 4).unwrap(), None);
    let renewed = b.renew(&s.lease, 5).unwrap();
    assert_eq!(renewed.expires_at, 5 + TTL);
    // Once it stops renewing, the session is taken over under a larger epoch.
    let s2 = b.accept_partition(8, p, 5 + TTL).unwrap().unwrap();
    assert!(
        s2.lease.epoch > s.lease.epoch,
        "epochs must not repeat after restart"
    );
    assert_eq!(s2.state, b"state");
    let err = SessionBroker::commit(&mut b, &s.lease, next, b"old", 5 + TTL).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "lease epoch {} on partition {p} is fenced by the current epoch {}",
            s.lease.epoch, s2.lease.epoch
        )
    );
}

// ---------------------------------------------------------------- review findings

#[test]
fn a_zombie_cannot_forge_a_lease_from_the_fenced_error() {
    let mut b = sessions();
    b.publish(1, 0, 1, b"k0", b"x").unwrap();
    let p = partition_for(b"k0", PARTITIONS);
    let old = b.accept_partition(7, p, 0).unwrap().unwrap().lease;
    // Worker 7 stalls past its TTL, restarts under the same id and is granted the session anew.
    let new = b.accept_partition(7, p, TTL).unwrap().unwrap().lease;
    // The stalled incarnation (a zombie) is fenced and learns the current epoch...
    let current = match SessionBroker::commit(&mut b, &old, 0, b"zombie", TTL + 1) {
        Err(SessionError::Fenced { current, .. }) => current,
        other => panic!("expected Fenced, got {other:?}"),
    };
    assert_eq!(current, new.epoch);
    // ...and builds itself a lease with it: refused, the token is not derivable from the error.
    let forged = Lease {
        epoch: current,
        expires_at: new.expires_at,
        ..old
    };
    let err = SessionBroker::commit(&mut b, &forged, 0, b"zombie", TTL + 1).unwrap_err();
    assert!(matches!(err, SessionError::NotGranted { .. }), "{err}");
    // Control: the lease as granted is accepted.
    SessionBroker::commit(&mut b, &new, 0, b"ok", TTL + 1).unwrap();
}

#[test]
fn publish_is_idempotent_per_producer_and_partition() {
    let mut b = sessions();
    let p = partition_for(b"k0", PARTITIONS);
    assert_eq!(
        b.publish(4, 0, 1, b"k0", b"a").unwrap(),
        Published::Appended {
            partition: p,
            offset: 0
        }
    );
    // A retry (the acknowledgement was lost) appends nothing.
    assert_eq!(
        b.publish(4, 0, 1, b"k0", b"a").unwrap(),
        Published::Duplicate { partition: p }
    );
    let err = b.publish(4, 0, 3, b"k0", b"c").unwrap_err();
    assert!(
        matches!(
            err,
            SessionError::PublishGap {
                expected: 2,
                got: 3,
                ..
            }
        ),
        "{err}"
    );
    // The marks are rebuilt from the partition logs on reopen.
    let (logs, control) = b.into_logs();
    let mut b = SessionBroker::open(logs, control, broker_config(0)).unwrap();
    assert_eq!(
        b.publish(4, 0, 1, b"k0", b"a").unwrap(),
        Published::Duplicate { partition: p }
    );
    let s = b.accept_partition(1, p, 0).unwrap().unwrap();
    let msgs = SessionBroker::poll(&mut b, &s.lease, 0, 10).unwrap();
    assert_eq!(msgs.len(), 1, "{msgs:?}");
    assert_eq!((msgs[0].producer, msgs[0].seq), (4, 1));
}

/// Two keys in different partitions.
fn two_partitions() -> (&'static [u8], &'static [u8]) {
    let keys: [&'static [u8]; 4] = [b"k0", b"k1", b"k2", b"k3"];
    let k0 = keys[0];
    let k1 = *keys[1..]
        .iter()
        .find(|k| partition_for(k, PARTITIONS) != partition_for(k0, PARTITIONS))
        .unwrap();
    (k0, k1)
}

/// What each partition's log holds, as (producer, epoch, seq, payload), read by a worker.
fn contents(b: &mut SessionBroker<MemLog>, key: &[u8]) -> Vec<(u64, u64, u64, Vec<u8>)> {
    let p = partition_for(key, PARTITIONS);
    let s = b.accept_partition(9, p, 0).unwrap().unwrap();
    let msgs = SessionBroker::poll(b, &s.lease, 0, 100).unwrap();
    SessionBroker::release(b, &s.lease, 0).unwrap();
    msgs.into_iter()
        .map(|m| (m.producer, m.epoch, m.seq, m.payload))
        .collect()
}

/// A restarted producer takes a new epoch and publishes from 1 again; its old incarnation (a
/// zombie that still sends) is refused in every partition, also one the new incarnation has not
/// published to yet and across a reopen, and is never answered as a "duplicate" of a
/// different message. Retries within the new epoch are duplicates.
#[test]
fn a_restarted_producer_fences_its_zombie() {
    let (k0, k1) = two_partitions();
    let mut b = sessions();
    assert!(matches!(
        b.publish(4, 0, 1, k0, b"a"),
        Ok(Published::Appended { .. })
    ));
    assert!(matches!(
        b.publish(4, 0, 1, k1, b"x"),
        Ok(Published::Appended { .. })
    ));
    // The producer restarts without its counters.
    let epoch = b.begin_epoch(4).unwrap();
    assert_eq!(epoch, 1);
    assert!(matches!(
        b.publish(4, epoch, 1, k0, b"b"),
        Ok(Published::Appended { .. })
    ));
    assert!(matches!(
        b.publish(4, epoch, 1, k0, b"b"),
        Ok(Published::Duplicate { .. })
    ));
    let fenced = |r: Result<Published, SessionError>| {
        matches!(
            r,
            Err(SessionError::ProducerFenced {
                producer: 4,
                epoch: 0,
                current: 1
            })
        )
    };
    // The zombie's next message, and a "retry" of its seq 1 with other content, where the new
    // incarnation has not published yet.
    assert!(fenced(b.publish(4, 0, 2, k0, b"zombie")));
    assert!(fenced(b.publish(4, 0, 1, k1, b"other")));
    assert!(fenced(b.publish(4, 0, 2, k1, b"zombie")));
    // The epochs are rebuilt on reopen; the next restart gets the next epoch.
    let (logs, control) = b.into_logs();
    let mut b = SessionBroker::open(logs, control, broker_config(0)).unwrap();
    assert!(fenced(b.publish(4, 0, 2, k1, b"zombie")));
    assert_eq!(b.producer_epoch(4), 1);
    assert_eq!(b.begin_epoch(4).unwrap(), 2);
    assert_eq!(
        contents(&mut b, k0),
        vec![(4, 0, 1, b"a".to_vec()), (4, 1, 1, b"b".to_vec())]
    );
    assert_eq!(contents(&mut b, k1), vec![(4, 0, 1, b"x".to_vec())]);
}

/// Negative control: the same restart without a new epoch (the mechanism minus the epoch). The
/// restarted producer's first message is answered as a duplicate of a different message and
/// dropped, and the zombie's next message is appended after it.
#[test]
fn negative_control_a_restart_without_a_new_epoch_loses_messages_and_admits_the_zombie() {
    let (k0, _) = two_partitions();
    let mut b = sessions();
    b.publish(4, 0, 1, k0, b"a").unwrap();
    assert!(matches!(
        b.publish(4, 0, 1, k0, b"b"),
        Ok(Published::Duplicate { .. })
    ));
    assert!(matches!(
        b.publish(4, 0, 2, k0, b"zombie"),
        Ok(Published::Appended { .. })
    ));
    assert_eq!(
        contents(&mut b, k0),
        vec![(4, 0, 1, b"a".to_vec()), (4, 0, 2, b"zombie".to_vec())]
    );
}

/// Publish, process and commit on partition logs whose records are durable only once synced;
/// then every log loses what was not synced (a power cut) and the broker reopens.
#[test]
fn a_commit_never_covers_a_record_a_crash_can_erase() {
    let logs: Vec<MemLog> = (0..PARTITIONS).map(|_| MemLog::manual_sync()).collect();
    let mut b = SessionBroker::open(logs, MemLog::manual_sync(), broker_config(0)).unwrap();
    b.publish(1, 0, 1, b"k1", b"m").unwrap();
    let p = partition_for(b"k1", PARTITIONS);
    let s = b.accept_partition(1, p, 0).unwrap().unwrap();
    let msgs = SessionBroker::poll(&mut b, &s.lease, 0, 10).unwrap();
    assert_eq!(
        msgs.len(),
        1,
        "a published message is durable and delivered"
    );
    SessionBroker::commit(&mut b, &s.lease, 1, b"seen m", 0).unwrap();
    let (mut logs, mut control) = b.into_logs();
    for log in &mut logs {
        log.crash();
    }
    control.crash();
    let b = SessionBroker::open(logs, control, broker_config(0)).unwrap();
    assert_eq!(b.committed(p), Some((1, &b"seen m"[..])));
}

#[test]
fn a_committed_offset_past_the_log_end_is_refused_on_open() {
    let mut b = sessions();
    b.publish(1, 0, 1, b"k1", b"m").unwrap();
    let p = partition_for(b"k1", PARTITIONS);
    let s = b.accept_partition(1, p, 0).unwrap().unwrap();
    SessionBroker::poll(&mut b, &s.lease, 0, 10).unwrap();
    SessionBroker::commit(&mut b, &s.lease, 1, b"seen m", 0).unwrap();
    let (mut logs, control) = b.into_logs();
    // The partition log is replaced by one that lost the record (restored from an old backup).
    logs[p as usize] = MemLog::new();
    let err = SessionBroker::open(logs, control, broker_config(0)).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("partition {p} has a committed offset of 1 but its log ends at 0")
    );
}
