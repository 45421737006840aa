//! Authorization on a real 3-node `nats-server` cluster: every role of the runtime does its job
//! with exactly the least-privilege permissions `docs/runtime.md` lists, is denied another
//! component's subjects and buckets, and forged writes (a commit without the lease, a release
//! by anyone but the barrier, a second release) are refused. Control: the administrator can
//! do each denied operation, so the denials are the permissions' doing.
#![cfg(feature = "nats")]

mod support_nats;

use std::time::Duration;

use async_nats::jetstream::context::PublishErrorKind;
use async_nats::jetstream::{self, message::PublishMessage as Publish};
use blazes_runtime::nats::{self as rt};
use bytes::Bytes;
use support_nats::Cluster;

/// The cluster's users: an administrator that creates the streams and buckets, and one user per
/// role with the least privileges `docs/runtime.md` lists.
const AUTHORIZATION: &str = r#"
authorization {
  users = [
    { user: admin, password: admin }
    # A worker of keyed component KA: its leases, commits and outputs; consumers on its inputs.
    { user: worker-ka, password: pw, permissions: {
        publish: { allow: [
          "KA.lease.*", "KA.commit.*", "KA.out.*",
          "$JS.API.STREAM.INFO.KA", "$JS.API.STREAM.MSG.GET.KA",
          "$JS.API.CONSUMER.CREATE.KA", "$JS.API.CONSUMER.DELETE.KA.*",
          "$JS.API.CONSUMER.INFO.KA.*", "$JS.API.CONSUMER.MSG.NEXT.KA.*"
        ] }
        subscribe: { allow: ["_INBOX_worker-ka.>"] }
    } }
    # A producer of barrier BAR: its own records and seals.
    { user: producer-p0, password: pw, permissions: {
        publish: { allow: ["BAR.rec.*.p0", "BAR.seal.*.p0"] }
        subscribe: { allow: ["_INBOX_producer-p0.>"] }
    } }
    # A producer p0 of sequencer SEQ: its own chain, and reading its last message to start.
    { user: seq-p0, password: pw, permissions: {
        publish: { allow: ["SEQ.in.p0", "$JS.API.STREAM.INFO.SEQ", "$JS.API.STREAM.MSG.GET.SEQ"] }
        subscribe: { allow: ["_INBOX_seq-p0.>"] }
    } }
    # The barrier of BAR: releases, and reading and purging its stream.
    { user: barrier-bar, password: pw, permissions: {
        publish: { allow: [
          "BAR.rel.*",
          "$JS.API.STREAM.INFO.BAR", "$JS.API.STREAM.MSG.GET.BAR",
          "$JS.API.STREAM.MSG.DELETE.BAR", "$JS.API.STREAM.PURGE.BAR",
          "$JS.API.CONSUMER.CREATE.BAR", "$JS.API.CONSUMER.DELETE.BAR.*",
          "$JS.API.CONSUMER.INFO.BAR.*", "$JS.API.CONSUMER.MSG.NEXT.BAR.*"
        ] }
        subscribe: { allow: ["_INBOX_barrier-bar.>"] }
    } }
    # A downstream consumer d of output stream OUT, with its marks in bucket marks.
    { user: down-d, password: pw, permissions: {
        publish: { allow: [
          "$JS.API.STREAM.INFO.OUT", "$JS.API.CONSUMER.CREATE.OUT",
          "$JS.API.CONSUMER.DELETE.OUT.*", "$JS.API.CONSUMER.INFO.OUT.*",
          "$JS.API.CONSUMER.MSG.NEXT.OUT.*",
          "$KV.marks.d.>", "$JS.API.STREAM.INFO.KV_marks",
          "$JS.API.STREAM.MSG.GET.KV_marks"
        ] }
        subscribe: { allow: ["_INBOX_down-d.>"] }
    } }
    # A replica of component acc: its checkpoint key.
    { user: replica-acc-r0, password: pw, permissions: {
        publish: { allow: [
          "$KV.acc-replicas.r0", "$JS.API.STREAM.INFO.KV_acc-replicas",
          "$JS.API.STREAM.MSG.GET.KV_acc-replicas"
        ] }
        subscribe: { allow: ["_INBOX_replica-acc-r0.>"] }
    } }
  ]
}
"#;

/// A JetStream context of `user` (password `pw`), with its own reply prefix.
async fn user_js(cluster: &Cluster, user: &str) -> jetstream::Context {
    let client = cluster
        .client_with(
            async_nats::ConnectOptions::with_user_and_password(user.into(), "pw".into())
                .custom_inbox_prefix(format!("_INBOX_{user}")),
        )
        .await;
    jetstream::new(client)
}

/// Whether a publish to `subject` with `headers` is stored (acknowledged) within 2 s.
async fn publish_stored(js: &jetstream::Context, subject: &str, headers: &[(&str, &str)]) -> bool {
    let mut h = async_nats::HeaderMap::new();
    h.insert(
        "Nats-Msg-Id",
        format!("forged-{subject}-{}", rt_nonce()).as_str(),
    );
    for (k, v) in headers {
        h.insert(*k, *v);
    }
    match js
        .send_publish(
            subject.to_string(),
            Publish::build()
                .headers(h)
                .payload(Bytes::from_static(b"forged")),
        )
        .await
    {
        Ok(ack) => tokio::time::timeout(Duration::from_secs(2), ack)
            .await
            .is_ok_and(|a| a.is_ok()),
        Err(_) => false,
    }
}

fn rt_nonce() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// Runs the denied operations as `user`; with the administrator's connection the same
/// operations succeed (the control: the setup, not the permissions, would otherwise be tested).
async fn forbidden_outcomes(cluster: &Cluster, user: &str, password: &str) -> Vec<(String, bool)> {
    let client = cluster
        .client_with(
            async_nats::ConnectOptions::with_user_and_password(user.into(), password.into())
                .custom_inbox_prefix(format!("_INBOX_{user}")),
        )
        .await;
    let mut js = jetstream::new(client);
    js.set_timeout(Duration::from_secs(1));
    let short = Duration::from_secs(2);
    let publish = async |subject: &str| {
        let mut h = async_nats::HeaderMap::new();
        h.insert("Nats-Msg-Id", format!("forged-{subject}").as_str());
        match js
            .send_publish(
                subject.to_string(),
                Publish::build().headers(h).payload("x".into()),
            )
            .await
        {
            Ok(ack) => tokio::time::timeout(short, ack)
                .await
                .is_ok_and(|a| a.is_ok()),
            Err(_) => false,
        }
    };
    let mut outcomes = Vec::new();
    outcomes.push((
        "publish another component's output KB.out.0".into(),
        publish("KB.out.0").await,
    ));
    outcomes.push((
        "forge a release BAR.rel.w0".into(),
        publish("BAR.rel.w0").await,
    ));
    let read_kb = match tokio::time::timeout(short, js.get_stream("KB")).await {
        Ok(Ok(s)) => {
            let subject = format!(
                "KB.in.{}",
                blazes_runtime::nats::session::partition_of("x", 2)
            );
            tokio::time::timeout(short, s.get_last_raw_message_by_subject(&subject)).await
        }
        .is_ok_and(|r| r.is_ok()),
        _ => false,
    };
    outcomes.push(("read another component's stream KB".into(), read_kb));
    let other_bucket = match tokio::time::timeout(short, js.get_key_value("other-replicas")).await {
        Ok(Ok(kv)) => tokio::time::timeout(short, kv.put("r0", "forged".into()))
            .await
            .is_ok_and(|r| r.is_ok()),
        _ => false,
    };
    outcomes.push((
        "write another component's bucket other-replicas".into(),
        other_bucket,
    ));
    outcomes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn roles_are_confined_to_their_subjects_and_forged_writes_are_refused() {
    use blazes_runtime::nats::barrier::{
        BarrierConfig, BarrierEvent, BarrierProducer, SealBarrier,
    };
    use blazes_runtime::nats::sequencer::{Sequencer, SequencerConfig};
    use blazes_runtime::nats::session::{Keyed, KeyedConfig};
    use blazes_runtime::nats::smr::{Dedup, INDEX, POSITION, UPSTREAM};
    let Some(cluster) = Cluster::start(3, AUTHORIZATION).await else {
        return;
    };
    let admin = cluster
        .client_with(async_nats::ConnectOptions::with_user_and_password(
            "admin".into(),
            "admin".into(),
        ))
        .await;
    let admin_js = jetstream::new(admin);
    cluster.wait_ready(&admin_js, 3).await;
    let config = |name: &str| {
        let mut c = KeyedConfig::new(name, 2);
        c.lease_ttl = Duration::from_secs(2);
        c
    };
    let ka = Keyed::open(admin_js.clone(), config("KA")).await.unwrap();
    let kb = Keyed::open(admin_js.clone(), config("KB")).await.unwrap();
    kb.publish("x", "x1", "kb input".into()).await.unwrap();
    SealBarrier::open(admin_js.clone(), BarrierConfig::new("BAR", &["p0"]))
        .await
        .unwrap();
    Sequencer::open(admin_js.clone(), SequencerConfig::new("SEQ"))
        .await
        .unwrap();
    admin_js
        .get_or_create_stream(jetstream::stream::Config {
            name: "OUT".into(),
            subjects: vec!["OUT.>".into()],
            num_replicas: 3,
            ..Default::default()
        })
        .await
        .unwrap();
    for position in 1..=2u64 {
        let mut h = async_nats::HeaderMap::new();
        h.insert(UPSTREAM, "acc");
        h.insert(POSITION, position.to_string().as_str());
        h.insert(INDEX, "0");
        admin_js
            .send_publish(
                "OUT.acc",
                Publish::build()
                    .headers(h)
                    .payload(format!("o{position}").into()),
            )
            .await
            .unwrap()
            .await
            .unwrap();
    }
    for bucket in ["acc-replicas", "other-replicas", "marks"] {
        admin_js
            .create_key_value(jetstream::kv::Config {
                bucket: bucket.into(),
                num_replicas: 3,
                ..Default::default()
            })
            .await
            .unwrap();
    }
    ka.publish("k", "i1", "ka input".into()).await.unwrap();
    let p = blazes_runtime::nats::session::partition_of("k", 2);

    // The worker does its whole job with its permissions: accept, read, emit, commit.
    let worker_client = cluster
        .client_with(
            async_nats::ConnectOptions::with_user_and_password("worker-ka".into(), "pw".into())
                .custom_inbox_prefix("_INBOX_worker-ka"),
        )
        .await;
    let worker_js = jetstream::new(worker_client);
    let worker = Keyed::open(worker_js.clone(), config("KA"))
        .await
        .unwrap()
        .worker("w1");
    let mut session = worker.try_accept(p).await.unwrap().expect("partition free");
    let input = tokio::time::timeout(Duration::from_secs(10), session.next())
        .await
        .expect("an input")
        .unwrap();
    session.emit(input.offset, 0, "out".into()).await.unwrap();
    session.commit(input.offset, "state".into()).await.unwrap();
    // A forged commit on the other partition (permitted subject, no lease): the server refuses.
    let mut h = async_nats::HeaderMap::new();
    h.insert("Nats-Msg-Id", "forged-commit");
    h.insert("Nats-Expected-Last-Subject-Sequence", "1");
    h.insert(
        "Nats-Expected-Last-Subject-Sequence-Subject",
        format!("KA.lease.{}", 1 - p).as_str(),
    );
    let forged = worker_js
        .send_publish(
            format!("KA.commit.{}", 1 - p),
            Publish::build().headers(h).payload("forged".into()),
        )
        .await
        .unwrap()
        .await;
    assert!(
        forged
            .as_ref()
            .is_err_and(|e| e.kind() == PublishErrorKind::WrongLastSequence),
        "a commit without the lease must be refused: {forged:?}"
    );

    // The replica writes its own checkpoint key.
    let replica = cluster
        .client_with(
            async_nats::ConnectOptions::with_user_and_password(
                "replica-acc-r0".into(),
                "pw".into(),
            )
            .custom_inbox_prefix("_INBOX_replica-acc-r0"),
        )
        .await;
    let kv = jetstream::new(replica)
        .get_key_value("acc-replicas")
        .await
        .unwrap();
    kv.put("r0", "checkpoint".into()).await.unwrap();

    // The sequencer producer registers an epoch and sends, on its own subject only.
    let seq_js = user_js(&cluster, "seq-p0").await;
    let sequencer = Sequencer::open(seq_js.clone(), SequencerConfig::new("SEQ"))
        .await
        .unwrap();
    let mut producer = sequencer.producer("p0").await.unwrap();
    producer.send("input".into()).await.unwrap();
    assert!(
        !publish_stored(&seq_js, "SEQ.in.p1", &[]).await,
        "seq-p0 must not write as producer p1"
    );

    // The barrier producer publishes its records and seal without opening the barrier; the
    // barrier releases the partition with its own permissions.
    let bar_config = BarrierConfig::new("BAR", &["p0"]);
    let p0 = BarrierProducer::new(user_js(&cluster, "producer-p0").await, &bar_config, "p0");
    p0.record("w1", 0, "r0".into()).await.unwrap();
    p0.seal("w1", 1).await.unwrap();
    assert!(
        !publish_stored(
            &user_js(&cluster, "producer-p0").await,
            "BAR.rec.w1.p1",
            &[]
        )
        .await,
        "producer-p0 must not write as producer p1"
    );
    let barrier_js = user_js(&cluster, "barrier-bar").await;
    let mut barrier = SealBarrier::open(barrier_js.clone(), bar_config.clone())
        .await
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let released = loop {
        let events = barrier.poll().await.unwrap();
        if let Some(r) = events.into_iter().find_map(|e| match e {
            BarrierEvent::Released(r) => Some(r),
            _ => None,
        }) {
            break r;
        }
        assert!(std::time::Instant::now() < deadline, "w1 was not released");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(released.partition, "w1");
    // Even the barrier's user cannot release a partition twice: the release is conditioned on
    // the partition's release subject being empty.
    assert!(
        !publish_stored(
            &barrier_js,
            "BAR.rel.w1",
            &[("Nats-Expected-Last-Subject-Sequence", "0")]
        )
        .await,
        "a second release of w1 must be refused"
    );

    // The downstream consumer reads the outputs and moves its own marks only.
    let down_js = user_js(&cluster, "down-d").await;
    let out = down_js.get_stream("OUT").await.unwrap();
    let outputs = rt::read_stream(&out, None, 1, usize::MAX, Duration::from_secs(20))
        .await
        .unwrap();
    assert_eq!(outputs.len(), 2);
    let mut dedup = Dedup::open(&down_js, "marks", "d", 3).await.unwrap();
    assert_eq!(dedup.filter(outputs.clone()).await.unwrap().len(), 2);
    dedup.commit().await.unwrap();
    let mut again = Dedup::open(&down_js, "marks", "d", 3).await.unwrap();
    assert!(again.filter(outputs).await.unwrap().is_empty());
    let marks = down_js.get_key_value("marks").await.unwrap();
    assert!(
        !tokio::time::timeout(Duration::from_secs(2), marks.put("e.acc", "9:0".into()))
            .await
            .is_ok_and(|r| r.is_ok()),
        "down-d must not move consumer e's marks"
    );

    for user in [
        "worker-ka",
        "producer-p0",
        "replica-acc-r0",
        "seq-p0",
        "barrier-bar",
        "down-d",
    ] {
        for (what, allowed) in forbidden_outcomes(&cluster, user, "pw").await {
            // The barrier is the one role that writes releases.
            if user == "barrier-bar" && what.starts_with("forge a release") {
                assert!(allowed, "the barrier could not write a release");
                continue;
            }
            assert!(!allowed, "{user} must not {what}");
        }
    }
    // Control: the administrator can do each of them, so the denials above are permissions.
    assert!(publish_stored(&admin_js, "SEQ.in.p1", &[]).await);
    assert!(publish_stored(&admin_js, "BAR.rec.w2.p1", &[]).await);
    let admin_marks = admin_js.get_key_value("marks").await.unwrap();
    admin_marks.put("e.acc", "9:0".into()).await.unwrap();
    for (what, allowed) in forbidden_outcomes(&cluster, "admin", "admin").await {
        assert!(
            allowed,
            "the administrator could not {what}: the setup is broken"
        );
    }
}
