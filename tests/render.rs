//! `blazes render` end to end: the DOT of every shipped spec (snapshots), determinism, the
//! SVG path through Graphviz, output files, and the failures users can hit.

mod common;

use std::process::Command;

use blazes::check::{Options, Outcome, check_bytes};
use blazes::render::{Drawn, to_dot};
use common::*;

fn stem(path: &str) -> String {
    std::path::Path::new(path)
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

fn dot_available() -> bool {
    Command::new("dot")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Component names of a spec, read through the library.
fn component_names(path: &str) -> Vec<String> {
    let bytes = std::fs::read(root().join(path)).unwrap();
    let r = check_bytes(path, &bytes, &Options::default());
    let Outcome::Analysed(a) = r.outcome else {
        panic!("{path} is valid")
    };
    a.dataflow
        .components
        .iter()
        .map(|c| c.name.clone())
        .collect()
}

#[test]
fn dot_of_every_spec() {
    let specs = yaml_files("specs");
    assert!(!specs.is_empty());
    for path in specs {
        let o = blazes(&["render", &path]);
        assert_eq!(o.status.code(), Some(0), "{path}: {}", stderr(&o));
        insta::assert_snapshot!(format!("dot-{}", stem(&path)), stdout(&o));
        let o = blazes(&["render", "--plan", &path]);
        assert_eq!(o.status.code(), Some(0), "{path}: {}", stderr(&o));
        insta::assert_snapshot!(format!("dot-plan-{}", stem(&path)), stdout(&o));
    }
}

#[test]
fn dot_is_byte_identical_across_runs() {
    for path in yaml_files("specs") {
        for plan in [false, true] {
            let args: Vec<&str> = if plan {
                vec!["render", "--plan", &path]
            } else {
                vec!["render", &path]
            };
            let a = blazes(&args);
            let b = blazes(&args);
            assert_eq!(
                a.stdout, b.stdout,
                "{path} (plan: {plan}) renders differently twice"
            );
        }
    }
}

#[test]
fn dot_shows_labels_points_of_order_and_barriers() {
    let out = stdout(&blazes(&[
        "render",
        "--plan",
        "specs/wordcount-sealed.yaml",
    ]));
    assert!(out.contains("Seal(batch)"));
    assert!(out.contains("seal barrier: batch"));
    let out = stdout(&blazes(&["render", "specs/ad-poor.yaml"]));
    assert!(out.contains("point of order: unprotected read"));
    assert!(
        out.contains(r#"shape="box3d""#),
        "the replicated Report is drawn stacked"
    );
    // Report answers Inst; the Cache writes it (a point of order) and passes the Inst on.
    assert!(out.contains(">Inst<") && out.contains("point of order: transient write of Inst"));
    // Without --plan no mechanism is drawn.
    let out = stdout(&blazes(&["render", "specs/wordcount-sealed.yaml"]));
    assert!(!out.contains("seal barrier"));
}

/// The planner's mechanisms (orderings, added seals) are plain data; the builder draws them.
#[test]
fn drawn_orderings_and_added_seals() {
    let path = "specs/wordcount.yaml";
    let bytes = std::fs::read(root().join(path)).unwrap();
    let r = check_bytes(path, &bytes, &Options::default());
    let Outcome::Analysed(a) = r.outcome else {
        panic!()
    };
    let df = &a.dataflow;
    let count = df.component_by_name("Count").unwrap();
    let commit = df.component_by_name("Commit").unwrap();
    let drawn = vec![
        Drawn::AddSeal {
            source: blazes::graph::SourceId(0),
            key: vec!["batch".into()],
        },
        Drawn::Order {
            component: count,
            keys: Some(vec!["batch".into(), "word".into()]),
        },
        Drawn::Order {
            component: commit,
            keys: None,
        },
        Drawn::Barrier {
            component: count,
            input: df.component(count).inputs[0],
            key: vec!["batch".into()],
        },
    ];
    let dot = to_dot(df, &a.analysis, &drawn);
    assert_eq!(dot, to_dot(df, &a.analysis, &drawn), "deterministic");
    assert!(dot.contains("+ add seal: batch"));
    assert!(dot.contains("keyed order"));
    assert!(dot.contains("global order"));
    insta::assert_snapshot!("dot-drawn-wordcount", dot);
}

#[test]
fn svg_parses_and_names_every_component() {
    if !dot_available() {
        eprintln!(
            "notice: Graphviz `dot` is not installed; skipping the SVG test (apt-get install graphviz)"
        );
        return;
    }
    for path in yaml_files("specs") {
        let o = blazes(&["render", "--format", "svg", "--plan", &path]);
        assert_eq!(o.status.code(), Some(0), "{path}: {}", stderr(&o));
        let svg = stdout(&o);
        // Graphviz writes the SVG 1.1 DOCTYPE; it declares no entities, so allowing it is safe.
        let opts = roxmltree::ParsingOptions {
            allow_dtd: true,
            ..Default::default()
        };
        let doc = roxmltree::Document::parse_with_options(&svg, opts)
            .unwrap_or_else(|e| panic!("{path}: SVG is not XML: {e}"));
        assert_eq!(doc.root_element().tag_name().name(), "svg");
        let text: String = doc
            .descendants()
            .filter(|n| n.is_text())
            .filter_map(|n| n.text())
            .collect::<Vec<_>>()
            .join("\n");
        for name in component_names(&path) {
            assert!(
                text.contains(&name),
                "{path}: component {name} missing from the SVG"
            );
        }
    }
}

#[test]
fn svg_without_dot_says_how_to_get_it() {
    let o = Command::new(env!("CARGO_BIN_EXE_blazes"))
        .args(["render", "--format", "svg", "specs/wordcount.yaml"])
        .current_dir(root())
        .env("PATH", "")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty());
    let err = stderr(&o);
    assert!(err.contains("apt-get install graphviz"), "{err}");
    assert!(err.contains("--format dot"), "{err}");
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("blazes-render-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn output_file_is_written_whole_and_never_over_the_spec() {
    let d = temp_dir("out");
    let out = d.join("g.dot");
    let o = blazes(&[
        "render",
        "specs/wordcount.yaml",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(o.stdout.is_empty());
    let written = std::fs::read(&out).unwrap();
    assert_eq!(written, blazes(&["render", "specs/wordcount.yaml"]).stdout);
    let left: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 1, "no temporary file is left behind: {left:?}");

    let spec = d.join("spec.yaml");
    std::fs::copy(root().join("specs/wordcount.yaml"), &spec).unwrap();
    let before = std::fs::read(&spec).unwrap();
    let o = blazes(&[
        "render",
        spec.to_str().unwrap(),
        "-o",
        spec.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("refusing to write the graph over the spec"),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        std::fs::read(&spec).unwrap(),
        before,
        "the spec is untouched"
    );

    let o = blazes(&[
        "render",
        "specs/wordcount.yaml",
        "-o",
        d.join("no/such/dir/g.dot").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("cannot write"), "{}", stderr(&o));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn invalid_spec_exits_2_with_located_diagnostics() {
    let o = blazes(&["render", "tests/fixtures/errors/dangling.yaml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty(), "nothing is drawn for an invalid spec");
    assert!(stderr(&o).contains("dangling.yaml:"), "{}", stderr(&o));
    let o = blazes(&["render", "no-such-spec.yaml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no such file"), "{}", stderr(&o));
}

#[test]
fn renders_standard_input() {
    let spec = std::fs::read(root().join("specs/wordcount.yaml")).unwrap();
    let o = blazes_stdin(&["render", "-"], &spec);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).starts_with("digraph "));
}

/// `--plan` draws what `blazes plan` chose: an added seal on the source and the barrier it
/// brings, a keyed order in front of the component, a global order for the gate `*`.
#[test]
fn plan_draws_the_planners_mechanisms() {
    let sealable = stdout(&blazes(&[
        "render",
        "--plan",
        "specs/wordcount-sealable.yaml",
    ]));
    assert!(sealable.contains("add seal: batch"), "{sealable}");
    assert!(sealable.contains("seal barrier: batch"), "{sealable}");
    let keyed = stdout(&blazes(&["render", "--plan", "specs/wordcount.yaml"]));
    assert!(keyed.contains("keyed order"), "{keyed}");
    assert!(!keyed.contains("add seal"), "{keyed}");
    let global = stdout(&blazes(&["render", "--plan", "specs/wordcount-star.yaml"]));
    assert!(global.contains("global order"), "{global}");
    // Without --plan, none of it.
    let plain = stdout(&blazes(&["render", "specs/wordcount-sealable.yaml"]));
    assert!(
        !plain.contains("add seal") && !plain.contains("seal barrier"),
        "{plain}"
    );
}
