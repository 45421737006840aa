//! `blazes check --format sarif`: the document GitHub code scanning ingests. Snapshot, the
//! structural promises (rules, locations, UTF-16 columns, fingerprints), and Microsoft's SARIF
//! Multitool as the validator when it is installed.

mod common;

use std::process::Command;

use common::*;
use serde_json::Value;

fn sarif(args: &[&str]) -> (Value, String, i32) {
    let mut all = vec!["check", "--format", "sarif"];
    all.extend_from_slice(args);
    let o = blazes(&all);
    let text = stdout(&o);
    let v: Value = serde_json::from_str(&text).expect("SARIF is JSON");
    (v, text, o.status.code().unwrap())
}

fn specs_and_an_error() -> Vec<String> {
    let mut v = yaml_files("specs");
    v.push("tests/fixtures/errors/dangling.yaml".into());
    v.push("tests/fixtures/errors/invalid-yaml.yaml".into());
    v
}

#[test]
fn snapshot_of_every_spec_in_one_log() {
    let files = specs_and_an_error();
    let args: Vec<&str> = files.iter().map(String::as_str).collect();
    let (_, text, code) = sarif(&args);
    // The version is part of the log; keep the snapshot stable across releases.
    let text = text.replace(env!("CARGO_PKG_VERSION"), "[version]");
    insta::assert_snapshot!("sarif-all", text);
    assert_eq!(code, 2, "the worst exit code over the files");
}

#[test]
fn one_run_with_rules_from_the_registry() {
    let (v, _, code) = sarif(&["specs/wordcount.yaml"]);
    assert_eq!(code, 1);
    assert_eq!(v["version"], "2.1.0");
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    assert_eq!(run["columnKind"], "utf16CodeUnits");
    let driver = &run["tool"]["driver"];
    assert_eq!(driver["name"], "blazes");
    assert_eq!(driver["version"], env!("CARGO_PKG_VERSION"));
    assert!(
        driver["informationUri"]
            .as_str()
            .unwrap()
            .starts_with("https://")
    );
    let rules = driver["rules"].as_array().unwrap();
    assert_eq!(rules.len(), blazes::codes::ALL.len());
    for (r, c) in rules.iter().zip(blazes::codes::ALL) {
        assert_eq!(r["id"], c.id);
        assert_eq!(r["defaultConfiguration"]["level"], c.severity.as_str());
        assert!(
            r["fullDescription"]["text"]
                .as_str()
                .unwrap()
                .starts_with(c.explanation.trim_end_matches('.'))
        );
        assert!(
            r["help"]["text"].as_str().unwrap().contains(c.explanation),
            "help is `blazes explain`'s text"
        );
    }
    for res in run["results"].as_array().unwrap() {
        let id = res["ruleId"].as_str().unwrap();
        let idx = res["ruleIndex"].as_u64().unwrap() as usize;
        assert_eq!(rules[idx]["id"], id);
        let loc = &res["locations"][0]["physicalLocation"];
        assert_eq!(loc["artifactLocation"]["uri"], "specs/wordcount.yaml");
        assert_eq!(loc["artifactLocation"]["uriBaseId"], "%SRCROOT%");
        for k in ["startLine", "startColumn", "endLine", "endColumn"] {
            assert!(loc["region"][k].as_u64().unwrap() >= 1, "{k}");
        }
        assert!(res["partialFingerprints"]["blazes/v2"].is_string());
        assert_eq!(
            res["partialFingerprints"]["blazes/v2"],
            res["partialFingerprints"]["primaryLocationLineHash"],
            "GitHub reads only primaryLocationLineHash: it carries our identity"
        );
    }
    // The provenance chain of the unordered write: the streams that brought Async to Count.
    let c001 = run["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["ruleId"] == "C001")
        .unwrap();
    assert!(!c001["relatedLocations"].as_array().unwrap().is_empty());
}

#[test]
fn exit_code_is_the_worst_over_the_files() {
    assert_eq!(sarif(&["specs/wordcount-sealed.yaml"]).2, 0);
    assert_eq!(
        sarif(&["specs/wordcount-sealed.yaml", "specs/wordcount.yaml"]).2,
        1
    );
    let (v, _, code) = sarif(&[
        "specs/wordcount.yaml",
        "tests/fixtures/errors/dangling.yaml",
        "specs/wordcount-sealed.yaml",
    ]);
    assert_eq!(code, 2);
    assert_eq!(
        v["runs"].as_array().unwrap().len(),
        1,
        "one document for all files"
    );
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("blazes-sarif-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn sarif_in(dir: &std::path::Path, file: &str) -> Value {
    let o = Command::new(env!("CARGO_BIN_EXE_blazes"))
        .args(["check", "--format", "sarif", file])
        .current_dir(dir)
        .output()
        .unwrap();
    serde_json::from_slice(&o.stdout).unwrap()
}

fn fingerprints_and_lines(v: &Value) -> Vec<(String, String, u64)> {
    v["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["ruleId"].as_str().unwrap().to_string(),
                r["partialFingerprints"]["blazes/v2"]
                    .as_str()
                    .unwrap()
                    .to_string(),
                r["locations"][0]["physicalLocation"]["region"]["startLine"]
                    .as_u64()
                    .unwrap(),
            )
        })
        .collect()
}

#[test]
fn fingerprints_survive_unrelated_lines_moving() {
    let spec = std::fs::read_to_string(root().join("specs/ad-poor.yaml")).unwrap();
    let (a, b) = (temp_dir("fp-a"), temp_dir("fp-b"));
    std::fs::create_dir_all(a.join("specs")).unwrap();
    std::fs::create_dir_all(b.join("specs")).unwrap();
    std::fs::write(a.join("specs/ad.yaml"), &spec).unwrap();
    std::fs::write(
        b.join("specs/ad.yaml"),
        format!("# a new comment\n# and another\n\n{spec}"),
    )
    .unwrap();
    let fa = fingerprints_and_lines(&sarif_in(&a, "specs/ad.yaml"));
    let fb = fingerprints_and_lines(&sarif_in(&b, "specs/ad.yaml"));
    assert_eq!(fa.len(), fb.len());
    assert!(!fa.is_empty());
    for (x, y) in fa.iter().zip(&fb) {
        assert_eq!(x.0, y.0);
        assert_eq!(x.1, y.1, "{} keeps its fingerprint", x.0);
        assert_eq!(x.2 + 3, y.2, "while its line moved");
    }
    let mut unique: Vec<_> = fa.iter().map(|f| &f.1).collect();
    unique.sort();
    unique.dedup();
    assert_eq!(
        unique.len(),
        fa.len(),
        "fingerprints are distinct within a file"
    );
    // Absolute paths under the working directory become relative URIs too.
    let abs = a.join("specs/ad.yaml");
    let v = sarif_in(&a, abs.to_str().unwrap());
    assert_eq!(
        v["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
        "specs/ad.yaml"
    );
    let _ = std::fs::remove_dir_all(&a);
    let _ = std::fs::remove_dir_all(&b);
}

#[test]
fn columns_are_utf16_code_units() {
    // `w😀rds` puts a character outside the BMP before the OW label: one char, two UTF-16
    // code units, so SARIF's column is one more than the character column JSON reports.
    let spec = std::fs::read_to_string(root().join("specs/wordcount.yaml"))
        .unwrap()
        .replace("words", "w😀rds");
    let d = temp_dir("utf16");
    std::fs::write(d.join("w.yaml"), &spec).unwrap();
    let v = sarif_in(&d, "w.yaml");
    let o = Command::new(env!("CARGO_BIN_EXE_blazes"))
        .args(["check", "--format", "json", "w.yaml"])
        .current_dir(&d)
        .output()
        .unwrap();
    let j: Value = serde_json::from_slice(&o.stdout).unwrap();
    let jd = j["files"][0]["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["code"] == "C001")
        .unwrap();
    let sr = v["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["ruleId"] == "C001")
        .unwrap();
    let region = &sr["locations"][0]["physicalLocation"]["region"];
    assert_eq!(region["startLine"], jd["line"]);
    assert_eq!(
        region["startColumn"].as_u64().unwrap(),
        jd["column"].as_u64().unwrap() + 1
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// The validator, when installed (`scripts/validate-sarif` installs it; CI runs that too).
fn multitool() -> Option<std::path::PathBuf> {
    if let Some(p) = std::env::var_os("SARIF_MULTITOOL") {
        return Some(p.into());
    }
    // Where scripts/validate-sarif installs it.
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(".cache")));
    if let Some(c) = cache {
        let p = c.join(
            "blazes/sarif-multitool/node_modules/@microsoft/sarif-multitool-linux/Sarif.Multitool",
        );
        if p.is_file() {
            return Some(p);
        }
    }
    let found = Command::new("Sarif.Multitool")
        .arg("--version")
        .env("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT", "1")
        .output();
    found
        .is_ok_and(|o| o.status.success())
        .then(|| "Sarif.Multitool".into())
}

const INSTALL: &str = "install it with scripts/validate-sarif (needs npm; it installs \
@microsoft/sarif-multitool-linux into ~/.cache/blazes), or set SARIF_MULTITOOL to a Sarif.Multitool";

/// What a missing validator means, given the value of `CI`.
fn when_validator_missing(ci: Option<&str>) -> Result<String, String> {
    missing_tool("the SARIF validator (Sarif.Multitool)", INSTALL, ci)
}

#[test]
fn a_missing_validator_fails_under_ci_and_skips_elsewhere() {
    let err = when_validator_missing(Some("true")).unwrap_err();
    assert!(
        err.contains("scripts/validate-sarif") && err.contains("npm"),
        "{err}"
    );
    assert!(when_validator_missing(Some("1")).is_err());
    // The negative control: outside CI the same harness skips.
    assert!(when_validator_missing(None).is_ok());
    assert!(when_validator_missing(Some("false")).is_ok());
    assert!(when_validator_missing(Some("")).is_ok());
}

fn multitool_or_skip() -> Option<std::path::PathBuf> {
    let tool = multitool();
    require_tool(
        tool.is_some(),
        "the SARIF validator (Sarif.Multitool)",
        INSTALL,
    );
    tool
}

/// A composed spec's log (findings in used files, `artifactLocation` of each) passes the
/// validator as the flat specs' do.
#[test]
fn microsoft_validator_accepts_a_composed_spec() {
    let Some(tool) = multitool_or_skip() else {
        return;
    };
    let (v, text, _) = sarif(&["specs/system/poor.yaml", "specs/system/sealed.yaml"]);
    let uris: Vec<&str> = v["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].as_str())
        .collect();
    assert!(
        uris.contains(&"specs/system/services/report.yaml"),
        "{uris:?}"
    );
    validate(&tool, &text, "validate-composed");
}

/// Runs the validator on `text`; fails on any error or warning it reports.
fn validate(tool: &std::path::Path, text: &str, dir: &str) {
    let d = temp_dir(dir);
    let input = d.join("in.sarif");
    let output = d.join("out.sarif");
    std::fs::write(&input, text).unwrap();
    let o = Command::new(tool)
        .args(["validate", "-o"])
        .arg(&output)
        .arg(&input)
        .env("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT", "1")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "validator failed: {}{}",
        stdout(&o),
        stderr(&o)
    );
    let report: Value = serde_json::from_slice(&std::fs::read(&output).unwrap()).unwrap();
    let problems: Vec<String> = report["runs"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["results"].as_array().cloned().unwrap_or_default())
        .filter(|r| matches!(r["level"].as_str(), Some("error") | Some("warning") | None))
        .map(|r| format!("{}: {}", r["ruleId"], r["message"]))
        .collect();
    assert!(
        problems.is_empty(),
        "validator findings:\n{}",
        problems.join("\n")
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn microsoft_validator_reports_no_error_or_warning() {
    let Some(tool) = multitool_or_skip() else {
        return;
    };
    let files = specs_and_an_error();
    let args: Vec<&str> = files.iter().map(String::as_str).collect();
    let (_, text, _) = sarif(&args);
    validate(&tool, &text, "validate");
}

fn results(v: &Value) -> Vec<Value> {
    v["runs"][0]["results"].as_array().unwrap().clone()
}

/// The sink names a result's message links to (`[`name`](n)` with n > 1; 1 is the origin).
fn linked_sinks(r: &Value) -> Vec<String> {
    let text = r["message"]["text"].as_str().unwrap();
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("[`") {
        let after = &rest[i + 2..];
        let Some(j) = after.find("`](") else { break };
        let id: String = after[j + 3..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        if id.parse::<u64>().unwrap() > 1 {
            out.push(after[..j].to_string());
        }
        rest = &after[j..];
    }
    out
}

#[test]
fn one_result_per_point_of_order_with_the_sinks_it_breaks() {
    let files = yaml_files("specs");
    let args: Vec<&str> = files.iter().map(String::as_str).collect();
    let (v, _, _) = sarif(&args);
    let mut all = vec!["check", "--format", "json"];
    all.extend(args.iter().copied());
    let json: Value = serde_json::from_str(&stdout(&blazes(&all))).unwrap();
    let mut grouped_sinks = 0;
    for (file, f) in files.iter().zip(json["files"].as_array().unwrap()) {
        let of_file: Vec<Value> = results(&v)
            .into_iter()
            .filter(|r| {
                r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == file.as_str()
            })
            .collect();
        let diags = f["diagnostics"].as_array().unwrap();
        let points = diags
            .iter()
            .filter(|d| matches!(d["code"].as_str(), Some("C001" | "C002" | "C003")))
            .count();
        let point_results: Vec<&Value> = of_file
            .iter()
            .filter(|r| matches!(r["ruleId"].as_str(), Some("C001" | "C002" | "C003")))
            .collect();
        assert_eq!(
            point_results.len(),
            points,
            "{file}: one result per point of order"
        );
        // Every failing sink is reported exactly once: linked from the point that causes it,
        // or as a C004 result of its own.
        let mut reported: Vec<String> =
            point_results.iter().flat_map(|r| linked_sinks(r)).collect();
        grouped_sinks += reported.len();
        for r in of_file.iter().filter(|r| r["ruleId"] == "C004") {
            let m = r["message"]["text"].as_str().unwrap();
            let name = m.split('`').nth(1).unwrap();
            reported.push(name.to_string());
        }
        reported.sort();
        let mut failing: Vec<String> = f["sinks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["failing"] == true)
            .map(|s| s["name"].as_str().unwrap().to_string())
            .collect();
        failing.sort();
        assert_eq!(reported, failing, "{file}: each failing sink once");
        // The C004 help names the point a sink is grouped under.
        for r in &point_results {
            let component = r["message"]["text"]
                .as_str()
                .unwrap()
                .split(' ')
                .next()
                .unwrap();
            for sink in linked_sinks(r) {
                let help = diags
                    .iter()
                    .find(|d| {
                        d["code"] == "C004"
                            && d["message"]
                                .as_str()
                                .unwrap()
                                .contains(&format!("`{sink}` "))
                    })
                    .and_then(|d| d["help"].as_str())
                    .unwrap();
                assert!(
                    help.contains(&format!("point of order at {component} ")),
                    "{file}: {sink}: {help}"
                );
            }
        }
    }
    assert!(
        grouped_sinks > 0,
        "some sinks are grouped under their cause"
    );
}

#[test]
fn every_link_in_a_message_is_a_related_location() {
    let files = specs_and_an_error();
    let args: Vec<&str> = files.iter().map(String::as_str).collect();
    let (v, _, _) = sarif(&args);
    let mut links = 0;
    for r in results(&v) {
        let text = r["message"]["text"].as_str().unwrap();
        let ids: Vec<u64> = r["relatedLocations"]
            .as_array()
            .map(|a| a.iter().map(|l| l["id"].as_u64().unwrap()).collect())
            .unwrap_or_default();
        for (i, _) in text.match_indices("](") {
            let id: String = text[i + 2..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            if let Ok(id) = id.parse::<u64>() {
                assert!(
                    ids.contains(&id),
                    "link ({id}) without a related location: {text}"
                );
                links += 1;
            }
        }
    }
    assert!(links > 0);
}

/// A generated spec with many findings, in a temporary directory.
fn generated(components: &str) -> (std::path::PathBuf, String) {
    let d = temp_dir(&format!("gen-{components}"));
    let spec = d.join("gen.yaml");
    let o = blazes(&[
        "gen",
        "--components",
        components,
        "--seed",
        "3",
        "-o",
        spec.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    (d, spec.to_str().unwrap().to_string())
}

#[test]
fn a_log_over_the_limit_keeps_the_most_severe_and_says_how_many_were_left_out() {
    let (d, spec) = generated("400");
    let (full, _, _) = sarif(&["--max-results", "100000", &spec]);
    let all = results(&full);
    assert!(all.len() > 20, "the generated spec has many findings");
    assert!(
        full["runs"][0]["invocations"][0]["toolExecutionNotifications"].is_null(),
        "nothing left out, nothing said"
    );
    let (cut, text, _) = sarif(&["--max-results", "7", &spec]);
    let kept = results(&cut);
    assert_eq!(kept.len(), 7);
    let note = &cut["runs"][0]["invocations"][0]["toolExecutionNotifications"][0];
    assert_eq!(note["level"], "warning");
    let msg = note["message"]["text"].as_str().unwrap();
    assert!(
        msg.starts_with(&format!(
            "{} of {} results were left out",
            all.len() - 7,
            all.len()
        )) || msg.contains(&format!("of {} results", all.len())),
        "{msg}"
    );
    assert!(msg.contains("--max-results"), "{msg}");
    // The most severe: no kept result is less severe than a left-out one.
    let level = |r: &Value| if r["level"] == "error" { 0 } else { 1 };
    let worst_kept = kept.iter().map(level).max().unwrap();
    let fps: Vec<&Value> = kept
        .iter()
        .map(|r| &r["partialFingerprints"]["blazes/v2"])
        .collect();
    for r in &all {
        if !fps.contains(&&r["partialFingerprints"]["blazes/v2"]) {
            assert!(
                level(r) >= worst_kept,
                "a left-out result is more severe than a kept one"
            );
        }
    }
    // Kept results are the same results, with the same fingerprints, in the same order.
    let positions: Vec<usize> = fps
        .iter()
        .map(|fp| {
            all.iter()
                .position(|r| &&r["partialFingerprints"]["blazes/v2"] == fp)
                .unwrap()
        })
        .collect();
    assert!(
        positions.windows(2).all(|w| w[0] < w[1]),
        "output order kept"
    );
    for (k, &p) in kept.iter().zip(&positions) {
        assert_eq!(k, &all[p]);
    }
    // Deterministic, byte for byte.
    assert_eq!(sarif(&["--max-results", "7", &spec]).1, text);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn max_results_must_be_a_positive_number() {
    for bad in ["0", "-3", "many"] {
        let o = blazes(&[
            "check",
            "--format",
            "sarif",
            "--max-results",
            bad,
            "specs/wordcount.yaml",
        ]);
        assert_eq!(o.status.code(), Some(2), "{bad}");
        // (`-3` reads as an unknown flag to clap; it is still refused.)
        assert!(
            stderr(&o).contains("--max-results") || bad.starts_with('-'),
            "{}",
            stderr(&o)
        );
    }
}

#[test]
fn a_point_of_order_keeps_its_fingerprint_when_its_labels_and_text_change() {
    let spec = std::fs::read_to_string(root().join("specs/wordcount.yaml")).unwrap();
    let fp_of = |name: &str, text: &str| {
        let d = temp_dir(name);
        std::fs::write(d.join("wc.yaml"), text).unwrap();
        let v = sarif_in(&d, "wc.yaml");
        let _ = std::fs::remove_dir_all(&d);
        let c001 = results(&v)
            .into_iter()
            .find(|r| r["ruleId"] == "C001")
            .unwrap();
        (
            c001["partialFingerprints"]["primaryLocationLineHash"].clone(),
            c001["message"]["text"].as_str().unwrap().to_string(),
        )
    };
    let (base, base_text) = fp_of("fp-base", &spec);
    // Replicated, with another gate order: the message and the line change, the finding is
    // the same point of order.
    let edited = spec
        .replace(
            "  Count:\n    paths:",
            "  Count:\n    replicas: 3\n    paths:",
        )
        .replace("gate: [word, batch]", "gate: [batch, word]");
    let (same, same_text) = fp_of("fp-edited", &edited);
    assert_ne!(
        base_text, same_text,
        "the edit changes what the result says"
    );
    assert_eq!(base, same, "but not its identity");
    // Negative control: another component is another finding.
    let (other, _) = fp_of("fp-renamed", &spec.replace("Count", "Tally"));
    assert_ne!(base, other);
}

/// An implicit sink whose name (501 characters) is longer than a message keeps is still
/// grouped under the point of order that causes it: one C001 result linking the sink, no C004
/// result of its own. The control: its C004 message is cut before the name ends, so a search
/// of the message for the name (how the grouping once found a diagnostic's sink) finds nothing.
#[test]
fn a_sink_named_past_the_message_cut_is_grouped_under_its_cause() {
    let (path, sink) = long_implicit_sink("sarif");
    let spec = path.to_str().unwrap();
    let json: Value =
        serde_json::from_str(&stdout(&blazes(&["check", "--format", "json", spec]))).unwrap();
    assert_message_hides_the_name(&json, &sink);
    let (v, _, code) = sarif(&[spec]);
    assert_eq!(code, 1);
    let rs = results(&v);
    let rules: Vec<&str> = rs.iter().map(|r| r["ruleId"].as_str().unwrap()).collect();
    assert_eq!(rules, ["C001"], "the sink is not a result of its own");
    assert_eq!(linked_sinks(&rs[0]), vec![sink]);
    let text = rs[0]["message"]["text"].as_str().unwrap();
    assert!(text.contains(" It makes 1 sink fail: "), "{text}");
}
