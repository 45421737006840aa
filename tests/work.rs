//! The analysis stays linear in the size of a spec, counted in steps, not timed (issue 29: a
//! scan of every sink and source per implicit sink made `check` quadratic, half of it at 300k
//! components, and no test saw it). `blazes::analysis::work` counts the steps of the analysis
//! beyond propagation; on generated specs of 1k and 10k components the steps per component
//! must stay bounded. The negative control runs the same analysis with the old scan
//! (`NameLookup::Scan`) and the guard fails on it.

use blazes::analysis::work::{self, NameLookup};
use blazes::analysis::{Analysis, FailOn};
use blazes::generator::{GenOptions, generate};
use blazes::{graph, spec};

/// The analysis of `blazes gen --components n --seed 1`'s spec, and its steps per component.
fn steps_per_component(n: usize, lookup: NameLookup) -> (Analysis, f64) {
    let text = generate(&GenOptions::default().components(n).seed(1));
    let (spec, diags) = spec::parse(&text, &spec::Limits::default());
    assert!(diags.is_empty(), "a generated spec is valid");
    let (mut df, diags) = graph::build(spec.expect("a spec"), "gen");
    assert!(diags.is_empty(), "a generated spec resolves");
    work::reset();
    let mut a = work::analyze_looking_up(&mut df, FailOn::default(), lookup);
    // And what `check` does after it: the helps of the points of order, verified by the
    // planner's labeling within a budget.
    let mut diags = std::mem::take(&mut a.diagnostics);
    blazes::plan::advise(&df, &a, &mut diags, FailOn::default());
    a.diagnostics = diags;
    let steps = work::steps();
    (a, steps as f64 / n as f64)
}

/// Steps per component at 10k over those at 1k: about 1 when the work is linear, about 10 when
/// it is quadratic.
fn growth(lookup: NameLookup) -> f64 {
    let (_, small) = steps_per_component(1_000, lookup);
    let (_, big) = steps_per_component(10_000, lookup);
    big / small
}

/// What the guard allows: steps per component may vary by a fraction (the generated shapes
/// differ a little with the size), not grow with the spec.
const BOUND: f64 = 1.5;

#[test]
fn the_analysis_work_per_component_stays_bounded_as_a_spec_grows_10x() {
    let (a, per) = steps_per_component(10_000, NameLookup::Set);
    // The spec exercises what was quadratic: failing implicit sinks, whose help names a sink.
    let implicit_helps = a
        .diagnostics
        .iter()
        .filter(|d| d.code.id == "C004" && d.message.starts_with("implicit sink"))
        .count();
    assert!(
        implicit_helps > 1_000,
        "failing implicit sinks: {implicit_helps}"
    );
    // And what issue 23 added: helps whose fixes the planner's labeling verified.
    let verified = a
        .diagnostics
        .iter()
        .filter(|d| matches!(d.code.id, "C001" | "C002"))
        .filter(|d| {
            d.help
                .as_deref()
                .is_some_and(|h| h.contains("(a seal barrier)") || h.contains("`order: "))
        })
        .count();
    assert!(verified > 10, "verified helps: {verified}");
    assert!(per > 1.0, "the count counts ({per} steps per component)");
    let g = growth(NameLookup::Set);
    assert!(
        g <= BOUND,
        "steps per component grew {g:.2}x from 1k to 10k components (bound {BOUND})"
    );
}

#[test]
fn negative_control_the_guard_fails_on_the_old_scan_per_implicit_sink() {
    let g = growth(NameLookup::Scan);
    assert!(
        g > 5.0,
        "the old scan's steps per component grew only {g:.2}x from 1k to 10k"
    );
    assert!(g > BOUND, "the guard would pass the old scan ({g:.2}x)");
}

/// The findings of a spec with each lookup, as text.
fn findings(text: &str, lookup: NameLookup) -> Vec<String> {
    let (spec, _) = spec::parse(text, &spec::Limits::default());
    let (mut df, _) = graph::build(spec.expect("a spec"), "spec");
    let a = work::analyze_looking_up(&mut df, FailOn::default(), lookup);
    a.diagnostics
        .iter()
        .map(|d| format!("{} {} {:?}", d.code.id, d.message, d.help))
        .collect()
}

#[test]
fn both_lookups_give_the_same_findings() {
    let text = generate(&GenOptions::default().components(1_000).seed(1));
    assert_eq!(
        findings(&text, NameLookup::Set),
        findings(&text, NameLookup::Scan)
    );
    // An output named like a source: the help names the implicit sink `A_out` instead.
    let taken = "
sources:
  out: {}
components:
  A:
    paths:
      - { from: in, to: out, label: OW, gate: [k] }
streams:
  - { from: out, to: A.in }
";
    let set = findings(taken, NameLookup::Set);
    assert!(
        set.iter().any(|f| f.contains("to: A_out }")),
        "renamed: {set:?}"
    );
    assert_eq!(set, findings(taken, NameLookup::Scan));
}
