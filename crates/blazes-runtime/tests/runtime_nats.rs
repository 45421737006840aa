//! The JetStream runtime against a real 3-node `nats-server` cluster.
#![cfg(feature = "nats")]

#[path = "common/history.rs"]
mod history;
#[path = "common/rng.rs"]
mod rng;
mod support_nats;

use std::time::{Duration, Instant};

use async_nats::HeaderMap;
use async_nats::jetstream::context::PublishErrorKind;
use async_nats::jetstream::{self, message::PublishMessage as Publish};
use blazes_runtime::nats::sequencer::{self as seq, Fencing, Sequencer, SequencerConfig};
use blazes_runtime::nats::{self as rt, NatsError};
use bytes::Bytes;
use rng::Rng;
use support_nats::Cluster;

/// The seed of a test's fault schedule: `BLAZES_NATS_SEED` or the test's own.
fn seed(default: u64) -> u64 {
    let seed = std::env::var("BLAZES_NATS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default);
    println!("fault schedule seed {seed} (BLAZES_NATS_SEED replays it)");
    seed
}

/// Every message of `stream` from the start, read from outside the mechanism.
async fn read_all(js: &jetstream::Context, stream: &str) -> Vec<rt::StoredMessage> {
    // Retried: a node of the cluster may just have been restarted.
    let deadline = Instant::now() + Duration::from_secs(30);
    let s = loop {
        match js.get_stream(stream).await {
            Ok(s) => break s,
            Err(e) => assert!(Instant::now() < deadline, "stream {stream}: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    rt::read_stream(&s, None, 1, usize::MAX, Duration::from_secs(30))
        .await
        .unwrap()
}

/// The server features the runtime's design relies on, checked on the server we run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_features_the_design_relies_on() {
    let Some(cluster) = Cluster::start(3, "").await else {
        return;
    };
    let client = cluster.client().await;
    let js = jetstream::new(client);
    cluster.wait_ready(&js, 3).await;
    js.create_stream(jetstream::stream::Config {
        name: "PROBE".into(),
        subjects: vec!["p.>".into()],
        num_replicas: 3,
        allow_message_ttl: true,
        duplicate_window: Duration::from_secs(60),
        ..Default::default()
    })
    .await
    .unwrap();
    // A TTL'd lease, an output fenced on it, a retry of the output.
    let lease = js
        .send_publish(
            "p.lease",
            Publish::build()
                .payload("a".into())
                .header("Nats-TTL", "3s")
                .message_id("l1")
                .expected_last_subject_sequence(0),
        )
        .await
        .unwrap()
        .await
        .unwrap();
    let mut h = HeaderMap::new();
    h.insert(
        "Nats-Expected-Last-Subject-Sequence",
        lease.sequence.to_string().as_str(),
    );
    h.insert("Nats-Expected-Last-Subject-Sequence-Subject", "p.lease");
    h.insert("Nats-Msg-Id", "o1");
    let publish = |h: HeaderMap| {
        let js = js.clone();
        async move {
            js.send_publish("p.out", Publish::build().payload("o".into()).headers(h))
                .await
                .unwrap()
                .await
        }
    };
    let out = publish(h.clone())
        .await
        .expect("stored while the lease is the last message");
    let again = publish(h.clone()).await.expect("a retry is answered");
    assert!(
        again.duplicate && again.sequence == out.sequence,
        "{again:?}"
    );
    // The server removes the lease after its TTL, by its own clock.
    let t0 = Instant::now();
    let stream = js.get_stream("PROBE").await.unwrap();
    while stream
        .get_last_raw_message_by_subject("p.lease")
        .await
        .is_ok()
    {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "the lease never expired"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // A write fenced on the expired lease is refused; a retry of an earlier one is still
    // answered as a duplicate (the id check comes first), never stored twice.
    let mut stale = h.clone();
    stale.insert("Nats-Msg-Id", "o2");
    let refused = publish(stale)
        .await
        .expect_err("fenced on an expired lease");
    assert_eq!(refused.kind(), PublishErrorKind::WrongLastSequence);
    let dup = publish(h).await.unwrap();
    assert!(dup.duplicate && dup.sequence == out.sequence);
}

/// What one sequencer run stored and acknowledged.
struct SequencerRun {
    stored: Vec<rt::StoredMessage>,
    /// Every send as its client saw it (key: the producer, value: the payload).
    history: std::sync::Arc<history::History>,
    /// (producer, producer seq, position, payload) of every acknowledged send.
    acked: Vec<(String, u64, u64, Bytes)>,
    zombie: Result<seq::Sent, NatsError>,
    retry_duplicate: bool,
}

/// Three producers write 60 inputs each. On the seeded schedule the stream's leader is
/// SIGKILLed and restarted mid-run; producer p0 restarts (a new epoch) at its 30th input while
/// its old incarnation, a zombie, still tries to send; p1 retries one publish with the same id.
async fn sequencer_run(fencing: Fencing, seed_value: u64) -> Option<SequencerRun> {
    const N: u64 = 60;
    let mut rng = Rng(seed(seed_value));
    let kill_at = 10 + rng.below(30) as u64;
    let mut cluster = Cluster::start(3, "").await?;
    let js = jetstream::new(cluster.client().await);
    cluster.wait_ready(&js, 3).await;
    let sequencer = Sequencer::open(js.clone(), SequencerConfig::new("SEQ"))
        .await
        .unwrap();
    let history = std::sync::Arc::new(history::History::default());
    let mut tasks = Vec::new();
    for p in ["p1", "p2"] {
        let sequencer = sequencer.clone();
        let js = js.clone();
        let history = history.clone();
        tasks.push(tokio::spawn(async move {
            let mut producer = sequencer.producer_with(p, fencing).await.unwrap();
            let mut acked = Vec::new();
            let mut retry_duplicate = true;
            let mut previous = 0;
            for k in 1..=N {
                let payload = Bytes::from(format!("{p}:{k}"));
                let w = history.invoke(p, p, &format!("{p}:{k}"));
                let sent = producer.send(payload.clone()).await.unwrap();
                history.complete(w, history::Outcome::Ok);
                if p == "p1" && k == 20 {
                    // The same publish again, as a client whose acknowledgement was lost sends
                    // it: same id, same expectation.
                    let mut h = async_nats::HeaderMap::new();
                    h.insert(
                        "Nats-Msg-Id",
                        format!("p1:{}:{k}", producer.epoch()).as_str(),
                    );
                    if fencing == Fencing::Enforced {
                        h.insert(
                            "Nats-Expected-Last-Subject-Sequence",
                            previous.to_string().as_str(),
                        );
                        h.insert("Nats-Expected-Last-Subject-Sequence-Subject", "SEQ.in.p1");
                    }
                    h.insert(seq::KIND, "data");
                    h.insert(seq::EPOCH, producer.epoch().to_string().as_str());
                    h.insert(seq::SEQ, k.to_string().as_str());
                    h.insert(seq::PRODUCER, "p1");
                    let ack = js
                        .send_publish(
                            "SEQ.in.p1",
                            Publish::build().headers(h).payload(payload.clone()),
                        )
                        .await
                        .unwrap()
                        .await
                        .unwrap();
                    retry_duplicate = ack.duplicate && ack.sequence == sent.position;
                }
                previous = sent.position;
                acked.push((p.to_string(), k, sent.position, payload));
            }
            (acked, retry_duplicate)
        }));
    }
    // p0 in this task, with the faults.
    let mut acked = Vec::new();
    let mut producer = sequencer.producer_with("p0", fencing).await.unwrap();
    let mut zombie = None;
    let mut k = 1;
    while k <= N {
        if k == kill_at {
            let leader = cluster.stream_leader(&js, "SEQ").await;
            cluster.kill(leader);
            tokio::time::sleep(Duration::from_millis(500)).await;
            cluster.restart(leader);
        }
        if k == 30 && zombie.is_none() {
            // A restart: the new incarnation takes the next epoch; the old one lives on.
            let fresh = sequencer.producer_with("p0", fencing).await.unwrap();
            assert_eq!(fresh.epoch(), producer.epoch() + 1);
            assert_eq!(
                fresh.next_sequence(),
                k,
                "the new epoch resumes after the last stored input"
            );
            let mut old = std::mem::replace(&mut producer, fresh);
            let value = format!("zombie:p0:{k}");
            let w = history.invoke("p0-old", "p0", &value);
            let sent = old.send(Bytes::from(value)).await;
            history.complete_result(w, &sent, |e| matches!(e, NatsError::Fenced { .. }));
            zombie = Some(sent);
        }
        let payload = Bytes::from(format!("p0:{k}"));
        let w = history.invoke("p0", "p0", &format!("p0:{k}"));
        let sent = producer.send(payload.clone()).await.unwrap();
        history.complete(w, history::Outcome::Ok);
        acked.push(("p0".to_string(), k, sent.position, payload));
        k += 1;
    }
    let mut retry_duplicate = true;
    for t in tasks {
        let (a, r) = t.await.unwrap();
        acked.extend(a);
        retry_duplicate &= r;
    }
    let stored = read_all(&js, "SEQ").await;
    Some(SequencerRun {
        stored,
        history,
        acked,
        zombie: zombie.unwrap(),
        retry_duplicate,
    })
}

/// The sequencer's invariants, checked on what the stream holds: every acknowledged input is
/// stored where its acknowledgement said; per producer the inputs are 1..=N once each in order;
/// no input of an epoch follows a newer epoch's marker. Then the history checker's opinion, on
/// the same stream: no acknowledged send lost, none stored twice or out of its producer's
/// order, no refused send stored, and no send of an older epoch (a zombie's) after a newer
/// epoch began.
fn sequencer_violations(run: &SequencerRun) -> Vec<String> {
    use std::collections::BTreeMap;
    let mut v = Vec::new();
    let data: Vec<(String, String)> = run
        .stored
        .iter()
        .filter(|m| m.header(seq::KIND) == Some("data"))
        .map(|m| {
            (
                m.header(seq::PRODUCER).unwrap_or_default().to_string(),
                String::from_utf8_lossy(&m.payload).to_string(),
            )
        })
        .collect();
    v.extend(
        run.history
            .check(&data)
            .into_iter()
            .map(|a| format!("history: {a:?}")),
    );
    for producer in ["p0", "p1", "p2"] {
        let mine = |m: &&rt::StoredMessage| m.header(seq::PRODUCER) == Some(producer);
        let epoch = |m: &rt::StoredMessage| {
            m.header(seq::EPOCH)
                .and_then(|e| e.parse::<u64>().ok())
                .unwrap_or(0)
        };
        let grants: Vec<(u64, u64)> = run
            .stored
            .iter()
            .filter(mine)
            .filter(|m| m.header(seq::KIND) == Some("epoch"))
            .map(|m| (epoch(m), m.sequence))
            .collect();
        let writes: Vec<(u64, u64)> = run
            .stored
            .iter()
            .filter(mine)
            .filter(|m| m.header(seq::KIND) == Some("data"))
            .map(|m| (m.sequence, epoch(m)))
            .collect();
        for (position, e) in history::zombie_writes(&writes, &grants) {
            v.push(format!(
                "history: {producer}'s epoch {e} wrote at {position}, after a newer epoch began"
            ));
        }
    }
    let by_position: BTreeMap<u64, &rt::StoredMessage> =
        run.stored.iter().map(|m| (m.sequence, m)).collect();
    for (p, k, position, payload) in &run.acked {
        match by_position.get(position) {
            Some(m) if m.payload == *payload => {}
            other => v.push(format!(
                "{p} input {k} acknowledged at {position} but stored {other:?}"
            )),
        }
    }
    let mut per_producer: BTreeMap<String, (u64, Vec<u64>)> = BTreeMap::new();
    for m in &run.stored {
        let producer = m.header(seq::PRODUCER).unwrap_or_default().to_string();
        let epoch: u64 = m
            .header(seq::EPOCH)
            .and_then(|e| e.parse().ok())
            .unwrap_or(0);
        let entry = per_producer.entry(producer.clone()).or_default();
        if epoch < entry.0 {
            v.push(format!(
                "{producer}: epoch {epoch} stored at {} after epoch {}",
                m.sequence, entry.0
            ));
        }
        entry.0 = entry.0.max(epoch);
        if m.header(seq::KIND) == Some("data") {
            entry
                .1
                .push(m.header(seq::SEQ).and_then(|s| s.parse().ok()).unwrap_or(0));
        }
    }
    for (producer, (_, seqs)) in per_producer {
        let expected: Vec<u64> = (1..=60).collect();
        if seqs != expected {
            v.push(format!(
                "{producer}: producer sequence in the total order is {seqs:?}, not 1..=60 once each"
            ));
        }
    }
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sequencer_one_order_across_leader_kill_and_producer_restart() {
    let Some(run) = sequencer_run(Fencing::Enforced, 7).await else {
        return;
    };
    assert!(
        matches!(run.zombie, Err(NatsError::Fenced { .. })),
        "the old incarnation must be refused, got {:?}",
        run.zombie
    );
    assert!(
        run.retry_duplicate,
        "a retry with the same id is answered as a duplicate of the first"
    );
    let violations = sequencer_violations(&run);
    assert!(violations.is_empty(), "{violations:#?}");
    assert_eq!(run.acked.len(), 180);
}

/// Negative control: the same run without the server-side expectation. The zombie's input is
/// accepted, and p0's input 30 is in the order twice with different content.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sequencer_control_without_fencing_accepts_the_zombie() {
    let Some(run) = sequencer_run(Fencing::Off, 7).await else {
        return;
    };
    assert!(
        run.zombie.is_ok(),
        "without the expectation the zombie is stored"
    );
    let violations = sequencer_violations(&run);
    println!("control's violations: {violations:#?}");
    assert!(
        violations
            .iter()
            .any(|v| v.contains("p0: epoch 1 stored") || v.contains("p0: producer sequence")),
        "the control must show the zombie: {violations:#?}"
    );
    assert!(
        violations
            .iter()
            .any(|v| v.starts_with("history: p0's epoch 1 wrote")),
        "the history checker must see the zombie's write too: {violations:#?}"
    );
}

/// A `blazes-nats-worker` process on the keyed component `KEYED` (2 partitions, 2 s leases,
/// 150 ms of work per input).
fn keyed_worker(cluster: &Cluster, id: &str, fencing: bool) -> support_nats::Proc {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_blazes-nats-worker"));
    command.args([
        "--servers",
        &cluster.urls_arg(),
        "--name",
        "KEYED",
        "--partitions",
        "2",
    ]);
    command.args(["--worker", id, "--ttl", "2", "--work-ms", "150"]);
    command.args(["--fencing", if fencing { "on" } else { "off" }]);
    support_nats::Proc::spawn(command)
}

fn count_lines(lines: &[String], prefix: &str) -> usize {
    lines.iter().filter(|l| l.starts_with(prefix)).count()
}

struct KeyedRun {
    stored: Vec<rt::StoredMessage>,
    /// (key, offset) of every acknowledged input.
    inputs: Vec<(String, u64)>,
    /// Every worker's output lines, by worker.
    lines: Vec<(String, Vec<String>)>,
}

/// Worker A processes a few inputs and is SIGSTOPped while it holds one, past its lease;
/// worker B takes both partitions over; A is continued (a zombie) while B holds them; B is
/// SIGKILLed; worker C (and A, now a legitimate competitor) finish, while the stream's leader
/// is SIGKILLed and restarted. 48 inputs on 6 keys.
async fn keyed_run(fencing: bool, seed_value: u64) -> Option<KeyedRun> {
    use blazes_runtime::nats::session::{Keyed, KeyedConfig};
    let mut rng = Rng(seed(seed_value));
    let mut cluster = Cluster::start(3, "").await?;
    let js = jetstream::new(cluster.client().await);
    cluster.wait_ready(&js, 3).await;
    let mut config = KeyedConfig::new("KEYED", 2);
    config.lease_ttl = Duration::from_secs(2);
    let keyed = Keyed::open(js.clone(), config).await.unwrap();
    let mut inputs = Vec::new();
    let publish =
        async |inputs: &mut Vec<(String, u64)>, rng: &mut Rng, range: std::ops::Range<u32>| {
            for i in range {
                let key = format!("k{}", rng.below(6));
                let stored = keyed
                    .publish(&key, &format!("i{i}"), Bytes::from(format!("{i}")))
                    .await
                    .unwrap();
                inputs.push((key, stored.sequence));
            }
        };
    publish(&mut inputs, &mut rng, 0..24).await;
    let a = keyed_worker(&cluster, "wA", fencing);
    let done_before_stop = 3 + rng.below(4);
    a.wait_for(Duration::from_secs(30), "A to hold an input", |l| {
        count_lines(l, "done") >= done_before_stop
            && l.last().is_some_and(|l| l.starts_with("holding"))
    })
    .await;
    a.signal("STOP");
    let b = keyed_worker(&cluster, "wB", fencing);
    b.wait_for(
        Duration::from_secs(20),
        "B to take both partitions over",
        |l| count_lines(l, "accepted") >= 2,
    )
    .await;
    publish(&mut inputs, &mut rng, 24..48).await;
    b.wait_for(Duration::from_secs(20), "B to process", |l| {
        count_lines(l, "done") >= 2
    })
    .await;
    a.signal("CONT");
    tokio::time::sleep(Duration::from_millis(1000)).await;
    b.signal("KILL");
    let c = keyed_worker(&cluster, "wC", fencing);
    let stream = js.get_stream("KEYED").await.unwrap();
    // The stream's leader crashes while C takes over and works.
    tokio::time::sleep(Duration::from_millis(rng.below(3000) as u64)).await;
    let leader = cluster.stream_leader(&js, "KEYED").await;
    cluster.kill(leader);
    tokio::time::sleep(Duration::from_millis(500)).await;
    cluster.restart(leader);
    // Done when each partition's last commit covers its last input.
    let deadline = Instant::now() + Duration::from_secs(60);
    for p in 0..2u32 {
        let Some(last) = inputs
            .iter()
            .filter(|(k, _)| seq_partition(k) == p)
            .map(|(_, o)| *o)
            .max()
        else {
            continue;
        };
        loop {
            let commit = stream
                .get_last_raw_message_by_subject(&format!("KEYED.commit.{p}"))
                .await;
            if let Ok(m) = commit
                && u64::from_be_bytes(m.payload[..8].try_into().unwrap()) >= last
            {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "partition {p} never committed {last}\nA {:#?}\nC {:#?}",
                a.lines(),
                c.lines()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let lines = vec![
        ("wA".to_string(), a.lines()),
        ("wB".to_string(), b.lines()),
        ("wC".to_string(), c.lines()),
    ];
    drop((a, b, c));
    let stored = read_all(&js, "KEYED").await;
    Some(KeyedRun {
        stored,
        inputs,
        lines,
    })
}

fn seq_partition(key: &str) -> u32 {
    blazes_runtime::nats::session::partition_of(key, 2)
}

/// The keyed invariants on what the stream holds: no commit or output of a grant stored after
/// a later grant of its partition began; outputs of a partition in input order; per key the
/// counts 1, 2, ..., n in order (none lost, none twice); the last commit covers every input.
fn keyed_violations(run: &KeyedRun) -> Vec<String> {
    use blazes_runtime::nats::session::{GRANT, OFFSET};
    use std::collections::{BTreeMap, BTreeSet};
    let mut v = Vec::new();
    let mut grants: BTreeMap<u32, BTreeSet<u64>> = BTreeMap::new();
    for (_, lines) in &run.lines {
        for l in lines {
            let f: Vec<&str> = l.split(' ').collect();
            if f[0] == "accepted"
                && !grants
                    .entry(f[1].parse().unwrap())
                    .or_default()
                    .insert(f[2].parse().unwrap())
            {
                v.push(format!("partition {}: grant {} accepted twice", f[1], f[2]));
            }
        }
    }
    let mut last_output: BTreeMap<u32, u64> = BTreeMap::new();
    let mut counts: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    let mut last_commit: BTreeMap<u32, (u64, String)> = BTreeMap::new();
    for m in &run.stored {
        let parts: Vec<&str> = m.subject.split('.').collect();
        let (kind, p): (&str, u32) = (parts[1], parts[2].parse().unwrap());
        if kind != "out" && kind != "commit" {
            continue;
        }
        let grant: u64 = m.header(GRANT).unwrap().parse().unwrap();
        let offset: u64 = m.header(OFFSET).unwrap().parse().unwrap();
        if let Some(later) = grants
            .get(&p)
            .and_then(|g| g.range(grant + 1..m.sequence).next())
        {
            v.push(format!(
                "{kind} of grant {grant} (offset {offset}) stored at {} after grant {later} began",
                m.sequence
            ));
        }
        let text =
            String::from_utf8_lossy(&m.payload[if kind == "commit" { 8 } else { 0 }..]).to_string();
        if kind == "out" {
            if last_output.get(&p).is_some_and(|&o| o >= offset) {
                v.push(format!(
                    "partition {p}: output for offset {offset} after one for {}",
                    last_output[&p]
                ));
            }
            last_output.insert(p, offset);
            let f: Vec<&str> = text.split(':').collect();
            counts
                .entry(f[0].to_string())
                .or_default()
                .push(f[1].parse().unwrap());
        } else {
            last_commit.insert(p, (offset, text));
        }
    }
    let mut per_key: BTreeMap<String, u64> = BTreeMap::new();
    for (k, _) in &run.inputs {
        *per_key.entry(k.clone()).or_default() += 1;
    }
    for (k, n) in &per_key {
        let expected: Vec<u64> = (1..=*n).collect();
        if counts.get(k) != Some(&expected) {
            v.push(format!(
                "key {k}: output counts {:?}, expected 1..={n}",
                counts.get(k)
            ));
        }
    }
    for p in 0..2u32 {
        let state: String = per_key
            .iter()
            .filter(|(k, _)| seq_partition(k) == p)
            .map(|(k, n)| format!("{k}={n}\n"))
            .collect();
        let last = run
            .inputs
            .iter()
            .filter(|(k, _)| seq_partition(k) == p)
            .map(|(_, o)| *o)
            .max();
        if let Some(last) = last
            && last_commit.get(&p) != Some(&(last, state.clone()))
        {
            v.push(format!(
                "partition {p}: last commit {:?}, expected ({last}, {state:?})",
                last_commit.get(&p)
            ));
        }
    }
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keyed_sessions_fence_a_paused_worker_and_survive_a_killed_one() {
    let Some(run) = keyed_run(true, 11).await else {
        return;
    };
    let violations = keyed_violations(&run);
    assert!(violations.is_empty(), "{violations:#?}\n{:#?}", run.lines);
    // The zombie did try: the server refused its write.
    let zombie = &run.lines[0].1;
    assert!(
        zombie
            .iter()
            .any(|l| l.starts_with("lost") && l.contains("fenced")),
        "worker A, continued after its lease, must be refused by the server: {zombie:#?}"
    );
}

/// Negative control: the same run with commits and outputs not conditioned on the lease. The
/// continued worker's writes land after its successor's grant.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keyed_control_without_fencing_lets_the_zombie_write() {
    let Some(run) = keyed_run(false, 11).await else {
        return;
    };
    let violations = keyed_violations(&run);
    println!("control's violations: {violations:#?}\n{:?}", run.lines);
    assert!(
        violations.iter().any(|v| v.contains("after grant")),
        "the control must show a write from a superseded grant: {violations:#?}\n{:#?}",
        run.lines
    );
}

/// An order-sensitive state machine: a running hash of the inputs; every input outputs the hash,
/// every third input also outputs its own bytes (so inputs have one or two outputs).
#[derive(Default)]
struct Running {
    value: u64,
}

impl blazes_runtime::StateMachine for Running {
    fn apply(&mut self, input: &[u8]) -> Vec<Vec<u8>> {
        for b in input {
            self.value = self
                .value
                .wrapping_mul(1_000_003)
                .wrapping_add(u64::from(*b));
        }
        let mut out = vec![self.value.to_string().into_bytes()];
        if self.value.is_multiple_of(3) {
            out.push(input.to_vec());
        }
        out
    }

    fn snapshot(&self) -> Vec<u8> {
        self.value.to_be_bytes().to_vec()
    }

    fn restore(snapshot: &[u8]) -> Result<Self, blazes_runtime::SmrError> {
        Ok(Running {
            value: u64_snapshot(snapshot)?,
        })
    }
}

/// The state of a machine whose snapshot is one big-endian u64.
fn u64_snapshot(snapshot: &[u8]) -> Result<u64, blazes_runtime::SmrError> {
    let bytes: [u8; 8] =
        snapshot
            .try_into()
            .map_err(|_| blazes_runtime::SmrError::BadSnapshot {
                reason: "not 8 bytes".into(),
            })?;
    Ok(u64::from_be_bytes(bytes))
}

struct SmrRun {
    /// Every output message, in stream order.
    outputs: Vec<rt::StoredMessage>,
    /// Stream sequence of the first output the late replica could have written.
    late_from: u64,
    /// The outputs a single uninterrupted replica produces, by (position, index).
    reference: Vec<((u64, u32), Bytes)>,
    /// (replica, next position, digest, value) at the end.
    replicas: Vec<(String, u64, u64, u64)>,
    /// Outputs a restarted downstream consumer admits after committing the first half.
    after_restart: Vec<(u64, u32)>,
    admitted: Vec<((u64, u32), Bytes)>,
}

/// Two producers write 40 inputs each; three replicas apply them, replica r2 crashes and
/// recovers from its checkpoint, the output stream's leader is SIGKILLed and restarted; after
/// the duplicate window (shrunk to 1 s at the end) a late fourth replica replays everything. A downstream consumer
/// de-duplicates with its durable high-water mark, restarting halfway.
async fn smr_run(ids: blazes_runtime::nats::smr::OutputIds, seed_value: u64) -> Option<SmrRun> {
    use blazes_runtime::StateMachine;
    use blazes_runtime::nats::smr::{Dedup, INDEX, POSITION, Replica, ReplicaConfig};
    let mut rng = Rng(seed(seed_value));
    let mut cluster = Cluster::start(3, "").await?;
    let js = jetstream::new(cluster.client().await);
    cluster.wait_ready(&js, 3).await;
    let sequencer = Sequencer::open(js.clone(), SequencerConfig::new("SMRIN"))
        .await
        .unwrap();
    let config = |r: &str| {
        let mut c = ReplicaConfig::new("acc", r);
        c.checkpoint_every = 5;
        c.output_ids = ids;
        c
    };
    let mut producers = Vec::new();
    for p in ["a", "b"] {
        producers.push(sequencer.producer(p).await.unwrap());
    }
    let mut last = 0;
    let crash_at = 15 + rng.below(40) as u64;
    let kill_at = 10 + rng.below(50) as u64;
    let mut replicas = Vec::new();
    for r in ["r0", "r1", "r2"] {
        replicas.push(
            Replica::open(js.clone(), &sequencer, config(r), Running::default())
                .await
                .unwrap(),
        );
    }
    for i in 0..80u64 {
        let sent = producers[rng.below(2)]
            .send(Bytes::from(format!("input {i}")))
            .await
            .unwrap();
        last = last.max(sent.position);
        if i == kill_at {
            let leader = cluster.stream_leader(&js, "acc-out").await;
            cluster.kill(leader);
            cluster.restart(leader);
        }
        // Replicas step at different paces.
        for (n, replica) in replicas.iter_mut().enumerate() {
            if rng.below(3) <= n {
                replica.step(1 + rng.below(4)).await.unwrap();
            }
        }
        if i == crash_at {
            // r2 crashes: its in-memory state is gone, it recovers from its checkpoint.
            replicas.pop();
            replicas.push(
                Replica::open(js.clone(), &sequencer, config("r2"), Running::default())
                    .await
                    .unwrap(),
            );
        }
    }
    for replica in replicas.iter_mut() {
        while replica.next_position() <= last {
            replica.step(16).await.unwrap();
        }
        replica.checkpoint().await.unwrap();
    }
    // The late replica replays after the duplicate window: shrink the window to 1 s and wait.
    let mut out_stream = js.get_stream("acc-out").await.unwrap();
    let info = out_stream.info().await.unwrap().clone();
    let late_from = info.state.last_sequence + 1;
    let mut shrunk = info.config.clone();
    shrunk.duplicate_window = Duration::from_secs(1);
    js.update_stream(shrunk).await.unwrap();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let mut late = Replica::open(js.clone(), &sequencer, config("r3"), Running::default())
        .await
        .unwrap();
    while late.next_position() <= last {
        late.step(32).await.unwrap();
    }
    late.checkpoint().await.unwrap();
    replicas.push(late);
    // The reference: one uninterrupted machine over the sequenced inputs.
    let (inputs, _) = sequencer.read_sequenced(1, usize::MAX).await.unwrap();
    let mut machine = Running::default();
    let mut reference = Vec::new();
    for input in &inputs {
        for (i, out) in machine.apply(&input.payload).into_iter().enumerate() {
            reference.push(((input.position, i as u32), Bytes::from(out)));
        }
    }
    let outputs = read_all(&js, "acc-out").await;
    let id = |m: &rt::StoredMessage| -> (u64, u32) {
        (
            m.header(POSITION).unwrap().parse().unwrap(),
            m.header(INDEX).unwrap().parse().unwrap(),
        )
    };
    // Downstream: admit the first half, commit, restart, admit the rest.
    let half = outputs.len() / 2;
    let mut down = Dedup::open(&js, "acc-down", "sink", 3).await.unwrap();
    let first = down.filter(outputs[..half].to_vec()).await.unwrap();
    down.commit().await.unwrap();
    drop(down);
    let mut down = Dedup::open(&js, "acc-down", "sink", 3).await.unwrap();
    let second = down.filter(outputs.clone()).await.unwrap();
    down.commit().await.unwrap();
    let after_restart = second.iter().map(id).collect();
    let admitted = first
        .iter()
        .chain(&second)
        .map(|m| (id(m), m.payload.clone()))
        .collect();
    let replicas = replicas
        .iter()
        .enumerate()
        .map(|(n, r)| {
            (
                format!("r{n}"),
                r.next_position(),
                r.digest(),
                r.machine().value,
            )
        })
        .collect();
    Some(SmrRun {
        outputs,
        late_from,
        reference,
        replicas,
        after_restart,
        admitted,
    })
}

fn smr_violations(run: &SmrRun) -> Vec<String> {
    use blazes_runtime::nats::smr::{INDEX, POSITION};
    use std::collections::BTreeMap;
    let mut v = Vec::new();
    let first = &run.replicas[0];
    for r in &run.replicas[1..] {
        if (r.1, r.2, r.3) != (first.1, first.2, first.3) {
            v.push(format!(
                "replica {} ended at {:?}, replica {} at {:?}",
                r.0,
                (r.1, r.2, r.3),
                first.0,
                (first.1, first.2, first.3)
            ));
        }
    }
    let mut seen: BTreeMap<(u64, u32), usize> = BTreeMap::new();
    for m in run.outputs.iter().filter(|m| m.sequence < run.late_from) {
        let id = (
            m.header(POSITION).unwrap().parse().unwrap(),
            m.header(INDEX).unwrap().parse().unwrap(),
        );
        *seen.entry(id).or_default() += 1;
    }
    let dups: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).collect();
    if !dups.is_empty() {
        v.push(format!(
            "{} outputs stored more than once inside the duplicate window, e.g. {:?}",
            dups.len(),
            dups[0]
        ));
    }
    if run.admitted != run.reference {
        v.push(format!(
            "downstream admitted {} outputs, the reference run has {}; first difference at {:?}",
            run.admitted.len(),
            run.reference.len(),
            run.admitted
                .iter()
                .zip(&run.reference)
                .position(|(a, b)| a != b)
        ));
    }
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smr_replicas_agree_and_outputs_are_deduplicated() {
    let Some(run) = smr_run(blazes_runtime::nats::smr::OutputIds::Derived, 5).await else {
        return;
    };
    let violations = smr_violations(&run);
    assert!(violations.is_empty(), "{violations:#?}");
    // The late replica's copies came after the window: the stream holds them, the durable
    // high-water mark (across the consumer's restart) drops them.
    assert!(
        run.outputs.iter().any(|m| m.sequence >= run.late_from),
        "the late replica's replay must reach the stream (else the high-water mark is untested)"
    );
    let half_ids: Vec<_> = run.reference.iter().map(|(id, _)| *id).collect();
    assert!(run.after_restart.iter().all(|id| half_ids.contains(id)));
    assert!(
        run.after_restart.len() < run.reference.len(),
        "the restarted consumer resumed after its mark"
    );
}

/// Negative control: replicas that publish outputs without the position-derived id. Every
/// replica's copy is stored; the stream holds duplicates inside the window.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smr_control_without_message_ids_stores_every_copy() {
    let Some(run) = smr_run(blazes_runtime::nats::smr::OutputIds::Off, 5).await else {
        return;
    };
    let violations = smr_violations(&run);
    println!("control's violations: {violations:#?}");
    assert!(
        violations.iter().any(|v| v.contains("more than once")),
        "{violations:#?}"
    );
}

struct BarrierRun {
    /// Every release message in the stream, by partition.
    releases:
        std::collections::BTreeMap<String, Vec<Vec<blazes_runtime::nats::barrier::BatchRecord>>>,
    /// What the producers published (and had acknowledged), by partition.
    expected: std::collections::BTreeMap<String, Vec<(String, u64, Bytes)>>,
    events: Vec<blazes_runtime::nats::barrier::BarrierEvent>,
    crashes: usize,
    records_left: usize,
}

/// Three producers, at different paces, fill six partitions round-robin (every partition
/// half-full at once), then seal them; partition w4 declares its own set {p0, p1}; p2 holds back its seal of w5 until
/// the barrier reports the stall. The barrier is crashed at seeded points (its poll dropped
/// mid-flight, a new instance rebuilt from the stream). After w0's release, a resend and a
/// late record for it arrive.
async fn barrier_run(
    rule: blazes_runtime::nats::barrier::ReleaseRule,
    seed_value: u64,
) -> Option<BarrierRun> {
    use blazes_runtime::nats::barrier::{BarrierConfig, BarrierEvent, SealBarrier};
    use std::collections::BTreeMap;
    use std::sync::{Arc, Mutex};
    let mut rng = Rng(seed(seed_value));
    let cluster = Cluster::start(3, "").await?;
    let js = jetstream::new(cluster.client().await);
    cluster.wait_ready(&js, 3).await;
    let mut config = BarrierConfig::new("BAR", &["p0", "p1", "p2"]);
    config.stall_after = Duration::from_secs(1);
    config.rule = rule;
    let barrier = SealBarrier::open(js.clone(), config.clone()).await.unwrap();
    barrier.declare("w4", &["p0", "p1"]).await.unwrap();
    let partitions: Vec<String> = (0..6).map(|i| format!("w{i}")).collect();
    let events = Arc::new(Mutex::new(Vec::<BarrierEvent>::new()));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    // Completed polls (low 32 bits) and crashes (high 32 bits) of the barrier task.
    let progress = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let crash_seed = rng.next();
    let barrier_task = {
        let (events, stop, js, config, progress) = (
            events.clone(),
            stop.clone(),
            js.clone(),
            config.clone(),
            progress.clone(),
        );
        tokio::spawn(async move {
            let mut rng = Rng(crash_seed);
            let mut barrier = barrier;
            let mut crashes = 0;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                let limit = if rng.below(2) == 0 {
                    Duration::from_micros(200 + rng.below(8000) as u64)
                } else {
                    Duration::from_secs(60)
                };
                match tokio::time::timeout(limit, barrier.poll()).await {
                    Ok(polled) => {
                        progress.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        events.lock().unwrap().extend(polled.unwrap())
                    }
                    Err(_) => {
                        crashes += 1;
                        progress.fetch_add(1 << 32, std::sync::atomic::Ordering::SeqCst);
                        barrier = SealBarrier::open(js.clone(), config.clone()).await.unwrap();
                    }
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            // A clean stop: the polls after the last report delete what it reported.
            for _ in 0..2 {
                let polled = barrier.poll().await.unwrap();
                events.lock().unwrap().extend(polled);
            }
            crashes
        })
    };
    let mut expected: BTreeMap<String, Vec<(String, u64, Bytes)>> = BTreeMap::new();
    let mut producers = Vec::new();
    for (pace, p) in ["p0", "p1", "p2"].into_iter().enumerate() {
        let handle = SealBarrier::open(js.clone(), config.clone())
            .await
            .unwrap()
            .producer(p);
        let counts: Vec<u64> = partitions.iter().map(|_| 2 + rng.below(5) as u64).collect();
        let partitions = partitions.clone();
        producers.push(tokio::spawn(async move {
            let mut sent = Vec::new();
            let most = *counts.iter().max().unwrap();
            for index in 0..most {
                for (w, count) in partitions.iter().zip(&counts) {
                    if index < *count && !(w == "w4" && p == "p2") {
                        let payload = Bytes::from(format!("{p}/{w}/{index}"));
                        handle.record(w, index, payload.clone()).await.unwrap();
                        if p == "p1" && w == "w1" && index == 0 {
                            handle.record(w, index, payload.clone()).await.unwrap();
                        }
                        sent.push((w.clone(), p.to_string(), index, payload));
                        // Producers run at different paces: p0 seals while p2 is still writing.
                        tokio::time::sleep(Duration::from_millis(4 * pace as u64)).await;
                    }
                }
            }
            for (w, count) in partitions.iter().zip(&counts) {
                if p == "p2" && (w == "w4" || w == "w5") {
                    continue;
                }
                handle.seal(w, *count).await.unwrap();
            }
            (handle, counts[5], sent)
        }));
    }
    let mut p2 = None;
    for t in producers {
        let (handle, w5_count, sent) = t.await.unwrap();
        for (w, p, i, payload) in sent {
            expected.entry(w).or_default().push((p, i, payload));
        }
        p2 = Some((handle, w5_count));
    }
    let wait = async |what: &str, pred: &dyn Fn(&[BarrierEvent]) -> bool| {
        let deadline = Instant::now() + Duration::from_secs(90);
        while !pred(&events.lock().unwrap()) {
            let p = progress.load(std::sync::atomic::Ordering::SeqCst);
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what} after {} completed polls and {} crashes: {:#?}",
                p & 0xffff_ffff,
                p >> 32,
                events.lock().unwrap()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    let released = |w: &'static str| {
        move |e: &[BarrierEvent]| {
            e.iter()
                .any(|e| matches!(e, BarrierEvent::Released(r) if r.partition == w))
        }
    };
    let stalled = |e: &[BarrierEvent]| {
        e.iter()
            .any(|e| matches!(e, BarrierEvent::Stalled { partition, .. } if partition == "w5"))
    };
    if rule == blazes_runtime::nats::barrier::ReleaseRule::AllSealed {
        wait("the stall of w5", &stalled).await;
    }
    let (p2, w5_count) = p2.unwrap();
    p2.seal("w5", w5_count).await.unwrap();
    // The release is durable in the stream even when the instance that made it crashed before
    // reporting it; wait on the stream.
    let stream = js.get_stream("BAR").await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(40);
    for w in &partitions {
        while stream
            .get_last_raw_message_by_subject(&format!("BAR.rel.{w}"))
            .await
            .is_err()
        {
            assert!(
                Instant::now() < deadline,
                "{w} never released: {:#?}",
                events.lock().unwrap()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let _ = released;
    if rule == blazes_runtime::nats::barrier::ReleaseRule::AllSealed {
        // A resend of w0's record 0 after the duplicate window (a fresh id) and a late record.
        let resend = |id: &str, index: u64, payload: &str| {
            let mut h = async_nats::HeaderMap::new();
            h.insert("Nats-Msg-Id", id);
            h.insert("Blazes-Index", index.to_string().as_str());
            let js = js.clone();
            let payload = Bytes::from(payload.to_string());
            async move {
                js.send_publish(
                    "BAR.rec.w0.p0",
                    Publish::build().headers(h).payload(payload),
                )
                .await
                .unwrap()
                .await
                .unwrap()
            }
        };
        resend("resend-1", 0, "p0/w0/0").await;
        resend("late-1", 99, "p0/w0/99").await;
        wait("the resend and the late record", &|e: &[BarrierEvent]| {
            e.iter()
                .any(|e| matches!(e, BarrierEvent::Retried { index: 0, .. }))
                && e.iter()
                    .any(|e| matches!(e, BarrierEvent::Late { index: 99, .. }))
        })
        .await;
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let crashes = barrier_task.await.unwrap();
    let mut releases: BTreeMap<String, Vec<_>> = BTreeMap::new();
    let mut records_left = 0;
    for m in read_all(&js, "BAR").await {
        let parts: Vec<&str> = m.subject.split('.').collect();
        match parts[1] {
            "rel" => releases
                .entry(parts[2].to_string())
                .or_default()
                .push(blazes_runtime::nats::barrier::decode(&m.payload).unwrap()),
            "rec" => records_left += 1,
            _ => {}
        }
    }
    let events = events.lock().unwrap().clone();
    Some(BarrierRun {
        releases,
        expected,
        events,
        crashes,
        records_left,
    })
}

/// Each partition released once (one release message), with exactly the records of the
/// producers in its set, in (producer, index) order; no record left in the stream after.
fn barrier_violations(run: &BarrierRun) -> Vec<String> {
    let mut v = Vec::new();
    for (w, expected) in &run.expected {
        let mut expected = expected.clone();
        expected.sort();
        match run.releases.get(w).map(Vec::as_slice) {
            Some([batch]) => {
                let got: Vec<(String, u64, Bytes)> = batch
                    .iter()
                    .map(|r| (r.producer.clone(), r.index, r.payload.clone()))
                    .collect();
                if got != expected {
                    v.push(format!(
                        "{w} released {} records, {} were sent: {got:?}",
                        got.len(),
                        expected.len()
                    ));
                }
            }
            other => v.push(format!(
                "{w} has {} release messages",
                other.map_or(0, |r| r.len())
            )),
        }
    }
    if run.records_left != 0 {
        v.push(format!(
            "{} records left in the stream after every release",
            run.records_left
        ));
    }
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn barrier_releases_each_partition_once_complete_across_crashes() {
    use blazes_runtime::nats::barrier::{BarrierEvent, ReleaseRule};
    let Some(run) = barrier_run(ReleaseRule::AllSealed, 3).await else {
        return;
    };
    let violations = barrier_violations(&run);
    assert!(violations.is_empty(), "{violations:#?}\n{:#?}", run.events);
    println!("barrier crashes in the run: {}", run.crashes);
    assert!(run.crashes > 0, "the schedule must crash the barrier");
    let stall = run.events.iter().find_map(|e| match e {
        BarrierEvent::Stalled { partition, missing } if partition == "w5" => Some(missing.clone()),
        _ => None,
    });
    assert_eq!(
        stall,
        Some(vec!["p2".to_string()]),
        "the producer that stopped sealing is named"
    );
    assert!(
        !run.events
            .iter()
            .any(|e| matches!(e, BarrierEvent::Stalled { partition, .. } if partition != "w5")),
        "only w5 stalled: {:#?}",
        run.events
    );
    assert!(
        !run.events
            .iter()
            .any(|e| matches!(e, BarrierEvent::Inconsistent { .. }))
    );
    let released: Vec<&str> = run
        .events
        .iter()
        .filter_map(|e| match e {
            BarrierEvent::Released(r) => Some(r.partition.as_str()),
            _ => None,
        })
        .collect();
    let mut unique = released.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(
        unique.len(),
        released.len(),
        "a Released event twice: {released:?}"
    );
}

/// Negative control: the same run with a barrier that releases on a partition's first seal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn barrier_control_releasing_on_first_seal_is_incomplete() {
    use blazes_runtime::nats::barrier::ReleaseRule;
    let Some(run) = barrier_run(ReleaseRule::FirstSeal, 3).await else {
        return;
    };
    let violations = barrier_violations(&run);
    println!("control's violations: {violations:#?}");
    assert!(
        violations.iter().any(|v| v.contains("records, ")),
        "{violations:#?}"
    );
}

/// Reads that poll a stream (a host waiting for its next input) leave no consumers behind.
/// Left behind, each one lives until the server's inactivity threshold (30 s) and is matched
/// against every message stored: a word count's global order slowed to a 30 s stall.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn polling_reads_leave_no_consumers_and_without_deleting_they_pile_up() {
    let Some(cluster) = Cluster::start(1, "").await else {
        return;
    };
    let js = jetstream::new(cluster.client().await);
    cluster.wait_ready(&js, 1).await;
    let mut stream = js
        .create_stream(jetstream::stream::Config {
            name: "POLLED".into(),
            subjects: vec!["polled".into()],
            ..Default::default()
        })
        .await
        .unwrap();
    for i in 0..10 {
        js.publish("polled", Bytes::from(format!("m{i}")))
            .await
            .unwrap()
            .await
            .unwrap();
    }
    let retry = Duration::from_secs(10);
    for _ in 0..20 {
        let read = rt::read_stream(&stream, None, 4, 3, retry).await.unwrap();
        let positions: Vec<u64> = read.iter().map(|m| m.sequence).collect();
        assert_eq!(positions, [4, 5, 6]);
        // Past the end, as a caught-up reader polls.
        assert!(
            rt::read_stream(&stream, None, 11, 100, retry)
                .await
                .unwrap()
                .is_empty()
        );
    }
    assert_eq!(stream.info().await.unwrap().state.consumer_count, 0);
    // Negative control: the same reads, leaving their consumers.
    for _ in 0..20 {
        let read = rt::read_stream_leaving_consumers(&stream, None, 4, 3, retry)
            .await
            .unwrap();
        assert_eq!(read.len(), 3);
        rt::read_stream_leaving_consumers(&stream, None, 11, 100, retry)
            .await
            .unwrap();
    }
    assert_eq!(stream.info().await.unwrap().state.consumer_count, 40);
}

/// Two barrier instances polling the same stream while two producers fill 60 partitions: each
/// partition is released once, and an instance that loses the race for a partition (it read
/// the last seal, the other released and purged the records meanwhile) says nothing. Returns
/// the releases and the inconsistencies reported.
async fn racing_barriers(
    rule: blazes_runtime::nats::barrier::ReleaseRule,
    name: &str,
) -> (usize, usize) {
    use blazes_runtime::nats::barrier::{
        BarrierConfig, BarrierEvent, BarrierProducer, SealBarrier,
    };
    let cluster = Cluster::start(1, "").await.expect("checked by the caller");
    let js = jetstream::new(cluster.client().await);
    cluster.wait_ready(&js, 1).await;
    let mut config = BarrierConfig::new(name, &["p1", "p2"]);
    config.replicas = 1;
    config.retry_for = Duration::from_secs(10);
    config.rule = rule;
    let a = SealBarrier::open(js.clone(), config.clone()).await.unwrap();
    let b = SealBarrier::open(js.clone(), config.clone()).await.unwrap();
    let producers = ["p1", "p2"].map(|p| BarrierProducer::new(js.clone(), &config, p));
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let poll = |mut barrier: SealBarrier| {
        let done = done.clone();
        tokio::spawn(async move {
            let mut events = Vec::new();
            loop {
                let last = done.load(std::sync::atomic::Ordering::SeqCst);
                events.extend(barrier.poll().await.unwrap());
                if last {
                    return events;
                }
            }
        })
    };
    let (ta, tb) = (poll(a), poll(b));
    for n in 0..60 {
        let partition = format!("w{n}");
        for p in &producers {
            p.record(&partition, 0, Bytes::from(format!("{n}")))
                .await
                .unwrap();
            p.seal(&partition, 1).await.unwrap();
        }
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    let events: Vec<BarrierEvent> = [ta.await.unwrap(), tb.await.unwrap()].concat();
    let released = events
        .iter()
        .filter(|e| matches!(e, BarrierEvent::Released(_)))
        .count();
    let inconsistent = events
        .iter()
        .filter(|e| matches!(e, BarrierEvent::Inconsistent { .. }))
        .count();
    (released, inconsistent)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_barrier_instances_release_once_and_report_no_false_inconsistency() {
    use blazes_runtime::nats::barrier::ReleaseRule;
    if Cluster::start(1, "").await.is_none() {
        return;
    }
    assert_eq!(
        racing_barriers(ReleaseRule::AllSealed, "RACE").await,
        (60, 0)
    );
    // Negative control: the loser does not look for the winner's release.
    let (released, inconsistent) = racing_barriers(ReleaseRule::AllSealedBlind, "BLIND").await;
    println!("control: {inconsistent} partitions reported inconsistent by the race's loser");
    assert_eq!(released, 60);
    assert!(
        inconsistent > 0,
        "the race is lost somewhere in 60 partitions"
    );
}

/// Events of a barrier read as a stream (`SealBarrier::into_events`) until `want` partitions
/// are released or `limit` passes; `sealers` of the two producers seal each partition.
async fn barrier_stream_run(
    name: &str,
    sealers: &[&str],
) -> Vec<blazes_runtime::nats::barrier::BarrierEvent> {
    use blazes_runtime::nats::barrier::{
        BarrierConfig, BarrierEvent, BarrierProducer, SealBarrier,
    };
    use futures_util::StreamExt;
    let cluster = Cluster::start(1, "").await.expect("checked by the caller");
    let js = jetstream::new(cluster.client().await);
    cluster.wait_ready(&js, 1).await;
    let mut config = BarrierConfig::new(name, &["p1", "p2"]);
    config.replicas = 1;
    config.retry_for = Duration::from_secs(10);
    config.stall_after = Duration::from_millis(300);
    let barrier = SealBarrier::open(js.clone(), config.clone()).await.unwrap();
    for n in 0..5 {
        let partition = format!("w{n}");
        for p in ["p1", "p2"] {
            let producer = BarrierProducer::new(js.clone(), &config, p);
            producer
                .record(&partition, 0, Bytes::from(format!("{p}{n}")))
                .await
                .unwrap();
            if sealers.contains(&p) {
                producer.seal(&partition, 1).await.unwrap();
            }
        }
    }
    let events = barrier.into_events(Duration::from_millis(20));
    let mut events = std::pin::pin!(events);
    let mut seen = Vec::new();
    let until = Instant::now() + Duration::from_secs(10);
    while let Ok(Some(event)) = tokio::time::timeout_at(until.into(), events.next()).await {
        seen.push(event.unwrap());
        let released = seen
            .iter()
            .filter(|e| matches!(e, BarrierEvent::Released(_)))
            .count();
        let stalled = seen
            .iter()
            .filter(|e| matches!(e, BarrierEvent::Stalled { .. }))
            .count();
        if released == 5 || stalled == 5 {
            break;
        }
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_barrier_as_a_stream_yields_each_release_once_with_its_records() {
    use blazes_runtime::nats::barrier::BarrierEvent;
    if Cluster::start(1, "").await.is_none() {
        return;
    }
    let events = barrier_stream_run("STREAMED", &["p1", "p2"]).await;
    let mut released: Vec<(String, usize)> = events
        .iter()
        .filter_map(|e| match e {
            BarrierEvent::Released(r) => Some((r.partition.clone(), r.records.len())),
            _ => None,
        })
        .collect();
    released.sort();
    let want: Vec<(String, usize)> = (0..5).map(|n| (format!("w{n}"), 2)).collect();
    assert_eq!(released, want, "{events:?}");
    // Negative control: the same stream with one producer never sealing releases nothing and
    // reports every partition as waiting for it.
    let events = barrier_stream_run("UNSEALED", &["p1"]).await;
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, BarrierEvent::Released(_))),
        "{events:?}"
    );
    let missing: Vec<&Vec<String>> = events
        .iter()
        .filter_map(|e| match e {
            BarrierEvent::Stalled { missing, .. } => Some(missing),
            _ => None,
        })
        .collect();
    assert_eq!(missing.len(), 5, "{events:?}");
    assert!(
        missing.iter().all(|m| m.as_slice() == ["p2"]),
        "{missing:?}"
    );
}

/// A subscriber that records the names of the spans opened, for the test below (the runtime
/// depends on `tracing` alone; an application brings its own subscriber).
struct SpanNames(std::sync::Arc<std::sync::Mutex<Vec<&'static str>>>);

impl tracing::Subscriber for SpanNames {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        let mut names = self.0.lock().unwrap();
        names.push(span.metadata().name());
        tracing::span::Id::from_u64(names.len() as u64)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, _: &tracing::Event<'_>) {}
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// Every engine operation runs in a span an operator's subscriber sees: opening a sequencer
/// gets or creates its stream, a send publishes, a read reads.
#[tokio::test(flavor = "current_thread")]
async fn engine_operations_run_in_tracing_spans() {
    let Some(cluster) = Cluster::start(1, "").await else {
        return;
    };
    let js = jetstream::new(cluster.client().await);
    cluster.wait_ready(&js, 1).await;
    let names = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let _guard = tracing::subscriber::set_default(SpanNames(names.clone()));
    // Other tests of this binary, on threads without a subscriber, may have hit a callsite
    // first and cached it as uninteresting; ask every callsite again now ours is registered.
    tracing::callsite::rebuild_interest_cache();
    let mut config = SequencerConfig::new("TRACED");
    config.replicas = 1;
    let sequencer = Sequencer::open(js.clone(), config).await.unwrap();
    let mut producer = sequencer.producer("p1").await.unwrap();
    producer.send(Bytes::from_static(b"x")).await.unwrap();
    let (read, _) = sequencer.read_sequenced(1, 10).await.unwrap();
    assert_eq!(read.len(), 1);
    let seen = names.lock().unwrap().clone();
    for span in ["ensure_stream", "publish", "read"] {
        assert!(seen.contains(&span), "no `{span}` span in {seen:?}");
    }
}

/// Publishes `payload` on `subject`, retried while the cluster elects a stream leader.
async fn publish_retried(js: &jetstream::Context, subject: &str, payload: String) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let attempt = async {
            js.send_publish(
                subject.to_string(),
                Publish::build()
                    .payload(Bytes::from(payload.clone()))
                    .message_id(payload.clone()),
            )
            .await?
            .await
            .map_err(async_nats::Error::from)
        };
        match attempt.await {
            Ok(ack) => return ack.sequence,
            Err(e) => assert!(Instant::now() < deadline, "publish {payload}: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A subscription yields the filtered messages from its start in order, then follows the
/// stream as it grows, across a stream leader's crash: each message once, none skipped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscription_follows_the_stream_in_order_across_a_leader_crash() {
    use futures_util::StreamExt;
    let Some(mut cluster) = Cluster::start(3, "").await else {
        return;
    };
    let js = jetstream::new(cluster.client().await);
    cluster.wait_ready(&js, 3).await;
    let stream = js
        .create_stream(jetstream::stream::Config {
            name: "TAIL".into(),
            subjects: vec!["tail.*".into()],
            num_replicas: 3,
            ..Default::default()
        })
        .await
        .unwrap();
    let mut wanted = Vec::new();
    for i in 0..10 {
        let subject = if i % 2 == 0 { "tail.a" } else { "tail.b" };
        let sequence = publish_retried(&js, subject, format!("m{i}")).await;
        if subject == "tail.a" && sequence >= 3 {
            wanted.push(sequence);
        }
    }
    let mut sub = rt::subscribe(stream, Some("tail.a".into()), 3, Duration::from_secs(30));
    let mut got = Vec::new();
    while got.len() < wanted.len() {
        let m = sub.next().await.unwrap().unwrap();
        assert_eq!(m.subject, "tail.a");
        got.push(m.sequence);
    }
    assert_eq!(got, wanted, "the stored messages from sequence 3, in order");
    // Messages stored after the subscription started arrive too, across a leader crash.
    let leader = cluster.stream_leader(&js, "TAIL").await;
    for i in 10..40 {
        if i == 20 {
            cluster.kill(leader);
        }
        if i == 30 {
            cluster.restart(leader);
        }
        let subject = if i % 2 == 0 { "tail.a" } else { "tail.b" };
        let sequence = publish_retried(&js, subject, format!("m{i}")).await;
        if subject == "tail.a" {
            wanted.push(sequence);
        }
    }
    while got.len() < wanted.len() {
        let m = tokio::time::timeout(Duration::from_secs(60), sub.next())
            .await
            .expect("the subscription keeps up")
            .unwrap()
            .unwrap();
        got.push(m.sequence);
    }
    assert_eq!(got, wanted, "each message once, in order, none skipped");
}

/// A subscription whose server is gone ends with `Unavailable` once its retry budget is spent,
/// and the error keeps the client's error as its source.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscription_without_a_server_ends_unavailable_with_its_cause() {
    use futures_util::StreamExt;
    use std::error::Error as _;
    let Some(mut cluster) = Cluster::start(1, "").await else {
        return;
    };
    let js = jetstream::new(cluster.client().await);
    cluster.wait_ready(&js, 1).await;
    let stream = js
        .create_stream(jetstream::stream::Config {
            name: "GONE".into(),
            subjects: vec!["gone".into()],
            ..Default::default()
        })
        .await
        .unwrap();
    publish_retried(&js, "gone", "m0".into()).await;
    let mut sub = rt::subscribe(stream, None, 1, Duration::from_secs(3));
    assert_eq!(sub.next().await.unwrap().unwrap().sequence, 1);
    cluster.kill(0);
    let end = tokio::time::timeout(Duration::from_secs(60), sub.next())
        .await
        .expect("the subscription gives up within its budget")
        .expect("an error before the end");
    match end {
        Err(e @ NatsError::Unavailable { .. }) => {
            assert!(e.source().is_some(), "{e}: the cause is kept");
        }
        other => panic!("expected Unavailable, got {other:?}"),
    }
    assert!(
        sub.next().await.is_none(),
        "the subscription ends after its error"
    );
}

/// A write the server refuses (someone newer holds the lease) ends the session at once:
/// `next` answers `LeaseLost` instead of handing the zombie more inputs, without waiting for
/// the renewer to notice (its next renewal is a third of a long TTL away).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_write_ends_the_session() {
    use blazes_runtime::nats::session::{Keyed, KeyedConfig};
    let Some(cluster) = Cluster::start(1, "").await else {
        return;
    };
    let js = jetstream::new(cluster.client().await);
    cluster.wait_ready(&js, 1).await;
    let config = KeyedConfig::new("REFUSED", 1)
        .lease_ttl(Duration::from_secs(60))
        .replicas(1)
        .retry_for(Duration::from_secs(10));
    let keyed = Keyed::open(js.clone(), config).await.unwrap();
    for i in 0..3 {
        keyed
            .publish("k", &format!("i{i}"), Bytes::from(format!("{i}")))
            .await
            .unwrap();
    }
    let worker = keyed.worker("wA");
    let mut session = worker.accept_next().await.unwrap();
    let first = session.next().await.unwrap();
    session.emit(first.offset, 0, "out".into()).await.unwrap();
    // Control: after an accepted write the same session goes on with the next input.
    let second = tokio::time::timeout(Duration::from_secs(5), session.next())
        .await
        .expect("next answers at once");
    assert!(
        second.is_ok(),
        "an accepted write keeps the session: {second:?}"
    );
    // A newer holder's lease message, as a successor writes it after a takeover.
    js.publish("REFUSED.lease.0", Bytes::new())
        .await
        .unwrap()
        .await
        .unwrap();
    let refused = session.emit(first.offset, 1, "late".into()).await;
    assert!(
        matches!(refused, Err(NatsError::Fenced { .. })),
        "{refused:?}"
    );
    let after = tokio::time::timeout(Duration::from_secs(5), session.next())
        .await
        .expect("next answers at once");
    assert!(
        matches!(after, Err(NatsError::LeaseLost { partition: 0 })),
        "the session is over after a refused write, got {after:?}"
    );
}

/// A retry with the same id and content lands once; the same id with other content is a
/// `Conflict`, not a silent "duplicate" that drops the new content.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reused_id_with_other_content_is_a_conflict() {
    use blazes_runtime::nats::session::{Keyed, KeyedConfig};
    let Some(cluster) = Cluster::start(1, "").await else {
        return;
    };
    let js = jetstream::new(cluster.client().await);
    cluster.wait_ready(&js, 1).await;
    let config = KeyedConfig::new("REUSED", 1)
        .replicas(1)
        .retry_for(Duration::from_secs(10));
    let keyed = Keyed::open(js.clone(), config).await.unwrap();
    let first = keyed.publish("k", "i1", "a".into()).await.unwrap();
    let retry = keyed.publish("k", "i1", "a".into()).await.unwrap();
    assert!(
        retry.duplicate && retry.sequence == first.sequence,
        "{retry:?}"
    );
    let other = keyed.publish("k", "i1", "b".into()).await;
    assert!(
        matches!(other, Err(NatsError::Conflict { sequence, .. }) if sequence == first.sequence),
        "{other:?}"
    );
    assert_eq!(
        read_all(&js, "REUSED").await.len(),
        1,
        "nothing else was stored"
    );
}

/// Counts the inputs it applied; each input's output is the count so far.
#[derive(Default)]
struct Counter {
    applied: u64,
}

impl blazes_runtime::StateMachine for Counter {
    fn apply(&mut self, _input: &[u8]) -> Vec<Vec<u8>> {
        self.applied += 1;
        vec![self.applied.to_string().into_bytes()]
    }

    fn snapshot(&self) -> Vec<u8> {
        self.applied.to_be_bytes().to_vec()
    }

    fn restore(snapshot: &[u8]) -> Result<Self, blazes_runtime::SmrError> {
        Ok(Counter {
            applied: u64_snapshot(snapshot)?,
        })
    }
}

/// A replica applies the first of two inputs while its output stream is gone (the step fails
/// after `retry_for`), the stream comes back and the step is retried. Returns the inputs the
/// machine applied and the outputs stored.
async fn a_step_retried_after_a_failed_publish(
    js: &jetstream::Context,
    forget_unpublished: bool,
) -> (u64, Vec<Bytes>) {
    use blazes_runtime::nats::smr::{Replica, ReplicaConfig};
    let name = format!("ATOM{}", u8::from(forget_unpublished));
    let sequencer = Sequencer::open(
        js.clone(),
        SequencerConfig::new(&format!("{name}IN")).replicas(1),
    )
    .await
    .unwrap();
    let mut producer = sequencer.producer("p").await.unwrap();
    for i in 0..2 {
        producer.send(Bytes::from(format!("{i}"))).await.unwrap();
    }
    let outputs = format!("{name}OUT");
    let mut config = ReplicaConfig::new("atom", "r0")
        .outputs(outputs.clone())
        .checkpoints(format!("{name}CK"))
        .checkpoint_every(0)
        .replicas(1)
        .retry_for(Duration::from_secs(1));
    config.forget_unpublished = forget_unpublished;
    let mut replica = Replica::open(js.clone(), &sequencer, config, Counter::default())
        .await
        .unwrap();
    js.delete_stream(&outputs).await.unwrap();
    let failed = replica.step(10).await;
    assert!(
        matches!(failed, Err(NatsError::Unavailable { .. })),
        "{failed:?}"
    );
    js.create_stream(jetstream::stream::Config {
        name: outputs.clone(),
        subjects: vec![format!("{outputs}.>")],
        num_replicas: 1,
        ..Default::default()
    })
    .await
    .unwrap();
    while replica.next_position() <= 3 && replica.step(10).await.unwrap() > 0 {}
    let stored = read_all(js, &outputs)
        .await
        .into_iter()
        .map(|m| m.payload)
        .collect();
    (replica.machine().applied, stored)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_step_that_fails_to_publish_applies_no_input_twice() {
    let Some(cluster) = Cluster::start(1, "").await else {
        return;
    };
    let js = jetstream::new(cluster.client().await);
    cluster.wait_ready(&js, 1).await;
    let (applied, stored) = a_step_retried_after_a_failed_publish(&js, false).await;
    assert_eq!(applied, 2, "each input applied once");
    assert_eq!(stored, [Bytes::from("1"), Bytes::from("2")]);
    // Negative control: a step that forgets what it applied reads the first input again.
    let (applied, stored) = a_step_retried_after_a_failed_publish(&js, true).await;
    assert_eq!(applied, 3, "the first input applied twice");
    assert_eq!(stored, [Bytes::from("2"), Bytes::from("3")]);
}

/// A barrier waits for producer `a` on 20 partitions while producer `x`, outside every
/// partition's set, keeps writing records for them: before, during and after their releases.
/// Returns how many of x's records were published and the ones the barrier reported late.
async fn records_outside_the_set(
    rule: blazes_runtime::nats::barrier::ReleaseRule,
    name: &str,
) -> (usize, std::collections::BTreeSet<(String, u64)>) {
    use blazes_runtime::nats::barrier::{
        BarrierConfig, BarrierEvent, BarrierProducer, SealBarrier,
    };
    let cluster = Cluster::start(1, "").await.expect("checked by the caller");
    let js = jetstream::new(cluster.client().await);
    cluster.wait_ready(&js, 1).await;
    let mut config = BarrierConfig::new(name, &["a"]);
    config.replicas = 1;
    config.retry_for = Duration::from_secs(10);
    config.rule = rule;
    let mut barrier = SealBarrier::open(js.clone(), config.clone()).await.unwrap();
    let (a, x) = (
        BarrierProducer::new(js.clone(), &config, "a"),
        BarrierProducer::new(js.clone(), &config, "x"),
    );
    let partitions: Vec<String> = (0..20).map(|n| format!("w{n}")).collect();
    for p in &partitions {
        x.record(p, 0, "x".into()).await.unwrap();
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (stop, partitions) = (stop.clone(), partitions.clone());
        tokio::spawn(async move {
            let mut written = partitions.len();
            let mut index = 1;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                for p in &partitions {
                    x.record(p, index, "x".into()).await.unwrap();
                    written += 1;
                }
                index += 1;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            written
        })
    };
    let mut events = Vec::new();
    let released = |events: &[BarrierEvent]| {
        events
            .iter()
            .filter(|e| matches!(e, BarrierEvent::Released(_)))
            .count()
    };
    for p in &partitions {
        a.record(p, 0, "a".into()).await.unwrap();
        a.seal(p, 1).await.unwrap();
        events.extend(barrier.poll().await.unwrap());
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while released(&events) < partitions.len() && Instant::now() < deadline {
        events.extend(barrier.poll().await.unwrap());
    }
    assert_eq!(released(&events), partitions.len());
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let written = writer.await.unwrap();
    // Until every record is read: the stream holds nothing of x any more (each one is reported,
    // then deleted at the next poll, or purged with its partition).
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        events.extend(barrier.poll().await.unwrap());
        let left = read_all(&js, name)
            .await
            .into_iter()
            .filter(|m| m.subject.contains(".rec.") && m.subject.ends_with(".x"))
            .count();
        if left == 0 || Instant::now() > deadline {
            break;
        }
    }
    // Each partition released once, with a's record and nothing of x's.
    let releases: Vec<(String, std::collections::BTreeSet<String>)> = events
        .iter()
        .filter_map(|e| match e {
            BarrierEvent::Released(r) => Some((
                r.partition.clone(),
                r.records
                    .iter()
                    .map(|b| format!("{}:{}", b.producer, b.index))
                    .collect(),
            )),
            _ => None,
        })
        .collect();
    let expected = partitions
        .iter()
        .map(|p| (p.clone(), ["a:0".to_string()].into()))
        .collect();
    let wrong = history::release_anomalies(&releases, &expected, &Default::default());
    assert!(wrong.is_empty(), "{wrong:?}");
    let late = events
        .into_iter()
        .filter_map(|e| match e {
            BarrierEvent::Late {
                partition,
                producer,
                index,
            } if producer == "x" => Some((partition, index)),
            _ => None,
        })
        .collect();
    (written, late)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_record_a_release_did_not_take_is_reported_late_never_purged_unseen() {
    use blazes_runtime::nats::barrier::ReleaseRule;
    if Cluster::start(1, "").await.is_none() {
        return;
    }
    let (written, late) = records_outside_the_set(ReleaseRule::AllSealed, "OUTSIDE").await;
    assert_eq!(late.len(), written, "each of x's records reported once");
    // Negative control: purging whatever was stored before the release drops the records of
    // x it did not take, without a report.
    let (written, late) =
        records_outside_the_set(ReleaseRule::AllSealedPurgeBeforeRelease, "PURGED").await;
    assert!(late.len() < written, "{} of {written} reported", late.len());
}
