//! A test that cannot run (a tool or server missing outside CI) says so: libtest has no
//! runtime skip, so such a test returns early and would count as passed. Each skip prints a
//! notice and, when `BLAZES_SKIPPED_LOG` names a file (`scripts/test` sets it), appends a line
//! to it: `scripts/test` then counts those tests as skipped, not passed, and ends with the list
//! of what could not run and how to install it. Shared by every test binary of the workspace
//! (the CLI's `tests/common` and the runtime's `support_nats` include it by path).
#![allow(dead_code)]

use std::io::Write;

/// The environment variable naming the file skips are appended to.
pub const LOG: &str = "BLAZES_SKIPPED_LOG";

/// Whether `CI` says the tests run in CI (set, and not empty, `false` or `0`).
pub fn under_ci(ci: Option<&str>) -> bool {
    ci.is_some_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// The line a skip appends to the log: the test binary, the test, what is missing and how to
/// install it, separated by tabs (tabs and newlines in the parts become spaces).
pub fn line(binary: &str, test: &str, what: &str, install: &str) -> String {
    let clean = |s: &str| s.replace(['\t', '\n', '\r'], " ");
    format!(
        "{}\t{}\t{}\t{}\n",
        clean(binary),
        clean(test),
        clean(what),
        clean(install)
    )
}

/// The running test binary's name without cargo's hash suffix (`sarif-1a2b3c` is `sarif`).
fn binary() -> String {
    let exe = std::env::current_exe().ok();
    let stem = exe
        .as_ref()
        .and_then(|p| p.file_stem())
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    match stem.rsplit_once('-') {
        Some((name, hash)) if hash.chars().all(|c| c.is_ascii_hexdigit()) => name.to_string(),
        _ => stem,
    }
}

/// Records that the running test skips because `what` is missing; prints the notice.
pub fn record(what: &str, install: &str) {
    eprintln!("notice: {what} is not installed; skipping ({install})");
    let Some(path) = std::env::var_os(LOG) else {
        return;
    };
    let test = std::thread::current()
        .name()
        .unwrap_or("(unnamed test)")
        .to_string();
    // One `write` of a short line with O_APPEND: concurrent tests' lines do not interleave.
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
    {
        let _ = f.write_all(line(&binary(), &test, what, install).as_bytes());
    }
}

/// What a missing tool means, given the value of `CI`: in CI a failure that says how to
/// install it (`.ci/run` installs every tool the tests use, so a missing one is a broken
/// set-up, never a reason to pass); elsewhere a skip.
pub fn missing(what: &str, install: &str, ci: Option<&str>) -> Result<(), String> {
    match under_ci(ci) {
        true => Err(format!(
            "{what} is not installed, and CI must run this test: {install}"
        )),
        false => Ok(()),
    }
}

/// `found`, after [`missing`] had its say: panics in CI when the tool is missing, records the
/// skip elsewhere.
pub fn require(found: bool, what: &str, install: &str) -> bool {
    if !found {
        match missing(what, install, std::env::var("CI").ok().as_deref()) {
            Ok(()) => record(what, install),
            Err(e) => panic!("{e}"),
        }
    }
    found
}
