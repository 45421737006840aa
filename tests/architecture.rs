//! Boundaries ARCHITECTURE.md promises, checked on the source text so that a change that
//! crosses one fails here rather than in review.

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The crate's top-level modules other than `runtime`: the analyzer and its CLI.
fn analyzer_modules() -> Vec<String> {
    let lib =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap();
    lib.lines()
        .filter_map(|l| l.trim().strip_prefix("pub mod "))
        .map(|m| m.trim_end_matches(';').to_string())
        .filter(|m| m != "runtime")
        .collect()
}

/// Every `crate::<module>` path in `text` that names one of `forbidden`, as `line: text`.
fn uses_of(text: &str, forbidden: &[String]) -> Vec<String> {
    let mut found = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(i) = rest.find("crate::") {
            let after = &rest[i + "crate::".len()..];
            let name: String = after
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if forbidden.contains(&name) {
                found.push(format!("{}: {}", n + 1, line.trim()));
            }
            rest = after;
        }
        // `use crate::{analysis, ...}` lists modules after a brace.
        if code.contains("crate::{") {
            for m in forbidden {
                if code.contains(&format!("{{{m}")) || code.contains(&format!(" {m},")) {
                    found.push(format!("{}: {}", n + 1, line.trim()));
                }
            }
        }
    }
    found
}

/// The runtime reads the plan's JSON format; it imports no analyzer module, so that a service
/// that links it does not link the analyzer's vocabulary, and the two evolve separately.
#[test]
fn the_runtime_imports_no_analyzer_module() {
    let forbidden = analyzer_modules();
    assert!(forbidden.contains(&"analysis".to_string()), "{forbidden:?}");
    let mut files = Vec::new();
    rust_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src/runtime"),
        &mut files,
    );
    files.sort();
    assert!(!files.is_empty());
    let mut bad = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for u in uses_of(&text, &forbidden) {
            bad.push(format!("{}:{u}", f.display()));
        }
    }
    assert!(
        bad.is_empty(),
        "the runtime imports analyzer modules:\n{}",
        bad.join("\n")
    );
}

/// The check itself: a runtime file that imported the analysis would be caught.
#[test]
fn the_import_check_catches_an_analyzer_import() {
    let forbidden = analyzer_modules();
    let text = "use crate::runtime::log::Log;\nuse crate::analysis::FailOn;\n";
    assert_eq!(
        uses_of(text, &forbidden),
        ["2: use crate::analysis::FailOn;"]
    );
    let text = "use crate::{label, runtime};\n";
    assert_eq!(uses_of(text, &forbidden).len(), 1);
    // Comments and the runtime's own paths are not imports of the analyzer.
    let text = "// see crate::analysis\nuse crate::runtime::smr::Replica;\n";
    assert!(uses_of(text, &forbidden).is_empty());
}
