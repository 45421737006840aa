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

/// The texts of an SVG's `<text>` elements, sorted: what a reader sees, without the layout
/// (which may shift between Graphviz versions).
fn svg_texts(svg: &str) -> Vec<String> {
    let mut v: Vec<String> = svg
        .split("<text")
        .skip(1)
        .filter_map(|t| t.split_once('>'))
        .filter_map(|(_, rest)| rest.split_once("</text>"))
        .map(|(text, _)| text.to_string())
        .collect();
    v.sort();
    v
}

/// The figures in `docs/` show what `blazes render` draws today: `NAME.svg` is
/// `specs/NAME.yaml` drawn with or without `--plan`, `NAME-plan.svg` with it.
#[test]
fn svg_figures_show_what_render_draws() {
    if !require_dot() {
        return;
    }
    let mut figures: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "svg"))
        .collect();
    figures.sort();
    assert!(figures.len() >= 5, "docs has its figures");
    let drawn = |spec: &str, plan: bool| -> Vec<String> {
        let mut args = vec!["render", spec, "--format", "svg"];
        if plan {
            args.push("--plan");
        }
        let o = blazes(&args);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        svg_texts(&stdout(&o))
    };
    for fig in figures {
        let stem = fig.file_stem().unwrap().to_string_lossy().into_owned();
        let (name, plans): (&str, &[bool]) = match stem.strip_suffix("-plan") {
            Some(n) => (n, &[true]),
            None => (&stem, &[false, true]),
        };
        let spec = format!("specs/{name}.yaml");
        let shown = svg_texts(&std::fs::read_to_string(&fig).unwrap());
        let variants: Vec<Vec<String>> = plans.iter().map(|&p| drawn(&spec, p)).collect();
        assert!(
            variants.contains(&shown),
            "{} is stale: regenerate it with `blazes render {spec} --format svg{} -o {}`",
            fig.display(),
            if plans == [true] {
                " --plan"
            } else {
                " [--plan]"
            },
            fig.strip_prefix(root()).unwrap().display()
        );
        // Negative control: the same figure with one label changed matches no drawing.
        let mut changed = shown.clone();
        let i = changed
            .iter()
            .position(|t| t == "Async" || t == "Run" || t == "Inst")
            .expect("a figure shows a label");
        changed[i] = "Diverge".to_string();
        changed.sort();
        assert!(!variants.contains(&changed), "{}", fig.display());
    }
}
