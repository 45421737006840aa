//! `blazes check --format github`: workflow commands GitHub Actions turns into inline
//! annotations. Snapshot over several files, the command syntax, and the exit code.

mod common;

use common::*;

#[test]
fn snapshot_over_several_files() {
    let mut files = yaml_files("specs");
    files.push("tests/fixtures/errors/dangling.yaml".into());
    let mut args = vec!["check", "--format", "github"];
    args.extend(files.iter().map(String::as_str));
    let o = blazes(&args);
    assert_eq!(
        o.status.code(),
        Some(2),
        "the worst exit code over the files"
    );
    insta::assert_snapshot!("github-all", stdout(&o));
}

#[test]
fn one_well_formed_command_per_finding() {
    let o = blazes(&[
        "check",
        "--format",
        "github",
        "specs/wordcount.yaml",
        "specs/wordcount-sealed.yaml",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert!(!lines.is_empty());
    for l in &lines {
        assert!(
            l.starts_with("::error ") || l.starts_with("::warning "),
            "{l}"
        );
        let (props, msg) = l
            .split_once("::")
            .map(|(_, rest)| rest)
            .unwrap()
            .split_once("::")
            .unwrap();
        assert!(props.contains("file=specs/wordcount.yaml,line="), "{props}");
        assert!(props.contains(",col="), "{props}");
        assert!(!msg.contains('\n') && !msg.is_empty());
    }
    let c001 = lines
        .iter()
        .find(|l| l.contains("title=C001 unordered-write"))
        .unwrap();
    // The origin of the bad input, the sinks it breaks and the help travel in the message,
    // with escaped newlines.
    assert!(
        c001.contains("%0A  19:13: Async from here") && c001.contains("%0Ahelp"),
        "{c001}"
    );
}

#[test]
fn clean_files_print_nothing_and_exit_0() {
    let o = blazes(&["check", "--format", "github", "specs/wordcount-sealed.yaml"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(stdout(&o), "");
}

/// Findings of each level in the complete SARIF log of the same files: the reference count of
/// what the GitHub format groups and bounds.
fn sarif_levels(args: &[&str]) -> (usize, usize) {
    let mut all = vec!["check", "--format", "sarif", "--max-results", "1000000"];
    all.extend_from_slice(args);
    let v: serde_json::Value = serde_json::from_str(&stdout(&blazes(&all))).unwrap();
    let results = v["runs"][0]["results"].as_array().unwrap();
    let errors = results.iter().filter(|r| r["level"] == "error").count();
    (errors, results.len() - errors)
}

fn generated_spec() -> (std::path::PathBuf, String) {
    let d = std::env::temp_dir().join(format!("blazes-github-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let spec = d.join("gen.yaml");
    let o = blazes(&[
        "gen",
        "--components",
        "400",
        "--seed",
        "3",
        "-o",
        spec.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    (d, spec.to_str().unwrap().to_string())
}

#[test]
fn annotations_are_bounded_per_level_and_a_notice_counts_the_rest() {
    let (d, spec) = generated_spec();
    let (errors, warnings) = sarif_levels(&[&spec]);
    assert!(
        errors > 10 && warnings > 10,
        "{errors} errors, {warnings} warnings"
    );
    for (max, args) in [
        (10, vec!["check", "--format", "github", spec.as_str()]),
        (
            3,
            vec![
                "check",
                "--format",
                "github",
                "--max-results",
                "3",
                spec.as_str(),
            ],
        ),
    ] {
        let out = stdout(&blazes(&args));
        let lines: Vec<&str> = out.lines().collect();
        let count = |p: &str| lines.iter().filter(|l| l.starts_with(p)).count();
        assert_eq!(count("::error "), max);
        assert_eq!(count("::warning "), max);
        assert_eq!(count("::notice "), 1);
        let notice = lines.last().unwrap();
        assert!(
            notice.starts_with("::notice "),
            "the notice comes last: {notice}"
        );
        let left = (errors - max) + (warnings - max);
        assert!(
            notice.contains(&format!(
                "{} errors and {} warnings were left out",
                errors - max,
                warnings - max
            )),
            "{notice}"
        );
        assert!(
            notice.contains(&format!("title=blazes%3A {left} findings not annotated")),
            "{notice}"
        );
    }
    // With room for everything: one annotation per finding, no notice.
    let out = stdout(&blazes(&[
        "check",
        "--format",
        "github",
        "--max-results",
        "100000",
        &spec,
    ]));
    assert_eq!(
        out.lines().filter(|l| l.starts_with("::error ")).count(),
        errors
    );
    assert_eq!(
        out.lines().filter(|l| l.starts_with("::warning ")).count(),
        warnings
    );
    assert!(!out.contains("::notice "));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_point_of_order_carries_the_sinks_it_breaks() {
    let out = stdout(&blazes(&[
        "check",
        "--format",
        "github",
        "specs/wordcount.yaml",
    ]));
    assert_eq!(
        out.lines().count(),
        1,
        "one annotation: the point of order\n{out}"
    );
    assert!(out.contains("title=C001 unordered-write"), "{out}");
    assert!(out.contains("sink `db` receives Run"), "{out}");
    assert!(
        !out.contains("title=C004"),
        "the sink is not annotated again\n{out}"
    );
}
