//! `blazes import` and `--from`: the imported specs and their verdicts (snapshots of every
//! fixture in `tests/fixtures/import/<engine>/`), diagnostics located in the topology file in
//! every format, errors located in the topology or the catalogue, every built-in catalogue
//! entry exercised by a fixture, standard input, and what `-o` refuses to overwrite.

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use blazes::import::{self, Catalog, Engine};
use common::*;
use serde_json::Value;

/// The engine a fixture is for: its directory, or the start of its file name.
fn engine_of(path: &str) -> Engine {
    Engine::ALL
        .into_iter()
        .find(|e| {
            path.contains(&format!("/{}/", e.name())) || path.contains(&format!("/{}-", e.name()))
        })
        .unwrap_or_else(|| panic!("{path} names no engine"))
}

/// The user catalogue a fixture is imported with, if the catalogues folder has one for it:
/// `catalogs/<stem>.<engine>.yaml` for `<engine>/<stem>-user-catalog.<ext>` and
/// `<engine>/<stem>.<ext>` with `catalogs/<stem>.<engine>.yaml`.
fn catalog_for(path: &str) -> Option<String> {
    let stem = Path::new(path).file_stem()?.to_string_lossy().into_owned();
    let stem = stem.trim_end_matches("-user-catalog");
    let engine = engine_of(path);
    let c = format!(
        "tests/fixtures/import/catalogs/{stem}.{}.yaml",
        engine.name()
    );
    (path.contains("-user-catalog") && root().join(&c).exists()).then_some(c)
}

fn args_for<'a>(command: &'a str, path: &'a str, catalog: &'a Option<String>) -> Vec<&'a str> {
    let engine = engine_of(path).name();
    let mut args = match command {
        "import" => vec!["import", engine, path],
        c => vec![c, "--from", engine, path],
    };
    if let Some(c) = catalog {
        args.extend(["--catalog", c.as_str()]);
    }
    args
}

fn glob_each(pattern_dirs: &[&str], mut f: impl FnMut(&str)) {
    for dir in pattern_dirs {
        let mut files: Vec<_> = std::fs::read_dir(root().join(dir))
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| format!("{dir}/{}", e.file_name().to_string_lossy()))
            .collect();
        files.sort();
        for file in files {
            f(&file);
        }
    }
}

const ENGINES: &[&str] = &[
    "tests/fixtures/import/kafka-streams",
    "tests/fixtures/import/flink",
    "tests/fixtures/import/storm-flux",
];

#[test]
fn imported_specs() {
    insta::glob!("fixtures/import/{kafka-streams,flink,storm-flux}/*", |p| {
        let path = relative(p);
        let catalog = catalog_for(&path);
        let o = blazes(&args_for("import", &path, &catalog));
        assert_eq!(o.status.code(), Some(0), "{path}: {}", stderr(&o));
        assert_clean_failure(&o);
        insta::assert_snapshot!(
            "spec",
            format!("{}\n--- stderr\n{}", stdout(&o), stderr(&o))
        );
    });
}

#[test]
fn verdicts_of_imported_specs() {
    insta::glob!("fixtures/import/{kafka-streams,flink,storm-flux}/*", |p| {
        let path = relative(p);
        let catalog = catalog_for(&path);
        let o = blazes(&args_for("check", &path, &catalog));
        let code = o.status.code().expect("blazes exits");
        assert!(code == 0 || code == 1, "{path}: exit {code}");
        insta::assert_snapshot!("verdict", format!("exit {code}\n{}", stdout(&o)));
    });
}

/// The spec `import` writes is the spec `check --from` analyses: checking the written spec
/// gives the same exit status and the same codes (its locations are the spec's, not the
/// topology's, which is the difference `--from` makes).
#[test]
fn checking_the_imported_spec_agrees_with_check_from() {
    let dir = tempfile::tempdir().unwrap();
    glob_each(ENGINES, |path| {
        let catalog = catalog_for(path);
        let spec = dir.path().join("spec.yaml");
        let mut args = args_for("import", path, &catalog);
        let out = spec.to_string_lossy().into_owned();
        args.extend(["-o", &out, "--force"]);
        assert_eq!(blazes(&args).status.code(), Some(0), "{path}");
        let direct = blazes(&["check", "--format", "json", &out]);
        let mut from_args = args_for("check", path, &catalog);
        from_args.extend(["--format", "json"]);
        let from = blazes(&from_args);
        assert_eq!(direct.status.code(), from.status.code(), "{path}");
        let codes = |o: &std::process::Output| -> BTreeSet<String> {
            let v: Value = serde_json::from_str(&stdout(o)).unwrap();
            v["files"][0]["diagnostics"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d["code"].as_str().unwrap().to_string())
                .filter(|c| !c.starts_with('I'))
                .collect()
        };
        assert_eq!(codes(&direct), codes(&from), "{path}");
    });
}

const WORDCOUNT: &str = "tests/fixtures/import/kafka-streams/wordcount.txt";
/// The line of `KSTREAM-AGGREGATE-0000000004` in the word count's description.
const AGGREGATE_LINE: u64 = 20;

#[test]
fn every_format_locates_findings_in_the_topology_file() {
    let json: Value = serde_json::from_str(&stdout(&blazes(&[
        "check",
        "--from",
        "kafka-streams",
        "--format",
        "json",
        WORDCOUNT,
    ])))
    .unwrap();
    let file = &json["files"][0];
    assert_eq!(file["path"], WORDCOUNT);
    let point = &file["points_of_order"][0];
    assert_eq!(point["component"], "KSTREAM-AGGREGATE-0000000004");
    assert_eq!(point["line"], AGGREGATE_LINE);
    assert_eq!(point["column"], 16);

    let sarif: Value = serde_json::from_str(&stdout(&blazes(&[
        "check",
        "--from",
        "kafka-streams",
        "--format",
        "sarif",
        WORDCOUNT,
    ])))
    .unwrap();
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    let c001 = results.iter().find(|r| r["ruleId"] == "C001").unwrap();
    let loc = &c001["locations"][0]["physicalLocation"];
    assert!(
        loc["artifactLocation"]["uri"]
            .as_str()
            .unwrap()
            .ends_with("wordcount.txt")
    );
    assert_eq!(loc["region"]["startLine"], AGGREGATE_LINE);
    // The import codes are rules of the run like the others.
    let rules = sarif["runs"][0]["tool"]["driver"]["rules"]
        .as_array()
        .unwrap();
    let i002 = results.iter().find(|r| r["ruleId"] == "I002").unwrap();
    let index = i002["ruleIndex"].as_u64().unwrap() as usize;
    assert_eq!(rules[index]["id"], "I002");

    let github = stdout(&blazes(&[
        "check",
        "--from",
        "kafka-streams",
        "--format",
        "github",
        WORDCOUNT,
    ]));
    assert!(
        github.contains(&format!("file={WORDCOUNT},line={AGGREGATE_LINE},")),
        "{github}"
    );

    let human = stdout(&blazes(&["check", "--from", "kafka-streams", WORDCOUNT]));
    assert!(
        human.contains(&format!("{WORDCOUNT}:{AGGREGATE_LINE}:16")),
        "{human}"
    );

    // Negative control: the same finding in the imported spec is on another line, so the
    // locations above come from mapping the spec back to the topology.
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("w.yaml");
    let spec = spec.to_string_lossy();
    blazes(&["import", "kafka-streams", WORDCOUNT, "-o", &spec]);
    let direct: Value =
        serde_json::from_str(&stdout(&blazes(&["check", "--format", "json", &spec]))).unwrap();
    assert_ne!(
        direct["files"][0]["points_of_order"][0]["line"],
        AGGREGATE_LINE
    );
}

#[test]
fn plan_and_render_read_topologies_too() {
    let path = "tests/fixtures/import/flink/processing-time-window.json";
    let o = blazes(&["plan", "--from", "flink", "--format", "json", path]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["files"][0]["path"], path);
    assert_eq!(v["files"][0]["status"], "repaired");
    let o = blazes(&["render", "--from", "flink", path]);
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).starts_with("digraph"));
    assert!(stdout(&o).contains("Window-4"));
    // A plan cannot be written into a topology: the usage says so.
    let o = blazes(&["plan", "--from", "flink", path, "--apply", "x.yaml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--from"), "{}", stderr(&o));
}

#[test]
fn invalid_topologies_are_located_errors() {
    insta::glob!("fixtures/import/errors/*", |p| {
        let path = relative(p);
        let o = blazes(&["check", "--from", engine_of(&path).name(), &path]);
        assert_eq!(o.status.code(), Some(2), "{path}");
        assert_clean_failure(&o);
        let imported = blazes(&["import", engine_of(&path).name(), &path]);
        assert_eq!(imported.status.code(), Some(2), "{path}");
        assert!(stdout(&imported).is_empty(), "nothing written for {path}");
        insta::assert_snapshot!("error", stdout(&o));
    });
}

#[test]
fn an_invalid_user_catalogue_is_reported_in_it_all_at_once() {
    let catalog = "tests/fixtures/import/catalogs/bad.kafka-streams.yaml";
    let o = blazes(&[
        "check",
        "--from",
        "kafka-streams",
        "--catalog",
        catalog,
        "tests/fixtures/import/kafka-streams/user-code.txt",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert_clean_failure(&o);
    let out = stdout(&o);
    assert!(out.contains(&format!("{catalog}:")), "{out}");
    insta::assert_snapshot!("bad_catalogue", out);
    let o = blazes(&[
        "import",
        "kafka-streams",
        "--catalog",
        catalog,
        "tests/fixtures/import/kafka-streams/user-code.txt",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stdout(&o).is_empty());
}

#[test]
fn a_user_catalogue_overrides_the_built_in_one() {
    let path = "tests/fixtures/import/kafka-streams/user-code.txt";
    let without = blazes(&["check", "--from", "kafka-streams", path]);
    assert_eq!(without.status.code(), Some(1));
    assert!(stdout(&without).contains("I001"));
    let with = blazes(&[
        "import",
        "kafka-streams",
        path,
        "--catalog",
        "tests/fixtures/import/catalogs/user-code.kafka-streams.yaml",
    ]);
    let spec = stdout(&with);
    assert!(
        spec.contains(
            "name `dedupe` (tests/fixtures/import/catalogs/user-code.kafka-streams.yaml, line 5)"
        ),
        "{spec}"
    );
    let checked = blazes(&[
        "check",
        "--from",
        "kafka-streams",
        path,
        "--catalog",
        "tests/fixtures/import/catalogs/user-code.kafka-streams.yaml",
    ]);
    assert_eq!(checked.status.code(), Some(0), "{}", stdout(&checked));
}

/// Which built-in entries (by their line) the fixtures' imported specs name.
fn entries_used(fixtures: &[String]) -> BTreeSet<(Engine, String)> {
    let mut used = BTreeSet::new();
    for path in fixtures {
        let engine = engine_of(path);
        let text = std::fs::read_to_string(root().join(path)).unwrap();
        let catalog = Catalog::builtin(engine).unwrap();
        let Ok(imported) = import::import(engine, &text, &catalog, "t", &Default::default()) else {
            continue;
        };
        let marker = format!("(built-in {} catalogue, line ", engine.name());
        for (i, _) in imported.spec.match_indices(&marker) {
            let rest = &imported.spec[i + marker.len()..];
            let line: String = rest.chars().take_while(char::is_ascii_digit).collect();
            used.insert((engine, line));
        }
    }
    used
}

/// The built-in entries no fixture uses, as `engine: patterns (line N)`.
fn uncovered(fixtures: &[String]) -> Vec<String> {
    let used = entries_used(fixtures);
    let mut missing = Vec::new();
    for engine in Engine::ALL {
        for e in Catalog::builtin(engine).unwrap().entries {
            let line = e.origin.rsplit("line ").next().unwrap().to_string();
            if !used.contains(&(engine, line.clone())) {
                missing.push(format!(
                    "{}: {} (line {line})",
                    engine.name(),
                    e.patterns().join(", ")
                ));
            }
        }
    }
    missing
}

fn engine_fixtures() -> Vec<String> {
    let mut v = Vec::new();
    glob_each(ENGINES, |p| v.push(p.to_string()));
    v.extend(
        ["kafka-streams-crlf.txt", "kafka-streams-java-string.txt"]
            .iter()
            .map(|f| format!("tests/fixtures/import/hostile/{f}")),
    );
    v
}

#[test]
fn every_built_in_catalogue_entry_has_a_fixture_that_uses_it() {
    let missing = uncovered(&engine_fixtures());
    assert!(missing.is_empty(), "{missing:#?}");
}

/// Negative control: without the stream-table join, its entry is reported uncovered.
#[test]
fn an_entry_without_a_fixture_is_reported() {
    let fixtures: Vec<String> = engine_fixtures()
        .into_iter()
        .filter(|f| !f.ends_with("stream-table-join.txt"))
        .collect();
    let missing = uncovered(&fixtures);
    assert_eq!(missing.len(), 1, "{missing:#?}");
    assert!(
        missing[0].contains("KSTREAM-JOIN, KSTREAM-LEFTJOIN"),
        "{missing:?}"
    );
}

#[test]
fn standard_input_is_read_with_a_dash() {
    let text = std::fs::read(root().join(WORDCOUNT)).unwrap();
    let o = blazes_stdin(&["import", "kafka-streams", "-"], &text);
    assert_eq!(o.status.code(), Some(0));
    let from_file = stdout(&blazes(&["import", "kafka-streams", WORDCOUNT]));
    // Only the name differs: the file's stem, or `stdin`.
    assert_eq!(
        stdout(&o).replace("name: \"stdin\"", "name: \"wordcount\""),
        from_file
    );
    let o = blazes_stdin(
        &["check", "--from", "kafka-streams", "--format", "json", "-"],
        &text,
    );
    assert_eq!(o.status.code(), Some(1));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["files"][0]["path"], "<stdin>");
    assert_eq!(v["files"][0]["points_of_order"][0]["line"], AGGREGATE_LINE);
}

#[test]
fn the_same_topology_gives_the_same_bytes() {
    glob_each(ENGINES, |path| {
        let catalog = catalog_for(path);
        let a = blazes(&args_for("import", path, &catalog));
        let b = blazes(&args_for("import", path, &catalog));
        assert_eq!(a.stdout, b.stdout, "{path}");
    });
}

#[test]
fn output_files_the_user_owns_are_not_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("spec.yaml");
    let out_s = out.to_string_lossy().into_owned();
    let o = blazes(&["import", "kafka-streams", WORDCOUNT, "-o", &out_s]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let written = std::fs::read_to_string(&out).unwrap();
    assert_eq!(
        written,
        stdout(&blazes(&["import", "kafka-streams", WORDCOUNT]))
    );
    // The same spec again: nothing to do.
    let o = blazes(&["import", "kafka-streams", WORDCOUNT, "-o", &out_s]);
    assert_eq!(o.status.code(), Some(0));
    assert!(stderr(&o).contains("left as it is"), "{}", stderr(&o));
    // The user edited it: refused, the edit kept.
    std::fs::write(&out, format!("{written}# reviewed\n")).unwrap();
    let o = blazes(&["import", "kafka-streams", WORDCOUNT, "-o", &out_s]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--force"), "{}", stderr(&o));
    assert!(
        std::fs::read_to_string(&out)
            .unwrap()
            .ends_with("# reviewed\n")
    );
    // Unless asked.
    let o = blazes(&[
        "import",
        "kafka-streams",
        WORDCOUNT,
        "-o",
        &out_s,
        "--force",
    ]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), written);
    // Never over the topology itself.
    let copy = dir.path().join("t.txt");
    std::fs::copy(root().join(WORDCOUNT), &copy).unwrap();
    let copy_s = copy.to_string_lossy().into_owned();
    let o = blazes(&["import", "kafka-streams", &copy_s, "-o", &copy_s, "--force"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        std::fs::read(&copy).unwrap(),
        std::fs::read(root().join(WORDCOUNT)).unwrap()
    );
}

/// A generated description of `n` processors in one chain (a huge plan).
fn chain(n: usize) -> String {
    let mut s = String::from("Topologies:\n   Sub-topology: 0\n");
    s.push_str("    Source: KSTREAM-SOURCE-0000000000 (topics: [in])\n      --> KSTREAM-MAPVALUES-0000000001\n");
    for i in 1..n {
        s.push_str(&format!(
            "    Processor: KSTREAM-MAPVALUES-{i:010} (stores: [])\n      --> {}\n      <-- {}\n",
            if i + 1 < n {
                format!("KSTREAM-MAPVALUES-{:010}", i + 1)
            } else {
                "none".into()
            },
            if i == 1 {
                "KSTREAM-SOURCE-0000000000".to_string()
            } else {
                format!("KSTREAM-MAPVALUES-{:010}", i - 1)
            }
        ));
    }
    s
}

#[test]
fn huge_topologies_import_and_limits_are_located() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("huge.txt");
    std::fs::write(&file, chain(20_000)).unwrap();
    let f = file.to_string_lossy().into_owned();
    let o = blazes(&["check", "--from", "kafka-streams", &f]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let o = blazes(&[
        "check",
        "--from",
        "kafka-streams",
        "--max-components",
        "100",
        &f,
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert_clean_failure(&o);
    let out = stdout(&o);
    assert!(
        out.contains("S011") && out.contains("--max-components"),
        "{out}"
    );
    // Located at the first processor past the limit (2 header lines, then 3 per processor),
    // and alone: the edges naming processors past it are not reported.
    assert!(out.contains(&format!("{f}:302:5")), "{out}");
    assert!(out.contains("1 error"), "{out}");
    let o = blazes(&[
        "check",
        "--from",
        "kafka-streams",
        "--max-file-size",
        "1000",
        &f,
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stdout(&o).contains("--max-file-size"));
}

/// The import codes (`I0xx`, not shown by spec fixtures: `tests/codes.rs` leaves them here)
/// are each reported by some fixture of `tests/fixtures/import`.
#[test]
fn every_import_code_is_shown_by_a_fixture() {
    let mut outputs = String::new();
    glob_each(
        &[
            "tests/fixtures/import/kafka-streams",
            "tests/fixtures/import/flink",
            "tests/fixtures/import/storm-flux",
            "tests/fixtures/import/errors",
            "tests/fixtures/import/hostile",
        ],
        |path| {
            let catalog = catalog_for(path);
            outputs.push_str(&stdout(&blazes(&args_for("check", path, &catalog))));
        },
    );
    let import_codes: Vec<&str> = blazes::codes::ALL
        .iter()
        .map(|c| c.id)
        .filter(|id| id.starts_with('I'))
        .collect();
    assert_eq!(import_codes, ["I001", "I002", "I003"]);
    for id in import_codes {
        assert!(
            outputs.contains(&format!("{id}(")),
            "no fixture reports {id}"
        );
    }
    // Negative control: a code no fixture reports is not found in the same outputs.
    assert!(!outputs.contains("I999("));
}

/// The tables of `docs/import.md` name every pattern of every built-in entry, with its
/// annotation, in the entry's row.
#[test]
fn the_documented_catalogues_match_the_built_in_ones() {
    let doc = std::fs::read_to_string(root().join("docs/import.md")).unwrap();
    let problems = undocumented(&doc);
    assert!(problems.is_empty(), "{problems:#?}");
    // Negative control: a row whose annotation is wrong is reported.
    let wrong = doc.replace(
        "| `KTABLE-SUPPRESS` | OW(key) |",
        "| `KTABLE-SUPPRESS` | CR |",
    );
    assert_eq!(undocumented(&wrong).len(), 1);
}

fn undocumented(doc: &str) -> Vec<String> {
    let mut problems = Vec::new();
    for engine in Engine::ALL {
        for e in Catalog::builtin(engine).unwrap().entries {
            let first = format!("| `{}`", e.patterns()[0]);
            let Some(row) = doc.lines().find(|l| l.starts_with(&first)) else {
                problems.push(format!("{}: no row for {}", engine.name(), e.patterns()[0]));
                continue;
            };
            for p in e.patterns() {
                if !row.contains(&format!("`{p}`")) {
                    problems.push(format!("{}: {p} missing from its row", engine.name()));
                }
            }
            let annotation = match &e.gate {
                Some(g) => format!("| {}({}) |", e.label.as_str(), g.join(", ")),
                None => format!("| {} |", e.label.as_str()),
            };
            if !row.contains(&annotation) {
                problems.push(format!(
                    "{}: {} is not {annotation}",
                    engine.name(),
                    e.patterns()[0]
                ));
            }
        }
    }
    problems
}

/// A file given to the wrong engine is told apart by what it looks like, in one error at the
/// marker that says so, with the command that reads it; the summary names a topology. The
/// control: each file given to its own engine imports.
#[test]
fn a_file_for_another_engine_says_what_it_looks_like() {
    let cases = [
        (
            "storm-flux",
            "tests/fixtures/import/kafka-streams/wordcount.txt",
            "this looks like a Kafka Streams describe() text, not a Flux file",
            "kafka-streams",
        ),
        (
            "kafka-streams",
            "tests/fixtures/import/flink/event-time-window.json",
            "this looks like a Flink execution plan (JSON), not a Kafka Streams describe() text",
            "flink",
        ),
        (
            "flink",
            "tests/fixtures/import/storm-flux/wordcount.yaml",
            "this looks like a Storm Flux file, not a Flink execution plan",
            "storm-flux",
        ),
        (
            "storm-flux",
            "specs/wordcount.yaml",
            "this looks like a blazes spec, not a Flux file",
            "",
        ),
    ];
    for (engine, file, message, right) in cases {
        let o = blazes(&["check", "--from", engine, file]);
        assert_eq!(o.status.code(), Some(2), "{file}");
        let out = stdout(&o);
        assert!(out.contains(message), "{engine} {file}:\n{out}");
        assert_eq!(out.matches("I003(").count(), 1, "one error:\n{out}");
        assert!(out.contains(": invalid topology, 1 error"), "{out}");
        for jargon in ["YAML", "expected", "mapping", "line 1 column"] {
            assert!(!out.contains(jargon), "parser jargon `{jargon}`:\n{out}");
        }
        if right.is_empty() {
            assert!(
                out.contains("`blazes check FILE`, without `--from`"),
                "{out}"
            );
        } else {
            assert!(
                out.contains(&format!("`blazes import {right} FILE`")),
                "{out}"
            );
            let o = blazes(&["import", right, file]);
            assert_eq!(o.status.code(), Some(0), "control: {right} reads {file}");
        }
        let o = blazes(&["import", engine, file]);
        assert!(stderr(&o).contains(message), "{}", stderr(&o));
    }
}
