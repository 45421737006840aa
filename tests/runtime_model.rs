//! Exhaustive model checks (stateright, bounded BFS) of the real lease/fencing and seal-barrier
//! cores: the model's state *is* the runtime's `SessionBroker` / `SealBarrier`, so the checker
//! explores every interleaving of worker and producer actions against the shipped code.
//!
//! Each model also has a control variant that replaces the mechanism by the naive alternative
//! (commits accepted without fencing; a barrier that releases on the first seal) and asserts the
//! checker finds a counterexample: the properties can fail.

use blazes::runtime::{BrokerConfig, Lease, MemLog, SealBarrier, SessionBroker};
use stateright::{Checker, Model, Property};

// ---------------------------------------------------------------- leases and fencing

#[derive(Clone)]
struct LeaseModel {
    workers: usize,
    ttl: u64,
    max_time: u64,
    max_commits: usize,
    /// Control: accept every commit, as a store without fencing tokens would.
    unfenced: bool,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq)]
struct LeaseState {
    broker: SessionBroker<MemLog>,
    now: u64,
    /// The lease each worker believes it holds (it may be stale: workers learn late).
    belief: Vec<Option<Lease>>,
    /// Accepted commits in order, as (epoch, worker).
    commits: Vec<(u64, usize)>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum LeaseAction {
    Accept(usize),
    Renew(usize),
    Commit(usize),
    Tick,
}

impl Model for LeaseModel {
    type State = LeaseState;
    type Action = LeaseAction;

    fn init_states(&self) -> Vec<LeaseState> {
        let config = BrokerConfig {
            lease_ttl: self.ttl,
            now: 0,
            secret: 0,
        };
        let mut broker = SessionBroker::open(vec![MemLog::new()], MemLog::new(), config).unwrap();
        broker.publish(1, 1, b"k", b"m").unwrap();
        vec![LeaseState {
            broker,
            now: 0,
            belief: vec![None; self.workers],
            commits: Vec::new(),
        }]
    }

    fn actions(&self, s: &LeaseState, actions: &mut Vec<LeaseAction>) {
        for w in 0..self.workers {
            match s.belief[w] {
                None => actions.push(LeaseAction::Accept(w)),
                Some(_) => {
                    actions.push(LeaseAction::Renew(w));
                    if s.commits.len() < self.max_commits {
                        actions.push(LeaseAction::Commit(w));
                    }
                }
            }
        }
        if s.now < self.max_time {
            actions.push(LeaseAction::Tick);
        }
    }

    fn next_state(&self, s: &LeaseState, a: LeaseAction) -> Option<LeaseState> {
        let mut s = s.clone();
        match a {
            LeaseAction::Accept(w) => {
                let session = s.broker.accept(w as u64, s.now).unwrap()?;
                s.belief[w] = Some(session.lease);
            }
            LeaseAction::Renew(w) => {
                let lease = s.belief[w]?;
                // A refused renewal tells the worker it lost the lease.
                s.belief[w] = s.broker.renew(&lease, s.now).ok();
            }
            LeaseAction::Commit(w) => {
                let lease = s.belief[w]?;
                let accepted = if self.unfenced {
                    true
                } else {
                    s.broker.commit(&lease, 0, &[w as u8], s.now).is_ok()
                };
                if accepted {
                    s.commits.push((lease.epoch, w));
                } else {
                    s.belief[w] = None;
                }
            }
            LeaseAction::Tick => {
                s.now += 1;
                s.broker.tick(s.now);
            }
        }
        Some(s)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always(
                "at most one owner commits per epoch",
                |_, s: &LeaseState| {
                    s.commits
                        .iter()
                        .all(|&(e, w)| s.commits.iter().all(|&(e2, w2)| e != e2 || w == w2))
                },
            ),
            Property::always("no commit from a superseded epoch", |_, s: &LeaseState| {
                s.commits.windows(2).all(|p| p[0].0 <= p[1].0)
            }),
            Property::always("at most one unexpired lease", |_, s: &LeaseState| {
                let live = s.broker.holder(0).map(|h| h.epoch);
                // Any lease a worker may still use is the broker's one current lease.
                s.belief
                    .iter()
                    .flatten()
                    .filter(|l| l.expires_at > s.now)
                    .all(|l| Some(l.epoch) == live)
            }),
            Property::sometimes("a takeover commits", |_, s: &LeaseState| {
                s.commits.iter().any(|&(e, _)| e >= 2)
            }),
        ]
    }
}

fn lease_model(unfenced: bool) -> LeaseModel {
    LeaseModel {
        workers: 2,
        ttl: 2,
        max_time: 5,
        max_commits: 3,
        unfenced,
    }
}

#[test]
fn lease_fencing_holds_in_every_interleaving() {
    let checker = lease_model(false).checker().spawn_bfs().join();
    assert!(checker.is_done());
    checker.assert_properties();
    assert!(
        checker.unique_state_count() > 100,
        "model too small to mean anything"
    );
}

#[test]
fn negative_control_unfenced_commits_are_found() {
    let checker = lease_model(true).checker().spawn_bfs().join();
    checker.assert_any_discovery("no commit from a superseded epoch");
}

// ---------------------------------------------------------------- seal barrier

#[derive(Clone)]
struct BarrierModel {
    /// records[producer][partition] = how many records the producer sends for it.
    records: Vec<Vec<u8>>,
    max_deliveries: u8,
    /// Control: release a partition on the first seal with whatever has arrived.
    naive: bool,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq)]
enum Msg {
    Record {
        producer: u64,
        partition: u8,
        index: u8,
    },
    Seal {
        producer: u64,
        partition: u8,
        count: u8,
    },
}

#[derive(Clone, Debug, Hash, PartialEq, Eq)]
struct BarrierState {
    barrier: SealBarrier<u8, (u64, u8)>,
    naive_buffer: Vec<(u8, (u64, u8))>,
    deliveries: Vec<u8>,
    releases: Vec<(u8, Vec<(u64, u8)>)>,
}

impl BarrierModel {
    fn messages(&self) -> Vec<Msg> {
        let mut out = Vec::new();
        for (p, parts) in self.records.iter().enumerate() {
            for (b, &n) in parts.iter().enumerate() {
                for i in 0..n {
                    out.push(Msg::Record {
                        producer: p as u64,
                        partition: b as u8,
                        index: i,
                    });
                }
                out.push(Msg::Seal {
                    producer: p as u64,
                    partition: b as u8,
                    count: n,
                });
            }
        }
        out
    }

    fn expected(&self, partition: u8) -> Vec<(u64, u8)> {
        let mut v = Vec::new();
        for (p, parts) in self.records.iter().enumerate() {
            for i in 0..parts[partition as usize] {
                v.push((p as u64, i));
            }
        }
        v
    }

    fn partitions(&self) -> u8 {
        self.records[0].len() as u8
    }
}

impl Model for BarrierModel {
    type State = BarrierState;
    type Action = usize;

    fn init_states(&self) -> Vec<BarrierState> {
        vec![BarrierState {
            barrier: SealBarrier::new(0..self.records.len() as u64, 64),
            naive_buffer: Vec::new(),
            deliveries: vec![0; self.messages().len()],
            releases: Vec::new(),
        }]
    }

    fn actions(&self, s: &BarrierState, actions: &mut Vec<usize>) {
        // Any message may arrive next, and any may arrive twice (a retransmission).
        actions.extend((0..s.deliveries.len()).filter(|&i| s.deliveries[i] < self.max_deliveries));
    }

    fn next_state(&self, s: &BarrierState, i: usize) -> Option<BarrierState> {
        let mut s = s.clone();
        s.deliveries[i] += 1;
        let msg = self.messages()[i].clone();
        if self.naive {
            match msg {
                Msg::Record {
                    producer,
                    partition,
                    index,
                } => {
                    s.naive_buffer.push((partition, (producer, index)));
                    // Arrival order is irrelevant to the properties; sorting keeps states few.
                    s.naive_buffer.sort();
                }
                Msg::Seal { partition, .. } => {
                    let mut recs: Vec<_> = s
                        .naive_buffer
                        .iter()
                        .filter(|(b, _)| *b == partition)
                        .map(|(_, r)| *r)
                        .collect();
                    recs.sort();
                    s.naive_buffer.retain(|(b, _)| *b != partition);
                    s.releases.push((partition, recs));
                    s.releases.sort();
                }
            }
            return Some(s);
        }
        let result = match msg {
            Msg::Record {
                producer,
                partition,
                index,
            } => s
                .barrier
                .offer_record(producer, partition, index as u64, (producer, index)),
            Msg::Seal {
                producer,
                partition,
                count,
            } => s.barrier.offer_seal(producer, partition, count as u64),
        };
        // Late duplicates come back as errors to the caller; they change nothing.
        if let Ok(Some(release)) = result {
            s.releases.push((release.partition, release.records));
            s.releases.sort();
        }
        Some(s)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("never released twice", |_, s: &BarrierState| {
                s.releases
                    .iter()
                    .all(|(b, _)| s.releases.iter().filter(|(b2, _)| b2 == b).count() == 1)
            }),
            Property::always(
                "never released early or incomplete",
                |m: &BarrierModel, s: &BarrierState| {
                    s.releases.iter().all(|(b, recs)| *recs == m.expected(*b))
                },
            ),
            Property::always(
                "released once everything arrived",
                |m: &BarrierModel, s: &BarrierState| {
                    s.deliveries.contains(&0) || s.releases.len() == m.partitions() as usize
                },
            ),
            Property::sometimes(
                "a partition waits before its release",
                |_, s: &BarrierState| {
                    !s.barrier.pending_partitions().is_empty() && s.releases.is_empty()
                },
            ),
        ]
    }
}

fn barrier_model(naive: bool) -> BarrierModel {
    BarrierModel {
        // Two producers, two partitions; partition 1 has a producer with no records.
        records: vec![vec![1, 2], vec![1, 0]],
        max_deliveries: 2,
        naive,
    }
}

#[test]
fn seal_barrier_releases_once_and_complete_in_every_interleaving() {
    let checker = barrier_model(false).checker().spawn_bfs().join();
    assert!(checker.is_done());
    checker.assert_properties();
    assert!(
        checker.unique_state_count() > 1000,
        "model too small to mean anything"
    );
}

#[test]
fn negative_control_naive_barrier_is_caught() {
    let checker = barrier_model(true).checker().spawn_bfs().join();
    checker.assert_any_discovery("never released early or incomplete");
    checker.assert_any_discovery("never released twice");
}
