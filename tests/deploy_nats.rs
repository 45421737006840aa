//! `blazes deploy` against a real `nats-server` (one node: deployment is about objects, not
//! replication). Under `CI=true` a missing server fails with an install hint (the harness).
#![cfg(feature = "nats")]

mod common;
#[path = "../crates/blazes-runtime/tests/support_nats/mod.rs"]
mod support_nats;

use std::time::Duration;

use blazes_runtime::deploy::{Deployment, Object, derive, read_plan};
use blazes_runtime::nats::async_nats::jetstream::{self, stream};
use blazes_runtime::nats::deploy::{Change, compare};
use common::{blazes, stderr, stdout};
use support_nats::Cluster;

/// The deployment the runtime derives from `blazes plan --format json ARGS` (one replica).
fn planned(args: &[&str]) -> Deployment {
    let mut all = vec!["plan", "--format", "json"];
    all.extend_from_slice(args);
    let o = blazes(&all);
    let files = read_plan(&stdout(&o)).unwrap();
    derive(&files[0], 1).unwrap()
}

async fn server() -> Option<(Cluster, String, jetstream::Context)> {
    let cluster = Cluster::start(1, "").await?;
    let url = cluster.urls()[0].clone();
    let js = jetstream::new(cluster.client().await);
    cluster.wait_ready(&js, 1).await;
    Some((cluster, url, js))
}

/// `blazes deploy --nats URL --replicas 1 ARGS`.
fn deploy(url: &str, args: &[&str]) -> std::process::Output {
    let mut all = vec!["deploy", "--nats", url, "--replicas", "1"];
    all.extend_from_slice(args);
    blazes(&all)
}

async fn config(js: &jetstream::Context, name: &str) -> Option<stream::Info> {
    let mut s = js.get_stream(name).await.ok()?;
    Some(s.info().await.unwrap().clone())
}

async fn stream_count(js: &jetstream::Context) -> usize {
    use futures_util::StreamExt;
    js.stream_names().count().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deploy_creates_the_planned_objects_and_a_second_deploy_changes_nothing() {
    let Some((_cluster, url, js)) = server().await else {
        return;
    };
    let specs: [&[&str]; 2] = [
        &["--allow", "global", "specs/wordcount.yaml"],
        &["specs/wordcount-sealable.yaml"],
    ];
    for args in specs {
        let o = deploy(&url, args);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        assert!(stdout(&o).contains("created"), "{}", stdout(&o));
    }
    // Read back through the client, compared with what the runtime derived from the plan.
    let mut created = Vec::new();
    for args in specs {
        let d = planned(args);
        assert!(d.objects().count() > 0);
        for o in d.objects() {
            let info = config(&js, &o.stream_name())
                .await
                .unwrap_or_else(|| panic!("{} exists", o.stream_name()));
            let c = &info.config;
            assert_eq!(c.num_replicas, 1);
            assert!(
                c.description
                    .as_deref()
                    .unwrap_or_default()
                    .starts_with(&d.description()),
                "{:?}",
                c.description
            );
            match o {
                Object::Stream(s) => {
                    assert_eq!(c.subjects, s.subjects);
                    assert_eq!(c.duplicate_window, s.duplicate_window);
                    assert_eq!(c.allow_message_ttl, s.allow_msg_ttl);
                }
                Object::Bucket(b) => {
                    assert_eq!(c.max_messages_per_subject, b.history);
                    js.get_key_value(&b.name).await.expect("a key-value bucket");
                }
                Object::Consumer(_) => unreachable!("`derive` lists no consumer"),
            }
            created.push((o.stream_name(), info.created));
        }
    }
    assert_eq!(created.len(), 4, "sequence, outputs, checkpoints, barrier");
    let before = stream_count(&js).await;
    for args in specs {
        let o = deploy(&url, args);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        assert!(stdout(&o).contains("no change"), "{}", stdout(&o));
    }
    assert_eq!(stream_count(&js).await, before);
    for (name, when) in created {
        assert_eq!(config(&js, &name).await.unwrap().created, when, "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_plan_is_refused_with_a_diff_and_nothing_is_modified() {
    let Some((_cluster, url, js)) = server().await else {
        return;
    };
    // The keyed plan is deployed and a service is using its stream.
    let o = deploy(&url, &["specs/wordcount.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    js.publish("wordcount-Count-keyed.in.0", "hello".into())
        .await
        .unwrap()
        .await
        .unwrap();
    let keyed_before = config(&js, "wordcount-Count-keyed").await.unwrap();

    // The plan changes to a global order: the keyed stream is an orphan, nothing is created.
    let o = deploy(&url, &["--allow", "global", "specs/wordcount.yaml"]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let err = stderr(&o);
    assert!(err.contains("nothing was changed"), "{err}");
    assert!(err.contains("orphan stream wordcount-Count-keyed"), "{err}");
    assert!(err.contains("missing stream wordcount-Count-seq"), "{err}");
    assert!(config(&js, "wordcount-Count-seq").await.is_none());
    let keyed_after = config(&js, "wordcount-Count-keyed").await.unwrap();
    assert_eq!(keyed_after.config, keyed_before.config);
    assert_eq!(keyed_after.state.messages, 1);

    // An object of the plan that exists with another configuration (an older deployment).
    let old = stream::Config {
        name: "ad-poor-Report-keyed".into(),
        subjects: vec!["ad-poor-Report-keyed.>".into()],
        duplicate_window: Duration::from_secs(60),
        ..Default::default()
    };
    js.create_stream(old.clone()).await.unwrap();
    let o = deploy(&url, &["specs/ad-poor.yaml"]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let err = stderr(&o);
    for field in [
        "differs stream ad-poor-Report-keyed",
        "subjects: deployed [ad-poor-Report-keyed.>]",
        "duplicate window: deployed 60s, planned 120s",
        "message TTLs allowed: deployed false, planned true",
    ] {
        assert!(err.contains(field), "`{field}` in\n{err}");
    }
    let unchanged = |c: &stream::Config| {
        c.subjects == old.subjects
            && c.duplicate_window == old.duplicate_window
            && !c.allow_message_ttl
    };
    let after = config(&js, "ad-poor-Report-keyed").await.unwrap().config;
    assert!(
        unchanged(&after),
        "the refused deploy left it alone: {after:?}"
    );

    // Negative control: a deployment that applied the plan blindly over it would have changed
    // it, and the check above sees that.
    let d = planned(&["specs/ad-poor.yaml"]);
    let Some(Object::Stream(s)) = d.objects().next() else {
        panic!("a keyed stream");
    };
    js.update_stream(stream::Config {
        name: s.name.clone(),
        subjects: s.subjects.clone(),
        duplicate_window: s.duplicate_window,
        allow_message_ttl: s.allow_msg_ttl,
        ..Default::default()
    })
    .await
    .unwrap();
    let blind = config(&js, "ad-poor-Report-keyed").await.unwrap().config;
    assert!(!unchanged(&blind), "a blind apply changes the stream");
    // ...after which the keyed stream is as planned and nothing differs any more: the
    // deployment creates the hosted components' objects the refused one left out.
    let o = deploy(&url, &["specs/ad-poor.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("unchanged stream ad-poor-Report-keyed"),
        "{}",
        stdout(&o)
    );
    let o = deploy(&url, &["specs/ad-poor.yaml"]);
    assert!(stdout(&o).contains("no change"), "{}", stdout(&o));
}

/// A state machine that does nothing: the replica is opened only for the objects it creates.
struct Idle;

impl blazes_runtime::StateMachine for Idle {
    fn apply(&mut self, _: &[u8]) -> Vec<Vec<u8>> {
        Vec::new()
    }
    fn snapshot(&self) -> Vec<u8> {
        Vec::new()
    }
    fn restore(_: &[u8]) -> Result<Self, blazes_runtime::SmrError> {
        Ok(Idle)
    }
}

/// The deployment restates the configuration the mechanisms create their objects with; on a
/// server where the mechanisms' own `open` created them, the deployment finds them unchanged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mechanisms_open_exactly_what_deploy_plans() {
    use blazes_runtime::nats::{barrier, sequencer, session, smr};
    let Some((_cluster, _url, js)) = server().await else {
        return;
    };
    let plan = r#"{"version": 2, "files": [{"path": "a.yaml", "name": "agree", "status": "repaired",
        "mechanisms": [
            {"kind": "keyed-order", "component": "K", "key": ["k"]},
            {"kind": "global-order", "component": "G", "key": []},
            {"kind": "seal-barrier", "component": "B", "input": "in", "key": ["k"], "producers": ["p"]}
        ]}]}"#;
    let d = derive(&read_plan(plan).unwrap()[0], 1).unwrap();
    let names: Vec<String> = d.objects().map(|o| o.name().to_string()).collect();
    assert_eq!(
        names,
        [
            "agree-K-keyed",
            "agree-G-seq",
            "agree-G-out",
            "agree-G-replicas",
            "agree-B-in-seal"
        ]
    );
    session::Keyed::open(
        js.clone(),
        session::KeyedConfig::new("agree-K-keyed", 4).replicas(1),
    )
    .await
    .unwrap();
    let seq = sequencer::Sequencer::open(
        js.clone(),
        sequencer::SequencerConfig::new("agree-G-seq").replicas(1),
    )
    .await
    .unwrap();
    smr::Replica::open(
        js.clone(),
        &seq,
        smr::ReplicaConfig::new("agree-G", "r1").replicas(1),
        Idle,
    )
    .await
    .unwrap();
    barrier::SealBarrier::open(
        js.clone(),
        barrier::BarrierConfig::new("agree-B-in-seal", &["p"]).replicas(1),
    )
    .await
    .unwrap();
    let changes = compare(&js, &d).await.unwrap();
    assert_eq!(changes.len(), 5, "{changes:?}");
    for c in &changes {
        assert!(matches!(c, Change::Unchanged(_)), "{}", c.describe());
    }
}

/// `--force` shows the differences, then updates the differing objects in place (keeping their
/// messages) and creates the missing ones; an orphan is left alone. The control is the same
/// deployment without `--force`, refused in the same state.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn force_applies_a_changed_plan_after_showing_the_diff() {
    let Some((_cluster, url, js)) = server().await else {
        return;
    };
    // An older deployment: the keyed stream with another duplicate window, holding a message.
    js.create_stream(stream::Config {
        name: "ad-poor-Report-keyed".into(),
        subjects: vec!["ad-poor-Report-keyed.>".into()],
        duplicate_window: Duration::from_secs(60),
        ..Default::default()
    })
    .await
    .unwrap();
    js.publish("ad-poor-Report-keyed.in.0", "kept".into())
        .await
        .unwrap()
        .await
        .unwrap();
    // Control: without --force the deployment is refused and changes nothing.
    let o = deploy(&url, &["specs/ad-poor.yaml"]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let before = config(&js, "ad-poor-Report-keyed").await.unwrap();
    assert_eq!(before.config.duplicate_window, Duration::from_secs(60));

    let o = deploy(&url, &["--force", "specs/ad-poor.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("differs stream ad-poor-Report-keyed")
            && err.contains("duplicate window: deployed 60s, planned 120s"),
        "the diff is shown first: {err}"
    );
    assert!(
        stdout(&o).contains("1 updated in place")
            && stdout(&o).contains("updated stream ad-poor-Report-keyed"),
        "{}",
        stdout(&o)
    );
    let after = config(&js, "ad-poor-Report-keyed").await.unwrap();
    let planned = planned(&["specs/ad-poor.yaml"]);
    let Some(Object::Stream(s)) = planned.objects().next() else {
        panic!("a keyed stream");
    };
    assert_eq!(after.config.subjects, s.subjects);
    assert_eq!(after.config.duplicate_window, s.duplicate_window);
    assert!(after.config.allow_message_ttl);
    assert_eq!(
        after.state.messages, 1,
        "updated in place: the message is kept"
    );
    // Now the server is as planned.
    let o = deploy(&url, &["specs/ad-poor.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("no change"), "{}", stdout(&o));

    // A plan that drops a mechanism: --force creates the new objects, keeps the orphan.
    let o = deploy(&url, &["specs/wordcount.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = deploy(
        &url,
        &["--force", "--allow", "global", "specs/wordcount.yaml"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("1 orphan left in place"),
        "{}",
        stdout(&o)
    );
    assert!(config(&js, "wordcount-Count-keyed").await.is_some());
    assert!(config(&js, "wordcount-Count-seq").await.is_some());
}

/// The hosted components' objects of `blazes deploy --replicas 1 ARGS`, derived as the CLI does
/// (every component of the spec, `instances` each).
fn hosted(args: &[&str], components: &[&str], instances: usize) -> Deployment {
    let d = planned(args);
    let mut all = vec!["plan", "--format", "json"];
    all.extend_from_slice(args);
    let files = read_plan(&stdout(&blazes(&all))).unwrap();
    let names: Vec<String> = components.iter().map(|c| c.to_string()).collect();
    blazes_runtime::deploy::with_hosts(&files[0], d, &names, instances, &[]).unwrap()
}

/// Every durable consumer on the server's streams, as `stream/name`.
async fn all_consumers(js: &jetstream::Context) -> Vec<String> {
    use futures_util::StreamExt;
    let names: Vec<String> = js
        .stream_names()
        .map(|n| n.unwrap())
        .collect::<Vec<_>>()
        .await;
    let mut out = Vec::new();
    for stream in names {
        let on = blazes_runtime::nats::deploy::server_consumers(js, &stream)
            .await
            .unwrap();
        out.extend(on.keys().map(|c| format!("{stream}/{c}")));
    }
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deploy_creates_what_the_host_reads_and_a_hosted_component_adds_nothing() {
    use blazes_runtime::nats::host::{Host, HostConfig};
    let Some((_cluster, url, js)) = server().await else {
        return;
    };
    let args: &[&str] = &["specs/wordcount-sealed.yaml"];
    let mut all = args.to_vec();
    all.extend_from_slice(&["--instances", "2"]);
    let o = deploy(&url, &all);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    for created in [
        "created stream wordcount-sealed-Splitter-in",
        "created consumer Splitter-0",
        "created consumer Splitter-1",
        "created consumer Count-0",
        "created consumer Count-1",
        "created stream wordcount-sealed-Commit-in",
        "created consumer Commit-1",
    ] {
        assert!(out.contains(created), "`{created}` in\n{out}");
    }
    let d = hosted(args, &["Splitter", "Count", "Commit"], 2);
    let listed: Vec<String> = {
        let mut v: Vec<String> = d
            .objects()
            .filter_map(|o| match o {
                Object::Consumer(c) => Some(format!("{}/{}", c.stream, c.name)),
                _ => None,
            })
            .collect();
        v.sort();
        v
    };
    assert_eq!(all_consumers(&js).await, listed);
    assert!(
        compare(&js, &d)
            .await
            .unwrap()
            .iter()
            .all(|c| matches!(c, Change::Unchanged(_)))
    );

    // A second deployment changes nothing.
    let o = deploy(&url, &all);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("no change"), "{}", stdout(&o));

    // Hosting the deployed components (default configuration, instances 0 and 1) creates no
    // new object.
    let plan = {
        let mut p = vec!["plan", "--format", "json"];
        p.extend_from_slice(args);
        read_plan(&stdout(&blazes(&p))).unwrap().remove(0)
    };
    let streams = stream_count(&js).await;
    for component in ["Splitter", "Count", "Commit"] {
        for instance in ["0", "1"] {
            let c = HostConfig::new(component, instance)
                .replicas(1)
                .retry_for(Duration::from_secs(5));
            Host::open(js.clone(), &plan, c).await.unwrap();
        }
    }
    assert_eq!(stream_count(&js).await, streams);
    assert_eq!(all_consumers(&js).await, listed);
    let o = deploy(&url, &all);
    assert!(stdout(&o).contains("no change"), "{}", stdout(&o));

    // Negative control: a host whose consumer deploy does not list (another instance name) is
    // a new object on the server, and the comparison above would see it.
    let c = HostConfig::new("Commit", "x").replicas(1);
    Host::open(js.clone(), &plan, c).await.unwrap();
    let now = all_consumers(&js).await;
    assert_ne!(now, listed);
    assert!(
        now.contains(&"wordcount-sealed-Commit-in/Commit-x".to_string()),
        "{now:?}"
    );

    // A deployed consumer with another filter is refused by a host that needs its own, rather
    // than silently reading other inputs.
    let keyed = HostConfig::new("Commit", "0").replicas(1).input_key("0");
    let e = Host::open(js.clone(), &plan, keyed)
        .await
        .err()
        .expect("refused");
    assert!(e.to_string().contains("durable consumer `Commit-0`"), "{e}");

    // Fewer instances: the deployment's consumers of instance 1 are orphans, reported as a
    // difference; nothing is deleted.
    let o = deploy(&url, args);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let err = stderr(&o);
    assert!(
        err.contains("orphan consumer wordcount-sealed-Commit-in/Commit-1"),
        "{err}"
    );
    assert!(
        all_consumers(&js)
            .await
            .contains(&"wordcount-sealed-Commit-in/Commit-1".to_string())
    );
}

/// `blazes deploy --instances 2 --route-by-instance Splitter`: a host whose instance `i` reads
/// key `i` (as the word count's splitters do) opens the deployed consumers, creating nothing.
/// Control: the deployment without the option, on a fresh server, leaves consumers that read
/// every subject, which the same keyed host refuses (`ConsumerDiffers`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deployment_routed_by_instance_is_what_a_keyed_host_opens() {
    use blazes_runtime::nats::host::{Host, HostConfig, HostError};
    let args: &[&str] = &["specs/wordcount-sealed.yaml"];
    let plan = {
        let mut p = vec!["plan", "--format", "json"];
        p.extend_from_slice(args);
        read_plan(&stdout(&blazes(&p))).unwrap().remove(0)
    };
    let keyed = |instance: &str| {
        HostConfig::new("Splitter", instance)
            .replicas(1)
            .retry_for(Duration::from_secs(5))
            .input_key(instance)
    };
    for routed in [true, false] {
        let Some((_cluster, url, js)) = server().await else {
            return;
        };
        let mut all = vec!["--instances", "2"];
        if routed {
            all.extend_from_slice(&["--route-by-instance", "Splitter"]);
        }
        all.extend_from_slice(args);
        let o = deploy(&url, &all);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let consumers = all_consumers(&js).await;
        let streams = stream_count(&js).await;
        for instance in ["0", "1"] {
            let opened = Host::open(js.clone(), &plan, keyed(instance)).await;
            if routed {
                opened.unwrap_or_else(|e| panic!("instance {instance}: {e}"));
            } else {
                match opened {
                    Err(HostError::ConsumerDiffers { name, .. }) => {
                        assert_eq!(name, format!("Splitter-{instance}"));
                    }
                    Err(e) => panic!("instance {instance}: another error: {e}"),
                    Ok(_) => panic!("instance {instance}: an unfiltered consumer was accepted"),
                }
            }
        }
        assert_eq!(all_consumers(&js).await, consumers);
        assert_eq!(stream_count(&js).await, streams);
        if routed {
            // The deployment still finds every object as planned.
            let o = deploy(&url, &all);
            assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
            assert!(stdout(&o).contains("no change"), "{}", stdout(&o));
        }
    }
}

/// `--nats` takes the cluster's servers as a comma-separated list, as its help says: with a
/// dead server first and the live one second, the deployment goes through the second.
/// Malformed lists are usage errors (exit 2) naming the entry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deploy_takes_a_list_of_servers() {
    let Some((_cluster, url, js)) = server().await else {
        return;
    };
    // A port nothing listens on: bound, then released.
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("nats://127.0.0.1:{}", l.local_addr().unwrap().port())
    };
    let list = format!("{dead}, {url}");
    let o = deploy(&list, &["--allow", "global", "specs/wordcount.yaml"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(stream_count(&js).await > 0, "the objects were created");
    for bad in [
        format!("{url},"),
        format!("{url},,{url}"),
        "nats://[::1".to_string(),
    ] {
        let o = deploy(&bad, &["specs/wordcount.yaml"]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{bad}: {err}");
        assert!(err.contains("--nats"), "{bad}: {err}");
    }
}

/// `blazes deploy --check` of `spec` against `url`, reading the sync setting from `monitor`.
fn check_monitored(url: &str, monitor: &str, spec: &str) -> std::process::Output {
    blazes(&[
        "deploy",
        "--check",
        "--nats",
        url,
        "--monitor",
        monitor,
        spec,
    ])
}

/// A free port on 127.0.0.1 for a server's monitoring endpoint.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A server with its monitoring endpoint, syncing every write or by the server's default.
async fn monitored(sync_always: bool) -> Option<(Cluster, String, String, jetstream::Context)> {
    let port = free_port();
    let extra = format!("http: \"127.0.0.1:{port}\"\n");
    let cluster = if sync_always {
        Cluster::start(1, &extra).await?
    } else {
        Cluster::start_with_default_sync(1, &extra).await?
    };
    let url = cluster.urls()[0].clone();
    let js = jetstream::new(cluster.client().await);
    cluster.wait_ready(&js, 1).await;
    Some((cluster, url, format!("http://127.0.0.1:{port}"), js))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deploy_check_lists_what_the_system_does_not_give_the_plan() {
    let spec = "specs/wordcount-sealable.yaml";
    let Some((_cluster, url, monitor, _js)) = monitored(true).await else {
        return;
    };
    let o = deploy(&url, &[spec]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = check_monitored(&url, &monitor, spec);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    assert!(out.contains("0 errors"), "{out}");
    assert!(
        out.contains("warning: stream") && out.contains("has 1 replica"),
        "{out}"
    );
    assert!(
        !out.contains("syncs writes"),
        "the server syncs every write: {out}"
    );
    // Without the monitoring endpoint the sync setting is said to be unchecked.
    let o = blazes(&["deploy", "--check", "--nats", &url, spec]);
    assert!(
        stdout(&o).contains("sync setting not checked"),
        "{}",
        stdout(&o)
    );

    // Negative control: a server with the default sync is told apart.
    let Some((_cluster, url, monitor, _js)) = monitored(false).await else {
        return;
    };
    let o = check_monitored(&url, &monitor, spec);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "a warning is not an error: {out}");
    assert!(
        out.contains("warning: server: syncs writes to disk every 120 s"),
        "{out}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deploy_refuses_a_system_that_breaks_a_guarantee_and_changes_nothing() {
    use blazes_runtime::nats::deploy::stream_config;
    let Some((_cluster, url, js)) = server().await else {
        return;
    };
    let args = ["--allow", "global", "specs/wordcount.yaml"];
    let d = planned(&args);
    let first = d
        .objects()
        .find_map(|o| match o {
            Object::Stream(s) => Some(s.clone()),
            _ => None,
        })
        .expect("a stream");
    // The plan's first stream, made by someone else in memory.
    let mut config = stream_config(&first);
    config.storage = stream::StorageType::Memory;
    js.create_stream(config).await.unwrap();
    let before = stream_count(&js).await;
    let o = deploy(&url, &args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "error: stream {}: keeps its messages in memory",
            first.name
        )),
        "{err}"
    );
    assert!(err.contains("not deployed"), "{err}");
    assert_eq!(stream_count(&js).await, before, "nothing was created");
    // `--check` says the same and exits 1 too.
    let o = blazes(&[
        "deploy",
        "--check",
        "--nats",
        &url,
        "--allow",
        "global",
        "specs/wordcount.yaml",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("1 error"), "{}", stdout(&o));
    // Control: the same deployment on a server without that stream goes through.
    js.delete_stream(&first.name).await.unwrap();
    let o = deploy(&url, &args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}
