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
//! `nats-server` on `PATH`; `scripts/nats-server-path` installs the pinned one), plan the
//! query's spec `specs/ad-<query>.yaml` with the CLI itself (`ad_network plan ...` is `blazes
//! plan ...`) and spawn this binary once per role (`adserver`, `report`, `cache`). Every role
//! is hosted by the component host on that plan: the ad servers are instances of the spec's
//! source `adservers` publishing into Report, each report server an instance of `Report`
//! answering into `Cache`, the cache the one instance of `Cache`. The host opens whatever the
//! plan puts on Report's inputs, so the deployments (`--coordination`) differ by the plan alone:
//!
//! - `none`: the spec without its mechanisms: clicks go to Report's plain stream, which every
//!   replica reads with its own durable consumer; the requests reach the replicas on the
//!   cache's subject. Each replica answers from whatever its consumer has delivered when the
//!   request arrives.
//! - `ordered`: the plan of `specs/ad-poor.yaml` (keyed order on `Report` by `id`): clicks and
//!   requests are appended to the keyed order, partitioned by ad id, and every replica reads
//!   every partition in the keyed stream's order (`HostConfig::keyed_replica`).
//! - `sealed`: the plan of `specs/ad-campaign.yaml` (or `ad-window.yaml`): clicks go through the
//!   plan's seal barrier on `Report.click`, partitioned by campaign (window); every ad server
//!   seals each partition after its last click in it, and a replica answers a request about a
//!   partition once the barrier has released it to it. No global order.
//! - `independent-seal`: as `sealed`, but each campaign's clicks come from one ad server, which
//!   declares the campaign its own (`Outputs::declare_sole_producer`): its seal alone releases
//!   the partition.
//!
//! The coordinated deployments fail with exit 2 when the plan lacks the mechanism they need
//! (the plans of THRESH, CAMPAIGN and WINDOW have no order, POOR's no seal barrier).
//!
//! The modules follow the jobs: [`workload`] is what every role computes alike from the
//! arguments, [`plan`] the plan the roles are hosted by, [`roles`] the processes' logic,
//! [`driver`] starts a server and the roles and prints the outcome, [`bench`] measures one
//! deployment's completion time.

mod bench;
mod driver;
mod plan;
mod roles;
mod workload;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use blazes_runtime::nats::async_nats::{self, jetstream};
use bytes::Bytes;
use clap::{Parser, Subcommand, ValueEnum};
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};

use driver::drive;
use roles::{Role, adserver, cache, report, role};
use workload::{CacheReport, Click, ReportInput, Request, Response, Setup};

#[path = "../../crates/blazes-runtime/tests/support_nats/mod.rs"]
mod support_nats;

/// Each ad server owns this many campaigns under `independent-seal`; the campaign count is
/// `producers * CAMPAIGNS_PER_PRODUCER` in every deployment.
const CAMPAIGNS_PER_PRODUCER: u32 = 2;
/// Time windows of the WINDOW query; every ad server walks through them in order.
const WINDOWS: u32 = 4;
/// The spec's source of clicks, Report's instances and the cache's component.
const ADSERVERS: &str = "adservers";
const REPORT: &str = "Report";
const CACHE: &str = "Cache";
const GO: &str = "adnet.go";
/// The cache's requests where the plan leaves them unordered against the clicks.
const REQUESTS: &str = "adnet.requests";
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
        /// The plan document the role is hosted by.
        #[arg(long)]
        plan: PathBuf,
        #[command(flatten)]
        setup: Setup,
    },
    /// Role: one report server replica (spawned by the driver).
    Report {
        #[arg(long)]
        nats: String,
        #[arg(long)]
        replica: u32,
        /// The plan document the role is hosted by.
        #[arg(long)]
        plan: PathBuf,
        #[command(flatten)]
        setup: Setup,
    },
    /// Role: the cache between the clients and the report servers (spawned by the driver).
    Cache {
        #[arg(long)]
        nats: String,
        /// The plan document the role is hosted by.
        #[arg(long)]
        plan: PathBuf,
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

type Failure = Box<dyn std::error::Error + Send + Sync>;

fn main() -> ExitCode {
    if std::env::args().nth(1).as_deref() == Some("plan") {
        // `ad_network plan ...` is `blazes plan ...`: the driver plans with the CLI itself.
        std::process::exit(blazes::cli::run());
    }
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
                drive(
                    bench::setup(coordination, producers, clicks, replicas),
                    true,
                )
                .await
            }
            Cmd::Adserver {
                nats,
                index,
                plan,
                setup,
            } => role(|| async move {
                adserver(Role::connect(&nats, &plan, setup).await?, index).await
            })
            .await,
            Cmd::Report {
                nats,
                replica,
                plan,
                setup,
            } => role(|| async move {
                report(Role::connect(&nats, &plan, setup).await?, replica).await
            })
            .await,
            Cmd::Cache { nats, plan, setup } => {
                role(|| async move { cache(Role::connect(&nats, &plan, setup).await?).await }).await
            }
        }
    })
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}
