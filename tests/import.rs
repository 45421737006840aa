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

/// A spec written by `import -o` records its engine, so `plan` on the spec alone (the user's
/// spec now, no `--from`) still says each mechanism in the engine's terms.
#[test]
fn an_imported_spec_keeps_its_engine_for_plan() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("w.yaml");
    let spec = spec.to_string_lossy().into_owned();
    let o = blazes(&["import", "kafka-streams", WORDCOUNT, "-o", &spec]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = std::fs::read_to_string(&*spec).unwrap();
    assert!(text.contains("\nengine: kafka-streams"), "{text}");
    let from_topology = stdout(&blazes(&["plan", "--from", "kafka-streams", WORDCOUNT]));
    let plan = stdout(&blazes(&["plan", &spec]));
    assert!(plan.contains("in Kafka Streams: repartition"), "{plan}");
    let terms = |s: &str| {
        s.lines()
            .filter_map(|l| l.split_once("in Kafka Streams: ").map(|t| t.1.to_string()))
            .collect::<Vec<_>>()
    };
    assert_eq!(terms(&plan), terms(&from_topology));
    // Control: without the line the spec is any spec, and the plan speaks its terms only.
    std::fs::write(&*spec, text.replace("\nengine: kafka-streams", "\n")).unwrap();
    let plan = stdout(&blazes(&["plan", &spec]));
    assert!(plan.contains("keyed-order"), "{plan}");
    assert!(!plan.contains("Kafka Streams"), "{plan}");
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
    // Without the user's entry, `dedupe` (named, alone with its store) is judged by the rule
    // for such processors, and `KSTREAM-PROCESSOR` is user code: the point of order.
    let imported = stdout(&blazes(&["import", "kafka-streams", path]));
    assert!(
        imported.contains("rule for named processors alone with their stores"),
        "{imported}"
    );
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
        .filter(|f| {
            ![
                "stream-table-join.txt",
                "global-table-join.txt",
                "global-tables-ambiguous.txt",
            ]
            .iter()
            .any(|x| f.ends_with(x))
        })
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

fn json_of(args: &[&str]) -> Value {
    let o = blazes(args);
    serde_json::from_str(&stdout(&o)).unwrap_or_else(|e| panic!("{args:?}: {e}: {}", stdout(&o)))
}

/// The components that are points of order (once each: a component with several order-
/// sensitive paths has a point per path), sorted.
fn points(v: &Value) -> Vec<String> {
    let mut p: Vec<String> = v["files"][0]["points_of_order"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["component"].as_str().unwrap().to_string())
        .collect();
    p.sort();
    p.dedup();
    p
}

fn codes_of(v: &Value) -> Vec<String> {
    v["files"][0]["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["code"].as_str().unwrap().to_string())
        .collect()
}

const NAMED_FILTER_MAP: &str = "tests/fixtures/import/kafka-streams/named-filter-map.txt";

/// The same filter-and-map topology gives the same verdict with generated names and with the
/// names Kafka's docs tell users to give.
#[test]
fn named_processors_are_judged_like_their_generated_twins() {
    let generated = "tests/fixtures/import/kafka-streams/filter-map.txt";
    for path in [generated, NAMED_FILTER_MAP] {
        let o = blazes(&["check", "--from", "kafka-streams", path]);
        assert_eq!(o.status.code(), Some(0), "{path}: {}", stdout(&o));
        assert!(!stdout(&o).contains("I001"), "{}", stdout(&o));
    }
    // Negative control: a user entry by name that says one of them is order-sensitive comes
    // before the rule, and the verdict changes; so the rule is what made it clean.
    let dir = tempfile::tempdir().unwrap();
    let catalog = dir.path().join("c.yaml");
    std::fs::write(
        &catalog,
        "version: 1\nengine: kafka-streams\noperators:\n  - { name: \"Map_values*\", label: OW, gate: \"*\", reason: a test }\n",
    )
    .unwrap();
    let c = catalog.to_string_lossy();
    let o = blazes(&[
        "check",
        "--from",
        "kafka-streams",
        "--catalog",
        &c,
        NAMED_FILTER_MAP,
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
}

const BILLING: &str = "tests/fixtures/import/kafka-streams/named-billing.txt";

/// A billing service whose every processor is named: the two points of order are the real
/// ones (a sum fed by a repartition topic, a stream-table join reading the plans' store).
#[test]
fn a_named_app_has_only_its_real_points_of_order() {
    let v = json_of(&[
        "check",
        "--from",
        "kafka-streams",
        "--format",
        "json",
        BILLING,
    ]);
    assert_eq!(points(&v), ["price-usage", "sum-per-customer"]);
    assert!(!codes_of(&v).contains(&"I001".to_string()));
    // Negative control: without the store on the join's line, nothing says it reads the
    // table: it is stateless, and only the sum remains.
    let text = std::fs::read_to_string(root().join(BILLING)).unwrap();
    let without = text.replace(
        "Processor: price-usage (stores: [plans-store])",
        "Processor: price-usage (stores: [])",
    );
    assert_ne!(without, text);
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("named-billing.txt");
    std::fs::write(&f, without).unwrap();
    let f = f.to_string_lossy();
    let v = json_of(&["check", "--from", "kafka-streams", "--format", "json", &f]);
    assert_eq!(points(&v), ["sum-per-customer"]);
}

const GLOBAL_JOIN: &str = "tests/fixtures/import/kafka-streams/global-table-join.txt";

/// A GlobalKTable join lists no store; it reads the global store, so its point of order's
/// chain reaches the global table's topic (line 3).
#[test]
fn a_global_table_join_reads_the_global_store() {
    let v = json_of(&[
        "check",
        "--from",
        "kafka-streams",
        "--format",
        "json",
        GLOBAL_JOIN,
    ]);
    assert_eq!(points(&v), ["KSTREAM-LEFTJOIN-0000000004"]);
    let codes = codes_of(&v);
    assert!(codes.contains(&"C002".to_string()), "{codes:?}");
    assert!(!codes.contains(&"C008".to_string()), "{codes:?}");
    // The chain, as GitHub annotations print it, starts at the customers topic.
    let github = stdout(&blazes(&[
        "check",
        "--from",
        "kafka-streams",
        "--format",
        "github",
        GLOBAL_JOIN,
    ]));
    let c002 = github.lines().find(|l| l.contains("title=C002")).unwrap();
    assert!(
        c002.contains("%0A  3:49: Async from here"),
        "the chain names the customers topic: {c002}"
    );
    // Negative control: without the global sub-topology there is nothing to link, and the
    // read is of state nothing writes (C008).
    let text = std::fs::read_to_string(root().join(GLOBAL_JOIN)).unwrap();
    let cut = text.find("  Sub-topology: 1").unwrap();
    let start = text.find("   Sub-topology: 0").unwrap();
    let alone = format!("{}{}", &text[..start], &text[cut..]);
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("alone.txt");
    std::fs::write(&f, alone).unwrap();
    let f = f.to_string_lossy();
    let v = json_of(&["check", "--from", "kafka-streams", "--format", "json", &f]);
    assert!(codes_of(&v).contains(&"C008".to_string()), "{v}");
}

/// With two global stores the link is ambiguous: the join is linked to both and the warning
/// says so; a named processor beside a global store is linked too.
#[test]
fn ambiguous_global_links_are_conservative_and_said() {
    let path = "tests/fixtures/import/kafka-streams/global-tables-ambiguous.txt";
    let spec = stdout(&blazes(&["import", "kafka-streams", path]));
    for store in ["store-customers-store", "store-products-store"] {
        assert!(
            spec.contains(&format!("\"KSTREAM-JOIN-0000000007.{store}\"")),
            "{spec}"
        );
    }
    let o = blazes(&["import", "kafka-streams", path]);
    assert!(
        stderr(&o).contains("which one it reads is not shown"),
        "{}",
        stderr(&o)
    );
    let named = "tests/fixtures/import/kafka-streams/named-global-join.txt";
    let v = json_of(&[
        "check",
        "--from",
        "kafka-streams",
        "--format",
        "json",
        named,
    ]);
    assert_eq!(points(&v), ["enrich-with-customer"]);
}

/// A copy of a fixture, rewritten by `f`, under the same file name in a temporary folder.
fn rewritten(path: &str, f: impl Fn(&str) -> String) -> (tempfile::TempDir, String) {
    let text = std::fs::read_to_string(root().join(path)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(Path::new(path).file_name().unwrap());
    std::fs::write(&file, f(&text)).unwrap();
    let file = file.to_string_lossy().into_owned();
    (dir, file)
}

/// The spec an import writes, without its stderr.
fn imported(path: &str) -> String {
    let o = blazes(&["import", "kafka-streams", path]);
    assert_eq!(o.status.code(), Some(0), "{path}: {}", stderr(&o));
    stdout(&o)
}

/// Kafka's 1.0 layout (edges on the node line, `NAME(topics: t)`) and text copied from a log
/// or a web page (tabs, no-break spaces, a log line before it) are the same topologies as
/// their plain 2.x layout.
#[test]
fn every_describe_layout_gives_the_same_spec() {
    let tutorial = "tests/fixtures/import/kafka-streams/tutorial-1.0.txt";
    let (_d1, as_2x) = rewritten(tutorial, |t| {
        let mut out = String::from("Topologies:\n");
        for line in t.lines().skip(1) {
            if line.trim() == "Global Stores:" || line.trim() == "none" {
                continue;
            }
            let (head, edges) = match line.find(" -->").or_else(|| line.find(" <--")) {
                Some(i) => (&line[..i], &line[i + 1..]),
                None => (line, ""),
            };
            let head = head
                .replacen("(", " (", 1)
                .replace(
                    "(topics: streams-plaintext-input)",
                    "(topics: [streams-plaintext-input])",
                )
                .replace(
                    "(topics: Counts-repartition)",
                    "(topics: [Counts-repartition])",
                );
            out.push_str(&format!("{head}\n"));
            let mut rest = edges;
            while !rest.is_empty() {
                let next = rest[3..].find(" <--").map_or(rest.len(), |i| i + 3);
                out.push_str(&format!("      {}\n", rest[..next].trim()));
                rest = rest[next..].trim_start();
            }
        }
        out
    });
    assert_eq!(imported(tutorial), imported(&as_2x));
    let copied = "tests/fixtures/import/kafka-streams/log-and-html-copy.txt";
    let (_d2, plain) = rewritten(copied, |t| {
        t.lines()
            .skip(1)
            .map(|l| format!("    {}\n", l.replace('\u{a0}', " ").trim()))
            .collect::<String>()
            .replacen("    Sub-topology: 0", "Topologies:\n   Sub-topology: 0", 1)
    });
    assert_eq!(imported(copied), imported(&plain));
    let o = blazes(&["import", "kafka-streams", copied]);
    assert!(
        stderr(&o).contains("1 line before the topology"),
        "{}",
        stderr(&o)
    );
    // Negative control: the same rewriting with one edge dropped gives another spec.
    let (_d3, dropped) = rewritten(tutorial, |t| {
        t.replace(" --> KTABLE-TOSTREAM-0000000007", " --> none")
            .replace(" <-- KSTREAM-AGGREGATE-0000000003", "")
    });
    assert_ne!(imported(tutorial), imported(&dropped));
}

/// `--explain` names, for every component, what gave its annotation, located in the file.
#[test]
fn explain_says_which_entry_or_rule_annotated_each_component() {
    let o = blazes(&["import", "kafka-streams", "--explain", BILLING]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let spec = imported(BILLING);
    let components = spec.matches("\n  # ").count();
    assert_eq!(
        out.matches(&format!("{BILLING}:")).count(),
        components,
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "{BILLING}:26:16: processor `sum-per-customer` (class `sum-per-customer`)\n  annotated from the Kafka Streams importer's rule for named processors alone with their stores\n"
        )),
        "{out}"
    );
    assert!(
        out.contains("annotated from catalogue entry `*-repartition-filter` (built-in kafka-streams catalogue, line "),
        "{out}"
    );
    // Negative control: a user entry for the processor is what --explain then names.
    let path = "tests/fixtures/import/kafka-streams/user-code.txt";
    let catalog = "tests/fixtures/import/catalogs/user-code.kafka-streams.yaml";
    let dedupe = |o: &std::process::Output| -> String {
        stdout(o)
            .split(&format!("{path}:"))
            .find(|s| s.contains("processor `dedupe`"))
            .unwrap()
            .to_string()
    };
    let without = dedupe(&blazes(&["import", "kafka-streams", "--explain", path]));
    let with = dedupe(&blazes(&[
        "import",
        "kafka-streams",
        "--explain",
        path,
        "--catalog",
        catalog,
    ]));
    assert!(
        without.contains("rule for named processors alone with their stores"),
        "{without}"
    );
    assert!(
        with.contains(&format!("name `dedupe` ({catalog}, line 5)")),
        "{with}"
    );
    // --explain prints instead of the spec: it cannot be written to a file.
    let o = blazes(&["import", "kafka-streams", "--explain", path, "-o", "x.yaml"]);
    assert_eq!(o.status.code(), Some(2));
}

/// The entry I001's help offers copies cleanly: pasted into a catalogue it is valid, keeps the
/// conservative annotation (same verdict, no I001), and editing its label changes the verdict.
#[test]
fn the_unknown_operator_help_is_a_catalogue_entry_to_paste() {
    let path = "tests/fixtures/import/storm-flux/pipeline.yaml";
    let v = json_of(&["check", "--from", "storm-flux", "--format", "json", path]);
    let diags = v["files"][0]["diagnostics"].as_array().unwrap();
    let i001 = diags.iter().find(|d| d["code"] == "I001").unwrap();
    let help = i001["help"].as_str().unwrap();
    let entry: String = help
        .lines()
        .skip_while(|l| !l.starts_with("- class:"))
        .map(|l| format!("  {l}\n"))
        .collect();
    assert!(entry.contains("label: OW\n"), "{help}");
    assert!(!entry.contains("label: CR"), "{help}");
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, body: &str| {
        let f = dir.path().join(name);
        std::fs::write(
            &f,
            format!("version: 1\nengine: storm-flux\noperators:\n{body}"),
        )
        .unwrap();
        f.to_string_lossy().into_owned()
    };
    let pasted = write("pasted.yaml", &entry);
    let with = json_of(&[
        "check",
        "--from",
        "storm-flux",
        "--format",
        "json",
        "--catalog",
        &pasted,
        path,
    ]);
    assert!(!codes_of(&with).contains(&"I001".to_string()), "{with}");
    assert_eq!(points(&with), points(&v));
    let edited = write(
        "edited.yaml",
        &entry
            .replace("label: OW", "label: CR")
            .replace("  gate: \"*\"\n", ""),
    );
    let after = json_of(&[
        "check",
        "--from",
        "storm-flux",
        "--format",
        "json",
        "--catalog",
        &edited,
        path,
    ]);
    assert_ne!(points(&after), points(&v));
}

/// The SQL planner's operators: matched by kind, keyed by their `groupBy`, a window on a
/// rowtime sealed by the watermark, one on a processing time not.
#[test]
fn flink_sql_operators_are_judged_by_kind_key_and_time() {
    let dir = "tests/fixtures/import/flink";
    let agg = json_of(&[
        "check",
        "--from",
        "flink",
        "--format",
        "json",
        &format!("{dir}/sql-group-aggregate.json"),
    ]);
    assert_eq!(points(&agg), ["GroupAggregate-4"]);
    let spec = stdout(&blazes(&[
        "import",
        "flink",
        &format!("{dir}/sql-group-aggregate.json"),
    ]));
    assert!(spec.contains("label: OW, gate: [\"user_id\"]"), "{spec}");
    assert!(spec.contains("class `GroupAggregate`"), "{spec}");
    let event = blazes(&[
        "check",
        "--from",
        "flink",
        &format!("{dir}/sql-event-time-window.json"),
    ]);
    assert_eq!(event.status.code(), Some(0), "{}", stdout(&event));
    // Control: the same window on a PROCTIME() column is a point of order.
    let processing = blazes(&[
        "check",
        "--from",
        "flink",
        &format!("{dir}/sql-processing-time-window.json"),
    ]);
    assert_eq!(processing.status.code(), Some(1), "{}", stdout(&processing));
    // And with the watermark's rowtime renamed, the plan no longer shows the time: unsealed.
    let (_d, unknown) = rewritten(&format!("{dir}/sql-event-time-window.json"), |t| {
        t.replace("rowtime=[ts]", "rowtime=[other]")
    });
    let o = blazes(&["check", "--from", "flink", &unknown]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stdout(&o).contains("time attribute"), "{}", stdout(&o));
}

/// No I001 of any fixture proposes `CR`, or a plan-specific id (`[4]`).
#[test]
fn unknown_operator_entries_are_conservative_and_plan_independent() {
    let mut seen = 0;
    glob_each(ENGINES, |path| {
        let catalog = catalog_for(path);
        let mut args = args_for("check", path, &catalog);
        args.extend(["--format", "json"]);
        let v = json_of(&args);
        for d in v["files"][0]["diagnostics"].as_array().unwrap() {
            if d["code"] != "I001" {
                continue;
            }
            seen += 1;
            let help = d["help"].as_str().unwrap();
            assert!(
                help.contains("\n  label: OW\n  gate: \"*\"\n"),
                "{path}: {help}"
            );
            assert!(!help.contains("label: CR"), "{path}: {help}");
            let entry = &help[help.find("- class:").unwrap()..];
            let id = entry
                .find('[')
                .is_some_and(|i| entry[i + 1..].starts_with(|c: char| c.is_ascii_digit()));
            assert!(!id, "{path}: {help}");
        }
    });
    // The fixtures do have unknown operators, among them the SQL planner's `PythonCalc[23]`,
    // whose id the plan prints: the check above would see it had it not been stripped.
    assert!(seen >= 3, "{seen}");
    let plan =
        std::fs::read_to_string(root().join("tests/fixtures/import/flink/sql-operators.json"))
            .unwrap();
    assert!(plan.contains("\"PythonCalc[23]\""));
}

/// Storm: an unknown spout is a source; a window bolt is judged by the window its
/// configMethods set; a named stream is an output of its own.
#[test]
fn storm_spouts_windows_and_named_streams() {
    let dir = "tests/fixtures/import/storm-flux";
    let event = format!("{dir}/event-time-window.yaml");
    let o = blazes(&["check", "--from", "storm-flux", &event]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(!stdout(&o).contains("I001"), "{}", stdout(&o));
    // Control: without the timestamp field the same window runs on the wall clock.
    let (_d, wall) = rewritten(&event, |t| {
        t.replace(
            "      - name: \"withTimestampField\"\n        args: [\"ts\"]\n",
            "",
        )
    });
    let o = blazes(&["check", "--from", "storm-flux", &wall]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let count = json_of(&[
        "check",
        "--from",
        "storm-flux",
        "--format",
        "json",
        &format!("{dir}/count-window.yaml"),
    ]);
    assert_eq!(points(&count), ["sliding-sum"]);
    // Control: a spout is never a point of order, even one nobody knows.
    let (_d2, known) = rewritten(&format!("{dir}/count-window.yaml"), |t| {
        t.replace(
            "org.apache.storm.starter.bolt.SlidingWindowSumBolt",
            "org.apache.storm.testing.IdentityBolt",
        )
    });
    let v = json_of(&["check", "--from", "storm-flux", "--format", "json", &known]);
    assert!(points(&v).is_empty(), "{v}");
    let spec = stdout(&blazes(&[
        "import",
        "storm-flux",
        &format!("{dir}/named-streams.yaml"),
    ]));
    for s in [
        "{ from: \"validate.valid\", to: \"count-valid.validate-valid\" }",
        "{ from: \"validate.invalid\", to: \"archive-invalid.validate-invalid\" }",
        "{ from: \"orders\", to: \"valid\", label: CR }",
    ] {
        assert!(spec.contains(s), "{s}: {spec}");
    }
}

/// Flink SQL's `EXPLAIN` text: the tree read with its exchanges' keys, the window sealed by
/// the watermark the plan declares.
#[test]
fn flink_explain_text_is_read_like_a_plan() {
    let dir = "tests/fixtures/import/flink";
    let join = json_of(&[
        "check",
        "--from",
        "flink",
        "--format",
        "json",
        &format!("{dir}/explain-join-aggregate.txt"),
    ]);
    assert_eq!(points(&join), ["GroupAggregate-2", "Join-4"]);
    let spec = stdout(&blazes(&[
        "import",
        "flink",
        &format!("{dir}/explain-join-aggregate.txt"),
    ]));
    assert!(
        spec.contains("{ from: \"left\", to: \"out\", label: OW, gate: [\"user_id\"] }"),
        "{spec}"
    );
    let window = format!("{dir}/explain-event-time-window.txt");
    let o = blazes(&["check", "--from", "flink", &window]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    // Control: the watermark on another column leaves the window's time unknown: unsealed.
    let (_d, other) = rewritten(&window, |t| t.replace("rowtime=[ts]", "rowtime=[other]"));
    let o = blazes(&["check", "--from", "flink", &other]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
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

/// `check --from` says where each path's annotation came from: every path of every fixture has
/// the origin `catalog` and, as its reason, what the spec's comment says (the annotation, the
/// catalogue entry or rule that gave it, and why). Control: the same spec written by `import`
/// and checked as a spec reads `declared`, so the origin comes from the import, not the text.
#[test]
fn imported_paths_have_the_catalog_origin_and_its_reason() {
    let paths_of = |json: &Value| -> Vec<Value> {
        json["files"][0]["components"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|c| c["paths"].as_array().unwrap().clone())
            .collect()
    };
    glob_each(ENGINES, |path| {
        let catalog = catalog_for(path);
        let mut args = args_for("check", path, &catalog);
        args.extend(["--format", "json"]);
        let json: Value = serde_json::from_str(&stdout(&blazes(&args))).unwrap();
        let paths = paths_of(&json);
        assert!(!paths.is_empty(), "{path}");
        for p in paths {
            assert_eq!(p["origin"], "catalog", "{path}: {p}");
            let reason = p["reason"]
                .as_str()
                .unwrap_or_else(|| panic!("{path}: {p}"));
            let annotation = p["annotation"].as_str().unwrap();
            assert!(reason.starts_with(annotation), "{path}: {p}");
            assert!(
                ["catalogue", "rule", "state store"]
                    .iter()
                    .any(|w| reason.contains(w)),
                "{path}: the reason says what gave the annotation: {p}"
            );
            assert!(!reason.contains('\n'), "{path}: {p}");
        }
    });

    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("w.yaml");
    let spec = spec.to_string_lossy();
    blazes(&["import", "kafka-streams", WORDCOUNT, "-o", &spec]);
    let direct: Value =
        serde_json::from_str(&stdout(&blazes(&["check", "--format", "json", &spec]))).unwrap();
    let paths = paths_of(&direct);
    assert!(!paths.is_empty());
    for p in paths {
        assert_eq!(p["origin"], "declared", "{p}");
        assert!(p.get("reason").is_none_or(Value::is_null), "{p}");
    }
}

/// A finding on an imported path says, under it, which catalogue entry annotated it.
#[test]
fn a_finding_on_an_imported_path_names_its_catalogue_entry() {
    let fixture = "tests/fixtures/import/kafka-streams/global-table-join.txt";
    let human = stdout(&blazes(&["check", "--from", "kafka-streams", fixture]));
    assert!(
        human.contains("annotated on import: OR(key) from catalogue entry `KSTREAM-LEFTJOIN`"),
        "{human}"
    );
}

/// Only a white box's own `clock` input is processing time. An imported operator whose input
/// happens to be named `clock` is ordinary: its point of order is fixed by an order, and the
/// help says so. Control: the same path derived from a program (origin `sql`) gets the
/// processing-time help.
#[test]
fn an_imported_input_named_clock_is_an_ordinary_input() {
    use blazes::check::{self, Outcome};
    use blazes::spec::PathNote;
    use blazes::whitebox::Origin;
    let text = "name: c\nsources:\n  clock: {}\ncomponents:\n  Count:\n    paths:\n      - { from: clock, to: out, label: OW, gate: [key] }\nstreams:\n  - { from: clock, to: Count.clock }\n  - { from: Count.out, to: out }\nsinks:\n  out: {}\n";
    let help_with = |origin: Origin| -> String {
        let annotate = move |spec: &mut blazes::spec::Spec| {
            for c in &mut spec.components {
                for p in &mut c.paths {
                    p.note = Some(Box::new(PathNote {
                        origin,
                        reason: "given".into(),
                    }));
                }
            }
        };
        let r = check::check_annotated(
            "c.yaml",
            text.as_bytes().to_vec(),
            &Default::default(),
            &annotate,
        );
        let Outcome::Analysed(a) = &r.outcome else {
            panic!("a valid spec: {:?}", r.diagnostics())
        };
        a.diagnostics
            .iter()
            .filter_map(|d| d.help.clone())
            .collect::<Vec<_>>()
            .join("\n")
    };
    let imported = help_with(Origin::Catalog);
    assert!(!imported.contains("processing time"), "{imported}");
    assert!(imported.contains("order"), "{imported}");
    let program = help_with(Origin::Sql);
    assert!(program.contains("processing time"), "{program}");
}
