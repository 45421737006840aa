//! The documentation links only inside the repository, and every link resolves: a clone of the
//! repository is all a reader needs.

mod common;

use std::path::{Path, PathBuf};

use common::*;

/// The markdown files users read.
fn docs() -> Vec<PathBuf> {
    let mut v = vec![root().join("README.md"), root().join("ARCHITECTURE.md")];
    let mut d: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    d.sort();
    v.extend(d);
    v
}

/// Targets of inline links and images, `[text](target)`, outside code blocks and spans.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Drop code spans: `[a](b)` inside backticks is not a link.
        let plain: String = line
            .split('`')
            .enumerate()
            .filter(|(i, _)| i % 2 == 0)
            .map(|(_, s)| s)
            .collect::<Vec<_>>()
            .join(" ");
        let mut rest = plain.as_str();
        while let Some(i) = rest.find("](") {
            let after = &rest[i + 2..];
            let end = after.find(')').unwrap_or(after.len());
            out.push(after[..end].to_string());
            rest = &after[end..];
        }
    }
    out
}

/// What is wrong with a link from `file`, if anything.
fn problem(file: &Path, target: &str) -> Option<String> {
    if target.starts_with("https://") || target.starts_with("http://") {
        // Websites of tools (pre-commit) are not part of the repository's documentation.
        return None;
    }
    let path = target.split('#').next().unwrap();
    if path.is_empty() {
        return None;
    }
    let resolved = file.parent().unwrap().join(path);
    let Ok(real) = resolved.canonicalize() else {
        return Some(format!("{target}: no such file"));
    };
    let repo = root().canonicalize().unwrap();
    if !real.starts_with(&repo) {
        return Some(format!("{target}: outside the repository"));
    }
    None
}

#[test]
fn every_link_resolves_inside_the_repository() {
    let mut bad = Vec::new();
    let mut count = 0;
    for file in docs() {
        let text = std::fs::read_to_string(&file).unwrap();
        for target in links(&text) {
            count += 1;
            if let Some(p) = problem(&file, &target) {
                bad.push(format!("{}: {p}", file.display()));
            }
        }
    }
    assert!(count >= 20, "the docs have links to check ({count})");
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn the_checker_catches_what_it_is_for() {
    // A link written for the README but placed in docs/ resolves to docs/docs/...
    let robustness = root().join("docs/robustness.md");
    assert!(problem(&robustness, "docs/robustness.md").is_some());
    assert!(problem(&robustness, "robustness.md").is_none());
    // A path that leaves the clone, whether or not something exists there.
    let readme = root().join("README.md");
    assert!(problem(&readme, "../").is_some());
    assert!(problem(&readme, "docs/algebra.md#5-the-rules").is_none());
    // Links in code are not links.
    assert_eq!(
        links("see [a](x.md) and `[b](y.md)`\n```\n[c](z.md)\n```\n"),
        ["x.md"]
    );
}
