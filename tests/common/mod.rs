//! Helpers shared by the integration tests: run the real binary, list fixtures.
#![allow(dead_code)]

pub mod rng;
pub mod specgen;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `blazes` from the crate root with the given arguments.
pub fn blazes(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_blazes"))
        .args(args)
        .current_dir(root())
        .env("NO_COLOR", "1")
        .env_remove("RUST_BACKTRACE")
        .output()
        .expect("the blazes binary runs")
}

/// Runs `blazes` with `input` on standard input.
pub fn blazes_stdin(args: &[&str], input: &[u8]) -> Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_blazes"))
        .args(args)
        .current_dir(root())
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the blazes binary runs");
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).expect("output is UTF-8")
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).expect("output is UTF-8")
}

/// `*.yaml` files of a directory relative to the crate root, sorted, as relative paths.
pub fn yaml_files(dir: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(root().join(dir))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .map(|p| format!("{dir}/{}", p.file_name().unwrap().to_string_lossy()))
        .collect();
    v.sort();
    v
}

pub fn stem(path: &str) -> String {
    Path::new(path)
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

/// No panic text or Rust Debug output reached the user.
pub fn assert_clean_failure(o: &Output) {
    let all = format!("{}{}", stdout(o), stderr(o));
    for bad in [
        "panicked",
        "RUST_BACKTRACE",
        "Some(",
        "Spanned {",
        "Location {",
    ] {
        assert!(!all.contains(bad), "output contains `{bad}`:\n{all}");
    }
}
