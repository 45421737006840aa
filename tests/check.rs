//! `blazes check` end to end: the verdicts of the shipped specs (the paper's oracles), the
//! rendered output users see, and every class of bad input.

mod common;

use common::*;
use serde_json::Value;

fn json_of(path: &str) -> (Value, i32) {
    let o = blazes(&["check", "--format", "json", path]);
    let v: Value = serde_json::from_str(&stdout(&o)).expect("check --format json prints JSON");
    (v, o.status.code().unwrap())
}

fn stream_label(v: &Value, from: &str, to: &str) -> String {
    let s = v["files"][0]["streams"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["from"] == from && s["to"] == to)
        .unwrap_or_else(|| panic!("stream {from} -> {to}"));
    match s.get("key") {
        Some(k) => format!(
            "{}({})",
            s["label"].as_str().unwrap(),
            k.as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_str().unwrap())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        None => s["label"].as_str().unwrap().to_string(),
    }
}

fn sink_label(v: &Value, name: &str) -> String {
    let s = v["files"][0]["sinks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap();
    s["label"].as_str().unwrap().to_string()
}

fn points(v: &Value) -> Vec<(String, String)> {
    v["files"][0]["points_of_order"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["component"].as_str().unwrap().to_string(),
                p["kind"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn barriers(v: &Value) -> Vec<(String, String, Vec<String>)> {
    v["files"][0]["seal_barriers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["component"].as_str().unwrap().to_string(),
                b["input"].as_str().unwrap().to_string(),
                b["key"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|k| k.as_str().unwrap().to_string())
                    .collect(),
            )
        })
        .collect()
}

#[test]
fn wordcount_unsealed_taints_count() {
    let (v, code) = json_of("specs/wordcount.yaml");
    assert_eq!(code, 1);
    assert_eq!(stream_label(&v, "Splitter.words", "Count.words"), "Async");
    assert_eq!(stream_label(&v, "Count.counts", "Commit.counts"), "Run");
    assert_eq!(sink_label(&v, "db"), "Run");
    assert_eq!(
        points(&v),
        vec![("Count".to_string(), "unordered-write".to_string())]
    );
    assert_eq!(
        v["files"][0]["points_of_order"][0]["gate"],
        serde_json::json!(["batch", "word"])
    );
    assert!(barriers(&v).is_empty());
}

#[test]
fn wordcount_sealed_is_async_with_a_barrier() {
    let (v, code) = json_of("specs/wordcount-sealed.yaml");
    assert_eq!(code, 0);
    assert_eq!(
        stream_label(&v, "Splitter.words", "Count.words"),
        "Seal(batch)"
    );
    assert_eq!(stream_label(&v, "Count.counts", "Commit.counts"), "Async");
    assert_eq!(sink_label(&v, "db"), "Async");
    assert!(points(&v).is_empty());
    assert_eq!(
        barriers(&v),
        vec![("Count".into(), "words".into(), vec!["batch".into()])]
    );
    assert_eq!(
        v["files"][0]["seal_barriers"][0]["producers"],
        serde_json::json!(["tweets"])
    );
}

#[test]
fn ad_thresh_needs_no_coordination() {
    let (v, code) = json_of("specs/ad-thresh.yaml");
    assert_eq!(code, 0);
    assert_eq!(sink_label(&v, "answers"), "Async");
    assert!(points(&v).is_empty());
    assert!(barriers(&v).is_empty());
}

#[test]
fn ad_poor_is_inst_at_report_and_after_the_cache() {
    let (v, code) = json_of("specs/ad-poor.yaml");
    assert_eq!(code, 1);
    assert_eq!(
        stream_label(&v, "Report.response", "Cache.response"),
        "Inst"
    );
    // The Cache writes the Inst stream into state (a point of order) and the Inst passes on:
    // the worst of Inst and the taint's Run.
    assert_eq!(sink_label(&v, "answers"), "Inst");
    assert_eq!(
        points(&v),
        vec![
            ("Report".to_string(), "unprotected-read".to_string()),
            ("Cache".to_string(), "transient-write".to_string())
        ]
    );
}

#[test]
fn ad_poor_with_a_replicated_cache_diverges() {
    let (v, code) = json_of("specs/ad-poor-replicated-cache.yaml");
    assert_eq!(code, 1);
    assert_eq!(sink_label(&v, "answers"), "Diverge");
}

#[test]
fn ad_campaign_is_protected_by_a_campaign_barrier() {
    let (v, code) = json_of("specs/ad-campaign.yaml");
    assert_eq!(code, 0);
    assert_eq!(sink_label(&v, "answers"), "Async");
    assert!(points(&v).is_empty());
    assert_eq!(
        barriers(&v),
        vec![("Report".into(), "click".into(), vec!["campaign".into()])]
    );
}

#[test]
fn ad_window_is_async() {
    let (v, code) = json_of("specs/ad-window.yaml");
    assert_eq!(code, 0);
    assert_eq!(sink_label(&v, "answers"), "Async");
    assert_eq!(
        barriers(&v),
        vec![("Report".into(), "click".into(), vec!["window".into()])]
    );
}

#[test]
fn a_seal_travels_around_a_confluent_cycle() {
    let (v, code) = json_of("specs/cycle.yaml");
    assert_eq!(code, 0);
    assert_eq!(
        stream_label(&v, "Relay.back", "Merge.feedback"),
        "Seal(epoch)"
    );
    assert_eq!(sink_label(&v, "index"), "Async");
    assert_eq!(
        barriers(&v),
        vec![("Rank".into(), "merged".into(), vec!["epoch".into()])]
    );
}

#[test]
fn taint_circulates_and_unreached_streams_are_reported() {
    let (v, code) = json_of("specs/cycle-taint.yaml");
    assert_eq!(code, 1);
    assert_eq!(stream_label(&v, "Balance.results", "Router.results"), "Run");
    assert_eq!(stream_label(&v, "Router.routed", "Balance.routed"), "Run");
    // No source reaches it: no label at all.
    let orphan = v["files"][0]["streams"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["from"] == "Orphan.out")
        .unwrap();
    assert!(orphan["label"].is_null(), "{orphan}");
    assert_eq!(sink_label(&v, "ledger"), "Run");
    let codes: Vec<&str> = v["files"][0]["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["code"].as_str().unwrap())
        .collect();
    assert_eq!(
        codes.iter().filter(|c| **c == "C007").count(),
        2,
        "{codes:?}"
    );
}

#[test]
fn an_ordered_replicated_stage_agrees_and_tolerance_downgrades_findings() {
    let (v, code) = json_of("specs/replicated-stage.yaml");
    assert_eq!(code, 0);
    assert_eq!(
        stream_label(&v, "Ledger.balances", "Audit.balances"),
        "Async"
    );
    assert_eq!(sink_label(&v, "report"), "Run");
    // Report's OW(*) is still a point of order, but the sink tolerates Run: a warning.
    assert_eq!(
        points(&v),
        vec![("Report".to_string(), "unordered-write".to_string())]
    );
    let d = &v["files"][0]["diagnostics"].as_array().unwrap();
    assert!(
        d.iter()
            .any(|d| d["code"] == "C001" && d["severity"] == "warning")
    );
}

/// A one-component spec whose sink `sink` receives `label`, declaring `tolerate` (or not).
fn spec_delivering(label: &str, tolerate: Option<&str>) -> String {
    // Every variant writes state from `w` (an Async input), which an `OR` read cannot trust.
    let (seal, replicated, path) = match label {
        "Seal" => ("{ seal: [k] }", false, "{ from: s, to: out, label: CR }"),
        "Async" => ("{}", false, "{ from: s, to: out, label: CR }"),
        "Run" => ("{}", false, "{ from: s, to: out, label: OW, gate: [k] }"),
        "Diverge" => ("{}", true, "{ from: s, to: out, label: OW, gate: [k] }"),
        "Inst" => ("{}", true, "{ from: s, to: out, label: OR, gate: [k] }"),
        other => panic!("no spec delivers {other}"),
    };
    let sink = match tolerate {
        Some(t) => format!("{{ tolerate: {t} }}"),
        None => "{}".to_string(),
    };
    format!(
        "sources:\n  s: {seal}\n  w: {{}}\ncomponents:\n  C:\n    replicated: {replicated}\n    paths:\n      - {path}\n      - {{ from: w, to: state, label: CW }}\nstreams:\n  - {{ from: s, to: C.s }}\n  - {{ from: w, to: C.w }}\n  - {{ from: C.out, to: sink }}\nsinks:\n  sink: {sink}\n"
    )
}

/// Every combination of received label, declared tolerance and `--fail-on`: a declared
/// tolerance decides alone; `--fail-on` decides for the sinks that declare none.
#[test]
fn a_declared_tolerance_decides_alone_and_fail_on_applies_to_the_rest() {
    const RANK: [(&str, u8); 5] = [
        ("Seal", 1),
        ("Async", 1),
        ("Run", 2),
        ("Inst", 3),
        ("Diverge", 4),
    ];
    let rank = |l: &str| RANK.iter().find(|(n, _)| *n == l).unwrap().1;
    let mut wrong = Vec::new();
    for (label, _) in RANK {
        for tolerate in [
            None,
            Some("Async"),
            Some("Run"),
            Some("Inst"),
            Some("Diverge"),
        ] {
            let text = spec_delivering(label, tolerate);
            for fail_on in ["run", "inst", "diverge", "never"] {
                let threshold = match fail_on {
                    "run" => 2,
                    "inst" => 3,
                    "diverge" => 4,
                    _ => u8::MAX,
                };
                let fails = match tolerate {
                    Some(t) => rank(label) > rank(t),
                    None => rank(label) >= threshold,
                };
                let o = blazes_stdin(&["check", "--fail-on", fail_on, "-"], text.as_bytes());
                let out = stdout(&o);
                let json = blazes_stdin(
                    &["check", "--fail-on", fail_on, "--format", "json", "-"],
                    text.as_bytes(),
                );
                let v: Value = serde_json::from_str(&stdout(&json)).unwrap();
                let received = sink_label(&v, "sink");
                let expected = label;
                let summary_ok = out.lines().last().is_some_and(|l| l.contains(": ok"));
                let got = (
                    o.status.code(),
                    json.status.code(),
                    summary_ok,
                    received.as_str(),
                );
                let want = (Some(fails as i32), Some(fails as i32), !fails, expected);
                if got != want {
                    wrong.push(format!(
                        "{label} into tolerate {tolerate:?} with --fail-on {fail_on}: got {got:?}, want {want:?}\n{out}"
                    ));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The message of a failing sink says what decided it.
#[test]
fn the_unsafe_sink_message_names_the_tolerance_that_failed_it() {
    let o = blazes_stdin(
        &["check", "--fail-on", "inst", "-"],
        spec_delivering("Run", Some("Async")).as_bytes(),
    );
    assert!(
        stdout(&o).contains("sink `sink` receives Run, but it tolerates Async or Seal"),
        "{}",
        stdout(&o)
    );
    let o = blazes_stdin(
        &["check", "--fail-on", "inst", "-"],
        spec_delivering("Inst", None).as_bytes(),
    );
    assert!(
        stdout(&o).contains(
            "sink `sink` receives Inst, but it tolerates at worst Run (`--fail-on inst`)"
        ),
        "{}",
        stdout(&o)
    );
    let o = blazes_stdin(
        &["check", "--fail-on", "never", "-"],
        spec_delivering("Diverge", Some("Inst")).as_bytes(),
    );
    assert!(
        stdout(&o).contains("sink `sink` receives Diverge, but it tolerates at worst Inst"),
        "{}",
        stdout(&o)
    );
}

// One snapshot per spec and format (`insta::glob!`), each its own report when it changes.
#[test]
fn human_output_of_every_spec() {
    insta::glob!("../specs", "*.yaml", |p| {
        let path = relative(p);
        let o = blazes(&["check", &path]);
        assert!(o.status.code().unwrap() < 2, "{path} is a valid spec");
        insta::assert_snapshot!("human", stdout(&o));
    });
}

#[test]
fn json_output_of_every_spec() {
    insta::glob!("../specs", "*.yaml", |p| {
        let path = relative(p);
        let o = blazes(&["check", "--format", "json", &path]);
        let text = stdout(&o);
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["version"], 2);
        insta::assert_snapshot!("json", text);
    });
}

#[test]
fn output_is_deterministic() {
    let args = [
        "check",
        "--format",
        "json",
        "specs/ad-poor.yaml",
        "specs/cycle-taint.yaml",
    ];
    let a = blazes(&args);
    let b = blazes(&args);
    assert_eq!(a.stdout, b.stdout);
    let h1 = blazes(&["check", "specs/cycle-taint.yaml"]);
    let h2 = blazes(&["check", "specs/cycle-taint.yaml"]);
    assert_eq!(h1.stdout, h2.stdout);
}

#[test]
fn several_files_give_one_document_and_the_worst_exit_code() {
    let o = blazes(&[
        "check",
        "--format",
        "json",
        "specs/wordcount-sealed.yaml",
        "specs/wordcount.yaml",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["files"].as_array().unwrap().len(), 2);
    let o = blazes(&[
        "check",
        "specs/wordcount.yaml",
        "tests/fixtures/errors/empty.yaml",
    ]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn every_bad_input_exits_2_with_a_located_message() {
    assert!(yaml_files("tests/fixtures/errors").len() >= 14);
    insta::glob!("fixtures/errors/*.yaml", |p| {
        let path = relative(p);
        let o = blazes(&["check", &path]);
        assert_eq!(o.status.code(), Some(2), "{path} must be rejected");
        assert_clean_failure(&o);
        let out = stdout(&o);
        // A file with no text to show (binary) is located by the file alone, `[path]`, and
        // its message says the line and column of what made it binary.
        assert!(
            out.contains(&format!("[{path}:")) || out.contains(&format!("[{path}]")),
            "{path}: message is located:\n{out}"
        );
        insta::assert_snapshot!("error", out);
        let j = blazes(&["check", "--format", "json", &path]);
        let v: Value = serde_json::from_str(&stdout(&j)).unwrap();
        assert_eq!(v["files"][0]["status"], "invalid");
        let d = &v["files"][0]["diagnostics"][0];
        assert!(
            d["line"].as_u64().unwrap() >= 1 && d["code"].as_str().unwrap().starts_with('S'),
            "{path}: {d}"
        );
    });
}

#[test]
fn all_errors_of_a_file_are_reported_at_once() {
    let (v, _) = json_of("tests/fixtures/errors/dangling.yaml");
    assert_eq!(v["files"][0]["diagnostics"].as_array().unwrap().len(), 5);
    let (v, _) = json_of("tests/fixtures/errors/wrong-type.yaml");
    assert_eq!(v["files"][0]["diagnostics"].as_array().unwrap().len(), 6);
}

#[test]
fn a_missing_file_is_exit_2_and_the_others_still_run() {
    let o = blazes(&[
        "check",
        "--format",
        "json",
        "specs/nope.yaml",
        "specs/wordcount-sealed.yaml",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["files"][0]["diagnostics"][0]["code"], "S015");
    assert_eq!(v["files"][1]["status"], "ok");
}

#[test]
fn reads_standard_input() {
    let spec = std::fs::read(root().join("specs/wordcount.yaml")).unwrap();
    let o = blazes_stdin(&["check", "-"], &spec);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("<stdin>"));
}

#[test]
fn paper_aliases_are_accepted() {
    let spec = b"sources: { tweets: {} }\ncomponents:\n  Count:\n    Rep: true\n    annotation:\n      - { from: words, to: counts, label: OW, subscript: [word] }\nstreams:\n  - { from: tweets, to: Count.words }\n";
    let o = blazes_stdin(&["check", "--format", "json", "-"], spec);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    // An unsealed (Async) source into a replicated OW: Taint on replicas is Diverge.
    assert_eq!(v["files"][0]["sinks"][0]["name"], "Count.counts");
    assert_eq!(v["files"][0]["sinks"][0]["label"], "Diverge");
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn bom_and_crlf_are_accepted() {
    let text = std::fs::read_to_string(root().join("specs/wordcount-sealed.yaml")).unwrap();
    let mut bytes = "\u{feff}".as_bytes().to_vec();
    bytes.extend(text.replace('\n', "\r\n").as_bytes());
    let o = blazes_stdin(&["check", "-"], &bytes);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
}

#[test]
fn explain_prints_every_code_and_rejects_unknown_ones() {
    let list = blazes(&["explain"]);
    assert_eq!(list.status.code(), Some(0));
    for code in blazes::codes::ALL {
        assert!(stdout(&list).contains(code.id));
        let o = blazes(&["explain", code.id]);
        assert_eq!(o.status.code(), Some(0));
        assert!(stdout(&o).contains(code.explanation.split('\n').next().unwrap()));
    }
    let by_name = blazes(&["explain", "unordered-write"]);
    assert!(stdout(&by_name).starts_with("C001"));
    let bad = blazes(&["explain", "C01"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("did you mean"));
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(blazes(&["check"]).status.code(), Some(2));
    assert_eq!(
        blazes(&["check", "--format", "xml", "specs/wordcount.yaml"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(blazes(&["--help"]).status.code(), Some(0));
}

/// Every finding's snippets stay near its labels. A chain note in the `streams:` section far
/// below a component once merged with the component's snippet into one drawing of every line
/// in between: thousands of lines per finding on a generated fleet (2.4 GB of output for a
/// 17 MB spec, nine minutes at 100k components).
#[test]
fn human_snippets_do_not_print_the_lines_between_distant_labels() {
    let text = blazes::generator::generate(
        &blazes::generator::GenOptions::default()
            .components(1500)
            .seed(3),
    );
    let dir = std::env::temp_dir().join(format!("blazes-snippets-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("fleet.yaml");
    std::fs::write(&path, &text).unwrap();
    let out = blazes(&["check", path.to_str().unwrap()]);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(out.status.code(), Some(1));
    let report = stdout(&out);
    // Source lines drawn in a row (` 123 │ ...`): at most the context around a few labels.
    let mut run = 0;
    let mut longest = 0;
    for line in report.lines() {
        let numbered = line
            .trim_start()
            .split_once(" │")
            .is_some_and(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
        run = if numbered { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    assert!(longest > 0, "the report draws snippets");
    assert!(
        longest <= 12,
        "a snippet of {longest} source lines in a row"
    );
    assert!(
        report.len() < 40 * text.len(),
        "report of {} bytes",
        report.len()
    );
}

/// Words of the YAML parser's own states, which mean nothing to someone writing a spec.
const PARSER_WORDS: &[&str] = &[
    "while parsing",
    "while scanning",
    "block collection",
    "block mapping",
    "flow sequence",
    "flow mapping",
    "scalar",
    "indicator",
    "node content",
    "simple key",
    "EOF",
];

#[test]
fn yaml_errors_are_told_in_the_words_of_a_spec() {
    let mut syntax_errors = 0;
    for path in yaml_files("tests/fixtures/errors") {
        let (v, _) = json_of(&path);
        for d in v["files"][0]["diagnostics"].as_array().unwrap() {
            if d["code"] != "S001" {
                continue;
            }
            syntax_errors += 1;
            let text = format!("{} {}", d["message"], d["help"]);
            for word in PARSER_WORDS {
                assert!(!text.contains(word), "{path}: `{word}` in {text}");
            }
        }
    }
    assert!(
        syntax_errors >= 14,
        "{syntax_errors} YAML errors among the fixtures"
    );
    // Negative control: the parser's own message for a fixture, which this test exists to keep
    // out of the output, does contain such words.
    let text =
        std::fs::read_to_string(root().join("tests/fixtures/errors/yaml-field-in-list.yaml"))
            .unwrap();
    let raw = serde_saphyr::from_str::<serde_json::Value>(&text)
        .unwrap_err()
        .to_string();
    assert!(
        PARSER_WORDS.iter().any(|w| raw.contains(w)),
        "the parser's wording: {raw}"
    );
}

#[test]
fn standard_input_given_twice_is_a_usage_error() {
    let spec = std::fs::read(root().join("specs/wordcount.yaml")).unwrap();
    // Refused before anything is read.
    let o = blazes_stdin(&["check", "-", "-"], b"");
    assert_eq!(o.status.code(), Some(2));
    assert!(stdout(&o).is_empty(), "{}", stdout(&o));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("standard input"), "{err}");
    // Once is fine, also next to a file.
    let o = blazes_stdin(&["check", "-", "specs/wordcount-sealed.yaml"], &spec);
    assert_eq!(o.status.code(), Some(1));
}

/// The two edits the help of an implicit sink asks for, read back out of it.
fn sink_declaration(help: &str) -> (String, String) {
    let quoted: Vec<&str> = help.split('`').skip(1).step_by(2).collect();
    let stream = quoted.iter().find(|q| q.starts_with("- {")).unwrap();
    let sink = quoted.iter().find(|q| q.contains("tolerate:")).unwrap();
    (stream.to_string(), sink.to_string())
}

#[test]
fn the_help_of_an_implicit_sink_says_how_to_declare_it_and_following_it_works() {
    let spec = "sources:\n  words: {}\ncomponents:\n  Count:\n    paths:\n      - { from: words, to: counts, label: OW, gate: [word] }\nstreams:\n  - { from: words, to: Count.words }\n";
    let o = blazes_stdin(&["check", "--format", "json", "-"], spec.as_bytes());
    assert_eq!(o.status.code(), Some(1));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let d = v["files"][0]["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["code"] == "C004")
        .unwrap()
        .clone();
    let help = d["help"].as_str().unwrap();
    let (stream, sink) = sink_declaration(help);
    // The sink is named after the output.
    assert_eq!(stream, "- { from: Count.counts, to: counts }", "{help}");
    assert_eq!(sink, "counts: { tolerate: Run }", "{help}");
    let declared = format!("{spec}  {stream}\nsinks:\n  {sink}\n");
    let o = blazes_stdin(&["check", "-"], declared.as_bytes());
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    // Negative control: the sink declared without the tolerance still fails.
    let half = format!("{spec}  {stream}\nsinks:\n  counts: {{}}\n");
    let o = blazes_stdin(&["check", "-"], half.as_bytes());
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    // A name already taken by a source or sink is not proposed.
    let taken = spec.replace("  words: {}\n", "  words: {}\n  counts: {}\n");
    let o = blazes_stdin(&["check", "--format", "json", "-"], taken.as_bytes());
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let help = v["files"][0]["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["code"] == "C004")
        .unwrap()["help"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(help.contains("to: Count_counts }"), "{help}");
}

/// The analysis's internal vocabulary, which reports must not show users.
const INTERNAL_WORDS: &[&str] = &[
    "taint",
    "Taint",
    "ndread",
    "NDRead",
    "NdRead",
    "Unreached",
    "unreached",
    "[]",
    "``",
    " 1 components",
    " 1 streams",
];

/// What the output of `args` says, without what the user wrote (spec paths and names such as
/// `cycle-taint`, the YAML quoted in helps), code names and SARIF's rule texts (`blazes
/// explain`'s).
fn said(args: &[&str]) -> String {
    let o = blazes(args);
    let mut text = stdout(&o);
    if args.contains(&"sarif") {
        let mut v: Value = serde_json::from_str(&text).unwrap();
        v["runs"][0]["tool"] = Value::Null;
        text = v.to_string();
    }
    // C007's name, `unreached`, is a stable identifier of the code (`blazes explain unreached`).
    text.replace("cycle-taint", "NAME")
        .replace("C007(unreached)", "CODE")
        .replace("C007 unreached", "CODE")
        .replace("\"name\": \"unreached\"", "CODE")
        .replace("\"name\":\"unreached\"", "CODE")
        .replace("name: unreached", "CODE")
        .replace("\"ruleId\":\"C007\"", "CODE")
        .replace("`seal: []`", "YAML")
        .replace(": []", ": JSON")
        .replace(":[]", ":JSON")
}

#[test]
fn reports_use_no_internal_words() {
    let mut specs = yaml_files("specs");
    specs.extend(yaml_files("tests/fixtures/accepted"));
    let bounded = "tests/fixtures/accepted/bounded.yaml";
    assert!(
        specs.iter().any(|s| s == bounded),
        "{bounded} is checked too"
    );
    for path in &specs {
        let runs: Vec<Vec<&str>> = vec![
            vec!["check", path],
            vec!["check", "--format", "json", path],
            vec!["check", "--format", "github", path],
            vec!["check", "--format", "sarif", path],
            vec!["plan", path],
            vec!["plan", "--format", "json", path],
            vec!["plan", "--format", "yaml", path],
        ];
        for args in runs {
            let text = said(&args);
            for word in INTERNAL_WORDS {
                assert!(!text.contains(word), "{args:?} says `{word}`:\n{text}");
            }
        }
    }
    // Negative control: the same search finds a word in the same output when it is there
    // (the spec's own name, which `said` leaves out as the user's).
    let raw = stdout(&blazes(&[
        "check",
        "--format",
        "json",
        "specs/cycle-taint.yaml",
    ]));
    assert!(INTERNAL_WORDS.iter().any(|w| raw.contains(w)));
}
