//! Composition (`use:`/`dataflow:`, `docs/compose.md`): a composed spec is checked as its
//! flattened graph. The property test writes random composed specs together with their flat
//! copy, written independently of `compose::expand`, and holds the labels, points of order and
//! plans of both equal; its control breaks one interface mapping in the flat copy, which must
//! change what the analysis finds. The rest: errors of composition (cycles, missing files,
//! expansion bombs) exit 2 located in the file at fault, and a finding in a used file is
//! located in that file in every format.

mod common;

use std::collections::BTreeMap;

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

#[test]
fn plan_apply_refuses_a_composed_spec_and_writes_nothing() {
    let out = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("compose-apply.yaml");
    let _ = std::fs::remove_file(&out);
    let o = blazes(&[
        "plan",
        "--apply",
        out.to_str().unwrap(),
        "specs/system/poor.yaml",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("`--apply` does not yet write plans into composed specs"),
        "{}",
        stderr(&o)
    );
    assert!(!out.exists());
    // The control: the flat ad network's plan is written.
    let o = blazes(&[
        "plan",
        "--apply",
        out.to_str().unwrap(),
        "specs/ad-poor.yaml",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(out.exists());
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
fn a_composite_cannot_also_have_paths_nor_pass_an_input_straight_through() {
    let text = "components:\n  B:\n    use: b.yaml\n    paths: [{ from: x, to: y, label: CR }]\n";
    let r = check::check_bytes("a.yaml", text.as_bytes(), &Default::default());
    assert_eq!(r.exit_code(), 2);
    assert_eq!(
        r.diagnostics()[0].message,
        "component `B` is a composite (`use`), so it cannot have `paths`"
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
