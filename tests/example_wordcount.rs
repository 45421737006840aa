//! `examples/wordcount` as real processes on a real `nats-server`: the committed counts of
//! the sealed and the ordered deployment equal the counts computed here from the tweet
//! generator, across runs and when a counter is SIGKILLed and restarted; the uncoordinated
//! deployment (the plan skipped, a counter killed) must differ: the negative control. Under
//! `CI=true` a missing server fails with an install hint (the harness).
#![cfg(feature = "nats")]

#[path = "../crates/blazes-runtime/tests/support_nats/mod.rs"]
mod support_nats;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

/// The example's tweet generator, restated: the expected counts come from the data alone.
fn tweet(b: u64, t: u64) -> Vec<&'static str> {
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
    let mut x = ((b << 32) | t).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..6)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            VOCABULARY[(x % VOCABULARY.len() as u64) as usize]
        })
        .collect()
}

type Counts = BTreeMap<(u64, String), u64>;

fn expected(batches: u64, tweets: u64) -> Counts {
    let mut c = Counts::new();
    for b in 0..batches {
        for t in 0..tweets {
            for w in tweet(b, t) {
                *c.entry((b, w.to_string())).or_default() += 1;
            }
        }
    }
    c
}

fn read(path: PathBuf) -> Counts {
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            (
                (f[0].parse().unwrap(), f[1].to_string()),
                f[2].parse().unwrap(),
            )
        })
        .collect()
}

/// Builds the example with this test's features (so the library is not rebuilt) and returns
/// its path.
fn example() -> PathBuf {
    let mut features = vec!["nats"];
    if cfg!(feature = "arbitrary") {
        features.push("arbitrary");
    }
    let status = Command::new(env!("CARGO"))
        .args(["build", "--quiet", "--example", "wordcount", "--features"])
        .arg(features.join(","))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .expect("cargo");
    assert!(status.success(), "the example builds");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"));
    target.join("debug/examples/wordcount")
}

#[test]
fn coordinated_deployments_commit_the_expected_counts_and_the_uncoordinated_one_does_not() {
    let Some(server) = support_nats::server_binary() else {
        return;
    };
    let (workers, batches, tweets) = (3, 8, 24);
    let out = tempfile::tempdir().unwrap();
    let o = Command::new(example())
        .args(["run", "--workers", &workers.to_string()])
        .args([
            "--batches",
            &batches.to_string(),
            "--tweets",
            &tweets.to_string(),
        ])
        .arg("--out")
        .arg(out.path())
        .env("BLAZES_NATS_SERVER", server)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{stderr}");
    let want = expected(batches, tweets);
    for run in [
        "sealed-1",
        "sealed-2",
        "ordered",
        "sealed-killed",
        "ordered-killed",
    ] {
        let got = read(out.path().join(format!("{run}.txt")));
        assert_eq!(got, want, "{run}: the committed counts\n{stdout}\n{stderr}");
    }
    assert!(
        stderr.contains("sealed: counter 1 SIGKILLed")
            && stderr.contains("ordered: counter 1 SIGKILLed"),
        "a counter was killed mid-run in both plans: {stderr}"
    );
    // The negative control: the same processes without the plan's mechanism, the same kill.
    let none = read(out.path().join("none-killed.txt"));
    assert_ne!(
        none, want,
        "without coordination the counts differ\n{stdout}"
    );
    assert!(
        stdout.contains("DIFFERENT"),
        "the example says so: {stdout}"
    );
}
