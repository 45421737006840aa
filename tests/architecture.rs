//! Boundaries ARCHITECTURE.md promises. The compiler keeps most of them: the runtime is its own
//! crate and cannot name an analyzer module it does not depend on. What is left to check is
//! the dependency edges themselves, read from the manifests: the runtime's only workspace
//! dependency is the plan document's crate, and that crate depends on nothing but serde.

use std::path::Path;

/// The names of the dependencies a manifest's `[dependencies]` tables declare (target-specific
/// ones included), without dev- or build-dependencies.
fn dependencies(manifest: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut in_deps = false;
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            let table = line.trim_matches(|c| c == '[' || c == ']');
            in_deps = table == "dependencies" || table.ends_with(".dependencies");
            continue;
        }
        if in_deps && let Some((name, _)) = line.split_once('=') {
            let name = name.trim();
            if !name.is_empty() && !name.starts_with('#') {
                names.push(name.to_string());
            }
        }
    }
    names
}

fn manifest(crate_dir: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(crate_dir)
            .join("Cargo.toml"),
    )
    .unwrap()
}

/// The crates of this workspace an analyzer-free crate could wrongly depend on.
const ANALYZER: [&str; 1] = ["blazes"];

#[test]
fn the_runtime_depends_on_the_plan_document_and_on_no_analyzer_crate() {
    let deps = dependencies(&manifest("crates/blazes-runtime"));
    assert!(deps.contains(&"blazes-plan".to_string()), "{deps:?}");
    let bad: Vec<_> = deps
        .iter()
        .filter(|d| ANALYZER.contains(&d.as_str()))
        .collect();
    assert!(
        bad.is_empty(),
        "the runtime depends on analyzer crates: {bad:?}"
    );
}

#[test]
fn the_plan_document_depends_on_serde_alone() {
    assert_eq!(dependencies(&manifest("crates/blazes-plan")), ["serde"]);
}

/// The check itself: a manifest that added the analyzer, in any dependency table, is caught;
/// dev-dependencies are not dependencies of the library.
#[test]
fn the_manifest_reader_sees_every_dependency_table() {
    let text = "[package]\nname = \"x\"\n[dependencies]\nserde = \"1\"\n# blazes = \"0\"\n\
                [target.'cfg(unix)'.dependencies]\nblazes = { path = \"../..\" }\n\
                [dev-dependencies]\nproptest = \"1\"\n";
    assert_eq!(dependencies(text), ["serde", "blazes"]);
}
