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
fn one_well_formed_command_per_diagnostic() {
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
    // The provenance chain and the help travel in the message, with escaped newlines.
    assert!(c001.contains("%0A") && c001.contains("help"), "{c001}");
}

#[test]
fn clean_files_print_nothing_and_exit_0() {
    let o = blazes(&["check", "--format", "github", "specs/wordcount-sealed.yaml"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(stdout(&o), "");
}
