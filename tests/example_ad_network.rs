//! The ad network example (`examples/ad_network`) as real processes on a real nats-server: the
//! plan's mechanisms make the report replicas agree, and the same deployment without them makes
//! them disagree.
//!
//! Each test runs the example's driver (`ad_network run`), which starts a one-node nats-server
//! and spawns three report replicas, a cache and three ad servers as separate processes. Under
//! `CI=true` a missing nats-server fails; outside CI the tests skip with a notice.
//!
//! Every role is hosted by the component host on the query's plan, so the deployments differ
//! by the plan alone. Why the negative controls disagree reliably: without the plan's mechanism,
//! a replica has two inputs on two paths, Report's plain click stream through its own durable
//! consumer and the requests on a plain subject, and nothing orders one against the other. The ad servers emit about three
//! clicks a millisecond for 1.5 s, and the cache sends its 40 requests inside that window,
//! about the ads (POOR) or the campaign (CAMPAIGN) receiving clicks at that moment. A request
//! reaches the three replicas at about the same instant, but each answers with the clicks its
//! own consumer has delivered by then; for every one of the 40 answers to match, the three
//! consumers would have to stand on the same click of that ad at 40 moments. On this machine
//! 3 to 25 of the 40 differ in every run, also under the load of parallel builds.
#![cfg(feature = "nats")]

#[path = "../crates/blazes-runtime/tests/support_nats/mod.rs"]
mod support_nats;

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// Builds the example once (a test selected with `--test` does not build examples) and
/// returns its path.
fn example() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let mut cargo = Command::new(env!("CARGO"));
            // Without the variables cargo sets for this test process: build scripts that watch
            // one of them (ring's watches CARGO_MANIFEST_DIR) would rebuild on every switch
            // between this build and the outer one.
            for (name, _) in std::env::vars_os() {
                let name = name.to_string_lossy();
                let set_for_test = [
                    "CARGO_MANIFEST_",
                    "CARGO_PKG_",
                    "CARGO_CRATE_",
                    "CARGO_BIN_",
                    "CARGO_PRIMARY_PACKAGE",
                    "CARGO_TARGET_TMPDIR",
                ]
                .iter()
                .any(|p| name.starts_with(p));
                if set_for_test {
                    cargo.env_remove(name.as_ref());
                }
            }
            let status = cargo
                .args([
                    "build",
                    "--quiet",
                    "--all-features",
                    "--example",
                    "ad_network",
                ])
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .status()
                .expect("run cargo build");
            assert!(status.success(), "cargo build --example ad_network failed");
            // The test binary is target/<profile>/deps/<name>; examples are next to deps.
            let exe = std::env::current_exe().expect("the test binary's path");
            let dir = exe
                .parent()
                .and_then(|deps| deps.parent())
                .expect("target/<profile>");
            dir.join("examples").join("ad_network")
        })
        .clone()
}

/// The outcome of one `ad_network run`.
struct Outcome {
    agree: bool,
    differing: usize,
    requests: usize,
    stdout: String,
}

/// Runs the example's driver; `None` when nats-server is missing outside CI.
fn run(query: &str, coordination: &str) -> Option<Outcome> {
    let server = support_nats::server_binary()?;
    let output = Command::new(example())
        .args(["run", "--query", query, "--coordination", coordination])
        .env("BLAZES_NATS_SERVER", server)
        .output()
        .expect("run the example");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "ad_network run --query {query} --coordination {coordination} failed ({}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let agree = match stdout.lines().find_map(|l| l.strip_prefix("agree: ")) {
        Some("true") => true,
        Some("false") => false,
        other => panic!("no `agree:` line ({other:?}) in:\n{stdout}"),
    };
    let (differing, requests) = stdout
        .lines()
        .find_map(|l| {
            let rest = l.strip_prefix("replicas disagree on ")?;
            let (d, rest) = rest.split_once(" of ")?;
            let n = rest.strip_suffix(" requests")?;
            Some((d.parse().ok()?, n.parse().ok()?))
        })
        .unwrap_or_else(|| panic!("no `replicas disagree on` line in:\n{stdout}"));
    Some(Outcome {
        agree,
        differing,
        requests,
        stdout,
    })
}

#[test]
fn ordered_poor_replicas_agree() {
    let Some(o) = run("poor", "ordered") else {
        return;
    };
    assert_eq!(o.requests, 40, "every request answered by every replica");
    assert!(
        o.agree && o.differing == 0,
        "with the keyed order, replicas disagree:\n{}",
        o.stdout
    );
}

/// The negative control of the ordered deployment: the same POOR workload, minus the order.
#[test]
fn unordered_poor_replicas_disagree() {
    let Some(o) = run("poor", "none") else {
        return;
    };
    assert_eq!(o.requests, 40);
    assert!(
        !o.agree && o.differing > 0,
        "without ordering the replicas agreed on every answer:\n{}",
        o.stdout
    );
    // The example shows the differing answers, one line per replica.
    assert!(o.stdout.contains("    replica 1: ad "), "{}", o.stdout);
}

#[test]
fn sealed_campaign_replicas_agree() {
    let Some(o) = run("campaign", "sealed") else {
        return;
    };
    assert_eq!(o.requests, 40);
    assert!(
        o.agree && o.differing == 0,
        "with the seal barrier, replicas disagree:\n{}",
        o.stdout
    );
}

/// Each campaign sealed by the one ad server that writes it (which declares it its own): the
/// replicas agree. Its control is `unsealed_campaign_replicas_disagree` (the same query without
/// the barrier); that a partition waits for every producer unless declared is tested on the
/// host (`crates/blazes-runtime/tests/host_nats.rs`).
#[test]
fn independently_sealed_campaign_replicas_agree() {
    let Some(o) = run("campaign", "independent-seal") else {
        return;
    };
    assert_eq!(o.requests, 40);
    assert!(
        o.agree && o.differing == 0,
        "with independent seals, replicas disagree:\n{}",
        o.stdout
    );
}

/// The negative control of the sealed deployment: the same CAMPAIGN requests answered from the
/// clicks as they arrive, without the barrier.
#[test]
fn unsealed_campaign_replicas_disagree() {
    let Some(o) = run("campaign", "none") else {
        return;
    };
    assert_eq!(o.requests, 40);
    assert!(
        !o.agree && o.differing > 0,
        "without the seal barrier the replicas agreed on every answer:\n{}",
        o.stdout
    );
}
