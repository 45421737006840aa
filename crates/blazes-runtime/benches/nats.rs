//! JetStream runtime benchmarks against one real 3-node cluster (started like the tests do):
//! each mechanism against its baseline on the same server, in the same run, as ratios.
//!
//! `cargo bench -p blazes-runtime --features nats --bench nats` (needs `BLAZES_NATS_SERVER` or `nats-server` on
//! PATH; `scripts/nats-server-path` installs it). Results: `docs/benchmarks.md`.

#[path = "../tests/support_nats/mod.rs"]
mod support_nats;

use std::time::{Duration, Instant};

use async_nats::jetstream;
use blazes_runtime::nats::barrier::{BarrierConfig, BarrierEvent, SealBarrier};
use blazes_runtime::nats::sequencer::{Sequencer, SequencerConfig};
use blazes_runtime::nats::session::{Keyed, KeyedConfig};
use blazes_runtime::nats::{self as rt};
use bytes::Bytes;
use support_nats::Cluster;

const MESSAGES: usize = 2000;

fn rate(n: usize, d: Duration) -> f64 {
    n as f64 / d.as_secs_f64()
}

/// Raw JetStream publishes (acknowledged, with a message id) vs the sequencer, with 1 and 4
/// concurrent producers, each awaiting its acknowledgement before the next publish.
async fn sequencer(js: &jetstream::Context) {
    // Warm-up: the first publishes of a run pay for connections and stream placement.
    js.create_stream(jetstream::stream::Config {
        name: "WARMUP".into(),
        subjects: vec!["WARMUP.>".into()],
        num_replicas: 3,
        ..Default::default()
    })
    .await
    .unwrap();
    for i in 0..500 {
        js.publish("WARMUP.x", Bytes::from(format!("{i}")))
            .await
            .unwrap()
            .await
            .unwrap();
    }
    for producers in [1usize, 4] {
        let stream = format!("RAW{producers}");
        js.create_stream(jetstream::stream::Config {
            name: stream.clone(),
            subjects: vec![format!("{stream}.>")],
            num_replicas: 3,
            ..Default::default()
        })
        .await
        .unwrap();
        let per = MESSAGES / producers;
        let started = Instant::now();
        let mut tasks = Vec::new();
        for p in 0..producers {
            let (js, stream) = (js.clone(), stream.clone());
            tasks.push(tokio::spawn(async move {
                for i in 0..per {
                    let mut h = async_nats::HeaderMap::new();
                    h.insert("Nats-Msg-Id", format!("{p}:{i}").as_str());
                    js.publish_with_headers(
                        format!("{stream}.p{p}"),
                        h,
                        Bytes::from_static(
                            b"payload-64-bytes-payload-64-bytes-payload-64-bytes-payload-64-b",
                        ),
                    )
                    .await
                    .unwrap()
                    .await
                    .unwrap();
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        let raw = started.elapsed();
        let sequencer =
            Sequencer::open(js.clone(), SequencerConfig::new(&format!("SEQ{producers}")))
                .await
                .unwrap();
        let started = Instant::now();
        let mut tasks = Vec::new();
        for p in 0..producers {
            let sequencer = sequencer.clone();
            tasks.push(tokio::spawn(async move {
                let mut producer = sequencer.producer(&format!("p{p}")).await.unwrap();
                for _ in 0..per {
                    producer
                        .send(Bytes::from_static(
                            b"payload-64-bytes-payload-64-bytes-payload-64-bytes-payload-64-b",
                        ))
                        .await
                        .unwrap();
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        let seq = started.elapsed();
        println!(
            "sequencer, {producers} producer(s), {MESSAGES} messages: raw publish {:.0} msg/s, sequencer {:.0} msg/s, sequencer/raw time {:.2}",
            rate(MESSAGES, raw),
            rate(MESSAGES, seq),
            seq.as_secs_f64() / raw.as_secs_f64()
        );
    }
}

/// Keyed sessions: 8 partitions, 1000 inputs published first, then 1, 2 or 4 in-process
/// workers (each its own connection) process them (emit + commit per input, no work).
async fn keyed(cluster: &Cluster) {
    const INPUTS: usize = 1000;
    let mut baseline = None;
    // What the component's one stream takes at the same concurrency: 8 publishers (one per
    // partition), two acknowledged publishes per input (as emit + commit), no sessions; once
    // plain and once with the expectation every fenced write carries (on `lease.P`, empty
    // here, so it always holds).
    for fenced in [false, true] {
        let js = jetstream::new(cluster.client().await);
        let name = if fenced { "KEYEDFENCED" } else { "KEYEDRAW" };
        Keyed::open(js.clone(), KeyedConfig::new(name, 8))
            .await
            .unwrap();
        let started = Instant::now();
        let servers_cpu = cluster.cpu_time();
        let mut tasks = Vec::new();
        for p in 0..8 {
            let js = js.clone();
            tasks.push(tokio::spawn(async move {
                for i in 0..INPUTS / 8 {
                    for kind in ["out", "commit"] {
                        let mut h = async_nats::HeaderMap::new();
                        h.insert("Nats-Msg-Id", format!("{kind}:{p}:{i}").as_str());
                        if fenced {
                            h.insert("Nats-Expected-Last-Subject-Sequence", "0");
                            h.insert(
                                "Nats-Expected-Last-Subject-Sequence-Subject",
                                format!("{name}.lease.{p}").as_str(),
                            );
                        }
                        js.send_publish(
                            format!("{name}.{kind}.{p}"),
                            jetstream::message::PublishMessage::build()
                                .headers(h)
                                .payload(Bytes::from(format!("{i}"))),
                        )
                        .await
                        .unwrap()
                        .await
                        .unwrap();
                    }
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        let took = started.elapsed();
        let servers_cpu = cluster.cpu_time().saturating_sub(servers_cpu);
        println!(
            "baseline, 8 publishers x 2 acknowledged publishes per input on one stream{}, {INPUTS} inputs: {:.0} inputs/s; CPU busy: servers {:.2} cores of 2",
            if fenced {
                ", each with the lease expectation"
            } else {
                ""
            },
            rate(INPUTS, took),
            servers_cpu.as_secs_f64() / took.as_secs_f64()
        );
    }
    for workers in [1usize, 2, 4] {
        let js = jetstream::new(cluster.client().await);
        let name = format!("KEYED{workers}");
        let mut config = KeyedConfig::new(&name, 8);
        config.lease_ttl = Duration::from_secs(5);
        let keyed = Keyed::open(js.clone(), config.clone()).await.unwrap();
        for i in 0..INPUTS {
            keyed
                .publish(
                    &format!("k{}", i % 64),
                    &format!("i{i}"),
                    Bytes::from(format!("{i}")),
                )
                .await
                .unwrap();
        }
        let started = Instant::now();
        let servers_cpu = cluster.cpu_time();
        let client_cpu = support_nats::process_cpu_time("/proc/self/stat");
        let done = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        // When the last input was committed: idle sessions notice the end only at their next
        // poll timeout, which must not count as processing time.
        let finished = std::sync::Arc::new(std::sync::Mutex::new(None::<Instant>));
        let mut tasks = Vec::new();
        for w in 0..workers {
            let js = jetstream::new(cluster.client().await);
            let (config, done, finished) = (config.clone(), done.clone(), finished.clone());
            tasks.push(tokio::spawn(async move {
                let keyed = Keyed::open(js, config).await.unwrap();
                let worker = keyed.worker(&format!("w{w}"));
                let mut sessions = Vec::new();
                // Each worker takes its share of the partitions, then works them.
                for _ in 0..(8 / workers) {
                    sessions.push(worker.accept_next().await.unwrap());
                }
                let mut handles = Vec::new();
                for mut s in sessions {
                    let (done, finished) = (done.clone(), finished.clone());
                    handles.push(tokio::spawn(async move {
                        while done.load(std::sync::atomic::Ordering::SeqCst) < INPUTS {
                            let next =
                                tokio::time::timeout(Duration::from_millis(300), s.next()).await;
                            let Ok(input) = next else { continue };
                            let input = input.unwrap();
                            s.emit(input.offset, 0, input.payload.clone())
                                .await
                                .unwrap();
                            s.commit(input.offset, input.payload).await.unwrap();
                            if done.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1 == INPUTS
                            {
                                *finished.lock().unwrap() = Some(Instant::now());
                            }
                        }
                    }));
                }
                for h in handles {
                    h.await.unwrap();
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        let took = finished.lock().unwrap().expect("every input committed") - started;
        let servers_cpu = cluster.cpu_time().saturating_sub(servers_cpu);
        let client_cpu =
            support_nats::process_cpu_time("/proc/self/stat").saturating_sub(client_cpu);
        let base = *baseline.get_or_insert(took);
        println!(
            "keyed sessions, {workers} worker(s), 8 partitions, {INPUTS} inputs: {:.0} inputs/s, speed-up over 1 worker {:.2}; CPU busy: servers {:.2} + client {:.2} cores of 2",
            rate(INPUTS, took),
            base.as_secs_f64() / took.as_secs_f64(),
            servers_cpu.as_secs_f64() / took.as_secs_f64(),
            client_cpu.as_secs_f64() / took.as_secs_f64()
        );
    }
}

/// The seal barrier vs a pass-through consumer over the same records: 4 producers x 16
/// partitions x 25 records, published and sealed first; then the time to read them all through
/// an ordered consumer vs the time until the barrier released every partition.
async fn barrier(js: &jetstream::Context) {
    let producers = ["p0", "p1", "p2", "p3"];
    let config = BarrierConfig::new("BENCHBAR", &producers);
    let mut barrier = SealBarrier::open(js.clone(), config).await.unwrap();
    let mut records = 0;
    for p in producers {
        let handle = barrier.producer(p);
        for w in 0..16 {
            for i in 0..25 {
                handle
                    .record(&format!("w{w}"), i, Bytes::from(format!("{p}/{w}/{i}")))
                    .await
                    .unwrap();
                records += 1;
            }
            handle.seal(&format!("w{w}"), 25).await.unwrap();
        }
    }
    let stream = js.get_stream("BENCHBAR").await.unwrap();
    let started = Instant::now();
    let read = rt::read_stream(
        &stream,
        Some("BENCHBAR.rec.>"),
        1,
        usize::MAX,
        Duration::from_secs(30),
    )
    .await
    .unwrap();
    let pass = started.elapsed();
    assert_eq!(read.len(), records);
    let started = Instant::now();
    let mut released = 0;
    while released < 16 {
        for e in barrier.poll().await.unwrap() {
            if let BarrierEvent::Released(r) = e {
                assert_eq!(r.records.len(), 100);
                released += 1;
            }
        }
    }
    let took = started.elapsed();
    println!(
        "seal barrier, {records} records in 16 partitions: pass-through read {:.0} records/s, barrier {:.0} records/s, barrier/pass-through time {:.2}",
        rate(records, pass),
        rate(records, took),
        took.as_secs_f64() / pass.as_secs_f64()
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    // `cargo bench` passes `--bench`; nothing else is accepted.
    let Some(cluster) = Cluster::start(3, "").await else {
        eprintln!("nats-server missing: nothing measured");
        std::process::exit(1);
    };
    let js = jetstream::new(cluster.client().await);
    cluster.wait_ready(&js, 3).await;
    // `cargo bench --bench nats -- keyed` runs one group; no name runs them all.
    let only: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let run = |group: &str| only.is_empty() || only.iter().any(|o| o == group);
    if run("sequencer") {
        sequencer(&js).await;
    }
    if run("keyed") {
        keyed(&cluster).await;
    }
    if run("barrier") {
        barrier(&js).await;
    }
}
