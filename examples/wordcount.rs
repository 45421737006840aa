//! The paper's Storm word count as separate OS processes coordinating through NATS JetStream,
//! deployed from a plan by the runtime's component host (`blazes::runtime::nats::host`).
//!
//! Processes: one tweet source (batches of tweets), `N` splitters (tweets to words), `N`
//! counters (each owns the words whose hash falls on it) and one committer (writes each
//! `(batch, word)` count once into a key-value bucket, the database). Each process learns from
//! the plan how the counters receive their inputs; the logic of a role does not change:
//!
//! - **sealed**: the plan of `specs/wordcount-sealable.yaml` (the planner's cheapest repair:
//!   the source seals every batch, a seal barrier sits in front of Count). Splitters publish a
//!   batch's words as barrier records and seal the batch; a counter counts each released batch,
//!   which is complete by construction.
//! - **ordered**: the plan of `specs/wordcount-star.yaml`, whose cheapest (and only) plan is a
//!   global order of Count's inputs: the transactional topology. Splitters append words and an
//!   end-of-batch marker per batch to one total order; a counter closes a batch once the order
//!   holds every splitter's marker and all the words it announced, and checkpoints its state.
//! - **none**: the plan of `specs/wordcount.yaml` skipped: Count reads a plain stream and, as an
//!   uncoordinated counter does, commits a batch when the first end-of-batch marker for it
//!   arrives; it keeps its running counts in memory and acknowledges each message as it reads.
//!
//! `cargo run --features nats --example wordcount` runs the demonstration (a local
//! `nats-server` is started through `tests/support_nats`; set `BLAZES_NATS_SERVER` or run
//! `scripts/nats-server-path` first): the committed counts of both plans are identical across
//! runs, across the two plans and when a counter is SIGKILLed mid-run and restarted; without
//! the plan they differ. `bench --coordination sealed|ordered|none --workers N [--records R]`
//! prints one JSON line with the throughput (everything else goes to stderr).

#[path = "../tests/support_nats/mod.rs"]
mod support_nats;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use async_nats::jetstream::{self, kv};
use blazes::runtime::deploy::{self, PlanFile, read_plan};
use blazes::runtime::nats::host::{
    Channel, Delivery, Host, HostConfig, HostError, Input, Outputs, source_outputs,
};
use blazes::runtime::nats::session::partition_of;
use bytes::Bytes;
use futures_util::StreamExt;
use support_nats::{Cluster, Proc};

/// Counts per `(batch, word)`: what the committer commits.
type Counts = BTreeMap<(u64, String), u64>;

const VOCABULARY: &[&str] = &[
    "the",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "lazy",
    "dog",
    "a",
    "seal",
    "says",
    "no",
    "more",
    "records",
    "for",
    "this",
    "batch",
    "barrier",
    "waits",
    "every",
    "producer",
    "to",
    "order",
    "matters",
    "count",
    "committed",
    "per",
    "storm",
    "tweet",
    "word",
    "split",
    "stream",
    "replica",
    "agree",
    "plan",
    "deploy",
    "nats",
    "server",
    "process",
    "kill",
];
const WORDS_PER_TWEET: usize = 6;

/// The text of tweet `t` of batch `b`: deterministic, so the expected counts can be computed
/// from the generator alone.
fn tweet(b: u64, t: u64) -> String {
    let mut x = (b << 32 | t).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..WORDS_PER_TWEET)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            VOCABULARY[(x % VOCABULARY.len() as u64) as usize]
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The counts a correct word count commits, computed from the generator without any process.
fn expected(batches: u64, tweets: u64) -> Counts {
    let mut c = Counts::new();
    for b in 0..batches {
        for t in 0..tweets {
            for w in tweet(b, t).split(' ') {
                *c.entry((b, w.to_string())).or_default() += 1;
            }
        }
    }
    c
}

/// The shape of a deployment: what every process is told.
#[derive(Debug, Clone)]
struct Shape {
    workers: u64,
    batches: u64,
    tweets: u64,
}

fn now_nanos() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default()
}

/// `--key value` arguments.
struct Args(BTreeMap<String, String>);

impl Args {
    fn parse(args: &[String]) -> Result<Args, String> {
        let mut map = BTreeMap::new();
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let key = a
                .strip_prefix("--")
                .ok_or_else(|| format!("unexpected argument `{a}` (options are `--name value`)"))?;
            if key == "skip-plan" {
                map.insert(key.to_string(), "true".to_string());
                continue;
            }
            let value = it
                .next()
                .ok_or_else(|| format!("`--{key}` needs a value"))?;
            map.insert(key.to_string(), value.clone());
        }
        Ok(Args(map))
    }

    fn get(&self, key: &str) -> Result<&str, String> {
        self.0
            .get(key)
            .map(String::as_str)
            .ok_or_else(|| format!("`--{key}` is required"))
    }

    fn number(&self, key: &str, default: Option<u64>) -> Result<u64, String> {
        match (self.0.get(key), default) {
            (Some(v), _) => v
                .parse()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| format!("`--{key}` must be a positive whole number, not `{v}`")),
            (None, Some(d)) => Ok(d),
            (None, None) => Err(format!("`--{key}` is required")),
        }
    }

    fn shape(&self) -> Result<Shape, String> {
        Ok(Shape {
            workers: self.number("workers", None)?,
            batches: self.number("batches", None)?,
            tweets: self.number("tweets", None)?,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// The roles: each one a process, coordinating only through NATS.

struct Role {
    js: jetstream::Context,
    plan: PlanFile,
    instance: String,
    shape: Shape,
}

impl Role {
    async fn connect(args: &Args) -> Result<Role, String> {
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
        let mut c = HostConfig::new(component, &self.instance);
        c.replicas = 1;
        c.ack_wait = Duration::from_secs(2);
        // Two counters run the barrier's releases (any number may): the other counters only
        // receive them, and one releasing counter keeps releasing while the other restarts.
        c.release_barrier = self.instance.parse::<u64>().is_ok_and(|i| i < 2);
        c.seal_producers = (0..self.shape.workers)
            .map(|j| format!("Splitter-{j}"))
            .collect();
        c
    }

    async fn host(&self, component: &str) -> Result<Host, HostError> {
        Host::open(self.js.clone(), &self.plan, self.config(component)).await
    }

    /// A host that reads, from a plain stream, only the messages routed to this instance.
    async fn keyed_host(&self, component: &str) -> Result<Host, HostError> {
        let mut c = self.config(component);
        c.input_key = Some(self.instance.clone());
        Host::open(self.js.clone(), &self.plan, c).await
    }
}

fn ready() {
    println!("ready");
}

fn text(b: &Bytes) -> Result<&str, String> {
    std::str::from_utf8(b).map_err(|_| "a message is not UTF-8".to_string())
}

fn numbers<const N: usize>(line: &str, skip: usize) -> Result<[u64; N], String> {
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
async fn source(role: Role) -> Result<(), String> {
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
async fn splitter(role: Role) -> Result<(), String> {
    let host = role
        .keyed_host("Splitter")
        .await
        .map_err(|e| e.to_string())?;
    let out = host.outputs("Count").await.map_err(|e| e.to_string())?;
    ready();
    let me: u64 = role.instance.parse().map_err(|_| "instance is a number")?;
    let mut handled = 0;
    while handled < role.shape.batches {
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
            handled += 1;
        }
        host.done(&d).await.map_err(|e| e.to_string())?;
    }
    Ok(())
}

async fn split(
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
                out.send(format!("w {b} {j} {t}\n{w}").into()).await?;
            }
            out.send(format!("s {b} {j} {n}").into()).await.map(drop)
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
fn counts_message(b: u64, counts: &BTreeMap<String, u64>) -> Bytes {
    let mut s = b.to_string();
    for (w, c) in counts {
        s.push_str(&format!("\n{w} {c}"));
    }
    s.into()
}

/// A counter's state under a global order: per open batch, its counts, the (splitter, tweet)
/// pairs already counted (a replayed input is counted once) and the splitters' end markers.
#[derive(Default)]
struct Ordered {
    open: BTreeMap<u64, OpenBatch>,
    closed: BTreeSet<u64>,
}

#[derive(Default)]
struct OpenBatch {
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
async fn counter(role: Role) -> Result<(), String> {
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
            Input::Keyed { .. } => {
                return Err("the word count's plans give Count no keyed order".into());
            }
        }
    }
    Ok(())
}

/// The database: the key-value bucket `<spec>-db`, one key `b<batch>.<word>` per count.
async fn database(js: &jetstream::Context, plan: &PlanFile) -> Result<kv::Store, String> {
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
async fn committer(role: Role) -> Result<(), String> {
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

// ---------------------------------------------------------------------------------------------
// The driver: a local server, the processes of a deployment, the committed counts.

/// A deployment: which plan its processes read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Coordination {
    Sealed,
    Ordered,
    None,
}

impl Coordination {
    fn parse(s: &str) -> Result<Coordination, String> {
        match s {
            "sealed" => Ok(Coordination::Sealed),
            "ordered" => Ok(Coordination::Ordered),
            "none" => Ok(Coordination::None),
            other => Err(format!(
                "`--coordination` is sealed, ordered or none, not `{other}`"
            )),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Coordination::Sealed => "sealed",
            Coordination::Ordered => "ordered",
            Coordination::None => "none",
        }
    }

    fn spec(self) -> &'static str {
        match self {
            Coordination::Sealed => "specs/wordcount-sealable.yaml",
            Coordination::Ordered => "specs/wordcount-star.yaml",
            Coordination::None => "specs/wordcount.yaml",
        }
    }
}

/// `blazes plan --format json SPEC`, run by this binary (`wordcount plan ...` is the CLI).
fn plan_document(spec: &str, dir: &Path) -> Result<PathBuf, String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(spec);
    let o = Command::new(std::env::current_exe().map_err(|e| e.to_string())?)
        .args(["plan", "--format", "json"])
        .arg(&path)
        .output()
        .map_err(|e| format!("cannot run the planner: {e}"))?;
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    read_plan(&text).map_err(|e| format!("the plan of {spec}: {e}"))?;
    let file = dir.join(format!(
        "{}.json",
        spec.trim_start_matches("specs/").trim_end_matches(".yaml")
    ));
    std::fs::write(&file, text).map_err(|e| e.to_string())?;
    Ok(file)
}

/// What one deployment committed, and how fast.
struct Outcome {
    counts: Counts,
    elapsed: Duration,
}

fn spawn(
    role: &str,
    url: &str,
    plan: &Path,
    coordination: Coordination,
    shape: &Shape,
    i: u64,
) -> Proc {
    let mut c = Command::new(std::env::current_exe().expect("this binary"));
    c.arg(role)
        .args(["--nats", url, "--plan"])
        .arg(plan)
        .args(["--instance", &i.to_string()])
        .args(["--workers", &shape.workers.to_string()])
        .args(["--batches", &shape.batches.to_string()])
        .args(["--tweets", &shape.tweets.to_string()]);
    if coordination == Coordination::None {
        c.arg("--skip-plan");
    }
    Proc::spawn(c)
}

fn counted(lines: &[String]) -> BTreeSet<u64> {
    lines
        .iter()
        .filter_map(|l| l.strip_prefix("counted ")?.parse().ok())
        .collect()
}

async fn wait_until(
    limit: Duration,
    what: &str,
    mut done: impl FnMut() -> bool,
) -> Result<(), String> {
    let deadline = Instant::now() + limit;
    while !done() {
        if Instant::now() > deadline {
            return Err(format!("timed out after {limit:?} waiting for {what}"));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

/// Runs one deployment on a fresh local server; with `kill`, counter 1 (or 0) is SIGKILLed
/// after it counted its first batch, and restarted.
async fn deployment(
    coordination: Coordination,
    plan: &Path,
    shape: &Shape,
    kill: bool,
) -> Result<Outcome, String> {
    let cluster = Cluster::start(1, "")
        .await
        .ok_or("nats-server is missing: run `scripts/nats-server-path` and set BLAZES_NATS_SERVER to the path it prints")?;
    let url = cluster.urls()[0].clone();
    let js = jetstream::new(cluster.client().await);
    cluster.wait_ready(&js, 1).await;
    let n = shape.workers;
    let committer = spawn("committer", &url, plan, coordination, shape, 0);
    let mut counters: Vec<Proc> = (0..n)
        .map(|i| spawn("counter", &url, plan, coordination, shape, i))
        .collect();
    let splitters: Vec<Proc> = (0..n)
        .map(|i| spawn("splitter", &url, plan, coordination, shape, i))
        .collect();
    let limit = Duration::from_secs(120);
    for p in counters.iter().chain(&splitters).chain([&committer]) {
        let lines = p.lines.clone();
        wait_until(limit, "every process to start", || {
            lines.lock().unwrap().iter().any(|l| l == "ready")
        })
        .await?;
    }
    let mut source = spawn("source", &url, plan, coordination, shape, 0);
    let victim = (1.min(n - 1)) as usize;
    let mut earlier: Vec<String> = Vec::new();
    if kill {
        let lines = counters[victim].lines.clone();
        wait_until(limit, "the counter to count a batch", || {
            !counted(&lines.lock().unwrap()).is_empty()
        })
        .await?;
        // SIGKILL: no cleanup, no acknowledgement, no checkpoint of what was in flight.
        let _ = counters[victim].child.kill();
        let _ = counters[victim].child.wait();
        earlier = counters[victim].lines();
        counters[victim] = spawn("counter", &url, plan, coordination, shape, victim as u64);
        eprintln!(
            "{}: counter {victim} SIGKILLed after counting batches {:?}, restarted",
            coordination.name(),
            counted(&earlier)
        );
    }
    let mut splitters = splitters;
    wait_until(limit, "the splitters to finish", || {
        splitters
            .iter_mut()
            .all(|p| matches!(p.child.try_wait(), Ok(Some(_))))
    })
    .await?;
    let _ = source.child.wait();
    let all: BTreeSet<u64> = (0..shape.batches).collect();
    if coordination == Coordination::None {
        // An uncoordinated counter cannot know it is done (a restart forgets what it
        // committed): it is done when its input stream is drained.
        let stream = format!("{}-Count-in", prefix(plan)?);
        for i in 0..n {
            drained(&js, &stream, &format!("Count-{i}"), limit).await?;
        }
    } else {
        for (i, p) in counters.iter().enumerate() {
            let lines = p.lines.clone();
            let before = if i == victim {
                counted(&earlier)
            } else {
                BTreeSet::new()
            };
            wait_until(limit, "every counter to count every batch", || {
                let mut c = counted(&lines.lock().unwrap());
                c.extend(before.iter().copied());
                c == all
            })
            .await?;
        }
    }
    drained(
        &js,
        &format!("{}-Commit-in", prefix(plan)?),
        "Commit-0",
        limit,
    )
    .await?;
    let start = source
        .lines()
        .iter()
        .find_map(|l| l.strip_prefix("start ")?.parse::<u128>().ok())
        .ok_or("the source did not start")?;
    let end = committer
        .lines()
        .iter()
        .filter_map(|l| l.strip_prefix("commit ")?.parse::<u128>().ok())
        .max()
        .unwrap_or(start);
    let db = database(&js, &plan_file(plan)?).await?;
    let mut counts = Counts::new();
    let mut keys = db.keys().await.map_err(|e| e.to_string())?;
    while let Some(k) = keys.next().await {
        let k = k.map_err(|e| e.to_string())?;
        let value = db
            .get(&k)
            .await
            .map_err(|e| e.to_string())?
            .unwrap_or_default();
        let (b, w) = k.split_once('.').unwrap_or_default();
        let b: u64 = b
            .trim_start_matches('b')
            .parse()
            .map_err(|_| format!("key `{k}`"))?;
        let c: u64 = text(&value)?
            .parse()
            .map_err(|_| format!("value of `{k}`"))?;
        counts.insert((b, w.to_string()), c);
    }
    drop((counters, splitters, committer, source));
    Ok(Outcome {
        counts,
        elapsed: Duration::from_nanos(end.saturating_sub(start) as u64),
    })
}

fn plan_file(plan: &Path) -> Result<PlanFile, String> {
    let text = std::fs::read_to_string(plan).map_err(|e| e.to_string())?;
    read_plan(&text)
        .map_err(|e| e.to_string())?
        .into_iter()
        .next()
        .ok_or_else(|| "the plan document has no spec".to_string())
}

fn prefix(plan: &Path) -> Result<String, String> {
    Ok(deploy::derive(&plan_file(plan)?, 1)
        .map_err(|e| e.to_string())?
        .prefix)
}

/// Waits until `consumer` of `stream` has nothing pending and nothing unacknowledged.
async fn drained(
    js: &jetstream::Context,
    stream: &str,
    consumer: &str,
    limit: Duration,
) -> Result<(), String> {
    let deadline = Instant::now() + limit;
    loop {
        let info = match js.get_stream(stream).await {
            Ok(s) => s.consumer_info(consumer).await.ok(),
            Err(_) => None,
        };
        if let Some(i) = info
            && i.num_pending == 0
            && i.num_ack_pending == 0
        {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!(
                "timed out waiting for {consumer} to drain {stream}"
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// How many `(batch, word)` counts differ from `expected` (missing, extra or wrong).
fn differences(got: &Counts, expected: &Counts) -> usize {
    let keys: BTreeSet<&(u64, String)> = got.keys().chain(expected.keys()).collect();
    keys.into_iter()
        .filter(|k| got.get(k) != expected.get(k))
        .count()
}

async fn demo(args: &Args) -> Result<bool, String> {
    let shape = Shape {
        workers: args.number("workers", Some(3))?,
        batches: args.number("batches", Some(8))?,
        tweets: args.number("tweets", Some(24))?,
    };
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let want = expected(shape.batches, shape.tweets);
    println!(
        "word count: 1 source, {n} splitters, {n} counters, 1 committer as processes; {} batches of {} tweets; {} (batch, word) counts expected",
        shape.batches,
        shape.tweets,
        want.len(),
        n = shape.workers
    );
    let mut ok = true;
    let mut runs: Vec<(String, Counts)> = Vec::new();
    let out = args.0.get("out").map(PathBuf::from);
    let deployments = [
        (Coordination::Sealed, false, "sealed, run 1", "sealed-1"),
        (Coordination::Sealed, false, "sealed, run 2", "sealed-2"),
        (Coordination::Ordered, false, "ordered", "ordered"),
        (
            Coordination::Sealed,
            true,
            "sealed, counter SIGKILLed and restarted",
            "sealed-killed",
        ),
        (
            Coordination::Ordered,
            true,
            "ordered, counter SIGKILLed and restarted",
            "ordered-killed",
        ),
        (
            Coordination::None,
            true,
            "no coordination (plan skipped), counter SIGKILLed and restarted",
            "none-killed",
        ),
    ];
    for (coordination, kill, label, slug) in deployments {
        let plan = plan_document(coordination.spec(), dir.path())?;
        let got = deployment(coordination, &plan, &shape, kill).await?;
        if let Some(out) = &out {
            // One `batch word count` line per committed count, for the integration test.
            let lines: String = got
                .counts
                .iter()
                .map(|((b, w), c)| format!("{b} {w} {c}\n"))
                .collect();
            std::fs::write(out.join(format!("{slug}.txt")), lines)
                .map_err(|e| format!("cannot write to {}: {e}", out.display()))?;
        }
        let diff = differences(&got.counts, &want);
        let verdict = match (coordination, diff) {
            (Coordination::None, 0) => {
                ok = false;
                "identical to the expected counts (the uncoordinated run was lucky)".to_string()
            }
            (Coordination::None, d) => format!(
                "DIFFERENT: {d} of {} counts differ from the expected ones",
                want.len()
            ),
            (_, 0) => "identical to the expected counts".to_string(),
            (_, d) => {
                ok = false;
                format!("WRONG: {d} counts differ from the expected ones")
            }
        };
        println!("{label:<66} (plan of {}): {verdict}", coordination.spec());
        runs.push((label.to_string(), got.counts));
    }
    let coordinated: BTreeSet<&Counts> = runs
        .iter()
        .filter(|(l, _)| !l.starts_with("no coordination"))
        .map(|(_, c)| c)
        .collect();
    println!(
        "coordinated deployments: {} distinct committed result(s) across {} runs",
        coordinated.len(),
        runs.len() - 1
    );
    Ok(ok && coordinated.len() == 1)
}

async fn bench(args: &Args) -> Result<(), String> {
    let coordination = Coordination::parse(args.get("coordination")?)?;
    let workers = args.number("workers", None)?;
    let records = args.number("records", Some(20_000))?;
    let tweets = 100.min(records);
    let shape = Shape {
        workers,
        batches: records.div_ceil(tweets),
        tweets,
    };
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let plan = plan_document(coordination.spec(), dir.path())?;
    let got = deployment(coordination, &plan, &shape, false).await?;
    let total = shape.batches * shape.tweets;
    let rate = total as f64 / got.elapsed.as_secs_f64().max(1e-9);
    eprintln!(
        "{}: {total} tweets through {workers} splitters and {workers} counters in {:.2} s; {} of {} counts as expected",
        coordination.name(),
        got.elapsed.as_secs_f64(),
        expected(shape.batches, shape.tweets).len()
            - differences(&got.counts, &expected(shape.batches, shape.tweets))
                .min(expected(shape.batches, shape.tweets).len()),
        expected(shape.batches, shape.tweets).len(),
    );
    println!(
        "{{\"experiment\": \"wordcount\", \"coordination\": \"{}\", \"workers\": {workers}, \"records_per_s\": {:.1}}}",
        coordination.name(),
        rate
    );
    Ok(())
}

fn main() {
    let argv: Vec<String> = std::env::args().collect();
    let command = argv.get(1).map(String::as_str).unwrap_or("run");
    if command == "plan" {
        // `wordcount plan ...` is `blazes plan ...`: the driver plans with the CLI itself.
        std::process::exit(blazes::cli::run());
    }
    let rest = if argv.len() > 2 { &argv[2..] } else { &[] };
    let result = Args::parse(rest).and_then(|args| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        runtime.block_on(async {
            match command {
                "run" => demo(&args).await.map(|ok| {
                    if !ok {
                        std::process::exit(1);
                    }
                }),
                "bench" => bench(&args).await,
                "source" => source(Role::connect(&args).await?).await,
                "splitter" => splitter(Role::connect(&args).await?).await,
                "counter" => counter(Role::connect(&args).await?).await,
                "committer" => committer(Role::connect(&args).await?).await,
                other => Err(format!(
                    "unknown command `{other}`: run, bench, source, splitter, counter, committer or plan"
                )),
            }
        })
    });
    if let Err(e) = result {
        eprintln!("error: {e}");
        std::process::exit(2);
    }
}
