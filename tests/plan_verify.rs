//! `blazes plan` verifies each plan by execution: the spec with the plan in force is simulated,
//! and a sink observed worse than it tolerates fails the plan loudly. Every shipped spec's plan
//! verifies; negative controls (a plan with its mechanism removed, a simulator without the
//! seal barrier) produce a witness and the failure through the same functions the command
//! uses; `--no-simulate` gives the output as it is without the simulator; the same seed gives
//! the same bytes.

mod common;

use blazes::check::{Options, Outcome, check_bytes};
use blazes::label::FailOn;
use blazes::plan::{self, Status};
use blazes::report::{plan_human, plan_json};
use blazes::simulate::verify::{self, Verification};
use blazes::simulate::{self, Knobs, Observed};
use common::{blazes, root, stderr, stdout, yaml_files};
use serde_json::Value;

/// Fewer schedules than the default keep the debug build fast; the shipped specs are small.
const SCHEDULES: &str = "300";

fn plan_json_doc(args: &[&str]) -> (Value, i32) {
    let mut all = vec!["plan", "--format", "json"];
    all.extend_from_slice(args);
    let o = blazes(&all);
    let v = serde_json::from_str(&stdout(&o))
        .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", stdout(&o)));
    (v, o.status.code().unwrap_or(-1))
}

#[test]
fn the_plan_of_every_shipped_spec_verifies() {
    let specs = yaml_files("specs");
    for spec in &specs {
        let (v, code) = plan_json_doc(&[spec, "--schedules", SCHEDULES]);
        let (plain, plain_code) = plan_json_doc(&[spec, "--no-simulate"]);
        assert_eq!(
            code, plain_code,
            "{spec}: verification changes no exit code"
        );
        let f = &v["files"][0];
        if f["status"] == "unrepairable" {
            assert!(f.get("simulation").is_none(), "{spec}: nothing to verify");
            continue;
        }
        let sim = &f["simulation"];
        assert_eq!(sim["verified"], true, "{spec}: {sim}");
        assert_eq!(sim["witness"], Value::Null, "{spec}");
        assert_eq!(sim["seed"], 1);
        assert_eq!(sim["replicas"], 2);
        let n = sim["schedules"].as_u64().unwrap();
        assert!((1..=300).contains(&n), "{spec}: {n}");
        // The simulation is the only addition to the document.
        let mut less = v.clone();
        less["files"][0]
            .as_object_mut()
            .unwrap()
            .remove("simulation");
        assert_eq!(less, plain, "{spec}");
    }
    // `--allow seal,keyed` cannot repair the star word count: nothing is verified.
    let (v, code) = plan_json_doc(&["specs/wordcount-star.yaml", "--allow", "seal,keyed"]);
    assert_eq!(code, 1);
    assert!(v["files"][0].get("simulation").is_none());
}

/// The human output is the plan as `--no-simulate` prints it, then the verification's line.
#[test]
fn human_output_says_how_many_schedules_verified_the_plan() {
    for spec in ["specs/wordcount.yaml", "specs/wordcount-sealed.yaml"] {
        let o = blazes(&["plan", spec]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        assert!(o.stderr.is_empty(), "{}", stderr(&o));
        let plain = blazes(&["plan", spec, "--no-simulate"]);
        let text = stdout(&o);
        let rest = text
            .strip_prefix(stdout(&plain).as_str())
            .unwrap_or_else(|| panic!("{spec}: {text}"));
        assert!(
            rest == "  verified: no sink observed worse than it tolerates in 1,000 random schedules with seed 1, 2 instances per replicated component\n"
                || rest.starts_with("  verified: no sink observed worse than it tolerates in the "),
            "{spec}: {rest}"
        );
    }
    insta::assert_snapshot!(
        "wordcount_verified",
        stdout(&blazes(&[
            "plan",
            "specs/wordcount.yaml",
            "--schedules",
            SCHEDULES
        ]))
    );
    insta::assert_snapshot!(
        "wordcount_verified_json",
        stdout(&blazes(&[
            "plan",
            "specs/wordcount.yaml",
            "--format",
            "json",
            "--schedules",
            SCHEDULES
        ]))
    );
}

#[test]
fn the_same_seed_gives_the_same_bytes() {
    let specs = yaml_files("specs");
    for format in ["human", "json", "yaml"] {
        let mut args = vec![
            "plan",
            "--format",
            format,
            "--schedules",
            "200",
            "--seed",
            "5",
        ];
        args.extend(specs.iter().map(String::as_str));
        let a = blazes(&args);
        let b = blazes(&args);
        assert_eq!(a.stdout, b.stdout, "{format}");
        // Human output names the seed only when schedules were drawn at random.
        if format != "human" {
            assert!(stdout(&a).contains("seed") && stdout(&a).contains('5'));
        }
    }
}

#[test]
fn schedule_flags_conflict_with_no_simulate() {
    for flag in ["--schedules", "--seed", "--replicas"] {
        let o = blazes(&["plan", "--no-simulate", flag, "2", "specs/wordcount.yaml"]);
        assert_eq!(o.status.code(), Some(2), "{flag}");
        assert_eq!(
            stderr(&o),
            format!(
                "error: `{flag}` sets how the plan is verified by execution, which --no-simulate skips; drop one of them\n"
            )
        );
        assert!(o.stdout.is_empty());
    }
    let o = blazes(&[
        "plan",
        "--replicas",
        "3",
        "--schedules",
        "20",
        // Explored at random with 20 schedules (the word count is exhaustive in one).
        "specs/replicated-stage.yaml",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o)
            .contains("in 20 random schedules with seed 1, 3 instances per replicated component"),
        "{}",
        stdout(&o)
    );
}

// ---------------------------------------------------------------------------------------
// Negative controls: the verification minus one mechanism must fail, through the functions
// `blazes plan` calls (`verify_plan`, then the human and JSON renderings; the exit code is
// the unit test `a_refuted_plan_exits_1` of `src/cli/plan.rs`).

fn analysed(spec: &str) -> (blazes::check::FileReport, plan::Plan) {
    let text = std::fs::read(root().join(spec)).unwrap();
    let report = check_bytes(spec, &text, &Options::default());
    let Outcome::Analysed(a) = &report.outcome else {
        panic!("{spec} is valid");
    };
    let p = plan::plan(&a.dataflow, &plan::Options::default());
    (report, p)
}

fn options(knobs: Knobs) -> simulate::Options {
    simulate::Options::default().schedules(300).knobs(knobs)
}

fn verify(report: &blazes::check::FileReport, p: &plan::Plan, knobs: Knobs) -> Verification {
    let Outcome::Analysed(a) = &report.outcome else {
        unreachable!()
    };
    verify::verify_plan(&a.dataflow, p, FailOn::default(), &options(knobs))
}

/// The loud failure, as `blazes plan` prints and writes it.
fn assert_refuted(v: &Verification, sink: &str, observed: Observed) {
    let f = v.failure.as_ref().expect("the verification fails");
    assert_eq!(f.sink, sink);
    assert_eq!(f.observed, observed);
    let w = f.witness.as_ref().expect("with a witness");
    assert_ne!(w.sides[0].output, w.sides[1].output);
    let human = plan_human::render_verification(v);
    assert!(
        human.starts_with(&format!("  NOT VERIFIED: sink `{sink}`")),
        "{human}"
    );
    assert!(
        human.contains("this is a bug in blazes") || human.contains("which is a bug in blazes")
    );
    assert!(human.contains("= point of order: "), "{human}");
    let json = plan_json::simulation_json(v);
    assert_eq!(json["verified"], false);
    assert_eq!(json["witness"]["sink"], sink);
    assert_eq!(json["witness"]["observed"], observed.as_str());
    assert!(json["witness"]["executions"].is_array());
}

#[test]
fn a_plan_without_its_mechanism_is_refuted() {
    let (report, p) = analysed("specs/wordcount.yaml");
    assert_eq!(p.status, Status::Repaired);
    assert!(!p.mechanisms.is_empty());
    // The plan as made verifies...
    let v = verify(&report, &p, Knobs::default());
    assert!(v.verified(), "{:?}", v.failure);
    assert!(plan_human::render_verification(&v).starts_with("  verified: "));
    assert_eq!(plan_json::simulation_json(&v)["witness"], Value::Null);
    // ... and without its mechanism (the spec unrepaired) it does not.
    let mut less = p.clone();
    less.mechanisms.clear();
    assert_refuted(
        &verify(&report, &less, Knobs::default()),
        "db",
        Observed::Run,
    );
}

#[test]
fn a_simulator_without_the_seal_barrier_refutes_the_sealed_word_count() {
    let (report, p) = analysed("specs/wordcount-sealed.yaml");
    assert_eq!(
        p.status,
        Status::Ok,
        "the sealed word count needs no repair"
    );
    assert!(!p.barriers.is_empty(), "its safety rests on a seal barrier");
    assert!(verify(&report, &p, Knobs::default()).verified());
    let no_barrier = Knobs {
        no_barrier: true,
        ..Knobs::default()
    };
    assert_refuted(&verify(&report, &p, no_barrier), "db", Observed::Run);
}

/// Past the budget's size the plan is not simulated, and says so; `--schedules` still runs.
#[test]
fn a_spec_past_the_budget_is_not_verified_and_says_so() {
    let n = verify::PLAN_MAX_COMPONENTS + 1;
    assert_eq!(verify::plan_budget(n), None);
    let text = blazes::generator::generate(
        &blazes::generator::GenOptions::default()
            .components(n)
            .seed(3),
    );
    let path = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("plan-verify-big-{}.yaml", std::process::id()));
    std::fs::write(&path, text).unwrap();
    let spec = path.to_str().unwrap();
    let (v, code) = plan_json_doc(&[spec]);
    let (_, plain_code) = plan_json_doc(&[spec, "--no-simulate"]);
    assert_eq!(code, plain_code);
    let sim = &v["files"][0]["simulation"];
    assert_eq!(sim["verified"], false);
    assert_eq!(sim["schedules"], 0);
    assert!(
        sim["skipped"].as_str().unwrap().starts_with(&format!(
            "the spec has {n} components, more than `blazes plan` simulates by default (200)"
        )),
        "{sim}"
    );
    let human = stdout(&blazes(&["plan", spec]));
    assert!(
        human.contains("\n  not verified by execution: the spec has "),
        "{human}"
    );
    // An explicit --schedules runs, whatever the size.
    let (v, _) = plan_json_doc(&[spec, "--schedules", "1"]);
    assert_eq!(v["files"][0]["simulation"]["schedules"], 1);
    assert!(v["files"][0]["simulation"].get("skipped").is_none());
    let _ = std::fs::remove_file(&path);
}
