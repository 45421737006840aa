//! The paper's Storm word count as separate OS processes coordinating through NATS JetStream,
//! deployed from a plan by the runtime's component host (`blazes_runtime::nats::host`).
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
//! `nats-server` is started through `crates/blazes-runtime/tests/support_nats`; set `BLAZES_NATS_SERVER` or run
//! `scripts/nats-server-path` first): the committed counts of both plans are identical across
//! runs, across the two plans and when a counter is SIGKILLed mid-run and restarted; without
//! the plan they differ. `bench --coordination sealed|ordered|none --workers N [--records R]`
//! prints one JSON line with the throughput (everything else goes to stderr).
//!
//! The modules follow the jobs: [`roles`] are the processes' logic on the host, [`driver`]
//! starts a server and a deployment's processes and reads the committed counts back, [`bench`]
//! measures one deployment's throughput.

#[path = "../../crates/blazes-runtime/tests/support_nats/mod.rs"]
mod support_nats;

mod bench;
mod driver;
mod roles;

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use roles::Role;

/// Counts per `(batch, word)`: what the committer commits.
pub(crate) type Counts = BTreeMap<(u64, String), u64>;

pub(crate) const VOCABULARY: &[&str] = &[
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
pub(crate) const WORDS_PER_TWEET: usize = 6;

/// The text of tweet `t` of batch `b`: deterministic, so the expected counts can be computed
/// from the generator alone.
pub(crate) fn tweet(b: u64, t: u64) -> String {
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
pub(crate) fn expected(batches: u64, tweets: u64) -> Counts {
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
pub(crate) struct Shape {
    workers: u64,
    batches: u64,
    tweets: u64,
}

pub(crate) fn now_nanos() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default()
}

/// `--key value` arguments.
pub(crate) struct Args(BTreeMap<String, String>);

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
                "run" => driver::demo(&args).await.map(|ok| {
                    if !ok {
                        std::process::exit(1);
                    }
                }),
                "bench" => bench::bench(&args).await,
                "source" => roles::source(Role::connect(&args).await?).await,
                "splitter" => roles::splitter(Role::connect(&args).await?).await,
                "counter" => roles::counter(Role::connect(&args).await?).await,
                "committer" => roles::committer(Role::connect(&args).await?).await,
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
