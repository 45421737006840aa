//! Helpers shared by the integration tests: run the real binary, list fixtures.
#![allow(dead_code)]

pub mod rng;
#[path = "../../crates/blazes-runtime/tests/skips/mod.rs"]
pub mod skips;
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

/// A path from `insta::glob!` as the tests pass it to the binary: relative to the crate root
/// (`specs/wordcount.yaml`), which is what the outputs show.
pub fn relative(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
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

/// What a missing external tool means, given the value of `CI`: in CI a failure that says how
/// to install it; elsewhere a skip, with a notice saying the same ([`skips::missing`]).
pub fn missing_tool(what: &str, install: &str, ci: Option<&str>) -> Result<String, String> {
    skips::missing(what, install, ci)
        .map(|()| format!("notice: {what} is not installed; skipping ({install})"))
}

/// `found`, after [`missing_tool`] had its say: panics in CI when the tool is missing, and
/// elsewhere prints the notice and records the skip for `scripts/test`'s summary.
pub fn require_tool(found: bool, what: &str, install: &str) -> bool {
    skips::require(found, what, install)
}

/// Whether `program args...` runs and exits 0.
pub fn runs(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Graphviz's `dot`, required in CI.
pub fn require_dot() -> bool {
    require_tool(
        runs("dot", &["-V"]),
        "Graphviz's `dot`",
        "Debian/Ubuntu: `apt-get install graphviz`, macOS: `brew install graphviz`",
    )
}

/// A spec whose implicit sink's name (`Countc…c.countso…o`, 501 characters: two names of 250)
/// is longer than the 400 characters a diagnostic's message keeps, failed by the unordered
/// write (C001) of the component whose output it is. Written into a fresh directory of the
/// target's temporary directory, named after `test`; returns the file and the sink's name.
pub fn long_implicit_sink(test: &str) -> (PathBuf, String) {
    let component = format!("Count{}", "c".repeat(245));
    let output = format!("counts{}", "o".repeat(244));
    let spec = format!(
        "name: long-implicit-sink
sources:
  tweets: {{}}
components:
  Splitter:
    paths:
      - {{ from: tweets, to: words, label: CR }}
  {component}:
    paths:
      - {{ from: words, to: {output}, label: OW, gate: [word, batch] }}
streams:
  - {{ from: tweets, to: Splitter.tweets }}
  - {{ from: Splitter.words, to: {component}.words }}
"
    );
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("long-sink-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("long-implicit-sink.yaml");
    std::fs::write(&path, spec).unwrap();
    (path, format!("{component}.{output}"))
}

/// The C004 messages of a `check --format json` document.
pub fn c004_messages(doc: &serde_json::Value) -> Vec<String> {
    doc["files"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|f| f["diagnostics"].as_array().unwrap())
        .filter(|d| d["code"] == "C004")
        .map(|d| d["message"].as_str().unwrap().to_string())
        .collect()
}

/// Negative control of the tests on [`long_implicit_sink`]: its C004 message is cut before
/// the sink's name ends, so searching the message for the name, as the reports once matched a
/// diagnostic to its sink, cannot find it.
pub fn assert_message_hides_the_name(doc: &serde_json::Value, sink: &str) {
    assert_eq!(sink.chars().count(), 501);
    let messages = c004_messages(doc);
    assert_eq!(messages.len(), 1, "{messages:?}");
    let m = &messages[0];
    assert!(m.ends_with('…'), "the message is cut: {m}");
    assert_eq!(m.chars().count(), 401, "400 characters and the ellipsis");
    assert!(m.starts_with("implicit sink `Countc"), "{m}");
    assert!(
        !m.contains(&format!("`{sink}` ")),
        "a text search finds nothing"
    );
    assert!(!m.contains(sink), "not even the bare name");
}
