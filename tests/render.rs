//! `blazes render` end to end: the DOT of every shipped spec (snapshots), determinism, the
//! SVG path through Graphviz, output files, and the failures users can hit.

mod common;

use std::process::Command;

use blazes::check::{Options, Outcome, check_bytes};
use blazes::render::{Drawn, to_dot};
use common::*;

/// Runs the real `dot -Tsvg` on DOT text: it must exit 0 and print no warning (a malformed
/// HTML label is only a warning to `dot`, and a dropped label).
fn dot_accepts(dot: &str) -> Result<Vec<u8>, String> {
    use std::io::Write;
    let mut child = Command::new("dot")
        .arg("-Tsvg")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run dot: {e}"))?;
    let mut stdin = child.stdin.take().unwrap();
    let input = dot.to_owned();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let o = child.wait_with_output().map_err(|e| e.to_string())?;
    let _ = writer.join();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    if !o.status.success() || !err.trim().is_empty() {
        return Err(format!("dot: {} {err}", o.status));
    }
    Ok(o.stdout)
}

/// Sink name -> the label the picture says it receives (from the sink's tooltip).
fn sink_labels(dot: &str) -> std::collections::BTreeMap<String, String> {
    dot.split("tooltip=\"sink ")
        .skip(1)
        .filter_map(|rest| {
            let t = &rest[..rest.find('"')?];
            let (name, label) = t.split_once(": receives ")?;
            Some((name.to_string(), label.to_string()))
        })
        .collect()
}

/// The picture agrees with the plan: every sink receives in the picture what the plan says
/// it receives once applied, and a sink is drawn failing only when the plan leaves it failing.
fn agrees_with_plan(dot: &str, plan: &serde_json::Value) -> Result<(), String> {
    let drawn = sink_labels(dot);
    let sinks = plan["sinks"].as_array().ok_or("the plan lists no sinks")?;
    if drawn.len() != sinks.len() {
        return Err(format!(
            "{} sinks drawn, {} planned",
            drawn.len(),
            sinks.len()
        ));
    }
    for s in sinks {
        let name = s["name"].as_str().unwrap();
        let after = s["after"].as_str().unwrap();
        match drawn.get(name) {
            Some(l) if l == after => {}
            other => {
                return Err(format!(
                    "sink {name}: the picture says {other:?}, the plan {after}"
                ));
            }
        }
    }
    let failing_after = sinks.iter().any(|s| s["failing_after"] == true);
    if dot.contains("✗ receives") != failing_after {
        return Err(format!(
            "a failing sink is drawn: {}, the plan leaves one failing: {failing_after}",
            dot.contains("✗ receives")
        ));
    }
    Ok(())
}

fn plan_json(path: &str) -> serde_json::Value {
    let o = blazes(&["plan", "--format", "json", path]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    v["files"][0].clone()
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
    assert!(!yaml_files("specs").is_empty());
    insta::glob!("../specs", "*.yaml", |p| {
        let path = relative(p);
        let o = blazes(&["render", &path]);
        assert_eq!(o.status.code(), Some(0), "{path}: {}", stderr(&o));
        insta::assert_snapshot!("dot", stdout(&o));
        let o = blazes(&["render", "--plan", &path]);
        assert_eq!(o.status.code(), Some(0), "{path}: {}", stderr(&o));
        insta::assert_snapshot!("dot-plan", stdout(&o));
    });
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
            added: true,
        },
    ];
    let dot = to_dot(df, &a.analysis, &drawn);
    assert_eq!(dot, to_dot(df, &a.analysis, &drawn), "deterministic");
    assert!(dot.contains("<B>+</B> seal: batch"));
    assert!(dot.contains("<B>+</B> keyed order"));
    assert!(dot.contains("<B>+</B> global order"));
    assert!(dot.contains("<B>+</B> seal barrier: batch"));
    assert!(!dot.contains("cluster_legend"), "no legend outside a plan");
    insta::assert_snapshot!("dot-drawn-wordcount", dot);
}

#[test]
fn svg_parses_and_names_every_component() {
    if !require_dot() {
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
    assert!(sealable.contains("<B>+</B> seal: batch"), "{sealable}");
    assert!(
        sealable.contains("<B>+</B> seal barrier: batch"),
        "{sealable}"
    );
    let keyed = stdout(&blazes(&["render", "--plan", "specs/wordcount.yaml"]));
    assert!(keyed.contains("keyed order"), "{keyed}");
    assert!(!keyed.contains("seal: batch"), "{keyed}");
    let global = stdout(&blazes(&["render", "--plan", "specs/wordcount-star.yaml"]));
    assert!(global.contains("global order"), "{global}");
    // Without --plan, none of it.
    let plain = stdout(&blazes(&["render", "specs/wordcount-sealable.yaml"]));
    assert!(
        !plain.contains("<B>+</B>") && !plain.contains("seal barrier"),
        "{plain}"
    );
    assert!(!plain.contains("cluster_legend"), "{plain}");
}

// ---------------------------------------------------------------------------------------
// `--plan` draws the spec as the plan leaves it.

/// Every spec: the picture of `--plan` says each sink receives what `blazes plan` says it
/// receives once applied, and draws a failing sink only where the plan leaves one.
#[test]
fn plan_picture_agrees_with_the_plan_for_every_spec() {
    for path in yaml_files("specs") {
        let dot = stdout(&blazes(&["render", "--plan", &path]));
        let plan = plan_json(&path);
        agrees_with_plan(&dot, &plan).unwrap_or_else(|e| panic!("{path}: {e}\n{dot}"));
        assert!(dot.contains("cluster_legend"), "{path}: a legend");
        assert!(
            dot.contains("plan: "),
            "{path}: the plan's verdict as caption"
        );
        // Each added mechanism's tooltip says so (the legend's text is no tooltip).
        let marked = dot.matches(r#"added by the plan""#).count();
        let added = plan["mechanisms"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["kind"] != "seal-barrier" || m["added"] == true)
            .count();
        assert_eq!(marked, added, "{path}: the added mechanisms are marked");
    }
    // The word count after its keyed order: Count is no point of order any more.
    let dot = stdout(&blazes(&["render", "--plan", "specs/wordcount.yaml"]));
    assert!(!dot.contains("<BR/>point of order:"), "{dot}");
    assert_eq!(sink_labels(&dot)["db"], "Async");
}

/// Negative control: the picture `--plan` used to draw (the planner's mechanisms on the
/// unfixed labels) contradicts the plan, and the comparison says so.
#[test]
fn the_mechanisms_on_the_unfixed_labels_contradict_the_plan() {
    for path in [
        "specs/wordcount.yaml",
        "specs/wordcount-sealable.yaml",
        "specs/ad-poor.yaml",
    ] {
        let bytes = std::fs::read(root().join(path)).unwrap();
        let r = check_bytes(path, &bytes, &Options::default());
        let Outcome::Analysed(a) = r.outcome else {
            panic!("{path} is valid")
        };
        let plan = blazes::plan::plan(&a.dataflow, &Default::default());
        let old = to_dot(&a.dataflow, &a.analysis, &blazes::render::mechanisms(&plan));
        let e = agrees_with_plan(&old, &plan_json(path))
            .expect_err("the unfixed labels disagree with the plan");
        assert!(e.contains("the plan Async"), "{path}: {e}");
        // The real picture, built from the same plan, agrees.
        let new = blazes::render::plan_dot(&a.dataflow, &plan, Default::default());
        agrees_with_plan(&new, &plan_json(path)).unwrap();
    }
}

/// An unrepairable plan adds nothing: its picture is the spec's own, failing sink and all,
/// captioned as unrepairable.
#[test]
fn unrepairable_plan_draws_the_spec_as_it_is() {
    let bytes = std::fs::read(root().join("specs/wordcount-star.yaml")).unwrap();
    let r = check_bytes("star", &bytes, &Options::default());
    let Outcome::Analysed(a) = r.outcome else {
        panic!()
    };
    let options = blazes::plan::Options::default().allowed(blazes::plan::Allowed {
        seal: true,
        keyed: true,
        global: false,
    });
    let plan = blazes::plan::plan(&a.dataflow, &options);
    assert_eq!(plan.status, blazes::plan::Status::Unrepairable);
    let dot = blazes::render::plan_dot(&a.dataflow, &plan, Default::default());
    assert!(dot.contains("plan: unrepairable"), "{dot}");
    assert!(dot.contains("✗ receives Run"), "{dot}");
    assert!(!dot.contains(r#"added by the plan""#), "{dot}");
}

// ---------------------------------------------------------------------------------------
// The real `dot` reads everything `blazes render` writes.

#[test]
fn graphviz_accepts_every_graph_without_a_warning() {
    if !require_dot() {
        return;
    }
    let specs = yaml_files("specs");
    for path in &specs {
        for plan in [false, true] {
            let mut args = vec!["render", path.as_str()];
            if plan {
                args.push("--plan");
            }
            let dot = stdout(&blazes(&args));
            dot_accepts(&dot).unwrap_or_else(|e| panic!("{path} (plan: {plan}): {e}"));
        }
    }
    // Several specs on standard output: `dot` draws each graph.
    let mut args = vec!["render", "--plan"];
    args.extend(specs.iter().map(String::as_str));
    let o = blazes(&args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let svg = String::from_utf8(dot_accepts(&stdout(&o)).unwrap()).unwrap();
    assert_eq!(svg.matches("<svg").count(), specs.len());

    // Negative controls: the harness rejects what `dot` cannot read or only half reads.
    let dot = stdout(&blazes(&["render", "--plan", "specs/wordcount.yaml"]));
    let unclosed = dot.trim_end().trim_end_matches('}').to_string();
    assert!(dot_accepts(&unclosed).is_err(), "an unclosed graph");
    let broken_html = dot.replacen("</TABLE>", "", 1);
    assert!(dot_accepts(&broken_html).is_err(), "a malformed HTML label");
}

// ---------------------------------------------------------------------------------------
// Several specs, output files and formats.

#[test]
fn several_specs_give_consecutive_graphs_on_standard_output() {
    let a = blazes(&["render", "specs/wordcount.yaml"]);
    let b = blazes(&["render", "specs/ad-poor.yaml"]);
    let both = blazes(&["render", "specs/wordcount.yaml", "specs/ad-poor.yaml"]);
    assert_eq!(both.status.code(), Some(0), "{}", stderr(&both));
    assert_eq!(both.stdout, [a.stdout, b.stdout].concat());
    assert_eq!(stdout(&both).matches("digraph ").count(), 2);
}

/// An invalid spec among several: the others are still drawn, standard output carries only
/// graphs, the diagnostics go to standard error, and the exit status is the worst.
#[test]
fn an_invalid_spec_among_several_is_reported_and_the_others_drawn() {
    let o = blazes(&[
        "render",
        "specs/wordcount.yaml",
        "tests/fixtures/errors/dangling.yaml",
        "specs/ad-poor.yaml",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let alone = [
        blazes(&["render", "specs/wordcount.yaml"]).stdout,
        blazes(&["render", "specs/ad-poor.yaml"]).stdout,
    ]
    .concat();
    assert_eq!(o.stdout, alone);
    assert!(stderr(&o).contains("dangling.yaml:"), "{}", stderr(&o));
}

#[test]
fn output_directory_gets_one_file_per_spec() {
    let d = temp_dir("dir");
    let out = d.join("graphs/");
    let o = blazes(&[
        "render",
        "--plan",
        "specs/wordcount.yaml",
        "specs/ad-poor.yaml",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(o.stdout.is_empty());
    for name in ["wordcount", "ad-poor"] {
        let written = std::fs::read(out.join(format!("{name}.dot"))).unwrap();
        let alone = blazes(&["render", "--plan", &format!("specs/{name}.yaml")]).stdout;
        assert_eq!(written, alone, "{name}");
    }
    // An existing directory named without the slash is refused, not guessed at.
    let o = blazes(&["render", "specs/wordcount.yaml", "-o", d.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("it is a directory; write"),
        "{}",
        stderr(&o)
    );
    assert!(!d.join("wordcount.dot").exists());
    // --format names the files' extension.
    if require_dot() {
        let o = blazes(&[
            "render",
            "--format",
            "svg",
            "specs/wordcount.yaml",
            "-o",
            &format!("{}/", d.display()),
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let svg = std::fs::read_to_string(d.join("wordcount.svg")).unwrap();
        assert!(svg.contains("<svg"), "{svg}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn the_output_file_extension_sets_the_format() {
    let d = temp_dir("ext");
    let dot = blazes(&["render", "specs/wordcount.yaml"]).stdout;
    for (file, extra) in [
        ("g.dot", vec![]),
        ("g.gv", vec![]),
        ("g", vec![]),
        ("g.txt", vec!["--format", "dot"]),
        ("G.DOT", vec!["--format", "dot"]),
    ] {
        let out = d.join(file);
        let mut args = vec![
            "render",
            "specs/wordcount.yaml",
            "-o",
            out.to_str().unwrap(),
        ];
        args.extend(extra);
        let o = blazes(&args);
        assert_eq!(o.status.code(), Some(0), "{file}: {}", stderr(&o));
        assert_eq!(std::fs::read(&out).unwrap(), dot, "{file} holds DOT");
    }
    if require_dot() {
        for (file, extra) in [("g.svg", vec![]), ("h.svg", vec!["--format", "svg"])] {
            let out = d.join(file);
            let mut args = vec![
                "render",
                "specs/wordcount.yaml",
                "-o",
                out.to_str().unwrap(),
            ];
            args.extend(extra);
            let o = blazes(&args);
            assert_eq!(o.status.code(), Some(0), "{file}: {}", stderr(&o));
            let svg = std::fs::read_to_string(&out).unwrap();
            assert!(
                svg.contains("<svg") && !svg.contains("digraph"),
                "{file} holds SVG: {svg}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// Every misuse of `render`'s outputs is a usage error: exit 2, one sentence on standard
/// error, nothing on standard output, no file written.
#[test]
fn output_misuse_is_a_usage_error() {
    let d = temp_dir("misuse");
    let other = d.join("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::copy(
        root().join("specs/wordcount.yaml"),
        other.join("wordcount.yaml"),
    )
    .unwrap();
    let p = |f: &str| d.join(f).to_str().unwrap().to_string();
    let out_dir = format!("{}/", p("out"));
    let twin = other.join("wordcount.yaml").to_str().unwrap().to_string();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec!["--format".into(), "svg".into(), "-o".into(), p("g.dot")],
            "contradicts the extension",
        ),
        (
            vec!["--format".into(), "dot".into(), "-o".into(), p("g.svg")],
            "contradicts the extension",
        ),
        (vec!["-o".into(), p("g.png")], "cannot tell the format"),
        (
            vec!["specs/ad-poor.yaml".into(), "-o".into(), p("g.dot")],
            "names one file but 2 specs were given",
        ),
        (
            vec!["specs/ad-poor.yaml".into(), "--format".into(), "svg".into()],
            "cannot share standard output",
        ),
        (
            vec!["-".into(), "-o".into(), out_dir.clone()],
            "has no file name",
        ),
        (
            vec![twin.clone(), "-o".into(), out_dir.clone()],
            "would both be drawn into",
        ),
    ];
    for (extra, expected) in cases {
        let mut args = vec!["render", "specs/wordcount.yaml"];
        args.extend(extra.iter().map(String::as_str));
        let o = blazes(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(o.stdout.is_empty(), "{args:?}");
        let err = stderr(&o);
        assert!(err.contains(expected), "{args:?}: {err}");
        assert!(
            err.starts_with("error: ") && err.lines().count() == 1,
            "{err}"
        );
        assert_clean_failure(&o);
    }
    let left: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, ["other"], "nothing was written");
    let _ = std::fs::remove_dir_all(&d);
}

/// `render --plan` takes `plan`'s flags and draws the plan they choose: for each combination,
/// the picture agrees with `blazes plan --format json` run with the same flags, and a flag that
/// changes the plan changes the picture.
#[test]
fn render_plan_draws_the_plan_chosen_by_the_same_flags() {
    let path = "specs/wordcount-sealable.yaml";
    let choices: [&[&str]; 3] = [&[], &["--allow", "keyed"], &["--fail-on", "never"]];
    let mut drawn = Vec::new();
    for flags in choices {
        let mut args = vec!["plan", "--format", "json", "--no-simulate", path];
        args.extend_from_slice(flags);
        let o = blazes(&args);
        let plan: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        let mut args = vec!["render", "--plan", path];
        args.extend_from_slice(flags);
        let o = blazes(&args);
        assert_eq!(o.status.code(), Some(0), "{flags:?}: {}", stderr(&o));
        let dot = stdout(&o);
        agrees_with_plan(&dot, &plan["files"][0]).unwrap_or_else(|e| panic!("{flags:?}: {e}"));
        drawn.push(dot);
    }
    assert!(drawn[0].contains("<B>+</B> seal: batch"), "{}", drawn[0]);
    assert!(drawn[1].contains("<B>+</B> keyed order"), "{}", drawn[1]);
    assert!(!drawn[1].contains("<B>+</B> seal: batch"));
    assert!(
        drawn[2].contains("plan: nothing to coordinate"),
        "nothing to repair: {}",
        drawn[2]
    );
}
