//! The driver: a local server, the processes of a deployment, the committed counts.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use blazes_runtime::deploy::{self, PlanFile, read_plan};
use blazes_runtime::nats::async_nats::jetstream;
use futures_util::StreamExt;

use super::roles::{database, text};
use super::support_nats::{Cluster, Proc};
use super::*;

/// A deployment: which plan its processes read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Coordination {
    Sealed,
    Ordered,
    None,
}

impl Coordination {
    pub(crate) fn parse(s: &str) -> Result<Coordination, String> {
        match s {
            "sealed" => Ok(Coordination::Sealed),
            "ordered" => Ok(Coordination::Ordered),
            "none" => Ok(Coordination::None),
            other => Err(format!(
                "`--coordination` is sealed, ordered or none, not `{other}`"
            )),
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Coordination::Sealed => "sealed",
            Coordination::Ordered => "ordered",
            Coordination::None => "none",
        }
    }

    pub(crate) fn spec(self) -> &'static str {
        match self {
            Coordination::Sealed => "specs/wordcount-sealable.yaml",
            Coordination::Ordered => "specs/wordcount-star.yaml",
            Coordination::None => "specs/wordcount.yaml",
        }
    }
}

/// `blazes plan --format json SPEC`, run by this binary (`wordcount plan ...` is the CLI).
pub(crate) fn plan_document(spec: &str, dir: &Path) -> Result<PathBuf, String> {
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
pub(crate) struct Outcome {
    pub(crate) counts: Counts,
    pub(crate) elapsed: Duration,
}

pub(crate) fn spawn(
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

pub(crate) fn counted(lines: &[String]) -> BTreeSet<u64> {
    lines
        .iter()
        .filter_map(|l| l.strip_prefix("counted ")?.parse().ok())
        .collect()
}

pub(crate) async fn wait_until(
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
pub(crate) async fn deployment(
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
            let seen = || {
                let mut c = counted(&lines.lock().unwrap());
                c.extend(before.iter().copied());
                c
            };
            wait_until(limit, "every counter to count every batch", || {
                seen() == all
            })
            .await
            .map_err(|e| {
                let missing: Vec<u64> = all.difference(&seen()).copied().collect();
                format!("{e}: counter {i} has not counted batches {missing:?}")
            })?;
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

pub(crate) fn plan_file(plan: &Path) -> Result<PlanFile, String> {
    let text = std::fs::read_to_string(plan).map_err(|e| e.to_string())?;
    read_plan(&text)
        .map_err(|e| e.to_string())?
        .into_iter()
        .next()
        .ok_or_else(|| "the plan document has no spec".to_string())
}

pub(crate) fn prefix(plan: &Path) -> Result<String, String> {
    Ok(deploy::derive(&plan_file(plan)?, 1)
        .map_err(|e| e.to_string())?
        .prefix)
}

/// Waits until `consumer` of `stream` has nothing pending and nothing unacknowledged.
pub(crate) async fn drained(
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
pub(crate) fn differences(got: &Counts, expected: &Counts) -> usize {
    let keys: BTreeSet<&(u64, String)> = got.keys().chain(expected.keys()).collect();
    keys.into_iter()
        .filter(|k| got.get(k) != expected.get(k))
        .count()
}

pub(crate) async fn demo(args: &Args) -> Result<bool, String> {
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
