//! The paper's ad reporting network as separate OS processes coordinating through a local NATS
//! server: ad servers emit clicks, replicated report servers answer the queries POOR, THRESH,
//! CAMPAIGN and WINDOW, and a cache sends the clients' requests to every replica, serves the
//! first answer and records what each replica said.
//!
//! ```text
//! cargo run --features nats --example ad_network -- run --query poor --coordination ordered
//! cargo run --release --features nats --example ad_network -- bench --coordination sealed --producers 5
//! ```
//!
//! `run` and `bench` are drivers: they start a one-node nats-server (`$BLAZES_NATS_SERVER`, else
//! `nats-server` on `PATH`; `scripts/nats-server-path` installs the pinned one), create the
//! engine objects of the deployment and spawn this binary once per role (`adserver`, `report`,
//! `cache`). Deployments (`--coordination`):
//!
//! - `none`: clicks go to a plain stream that every replica reads with its own consumer;
//!   requests reach the replicas on a separate subject. Each replica answers from whatever its
//!   consumer has delivered when the request arrives.
//! - `ordered`: the plan of `specs/ad-poor.yaml` (keyed order on `Report` by `id`): clicks and
//!   requests are appended to the keyed stream `ad-<query>-Report-keyed` (the stream `blazes
//!   deploy specs/ad-poor.yaml` creates for POOR), partitioned by ad id, and every replica
//!   applies that stream in its order.
//! - `sealed`: the plan of `specs/ad-campaign.yaml` (or `ad-window.yaml`): clicks go through the
//!   seal barrier `ad-<query>-Report-click-seal`, partitioned by campaign (window); every ad
//!   server seals each partition after its last click in it, and a replica answers a request
//!   about a partition once the barrier has released it. No global order.
//! - `independent-seal`: as `sealed`, but each campaign's clicks come from one ad server, whose
//!   seal alone releases the partition.

use std::collections::BTreeMap;
use std::io::Write;
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use blazes::runtime::nats::async_nats::{self, jetstream};
use blazes::runtime::nats::barrier::{BarrierConfig, BarrierEvent, BarrierProducer, SealBarrier};
use blazes::runtime::nats::session::{Keyed, KeyedConfig};
use bytes::Bytes;
use clap::{Parser, Subcommand, ValueEnum};
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};

#[path = "../../tests/support_nats/mod.rs"]
mod support_nats;

/// Each ad server owns this many campaigns under `independent-seal`; the campaign count is
/// `producers * CAMPAIGNS_PER_PRODUCER` in every deployment.
const CAMPAIGNS_PER_PRODUCER: u32 = 2;
/// Time windows of the WINDOW query; every ad server walks through them in order.
const WINDOWS: u32 = 4;
/// The plain click stream of the uncoordinated deployment.
const CLICKS_STREAM: &str = "adnet-clicks";
const GO: &str = "adnet.go";
const REQUESTS: &str = "adnet.requests";
const RESPONSES: &str = "adnet.responses";
/// Publishes an ad server keeps outstanding.
const IN_FLIGHT: usize = 256;
/// Keyed partitions of the ordered deployment.
const PARTITIONS: u32 = 4;

#[derive(Parser)]
#[command(about = "The paper's ad network as separate processes on a local NATS server")]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Start a nats-server and every role, then print each replica's answers.
    Run(Setup),
    /// Measure one deployment's completion time; prints one JSON line on stdout.
    Bench {
        #[arg(long, value_enum)]
        coordination: Coordination,
        #[arg(long)]
        producers: u32,
        /// Clicks per ad server.
        #[arg(long, default_value_t = 10000)]
        clicks: u32,
        /// Report server replicas.
        #[arg(long, default_value_t = 3)]
        replicas: u32,
    },
    /// Role: one ad server (spawned by the driver).
    Adserver {
        #[arg(long)]
        nats: String,
        #[arg(long)]
        index: u32,
        #[command(flatten)]
        setup: Setup,
    },
    /// Role: one report server replica (spawned by the driver).
    Report {
        #[arg(long)]
        nats: String,
        #[arg(long)]
        replica: u32,
        #[command(flatten)]
        setup: Setup,
    },
    /// Role: the cache between the clients and the report servers (spawned by the driver).
    Cache {
        #[arg(long)]
        nats: String,
        #[command(flatten)]
        setup: Setup,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Query {
    /// Clicks of one ad so far and whether it is a poor performer (order-sensitive).
    Poor,
    /// Whether an ad reached the click threshold (monotone: answered once it has).
    Thresh,
    /// Clicks of one ad in one campaign (sealed per campaign).
    Campaign,
    /// Clicks of one ad in one time window (sealed per window).
    Window,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Coordination {
    None,
    Ordered,
    Sealed,
    IndependentSeal,
}

impl Query {
    fn name(self) -> &'static str {
        match self {
            Query::Poor => "poor",
            Query::Thresh => "thresh",
            Query::Campaign => "campaign",
            Query::Window => "window",
        }
    }
}

impl Coordination {
    fn name(self) -> &'static str {
        match self {
            Coordination::None => "none",
            Coordination::Ordered => "ordered",
            Coordination::Sealed => "sealed",
            Coordination::IndependentSeal => "independent-seal",
        }
    }
    fn sealed(self) -> bool {
        matches!(self, Coordination::Sealed | Coordination::IndependentSeal)
    }
}

/// The deployment and workload; every role gets the same one from the driver.
#[derive(clap::Args, Clone, Debug)]
struct Setup {
    #[arg(long, value_enum, default_value_t = Query::Poor)]
    query: Query,
    #[arg(long, value_enum, default_value_t = Coordination::None)]
    coordination: Coordination,
    /// Ad servers.
    #[arg(long, default_value_t = 3)]
    producers: u32,
    /// Report server replicas.
    #[arg(long, default_value_t = 3)]
    replicas: u32,
    /// Clicks per ad server.
    #[arg(long, default_value_t = 1500)]
    clicks: u32,
    /// Distinct ad ids.
    #[arg(long, default_value_t = 4)]
    ids: u32,
    /// Requests the cache sends.
    #[arg(long, default_value_t = 40)]
    queries: u32,
    /// Microseconds between two clicks of one ad server (0: as fast as it can).
    #[arg(long, default_value_t = 1000)]
    pace_us: u64,
    /// Milliseconds between two requests of the cache.
    #[arg(long, default_value_t = 25)]
    query_every_ms: u64,
}

impl Setup {
    fn campaigns(&self) -> u32 {
        self.producers * CAMPAIGNS_PER_PRODUCER
    }

    fn total_clicks(&self) -> u64 {
        u64::from(self.producers) * u64::from(self.clicks)
    }

    /// What every ad gets: its clicks spread evenly (`ids` is coprime to 13, checked).
    fn share(&self) -> u64 {
        self.total_clicks() / u64::from(self.ids)
    }

    /// The stream names of the deployment, as `blazes deploy` names the plan's objects.
    fn keyed_stream(&self) -> String {
        format!("ad-{}-Report-keyed", self.query.name())
    }

    fn barrier_stream(&self) -> String {
        format!("ad-{}-Report-click-seal", self.query.name())
    }

    fn adserver(i: u32) -> String {
        format!("adserver-{i}")
    }

    fn barrier_config(&self) -> BarrierConfig {
        let names: Vec<String> = (0..self.producers).map(Setup::adserver).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let mut config = BarrierConfig::new(&self.barrier_stream(), &refs);
        config.replicas = 1;
        config
    }

    fn keyed_config(&self) -> KeyedConfig {
        let mut config = KeyedConfig::new(&self.keyed_stream(), PARTITIONS);
        config.replicas = 1;
        config
    }

    /// Click `k` of ad server `s`.
    fn click(&self, s: u32, k: u32) -> Click {
        let id = (s * 7 + k * 13) % self.ids;
        let campaign = if self.coordination == Coordination::IndependentSeal {
            let block = self.clicks.div_ceil(CAMPAIGNS_PER_PRODUCER);
            s * CAMPAIGNS_PER_PRODUCER + k / block
        } else {
            k / self.clicks.div_ceil(self.campaigns())
        };
        let window = k / self.clicks.div_ceil(WINDOWS);
        Click {
            s,
            k,
            id,
            campaign,
            window,
        }
    }

    /// The seal partition of a click (the plan's seal key), for the sealed deployments.
    fn partition(&self, c: &Click) -> String {
        match self.query {
            Query::Window => format!("w{}", c.window),
            _ => format!("c{}", c.campaign),
        }
    }

    /// Request `q` of the cache. Clients ask about the campaign (window) the ad servers are in
    /// when the request is sent, by the paced schedule; unpaced, they go round the campaigns.
    fn request(&self, q: u32) -> Request {
        let s = q % self.producers;
        let sent_us = u64::from(q) * self.query_every_ms * 1000;
        let now = sent_us.checked_div(self.pace_us).map(|k| {
            let k = k.min(u64::from(self.clicks - 1));
            self.click(s, k as u32)
        });
        let part = match (self.query, now) {
            (Query::Campaign, Some(c)) => Some(c.campaign),
            (Query::Campaign, None) => Some((q * 7) % self.campaigns()),
            (Query::Window, Some(c)) => Some(c.window),
            (Query::Window, None) => Some(q % WINDOWS),
            (Query::Poor | Query::Thresh, _) => None,
        };
        Request {
            q,
            id: q % self.ids,
            part,
        }
    }

    fn request_partition(&self, r: &Request) -> Option<String> {
        match (self.query, r.part) {
            (Query::Campaign, Some(c)) => Some(format!("c{c}")),
            (Query::Window, Some(w)) => Some(format!("w{w}")),
            _ => None,
        }
    }

    /// The combinations that mean something; a located, one-sentence error otherwise.
    fn validate(&self) -> Result<(), String> {
        if self.producers == 0 || self.replicas == 0 || self.clicks == 0 || self.queries == 0 {
            return Err(
                "--producers, --replicas, --clicks and --queries must be at least 1".into(),
            );
        }
        if self.ids == 0 || self.ids.is_multiple_of(13) {
            return Err(format!(
                "--ids {}: needs at least 1 and not a multiple of 13 (clicks are spread over ids by steps of 13)",
                self.ids
            ));
        }
        if self.clicks < self.campaigns().max(WINDOWS) {
            return Err(format!(
                "--clicks {}: every ad server needs at least one click per campaign and window ({})",
                self.clicks,
                self.campaigns().max(WINDOWS)
            ));
        }
        match (self.query, self.coordination) {
            (Query::Poor | Query::Thresh, c) if c.sealed() => Err(format!(
                "--coordination {}: the {} query has no seal key (use none or ordered)",
                c.name(),
                self.query.name().to_uppercase()
            )),
            (Query::Window, Coordination::IndependentSeal) => Err(
                "--coordination independent-seal: every ad server has clicks in every window, so a window has no single producer (use sealed)".into(),
            ),
            _ => Ok(()),
        }
    }
}

#[derive(Serialize, Deserialize, Debug, Clone)]
struct Click {
    s: u32,
    k: u32,
    id: u32,
    campaign: u32,
    window: u32,
}

#[derive(Serialize, Deserialize, Debug, Clone)]
struct Request {
    q: u32,
    id: u32,
    part: Option<u32>,
}

/// An input of the keyed stream in the ordered deployment.
#[derive(Serialize, Deserialize, Debug)]
enum Input {
    Click(Click),
    Request(Request),
}

#[derive(Serialize, Deserialize, Debug)]
struct Response {
    replica: u32,
    q: u32,
    answer: String,
}

/// What the cache saw, printed as one JSON line for the driver.
#[derive(Serialize, Deserialize, Debug)]
struct CacheReport {
    /// Per request: each replica's answer, by replica index.
    answers: BTreeMap<u32, BTreeMap<u32, String>>,
    /// Per request: the replica whose answer the cache stored and served (the first to come).
    served: BTreeMap<u32, u32>,
}

type Failure = Box<dyn std::error::Error + Send + Sync>;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async move {
        match cli.command {
            Cmd::Run(setup) => drive(setup, false).await,
            Cmd::Bench {
                coordination,
                producers,
                clicks,
                replicas,
            } => {
                let query = if coordination.sealed() {
                    Query::Campaign
                } else {
                    Query::Poor
                };
                let setup = Setup {
                    query,
                    coordination,
                    producers,
                    replicas,
                    clicks,
                    ids: 4,
                    queries: 20,
                    pace_us: 0,
                    query_every_ms: 10,
                };
                drive(setup, true).await
            }
            Cmd::Adserver { nats, index, setup } => role(adserver(&nats, index, &setup)).await,
            Cmd::Report {
                nats,
                replica,
                setup,
            } => role(report(&nats, replica, &setup)).await,
            Cmd::Cache { nats, setup } => role(cache(&nats, &setup)).await,
        }
    })
}

/// A role's exit: a failure is one line on stderr and exit 1 (the driver reports it).
async fn role(f: impl std::future::Future<Output = Result<(), Failure>>) -> ExitCode {
    match f.await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

async fn connect(url: &str) -> Result<(async_nats::Client, jetstream::Context), Failure> {
    let client = async_nats::connect(url).await?;
    let js = jetstream::new(client.clone());
    Ok((client, js))
}

/// Subscribes to the driver's start signal, then says `ready`.
async fn ready(client: &async_nats::Client) -> Result<async_nats::Subscriber, Failure> {
    let go = client.subscribe(GO).await?;
    client.flush().await?;
    say("ready");
    Ok(go)
}

async fn adserver(url: &str, s: u32, setup: &Setup) -> Result<(), Failure> {
    let (client, js) = connect(url).await?;
    let me = Setup::adserver(s);
    let keyed = match setup.coordination {
        Coordination::Ordered => Some(Keyed::open(js.clone(), setup.keyed_config()).await?),
        _ => None,
    };
    let barrier = setup
        .coordination
        .sealed()
        .then(|| BarrierProducer::new(js.clone(), &setup.barrier_config(), &me));
    let mut go = ready(&client).await?;
    go.next().await;
    let started = Instant::now();
    // Every deployment keeps up to IN_FLIGHT publishes outstanding (each a task, so that a
    // paced server's clicks leave when they are due), so that the deployments differ by their
    // mechanism rather than by how the ad servers use the connection.
    let mut in_flight: Vec<tokio::task::JoinHandle<Result<(), Failure>>> = Vec::new();
    async fn drain(
        in_flight: &mut Vec<tokio::task::JoinHandle<Result<(), Failure>>>,
    ) -> Result<(), Failure> {
        for task in in_flight.drain(..) {
            task.await??;
        }
        Ok(())
    }
    // Records per seal partition, for the record indices and the seal counts.
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    for k in 0..setup.clicks {
        // Pace by the schedule rather than by sleeping per click: the timer's resolution is a
        // millisecond, the pace may be finer.
        if setup.pace_us > 0 {
            let due = Duration::from_micros(setup.pace_us * u64::from(k));
            if let Some(wait) = due.checked_sub(started.elapsed())
                && wait >= Duration::from_millis(1)
            {
                tokio::time::sleep(wait).await;
            }
        }
        let c = setup.click(s, k);
        let payload = Bytes::from(serde_json::to_vec(&c)?);
        match setup.coordination {
            Coordination::None => {
                let js = js.clone();
                let subject = format!("adnet.clicks.{s}");
                in_flight.push(tokio::spawn(async move {
                    js.publish(subject, payload).await?.await?;
                    Ok(())
                }));
            }
            Coordination::Ordered => {
                let input = Bytes::from(serde_json::to_vec(&Input::Click(c.clone()))?);
                let keyed = keyed.clone().expect("opened for ordered");
                in_flight.push(tokio::spawn(async move {
                    keyed
                        .publish(&c.id.to_string(), &format!("click-{s}-{k}"), input)
                        .await?;
                    Ok(())
                }));
            }
            Coordination::Sealed | Coordination::IndependentSeal => {
                let producer = barrier.clone().expect("opened for sealed");
                let partition = setup.partition(&c);
                let index = counts.entry(partition.clone()).or_insert(0);
                let (p, i) = (partition.clone(), *index);
                in_flight.push(tokio::spawn(async move {
                    producer.record(&p, i, payload).await?;
                    Ok(())
                }));
                *index += 1;
                // Partitions are walked in blocks: seal one once this server has left it, after
                // its records are acknowledged (a seal counts stored records).
                let next = (k + 1 < setup.clicks).then(|| setup.partition(&setup.click(s, k + 1)));
                if next.as_deref() != Some(partition.as_str()) {
                    drain(&mut in_flight).await?;
                    let producer = barrier.as_ref().expect("opened for sealed");
                    producer.seal(&partition, counts[&partition]).await?;
                }
            }
        }
        if in_flight.len() >= IN_FLIGHT {
            drain(&mut in_flight).await?;
        }
    }
    drain(&mut in_flight).await?;
    client.flush().await?;
    eprintln!(
        "{me}: {} clicks in {:.2} s",
        setup.clicks,
        started.elapsed().as_secs_f64()
    );
    say("done");
    Ok(())
}

/// A report server replica's state: clicks per ad and per (ad, partition).
struct ReportState {
    replica: u32,
    by_id: BTreeMap<u32, u64>,
    by_part: BTreeMap<(u32, u32), u64>,
    applied: u64,
    answered: u32,
    /// Requests that cannot be answered yet (THRESH below its threshold; sealed partitions not
    /// yet released).
    pending: Vec<Request>,
    released: std::collections::BTreeSet<String>,
}

impl ReportState {
    fn apply(&mut self, setup: &Setup, c: &Click) {
        *self.by_id.entry(c.id).or_insert(0) += 1;
        let part = match setup.query {
            Query::Window => c.window,
            _ => c.campaign,
        };
        *self.by_part.entry((c.id, part)).or_insert(0) += 1;
        self.applied += 1;
    }

    /// The answer to `r` now, or `None` when it must wait.
    fn answer(&self, setup: &Setup, r: &Request) -> Option<String> {
        let clicks = self.by_id.get(&r.id).copied().unwrap_or(0);
        match setup.query {
            Query::Poor => {
                // Poor: below half of an even share of the clicks.
                let poor = clicks * 2 < setup.share();
                Some(format!(
                    "ad {}: {clicks} clicks, {}",
                    r.id,
                    if poor { "poor" } else { "not poor" }
                ))
            }
            Query::Thresh => {
                let threshold = setup.share() / 2;
                (clicks >= threshold).then(|| format!("ad {}: reached {threshold}", r.id))
            }
            Query::Campaign | Query::Window => {
                if setup.coordination.sealed() {
                    let partition = setup.request_partition(r)?;
                    if !self.released.contains(&partition) {
                        return None;
                    }
                }
                let part = r.part.unwrap_or(0);
                let n = self.by_part.get(&(r.id, part)).copied().unwrap_or(0);
                let what = if setup.query == Query::Window {
                    "window"
                } else {
                    "campaign"
                };
                Some(format!("ad {} in {what} {part}: {n} clicks", r.id))
            }
        }
    }

    async fn respond(
        &mut self,
        client: &async_nats::Client,
        setup: &Setup,
        r: Request,
    ) -> Result<(), Failure> {
        match self.answer(setup, &r) {
            Some(answer) => {
                let response = Response {
                    replica: self.replica,
                    q: r.q,
                    answer,
                };
                client
                    .publish(RESPONSES, serde_json::to_vec(&response)?.into())
                    .await?;
                self.answered += 1;
            }
            None => self.pending.push(r),
        }
        Ok(())
    }

    /// Answers the waiting requests that can be answered now.
    async fn retry_pending(
        &mut self,
        client: &async_nats::Client,
        setup: &Setup,
    ) -> Result<(), Failure> {
        for r in std::mem::take(&mut self.pending) {
            self.respond(client, setup, r).await?;
        }
        Ok(())
    }

    fn finished(&self, setup: &Setup) -> bool {
        self.applied == setup.total_clicks() && self.answered == setup.queries
    }
}

async fn report(url: &str, replica: u32, setup: &Setup) -> Result<(), Failure> {
    let (client, js) = connect(url).await?;
    let mut state = ReportState {
        replica,
        by_id: BTreeMap::new(),
        by_part: BTreeMap::new(),
        applied: 0,
        answered: 0,
        pending: Vec::new(),
        released: Default::default(),
    };
    let started;
    match setup.coordination {
        Coordination::None => {
            // Two inputs on two paths: the click stream through this replica's own consumer,
            // the requests on a subject. Nothing orders one against the other.
            let stream = js.get_stream(CLICKS_STREAM).await?;
            let consumer = stream
                .create_consumer(jetstream::consumer::pull::OrderedConfig {
                    filter_subject: "adnet.clicks.*".into(),
                    ..Default::default()
                })
                .await?;
            let mut clicks = consumer.messages().await?;
            let mut requests = client.subscribe(REQUESTS).await?;
            let mut go = ready(&client).await?;
            go.next().await;
            started = Instant::now();
            while !state.finished(setup) {
                tokio::select! {
                    biased;
                    Some(m) = requests.next() => {
                        let r: Request = serde_json::from_slice(&m.payload)?;
                        state.respond(&client, setup, r).await?;
                    }
                    Some(m) = clicks.next() => {
                        let c: Click = serde_json::from_slice(&m?.payload)?;
                        state.apply(setup, &c);
                        if !state.pending.is_empty() {
                            state.retry_pending(&client, setup).await?;
                        }
                    }
                }
            }
        }
        Coordination::Ordered => {
            // The plan's keyed order: clicks and requests of one ad are in one partition's
            // order, which every replica reads from the same stream.
            let keyed = Keyed::open(js.clone(), setup.keyed_config()).await?;
            let consumer = keyed
                .stream()
                .create_consumer(jetstream::consumer::pull::OrderedConfig {
                    filter_subject: format!("{}.in.*", setup.keyed_stream()),
                    ..Default::default()
                })
                .await?;
            let mut inputs = consumer.messages().await?;
            let mut go = ready(&client).await?;
            go.next().await;
            started = Instant::now();
            while !state.finished(setup) {
                let Some(m) = inputs.next().await else {
                    return Err("the keyed stream's consumer ended".into());
                };
                match serde_json::from_slice::<Input>(&m?.payload)? {
                    Input::Click(c) => {
                        state.apply(setup, &c);
                        if !state.pending.is_empty() {
                            state.retry_pending(&client, setup).await?;
                        }
                    }
                    Input::Request(r) => state.respond(&client, setup, r).await?,
                }
            }
        }
        Coordination::Sealed | Coordination::IndependentSeal => {
            // Replica 0 runs the barrier instance; every replica applies its releases, which
            // the server stores once per partition. More instances are safe, but an instance
            // reading a partition's records that another one has just purged after releasing
            // it waits out the runtime's 5 s read timeout, which would swamp the measurement.
            let mut barrier = SealBarrier::open(js.clone(), setup.barrier_config()).await?;
            let runs_barrier = replica == 0;
            let mut requests = client.subscribe(REQUESTS).await?;
            let mut go = ready(&client).await?;
            go.next().await;
            started = Instant::now();
            let mut from = 1;
            let mut tick = tokio::time::interval(Duration::from_millis(20));
            while !state.finished(setup) {
                tokio::select! {
                    biased;
                    Some(m) = requests.next() => {
                        let r: Request = serde_json::from_slice(&m.payload)?;
                        state.respond(&client, setup, r).await?;
                    }
                    _ = tick.tick() => {
                        if runs_barrier {
                            for event in barrier.poll().await? {
                                if !matches!(event, BarrierEvent::Released(_)) {
                                    eprintln!("report-{replica}: barrier: {event:?}");
                                }
                            }
                        }
                        let releases = barrier.releases(from).await?;
                        for release in releases {
                            from = release.sequence + 1;
                            for record in &release.records {
                                let c: Click = serde_json::from_slice(&record.payload)?;
                                state.apply(setup, &c);
                            }
                            state.released.insert(release.partition);
                        }
                        state.retry_pending(&client, setup).await?;
                    }
                }
            }
        }
    }
    client.flush().await?;
    eprintln!(
        "report-{replica}: {} clicks, {} answers in {:.2} s",
        state.applied,
        state.answered,
        started.elapsed().as_secs_f64()
    );
    say("done");
    Ok(())
}

async fn cache(url: &str, setup: &Setup) -> Result<(), Failure> {
    let (client, js) = connect(url).await?;
    let keyed = match setup.coordination {
        Coordination::Ordered => Some(Keyed::open(js.clone(), setup.keyed_config()).await?),
        _ => None,
    };
    let mut responses = client.subscribe(RESPONSES).await?;
    let mut go = ready(&client).await?;
    go.next().await;
    let mut report = CacheReport {
        answers: BTreeMap::new(),
        served: BTreeMap::new(),
    };
    let expected = setup.queries as usize * setup.replicas as usize;
    let mut received = 0;
    let mut next_q = 0;
    let mut tick = tokio::time::interval(Duration::from_millis(setup.query_every_ms.max(1)));
    while received < expected {
        tokio::select! {
            biased;
            Some(m) = responses.next() => {
                let r: Response = serde_json::from_slice(&m.payload)?;
                report.served.entry(r.q).or_insert(r.replica);
                report.answers.entry(r.q).or_default().insert(r.replica, r.answer);
                received += 1;
            }
            _ = tick.tick(), if next_q < setup.queries => {
                let request = setup.request(next_q);
                match &keyed {
                    Some(keyed) => {
                        let input = serde_json::to_vec(&Input::Request(request.clone()))?;
                        keyed
                            .publish(&request.id.to_string(), &format!("req-{next_q}"), input.into())
                            .await?;
                    }
                    None => {
                        client
                            .publish(REQUESTS, serde_json::to_vec(&request)?.into())
                            .await?;
                        client.flush().await?;
                    }
                }
                next_q += 1;
            }
        }
    }
    say(&format!("answers {}", serde_json::to_string(&report)?));
    say("done");
    Ok(())
}

/// The nats-server binary, or a one-sentence reason why there is none.
fn server_binary() -> Result<(), String> {
    const INSTALL: &str = "set BLAZES_NATS_SERVER to a nats-server 2.11+ binary (`scripts/nats-server-path` installs the pinned one and prints its path)";
    if let Some(path) = std::env::var_os("BLAZES_NATS_SERVER") {
        return if std::path::Path::new(&path).is_file() {
            Ok(())
        } else {
            Err(format!(
                "BLAZES_NATS_SERVER={} is not a file; {INSTALL}",
                std::path::Path::new(&path).display()
            ))
        };
    }
    let on_path = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("nats-server").is_file()));
    if on_path {
        Ok(())
    } else {
        Err(format!("nats-server not found; {INSTALL}"))
    }
}

/// Starts the server and the roles, waits for them, and prints the outcome.
async fn drive(setup: Setup, bench: bool) -> ExitCode {
    if let Err(e) = setup.validate().and_then(|()| server_binary()) {
        eprintln!("error: {e}");
        return ExitCode::from(2);
    }
    match drive_inner(&setup, bench).await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The role arguments every spawned process gets.
fn role_args(setup: &Setup) -> Vec<String> {
    vec![
        "--query".into(),
        setup.query.name().into(),
        "--coordination".into(),
        setup.coordination.name().into(),
        "--producers".into(),
        setup.producers.to_string(),
        "--replicas".into(),
        setup.replicas.to_string(),
        "--clicks".into(),
        setup.clicks.to_string(),
        "--ids".into(),
        setup.ids.to_string(),
        "--queries".into(),
        setup.queries.to_string(),
        "--pace-us".into(),
        setup.pace_us.to_string(),
        "--query-every-ms".into(),
        setup.query_every_ms.to_string(),
    ]
}

async fn drive_inner(setup: &Setup, bench: bool) -> Result<ExitCode, Failure> {
    let Some(cluster) = support_nats::Cluster::start(1, "").await else {
        return Err("nats-server is missing".into());
    };
    let client = cluster.client().await;
    let js = jetstream::new(client.clone());
    cluster.wait_ready(&js, 1).await;
    let url = cluster.urls_arg();
    // The deployment's engine objects, created once before any role starts.
    match setup.coordination {
        Coordination::None => {
            js.get_or_create_stream(jetstream::stream::Config {
                name: CLICKS_STREAM.into(),
                subjects: vec!["adnet.clicks.*".into()],
                ..Default::default()
            })
            .await?;
        }
        Coordination::Ordered => {
            Keyed::open(js.clone(), setup.keyed_config()).await?;
        }
        Coordination::Sealed | Coordination::IndependentSeal => {
            let barrier = SealBarrier::open(js.clone(), setup.barrier_config()).await?;
            if setup.coordination == Coordination::IndependentSeal {
                // Each campaign waits for its one ad server only.
                for s in 0..setup.producers {
                    for b in 0..CAMPAIGNS_PER_PRODUCER {
                        let campaign = format!("c{}", s * CAMPAIGNS_PER_PRODUCER + b);
                        barrier.declare(&campaign, &[&Setup::adserver(s)]).await?;
                    }
                }
            }
        }
    }
    let exe = std::env::current_exe()?;
    let spawn = |role: &str, extra: Vec<String>| {
        let mut command = Command::new(&exe);
        command
            .arg(role)
            .args(["--nats", url.as_str()])
            .args(extra)
            .args(role_args(setup));
        (role.to_string(), support_nats::Proc::spawn(command))
    };
    let mut procs = Vec::new();
    for r in 0..setup.replicas {
        procs.push(spawn("report", vec!["--replica".into(), r.to_string()]));
    }
    procs.push(spawn("cache", vec![]));
    for s in 0..setup.producers {
        procs.push(spawn("adserver", vec!["--index".into(), s.to_string()]));
    }
    wait_all(&mut procs, "ready", Duration::from_secs(60)).await?;
    let started = Instant::now();
    // The start signal is a plain publish, which the server may drop for a subscriber it
    // considers slow: it is repeated until the run ends (a role reads only the first).
    let repeat = {
        let client = client.clone();
        tokio::spawn(async move {
            loop {
                let _ = client.publish(GO, Bytes::new()).await;
                let _ = client.flush().await;
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        })
    };
    let finished = wait_all(&mut procs, "done", Duration::from_secs(600)).await;
    repeat.abort();
    finished?;
    let completion = started.elapsed().as_secs_f64();
    let cache = &procs[setup.replicas as usize].1;
    let line = cache
        .lines()
        .into_iter()
        .find_map(|l| l.strip_prefix("answers ").map(str::to_string))
        .ok_or("the cache printed no answers")?;
    let report: CacheReport = serde_json::from_str(&line)?;
    if bench {
        eprintln!(
            "ad_network: {} with {} ad servers: {completion:.3} s",
            setup.coordination.name(),
            setup.producers
        );
        say(&format!(
            "{{\"experiment\": \"ad_network\", \"coordination\": \"{}\", \"producers\": {}, \"completion_s\": {completion:.3}}}",
            setup.coordination.name(),
            setup.producers
        ));
        return Ok(ExitCode::SUCCESS);
    }
    print_outcome(setup, &report, completion);
    Ok(ExitCode::SUCCESS)
}

/// Waits until every process printed `line`; a process that exits first is an error.
async fn wait_all(
    procs: &mut [(String, support_nats::Proc)],
    line: &str,
    limit: Duration,
) -> Result<(), Failure> {
    // The limit counts the polls' sleeps rather than reading the clock: this VM's monotonic
    // clock has been seen to jump by minutes, which would end a clock-based wait at once.
    let pause = Duration::from_millis(10);
    let mut waited = Duration::ZERO;
    loop {
        let mut waiting = Vec::new();
        for (role, p) in procs.iter_mut() {
            if p.lines().iter().any(|l| l == line) {
                continue;
            }
            if let Some(status) = p.child.try_wait()? {
                // Its last lines may still be on their way through the pipe.
                tokio::time::sleep(Duration::from_millis(100)).await;
                if p.lines().iter().any(|l| l == line) {
                    continue;
                }
                return Err(format!(
                    "{role} (pid {}) exited with {status} before `{line}`",
                    p.child.id()
                )
                .into());
            }
            waiting.push(role.clone());
        }
        if waiting.is_empty() {
            return Ok(());
        }
        if waited >= limit {
            return Err(format!(
                "timed out after {} s waiting for `{line}` from: {}",
                limit.as_secs(),
                waiting.join(", ")
            )
            .into());
        }
        tokio::time::sleep(pause).await;
        waited += pause;
    }
}

fn print_outcome(setup: &Setup, report: &CacheReport, completion: f64) {
    say(&format!(
        "ad network: query {}, coordination {}, {} ad servers x {} clicks, {} report replicas, 1 cache, {} requests",
        setup.query.name().to_uppercase(),
        setup.coordination.name(),
        setup.producers,
        setup.clicks,
        setup.replicas,
        setup.queries
    ));
    let mut differing = 0;
    for (q, by_replica) in &report.answers {
        let first = by_replica.values().next();
        if by_replica.values().all(|a| Some(a) == first) {
            continue;
        }
        differing += 1;
        let served = report.served.get(q).copied().unwrap_or(0);
        say(&format!(
            "  request {q}: the cache served replica {served}'s answer; the replicas answered:"
        ));
        for (r, answer) in by_replica {
            say(&format!("    replica {r}: {answer}"));
        }
    }
    if differing == 0
        && let Some((q, by_replica)) = report.answers.iter().next()
        && let Some(answer) = by_replica.values().next()
    {
        say(&format!("  request {q}: every replica answered `{answer}`"));
    }
    say(&format!("completed in {completion:.2} s"));
    say(&format!(
        "replicas disagree on {differing} of {} requests",
        report.answers.len()
    ));
    say(&format!("agree: {}", differing == 0));
}
