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
        assert!(res["partialFingerprints"]["blazes/v1"].is_string());
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
                r["partialFingerprints"]["blazes/v1"]
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

#[test]
fn microsoft_validator_reports_no_error_or_warning() {
    let Some(tool) = multitool() else {
        eprintln!(
            "notice: Sarif.Multitool is not installed; skipping SARIF validation (run scripts/validate-sarif)"
        );
        return;
    };
    let files = specs_and_an_error();
    let args: Vec<&str> = files.iter().map(String::as_str).collect();
    let (_, text, _) = sarif(&args);
    let d = temp_dir("validate");
    let input = d.join("in.sarif");
    let output = d.join("out.sarif");
    std::fs::write(&input, text).unwrap();
    let o = Command::new(&tool)
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
