//! Composition (`use:`/`dataflow:`, `docs/compose.md`): a composed spec is checked as its
//! flattened graph. The property test writes random composed specs together with their flat
//! copy, written independently of `compose::expand`, and holds the labels, points of order and
//! plans of both equal; its control breaks one interface mapping in the flat copy, which must
//! change what the analysis finds. The rest: errors of composition (cycles, missing files,
//! expansion bombs) exit 2 located in the file at fault, and a finding in a used file is
//! located in that file in every format.

mod common;

use std::collections::BTreeMap;

use blazes::analysis::summary::{Summary, summarize};
use blazes::check::{self, FileReport, Outcome};
use blazes::label::show;
use blazes::plan::{self, Choice};
use common::*;
use proptest::prelude::*;

const ANNOTATIONS: [&str; 6] = ["CR", "CW", "OR(k)", "OW(k)", "OW(*)", "OR(*)"];

/// A path's annotation as spec YAML: `label: OW, gate: [k]`.
fn label(a: &str) -> String {
    if let Some(l) = a.strip_suffix("(k)") {
        format!("label: {l}, gate: [k]")
    } else if let Some(l) = a.strip_suffix("(*)") {
        format!("label: {l}, gate: \"*\"")
    } else {
        format!("label: {a}")
    }
}

/// One random module: components `C0..Cn` in a chain, inputs `a` (into `C0.x`) and `b` (into
/// `Cn.y`), outputs `o1` (from the last) and `o2` (from `C0`).
#[derive(Clone, Debug)]
struct Module {
    /// Per component: the annotations of its paths `x -> out` and `y -> out`.
    paths: Vec<(usize, usize)>,
}

/// One instance of the module in the system, with its coordination and which of its
/// interfaces the system connects.
#[derive(Clone, Debug)]
struct Instance {
    replicas: bool,
    order: bool,
    feeds_b: bool,
    reads_o2: bool,
}

#[derive(Clone, Debug)]
struct System {
    module: Module,
    instances: Vec<Instance>,
    /// The annotation of the outer component `P` (between the last instance and `db`).
    p: usize,
    /// Whether `s0` is sealed on `k` (else on `j`, which no gate names).
    s0_on_k: bool,
}

fn system() -> impl Strategy<Value = System> {
    (
        prop::collection::vec((0..ANNOTATIONS.len(), 0..ANNOTATIONS.len()), 1..4),
        prop::collection::vec(
            (any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>()),
            1..4,
        ),
        0..ANNOTATIONS.len(),
        any::<bool>(),
    )
        .prop_map(|(paths, inst, p, s0_on_k)| System {
            module: Module { paths },
            instances: inst
                .into_iter()
                .map(|(replicas, order, feeds_b, reads_o2)| Instance {
                    replicas,
                    order,
                    feeds_b,
                    reads_o2,
                })
                .collect(),
            p,
            s0_on_k,
        })
}

fn module_text(m: &Module) -> String {
    let n = m.paths.len();
    let mut t = String::from("sources:\n  a: {}\n  b: {}\ncomponents:\n");
    for (j, (x, y)) in m.paths.iter().enumerate() {
        t.push_str(&format!(
            "  C{j}:\n    paths:\n      - {{ from: x, to: out, {} }}\n      - {{ from: y, to: out, {} }}\n",
            label(ANNOTATIONS[*x]),
            label(ANNOTATIONS[*y])
        ));
    }
    t.push_str("streams:\n  - { from: a, to: C0.x }\n");
    t.push_str(&format!("  - {{ from: b, to: C{}.y }}\n", n - 1));
    for j in 0..n - 1 {
        t.push_str(&format!("  - {{ from: C{j}.out, to: C{}.x }}\n", j + 1));
    }
    t.push_str(&format!("  - {{ from: C{}.out, to: o1 }}\n", n - 1));
    t.push_str("  - { from: C0.out, to: o2 }\nsinks:\n  o1: {}\n  o2: {}\n");
    t
}

fn seal(s: &System) -> &'static str {
    if s.s0_on_k { "[k]" } else { "[j]" }
}

/// The system, using `module.yaml` once per instance.
fn composed_text(s: &System) -> String {
    let mut t = format!(
        "sources:\n  s0: {{ seal: {} }}\n  s1: {{}}\ncomponents:\n",
        seal(s)
    );
    for (i, inst) in s.instances.iter().enumerate() {
        t.push_str(&format!("  I{i}: {{ use: module.yaml"));
        if inst.replicas {
            t.push_str(", replicas: 2");
        }
        if inst.order {
            t.push_str(", order: global");
        }
        t.push_str(" }\n");
    }
    t.push_str(&format!(
        "  P:\n    paths:\n      - {{ from: in, to: out, {} }}\nstreams:\n",
        label(ANNOTATIONS[s.p])
    ));
    t.push_str(&outer_streams(s, |i, iface| format!("I{i}.{iface}")));
    t.push_str("sinks:\n  db: {}\n");
    for (i, inst) in s.instances.iter().enumerate() {
        if inst.reads_o2 {
            t.push_str(&format!("  r{i}: {{}}\n"));
        }
    }
    t
}

/// The system's own streams, an instance's interface written by `end`.
fn outer_streams(s: &System, end: impl Fn(usize, &str) -> String) -> String {
    let mut t = format!("  - {{ from: s0, to: {} }}\n", end(0, "a"));
    let last = s.instances.len() - 1;
    for (i, inst) in s.instances.iter().enumerate() {
        if i > 0 {
            t.push_str(&format!(
                "  - {{ from: {}, to: {} }}\n",
                end(i - 1, "o1"),
                end(i, "a")
            ));
        }
        if inst.feeds_b || i == 0 {
            t.push_str(&format!("  - {{ from: s1, to: {} }}\n", end(i, "b")));
        }
        if inst.reads_o2 {
            t.push_str(&format!("  - {{ from: {}, to: r{i} }}\n", end(i, "o2")));
        }
    }
    t.push_str(&format!("  - {{ from: {}, to: P.in }}\n", end(last, "o1")));
    t.push_str("  - { from: P.out, to: db }\n");
    t
}

/// The flattened system written by hand: each instance's components named `I0__C0`, the
/// system's streams into `I0.a` going to `I0__C0.x` directly, an interface the system leaves
/// open keeping the module's source or sink (`I0__b`, `I0__o2`). `swap` is the control: it
/// feeds I0's inputs each other's producers.
fn flat_text(s: &System, swap: bool) -> String {
    let m = &s.module;
    let n = m.paths.len();
    let inner = |i: usize, iface: &str| -> String {
        let iface = match (swap && i == 0, iface) {
            (true, "a") => "b",
            (true, "b") => "a",
            (_, other) => other,
        };
        match iface {
            "a" => format!("I{i}__C0.x"),
            "b" => format!("I{i}__C{}.y", n - 1),
            "o1" => format!("I{i}__C{}.out", n - 1),
            _ => format!("I{i}__C0.out"),
        }
    };
    let mut t = format!("sources:\n  s0: {{ seal: {} }}\n  s1: {{}}\n", seal(s));
    for (i, inst) in s.instances.iter().enumerate() {
        if !inst.feeds_b && i > 0 {
            t.push_str(&format!("  I{i}__b: {{}}\n"));
        }
    }
    t.push_str("components:\n");
    for (i, inst) in s.instances.iter().enumerate() {
        for (j, (x, y)) in m.paths.iter().enumerate() {
            t.push_str(&format!("  I{i}__C{j}:\n"));
            if inst.replicas {
                t.push_str("    replicas: 2\n");
            }
            if inst.order {
                t.push_str("    order: global\n");
            }
            t.push_str(&format!(
                "    paths:\n      - {{ from: x, to: out, {} }}\n      - {{ from: y, to: out, {} }}\n",
                label(ANNOTATIONS[*x]),
                label(ANNOTATIONS[*y])
            ));
        }
    }
    t.push_str(&format!(
        "  P:\n    paths:\n      - {{ from: in, to: out, {} }}\nstreams:\n",
        label(ANNOTATIONS[s.p])
    ));
    for i in 0..s.instances.len() {
        for j in 0..n - 1 {
            t.push_str(&format!(
                "  - {{ from: I{i}__C{j}.out, to: I{i}__C{}.x }}\n",
                j + 1
            ));
        }
    }
    t.push_str(&outer_streams(s, inner));
    for (i, inst) in s.instances.iter().enumerate() {
        if !inst.feeds_b && i > 0 {
            t.push_str(&format!(
                "  - {{ from: I{i}__b, to: I{i}__C{}.y }}\n",
                n - 1
            ));
        }
        if !inst.reads_o2 {
            t.push_str(&format!("  - {{ from: I{i}__C0.out, to: I{i}__o2 }}\n"));
        }
    }
    t.push_str("sinks:\n  db: {}\n");
    for (i, inst) in s.instances.iter().enumerate() {
        if inst.reads_o2 {
            t.push_str(&format!("  r{i}: {{}}\n"));
        }
    }
    for (i, inst) in s.instances.iter().enumerate() {
        if !inst.reads_o2 {
            t.push_str(&format!("  I{i}__o2: {{}}\n"));
        }
    }
    t
}

/// A composed spec's names as the flat copy writes them.
fn mangle(name: &str) -> String {
    name.replace('.', "__")
}

/// What the analysis and the planner find, by name: every interface's and sink's label, every
/// point of order, and the plan's status, cost and mechanisms.
fn findings(r: &FileReport) -> Vec<String> {
    let Outcome::Analysed(a) = &r.outcome else {
        panic!(
            "{} is valid: {:?}",
            r.path,
            r.diagnostics()
                .iter()
                .map(|d| &d.message)
                .collect::<Vec<_>>()
        )
    };
    let (df, an) = (&a.dataflow, &a.analysis);
    let mut out = Vec::new();
    for (i, iface) in df.ifaces.iter().enumerate() {
        let c = &df.components[iface.component.index()];
        out.push(format!(
            "iface {}/{} = {}",
            mangle(&c.name),
            iface.name,
            show(an.labels.iface[i], &df.keys)
        ));
    }
    for (k, sink) in df.sinks.iter().enumerate() {
        out.push(format!(
            "sink {} = {}",
            mangle(&sink.name),
            show(an.labels.sink[k], &df.keys)
        ));
    }
    for p in &an.points {
        out.push(format!(
            "point {}#{} {}",
            mangle(&df.components[p.component.index()].name),
            p.path,
            p.kind.as_str()
        ));
    }
    let p = plan::plan(df, &plan::Options::default());
    let named = p.named(df);
    out.push(format!("plan {:?} cost {}", p.status, p.cost));
    for m in &p.mechanisms {
        let on = match m.choice {
            Choice::AddSeal { source, .. } => mangle(named.source(source)),
            Choice::SealStream { stream, .. } => mangle(&named.stream(stream)),
            Choice::Order { component, .. } => mangle(named.component(component)),
        };
        out.push(format!("mechanism {:?} {} {:?}", m.kind, on, m.key));
    }
    out.sort();
    out
}

fn check_system(files: &BTreeMap<String, String>, root: &str) -> FileReport {
    let mut loader = files.clone();
    let text = files[root].clone().into_bytes();
    check::check_composed(root, text, &Default::default(), &mut loader)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn a_composed_spec_is_its_flattened_copy(s in system()) {
        let files = BTreeMap::from([
            ("sys/module.yaml".to_string(), module_text(&s.module)),
            ("sys/system.yaml".to_string(), composed_text(&s)),
        ]);
        let composed = findings(&check_system(&files, "sys/system.yaml"));
        let flat = check::check_bytes("flat.yaml", flat_text(&s, false).as_bytes(), &Default::default());
        prop_assert_eq!(&composed, &findings(&flat));
        // The control: the same flat copy with I0's two inputs fed each other's producers
        // (`s0`, sealed, and `s1`, not) must differ.
        let broken = check::check_bytes("broken.yaml", flat_text(&s, true).as_bytes(), &Default::default());
        prop_assert_ne!(&composed, &findings(&broken));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// A composed spec's plan, written into its files, repairs it as `blazes check` reads the
    /// files again; the only refusal is instances of the shared module needing different
    /// edits.
    #[test]
    fn a_composed_plan_written_into_its_files_passes_check(s in system()) {
        let files = BTreeMap::from([
            ("sys/module.yaml".to_string(), module_text(&s.module)),
            ("sys/system.yaml".to_string(), composed_text(&s)),
        ]);
        let r = check_system(&files, "sys/system.yaml");
        let Outcome::Analysed(a) = &r.outcome else { panic!("valid") };
        let p = plan::plan(&a.dataflow, &plan::Options::default());
        if p.status != plan::Status::Repaired {
            return Ok(());
        }
        let write = |p: &plan::Plan| plan::apply_composed::apply_composed(
            &r.path, &r.text, &r.files, &a.dataflow, p, &Default::default(), Default::default(),
        );
        match write(&p) {
            Ok(changes) => {
                let mut edited = files.clone();
                for c in &changes {
                    edited.insert(c.path.clone(), c.after.clone());
                }
                let again = check_system(&edited, "sys/system.yaml");
                prop_assert_eq!(again.exit_code(), check::EXIT_CLEAN, "{:?}", again.diagnostics());
                // The controls: a changed file put back loses mechanisms the plan needs (it is
                // irredundant), and the check of the files sees it; a plan of nothing is
                // refused by the writer's own check.
                let first = &changes[0];
                edited.insert(first.path.clone(), files[&first.path].clone());
                let without = check_system(&edited, "sys/system.yaml");
                prop_assert_eq!(without.exit_code(), check::EXIT_FINDINGS);
                let mut none = p.clone();
                none.mechanisms.clear();
                prop_assert!(write(&none).is_err());
            }
            Err(e) => prop_assert!(e.contains("are instances of one declaration"), "{}", e),
        }
    }
}

/// Two regions using one service file, one of them ordered and replicated.
fn regions() -> BTreeMap<String, String> {
    BTreeMap::from([
        (
            "s/services/billing.yaml".to_string(),
            "sources:\n  orders: {}\ncomponents:\n  Join:\n    paths:\n      - { from: probe, to: out, label: OW, gate: [id] }\nstreams:\n  - { from: orders, to: Join.probe }\n  - { from: Join.out, to: invoices }\nsinks:\n  invoices: {}\n".to_string(),
        ),
        (
            "s/system.yaml".to_string(),
            "sources:\n  clicks: {}\ncomponents:\n  Eu: { use: services/billing.yaml }\n  Us: { use: services/billing.yaml, order: global }\nstreams:\n  - { from: clicks, to: Eu.orders }\n  - { from: clicks, to: Us.orders }\n  - { from: Eu.invoices, to: db }\n  - { from: Us.invoices, to: db }\nsinks:\n  db: {}\n".to_string(),
        ),
    ])
}

#[test]
fn instances_are_named_by_their_path_and_keep_their_file() {
    let r = check_system(&regions(), "s/system.yaml");
    let Outcome::Analysed(a) = &r.outcome else {
        panic!("valid")
    };
    let names: Vec<&str> = a
        .dataflow
        .components
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(names, ["Eu.Join", "Us.Join"]);
    // Only the unordered instance is a point of order, and it is in the service's file, line 5,
    // used as `Eu` by line 4 of the system.
    assert_eq!(a.analysis.points.len(), 1);
    let d = a.diagnostics.iter().find(|d| d.code.id == "C001").unwrap();
    let span = d.primary.as_ref().unwrap().span;
    let (path, text, local) = r.locate(span);
    assert_eq!(path, "s/services/billing.yaml");
    assert_eq!(&text[local.offset..local.end()], "OW");
    assert_eq!(
        r.used_from(span).as_deref(),
        Some("in `s/services/billing.yaml`, used as `Eu` by `s/system.yaml:4`")
    );
    // The two instances' nodes have distinct spans: each use is its own region.
    let c = &a.dataflow.components;
    assert_ne!(c[0].span, c[1].span);
    assert_eq!(r.locate(c[0].span).2, r.locate(c[1].span).2);
}

#[test]
fn an_inline_dataflow_is_a_composite_too() {
    let text = "sources:\n  s: {}\ncomponents:\n  B:\n    dataflow:\n      sources:\n        i: {}\n      components:\n        J:\n          paths: [{ from: x, to: y, label: CW }]\n      streams:\n        - { from: i, to: J.x }\n        - { from: J.y, to: o }\n      sinks:\n        o: {}\nstreams:\n  - { from: s, to: B.i }\n  - { from: B.o, to: db }\nsinks:\n  db: {}\n";
    let r = check::check_bytes("inline.yaml", text.as_bytes(), &Default::default());
    assert_eq!(r.exit_code(), check::EXIT_CLEAN, "{:?}", r.diagnostics());
    let Outcome::Analysed(a) = &r.outcome else {
        panic!("valid")
    };
    assert_eq!(a.dataflow.components[0].name, "B.J");
    assert_eq!(a.dataflow.sources.len(), 1);
}

#[test]
fn a_wrong_interface_is_a_located_error() {
    let mut files = regions();
    let sys = files.get_mut("s/system.yaml").unwrap();
    *sys = sys.replace("to: Eu.orders", "to: Eu.order");
    let r = check_system(&files, "s/system.yaml");
    assert_eq!(r.exit_code(), 2);
    let d = &r.diagnostics()[0];
    assert_eq!(d.code.id, "S005");
    assert_eq!(d.message, "composite Eu has no input `order`");
    assert_eq!(
        d.help.as_deref(),
        Some("the inputs of Eu (its dataflow's sources) are: `orders`")
    );
}

/// Runs the binary on files written to a fresh directory under the target dir.
fn on_disk(name: &str, files: &[(&str, &str)], args: &[&str]) -> std::process::Output {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    for (p, t) in files {
        let path = dir.join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, t).unwrap();
    }
    std::process::Command::new(env!("CARGO_BIN_EXE_blazes"))
        .args(args)
        .current_dir(&dir)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

#[test]
fn a_cycle_of_uses_exits_2_located_in_the_file_that_closes_it() {
    let o = on_disk(
        "cycle",
        &[
            ("a.yaml", "components:\n  B: { use: sub/b.yaml }\n"),
            ("sub/b.yaml", "components:\n  A: { use: ../a.yaml }\n"),
        ],
        &["check", "a.yaml", "--format", "json"],
    );
    assert_eq!(o.status.code(), Some(2));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let d = &doc["files"][0]["diagnostics"][0];
    assert_eq!(d["code"], "S014");
    assert_eq!(d["file"], "sub/b.yaml");
    assert_eq!(d["line"], 2);
    assert_eq!(
        d["message"],
        "`a.yaml` uses itself: `a.yaml` uses `sub/b.yaml` uses `a.yaml`"
    );
    assert_eq!(d["used_from"], "in `sub/b.yaml`, used as `B` by `a.yaml:2`");
}

#[test]
fn a_missing_file_exits_2_naming_the_chain() {
    let o = on_disk(
        "missing",
        &[
            ("a.yaml", "components:\n  B: { use: b.yaml }\n"),
            ("b.yaml", "components:\n  C: { use: gone.yaml }\n"),
        ],
        &["check", "a.yaml"],
    );
    assert_eq!(o.status.code(), Some(2));
    let out = stdout(&o);
    assert!(
        out.contains("cannot read `gone.yaml`, used as `C` by `b.yaml` used by `a.yaml`"),
        "{out}"
    );
    assert!(out.contains("[b.yaml:2:13]"), "{out}");
}

#[test]
fn an_expansion_bomb_is_rejected_before_it_is_built() {
    // Twenty levels of a file using the next twice: a million copies of one component.
    let mut files: Vec<(String, String)> = (0..20)
        .map(|i| {
            (
                format!("l{i}.yaml"),
                format!(
                    "components:\n  L: {{ use: l{n}.yaml }}\n  R: {{ use: l{n}.yaml }}\n",
                    n = i + 1
                ),
            )
        })
        .collect();
    files.push((
        "l20.yaml".into(),
        "sources:\n  a: {}\ncomponents:\n  C:\n    paths: [{ from: i, to: o, label: CR }]\nstreams:\n  - { from: a, to: C.i }\n".into(),
    ));
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let start = std::time::Instant::now();
    let o = on_disk(
        "bomb",
        &files,
        &["check", "l0.yaml", "--max-components", "1000"],
    );
    assert_eq!(o.status.code(), Some(2));
    let out = stdout(&o);
    assert!(
        out.contains(
            "the composed spec expands to 1048576 components, more than the limit of 1000"
        ),
        "{out}"
    );
    assert!(out.contains("[l0.yaml:3:13]"), "{out}");
    assert!(start.elapsed().as_secs() < 20);
    // The control: the same files within the limit are expanded and checked.
    let o = on_disk("bomb-small", &files[15..], &["check", "l15.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
}

#[test]
fn a_finding_in_a_used_file_is_located_there_in_every_format() {
    let files = [
        (
            "services/billing.yaml",
            "sources:\n  orders: {}\ncomponents:\n  Join:\n    paths:\n      - { from: probe, to: out, label: OW, gate: [id] }\nstreams:\n  - { from: orders, to: Join.probe }\n  - { from: Join.out, to: invoices }\nsinks:\n  invoices: {}\n",
        ),
        (
            "system.yaml",
            "sources:\n  clicks: {}\ncomponents:\n  Billing: { use: services/billing.yaml }\nstreams:\n  - { from: clicks, to: Billing.orders }\n  - { from: Billing.invoices, to: db }\nsinks:\n  db: {}\n",
        ),
    ];
    let human = stdout(&on_disk("fmt-h", &files, &["check", "system.yaml"]));
    assert!(human.contains("╭─[services/billing.yaml:6:40]"), "{human}");
    assert!(
        human.contains("in `services/billing.yaml`, used as `Billing` by `system.yaml:4`"),
        "{human}"
    );
    let json: serde_json::Value = serde_json::from_slice(
        &on_disk(
            "fmt-j",
            &files,
            &["check", "system.yaml", "--format", "json"],
        )
        .stdout,
    )
    .unwrap();
    let c001 = json["files"][0]["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["code"] == "C001")
        .unwrap()
        .clone();
    assert_eq!(c001["file"], "services/billing.yaml");
    assert_eq!(c001["line"], 6);
    let sarif: serde_json::Value = serde_json::from_slice(
        &on_disk(
            "fmt-s",
            &files,
            &["check", "system.yaml", "--format", "sarif"],
        )
        .stdout,
    )
    .unwrap();
    let result = sarif["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["ruleId"] == "C001")
        .unwrap()
        .clone();
    let loc = &result["locations"][0]["physicalLocation"];
    assert_eq!(loc["artifactLocation"]["uri"], "services/billing.yaml");
    assert_eq!(loc["region"]["startLine"], 6);
    let github = stdout(&on_disk(
        "fmt-g",
        &files,
        &["check", "system.yaml", "--format", "github"],
    ));
    assert!(
        github.contains("file=services/billing.yaml,line=6,col=40"),
        "{github}"
    );
    // The control: the sink's finding is in the system's own file.
    let c004 = json["files"][0]["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["code"] == "C004")
        .unwrap()
        .clone();
    assert!(c004.get("file").is_none());
    assert_eq!(c004["line"], 9);
}

/// Every file under `dir`, by path relative to it, with its bytes.
fn tree(dir: &std::path::Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// The binary run in `dir`.
fn run_in(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_blazes"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

/// A fresh copy of `specs/system/` under the target dir.
fn system_copy(name: &str) -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    for (rel, bytes) in tree(&root().join("specs/system")) {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }
    dir
}

#[test]
fn plan_in_place_writes_each_mechanism_into_the_file_that_declares_it() {
    let dir = system_copy("compose-in-place");
    let before = tree(&dir);
    let o = run_in(
        &dir,
        &["plan", "--in-place", "--format", "json", "poor.yaml"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        doc["files"][0]["applied"],
        serde_json::json!({
            "output": "poor.yaml",
            "status": "written",
            "message": null,
            "files": [{
                "path": "services/report.yaml",
                "edits": ["`order: [id]` on component `Report` (for `Reports.Report`)"],
            }],
        })
    );
    assert!(
        stderr(&o).contains("wrote the plan into `services/report.yaml`: `order: [id]` on component `Report` (for `Reports.Report`)"),
        "{}",
        stderr(&o)
    );
    // Only the report server's file changed, by the one entry, and the system now passes.
    let after = tree(&dir);
    for (rel, bytes) in &before {
        if rel != "services/report.yaml" {
            assert_eq!(&after[rel], bytes, "{rel} changed");
        }
    }
    assert_eq!(after.len(), before.len(), "no file is added or left behind");
    let was = String::from_utf8(before["services/report.yaml"].clone()).unwrap();
    assert_eq!(
        String::from_utf8(after["services/report.yaml"].clone()).unwrap(),
        was.replace("  Report:\n", "  Report:\n    order: [id]\n")
    );
    assert_eq!(run_in(&dir, &["check", "poor.yaml"]).status.code(), Some(0));
    // Planned again, it needs nothing and writes nothing.
    let o = run_in(&dir, &["plan", "--in-place", "poor.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("`poor.yaml` needs no change; left as it is"));
    assert_eq!(tree(&dir), after);
}

/// `--apply DIR/` writes a planned copy of the whole system into DIR: the files the plan
/// changes with its edits, the others as they are, at their places, and the copy checks clean;
/// the originals are untouched. Again, nothing needs writing. Control: a file of DIR that
/// differs is kept without --force, and then nothing is written.
#[test]
fn plan_apply_dir_writes_a_planned_copy_of_the_system() {
    let dir = system_copy("compose-apply-dir");
    let before = tree(&dir);
    let o = run_in(
        &dir,
        &[
            "plan",
            "--apply",
            "planned/",
            "--format",
            "json",
            "poor.yaml",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let written: Vec<&str> = doc["files"][0]["applied"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert!(
        written.contains(&"planned/services/report.yaml"),
        "{written:?}"
    );
    let after = tree(&dir);
    for (rel, bytes) in &before {
        assert_eq!(&after[rel], bytes, "the original {rel} changed");
        // The system of poor.yaml is copied, and only it.
        let copy = after.get(&format!("planned/{rel}"));
        if rel == "services/report.yaml" {
            let was = String::from_utf8(bytes.clone()).unwrap();
            assert_eq!(
                String::from_utf8(copy.unwrap().clone()).unwrap(),
                was.replace("  Report:\n", "  Report:\n    order: [id]\n")
            );
        } else if rel == "poor.yaml" || rel.starts_with("services/") {
            assert_eq!(copy, Some(bytes), "the copy of {rel} differs");
        } else {
            assert_eq!(copy, None, "{rel} is not of the system");
        }
    }
    assert_eq!(
        run_in(&dir, &["check", "planned/poor.yaml"]).status.code(),
        Some(0)
    );
    let o = run_in(&dir, &["plan", "--apply", "planned/", "poor.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("needs no change"), "{}", stderr(&o));

    let fresh = system_copy("compose-apply-dir-kept");
    std::fs::create_dir_all(fresh.join("planned/services")).unwrap();
    std::fs::write(fresh.join("planned/services/cache.yaml"), "# mine\n").unwrap();
    let before = tree(&fresh);
    let o = run_in(&fresh, &["plan", "--apply", "planned/", "poor.yaml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("refusing to overwrite `planned/services/cache.yaml`"),
        "{}",
        stderr(&o)
    );
    assert_eq!(tree(&fresh), before);
    let o = run_in(
        &fresh,
        &["plan", "--apply", "planned/", "--force", "poor.yaml"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        run_in(&fresh, &["check", "planned/poor.yaml"])
            .status
            .code(),
        Some(0)
    );
}

const TWO_FILES_ROOT: &str = "# The module, and a keyed write of its output.\nsources:\n  s1: {}\n  s2: {}\ncomponents:\n  M: { use: MODULE }\n  P:\n    paths:\n      - { from: in, to: out, label: OW, gate: [k] }\nstreams:\n  - { from: s1, to: M.a }\n  - { from: s2, to: M.b }\n  - { from: M.o1, to: P.in }\n  - { from: M.o2, to: db }\n  - { from: P.out, to: db }\nsinks:\n  db: {}\n";
const TWO_FILES_MODULE: &str = "sources:\n  a: {}\n  b: {}\ncomponents:\n  J:\n    paths:\n      - { from: x, to: out, label: OR, gate: [id] }\n  Y:\n    paths:\n      - { from: y, to: out, label: OW, gate: [k] }\nstreams:\n  - { from: a, to: J.x }\n  - { from: b, to: Y.y }\n  - { from: J.out, to: o1 }\n  - { from: Y.out, to: o2 }\nsinks:\n  o1: {}\n  o2: {}\n";

/// A system whose plan changes its root and the module it uses, the module at `module`.
fn two_files(name: &str, module: &str) -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("svc")).unwrap();
    std::fs::write(
        dir.join("root.yaml"),
        TWO_FILES_ROOT.replace("MODULE", &format!("svc/{module}")),
    )
    .unwrap();
    std::fs::write(dir.join("svc").join(module), TWO_FILES_MODULE).unwrap();
    dir
}

#[test]
fn a_plan_is_written_into_every_file_or_none() {
    // A module file's name so long that the temporary file beside it cannot be made (names
    // are at most 255 bytes): the module cannot be written, so the root, staged first, is not
    // written either. A real failure that holds for root as for any user.
    let long = format!("{}.yaml", "m".repeat(245));
    let dir = two_files("compose-all-or-none", &long);
    let before = tree(&dir);
    let o = run_in(&dir, &["plan", "--in-place", "root.yaml"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!(
            "error: nothing written: cannot write `svc/{long}`"
        )),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        tree(&dir),
        before,
        "no file changed and no temporary file is left"
    );
    // The control: the same system with a short name is written, both files.
    let dir = two_files("compose-all-or-none-control", "m.yaml");
    let before = tree(&dir);
    let o = run_in(&dir, &["plan", "--in-place", "root.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let after = tree(&dir);
    assert_ne!(after["root.yaml"], before["root.yaml"]);
    assert_ne!(after["svc/m.yaml"], before["svc/m.yaml"]);
    assert_eq!(after.len(), before.len());
    assert_eq!(run_in(&dir, &["check", "root.yaml"]).status.code(), Some(0));
}

#[test]
fn plan_apply_writes_a_composed_copy_only_beside_it_and_only_when_the_root_alone_changes() {
    let dir = system_copy("compose-apply");
    let before = tree(&dir);
    // The plan changes a used file, which a copy of the root cannot carry.
    let o = run_in(&dir, &["plan", "--apply", "planned.yaml", "poor.yaml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("the plan changes `services/report.yaml` the spec uses, which `--apply FILE` does not write beside a copy; pass --apply DIR/"),
        "{}",
        stderr(&o)
    );
    assert_eq!(tree(&dir), before);
    // A plan that changes the root alone (an ordered write after the ad servers).
    let root = "sources:\n  t: {}\ncomponents:\n  Ads: { use: services/ad-server.yaml }\n  Count:\n    paths:\n      - { from: in, to: out, label: OW, gate: [id] }\nstreams:\n  - { from: t, to: Ads.requests }\n  - { from: Ads.clicks, to: Count.in }\n  - { from: Count.out, to: db }\nsinks:\n  db: {}\n";
    std::fs::write(dir.join("counts.yaml"), root).unwrap();
    let other =
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("compose-apply-elsewhere.yaml");
    let _ = std::fs::remove_file(&other);
    let o = run_in(
        &dir,
        &["plan", "--apply", other.to_str().unwrap(), "counts.yaml"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("its planned copy must be in the same directory"),
        "{}",
        stderr(&o)
    );
    assert!(!other.exists());
    // The control: beside the root, the copy is written and passes.
    let o = run_in(&dir, &["plan", "--apply", "planned.yaml", "counts.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(dir.join("planned.yaml")).unwrap(),
        root.replace("  Count:\n", "  Count:\n    order: [id]\n")
    );
    assert_eq!(
        run_in(&dir, &["check", "planned.yaml"]).status.code(),
        Some(0)
    );
}

#[test]
fn a_chain_of_uses_deeper_than_max_depth_is_a_limit() {
    let mut files: BTreeMap<String, String> = (0..80)
        .map(|i| {
            (
                format!("d{i}.yaml"),
                format!("components:\n  N: {{ use: d{}.yaml }}\n", i + 1),
            )
        })
        .collect();
    files.insert(
        "d80.yaml".into(),
        "sources:\n  a: {}\ncomponents:\n  C:\n    paths: [{ from: i, to: o, label: CR }]\nstreams:\n  - { from: a, to: C.i }\n".into(),
    );
    let r = check_system(&files, "d0.yaml");
    assert_eq!(r.exit_code(), 2);
    let d = &r.diagnostics()[0];
    assert_eq!(d.code.id, "S011");
    assert_eq!(d.message, "the chain of `use:` is more than 64 files deep");
    assert_eq!(r.locate(d.primary.as_ref().unwrap().span).0, "d64.yaml");
    // The control: 60 levels are within the limit and checked.
    let r = check_system(&files, "d20.yaml");
    assert_eq!(r.exit_code(), 0, "{:?}", r.diagnostics());
}

#[test]
fn an_inline_composite_cannot_also_have_paths_nor_pass_an_input_straight_through() {
    // An inline dataflow is written in place: a grey box beside it would say nothing that
    // could drift (`use:` with `paths:` is a contract on another file, checked above).
    let text = "components:\n  B:\n    dataflow: { sources: { i: {} }, components: { C: { paths: [{ from: x, to: y, label: CR }] } }, streams: [{ from: i, to: C.x }, { from: C.y, to: o }], sinks: { o: {} } }\n    paths: [{ from: x, to: y, label: CR }]\n";
    let r = check::check_bytes("a.yaml", text.as_bytes(), &Default::default());
    assert_eq!(r.exit_code(), 2);
    assert_eq!(
        r.diagnostics()[0].message,
        "component `B` is a composite (`dataflow`), so it cannot have `paths`"
    );
    let files = BTreeMap::from([
        (
            "b.yaml".to_string(),
            "sources:\n  i: {}\ncomponents:\n  C:\n    paths: [{ from: x, to: y, label: CR }]\nstreams:\n  - { from: i, to: o }\nsinks:\n  o: {}\n".to_string(),
        ),
        ("a.yaml".to_string(), "components:\n  B: { use: b.yaml }\n".to_string()),
    ]);
    let r = check_system(&files, "a.yaml");
    assert_eq!(r.exit_code(), 2);
    let d = &r.diagnostics()[0];
    assert_eq!(
        d.message,
        "the dataflow of composite `B` streams its input `i` straight to its output `o`"
    );
    assert_eq!(r.locate(d.primary.as_ref().unwrap().span).0, "b.yaml");
    // The control: with a component between, the same module is accepted.
    let mut ok = files.clone();
    ok.insert(
        "b.yaml".into(),
        files["b.yaml"].replace(
            "- { from: i, to: o }",
            "- { from: i, to: C.x }\n  - { from: C.y, to: o }",
        ),
    );
    assert_eq!(check_system(&ok, "a.yaml").exit_code(), 0);
}

#[test]
fn render_draws_each_instance_as_a_cluster() {
    let o = blazes(&["render", "specs/system/poor.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let dot = stdout(&o);
    for instance in ["EuAds", "UsAds", "Reports", "Front"] {
        assert!(
            dot.contains(&format!("subgraph \"cluster_{instance}\" {{")),
            "{dot}"
        );
    }
    // The control: the flat ad network has no instance, so no cluster.
    let flat = stdout(&blazes(&["render", "specs/ad-poor.yaml"]));
    assert!(!flat.contains("cluster_"), "{flat}");
}

#[test]
fn nested_instances_nest_their_clusters() {
    let mut files = regions();
    files.insert(
        "s/top.yaml".into(),
        "sources:\n  clicks: {}\ncomponents:\n  World: { use: system.yaml }\nstreams:\n  - { from: clicks, to: World.clicks }\n".into(),
    );
    let r = check_system(&files, "s/top.yaml");
    let Outcome::Analysed(a) = &r.outcome else {
        panic!("valid: {:?}", r.diagnostics())
    };
    let names: Vec<&str> = a
        .dataflow
        .components
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(names, ["World.Eu.Join", "World.Us.Join"]);
    let d = a.diagnostics.iter().find(|d| d.code.id == "C001").unwrap();
    assert_eq!(
        r.used_from(d.primary.as_ref().unwrap().span).as_deref(),
        Some(
            "in `s/services/billing.yaml`, used as `Eu` by `s/system.yaml:4`, used as `World` by `s/top.yaml:4`"
        )
    );
    let dot = blazes::render::to_dot(&a.dataflow, &a.analysis, &[]);
    let world = dot
        .find("subgraph \"cluster_World\"")
        .expect("the outer cluster");
    let eu = dot
        .find("subgraph \"cluster_World.Eu\"")
        .expect("the inner cluster");
    assert!(world < eu);
}

#[test]
fn the_streams_an_expansion_makes_are_held_to_max_streams() {
    // Five levels of a file using the next twice: 32 copies of a module of three streams.
    let mut files: BTreeMap<String, String> = (0..5)
        .map(|i| {
            (
                format!("l{i}.yaml"),
                format!(
                    "components:\n  L: {{ use: l{n}.yaml }}\n  R: {{ use: l{n}.yaml }}\n",
                    n = i + 1
                ),
            )
        })
        .collect();
    files.insert(
        "l5.yaml".into(),
        "components:\n  C:\n    paths: [{ from: i, to: o, label: CR }, { from: j, to: p, label: CR }]\nstreams:\n  - { from: C.o, to: C.i }\n  - { from: C.o, to: C.j }\n  - { from: C.p, to: C.i }\n".into(),
    );
    let limited = |n: usize| {
        let options = check::Options::default().limits(blazes::spec::Limits {
            max_streams: n,
            ..Default::default()
        });
        let mut loader = files.clone();
        check::check_composed(
            "l0.yaml",
            files["l0.yaml"].clone().into_bytes(),
            &options,
            &mut loader,
        )
    };
    let r = limited(50);
    assert_eq!(r.exit_code(), 2);
    let d = &r.diagnostics()[0];
    assert_eq!(d.code.id, "S011");
    assert_eq!(
        d.message,
        "the composed spec expands to more than 50 streams"
    );
    assert_eq!(r.locate(d.primary.as_ref().unwrap().span).0, "l5.yaml");
    // The control: 96 streams are within a limit of 100.
    let r = limited(100);
    assert_ne!(r.exit_code(), 2, "{:?}", r.diagnostics());
}

/// The labels a stand-in must reproduce: the system's own sinks and its component `P`.
fn outer_labels(r: &FileReport) -> Vec<String> {
    let Outcome::Analysed(a) = &r.outcome else {
        panic!("{} is valid: {:?}", r.path, r.diagnostics())
    };
    let (df, an) = (&a.dataflow, &a.analysis);
    let mut out: Vec<String> = df
        .sinks
        .iter()
        .enumerate()
        .filter(|(_, s)| s.name == "db" || s.name.starts_with('r'))
        .map(|(k, s)| format!("sink {} = {}", s.name, show(an.labels.sink[k], &df.keys)))
        .collect();
    for (i, f) in df.ifaces.iter().enumerate() {
        if df.components[f.component.index()].name == "P" {
            out.push(format!(
                "P.{} = {}",
                f.name,
                show(an.labels.iface[i], &df.keys)
            ));
        }
    }
    out.sort();
    out
}

/// The system with each `use:` of the module replaced by the grey box `paths`.
fn stand_in(s: &System, grey: &str) -> String {
    let mut t = composed_text(s);
    for i in 0..s.instances.len() {
        t = t.replace(
            &format!("  I{i}: {{ use: module.yaml }}\n"),
            &format!("  I{i}:\n{grey}"),
        );
    }
    t
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// A module's summary stands in for it: the system with each use replaced by the summary's
    /// grey box gives its own sinks and components the labels the composed system gives them.
    /// (Instances without `order:`/`replicas:`, which apply on top of the summary.)
    #[test]
    fn a_summary_stands_in_for_its_module(mut s in system()) {
        for i in &mut s.instances {
            i.replicas = false;
            i.order = false;
        }
        let module = module_text(&s.module);
        let files = BTreeMap::from([
            ("sys/module.yaml".to_string(), module.clone()),
            ("sys/system.yaml".to_string(), composed_text(&s)),
        ]);
        let composed = check_system(&files, "sys/system.yaml");
        let Outcome::Analysed(a) = &composed.outcome else { panic!("valid") };
        prop_assert_eq!(a.summaries.len(), 1);
        let m = &a.summaries[0];
        prop_assert_eq!(&m.file, "sys/module.yaml");
        match &m.summary {
            Summary::Exact(g) => {
                let grey = blazes::report::summary::grey_box_yaml(g, 4);
                let text = stand_in(&s, &grey);
                let r = check::check_bytes("stand-in.yaml", text.as_bytes(), &Default::default());
                prop_assert_eq!(outer_labels(&composed), outer_labels(&r), "{}\n{}", grey, text);
            }
            // No grey box behaves as the module: the reason names the inputs that show it.
            Summary::None(why) => prop_assert!(why.contains("fed"), "{}", why),
            Summary::TooBig(why) => prop_assert!(false, "a small module is summarized: {}", why),
        }
    }
}

/// The control of the stand-in property: the report service's summary minus its
/// order-sensitivity (its read taken for confluent, `CR`) no longer stands in for it.
#[test]
fn a_summary_minus_its_order_sensitivity_does_not_stand_in() {
    let root = root();
    let read = |p: &str| std::fs::read_to_string(root.join(p)).unwrap();
    let files = BTreeMap::from([
        (
            "specs/system/services/report.yaml".to_string(),
            read("specs/system/services/report.yaml"),
        ),
        (
            "specs/system/user.yaml".to_string(),
            "sources:\n  clicks: {}\n  queries: {}\ncomponents:\n  R: { use: services/report.yaml }\n  P:\n    paths:\n      - { from: in, to: out, label: CR }\nstreams:\n  - { from: clicks, to: R.clicks }\n  - { from: queries, to: R.queries }\n  - { from: R.answers, to: P.in }\n  - { from: P.out, to: db }\nsinks:\n  db: {}\n".to_string(),
        ),
    ]);
    let composed = check_system(&files, "specs/system/user.yaml");
    let Outcome::Analysed(a) = &composed.outcome else {
        panic!("valid")
    };
    let Summary::Exact(g) = &a.summaries[0].summary else {
        panic!("report has a summary")
    };
    let exact = blazes::report::summary::grey_box_yaml(g, 4);
    assert!(exact.contains("label: OR, gate: [id]"), "{exact}");
    let text = |grey: &str| {
        files["specs/system/user.yaml"].replace(
            "  R: { use: services/report.yaml }\n",
            &format!("  R:\n{grey}"),
        )
    };
    let with = |grey: &str| {
        outer_labels(&check::check_bytes(
            "u.yaml",
            text(grey).as_bytes(),
            &Default::default(),
        ))
    };
    assert_eq!(with(&exact), outer_labels(&composed));
    let confluent = exact.replace("label: OR, gate: [id]", "label: CR");
    assert_ne!(with(&confluent), outer_labels(&composed));
}

/// Modules no grey box behaves as: one that seals its output on the way (no annotation makes a
/// seal), and the answer names the inputs that tell them apart.
#[test]
fn a_module_that_makes_a_seal_has_no_summary() {
    let text = "sources:\n  events: {}\ncomponents:\n  Stamp:\n    paths:\n      - { from: in, to: out, label: CR }\nstreams:\n  - { from: events, to: Stamp.in }\n  - { from: Stamp.out, to: stamped, seal: [batch] }\nsinks:\n  stamped: {}\n";
    let r = check::check_bytes("m.yaml", text.as_bytes(), &Default::default());
    let Outcome::Analysed(a) = &r.outcome else {
        panic!("valid")
    };
    let Summary::None(why) = summarize(&a.dataflow) else {
        panic!("no summary")
    };
    assert!(
        why.contains("the module's `stamped` is Seal(batch)"),
        "{why}"
    );
    // Control: without the seal on the way, the module is its `CR`.
    let plain = text.replace(", seal: [batch]", "");
    let r = check::check_bytes("m.yaml", plain.as_bytes(), &Default::default());
    let Outcome::Analysed(a) = &r.outcome else {
        panic!("valid")
    };
    let Summary::Exact(g) = summarize(&a.dataflow) else {
        panic!("a summary")
    };
    assert_eq!(g.paths.len(), 1);
    assert_eq!(g.paths[0].signature(), "CR");
}

/// Two order-sensitive steps whose gates share nothing are order-sensitive on no partition a
/// spec can name: `OW(*)`, not a gate of either.
#[test]
fn writes_on_disjoint_gates_summarize_to_the_star_gate() {
    let text = "sources:\n  events: {}\ncomponents:\n  PerBatch:\n    paths:\n      - { from: in, to: out, label: OW, gate: [batch] }\n  PerWord:\n    paths:\n      - { from: in, to: out, label: OW, gate: [word] }\nstreams:\n  - { from: events, to: PerBatch.in }\n  - { from: PerBatch.out, to: PerWord.in }\n  - { from: PerWord.out, to: counts }\nsinks:\n  counts: {}\n";
    let r = check::check_bytes("m.yaml", text.as_bytes(), &Default::default());
    let Outcome::Analysed(a) = &r.outcome else {
        panic!("valid")
    };
    let Summary::Exact(g) = summarize(&a.dataflow) else {
        panic!("a summary")
    };
    assert_eq!(g.paths[0].signature(), "OW(*)");
    // Control: one step alone keeps its gate.
    let one = text.replace("label: OW, gate: [word]", "label: CR");
    let r = check::check_bytes("m.yaml", one.as_bytes(), &Default::default());
    let Outcome::Analysed(a) = &r.outcome else {
        panic!("valid")
    };
    let Summary::Exact(g) = summarize(&a.dataflow) else {
        panic!("a summary")
    };
    assert_eq!(g.paths[0].signature(), "OW(batch)");
}

/// The report service used by a system that declares the grey box it expects, `declared`
/// standing for its paths.
fn declaring(declared: &str) -> BTreeMap<String, String> {
    let root = root();
    BTreeMap::from([
        (
            "d/services/report.yaml".to_string(),
            std::fs::read_to_string(root.join("specs/system/services/report.yaml")).unwrap(),
        ),
        (
            "d/system.yaml".to_string(),
            format!(
                "sources:\n  clicks: {{}}\n  queries: {{}}\ncomponents:\n  R:\n    use: services/report.yaml\n    paths:\n{declared}streams:\n  - {{ from: clicks, to: R.clicks }}\n  - {{ from: queries, to: R.queries }}\n  - {{ from: R.answers, to: db }}\nsinks:\n  db: {{}}\n"
            ),
        ),
    ])
}

fn codes_of(r: &FileReport) -> Vec<&'static str> {
    r.diagnostics().iter().map(|d| d.code.id).collect()
}

/// `paths:` beside `use:` is a contract: the module must behave as that grey box. The exact
/// summary passes; a less order-sensitive path is W003 (invalid, a wrong verdict otherwise); a
/// more conservative one W004; a path the module has and the declaration lacks is W003; an
/// interface the module does not have is S005.
#[test]
fn a_declared_grey_box_is_checked_against_its_module() {
    let exact = "      - { from: clicks, to: answers, label: CW }\n      - { from: queries, to: answers, label: OR, gate: [id] }\n";
    let r = check_system(&declaring(exact), "d/system.yaml");
    assert!(
        matches!(r.outcome, Outcome::Analysed(_)),
        "{:?}",
        r.diagnostics()
    );
    let codes = codes_of(&r);
    assert!(!codes.iter().any(|c| c.starts_with('W')), "{codes:?}");

    let r = check_system(
        &declaring(&exact.replace("label: OR, gate: [id]", "label: CR")),
        "d/system.yaml",
    );
    assert!(matches!(r.outcome, Outcome::Invalid(_)));
    assert_eq!(codes_of(&r), ["W003"]);
    assert!(
        r.diagnostics()[0]
            .message
            .contains("declared CR, but its module `d/services/report.yaml` behaves as OR(id)"),
        "{}",
        r.diagnostics()[0].message
    );

    let r = check_system(
        &declaring(&exact.replace("label: OR, gate: [id]", "label: OW, gate: \"*\"")),
        "d/system.yaml",
    );
    assert!(matches!(r.outcome, Outcome::Analysed(_)));
    assert!(codes_of(&r).contains(&"W004"), "{:?}", codes_of(&r));

    let r = check_system(
        &declaring("      - { from: clicks, to: answers, label: CW }\n"),
        "d/system.yaml",
    );
    assert_eq!(codes_of(&r), ["W003"]);
    assert!(
        r.diagnostics()[0]
            .message
            .contains("does not declare the path queries -> answers (OR(id))")
    );

    let r = check_system(
        &declaring(&exact.replace("to: answers, label: CW", "to: answer, label: CW")),
        "d/system.yaml",
    );
    assert!(codes_of(&r).contains(&"S005"), "{:?}", codes_of(&r));
}

/// `check` gives each used file's summary, in the human report and in JSON.
#[test]
fn check_gives_each_used_files_summary() {
    let human = stdout(&blazes(&["check", "specs/system/poor.yaml"]));
    assert!(
        human.contains("summary of `specs/system/services/report.yaml` (used as `Reports`): clicks -> answers: CW; queries -> answers: OR(id); not replicated"),
        "{human}"
    );
    let json: serde_json::Value = serde_json::from_str(&stdout(&blazes(&[
        "check",
        "--format",
        "json",
        "specs/system/poor.yaml",
    ])))
    .unwrap();
    let s = &json["files"][0]["summaries"];
    let ad = s
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["file"] == "specs/system/services/ad-server.yaml")
        .unwrap();
    assert_eq!(ad["instances"], serde_json::json!(["EuAds", "UsAds"]));
    assert_eq!(ad["summary"]["exact"], true);
    assert_eq!(ad["summary"]["paths"][0]["annotation"], "CR");
    // A flat spec has no `summaries`.
    let flat: serde_json::Value = serde_json::from_str(&stdout(&blazes(&[
        "check",
        "--format",
        "json",
        "specs/wordcount.yaml",
    ])))
    .unwrap();
    assert!(flat["files"][0].get("summaries").is_none());
}

/// `blazes summarize` prints a block that, pasted where the module is used, checks clean
/// against it (the contract above); exit 1 with the reason when there is no summary, 2 on an
/// invalid spec.
#[test]
fn summarize_prints_a_grey_box_that_stands_for_the_module() {
    let o = blazes(&["summarize", "specs/system/services/report.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let block = stdout(&o);
    assert!(
        block.starts_with("# `specs/system/services/report.yaml`: the grey box"),
        "{block}"
    );
    let body: String = block
        .lines()
        .filter(|l| {
            !l.starts_with('#') && !l.starts_with("paths:") && !l.starts_with("replicated:")
        })
        .map(|l| format!("    {l}\n"))
        .collect();
    let r = check_system(&declaring(&body), "d/system.yaml");
    assert!(
        matches!(r.outcome, Outcome::Analysed(_)),
        "{:?}",
        r.diagnostics()
    );
    assert!(
        !codes_of(&r).iter().any(|c| c.starts_with('W')),
        "{:?}",
        codes_of(&r)
    );

    let dir = tempfile::tempdir().unwrap();
    let stamp = dir.path().join("stamp.yaml");
    std::fs::write(&stamp, "sources:\n  events: {}\ncomponents:\n  Stamp:\n    paths:\n      - { from: in, to: out, label: CR }\nstreams:\n  - { from: events, to: Stamp.in }\n  - { from: Stamp.out, to: stamped, seal: [batch] }\nsinks:\n  stamped: {}\n").unwrap();
    let o = blazes(&["summarize", stamp.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("no summary of `stamp`"),
        "{}",
        stderr(&o)
    );
    let json: serde_json::Value = serde_json::from_str(&stdout(&blazes(&[
        "summarize",
        "--format",
        "json",
        stamp.to_str().unwrap(),
    ])))
    .unwrap();
    assert_eq!(json["version"], 1);
    assert_eq!(json["files"][0]["summary"]["exact"], false);

    let bad = dir.path().join("bad.yaml");
    std::fs::write(&bad, "sources: [\n").unwrap();
    let o = blazes(&["summarize", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert_clean_failure(&o);
}

/// `render` writes each instance's summary on its frame (for a coordinated instance, the one
/// it behaves as), which Graphviz draws; without the summaries (the control) the frame has
/// only its name.
#[test]
fn render_writes_the_summary_on_each_frame() {
    let o = blazes(&["render", "specs/system/poor.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let dot = stdout(&o);
    let frame = dot
        .lines()
        .skip_while(|l| !l.contains("subgraph \"cluster_Reports\""))
        .nth(1)
        .expect("the Reports frame");
    // Reports is `replicas: 2`: its frame has the summary it behaves as, replicated.
    assert!(
        frame.contains("summary of specs/system/services/report.yaml with replicas: 2:"),
        "{frame}"
    );
    assert!(frame.contains("queries → answers: OR(id)"), "{frame}");
    assert!(!frame.contains("not replicated"), "{frame}");
    // The cache, used as it is written, has the file's summary.
    let cache = dot
        .lines()
        .skip_while(|l| !l.contains("subgraph \"cluster_Front\""))
        .nth(1)
        .expect("the Front frame");
    assert!(
        cache.contains("summary of specs/system/services/cache.yaml:"),
        "{cache}"
    );
    let r = check::check_composed(
        "specs/system/poor.yaml",
        std::fs::read(root().join("specs/system/poor.yaml")).unwrap(),
        &Default::default(),
        &mut BTreeMap::from(["ad-server", "report", "cache"].map(|m| {
            let p = format!("specs/system/services/{m}.yaml");
            let t = std::fs::read_to_string(root().join(&p)).unwrap();
            (p, t)
        })),
    );
    let Outcome::Analysed(a) = &r.outcome else {
        panic!("valid")
    };
    let plain = blazes::render::to_dot(&a.dataflow, &a.analysis, &[]);
    assert!(!plain.contains("queries → answers"));
    assert_eq!(
        blazes::render::to_dot_summarized(&a.dataflow, &a.analysis, &[], &a.summaries),
        dot
    );
    if require_dot() {
        let svg = blazes(&["render", "--format", "svg", "specs/system/poor.yaml"]);
        assert_eq!(svg.status.code(), Some(0), "{}", stderr(&svg));
        assert!(stdout(&svg).contains("queries → answers: OR(id)"));
    }
}

/// `render --collapse` draws each instance as one box with its summary and the points of
/// order inside; the streams that cross a box's boundary end at it, those inside are not
/// drawn. Control: the same spec drawn without it has the components in their frames. A flat
/// spec has nothing to collapse and is drawn as it is; `--plan` with it is a usage error.
#[test]
fn render_collapse_draws_each_instance_as_its_summary() {
    let o = blazes(&["render", "--collapse", "specs/system/poor.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let dot = stdout(&o);
    assert!(!dot.contains("cluster_"), "{dot}");
    assert!(!dot.contains("\n  c0["), "{dot}");
    let reports = dot.lines().find(|l| l.contains("<B>Reports</B>")).unwrap();
    assert!(reports.contains("queries → answers: OR(id)"), "{reports}");
    assert!(reports.contains("1 point of order inside"), "{reports}");
    // The report service's answers reach the cache: `Inst`, box to box.
    let x = |name: &str| {
        dot.lines()
            .find(|l| l.contains(&format!("<B>{name}</B>")))
            .and_then(|l| l.trim().split('[').next())
            .unwrap()
            .to_string()
    };
    let edge = format!("{} -> {} ", x("Reports"), x("Front"));
    let line = dot
        .lines()
        .find(|l| l.trim().starts_with(&edge))
        .expect("the edge");
    assert!(line.contains(">Inst<"), "{line}");
    assert_eq!(
        stdout(&blazes(&["render", "--collapse", "specs/system/poor.yaml"])),
        dot
    );

    let full = stdout(&blazes(&["render", "specs/system/poor.yaml"]));
    assert!(full.contains("cluster_Reports") && full.contains("\n    c2["));

    let flat = stdout(&blazes(&["render", "--collapse", "specs/wordcount.yaml"]));
    assert_eq!(flat, stdout(&blazes(&["render", "specs/wordcount.yaml"])));

    let o = blazes(&["render", "--collapse", "--plan", "specs/system/poor.yaml"]);
    assert_eq!(o.status.code(), Some(2));
    if require_dot() {
        let svg = blazes(&[
            "render",
            "--collapse",
            "--format",
            "svg",
            "specs/system/poor.yaml",
        ]);
        assert_eq!(svg.status.code(), Some(0), "{}", stderr(&svg));
    }
}

/// A point of order that exists only because of how the outer graph feeds a module (its file,
/// checked on its own, seals the input) says so, pointing at the `use:`. Control: the report
/// service, whose point is there on its own too, gets no such note.
#[test]
fn a_point_made_by_the_outer_feed_says_so() {
    let files = BTreeMap::from([
        (
            "f/count.yaml".to_string(),
            "sources:\n  events: { seal: [k] }\ncomponents:\n  Count:\n    paths:\n      - { from: in, to: out, label: OW, gate: [k] }\nstreams:\n  - { from: events, to: Count.in }\n  - { from: Count.out, to: counts }\nsinks:\n  counts: {}\n".to_string(),
        ),
        (
            "f/feed.yaml".to_string(),
            "sources:\n  raw: {}\ncomponents:\n  C: { use: count.yaml }\nstreams:\n  - { from: raw, to: C.events }\n  - { from: C.counts, to: db }\nsinks:\n  db: {}\n".to_string(),
        ),
    ]);
    let r = check_system(&files, "f/feed.yaml");
    let d = r
        .diagnostics()
        .iter()
        .find(|d| d.code.id == "C001")
        .expect("the point");
    let note = d
        .related
        .iter()
        .find(|n| n.text.contains("only because of how `C` is fed here"))
        .expect("the outer-feed note");
    assert_eq!(r.locate(note.span).0, "f/feed.yaml");
    assert!(
        note.text
            .contains("`f/count.yaml` checked on its own has no point of order at `Count`")
    );

    let root = root();
    let mut system = BTreeMap::new();
    for p in [
        "specs/system/poor.yaml",
        "specs/system/services/ad-server.yaml",
        "specs/system/services/report.yaml",
        "specs/system/services/cache.yaml",
    ] {
        system.insert(
            p.to_string(),
            std::fs::read_to_string(root.join(p)).unwrap(),
        );
    }
    let r = check_system(&system, "specs/system/poor.yaml");
    let d = r
        .diagnostics()
        .iter()
        .find(|d| d.code.id == "C002")
        .expect("the report's point");
    assert!(
        !d.related.iter().any(|n| n.text.contains("only because")),
        "{:?}",
        d.related
    );
}

/// The second location of a point made by the outer feed, the `use:`, is in every machine
/// format, named by its file where the finding's file is another. Control: the provenance
/// chain, which JSON and SARIF carry elsewhere (`points_of_order`, the origin), is not repeated
/// as related notes.
#[test]
fn the_outer_feed_note_is_in_every_format() {
    let files = [
        (
            "count.yaml",
            "sources:\n  events: { seal: [k] }\ncomponents:\n  Count:\n    paths:\n      - { from: in, to: out, label: OW, gate: [k] }\nstreams:\n  - { from: events, to: Count.in }\n  - { from: Count.out, to: counts }\nsinks:\n  counts: {}\n",
        ),
        (
            "feed.yaml",
            "sources:\n  raw: {}\ncomponents:\n  C: { use: count.yaml }\nstreams:\n  - { from: raw, to: C.events }\n  - { from: C.counts, to: db }\nsinks:\n  db: {}\n",
        ),
    ];
    let note = "only because of how `C` is fed here: `count.yaml` checked on its own has no point of order at `Count`";
    let o = on_disk(
        "feed-json",
        &files,
        &["check", "feed.yaml", "--format", "json"],
    );
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let diags = doc["files"][0]["diagnostics"].as_array().unwrap();
    let c001 = diags.iter().find(|d| d["code"] == "C001").unwrap();
    assert_eq!(
        c001["related"],
        serde_json::json!([{"line": 4, "column": 13, "message": note}])
    );
    let c004 = diags.iter().find(|d| d["code"] == "C004").unwrap();
    assert!(c004.get("related").is_none(), "{c004}");

    let o = on_disk(
        "feed-sarif",
        &files,
        &["check", "feed.yaml", "--format", "sarif"],
    );
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let results = doc["runs"][0]["results"].as_array().unwrap();
    let c001 = results.iter().find(|r| r["ruleId"] == "C001").unwrap();
    let related = c001["relatedLocations"].as_array().unwrap();
    let last = related.last().unwrap();
    assert_eq!(last["message"]["text"], format!("{note}."));
    assert_eq!(
        last["physicalLocation"]["artifactLocation"]["uri"],
        "feed.yaml"
    );
    assert_eq!(last["physicalLocation"]["region"]["startLine"], 4);

    let o = on_disk(
        "feed-github",
        &files,
        &["check", "feed.yaml", "--format", "github"],
    );
    let out = stdout(&o);
    let c001 = out.lines().find(|l| l.contains("C001")).unwrap();
    assert!(c001.starts_with("::error file=count.yaml,line=6"), "{c001}");
    assert!(
        c001.contains(&format!("%0A  feed.yaml:4:13: {note}")),
        "{c001}"
    );
    // The origin and the failing sink are in the using file, and say so.
    assert!(
        c001.contains("%0A  feed.yaml:6:13: Async from here"),
        "{c001}"
    );
    assert!(c001.contains("%0A  feed.yaml:9:3: sink `db`"), "{c001}");
}

/// An instance that its composites coordinate (`order:`, `replicas:`, around it or around an
/// inline dataflow holding it) gets the summary it behaves as: its file's, with the grey box
/// given that order and the replicas' reconciliation. Controls: the uncoordinated instance has
/// no such entry, and the same grey box without the order does not behave as the ordered
/// instance (the order on the grey box is what makes the summary exact).
#[test]
fn a_coordinated_instance_has_its_own_summary() {
    let mut files = regions();
    files.insert(
        "s/system.yaml".to_string(),
        "sources:\n  clicks: {}\ncomponents:\n  Eu: { use: services/billing.yaml }\n  Us: { use: services/billing.yaml, order: global }\n  Asia: { use: services/billing.yaml, order: [id], replicas: 3 }\n  W:\n    order: [id]\n    dataflow:\n      sources:\n        i: {}\n      components:\n        In: { use: services/billing.yaml }\n      streams:\n        - { from: i, to: In.orders }\n        - { from: In.invoices, to: o }\n      sinks:\n        o: {}\nstreams:\n  - { from: clicks, to: Eu.orders }\n  - { from: clicks, to: Us.orders }\n  - { from: clicks, to: Asia.orders }\n  - { from: clicks, to: W.i }\n  - { from: Eu.invoices, to: db }\n  - { from: Us.invoices, to: db }\n  - { from: Asia.invoices, to: db }\n  - { from: W.o, to: db }\nsinks:\n  db: {}\n".to_string(),
    );
    let r = check_system(&files, "s/system.yaml");
    let Outcome::Analysed(a) = &r.outcome else {
        panic!("valid: {:?}", r.diagnostics())
    };
    let m = &a.summaries[0];
    assert_eq!(m.instances, ["Eu", "Us", "Asia", "W.In"]);
    let got: Vec<(Vec<&str>, String, String)> = m
        .coordinated
        .iter()
        .map(|c| {
            let Summary::Exact(g) = &c.summary else {
                panic!("{} has no summary: {:?}", c.describe(), c.summary)
            };
            let paths: Vec<String> = g.paths.iter().map(|p| p.signature()).collect();
            (
                c.instances.iter().map(String::as_str).collect(),
                c.describe(),
                format!("{} replicated={}", paths.join(";"), g.replicated),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (
                vec!["Us"],
                "`order: global`".to_string(),
                "OW(id) replicated=false".to_string()
            ),
            (
                vec!["Asia"],
                "`order: [id]`, `replicas: 3`".to_string(),
                "OW(id) replicated=true".to_string()
            ),
            (
                vec!["W.In"],
                "`order: [id]`".to_string(),
                "OW(id) replicated=false".to_string()
            ),
        ]
    );
    let human = blazes::report::summary::human(&a.summaries);
    assert!(
        human.contains("summary of `s/services/billing.yaml` as `Asia` (with `order: [id]`, `replicas: 3`): orders -> invoices: OW(id)\n"),
        "{human}"
    );

    // The control: Us's module with its global order, against a grey box without one.
    let alone = check_system(&regions(), "s/services/billing.yaml");
    let Outcome::Analysed(b) = &alone.outcome else {
        panic!("valid")
    };
    let mut ordered = b.dataflow.clone();
    ordered.components[0].order = Some(blazes::graph::Order::Global);
    assert!(matches!(
        blazes::analysis::summary::summarize_with(&ordered, None, None),
        Summary::None(_)
    ));
    assert!(matches!(
        blazes::analysis::summary::summarize_with(
            &ordered,
            Some(&blazes::analysis::summary::OrderNames::Global),
            None
        ),
        Summary::Exact(_)
    ));
}

const VIEWS_SYSTEM: &str = "# A dashboard fed by a Kafka Streams application, used as its printed topology.\nsources:\n  views: {}\ncomponents:\n  Views: { use: apps/views.txt, from: kafka-streams }\n  Dash:\n    paths:\n      - { from: in, to: out, label: OW, gate: [page] }\nstreams:\n  - { from: views, to: Views.page-views }\n  - { from: Views.views-per-page-changelog-out, to: Dash.in }\n  - { from: Dash.out, to: db }\nsinks:\n  db: {}\n";

fn topology(name: &str) -> String {
    std::fs::read_to_string(
        root()
            .join("tests/fixtures/import/kafka-streams")
            .join(name),
    )
    .unwrap()
}

/// A composite can use the topology an engine prints (`from: kafka-streams`): the module is
/// the spec `blazes import` writes from it, its findings located in the topology. It is the
/// same system as the one using the imported spec's file; the control removes the order the
/// importer derived from that file, which must change what the analysis finds.
#[test]
fn a_topology_an_engine_prints_is_a_module() {
    let topo = topology("count-by-key.txt");
    let files = BTreeMap::from([
        ("t/apps/views.txt".to_string(), topo.clone()),
        ("t/system.yaml".to_string(), VIEWS_SYSTEM.to_string()),
    ]);
    let r = check_system(&files, "t/system.yaml");
    let Outcome::Analysed(a) = &r.outcome else {
        panic!("valid: {:?}", r.diagnostics())
    };
    assert!(
        a.dataflow
            .components
            .iter()
            .any(|c| c.name == "Views.KSTREAM-AGGREGATE-0000000002"),
        "{:?}",
        a.dataflow
            .components
            .iter()
            .map(|c| &c.name)
            .collect::<Vec<_>>()
    );
    // The importer's warning is in the topology, at the operator's name.
    let d = r
        .diagnostics()
        .iter()
        .find(|d| d.code.id == "I002")
        .unwrap();
    let (path, text, local) = r.locate(d.primary.as_ref().unwrap().span);
    assert_eq!(path, "t/apps/views.txt");
    assert_eq!(
        &text[local.offset..local.end()],
        "KSTREAM-AGGREGATE-0000000002"
    );

    let catalog = blazes::import::Catalog::load(
        blazes::import::Engine::KafkaStreams,
        None,
        &Default::default(),
    )
    .unwrap();
    let yaml = blazes::import::import(
        blazes::import::Engine::KafkaStreams,
        &topo,
        &catalog,
        "views",
        &Default::default(),
    )
    .unwrap()
    .spec;
    let as_yaml = |module: String| {
        BTreeMap::from([
            ("t/apps/views.yaml".to_string(), module),
            (
                "t/system.yaml".to_string(),
                VIEWS_SYSTEM.replace("apps/views.txt, from: kafka-streams", "apps/views.yaml"),
            ),
        ])
    };
    let same = check_system(&as_yaml(yaml.clone()), "t/system.yaml");
    assert_eq!(findings(&r), findings(&same));
    let unordered: String = yaml
        .lines()
        .filter(|l| !l.trim_start().starts_with("order:"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_ne!(unordered, yaml);
    let control = check_system(&as_yaml(unordered), "t/system.yaml");
    assert_ne!(findings(&r), findings(&control));
}

#[test]
fn a_topology_module_that_cannot_be_read_exits_2_located() {
    let topo = topology("count-by-key.txt");
    let unknown = VIEWS_SYSTEM.replace("from: kafka-streams", "from: kafka-stream");
    let o = on_disk(
        "topology-engine",
        &[("system.yaml", &unknown), ("apps/views.txt", &topo)],
        &["check", "system.yaml", "--format", "json"],
    );
    assert_eq!(o.status.code(), Some(2));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let d = &doc["files"][0]["diagnostics"][0];
    assert_eq!(
        d["message"],
        "`from` of composite `Views` names no engine: `kafka-stream`"
    );
    assert_eq!(
        d["help"],
        "did you mean `kafka-streams`? the engines blazes imports are: `kafka-streams`, `flink`, `storm-flux`"
    );
    assert_eq!(
        (d["line"].as_u64(), d["column"].as_u64()),
        (Some(5), Some(39))
    );

    let alone = VIEWS_SYSTEM.replace(
        "{ use: apps/views.txt, from: kafka-streams }",
        "{ from: kafka-streams, paths: [{ from: page-views, to: out, label: CR }] }",
    );
    let o = on_disk(
        "topology-no-use",
        &[("system.yaml", &alone)],
        &["check", "system.yaml"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stdout(&o).contains("component `Views` gives `from` without `use`"),
        "{}",
        stdout(&o)
    );

    // A file that is no Kafka Streams topology: the importer's error, in that file.
    let o = on_disk(
        "topology-broken",
        &[
            ("system.yaml", VIEWS_SYSTEM),
            (
                "apps/views.txt",
                "Topologies:\n   Sub-topology: 0\n    Source: S (topics: [page-views])\n      --> NOWHERE\n",
            ),
        ],
        &["check", "system.yaml", "--format", "json"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let d = &doc["files"][0]["diagnostics"][0];
    assert_eq!(d["file"], "apps/views.txt", "{d}");
    assert_eq!(
        d["used_from"],
        "in `apps/views.txt`, used as `Views` by `system.yaml:5`"
    );
}

/// A plan that needs a mechanism inside a topology cannot write it (the file is the engine's
/// output): `plan --in-place` says where it is needed and writes nothing.
#[test]
fn plan_in_place_does_not_edit_a_topology() {
    let system = "sources:\n  o: {}\n  p: {}\ncomponents:\n  Pay: { use: joins.txt, from: kafka-streams }\nstreams:\n  - { from: o, to: Pay.orders }\n  - { from: p, to: Pay.payments }\n  - { from: Pay.paid-orders, to: db }\n  - { from: Pay.orders-with-payment-or-not, to: db }\nsinks:\n  db: {}\n";
    let topo = topology("stream-stream-joins.txt");
    let o = on_disk(
        "topology-plan",
        &[("system.yaml", system), ("joins.txt", &topo)],
        &["plan", "--in-place", "system.yaml"],
    );
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("topology-plan");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "inside `joins.txt`, a topology Kafka Streams prints; make the application provide it"
        ),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("joins.txt")).unwrap(),
        topo
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("system.yaml")).unwrap(),
        system
    );
}

/// The plan document lists a spec's warnings as `check --format json` does: a warning inside
/// a used file (here the importer's, in a topology) has that file, its line there and the chain
/// of uses; its line counted in the root's text instead (the control) would be line 20.
#[test]
fn plan_json_locates_a_warning_in_the_used_file() {
    let o = blazes(&[
        "plan",
        "--no-simulate",
        "--format",
        "json",
        "specs/system/dashboard.yaml",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let d = &doc["files"][0]["diagnostics"][0];
    assert_eq!(d["code"], "I002");
    assert_eq!(d["file"], "specs/system/apps/page-views.txt");
    assert_eq!(
        (d["line"].as_u64(), d["column"].as_u64()),
        (Some(8), Some(16))
    );
    assert_eq!(
        d["used_from"],
        "in `specs/system/apps/page-views.txt`, used as `Views` by `specs/system/dashboard.yaml:10`"
    );
    let check: serde_json::Value = serde_json::from_slice(
        &blazes(&["check", "--format", "json", "specs/system/dashboard.yaml"]).stdout,
    )
    .unwrap();
    let same = check["files"][0]["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["code"] == "I002")
        .unwrap();
    assert_eq!(d, same);
}
