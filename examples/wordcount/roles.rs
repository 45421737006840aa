//! The roles: each one a process, coordinating only through NATS. A role's logic reads the
//! channel the plan gives Count and publishes through the host; it never names an engine
//! object itself.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use blazes_runtime::deploy::{self, PlanFile, read_plan};
use blazes_runtime::nats::async_nats::{
    self,
    jetstream::{self, kv},
};
use blazes_runtime::nats::host::{
    Channel, Delivery, Host, HostConfig, HostError, Input, Outputs, source_outputs,
};
use blazes_runtime::nats::session::partition_of;
use bytes::Bytes;
use futures_util::StreamExt;

use super::*;

pub(crate) struct Role {
    js: jetstream::Context,
    plan: PlanFile,
    instance: String,
    shape: Shape,
}

impl Role {
    pub(crate) async fn connect(args: &Args) -> Result<Role, String> {
        let url = args.get("nats")?;
        let text = std::fs::read_to_string(args.get("plan")?)
            .map_err(|e| format!("cannot read the plan: {e}"))?;
        let mut plan = read_plan(&text)
            .map_err(|e| e.to_string())?
            .into_iter()
            .next()
            .ok_or("the plan document has no spec")?;
        if args.0.contains_key("skip-plan") {
            // The uncoordinated deployment: the same spec, none of its mechanisms.
            plan.mechanisms.clear();
        }
        let client = async_nats::connect(url)
            .await
            .map_err(|e| format!("cannot connect to {url}: {e}"))?;
        Ok(Role {
            js: jetstream::new(client),
            plan,
            instance: args.get("instance")?.to_string(),
            shape: args.shape()?,
        })
    }

    fn config(&self, component: &str) -> HostConfig {
        HostConfig::new(component, &self.instance)
            .replicas(1)
            .ack_wait(Duration::from_secs(2))
            // Two counters run the barrier's releases (any number may): the other counters only
            // receive them, and one releasing counter keeps releasing while the other restarts.
            .release_barrier(self.instance.parse::<u64>().is_ok_and(|i| i < 2))
            .seal_producers((0..self.shape.workers).map(|j| format!("Splitter-{j}")))
    }

    async fn host(&self, component: &str) -> Result<Host, HostError> {
        Host::open(self.js.clone(), &self.plan, self.config(component)).await
    }

    /// A host that reads, from a plain stream, only the messages routed to this instance.
    async fn keyed_host(&self, component: &str) -> Result<Host, HostError> {
        let c = self.config(component).input_key(self.instance.clone());
        Host::open(self.js.clone(), &self.plan, c).await
    }
}

pub(crate) fn ready() {
    println!("ready");
}

pub(crate) fn text(b: &Bytes) -> Result<&str, String> {
    std::str::from_utf8(b).map_err(|_| "a message is not UTF-8".to_string())
}

pub(crate) fn numbers<const N: usize>(line: &str, skip: usize) -> Result<[u64; N], String> {
    let mut out = [0; N];
    let mut it = line.split(' ').skip(skip);
    for o in &mut out {
        *o = it
            .next()
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| format!("malformed message header `{line}`"))?;
    }
    Ok(out)
}

/// The source: batch `b`'s tweets for splitter `j` as one message each (`b j` then a tweet per
/// line). Tweet `t` goes to splitter `t mod N`.
pub(crate) async fn source(role: Role) -> Result<(), String> {
    let out = source_outputs(
        role.js.clone(),
        &role.plan,
        &role.config("tweets"),
        "Splitter",
    )
    .await
    .map_err(|e| e.to_string())?;
    println!("start {}", now_nanos());
    let n = role.shape.workers;
    for b in 0..role.shape.batches {
        for j in 0..n {
            let mut body = format!("{b} {j}");
            for t in (j..role.shape.tweets).step_by(n as usize) {
                body.push('\n');
                body.push_str(&tweet(b, t));
            }
            out.publish(b + 1, j as u32, &j.to_string(), body.into())
                .await
                .map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

/// A splitter: each of its batches' tweets become words for Count, published as the plan
/// says Count receives them.
pub(crate) async fn splitter(role: Role) -> Result<(), String> {
    let host = role
        .keyed_host("Splitter")
        .await
        .map_err(|e| e.to_string())?;
    let out = host.outputs("Count").await.map_err(|e| e.to_string())?;
    ready();
    let me: u64 = role.instance.parse().map_err(|_| "instance is a number")?;
    // Distinct batches, not deliveries: a batch delivered again (its acknowledgement came too
    // late) is split again, harmlessly: its outputs carry the same ids (a barrier's records, a
    // plain stream's messages) or the same (splitter, tweet) tags a counter counts once (the
    // global order).
    let mut handled = BTreeSet::new();
    while (handled.len() as u64) < role.shape.batches {
        let d = host.next().await.map_err(|e| e.to_string())?;
        let Input::Message { payload, .. } = &d.input else {
            return Err("a splitter reads a plain stream".into());
        };
        let body = text(payload)?;
        let mut lines = body.lines();
        let [b, j] = numbers::<2>(lines.next().unwrap_or_default(), 0)?;
        if j == me {
            let tweets: Vec<&str> = lines.collect();
            split(&out, &d, (b, j, role.shape.workers), &tweets)
                .await
                .map_err(|e| e.to_string())?;
            handled.insert(b);
        }
        host.done(&d).await.map_err(|e| e.to_string())?;
    }
    Ok(())
}

pub(crate) async fn split(
    out: &Outputs,
    d: &Delivery,
    (b, j, workers): (u64, u64, u64),
    tweets: &[&str],
) -> Result<(), HostError> {
    let n = tweets.len() as u64;
    match out.channel() {
        Channel::Barrier { .. } => {
            // Records of one batch need no order among themselves: publish them all at once,
            // then seal once every one is stored.
            let partition = format!("b{b}");
            let records = tweets
                .iter()
                .enumerate()
                .map(|(t, w)| out.record(&partition, t as u64, Bytes::from(w.to_string())));
            futures_util::future::try_join_all(records).await?;
            out.seal(&partition, n).await
        }
        Channel::Sequence { .. } => {
            // A total order takes one input at a time from each producer.
            for (t, w) in tweets.iter().enumerate() {
                out.send(d.position, t as u32, format!("w {b} {j} {t}\n{w}").into())
                    .await?;
            }
            out.send(d.position, n as u32, format!("s {b} {j} {n}").into())
                .await
                .map(drop)
        }
        Channel::Plain { .. } | Channel::Keyed { .. } => {
            // Without a mechanism the words are grouped by field, as in Storm: each goes only
            // to the counter that owns it, and so does every counter's copy of the seal.
            let mut messages = Vec::new();
            for (t, w) in tweets.iter().enumerate() {
                let mut by_counter: BTreeMap<u64, Vec<&str>> = BTreeMap::new();
                for word in w.split(' ') {
                    let k = u64::from(partition_of(word, workers as u32));
                    by_counter.entry(k).or_default().push(word);
                }
                for (k, words) in by_counter {
                    let body = format!("w {b} {j} {t}\n{}", words.join(" "));
                    messages.push((t as u64 * workers + k, k, body));
                }
            }
            let words = messages.into_iter().map(|(i, k, body)| async move {
                out.publish(d.position, i as u32, &k.to_string(), body.into())
                    .await
            });
            futures_util::future::try_join_all(words).await?;
            let seals = (0..workers).map(|k| async move {
                out.publish(
                    d.position,
                    (n * workers + k) as u32,
                    &k.to_string(),
                    format!("s {b} {j} {n}").into(),
                )
                .await
            });
            futures_util::future::try_join_all(seals).await.map(drop)
        }
    }
}

/// The counts of batch `b` for one counter, as the committer reads them.
pub(crate) fn counts_message(b: u64, counts: &BTreeMap<String, u64>) -> Bytes {
    let mut s = b.to_string();
    for (w, c) in counts {
        s.push_str(&format!("\n{w} {c}"));
    }
    s.into()
}

/// A counter's state under a global order: per open batch, its counts, the (splitter, tweet)
/// pairs already counted (a replayed input is counted once) and the splitters' end markers.
#[derive(Default)]
pub(crate) struct Ordered {
    open: BTreeMap<u64, OpenBatch>,
    closed: BTreeSet<u64>,
}

#[derive(Default)]
pub(crate) struct OpenBatch {
    counts: BTreeMap<String, u64>,
    seen: BTreeSet<(u64, u64)>,
    ends: BTreeMap<u64, u64>,
}

impl Ordered {
    fn encode(&self) -> Bytes {
        let mut s = String::new();
        for b in &self.closed {
            s.push_str(&format!("closed {b}\n"));
        }
        for (b, o) in &self.open {
            s.push_str(&format!("open {b}\n"));
            for (w, c) in &o.counts {
                s.push_str(&format!("count {b} {c} {w}\n"));
            }
            for (j, t) in &o.seen {
                s.push_str(&format!("seen {b} {j} {t}\n"));
            }
            for (j, n) in &o.ends {
                s.push_str(&format!("end {b} {j} {n}\n"));
            }
        }
        s.into()
    }

    fn decode(bytes: &Bytes) -> Result<Ordered, String> {
        let mut o = Ordered::default();
        for line in text(bytes)?.lines() {
            let kind = line.split(' ').next().unwrap_or_default();
            match kind {
                "closed" => {
                    o.closed.insert(numbers::<1>(line, 1)?[0]);
                }
                "open" => {
                    o.open.entry(numbers::<1>(line, 1)?[0]).or_default();
                }
                "count" => {
                    let [b, c] = numbers::<2>(line, 1)?;
                    let w = line.split(' ').nth(3).unwrap_or_default().to_string();
                    o.open.entry(b).or_default().counts.insert(w, c);
                }
                "seen" => {
                    let [b, j, t] = numbers::<3>(line, 1)?;
                    o.open.entry(b).or_default().seen.insert((j, t));
                }
                "end" => {
                    let [b, j, n] = numbers::<3>(line, 1)?;
                    o.open.entry(b).or_default().ends.insert(j, n);
                }
                _ => return Err(format!("malformed checkpoint line `{line}`")),
            }
        }
        Ok(o)
    }
}

/// A counter: counts the words of its shard per batch and hands each batch's counts to the
/// committer, reading its inputs the way the plan says.
pub(crate) async fn counter(role: Role) -> Result<(), String> {
    let host = role.keyed_host("Count").await.map_err(|e| e.to_string())?;
    let out = host.outputs("Commit").await.map_err(|e| e.to_string())?;
    let me: u64 = role.instance.parse().map_err(|_| "instance is a number")?;
    let n = role.shape.workers;
    let mine = |w: &str| u64::from(partition_of(w, n as u32)) == me;
    let mut ordered = match host.restored().await {
        Some(state) => Ordered::decode(&state)?,
        None => Ordered::default(),
    };
    // The uncoordinated counter's running counts and committed batches live in memory only.
    let mut running: BTreeMap<u64, BTreeMap<String, u64>> = BTreeMap::new();
    let mut committed: BTreeSet<u64> = BTreeSet::new();
    ready();
    let mut inputs = host.inputs().boxed();
    while let Some(d) = inputs.next().await {
        let d = d.map_err(|e| e.to_string())?;
        let err = |e: HostError| e.to_string();
        match &d.input {
            Input::Released { partition, records } => {
                let b: u64 = partition
                    .strip_prefix('b')
                    .and_then(|b| b.parse().ok())
                    .ok_or_else(|| format!("unexpected partition `{partition}`"))?;
                let mut counts = BTreeMap::new();
                for r in records {
                    for w in text(&r.payload)?.split(' ').filter(|w| mine(w)) {
                        *counts.entry(w.to_string()).or_default() += 1;
                    }
                }
                out.publish(d.position, 0, "", counts_message(b, &counts))
                    .await
                    .map_err(err)?;
                host.done(&d).await.map_err(err)?;
                println!("counted {b}");
            }
            Input::Sequenced(s) => {
                let body = text(&s.payload)?;
                let mut lines = body.lines();
                let head = lines.next().unwrap_or_default();
                let closed_now = if head.starts_with("w ") {
                    let [b, j, t] = numbers::<3>(head, 1)?;
                    if !ordered.closed.contains(&b) {
                        let o = ordered.open.entry(b).or_default();
                        if o.seen.insert((j, t)) {
                            for w in lines.next().unwrap_or_default().split(' ') {
                                if mine(w) {
                                    *o.counts.entry(w.to_string()).or_default() += 1;
                                }
                            }
                        }
                    }
                    None
                } else {
                    let [b, j, count] = numbers::<3>(head, 1)?;
                    (!ordered.closed.contains(&b)).then(|| {
                        ordered.open.entry(b).or_default().ends.insert(j, count);
                        b
                    })
                };
                // A batch closes once every splitter's marker and every word it announced are
                // in the order: the same point on every replay.
                let complete = closed_now.filter(|b| {
                    let o = &ordered.open[b];
                    o.ends.len() as u64 == n
                        && o.ends.iter().all(|(j, c)| {
                            o.seen.iter().filter(|(sj, _)| sj == j).count() as u64 == *c
                        })
                });
                host.done(&d).await.map_err(err)?;
                if let Some(b) = complete {
                    let o = ordered.open.remove(&b).expect("open");
                    ordered.closed.insert(b);
                    out.publish(d.position, 0, "", counts_message(b, &o.counts))
                        .await
                        .map_err(err)?;
                    host.checkpoint(ordered.encode()).await.map_err(err)?;
                    println!("counted {b}");
                }
            }
            Input::Message { payload, .. } => {
                let body = text(payload)?;
                let mut lines = body.lines();
                let head = lines.next().unwrap_or_default();
                if head.starts_with("w ") {
                    let [b, _, _] = numbers::<3>(head, 1)?;
                    let c = running.entry(b).or_default();
                    for w in lines.next().unwrap_or_default().split(' ') {
                        if mine(w) {
                            *c.entry(w.to_string()).or_default() += 1;
                        }
                    }
                } else {
                    let [b, _, _] = numbers::<3>(head, 1)?;
                    // Without a barrier, a batch looks complete when a seal for it arrives.
                    if committed.insert(b) {
                        let counts = running.get(&b).cloned().unwrap_or_default();
                        out.publish(d.position, 0, "", counts_message(b, &counts))
                            .await
                            .map_err(err)?;
                        println!("counted {b}");
                    }
                }
                host.done(&d).await.map_err(err)?;
            }
            Input::Keyed { .. } | Input::Assigned { .. } | Input::Revoked { .. } => {
                return Err("the word count's plans give Count no keyed order".into());
            }
        }
    }
    Ok(())
}

/// The database: the key-value bucket `<spec>-db`, one key `b<batch>.<word>` per count.
pub(crate) async fn database(
    js: &jetstream::Context,
    plan: &PlanFile,
) -> Result<kv::Store, String> {
    let prefix = deploy::derive(plan, 1).map_err(|e| e.to_string())?.prefix;
    let bucket = format!("{prefix}-db");
    match js.get_key_value(&bucket).await {
        Ok(s) => Ok(s),
        Err(_) => js
            .create_key_value(kv::Config {
                bucket,
                history: 1,
                ..Default::default()
            })
            .await
            .map_err(|e| format!("cannot create the database bucket: {e}")),
    }
}

/// The committer: each `(batch, word)` count is written once (`create`): a count that is
/// committed is final, a second one for the same key is ignored.
pub(crate) async fn committer(role: Role) -> Result<(), String> {
    let host = role.host("Commit").await.map_err(|e| e.to_string())?;
    let db = database(&role.js, &role.plan).await?;
    ready();
    loop {
        let d = host.next().await.map_err(|e| e.to_string())?;
        let Input::Message { payload, .. } = &d.input else {
            return Err("the committer reads a plain stream".into());
        };
        let body = text(payload)?;
        let mut lines = body.lines();
        let b = lines.next().unwrap_or_default();
        // The keys of one message are independent: create them all at once.
        let creates = lines.map(|line| {
            let (w, c) = line.split_once(' ').unwrap_or_default();
            let key = format!("b{b}.{w}");
            let db = &db;
            async move {
                match db.create(&key, Bytes::from(c.to_string())).await {
                    Err(e) if e.kind() != kv::CreateErrorKind::AlreadyExists => {
                        Err(format!("cannot commit `{key}`: {e}"))
                    }
                    _ => Ok(()),
                }
            }
        });
        futures_util::future::try_join_all(creates).await?;
        host.done(&d).await.map_err(|e| e.to_string())?;
        println!("commit {}", now_nanos());
    }
}
