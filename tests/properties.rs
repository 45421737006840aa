//! Laws and properties: the lattice, the monotonicity of the rules, independence from the
//! order of the file, and the worklist against a naive fixpoint on random graphs with cycles.

mod common;

use std::collections::BTreeMap;

use blazes::analysis::{self, contribute, reconcile};
use blazes::check::{self, Outcome};
use blazes::graph::{Dataflow, Order};
use blazes::label::{Annotation, Gate, KeySet, Keys, Label};
use common::rng::Rng;
use common::specgen;
use proptest::prelude::*;

const ATTRS: [&str; 3] = ["k1", "k2", "k3"];

fn label_strategy() -> impl Strategy<Value = (u8, Vec<usize>)> {
    (
        0u8..5,
        proptest::collection::btree_set(0..ATTRS.len(), 0..=3)
            .prop_map(|s| s.into_iter().collect()),
    )
}

fn make(keys: &mut Keys, (kind, attrs): &(u8, Vec<usize>)) -> Label {
    match kind {
        0 => Label::Seal(keys.set_of(attrs.iter().map(|&i| ATTRS[i]))),
        1 => Label::Async,
        2 => Label::Run,
        3 => Label::Inst,
        _ => Label::Diverge,
    }
}

proptest! {
    #[test]
    fn join_is_associative_commutative_idempotent(a in label_strategy(), b in label_strategy(), c in label_strategy()) {
        let mut k = Keys::new();
        let (a, b, c) = (make(&mut k, &a), make(&mut k, &b), make(&mut k, &c));
        let ab = a.join(b, &mut k);
        let ba = b.join(a, &mut k);
        prop_assert_eq!(ab, ba);
        let ab_c = ab.join(c, &mut k);
        let bc = b.join(c, &mut k);
        let a_bc = a.join(bc, &mut k);
        prop_assert_eq!(ab_c, a_bc);
        prop_assert_eq!(a.join(a, &mut k), a);
        // The join is an upper bound.
        prop_assert!(a.le(ab, &k) && b.le(ab, &k));
    }

    #[test]
    fn seal_join_is_key_union(x in label_strategy(), y in label_strategy()) {
        let mut k = Keys::new();
        let kx = k.set_of(x.1.iter().map(|&i| ATTRS[i]));
        let ky = k.set_of(y.1.iter().map(|&i| ATTRS[i]));
        let j = Label::Seal(kx).join(Label::Seal(ky), &mut k);
        let union = k.union(kx, ky);
        prop_assert_eq!(j, Label::Seal(union));
        prop_assert_eq!(Label::Seal(kx).join(Label::Async, &mut k), Label::Async);
    }
}

/// A one-component dataflow to evaluate rules on: component `C` with a path `in -> out` of the
/// given annotation, plus a writing path `w -> out2` (CW) so that OR protection is exercised,
/// fed by a source (a spec needs a stream); the tests set the input labels themselves.
fn one_component(annotation: &str, gate: &str, replicated: bool, order: &str) -> Dataflow {
    let gate = if annotation.starts_with('O') {
        format!(", gate: {gate}")
    } else {
        String::new()
    };
    let text = format!(
        "sources:\n  s: {{}}\ncomponents:\n  C:\n    replicated: {replicated}\n{order}    paths:\n      - {{ from: in, to: out, label: {annotation}{gate} }}\n      - {{ from: w, to: out2, label: CW }}\nstreams:\n  - {{ from: s, to: C.in }}\n"
    );
    let r = check::check_bytes("t.yaml", text.as_bytes(), &check::Options::default());
    match r.outcome {
        Outcome::Analysed(a) => a.dataflow,
        Outcome::Invalid(d) => panic!("{text}\n{d:?}"),
    }
}

proptest! {
    /// Every rule, followed by reconciliation, is monotone in the input label and in the
    /// label of the writing input that protects reads.
    #[test]
    fn rules_are_monotone(
        a in label_strategy(), b in label_strategy(), w1 in label_strategy(), w2 in label_strategy(),
        ann in 0usize..4, gate in prop_oneof![Just("\"*\""), Just("[k1]"), Just("[k1, k2]")],
        replicated in any::<bool>(), order in prop_oneof![Just(""), Just("    order: global\n"), Just("    order: [k1]\n")],
    ) {
        let annotation = ["CR", "CW", "OR", "OW"][ann];
        let mut df = one_component(annotation, gate, replicated, order);
        let (x, y) = (make(&mut df.keys, &a), make(&mut df.keys, &b));
        let lo = x;
        let hi = x.join(y, &mut df.keys);
        let (v1, v2) = (make(&mut df.keys, &w1), make(&mut df.keys, &w2));
        let wlo = v1;
        let whi = v1.join(v2, &mut df.keys);
        let c = &df.components[0];
        let p = &c.paths[0];
        let w = c.paths[1].input;
        let mut ifl = vec![None; df.ifaces.len()];
        ifl[p.input.index()] = Some(lo);
        ifl[w.index()] = Some(wlo);
        let mut ifh = ifl.clone();
        ifh[p.input.index()] = Some(hi);
        ifh[w.index()] = Some(whi);
        let out_lo = reconcile(c, contribute(&df, c, p, lo, &ifl));
        let out_hi = reconcile(c, contribute(&df, c, p, hi, &ifh));
        prop_assert!(out_lo.le(out_hi, &df.keys), "{annotation} {lo:?}->{out_lo:?} but {hi:?}->{out_hi:?}");
    }
}

/// Stream labels by (from, to), sink labels by name, points of order.
type Summary = (
    BTreeMap<(String, String), String>,
    BTreeMap<String, String>,
    Vec<String>,
);

/// Labels keyed by names, so two files in different orders compare.
fn summary(text: &str) -> Option<Summary> {
    let r = check::check_bytes("t.yaml", text.as_bytes(), &check::Options::default());
    let Outcome::Analysed(a) = r.outcome else {
        return None;
    };
    let df = &a.dataflow;
    let show = |l: Option<Label>| l.map_or("Unreached".to_string(), |l| l.display(&df.keys));
    let streams = df
        .streams
        .iter()
        .enumerate()
        .map(|(i, s)| {
            (
                (s.from_text.clone(), s.to_text.clone()),
                show(a.analysis.labels.stream[i]),
            )
        })
        .collect();
    let sinks = a
        .analysis
        .sinks
        .iter()
        .map(|v| (df.sinks[v.sink.index()].name.clone(), show(v.label)))
        .collect();
    let mut points: Vec<String> = a
        .analysis
        .points
        .iter()
        .map(|p| {
            format!(
                "{}:{}:{}",
                df.components[p.component.index()].name,
                p.path,
                p.kind.as_str()
            )
        })
        .collect();
    points.sort();
    Some((streams, sinks, points))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn result_does_not_depend_on_file_order(spec in specgen::spec(6), seed in any::<u64>()) {
        let n = spec.components.len();
        let m = spec.stream_lines().len();
        let mut comps: Vec<usize> = (0..n).collect();
        let mut streams: Vec<usize> = (0..m).collect();
        // A seeded shuffle (Fisher-Yates with the shared RNG): proptest shrinks the seed.
        let mut rng = Rng(seed);
        for i in (1..n).rev() { let j = rng.below(i + 1); comps.swap(i, j); }
        for i in (1..m).rev() { let j = rng.below(i + 1); streams.swap(i, j); }
        let a = summary(&spec.yaml_in_order());
        let b = summary(&spec.yaml(&comps, &streams));
        prop_assert!(a.is_some(), "generated spec is valid:\n{}", spec.yaml_in_order());
        prop_assert_eq!(a, b);
    }

    #[test]
    fn worklist_matches_the_naive_fixpoint(spec in specgen::spec(8)) {
        let text = spec.yaml_in_order();
        let r = check::check_bytes("t.yaml", text.as_bytes(), &check::Options::default());
        let Outcome::Analysed(a) = r.outcome else { panic!("invalid generated spec:\n{text}") };
        let mut df = a.dataflow;
        let fast = analysis::propagate(&mut df);
        let (iface, stream) = analysis::propagate_naive(&mut df);
        prop_assert_eq!(&fast.iface, &iface, "{}", text);
        prop_assert_eq!(&fast.stream, &stream, "{}", text);
    }
}

/// The differential test can fail: a worklist that forgets to re-queue consumers (simulated by
/// cutting the feedback stream of a cycle) disagrees with the naive fixpoint.
#[test]
fn the_differential_check_detects_a_missed_update() {
    let text = std::fs::read_to_string(common::root().join("specs/cycle-taint.yaml")).unwrap();
    let r = check::check_bytes("t.yaml", text.as_bytes(), &check::Options::default());
    let Outcome::Analysed(a) = r.outcome else {
        panic!()
    };
    let mut df = a.dataflow;
    let mut fast = analysis::propagate(&mut df);
    let (iface, _) = analysis::propagate_naive(&mut df);
    assert_eq!(fast.iface, iface);
    // Pretend the feedback never arrived: the labels now differ, so the comparison bites.
    let routed = df
        .ifaces
        .iter()
        .position(|f| f.name == "routed" && f.direction == blazes::graph::Direction::Input)
        .unwrap();
    fast.iface[routed] = Some(Label::Async);
    assert_ne!(fast.iface, iface);
}

/// Keyed order protects exactly the gates that contain its keys.
#[test]
fn keyed_order_covers_gates_that_contain_its_keys() {
    let df = one_component("OW", "[k1, k2]", false, "    order: [k1]\n");
    let c = &df.components[0];
    assert_eq!(c.order.map(|o| matches!(o, Order::Keys(_))), Some(true));
    let g12 = match c.paths[0].gate {
        Some(Gate::Keys(k)) => k,
        _ => unreachable!(),
    };
    assert!(c.ordered_for(Gate::Keys(g12), &df.keys));
    assert!(!c.ordered_for(Gate::Star, &df.keys));
    assert!(
        !c.ordered_for(Gate::Keys(KeySet::EMPTY), &df.keys)
            || df.keys.attrs(KeySet::EMPTY).is_empty()
    );
    assert_eq!(c.paths[0].annotation, Annotation::OW);
}

// The annotation monotonicity law (section 5 of the label algebra): for the same inputs,
// replacing a path's annotation by a more order-sensitive one (CR -> CW -> OW(g), CR -> OR(g),
// a gate by a smaller one) never makes any label better.

/// Every label over the attributes the one-component dataflows use.
fn all_labels(keys: &mut Keys) -> Vec<Label> {
    let mut v = vec![
        Label::Seal(KeySet::EMPTY),
        Label::Seal(keys.set_of(["k1"])),
        Label::Seal(keys.set_of(["k2"])),
        Label::Seal(keys.set_of(["k1", "k2"])),
    ];
    v.extend([Label::Async, Label::Run, Label::Inst, Label::Diverge]);
    v
}

/// Pairs (weaker, stronger) of annotations with their gates: each step of the law, and the
/// transitive ones.
const STRENGTHENINGS: &[(&str, &str)] = &[
    ("CR", "CW"),
    ("CR", "OW, gate: [k1, k2]"),
    ("CR", "OR, gate: [k1, k2]"),
    ("CR", "OR, gate: \"*\""),
    ("CW", "OW, gate: [k1, k2]"),
    ("CW", "OW, gate: [k1]"),
    ("CW", "OW, gate: \"*\""),
    ("OW, gate: [k1, k2]", "OW, gate: [k1]"),
    ("OW, gate: [k1]", "OW, gate: \"*\""),
    ("OR, gate: [k1, k2]", "OR, gate: [k1]"),
    ("OR, gate: [k1]", "OR, gate: \"*\""),
];

/// Component `C` with the weaker path `in -> a`, the stronger path `in -> b` (same input, so
/// the same label reaches both) and a writing path `w -> c` whose input protects reads (or not),
/// fed by a source (a spec needs a stream); the law sets the input labels itself.
fn weaker_and_stronger(weaker: &str, stronger: &str, replicated: bool, order: &str) -> Dataflow {
    let text = format!(
        "sources:\n  s: {{}}\ncomponents:\n  C:\n    replicated: {replicated}\n{order}    paths:\n      - {{ from: in, to: a, label: {weaker} }}\n      - {{ from: in, to: b, label: {stronger} }}\n      - {{ from: w, to: c, label: CW }}\nstreams:\n  - {{ from: s, to: C.in }}\n"
    );
    let r = check::check_bytes("t.yaml", text.as_bytes(), &check::Options::default());
    match r.outcome {
        Outcome::Analysed(a) => a.dataflow,
        Outcome::Invalid(d) => panic!("{text}\n{d:?}"),
    }
}

/// Checks the law for every strengthening, input label, writer label, replication and order,
/// with `reconcile` as the reconciliation rule; returns the first violation.
fn annotation_law_violation(
    reconcile: fn(&blazes::graph::Component, analysis::Contribution) -> Label,
) -> Option<String> {
    for &(weaker, stronger) in STRENGTHENINGS {
        for replicated in [false, true] {
            for order in ["", "    order: global\n", "    order: [k1]\n"] {
                let mut df = weaker_and_stronger(weaker, stronger, replicated, order);
                let labels = all_labels(&mut df.keys);
                let c = &df.components[0];
                let (pw, ps, w) = (&c.paths[0], &c.paths[1], c.paths[2].input);
                for &l in &labels {
                    for &wl in &labels {
                        let mut iface = vec![None; df.ifaces.len()];
                        iface[pw.input.index()] = Some(l);
                        iface[w.index()] = Some(wl);
                        let before = reconcile(c, contribute(&df, c, pw, l, &iface));
                        let after = reconcile(c, contribute(&df, c, ps, l, &iface));
                        if !before.le(after, &df.keys) {
                            return Some(format!(
                                "{weaker} -> {stronger} (replicated: {replicated}, order: {order:?}) fed {} with writer {}: {} became {}",
                                l.display(&df.keys),
                                wl.display(&df.keys),
                                before.display(&df.keys),
                                after.display(&df.keys)
                            ));
                        }
                    }
                }
            }
        }
    }
    None
}

#[test]
fn the_rules_obey_the_annotation_monotonicity_law() {
    assert_eq!(annotation_law_violation(reconcile), None);
}

/// Negative control: the rule this project used before the reference was corrected (an `Inst`
/// written into state is consumed by the write and leaves as the taint's `Run`) breaks the law,
/// and the exhaustive check finds it.
#[test]
fn the_annotation_law_catches_a_write_that_consumes_inst() {
    fn consuming(c: &blazes::graph::Component, k: analysis::Contribution) -> Label {
        if k.taint && k.label == Label::Inst && !c.replicated {
            return Label::Run;
        }
        reconcile(c, k)
    }
    let found = annotation_law_violation(consuming).expect("the old rule breaks the law");
    assert!(found.contains("fed Inst"), "{found}");
}

/// `a ⊑ b` for labels interned in two different key tables.
fn le_across(a: Option<Label>, ka: &Keys, b: Option<Label>, kb: &Keys) -> bool {
    match (a, b) {
        (None, _) => true,
        (Some(_), None) => false,
        (Some(Label::Seal(x)), Some(Label::Seal(y))) => {
            let ys = kb.names(y);
            ka.names(x).iter().all(|n| ys.contains(n))
        }
        (Some(x), Some(y)) => x.rank() <= y.rank(),
    }
}

fn analysed(text: &str) -> Option<check::Analysed> {
    match check::check_bytes("t.yaml", text.as_bytes(), &check::Options::default()).outcome {
        Outcome::Analysed(a) => Some(*a),
        Outcome::Invalid(_) => None,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// The law on whole random dataflows (cycles, seals, replication, orders): strengthen one
    /// path's annotation, and no stream or sink label gets better.
    #[test]
    fn strengthening_a_path_never_improves_a_label(
        spec in specgen::spec(6), which in any::<prop::sample::Index>(), how in 0usize..16,
        readers in any::<bool>(),
    ) {
        let mut spec = spec;
        if readers {
            // Replicated readers make `Inst`, which few random specs have otherwise.
            for c in spec.components.iter_mut().step_by(2) {
                c.replicated = true;
                c.paths[0].label = 2;
            }
        }
        let mut stronger = spec.clone();
        let wt = spec.yaml_in_order();
        let weak = analysed(&wt).expect("generated specs are valid");
        let mut paths: Vec<(usize, usize)> = spec.components.iter().enumerate()
            .flat_map(|(c, comp)| (0..comp.paths.len()).map(move |p| (c, p)))
            .collect();
        // Half the cases strengthen a path fed `Inst` when there is one: the label that only
        // an unprotected read on a replicated component makes, and the one the law is easiest
        // to break on (a write must not turn it into something better).
        let fed_inst: Vec<(usize, usize)> = paths.iter().copied().filter(|&(c, p)| {
            let comp = &weak.dataflow.components[weak.dataflow.components.iter().position(|x| x.name == format!("C{c}")).unwrap()];
            weak.analysis.labels.iface[comp.paths[p].input.index()] == Some(Label::Inst)
        }).collect();
        if how % 2 == 0 && !fed_inst.is_empty() {
            paths = fed_inst;
        }
        let (ci, pi) = paths[which.index(paths.len())];
        let p = &mut stronger.components[ci].paths[pi];
        // Labels: 0 CR, 1 CW, 2 OR, 3 OW; a gate of `None` is `*`.
        let mut options: Vec<(usize, Option<Vec<usize>>)> = Vec::new();
        match p.label {
            0 => {
                options.push((1, None));
                options.push((2, p.gate.clone()));
                options.push((3, p.gate.clone()));
            }
            1 => options.push((3, p.gate.clone())),
            _ => {}
        }
        if p.label >= 2 && let Some(g) = &p.gate {
            options.push((p.label, None));
            for drop in 0..g.len() {
                let mut smaller = g.clone();
                smaller.remove(drop);
                if !smaller.is_empty() {
                    options.push((p.label, Some(smaller)));
                }
            }
        }
        prop_assume!(!options.is_empty());
        let (label, gate) = options[(how / 2) % options.len()].clone();
        // The law's one exception (docs/algebra.md, section 5): a writing path declared on a
        // component whose `OR` read presumed an unsealed external writer replaces that writer.
        let writes = |l: usize| l == 1 || l == 3;
        let comp = &spec.components[ci];
        prop_assume!(
            !(writes(label)
                && !comp.paths.iter().any(|q| writes(q.label))
                && comp.paths.iter().any(|q| q.label == 2))
        );
        let p = &mut stronger.components[ci].paths[pi];
        p.label = label;
        p.gate = gate;
        let st = stronger.yaml_in_order();
        let strong = analysed(&st).expect("generated specs are valid");
        let (kw, ks) = (&weak.dataflow.keys, &strong.dataflow.keys);
        let (lw, ls) = (&weak.analysis.labels, &strong.analysis.labels);
        for (i, s) in weak.dataflow.streams.iter().enumerate() {
            prop_assert!(le_across(lw.stream[i], kw, ls.stream[i], ks),
                "stream {} -> {} got better: {:?} -> {:?}\nweaker:\n{wt}\nstronger:\n{st}", s.from_text, s.to_text, lw.stream[i], ls.stream[i]);
        }
        for (i, s) in weak.dataflow.sinks.iter().enumerate() {
            prop_assert!(le_across(lw.sink[i], kw, ls.sink[i], ks),
                "sink {} got better\nweaker:\n{wt}\nstronger:\n{st}", s.name);
        }
    }
}
