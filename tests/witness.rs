//! `blazes check --witness`: the simulator's witness attached to every unsafe sink (C004), in
//! every format. Snapshots on the word count; every unsafe sink of the shipped specs gets a
//! witness (negative control: one schedule finds none, and the same harness says so); the
//! SARIF code flows validate and walk the sink's chain; the output without the witnesses is
//! the output of `check` itself; the same seed gives the same bytes; the flags are refused
//! without `--witness`.

mod common;

use std::process::{Command, Output};

use common::{blazes, require_tool, stderr, stdout, yaml_files};
use serde_json::Value;

/// Few schedules keep the tests fast in debug builds; every shipped unsafe sink still gets a
/// witness within them.
const SCHEDULES: &str = "300";

fn check(args: &[&str]) -> Output {
    let mut all = vec!["check"];
    all.extend_from_slice(args);
    blazes(&all)
}

fn witnessed(format: &str, specs: &[&str], schedules: &str) -> Output {
    let mut args = vec![
        "--witness",
        "--schedules",
        schedules,
        "--seed",
        "1",
        "--format",
        format,
    ];
    args.extend_from_slice(specs);
    check(&args)
}

fn shipped() -> Vec<String> {
    yaml_files("specs")
}

#[test]
fn snapshots_of_the_word_count_in_every_format() {
    for format in ["human", "json", "sarif", "github"] {
        let o = witnessed(format, &["specs/wordcount.yaml"], SCHEDULES);
        assert_eq!(o.status.code(), Some(1), "{format}: {}", stderr(&o));
        assert!(o.stderr.is_empty(), "{format}: {}", stderr(&o));
        insta::assert_snapshot!(format!("wordcount_{format}"), stdout(&o));
    }
}

/// The C004 diagnostics of a `check --format json` document that carry no witness object, as
/// `path: message`.
fn sinks_without_witness(doc: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for f in doc["files"].as_array().unwrap() {
        for d in f["diagnostics"].as_array().unwrap() {
            if d["code"] == "C004" && !d["witness"].is_object() {
                out.push(format!("{}: {}", f["path"], d["message"]));
            }
        }
    }
    out
}

#[test]
fn every_unsafe_sink_of_the_shipped_specs_has_a_witness() {
    let specs = shipped();
    let args: Vec<&str> = specs.iter().map(String::as_str).collect();
    let o = witnessed("json", &args, SCHEDULES);
    let doc: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(doc["version"], 2, "adding the witness is additive");
    assert_eq!(sinks_without_witness(&doc), Vec::<String>::new());
    let mut c004 = 0;
    for f in doc["files"].as_array().unwrap() {
        let failing = f["status"] == "findings";
        // A spec with an unsafe sink is simulated, and says how; one without is not.
        assert_eq!(f["simulation"].is_object(), failing, "{}", f["path"]);
        if failing {
            // An exhaustive exploration runs the schedules that matter, at most the budget.
            let n = f["simulation"]["schedules"].as_u64().unwrap();
            if f["simulation"]["exhaustive"] == true {
                assert!((1..=300).contains(&n), "{}", f["path"]);
            } else {
                assert_eq!(n, 300, "{}", f["path"]);
            }
            assert_eq!(f["simulation"]["seed"], 1);
            assert_eq!(f["simulation"]["replicas"], 2);
        }
        for d in f["diagnostics"].as_array().unwrap() {
            if d["code"] != "C004" {
                assert!(d.get("witness").is_none(), "only C004 gets a witness: {d}");
                continue;
            }
            c004 += 1;
            // The witness shows what it claims: two outputs that differ.
            let w = &d["witness"];
            let e = w["executions"].as_array().unwrap();
            assert_ne!(e[0]["output"], e[1]["output"], "{}: {w}", f["path"]);
            assert_ne!(e[0]["name"], e[1]["name"]);
            assert!(matches!(
                w["observed"].as_str(),
                Some("Run" | "Inst" | "Diverge")
            ));
            assert!(!w["inputs"].as_array().unwrap().is_empty());
        }
    }
    assert!(c004 >= 5, "the shipped specs have unsafe sinks: {c004}");

    // Negative control: the same harness with a single schedule and one instance per
    // replicated component, where nothing can differ, finds every unsafe sink without a
    // witness, and says so with `null`. (One schedule alone is not enough: two instances in
    // one execution can already disagree, which is an `Inst` witness.)
    let mut single = args.clone();
    single.extend(["--replicas", "1"]);
    let o = witnessed("json", &single, "1");
    let doc: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let missing = sinks_without_witness(&doc);
    assert_eq!(missing.len(), c004, "{missing:?}");
    let human = stdout(&witnessed("human", &["specs/wordcount.yaml"], "1"));
    assert!(
        human.contains("no witness for `db` in 1 random schedule with seed 1"),
        "{human}"
    );
}

/// An implicit sink whose name (501 characters) is longer than a message keeps gets its
/// witness in every format that attaches one. The control: its C004 message is cut before the
/// name ends, so a search of the message for the name (how witnesses were once attached) finds
/// nothing.
#[test]
fn a_sink_named_past_the_message_cut_gets_its_witness() {
    let (path, sink) = common::long_implicit_sink("witness");
    let spec = path.to_str().unwrap();
    let o = witnessed("json", &[spec], SCHEDULES);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let doc: Value = serde_json::from_str(&stdout(&o)).unwrap();
    common::assert_message_hides_the_name(&doc, &sink);
    assert_eq!(sinks_without_witness(&doc), Vec::<String>::new());
    let w = doc["files"][0]["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["code"] == "C004")
        .map(|d| d["witness"].clone())
        .unwrap();
    assert_eq!(w["observed"], "Run", "{w}");
    let e = w["executions"].as_array().unwrap();
    assert_ne!(e[0]["output"], e[1]["output"], "{w}");
    let human = stdout(&witnessed("human", &[spec], SCHEDULES));
    assert!(
        human.contains(&format!(
            "= point of order: {}",
            &sink[..sink.find('.').unwrap()]
        )),
        "{human}"
    );
    assert!(
        human.contains(&format!(
            "witness: `{sink}` receives different contents in two schedules"
        )),
        "the human report shows the witness: {human}"
    );
}

/// Removes what `--witness` adds to a JSON document: the `simulation` objects and the
/// `witness` fields.
fn without_witnesses(mut doc: Value) -> Value {
    for f in doc["files"].as_array_mut().unwrap() {
        f.as_object_mut().unwrap().remove("simulation");
        for d in f["diagnostics"].as_array_mut().unwrap() {
            d.as_object_mut().unwrap().remove("witness");
        }
    }
    doc
}

/// `--witness` only adds: the JSON document less its additions, and the human output less
/// the witness blocks, are `check`'s own output. (The snapshots of `tests/check.rs`,
/// `tests/sarif.rs` and `tests/github.rs` hold `check` without the flag to its bytes.)
#[test]
fn the_witness_only_adds_to_the_output() {
    let specs = shipped();
    let args: Vec<&str> = specs.iter().map(String::as_str).collect();
    let with: Value = serde_json::from_str(&stdout(&witnessed("json", &args, "50"))).unwrap();
    let mut plain_args = vec!["--format", "json"];
    plain_args.extend(args.iter().copied());
    let plain: Value = serde_json::from_str(&stdout(&check(&plain_args))).unwrap();
    assert_ne!(with, plain);
    assert_eq!(without_witnesses(with), plain);

    let with = stdout(&witnessed("human", &args, "50"));
    let plain = stdout(&check(&args));
    // A witness block is the lines after a C004's help that start with `  witness:` or
    // `  no witness`, and the indented lines that follow them.
    let mut kept = Vec::new();
    let mut in_block = false;
    for line in with.lines() {
        if line.starts_with("  witness: ") || line.starts_with("  no witness for ") {
            in_block = true;
            continue;
        }
        if in_block && line.starts_with("   ") {
            continue;
        }
        in_block = false;
        kept.push(line);
    }
    assert!(
        with.lines().count() > kept.len(),
        "witness blocks were printed"
    );
    assert_eq!(kept.join("\n") + "\n", plain);
}

#[test]
fn the_same_seed_gives_the_same_bytes() {
    let specs = shipped();
    let args: Vec<&str> = specs.iter().map(String::as_str).collect();
    for format in ["human", "sarif"] {
        let a = witnessed(format, &args, "100");
        let b = witnessed(format, &args, "100");
        assert_eq!(a.stdout, b.stdout, "{format}");
    }
}

#[test]
fn schedule_flags_need_witness() {
    for flag in ["--schedules", "--seed", "--replicas"] {
        let o = check(&[flag, "2", "specs/wordcount.yaml"]);
        assert_eq!(o.status.code(), Some(2), "{flag}");
        assert_eq!(
            stderr(&o),
            format!(
                "error: `{flag}` applies only with --witness (it sets how witnesses are searched for)\n"
            )
        );
        assert!(o.stdout.is_empty());
    }
    // With the flag they are taken, and said in the output.
    let o = check(&[
        "--witness",
        "--replicas",
        "3",
        "--schedules",
        "20",
        "--seed",
        "9",
        // Explored at random with 20 schedules (the word count is exhaustive in two).
        "specs/ad-poor.yaml",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o)
            .contains("20 random schedules with seed 9, 3 instances per replicated component"),
        "{}",
        stdout(&o)
    );
    // An invalid spec is reported as without --witness, and not simulated.
    let o = check(&["--witness", "tests/fixtures/errors/dangling.yaml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(!stdout(&o).contains("witness"), "{}", stdout(&o));
}

fn sarif_of(specs: &[&str], schedules: &str) -> Value {
    serde_json::from_str(&stdout(&witnessed("sarif", specs, schedules))).unwrap()
}

fn region(location: &Value) -> (u64, u64) {
    let r = &location["physicalLocation"]["region"];
    (
        r["startLine"].as_u64().unwrap(),
        r["startColumn"].as_u64().unwrap(),
    )
}

/// Every failing sink a result lists gets one code flow; its thread flow walks the sink's
/// chain from a source, passes the point of order, and ends at the sink, numbered in order,
/// every step with a message.
#[test]
fn sarif_code_flows_walk_the_chain_from_origin_to_sink() {
    let specs = shipped();
    let args: Vec<&str> = specs.iter().map(String::as_str).collect();
    let log = sarif_of(&args, SCHEDULES);
    let mut flows = 0;
    for r in log["runs"][0]["results"].as_array().unwrap() {
        let Some(cf) = r.get("codeFlows") else {
            continue;
        };
        let related = r["relatedLocations"].as_array().unwrap();
        let by_id = |id: u64| related.iter().find(|l| l["id"] == id).unwrap();
        let point = matches!(r["ruleId"].as_str(), Some("C001" | "C002" | "C003"));
        for (i, flow) in cf.as_array().unwrap().iter().enumerate() {
            flows += 1;
            assert!(
                flow["message"]["text"]
                    .as_str()
                    .unwrap()
                    .starts_with("Witness: ")
            );
            let steps = flow["threadFlows"][0]["locations"].as_array().unwrap();
            assert!(steps.len() >= 3, "{flow}");
            for (n, s) in steps.iter().enumerate() {
                assert_eq!(s["executionOrder"], n as u64 + 1);
                assert!(
                    s["location"]["message"]["text"]
                        .as_str()
                        .unwrap()
                        .ends_with('.')
                );
            }
            // It starts at a source, with the witness's input records; for a sink reported
            // on its own, where the result says its label comes from. (A point's result
            // names the origin of the point's input, which for a read can be the writes
            // rather than the reads that lead to the sink.)
            let first = steps[0]["location"]["message"]["text"].as_str().unwrap();
            assert!(
                first.contains(" emits (") || first.contains(", emitting ("),
                "{flow}"
            );
            if !point {
                assert_eq!(region(&steps[0]["location"]), region(by_id(1)), "{flow}");
            }
            // The sink: the result's own location for a C004, its i-th listed sink for a point.
            let sink = if point {
                by_id(i as u64 + 2)
            } else {
                &r["locations"][0]
            };
            assert_eq!(region(&steps.last().unwrap()["location"]), region(sink));
            let at_point = steps.iter().any(|s| {
                s["location"]["message"]["text"]
                    .as_str()
                    .unwrap()
                    .starts_with("Point of order ")
            });
            assert!(at_point, "{flow}");
            if point {
                assert!(
                    steps
                        .iter()
                        .any(|s| region(&s["location"]) == region(&r["locations"][0]))
                );
            }
        }
    }
    assert!(flows >= 5, "{flows} code flows");
    // Without --witness, no code flow.
    let mut plain = vec!["--format", "sarif"];
    plain.extend(args.iter().copied());
    assert!(!stdout(&check(&plain)).contains("codeFlows"));
}

/// The validator, as `tests/sarif.rs` finds it.
fn multitool() -> Option<std::path::PathBuf> {
    if let Some(p) = std::env::var_os("SARIF_MULTITOOL") {
        return Some(p.into());
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(".cache")))?;
    let p = cache.join(
        "blazes/sarif-multitool/node_modules/@microsoft/sarif-multitool-linux/Sarif.Multitool",
    );
    p.is_file().then_some(p)
}

#[test]
fn sarif_with_code_flows_validates() {
    let tool = multitool();
    if !require_tool(
        tool.is_some(),
        "the SARIF validator (Sarif.Multitool)",
        "install it with scripts/validate-sarif (needs npm; it installs \
         @microsoft/sarif-multitool-linux into ~/.cache/blazes), or set SARIF_MULTITOOL",
    ) {
        return;
    }
    let mut files = shipped();
    files.extend(yaml_files("tests/fixtures/errors"));
    let args: Vec<&str> = files.iter().map(String::as_str).collect();
    let o = witnessed("sarif", &args, "100");
    assert!(stdout(&o).contains("codeFlows"));
    let d = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("witness-validate-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let (input, output) = (d.join("in.sarif"), d.join("out.sarif"));
    std::fs::write(&input, &o.stdout).unwrap();
    let v = Command::new(tool.unwrap())
        .args(["validate", "-o"])
        .arg(&output)
        .arg(&input)
        .env("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT", "1")
        .output()
        .unwrap();
    assert!(v.status.success(), "{}{}", stdout(&v), stderr(&v));
    let report: Value = serde_json::from_slice(&std::fs::read(&output).unwrap()).unwrap();
    let problems: Vec<String> = report["runs"][0]["results"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter(|r| matches!(r["level"].as_str(), Some("error" | "warning") | None))
        .map(|r| format!("{}: {}", r["ruleId"], r["message"]))
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn github_annotations_carry_a_compact_witness() {
    let o = witnessed(
        "github",
        &["specs/ad-poor.yaml", "specs/wordcount.yaml"],
        SCHEDULES,
    );
    let text = stdout(&o);
    let annotations: Vec<&str> = text.lines().collect();
    // Still one annotation per finding: the witness is inside the message, escaped.
    let plain = stdout(&check(&[
        "--format",
        "github",
        "specs/ad-poor.yaml",
        "specs/wordcount.yaml",
    ]));
    assert_eq!(annotations.len(), plain.lines().count());
    assert!(text.contains(
        "%0A    witness for `db` (observed Run in the 2 schedules that cover every delivery order)"
    ));
    assert!(text.contains("%0A    witness for `answers` (observed Inst"));
    assert!(text.contains("%0A      schedule 0: Count takes "), "{text}");
}

fn generated(components: usize, name: &str) -> std::path::PathBuf {
    let text = blazes::generator::generate(
        &blazes::generator::GenOptions::default()
            .components(components)
            .seed(3),
    );
    let path = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("witness-{name}-{}.yaml", std::process::id()));
    std::fs::write(&path, text).unwrap();
    path
}

/// Without `--schedules` a big spec gets `blazes plan`'s size-aware budget, and every output
/// says so; past the size limit nothing is simulated, and that is said. The control: the same
/// spec with `--schedules` runs what it is told and says nothing.
#[test]
fn a_big_spec_gets_the_size_aware_budget_and_says_so() {
    use blazes::simulate::{DEFAULT_SCHEDULES, verify};
    let n = 60;
    let budget = verify::size_budget(n, DEFAULT_SCHEDULES).unwrap();
    assert!(budget < DEFAULT_SCHEDULES);
    let path = generated(n, "budget");
    let spec = path.to_str().unwrap();
    let o = check(&["--witness", "--format", "json", spec]);
    let doc: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let sim = &doc["files"][0]["simulation"];
    assert!(sim["schedules"].as_u64().unwrap() <= budget as u64, "{sim}");
    let note = format!("reduced from 10,000 for a spec of {n} components; --schedules N runs more");
    assert_eq!(sim["note"], note.as_str(), "{sim}");
    assert!(
        stderr(&o).contains(&format!(
            "witnesses searched for in {budget} schedules at most ({note})"
        )),
        "{}",
        stderr(&o)
    );
    let human = stdout(&check(&["--witness", spec]));
    assert!(human.contains(&format!("({note})")), "{human}");
    // Control: an explicit --schedules is obeyed, and nothing is said.
    let o = check(&["--witness", "--schedules", "3", "--format", "json", spec]);
    let doc: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let sim = &doc["files"][0]["simulation"];
    assert!(sim.get("note").is_none(), "{sim}");
    assert!(sim["schedules"].as_u64().unwrap() <= 3, "{sim}");
    assert!(!stderr(&o).contains("note:"), "{}", stderr(&o));
    let _ = std::fs::remove_file(&path);

    let n = verify::PLAN_MAX_COMPONENTS + 1;
    let path = generated(n, "past-limit");
    let spec = path.to_str().unwrap();
    let o = check(&["--witness", "--format", "json", spec]);
    let plain = check(&["--format", "json", spec]);
    assert_eq!(o.status.code(), plain.status.code());
    assert_eq!(
        stdout(&o),
        stdout(&plain),
        "nothing simulated, nothing attached"
    );
    assert!(
        stderr(&o).contains(&format!(
            "no witness searched for: the spec has {n} components, more than `blazes check --witness` simulates by default (200)"
        )),
        "{}",
        stderr(&o)
    );
    let o = check(&["--witness", "--schedules", "1", "--format", "json", spec]);
    let doc: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(doc["files"][0]["simulation"]["schedules"], 1);
    let _ = std::fs::remove_file(&path);
}
