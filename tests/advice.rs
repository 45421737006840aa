//! The help of a point of order names only fixes that remove it (issue 23 §2). Through the
//! binary on the two specs where the old help was wrong (an `OW` behind an `OW`, a shopping
//! cart): the help names the seal that reaches the point, and the spec edited as it says has no
//! such point while the old help's edit leaves it. Through the library on every shipped spec
//! and seeded planner specs: every fix the advice verified with the incremental labeling
//! removes its point in the full analysis, and no part of a seal combination can be left out
//! (the negative control: the fix minus one part fails in the same harness).

use std::path::{Path, PathBuf};
use std::process::Command;

use blazes::analysis::{self, FailOn, PointOfOrder};
use blazes::graph::{self, Dataflow};
use blazes::plan::Choice;
use blazes::plan::advice::{Fix, verified_fixes};
use blazes::{generator, spec};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `blazes check --format json` of a spec text: the help of each finding, with its code and
/// message.
fn helps(text: &str) -> Vec<(String, String, String)> {
    let dir = std::env::temp_dir().join(format!("blazes-advice-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!(
        "{:x}.yaml",
        text.len() * 31 + text.bytes().map(usize::from).sum::<usize>()
    ));
    std::fs::write(&file, text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_blazes"))
        .args(["check", "--format", "json"])
        .arg(&file)
        .output()
        .expect("blazes runs");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let mut v = Vec::new();
    for f in doc["files"].as_array().unwrap() {
        for d in f["diagnostics"].as_array().unwrap() {
            v.push((
                d["code"].as_str().unwrap().to_string(),
                d["message"].as_str().unwrap().to_string(),
                d["help"].as_str().unwrap_or("").to_string(),
            ));
        }
    }
    v
}

/// The help of the one finding of `code` whose message starts with `component`.
fn help_of(text: &str, code: &str, component: &str) -> Option<String> {
    helps(text)
        .into_iter()
        .find(|(c, m, _)| c == code && m.starts_with(&format!("{component} ")))
        .map(|(_, _, h)| h)
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(root().join("tests/fixtures/advice").join(name)).unwrap()
}

#[test]
fn an_ow_behind_an_ow_is_told_to_have_the_first_punctuate_not_only_the_source_seal() {
    let text = fixture("ow-behind-ow.yaml");
    let help = help_of(&text, "C001", "Top").expect("Top's unordered write");
    assert_ne!(
        help,
        "ask source `src` to seal on `batch` (it declares it sealable) and buffer each partition at Top (a seal barrier)",
        "the old help, which cannot reach Top"
    );
    assert!(
        help.starts_with("ask source `src` to seal on `batch` (it declares it sealable) and Count to punctuate its output `counts` per `batch` (`seal: [batch]` on the stream Count.counts -> Top.counts"),
        "{help}"
    );
    assert!(
        help.contains("; or order Top's inputs per (batch): `order: [batch]`"),
        "{help}"
    );
    // The help, done: both seals. Top's point is gone (and so is Count's).
    let done = text
        .replace("src: { sealable: [[batch]] }", "src: { seal: [batch] }")
        .replace(
            "{ from: Count.counts, to: Top.counts }",
            "{ from: Count.counts, to: Top.counts, seal: [batch] }",
        );
    assert_eq!(help_of(&done, "C001", "Top"), None);
    // The old help, done: the seal is consumed at Count, Top still writes unordered.
    let old = text.replace("src: { sealable: [[batch]] }", "src: { seal: [batch] }");
    assert!(help_of(&old, "C001", "Top").is_some());
    // So is the punctuation alone: Count's output is `Run` while its own input is unsealed.
    let alone = text.replace(
        "{ from: Count.counts, to: Top.counts }",
        "{ from: Count.counts, to: Top.counts, seal: [batch] }",
    );
    assert!(help_of(&alone, "C001", "Top").is_some());
}

#[test]
fn a_cart_store_is_told_to_seal_its_output_per_cart() {
    let text = fixture("cart.yaml");
    let help = help_of(&text, "C002", "Billing").expect("Billing's unprotected read");
    assert!(
        help.starts_with("ask source `clients` to seal on `cart` (it declares it sealable) and Store to punctuate its output `contents` per `cart` (`seal: [cart]` on the stream Store.contents -> Billing.contents"),
        "{help}"
    );
    assert!(help.contains("`order: [cart]`"), "{help}");
    let done = text
        .replace(
            "clients: { sealable: [[cart]] }",
            "clients: { seal: [cart] }",
        )
        .replace(
            "{ from: Store.contents, to: Billing.contents }",
            "{ from: Store.contents, to: Billing.contents, seal: [cart] }",
        );
    assert_eq!(help_of(&done, "C002", "Billing"), None);
    assert!(
        helps(&done).iter().all(|(c, _, _)| c != "C004"),
        "the cart is safe"
    );
    // What main's help said: the clients' seal alone leaves the read unprotected.
    let old = text.replace(
        "clients: { sealable: [[cart]] }",
        "clients: { seal: [cart] }",
    );
    assert!(help_of(&old, "C002", "Billing").is_some());
    // The store's own help is the clients' seal alone, which does fix the store.
    let store = help_of(&text, "C001", "Store").expect("Store's unordered write");
    assert!(
        store.starts_with("ask source `clients` to seal on `cart` (it declares it sealable) and buffer each partition at Store (a seal barrier)"),
        "{store}"
    );
    assert_eq!(help_of(&old, "C001", "Store"), None);
}

/// A dataflow and its analysis.
fn analysed(text: &str) -> (Dataflow, analysis::Analysis) {
    let (spec, diags) = spec::parse(text, &spec::Limits::default());
    assert!(
        diags
            .iter()
            .all(|d| d.severity != blazes::diagnostic::Severity::Error),
        "{diags:?}"
    );
    let (mut df, _) = graph::build(spec.expect("a spec"), "spec");
    let a = analysis::verdicts(&mut df, FailOn::default());
    (df, a)
}

/// Whether the full analysis of `df` with `fix` (its parts in `keep`) applied still has the
/// point.
fn still_there(
    df: &Dataflow,
    keys: &blazes::label::Keys,
    point: &PointOfOrder,
    fix: &Fix,
    keep: &dyn Fn(usize) -> bool,
) -> bool {
    let mut d = df.clone();
    d.keys = keys.clone();
    let mut part = 0;
    for &ch in &fix.choices {
        if keep(part) {
            match ch {
                Choice::AddSeal { source, key } => d.sources[source.index()].seal = Some(key),
                Choice::SealStream { stream, key } => d.streams[stream.index()].seal = Some(key),
                Choice::Order { component, order } => {
                    d.components[component.index()].order = Some(order)
                }
            }
        }
        part += 1;
    }
    for &(s, k) in &fix.streams {
        if keep(part) {
            d.streams[s.index()].seal = Some(k);
        }
        part += 1;
    }
    let a = analysis::verdicts(&mut d, FailOn::default());
    a.points
        .iter()
        .any(|p| p.component == point.component && p.path == point.path && p.kind == point.kind)
}

/// Every verified fix of `text`'s points removes its point in the full analysis, and every
/// part of it is needed; returns (fixes, fixes of several parts) checked.
fn check_fixes(text: &str, what: &str) -> (usize, usize) {
    let (df, a) = analysed(text);
    let (keys, fixes) = verified_fixes(&df, &a, FailOn::default());
    let (mut n, mut combos) = (0, 0);
    for (point, fixes) in a.points.iter().zip(&fixes) {
        for w in fixes.windows(2) {
            assert!(w[0].cost <= w[1].cost, "{what}: cheapest first: {fixes:?}");
        }
        for fix in fixes {
            n += 1;
            assert!(
                !still_there(&df, &keys, point, fix, &|_| true),
                "{what}: {fix:?} was verified but leaves {point:?}"
            );
            let parts = fix.choices.len() + fix.streams.len();
            if parts > 1 {
                combos += 1;
                for left_out in 0..parts {
                    assert!(
                        still_there(&df, &keys, point, fix, &|i| i != left_out),
                        "{what}: {fix:?} without part {left_out} still removes {point:?}"
                    );
                }
            }
        }
    }
    (n, combos)
}

fn specs_in(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    v.sort();
    v
}

#[test]
fn every_verified_fix_removes_its_point_in_the_full_analysis_and_needs_each_part() {
    let (mut n, mut combos) = (0, 0);
    let mut files = specs_in(&root().join("specs"));
    files.extend(specs_in(&root().join("tests/fixtures/advice")));
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let (a, b) = check_fixes(&text, &f.display().to_string());
        n += a;
        combos += b;
    }
    for seed in 0..200 {
        let (a, b) = check_fixes(&generator::random::seeded(seed), &format!("seed {seed}"));
        n += a;
        combos += b;
    }
    // The harness saw fixes, and combinations whose parts it could leave out.
    assert!(n > 100, "{n} fixes checked");
    assert!(combos >= 2, "{combos} combinations checked");
}

#[test]
fn the_analysis_alone_leaves_these_helps_to_the_planner() {
    // Without `plan::advise` the help names `blazes plan` and suggests nothing it has not
    // checked: the library's `analysis::analyze` is not wrong either.
    let text = fixture("ow-behind-ow.yaml");
    let (spec, _) = spec::parse(&text, &spec::Limits::default());
    let (mut df, _) = graph::build(spec.unwrap(), "spec");
    let a = analysis::analyze(&mut df, FailOn::default());
    let top = a
        .diagnostics
        .iter()
        .find(|d| d.code.id == "C001" && d.message.starts_with("Top "))
        .unwrap();
    assert_eq!(top.help.as_deref(), Some(analysis::PLAN_HELP));
    assert!(analysis::needs_advice(top));
}

/// `blazes check --format FORMAT` of a shipped spec.
fn formatted(format: &str, spec: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_blazes"))
        .args(["check", "--format", format, spec])
        .current_dir(root())
        .output()
        .expect("blazes runs");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_transient_write_names_where_its_inst_comes_from_in_sarif_and_github() {
    // ad-poor-replicated-cache: the Cache writes the `Inst` that Report's unprotected read
    // makes; the stream is `Async` until Report.response, three streams from `clients`.
    let spec = "specs/ad-poor-replicated-cache.yaml";
    let text = std::fs::read_to_string(root().join(spec)).unwrap();
    let line = 1 + text
        .lines()
        .position(|l| l.contains("{ from: Report.response, to: Cache.response }"))
        .unwrap();
    let github = formatted("github", spec);
    let c003 = github.lines().find(|l| l.contains("title=C003")).unwrap();
    assert!(
        c003.contains(&format!(
            "%0A  {line}:13: Inst from here (1 stream upstream)%0A"
        )),
        "{c003}"
    );
    assert!(!c003.contains("Async from here"), "{c003}");
    let sarif: serde_json::Value = serde_json::from_str(&formatted("sarif", spec)).unwrap();
    let result = sarif["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["ruleId"] == "C003")
        .unwrap();
    let message = result["message"]["text"].as_str().unwrap();
    assert!(
        message.contains(
            "Its input comes [from `Report.response`](1), 1 stream upstream, where it is Inst."
        ),
        "{message}"
    );
    let origin = &result["relatedLocations"][0];
    assert_eq!(origin["message"]["text"], "Inst from here.");
    assert_eq!(origin["physicalLocation"]["region"]["startLine"], line);
    // C001/C002 origins are unchanged where the input's label begins at the source.
    let c002 = github.lines().find(|l| l.contains("title=C002")).unwrap();
    assert!(
        c002.contains("Async from here (1 stream upstream)"),
        "{c002}"
    );
}

/// `blazes plan --from ENGINE --format json FILE`'s mechanisms: (kind, runtime).
fn plan_runtimes(args: &[&str]) -> Vec<(String, String)> {
    let out = Command::new(env!("CARGO_BIN_EXE_blazes"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("blazes runs");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    v["files"][0]["mechanisms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["kind"].as_str().unwrap().to_string(),
                m["runtime"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn plans_on_imported_topologies_are_stated_in_the_engine_terms_too() {
    let cases = [
        (
            "kafka-streams",
            "tests/fixtures/import/kafka-streams/tables.txt",
            "; in Kafka Streams: repartition task `sub-topology-0`'s input by (key) (`selectKey`, then `repartition()` or `groupByKey()`)",
        ),
        (
            "kafka-streams",
            "tests/fixtures/import/kafka-streams/tables.txt",
            "and co-partition its inputs (the same number of partitions and the same partitioner for every input topic)",
        ),
        (
            "flink",
            "tests/fixtures/import/flink/keyed-aggregations.json",
            "; in Flink: `keyBy(key)` in front of Keyed_Aggregation-2",
        ),
        (
            "storm-flux",
            "tests/fixtures/import/storm-flux/wordcount.yaml",
            "; in Storm: fields grouping on (word) into count (`fieldsGrouping(..., new Fields(\"word\"))`)",
        ),
    ];
    for (engine, file, expected) in cases {
        let runtimes = plan_runtimes(&["plan", "--from", engine, "--format", "json", file]);
        assert!(
            runtimes
                .iter()
                .any(|(k, r)| k == "keyed-order" && r.contains(expected)),
            "{engine} {file}: {runtimes:?}"
        );
        // Every mechanism says it in the spec's terms, then in the engine's.
        let name = match engine {
            "kafka-streams" => "Kafka Streams",
            "flink" => "Flink",
            _ => "Storm",
        };
        assert!(
            runtimes
                .iter()
                .all(|(_, r)| r.contains(&format!("; in {name}: "))),
            "{runtimes:?}"
        );
    }
    // A spec (not imported) has only the spec's terms.
    let spec = plan_runtimes(&["plan", "--format", "json", "specs/wordcount.yaml"]);
    assert!(!spec.is_empty());
    assert!(spec.iter().all(|(_, r)| !r.contains("; in ")), "{spec:?}");
}

/// The keyed orders of `blazes plan --format json` on `args`: (task, components, cost).
fn keyed_orders(args: &[&str], stdin: Option<&str>) -> Vec<(Option<String>, Vec<String>, u64)> {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_blazes"))
        .args(args)
        .current_dir(root())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("blazes runs");
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.unwrap_or("").as_bytes()).unwrap();
    drop(input);
    let out = child.wait_with_output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    v["files"][0]["mechanisms"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["kind"] == "keyed-order")
        .map(|m| {
            (
                m["task"].as_str().map(str::to_string),
                m["components"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|c| c.as_str().unwrap().to_string())
                    .collect(),
                m["cost"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn the_processors_of_one_kafka_streams_task_are_ordered_together() {
    // tables.txt: sub-topology 0 joins two tables (KTABLE-JOINTHIS-9 and KTABLE-JOINOTHER-10
    // both read unordered state); sub-topology 1 aggregates and suppresses per key. A task
    // runs every processor of its sub-topology on one order of its input partitions, so each
    // sub-topology gets one keyed order, at one cost.
    let file = "tests/fixtures/import/kafka-streams/tables.txt";
    let orders = keyed_orders(
        &["plan", "--from", "kafka-streams", "--format", "json", file],
        None,
    );
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert_eq!(
        orders,
        [
            (
                Some("sub-topology-1".to_string()),
                s(&["KTABLE-AGGREGATE-0000000006", "KTABLE-SUPPRESS-0000000014"]),
                10
            ),
            (
                Some("sub-topology-0".to_string()),
                s(&["KTABLE-JOINOTHER-0000000010", "KTABLE-JOINTHIS-0000000009"]),
                10
            ),
        ]
    );
    // The control: the same imported spec without its `task:` lines orders each processor on
    // its own, four orders at four costs.
    let imported = Command::new(env!("CARGO_BIN_EXE_blazes"))
        .args(["import", "kafka-streams", file])
        .current_dir(root())
        .output()
        .expect("blazes runs");
    let spec = String::from_utf8(imported.stdout).unwrap();
    assert!(spec.contains("    task: \"sub-topology-0\"\n"), "{spec}");
    let untasked: String = spec
        .lines()
        .filter(|l| !l.trim_start().starts_with("task:"))
        .map(|l| format!("{l}\n"))
        .collect();
    // Applied, the order is written on both members of each task, and the spec checks clean.
    let dir = tempfile::tempdir().unwrap();
    let (spec_path, out_path) = (
        dir.path().join("tables.yaml"),
        dir.path().join("planned.yaml"),
    );
    std::fs::write(&spec_path, &spec).unwrap();
    let applied = Command::new(env!("CARGO_BIN_EXE_blazes"))
        .arg("plan")
        .arg(&spec_path)
        .arg("--apply")
        .arg(&out_path)
        .output()
        .expect("blazes runs");
    assert!(applied.status.success(), "{applied:?}");
    let planned = std::fs::read_to_string(&out_path).unwrap();
    for member in [
        "KTABLE-AGGREGATE-0000000006",
        "KTABLE-SUPPRESS-0000000014",
        "KTABLE-JOINOTHER-0000000010",
        "KTABLE-JOINTHIS-0000000009",
    ] {
        let at = planned.find(&format!("\"{member}\":")).unwrap();
        let body = &planned[at..];
        let end = body.find("    paths:").unwrap();
        assert!(
            body[..end].contains("    order: [key]\n"),
            "{member}: {}",
            &body[..end]
        );
    }
    let checked = Command::new(env!("CARGO_BIN_EXE_blazes"))
        .arg("check")
        .arg(&out_path)
        .output()
        .expect("blazes runs");
    assert!(checked.status.success(), "{checked:?}");
    let alone = keyed_orders(&["plan", "--format", "json", "-"], Some(&untasked));
    assert_eq!(alone.len(), 4, "{alone:?}");
    assert!(alone.iter().all(|(t, c, _)| t.is_none() && c.len() == 1));
}

#[test]
fn the_witness_of_a_read_write_race_shows_the_writes_and_the_read_interleaved() {
    // ad-poor: Report answers `request` (OR(id)) from the state `click` writes (CW); two
    // replicas see the click and the request in different orders.
    let o = Command::new(env!("CARGO_BIN_EXE_blazes"))
        .args([
            "check",
            "--witness",
            "--format",
            "json",
            "specs/ad-poor.yaml",
        ])
        .current_dir(root())
        .output()
        .expect("blazes runs");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let w = v["files"][0]["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|d| d.get("witness"))
        .expect("a witness");
    assert_eq!(w["component"], "Report");
    assert_eq!(
        w["traced"],
        serde_json::json!(["Report.request", "Report.click"])
    );
    let traces: Vec<Vec<String>> = w["executions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            e["trace"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t.as_str().unwrap().to_string())
                .collect()
        })
        .collect();
    // Not two identical columns: the same deliveries, in different orders.
    assert_ne!(traces[0], traces[1], "{traces:?}");
    for t in &traces {
        assert!(t.iter().any(|d| d.starts_with("click (id=")), "{t:?}");
        assert!(t.iter().any(|d| d.starts_with("request (id=")), "{t:?}");
        let mut sorted = t.clone();
        sorted.sort();
        let mut other = traces[0].clone();
        other.sort();
        assert_eq!(sorted, other, "both sides deliver the same records");
    }
}
