//! Global ordering end to end: producers -> sequencer -> replicated state machine -> dedup.
//!
//! A seeded schedule delivers producer messages to the sequencer in random interleavings,
//! duplicates and delays some, crashes and restarts the sequencer and the replicas at random
//! points (replicas recover from their last snapshot plus log replay), and delivers replica
//! outputs to a `Dedup` in random interleavings. Properties: the log holds every message exactly
//! once in producer order; all replicas apply the same sequence and end in the same state; after
//! `Dedup` every output appears exactly once. Negative controls: the same producers and order-
//! sensitive machine without the sequencer (each replica takes messages off the network in its
//! own order) diverge, and the same outputs without `Dedup` contain duplicates.

use std::collections::{BTreeMap, BTreeSet};

use blazes_runtime::{
    Dedup, Envelope, Log, MemLog, Output, Replica, Sequencer, SequencerError, SmrError, Snapshot,
    StateMachine, Submitted,
};
use proptest::prelude::*;

mod common;
use common::rng::Rng;

/// Order-sensitive machine: a hash chain over (producer, seq), like a running digest that is
/// committed after every input. Emits the digest, and a second output for even sequence numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Chain {
    digest: u64,
    applied: Vec<(u64, u64)>,
}

impl StateMachine for Chain {
    fn apply(&mut self, input: &[u8]) -> Vec<Vec<u8>> {
        let env = Envelope::decode(input).expect("sequencer envelope");
        self.digest = self
            .digest
            .wrapping_mul(1_000_003)
            .wrapping_add(env.producer * 7919 + env.seq);
        self.applied.push((env.producer, env.seq));
        let mut out = vec![self.digest.to_le_bytes().to_vec()];
        if env.seq.is_multiple_of(2) {
            out.push(env.payload.clone());
        }
        out
    }

    fn snapshot(&self) -> Vec<u8> {
        let mut b = self.digest.to_le_bytes().to_vec();
        for (p, s) in &self.applied {
            b.extend_from_slice(&p.to_le_bytes());
            b.extend_from_slice(&s.to_le_bytes());
        }
        b
    }

    fn restore(bytes: &[u8]) -> Result<Self, SmrError> {
        if bytes.len() < 8 || !(bytes.len() - 8).is_multiple_of(16) {
            return Err(SmrError::BadSnapshot {
                reason: format!("{} bytes is not a chain snapshot", bytes.len()),
            });
        }
        let word = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap());
        Ok(Chain {
            digest: word(0),
            applied: (8..bytes.len())
                .step_by(16)
                .map(|i| (word(i), word(i + 8)))
                .collect(),
        })
    }
}

fn fresh() -> Chain {
    Chain {
        digest: 1,
        applied: Vec::new(),
    }
}

fn message(producer: u64, seq: u64) -> Envelope {
    Envelope {
        producer,
        epoch: 0,
        seq,
        payload: format!("p{producer}-m{seq}").into_bytes(),
    }
}

struct ReplicaSlot {
    replica: Replica<Chain>,
    snapshot: Option<Snapshot>,
    /// Emitted outputs not yet delivered downstream (a FIFO link; a crash loses its content).
    link: Vec<Output>,
}

struct Outcome {
    log: Vec<(u64, u64)>,
    replicas: Vec<Chain>,
    deduped: Vec<Output>,
    raw: Vec<Output>,
    expected_outputs: Vec<Output>,
}

fn run_sequenced(seed: u64, producers: u64, msgs: u64, replicas: usize) -> Outcome {
    let mut rng = Rng(seed);
    let mut seq = Sequencer::open(MemLog::new()).unwrap();
    let mut acked = vec![0u64; producers as usize];
    let mut network: Vec<Envelope> = Vec::new();
    let mut slots: Vec<ReplicaSlot> = (0..replicas)
        .map(|_| ReplicaSlot {
            replica: Replica::new(fresh()),
            snapshot: None,
            link: Vec::new(),
        })
        .collect();
    let mut dedup = Dedup::new();
    let (mut deduped, mut raw) = (Vec::new(), Vec::new());

    let step = |rng: &mut Rng,
                network: &mut Vec<Envelope>,
                seq: &mut Sequencer<MemLog>,
                acked: &mut Vec<u64>,
                slots: &mut Vec<ReplicaSlot>,
                draining: bool| {
        match rng.below(7) {
            // A producer (re)sends a window of its unacknowledged messages.
            0 => {
                let p = rng.below(producers as usize);
                for s in acked[p] + 1..=(acked[p] + 2).min(msgs) {
                    network.push(message(p as u64, s));
                }
            }
            // The network delivers (or duplicates) a random in-flight message to the sequencer.
            1 | 2 if !network.is_empty() => {
                let i = rng.below(network.len());
                let env = if rng.chance(20) {
                    network[i].clone()
                } else {
                    network.swap_remove(i)
                };
                if let Ok(r) = seq.submit(std::slice::from_ref(&env)) {
                    assert!(matches!(
                        r[0],
                        Submitted::Appended(_) | Submitted::Duplicate
                    ));
                    let p = env.producer as usize;
                    acked[p] = acked[p].max(seq.high_water(env.producer));
                }
            }
            3 if !draining && rng.chance(30) => {
                let log =
                    std::mem::replace(seq, Sequencer::open(MemLog::new()).unwrap()).into_log();
                *seq = Sequencer::open(log).unwrap();
            }
            // A replica applies a few records.
            4 => {
                let r = rng.below(slots.len());
                let n = 1 + rng.below(3);
                let out = slots[r].replica.step(seq.log(), n).unwrap();
                slots[r].link.extend(out);
                // Output commit: a snapshot may only cover inputs whose outputs left the replica,
                // or a crash right after it would lose them for good.
                if slots[r].link.is_empty() && rng.chance(30) {
                    slots[r].snapshot = Some(slots[r].replica.snapshot());
                }
            }
            // A replica crashes and recovers from its snapshot plus log replay.
            5 if !draining && rng.chance(25) => {
                let r = rng.below(slots.len());
                let s = &mut slots[r];
                s.replica = match &s.snapshot {
                    Some(snap) => Replica::recover(snap, seq.log()).unwrap(),
                    None => Replica::new(fresh()),
                };
                s.link.clear();
            }
            _ => {}
        }
    };
    for _ in 0..200 {
        step(
            &mut rng,
            &mut network,
            &mut seq,
            &mut acked,
            &mut slots,
            false,
        );
        // Downstream pulls from a random replica's link, interleaving the copies.
        let r = rng.below(slots.len());
        if !slots[r].link.is_empty() && rng.chance(60) {
            let o = slots[r].link.remove(0);
            raw.push(o.clone());
            if dedup.accept(0, o.id) {
                deduped.push(o);
            }
        }
    }
    // Drain: keep the same random choices but without crashes, until everything is through.
    let mut guard = 0;
    while acked.iter().any(|&a| a < msgs)
        || slots
            .iter()
            .any(|s| s.replica.next_offset() < seq.log().end() || !s.link.is_empty())
    {
        step(
            &mut rng,
            &mut network,
            &mut seq,
            &mut acked,
            &mut slots,
            true,
        );
        for s in slots.iter_mut() {
            for o in s.link.drain(..) {
                raw.push(o.clone());
                if dedup.accept(0, o.id) {
                    deduped.push(o);
                }
            }
        }
        guard += 1;
        assert!(guard < 100_000, "schedule did not drain");
    }
    let log: Vec<(u64, u64)> = seq
        .read_from(0, usize::MAX)
        .unwrap()
        .into_iter()
        .map(|m| (m.envelope.producer, m.envelope.seq))
        .collect();
    let mut reference = Replica::new(fresh());
    let expected_outputs = reference.step(seq.log(), usize::MAX).unwrap();
    Outcome {
        log,
        replicas: slots
            .into_iter()
            .map(|s| s.replica.machine().clone())
            .collect(),
        deduped,
        raw,
        expected_outputs,
    }
}

/// The control: the same producers and machine, each replica taking messages straight off the
/// network in its own order (each message applied once; only the sequencer is missing).
fn run_unsequenced(seed: u64, producers: u64, msgs: u64, replicas: usize) -> Vec<Chain> {
    let mut rng = Rng(seed);
    (0..replicas)
        .map(|_| {
            let mut pending: Vec<Envelope> = (0..producers)
                .flat_map(|p| (1..=msgs).map(move |s| message(p, s)))
                .collect();
            let mut seen = BTreeSet::new();
            let mut machine = fresh();
            while !pending.is_empty() {
                let i = rng.below(pending.len());
                let env = pending.swap_remove(i);
                if seen.insert((env.producer, env.seq)) {
                    machine.apply(&env.encode());
                }
            }
            machine
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn sequenced_replicas_agree_and_dedup_is_exactly_once(
        seed in any::<u64>(),
        producers in 2u64..4,
        msgs in 1u64..6,
        replicas in 2usize..4,
    ) {
        let o = run_sequenced(seed, producers, msgs, replicas);
        // Every message exactly once, each producer's in its own order.
        let mut per_producer: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
        for &(p, s) in &o.log {
            per_producer.entry(p).or_default().push(s);
        }
        for p in 0..producers {
            prop_assert_eq!(per_producer.get(&p).cloned().unwrap_or_default(), (1..=msgs).collect::<Vec<_>>());
        }
        // Replicas applied the log's sequence and agree.
        for r in &o.replicas {
            prop_assert_eq!(&r.applied, &o.log);
            prop_assert_eq!(r, &o.replicas[0]);
        }
        // After dedup: exactly the outputs of one uninterrupted run, once each, in order.
        prop_assert_eq!(&o.deduped, &o.expected_outputs);
        // Each raw output with a given id has the same payload on every replica.
        let by_id: BTreeMap<_, _> = o.expected_outputs.iter().map(|x| (x.id, &x.payload)).collect();
        for x in &o.raw {
            prop_assert_eq!(by_id.get(&x.id).copied(), Some(&x.payload));
        }
    }
}

/// Negative control: without the sequencer, the order-sensitive replicas diverge.
#[test]
fn negative_control_unsequenced_replicas_diverge() {
    let mut diverged = 0;
    for seed in 0..32 {
        let finals = run_unsequenced(seed, 3, 4, 3);
        if finals.iter().any(|m| m.digest != finals[0].digest) {
            diverged += 1;
        }
        // The same seeds through the sequencer never diverge.
        let o = run_sequenced(seed, 3, 4, 3);
        assert!(o.replicas.iter().all(|m| m == &o.replicas[0]));
    }
    assert!(diverged > 0, "the harness must be able to find divergence");
}

/// Negative control: without `Dedup`, replication and recovery deliver outputs more than once.
#[test]
fn negative_control_without_dedup_outputs_repeat() {
    let mut duplicated = 0;
    for seed in 0..16 {
        let o = run_sequenced(seed, 2, 4, 2);
        let ids: BTreeSet<_> = o.raw.iter().map(|x| x.id).collect();
        if ids.len() < o.raw.len() {
            duplicated += 1;
        }
        assert_eq!(o.deduped, o.expected_outputs);
    }
    assert!(duplicated > 0);
}

#[test]
fn retries_are_dropped_across_a_sequencer_restart_on_a_file_log() {
    use blazes_runtime::{FileLog, FileLogConfig};
    let dir = tempfile::tempdir().unwrap();
    let mut seq =
        Sequencer::open(FileLog::open(dir.path(), FileLogConfig::default()).unwrap()).unwrap();
    let batch = [message(1, 1), message(2, 1), message(1, 2)];
    assert_eq!(
        seq.submit(&batch).unwrap(),
        vec![
            Submitted::Appended(0),
            Submitted::Appended(1),
            Submitted::Appended(2)
        ]
    );
    drop(seq);
    let mut seq =
        Sequencer::open(FileLog::open(dir.path(), FileLogConfig::default()).unwrap()).unwrap();
    assert_eq!(seq.high_water(1), 2);
    assert_eq!(
        seq.submit(&[message(1, 2), message(1, 3)]).unwrap(),
        vec![Submitted::Duplicate, Submitted::Appended(3)]
    );
    let err = seq.submit(&[message(2, 3)]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "producer 2 sent sequence number 3 in epoch 0 but 2 is the next one"
    );
    assert_eq!(seq.log().end(), 4);
}

// ---------------------------------------------------------------- durability of what is read

/// A sequencer on a log whose records become durable only on `sync`; m1 is synced, m2 is not,
/// then the log crashes, the sequencer reopens and m3 takes offset 1. A replica that stepped
/// before the crash either saw only durable records (`reader_ignores_durability == false`) or,
/// the control, read the log as if everything appended were already durable. Returns the
/// replica's final state, the reference state of a fresh replica over the final log, and the
/// outputs that passed a `Dedup` versus the reference outputs.
fn crash_after_an_unsynced_append(
    reader_ignores_durability: bool,
) -> (Chain, Chain, Vec<Output>, Vec<Output>) {
    let mut seq = Sequencer::open(MemLog::manual_sync()).unwrap();
    seq.submit(&[message(1, 1)]).unwrap();
    seq.log_mut().sync().unwrap();
    seq.submit(&[message(2, 1)]).unwrap();
    let mut replica = Replica::new(fresh());
    let mut dedup = Dedup::new();
    let mut passed = Vec::new();
    let early = if reader_ignores_durability {
        let mut view = seq.log().clone();
        view.sync().unwrap();
        replica.step(&view, usize::MAX).unwrap()
    } else {
        replica.step(seq.log(), usize::MAX).unwrap()
    };
    passed.extend(dedup.filter(0, early));
    // Power cut: m2 was never durable; the sequencer restarts and producer 3's message is next.
    let mut log = seq.into_log();
    log.crash();
    let mut seq = Sequencer::open(log).unwrap();
    seq.submit(&[message(3, 1)]).unwrap();
    seq.log_mut().sync().unwrap();
    passed.extend(dedup.filter(0, replica.step(seq.log(), usize::MAX).unwrap()));
    let mut reference = Replica::new(fresh());
    let expected = reference.step(seq.log(), usize::MAX).unwrap();
    (
        replica.machine().clone(),
        reference.machine().clone(),
        passed,
        expected,
    )
}

#[test]
fn replicas_apply_durable_records_only() {
    let (state, reference, passed, expected) = crash_after_an_unsynced_append(false);
    assert_eq!(state, reference);
    assert_eq!(passed, expected);
}

/// Negative control: a reader that acts on unsynced records diverges from the log, and `Dedup`
/// then drops the outputs of the record that really holds the reused offset.
#[test]
fn negative_control_reading_unsynced_records_diverges() {
    let (state, reference, passed, expected) = crash_after_an_unsynced_append(true);
    assert_ne!(
        state, reference,
        "replica applied a record the crash erased"
    );
    assert_ne!(passed, expected, "dedup passed outputs of an erased record");
}

#[test]
fn recovery_checks_the_snapshot_against_the_log() {
    let mut seq = Sequencer::open(MemLog::manual_sync()).unwrap();
    seq.submit(&[message(1, 1), message(1, 2)]).unwrap();
    seq.log_mut().sync().unwrap();
    let mut replica = Replica::new(fresh());
    replica.step(seq.log(), usize::MAX).unwrap();
    let snap = replica.snapshot();
    // The snapshot matches the log it was taken from.
    let back = Replica::<Chain>::recover(&snap, seq.log()).unwrap();
    assert_eq!(back.machine(), replica.machine());
    // A log that does not reach the snapshot's position (it lost records, or is another log).
    let mut short = Sequencer::open(MemLog::new()).unwrap();
    short.submit(&[message(1, 1)]).unwrap();
    let err = Replica::<Chain>::recover(&snap, short.log()).unwrap_err();
    assert!(matches!(err, SmrError::SnapshotMismatch { .. }), "{err}");
    // A log of the same length whose record before the snapshot's position differs.
    let mut other = Sequencer::open(MemLog::new()).unwrap();
    other.submit(&[message(1, 1), message(2, 1)]).unwrap();
    let err = Replica::<Chain>::recover(&snap, other.log()).unwrap_err();
    assert!(
        err.to_string().contains("last input it covers differs"),
        "{err}"
    );
}

// ---------------------------------------------------------------- producer epochs, ambiguity

#[test]
fn a_restarted_producer_starts_a_new_epoch_and_fences_the_old_one() {
    let mut seq = Sequencer::open(MemLog::new()).unwrap();
    seq.submit(&[message(1, 1), message(1, 2)]).unwrap();
    // The producer restarts without its counter: next epoch, from sequence number 1.
    let epoch = seq.epoch(1) + 1;
    let restarted = Envelope {
        epoch,
        ..message(1, 1)
    };
    assert_eq!(
        seq.submit(std::slice::from_ref(&restarted)).unwrap(),
        vec![Submitted::Appended(2)]
    );
    assert_eq!(
        seq.submit(&[restarted]).unwrap(),
        vec![Submitted::Duplicate]
    );
    // The old incarnation is fenced, even with a sequence number it never used.
    let err = seq.submit(&[message(1, 3)]).unwrap_err();
    assert!(
        matches!(err, SequencerError::Fenced { current: 1, .. }),
        "{err}"
    );
    // Epochs are rebuilt from the log on reopen.
    let seq = Sequencer::open(seq.into_log()).unwrap();
    assert_eq!((seq.epoch(1), seq.high_water(1)), (1, 1));
}

/// A log whose append lands but whose acknowledgement is lost (a timeout): the outcome is
/// ambiguous, the caller only knows it failed.
struct LostAck {
    log: MemLog,
    lose_next: bool,
}

impl Log for LostAck {
    fn append_expected(
        &mut self,
        batch: &[&[u8]],
        expected_end: u64,
    ) -> Result<Vec<u64>, blazes_runtime::LogError> {
        self.log.append_expected(batch, expected_end)?;
        if std::mem::take(&mut self.lose_next) {
            return Err(blazes_runtime::LogError::Io {
                path: "engine".into(),
                source: std::io::Error::from(std::io::ErrorKind::TimedOut),
            });
        }
        Ok((expected_end..expected_end + batch.len() as u64).collect())
    }
    fn read_durable(
        &self,
        offset: u64,
        max: usize,
    ) -> Result<Vec<blazes_runtime::Record>, blazes_runtime::LogError> {
        self.log.read_durable(offset, max)
    }
    fn end(&self) -> u64 {
        self.log.end()
    }
    fn durable_end(&self) -> u64 {
        self.log.durable_end()
    }
    fn sync(&mut self) -> Result<(), blazes_runtime::LogError> {
        self.log.sync()
    }
}

#[test]
fn a_retry_after_an_ambiguous_append_is_a_duplicate() {
    let log = LostAck {
        log: MemLog::new(),
        lose_next: true,
    };
    let mut seq = Sequencer::open(log).unwrap();
    let batch = [message(1, 1), message(2, 1)];
    assert!(
        seq.submit(&batch)
            .unwrap_err()
            .to_string()
            .contains("timed out")
    );
    assert_eq!(
        seq.submit(&batch).unwrap(),
        vec![Submitted::Duplicate, Submitted::Duplicate]
    );
    assert_eq!(
        seq.submit(&[message(1, 2)]).unwrap(),
        vec![Submitted::Appended(2)]
    );
    assert_eq!(seq.log().end(), 3);
}

#[test]
fn a_conditional_append_loses_to_another_writer_and_catches_up() {
    let mut seq = Sequencer::open(MemLog::new()).unwrap();
    seq.submit(&[message(1, 1)]).unwrap();
    // Another writer (a second sequencer instance on a shared engine) appends message 2.
    let other = message(1, 2).encode();
    seq.log_mut().append(&[&other]).unwrap();
    assert_eq!(
        seq.submit(&[message(1, 2), message(1, 3)]).unwrap(),
        vec![Submitted::Duplicate, Submitted::Appended(2)]
    );
    // The conditional append itself refuses a stale expected end and appends nothing.
    let err = seq.log_mut().append_expected(&[b"x"], 1).unwrap_err();
    assert!(matches!(
        err,
        blazes_runtime::LogError::Conflict {
            expected: 1,
            actual: 3
        }
    ));
    assert_eq!(seq.log().end(), 3);
}
