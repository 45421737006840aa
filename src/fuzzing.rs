//! Support for the fuzz targets (`fuzz/`) and the corpus tests (`tests/fuzz_corpus.rs`): the
//! whole pipeline (read, analyse, every report format, plan and its applied edit, DOT) with its invariants checked, and a structure-aware mutator of specs.
//!
//! It lives in the library, not in the fuzz crate, so that the regular test suite runs exactly
//! what the fuzzers run: a crash input committed under `fuzz/regressions/` fails `cargo test`
//! without needing nightly or libFuzzer. Not a stable API.

use crate::check::{self, EXIT_CLEAN, EXIT_INVALID, FileReport, Options, Outcome};
use crate::diagnostic::{Severity, Subject};
use crate::label::Annotation;
use crate::render;
use crate::report;
use crate::spec::Limits;
use crate::spec::yaml::{self, Node, Value};

/// Limits small enough that a fuzzer explores rejections cheaply, large enough for every
/// shipped spec.
pub fn fuzz_options() -> Options {
    Options {
        limits: Limits {
            max_bytes: 1 << 20,
            max_nodes: 200_000,
            ..Limits::default()
        },
        ..Options::default()
    }
}

/// Runs bytes through the pipeline and every output format, and panics when an invariant a
/// user relies on is broken: an exit status outside {0, 1, 2}, an invalid spec without an
/// error, a diagnostic pointing outside the text or not a single line, output that is not
/// deterministic, JSON that does not parse. Returns the exit status.
pub fn pipeline(bytes: &[u8], options: &Options) -> i32 {
    let report = check::check_bytes("fuzz.yaml", bytes, options);
    let code = report.exit_code();
    assert!((EXIT_CLEAN..=EXIT_INVALID).contains(&code), "exit {code}");
    if let Outcome::Invalid(d) = &report.outcome {
        assert!(
            d.iter().any(|d| d.severity == Severity::Error),
            "an invalid spec has no error"
        );
    }
    check_diagnostics(&report);
    let json = report::json::render(std::slice::from_ref(&report));
    let parsed: serde_json::Value = serde_json::from_str(&json).expect("the JSON output parses");
    assert_eq!(parsed["version"], report::json::VERSION);
    let human = report::human::render(std::slice::from_ref(&report), Default::default());
    assert!(!human.contains("panicked"), "panic text in the output");
    let sarif = report::sarif::render(std::slice::from_ref(&report), None);
    serde_json::from_str::<serde_json::Value>(&sarif).expect("the SARIF output parses");
    // Every registered format, so that a new one is fuzzed without being named here.
    for format in report::format::CHECK {
        let mut out = Vec::new();
        (format.write)(std::slice::from_ref(&report), &Default::default(), &mut out)
            .expect("writing to memory does not fail");
    }
    let dot = match &report.outcome {
        Outcome::Analysed(a) => Some(plan_and_draw(&report, a, options)),
        Outcome::Invalid(_) => None,
    };
    // HashMap iteration differs between instances: a second run catches output that depends
    // on it. Only for small inputs, to keep the fuzzer fast.
    if bytes.len() <= 16 * 1024 {
        let again = check::check_bytes("fuzz.yaml", bytes, options);
        assert_eq!(again.exit_code(), code, "exit status is not deterministic");
        assert_eq!(
            report::json::render(std::slice::from_ref(&again)),
            json,
            "JSON output is not deterministic"
        );
        if let (Outcome::Analysed(a), Some(dot)) = (&again.outcome, &dot) {
            assert_eq!(
                &plan_and_draw(&again, a, options),
                dot,
                "plan or DOT output is not deterministic"
            );
        }
    }
    code
}

/// `blazes plan` (with `--apply`'s verified edit) and `blazes render --plan` on an analysed
/// spec; returns the DOT and the plan's JSON, for the determinism check.
fn plan_and_draw(r: &FileReport, a: &check::Analysed, options: &Options) -> String {
    let plan = crate::plan::plan(&a.dataflow, &crate::plan::Options::default());
    let json = report::plan_json::render(&r.path, plan.named(&a.dataflow));
    serde_json::from_str::<serde_json::Value>(&json).expect("the plan's JSON parses");
    let planned = report::format::Planned {
        report: r,
        plan: Some(&plan),
        applied: None,
        simulation: None,
    };
    for format in report::format::PLAN {
        let mut out = Vec::new();
        (format.write)(
            std::slice::from_ref(&planned),
            &Default::default(),
            &mut out,
        )
        .expect("writing to memory does not fail");
    }
    if plan.status != crate::plan::Status::Unrepairable
        && let Ok((edited, _)) =
            crate::plan::apply::apply_verified(&r.text, &plan, &options.limits, options.fail_on)
    {
        let again = check::check_bytes("applied.yaml", edited.as_bytes(), options);
        assert_ne!(
            again.exit_code(),
            EXIT_INVALID,
            "plan --apply wrote an invalid spec"
        );
    }
    let dot = render::plan_dot(&a.dataflow, &plan, options.fail_on);
    assert!(
        dot.starts_with("digraph") && dot.trim_end().ends_with('}'),
        "DOT: {dot}"
    );
    dot + &json
}

/// Every diagnostic of the analysis says what it is about, and its subject is what its code
/// reports (the reports group findings and attach witnesses by it); the spec's say nothing.
fn check_subjects(a: &check::Analysed) {
    let (df, an) = (&a.dataflow, &a.analysis);
    let points: std::collections::HashSet<(crate::graph::CompId, u32)> = an
        .points
        .iter()
        .map(|p| (p.component, p.path as u32))
        .collect();
    let failing: std::collections::HashSet<crate::graph::SinkId> = an
        .sinks
        .iter()
        .filter(|v| v.failing)
        .map(|v| v.sink)
        .collect();
    for d in &a.diagnostics {
        let ok = match (d.code.id, d.subject) {
            ("C001" | "C002" | "C003", Some(Subject::Point { component, path })) => {
                points.contains(&(component, path))
            }
            ("C004", Some(Subject::Sink(s))) => failing.contains(&s),
            ("C005", Some(Subject::Iface(i))) => i.index() < df.ifaces.len(),
            ("C006" | "C007", Some(Subject::Stream(s))) => s.index() < df.streams.len(),
            ("C008", Some(Subject::Component(c))) => c.index() < df.components.len(),
            ("C009", Some(Subject::Source(s))) => s.index() < df.sources.len(),
            ("C009", Some(Subject::Sink(s))) => s.index() < df.sinks.len(),
            (id, subject) => !id.starts_with('C') && subject.is_none(),
        };
        assert!(
            ok,
            "{} has the subject {:?}: {}",
            d.code.id, d.subject, d.message
        );
    }
}

fn check_diagnostics(r: &FileReport) {
    if let Outcome::Analysed(a) = &r.outcome {
        check_subjects(a);
    }
    for d in r.diagnostics() {
        assert!(!d.message.is_empty(), "empty message");
        assert!(
            !d.message.contains('\n'),
            "a message is one sentence on one line: {:?}",
            d.message
        );
        // Messages quote what the user wrote, which may say anything (`compNonents`, even
        // backticks): a Debug-looking pattern counts only when the spec does not contain it.
        for debug in ["Some(", "None"] {
            assert!(
                !d.message.contains(debug) || r.text.contains(debug),
                "Debug output in a message: {:?}",
                d.message
            );
        }
        for n in d.primary.iter().chain(&d.related) {
            assert!(
                n.span.end() <= r.text.len()
                    && r.text.is_char_boundary(n.span.offset)
                    && r.text.is_char_boundary(n.span.end()),
                "span {:?} outside the text or inside a character (len {})",
                n.span,
                r.text.len()
            );
        }
    }
}

/// Which label a mutated path gets; `Other` writes a string that is not a label. One variant
/// per annotation ([`LabelChoice::of`] matches them exhaustively, so that a new annotation is
/// a compile error there); the order of the variants is the fuzzers' encoding of a choice, so
/// new ones go last, keeping the committed crash inputs what they were.
#[derive(Clone, Copy, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum LabelChoice {
    Cr,
    Cw,
    Or,
    Ow,
    OwWithGate,
    Other,
}

impl LabelChoice {
    /// The choice that writes annotation `a`, without a gate.
    pub fn of(a: Annotation) -> LabelChoice {
        match a {
            Annotation::CR => LabelChoice::Cr,
            Annotation::CW => LabelChoice::Cw,
            Annotation::OR => LabelChoice::Or,
            Annotation::OW => LabelChoice::Ow,
        }
    }

    /// What the choice writes: an annotation, with the gate `OwWithGate` adds, or `None` for
    /// `Other`.
    fn annotation(self) -> Option<Annotation> {
        match self {
            LabelChoice::Cr => Some(Annotation::CR),
            LabelChoice::Cw => Some(Annotation::CW),
            LabelChoice::Or => Some(Annotation::OR),
            LabelChoice::Ow | LabelChoice::OwWithGate => Some(Annotation::OW),
            LabelChoice::Other => None,
        }
    }
}

#[derive(Clone, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum GateChoice {
    Star,
    Remove,
    /// Attributes by index into a small pool (so that gates and seals meet).
    Keys(Vec<u8>),
    /// `gate: [yes, 1]`: values that are not names.
    NotNames,
    Empty,
}

#[derive(Clone, Copy, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum PathField {
    From,
    To,
    Label,
    Gate,
}

/// How a duplicated component is named: the same name (a duplicate), a case variant (a
/// collision after normalisation), or a fresh name.
#[derive(Clone, Copy, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Rename {
    Same,
    Upper,
    Lower,
    Fresh,
}

#[derive(Clone, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum ScalarChoice {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Long(u16),
}

/// One structural edit of a spec. Indices are taken modulo the number of candidates, so every
/// op applies to any spec (or does nothing when there is no candidate).
#[derive(Clone, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Op {
    Label(u16, LabelChoice),
    Gate(u16, GateChoice),
    SwapPaths(u16, u16, PathField),
    /// Points a stream's `from` (or `to`) at another producer (consumer) of the spec.
    Retarget {
        stream: u16,
        to_end: bool,
        target: u16,
    },
    /// Points a stream's end at a producer where a consumer belongs, or the reverse.
    Reverse(u16),
    AddStream {
        from: u16,
        to: u16,
    },
    /// Connects an output of `a` to an input of `b` and back: a cycle.
    Cycle(u16, u16),
    SelfLoop(u16),
    RemoveStream(u16),
    DuplicateComponent(u16, Rename),
    Replicated(u16, bool),
    Order(u16, Option<Vec<u8>>),
    SealSource(u16, Vec<u8>),
    SealStream(u16, Vec<u8>),
    /// Replaces any node (preorder index) with a scalar.
    Replace(u16, ScalarChoice),
}

const ATTRS: [&str; 6] = ["word", "batch", "campaign", "window", "id", "Word"];

fn s(text: impl Into<String>) -> Node {
    Node {
        value: Value::Str(text.into()),
        span: Default::default(),
    }
}

fn seq(items: Vec<Node>) -> Node {
    Node {
        value: Value::Seq(items),
        span: Default::default(),
    }
}

fn map(items: Vec<(Node, Node)>) -> Node {
    Node {
        value: Value::Map(items),
        span: Default::default(),
    }
}

fn keys(ix: &[u8]) -> Node {
    seq(ix
        .iter()
        .take(8)
        .map(|&i| s(ATTRS[usize::from(i) % ATTRS.len()]))
        .collect())
}

fn entry<'n>(node: &'n mut Node, key: &str) -> Option<&'n mut Node> {
    match &mut node.value {
        Value::Map(m) => m
            .iter_mut()
            .find(|(k, _)| k.as_str() == Some(key))
            .map(|(_, v)| v),
        _ => None,
    }
}

fn set_entry(node: &mut Node, key: &str, value: Option<Node>) {
    if let Value::Map(m) = &mut node.value {
        m.retain(|(k, _)| k.as_str() != Some(key));
        if let Some(v) = value {
            m.push((s(key), v));
        }
    }
}

fn pick<T>(items: &mut [T], i: u16) -> Option<&mut T> {
    let n = items.len();
    (n > 0).then(|| &mut items[usize::from(i) % n])
}

fn components(root: &mut Node) -> Vec<&mut (Node, Node)> {
    match entry(root, "components").map(|c| &mut c.value) {
        Some(Value::Map(m)) => m.iter_mut().collect(),
        _ => Vec::new(),
    }
}

fn paths(root: &mut Node) -> Vec<&mut Node> {
    let mut out = Vec::new();
    for (_, body) in components(root) {
        if let Some(Value::Seq(ps)) = entry(body, "paths").map(|p| &mut p.value) {
            out.extend(ps.iter_mut());
        }
    }
    out
}

fn streams(root: &mut Node) -> Option<&mut Vec<Node>> {
    if entry(root, "streams").is_none() {
        set_entry(root, "streams", Some(seq(Vec::new())));
    }
    match entry(root, "streams").map(|s| &mut s.value) {
        Some(Value::Seq(v)) => Some(v),
        _ => None,
    }
}

/// Producers (`Component.output`, sources) and consumers (`Component.input`, sinks) as
/// endpoint strings.
fn endpoints(root: &mut Node) -> (Vec<String>, Vec<String>) {
    let (mut producers, mut consumers) = (Vec::new(), Vec::new());
    for (name, body) in components(root) {
        let Some(c) = name.as_str().map(str::to_string) else {
            continue;
        };
        if let Some(Value::Seq(ps)) = entry(body, "paths").map(|p| &mut p.value) {
            for p in ps {
                if let Some(i) = entry(p, "from").and_then(|n| n.as_str().map(str::to_string)) {
                    consumers.push(format!("{c}.{i}"));
                }
                if let Some(o) = entry(p, "to").and_then(|n| n.as_str().map(str::to_string)) {
                    producers.push(format!("{c}.{o}"));
                }
            }
        }
    }
    for (field, out) in [("sources", &mut producers), ("sinks", &mut consumers)] {
        if let Some(Value::Map(m)) = entry(root, field).map(|n| &n.value) {
            out.extend(m.iter().filter_map(|(k, _)| k.as_str().map(str::to_string)));
        }
    }
    (producers, consumers)
}

fn component_ends(body: &mut Node) -> (Option<String>, Option<String>) {
    let mut ends = (None, None);
    if let Some(Value::Seq(ps)) = entry(body, "paths").map(|p| &mut p.value)
        && let Some(p) = ps.first_mut()
    {
        ends.0 = entry(p, "from").and_then(|n| n.as_str().map(str::to_string));
        ends.1 = entry(p, "to").and_then(|n| n.as_str().map(str::to_string));
    }
    ends
}

fn stream(from: String, to: String) -> Node {
    map(vec![(s("from"), s(from)), (s("to"), s(to))])
}

fn count_nodes(n: &Node) -> usize {
    1 + match &n.value {
        Value::Seq(v) => v.iter().map(count_nodes).sum(),
        Value::Map(m) => m.iter().map(|(k, v)| count_nodes(k) + count_nodes(v)).sum(),
        _ => 0,
    }
}

fn nth_node<'n>(n: &'n mut Node, i: &mut usize) -> Option<&'n mut Node> {
    if *i == 0 {
        return Some(n);
    }
    *i -= 1;
    match &mut n.value {
        Value::Seq(v) => v.iter_mut().find_map(|x| nth_node(x, i)),
        Value::Map(m) => m
            .iter_mut()
            .find_map(|(k, v)| nth_node(k, i).or_else(|| nth_node(v, i))),
        _ => None,
    }
}

fn scalar(c: &ScalarChoice) -> Node {
    let value = match c {
        ScalarChoice::Null => Value::Null,
        ScalarChoice::Bool(b) => Value::Bool(*b),
        ScalarChoice::Int(i) => Value::Int((*i).into()),
        ScalarChoice::Float(f) => Value::Float(*f),
        ScalarChoice::Str(t) => Value::Str(t.chars().take(64).collect()),
        ScalarChoice::Long(n) => Value::Str("x".repeat(usize::from(*n) * 16)),
    };
    Node {
        value,
        span: Default::default(),
    }
}

fn apply(root: &mut Node, op: &Op) {
    match op {
        Op::Label(i, l) => {
            if let Some(p) = pick(&mut paths(root), *i) {
                let label = l.annotation().map_or("OW(word)", Annotation::as_str);
                let gate = matches!(l, LabelChoice::OwWithGate).then(|| keys(&[0, 1]));
                set_entry(p, "label", Some(s(label)));
                if gate.is_some() {
                    set_entry(p, "gate", gate);
                }
            }
        }
        Op::Gate(i, g) => {
            if let Some(p) = pick(&mut paths(root), *i) {
                let gate = match g {
                    GateChoice::Star => Some(s("*")),
                    GateChoice::Remove => None,
                    GateChoice::Keys(k) => Some(keys(k)),
                    GateChoice::NotNames => Some(seq(vec![
                        scalar(&ScalarChoice::Bool(true)),
                        scalar(&ScalarChoice::Int(1)),
                    ])),
                    GateChoice::Empty => Some(seq(Vec::new())),
                };
                set_entry(p, "gate", gate);
            }
        }
        Op::SwapPaths(a, b, field) => {
            let key = match field {
                PathField::From => "from",
                PathField::To => "to",
                PathField::Label => "label",
                PathField::Gate => "gate",
            };
            let mut ps = paths(root);
            let n = ps.len();
            if n < 2 {
                return;
            }
            let (a, b) = (usize::from(*a) % n, usize::from(*b) % n);
            let va = entry(ps[a], key).cloned();
            let vb = entry(ps[b], key).cloned();
            set_entry(ps[a], key, vb);
            set_entry(ps[b], key, va);
        }
        Op::Retarget {
            stream: i,
            to_end,
            target,
        } => {
            let (producers, consumers) = endpoints(root);
            let pool = if *to_end { consumers } else { producers };
            let Some(name) = pool.get(usize::from(*target) % pool.len().max(1)).cloned() else {
                return;
            };
            if let Some(st) = streams(root).and_then(|v| pick(v, *i)) {
                set_entry(st, if *to_end { "to" } else { "from" }, Some(s(name)));
            }
        }
        Op::Reverse(i) => {
            if let Some(st) = streams(root).and_then(|v| pick(v, *i)) {
                let from = entry(st, "from").cloned();
                let to = entry(st, "to").cloned();
                set_entry(st, "from", to);
                set_entry(st, "to", from);
            }
        }
        Op::AddStream { from, to } => {
            let (producers, consumers) = endpoints(root);
            if producers.is_empty() || consumers.is_empty() {
                return;
            }
            let f = producers[usize::from(*from) % producers.len()].clone();
            let t = consumers[usize::from(*to) % consumers.len()].clone();
            if let Some(v) = streams(root) {
                v.push(stream(f, t));
            }
        }
        Op::Cycle(a, b) | Op::SelfLoop(a @ b) => {
            let mut cs = components(root);
            let n = cs.len();
            if n == 0 {
                return;
            }
            let (a, b) = (usize::from(*a) % n, usize::from(*b) % n);
            let name = |c: &(Node, Node)| c.0.as_str().map(str::to_string);
            let (Some(na), Some(nb)) = (name(cs[a]), name(cs[b])) else {
                return;
            };
            let (ia, oa) = component_ends(&mut cs[a].1);
            let (ib, ob) = component_ends(&mut cs[b].1);
            let mut new = Vec::new();
            if let (Some(oa), Some(ib)) = (oa, ib) {
                new.push(stream(format!("{na}.{oa}"), format!("{nb}.{ib}")));
            }
            if let (Some(ob), Some(ia)) = (ob, ia)
                && a != b
            {
                new.push(stream(format!("{nb}.{ob}"), format!("{na}.{ia}")));
            }
            if let Some(v) = streams(root) {
                v.extend(new);
            }
        }
        Op::RemoveStream(i) => {
            if let Some(v) = streams(root)
                && !v.is_empty()
            {
                let n = v.len();
                v.remove(usize::from(*i) % n);
            }
        }
        Op::DuplicateComponent(i, rename) => {
            let copy = pick(&mut components(root), *i).map(|c| (*c).clone());
            let Some((k, v)) = copy else { return };
            let Some(name) = k.as_str() else { return };
            let name = match rename {
                Rename::Same => name.to_string(),
                Rename::Upper => name.to_uppercase(),
                Rename::Lower => name.to_lowercase(),
                Rename::Fresh => format!("{name}2"),
            };
            if let Some(Value::Map(m)) = entry(root, "components").map(|c| &mut c.value) {
                m.push((s(name), v));
            }
        }
        Op::Replicated(i, on) => {
            if let Some(c) = pick(&mut components(root), *i) {
                set_entry(
                    &mut c.1,
                    "replicated",
                    Some(scalar(&ScalarChoice::Bool(*on))),
                );
            }
        }
        Op::Order(i, order) => {
            if let Some(c) = pick(&mut components(root), *i) {
                let o = order.as_ref().map_or_else(|| s("global"), |k| keys(k));
                set_entry(&mut c.1, "order", Some(o));
            }
        }
        Op::SealSource(i, k) => {
            if let Some(Value::Map(m)) = entry(root, "sources").map(|n| &mut n.value)
                && let Some((_, body)) = pick(m, *i)
            {
                if !matches!(body.value, Value::Map(_)) {
                    *body = map(Vec::new());
                }
                set_entry(body, "seal", Some(keys(k)));
            }
        }
        Op::SealStream(i, k) => {
            if let Some(st) = streams(root).and_then(|v| pick(v, *i)) {
                set_entry(st, "seal", Some(keys(k)));
            }
        }
        Op::Replace(i, c) => {
            let mut i = usize::from(*i) % count_nodes(root);
            if i == 0 {
                return;
            }
            if let Some(p) = nth_node(root, &mut i) {
                *p = scalar(c);
            }
        }
    }
}

/// Writes a tree as flow-style YAML (JSON-compatible), the form the mutator's output takes.
pub fn emit(n: &Node, out: &mut String) {
    match &n.value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) => out.push_str(&i.to_string()),
        Value::Float(f) if f.is_nan() => out.push_str(".nan"),
        Value::Float(f) if f.is_infinite() => out.push_str(if *f > 0.0 { ".inf" } else { "-.inf" }),
        Value::Float(f) => out.push_str(&format!("{f:?}")),
        Value::Str(t) => out.push_str(&serde_json::Value::from(t.as_str()).to_string()),
        Value::Seq(v) => {
            out.push('[');
            for (i, x) in v.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                emit(x, out);
            }
            out.push(']');
        }
        Value::Map(m) => {
            out.push_str("{\n");
            for (k, v) in m {
                emit(k, out);
                out.push_str(": ");
                emit(v, out);
                out.push_str(",\n");
            }
            out.push('}');
        }
    }
}

/// Applies `ops` to a seed spec and returns the mutated spec as YAML text; `None` when the seed
/// is not readable YAML.
pub fn mutate(seed: &str, ops: &[Op]) -> Option<String> {
    let mut root = yaml::parse(seed, &Limits::default()).ok()?;
    for op in ops.iter().take(32) {
        apply(&mut root, op);
    }
    let mut out = String::new();
    emit(&root, &mut out);
    out.push('\n');
    Some(out)
}

/// A topology of `engine` through `blazes import` (with the built-in catalogue) and the whole
/// check of the spec it becomes, with the invariants of [`pipeline`] and those of importing:
/// a topology that imports gives a valid spec (only a resource limit may reject it), every
/// location is inside the topology's text, and the spec is the same on a second import.
/// Returns the exit status.
pub fn import_pipeline(engine: crate::import::Engine, bytes: &[u8], options: &Options) -> i32 {
    use crate::import::{self, Catalog};
    let catalog = match Catalog::builtin(engine) {
        Ok(c) => c,
        Err(d) => panic!("the built-in {} catalogue is invalid: {d:?}", engine.name()),
    };
    let report = import::check_imported(engine, "fuzz.topology", bytes.to_vec(), &catalog, options);
    let code = report.exit_code();
    assert!((EXIT_CLEAN..=EXIT_INVALID).contains(&code), "exit {code}");
    check_diagnostics(&report);
    let imported = import::decode(bytes, &options.limits)
        .ok()
        .and_then(|text| import::import(engine, &text, &catalog, "fuzz", &options.limits).ok());
    match &report.outcome {
        Outcome::Invalid(d) => {
            assert!(
                d.iter().any(|d| d.severity == Severity::Error),
                "an invalid import has no error"
            );
            if imported.is_some() {
                assert!(
                    d.iter().any(|d| std::ptr::eq(d.code, &crate::codes::LIMIT)),
                    "an imported topology gave an invalid spec: {d:?}"
                );
            }
        }
        Outcome::Analysed(a) => {
            plan_and_draw(&report, a, options);
        }
    }
    let json = report::json::render(std::slice::from_ref(&report));
    serde_json::from_str::<serde_json::Value>(&json).expect("the JSON output parses");
    let sarif = report::sarif::render(std::slice::from_ref(&report), None);
    serde_json::from_str::<serde_json::Value>(&sarif).expect("the SARIF output parses");
    for format in report::format::CHECK {
        let mut out = Vec::new();
        (format.write)(std::slice::from_ref(&report), &Default::default(), &mut out)
            .expect("writing to memory does not fail");
    }
    if bytes.len() <= 16 * 1024 {
        let again =
            import::check_imported(engine, "fuzz.topology", bytes.to_vec(), &catalog, options);
        assert_eq!(
            report::json::render(std::slice::from_ref(&again)),
            json,
            "JSON output of an import is not deterministic"
        );
        if let Some(first) = &imported {
            let text = import::decode(bytes, &options.limits).expect("decoded before");
            let second = import::import(engine, &text, &catalog, "fuzz", &options.limits)
                .expect("imported before");
            assert_eq!(
                first.spec, second.spec,
                "the imported spec is not deterministic"
            );
        }
    }
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every annotation has its choice, which writes that annotation.
    #[test]
    fn every_annotation_has_a_label_choice() {
        for a in Annotation::ALL {
            assert_eq!(LabelChoice::of(a).annotation(), Some(a));
        }
        assert_eq!(LabelChoice::Other.annotation(), None);
    }
}

/// The language of a white box, for [`whitebox`].
#[derive(Clone, Copy, Debug)]
pub enum Program {
    Sql,
    Bloom,
}

/// Bytes as the program of a white-box component (the fuzz targets `whitebox_sql` and
/// `whitebox_bloom`): derived alone, whose every span must lie in the spec's text, then through
/// [`pipeline`] in a spec with a source per derived input and a sink per output, so that the
/// derived paths go through the analysis, the plan and every format. Returns the exit status.
pub fn whitebox(language: Program, bytes: &[u8], options: &Options) -> i32 {
    use crate::diagnostic::LineIndex;
    use crate::whitebox::{self, TextMap};
    let program = String::from_utf8_lossy(bytes);
    let field = match language {
        Program::Sql => "sql",
        Program::Bloom => "bloom",
    };
    // A literal block, as users write programs; the reader rejects what YAML cannot hold.
    let mut block = format!("components:\n  C:\n    {field}: |\n");
    let from = block.len();
    for line in program.lines() {
        block.push_str("      ");
        block.push_str(line);
        block.push('\n');
    }
    let text = block.clone();
    let map = TextMap::new(&program, &text, from, &LineIndex::new(&text));
    let d = match language {
        Program::Sql => whitebox::sql::derive(&program, &map, &text, "C"),
        Program::Bloom => whitebox::bloom::derive(&program, &map, &text, "C"),
    };
    let spans = d
        .diagnostics
        .iter()
        .flat_map(|d| d.primary.iter().chain(&d.related).map(|n| n.span))
        .chain(d.paths.iter().map(|p| p.span));
    for s in spans {
        assert!(
            s.end() <= text.len()
                && text.is_char_boundary(s.offset)
                && text.is_char_boundary(s.end()),
            "a white box's span {s:?} lies outside the text (len {})",
            text.len()
        );
    }
    assert!(
        !d.failed || d.diagnostics.iter().any(|d| d.severity == Severity::Error),
        "a program that was not read has no error"
    );
    let quote = |s: &str| serde_json::to_string(s).expect("a string is JSON");
    let inputs: std::collections::BTreeSet<&str> = d
        .paths
        .iter()
        .map(|p| p.from.as_str())
        .filter(|f| *f != whitebox::CLOCK)
        .collect();
    let outputs: std::collections::BTreeSet<&str> = d.paths.iter().map(|p| p.to.as_str()).collect();
    let mut spec = String::from("sources:\n");
    for i in &inputs {
        spec.push_str(&format!("  {}: {{ watermark: dateTime }}\n", quote(i)));
    }
    spec.push_str(&text);
    spec.push_str("streams:\n");
    for i in &inputs {
        spec.push_str(&format!(
            "  - {{ from: {}, to: {} }}\n",
            quote(i),
            quote(&format!("C.{i}"))
        ));
    }
    for o in &outputs {
        spec.push_str(&format!(
            "  - {{ from: {}, to: {} }}\n",
            quote(&format!("C.{o}")),
            quote(&format!("out_{o}"))
        ));
    }
    spec.push_str("sinks:\n");
    for o in &outputs {
        spec.push_str(&format!("  {}: {{}}\n", quote(&format!("out_{o}"))));
    }
    pipeline(spec.as_bytes(), options)
}
