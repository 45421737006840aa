//! The JetStream runtime against a real 3-node `nats-server` cluster.
#![cfg(feature = "nats")]

mod support_nats;

use std::time::{Duration, Instant};

use async_nats::HeaderMap;
use async_nats::jetstream::context::PublishErrorKind;
use async_nats::jetstream::{self, message::PublishMessage as Publish};
use support_nats::Cluster;

/// The server features the runtime's design relies on, checked on the server we run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_features_the_design_relies_on() {
    let Some(cluster) = Cluster::start(3, "").await else { return };
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
                .header("Nats-TTL", "1s")
                .message_id("l1")
                .expected_last_subject_sequence(0),
        )
        .await
        .unwrap()
        .await
        .unwrap();
    let mut h = HeaderMap::new();
    h.insert("Nats-Expected-Last-Subject-Sequence", lease.sequence.to_string().as_str());
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
    let out = publish(h.clone()).await.expect("stored while the lease is the last message");
    let again = publish(h.clone()).await.expect("a retry is answered");
    assert!(again.duplicate && again.sequence == out.sequence, "{again:?}");
    // The server removes the lease after its TTL, by its own clock.
    let t0 = Instant::now();
    let stream = js.get_stream("PROBE").await.unwrap();
    while stream.get_last_raw_message_by_subject("p.lease").await.is_ok() {
        assert!(t0.elapsed() < Duration::from_secs(10), "the lease never expired");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // A write fenced on the expired lease is refused; a retry of an earlier one is still
    // answered as a duplicate (the id check comes first), never stored twice.
    let mut stale = h.clone();
    stale.insert("Nats-Msg-Id", "o2");
    let refused = publish(stale).await.expect_err("fenced on an expired lease");
    assert_eq!(refused.kind(), PublishErrorKind::WrongLastSequence);
    let dup = publish(h).await.unwrap();
    assert!(dup.duplicate && dup.sequence == out.sequence);
}
