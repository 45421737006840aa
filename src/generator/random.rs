//! Small random specs for property tests, the simulator's soundness checks and the planner's
//! oracles: dataflows of a few components that exercise every rule (cycles, seals and
//! sealable sources, gates including `*`, replication, reads, existing orders, sinks of every
//! tolerance).
//!
//! Two generators share the one [`Rng`]: [`RandomSpec`], a dataflow held as indexes that
//! a proptest strategy builds and shrinks (the tests' `common::specgen::spec`) and that is
//! written as YAML in any order of its components and streams; and [`seeded`], a planner's
//! spec from a seed. Both are deterministic: the same value or seed gives the same text
//! (`tests/generator.rs` holds texts and digests recorded when they moved here from the tests).
//!
//! `blazes gen` does not print them: its flags (`--components`, `--cycles`, `--replicated`)
//! size the layered fleets of [`generate`](super::generate), and these specs have a fixed
//! small size and shape of their own.

use super::Rng;
use crate::label::Annotation;

/// A path of a [`RandomComponent`], as indexes into the vocabularies.
#[derive(Clone, Debug)]
pub struct RandomPath {
    /// Index into [`INPUTS`].
    pub from: usize,
    /// Index into [`OUTPUTS`].
    pub to: usize,
    /// Index into [`LABELS`].
    pub label: usize,
    /// Indexes into [`ATTRS`]; `None` is the gate `*` (ignored for `CR` and `CW`).
    pub gate: Option<Vec<usize>>,
}

/// A component `C<index>` of a [`RandomSpec`].
#[derive(Clone, Debug)]
pub struct RandomComponent {
    pub paths: Vec<RandomPath>,
    pub replicated: bool,
    /// `Some(None)` is `order: global`, `Some(Some(keys))` a keyed order.
    pub order: Option<Option<Vec<usize>>>,
}

/// A small dataflow with cycles, seals, gates, replication and orders, held as indexes so
/// that a generator (a proptest strategy, a seeded loop) can build and shrink it; written out
/// as YAML with the components and streams in any order ([`RandomSpec::yaml`]). Sources are
/// `s<i>`, components `C<i>` with inputs [`INPUTS`] and outputs [`OUTPUTS`], and the one sink
/// is `out`. Indexes that name an interface a component lacks are skipped, so every value
/// writes a valid spec.
#[derive(Clone, Debug)]
pub struct RandomSpec {
    /// Each source's `seal:` keys, if it declares one.
    pub sources: Vec<Option<Vec<usize>>>,
    pub components: Vec<RandomComponent>,
    /// (producer, consumer, seal): producer < sources.len() is a source, else an output
    /// index `(component, output)` flattened; consumer is an input or the sink.
    pub streams: Vec<(usize, usize, Option<Vec<usize>>)>,
}

/// The input names a [`RandomPath`]'s `from` indexes.
pub const INPUTS: [&str; 3] = ["a", "b", "c"];
/// The output names a [`RandomPath`]'s `to` indexes.
pub const OUTPUTS: [&str; 2] = ["x", "y"];
/// The attributes gates, seals and orders index.
pub const ATTRS: [&str; 3] = ["k1", "k2", "k3"];
/// The annotations a [`RandomPath`]'s `label` indexes: every annotation.
pub const LABELS: [Annotation; Annotation::ALL.len()] = Annotation::ALL;

impl RandomSpec {
    fn inputs_of(&self, c: usize) -> Vec<usize> {
        let mut v: Vec<usize> = self.components[c].paths.iter().map(|p| p.from).collect();
        v.sort();
        v.dedup();
        v
    }

    fn outputs_of(&self, c: usize) -> Vec<usize> {
        let mut v: Vec<usize> = self.components[c].paths.iter().map(|p| p.to).collect();
        v.sort();
        v.dedup();
        v
    }

    /// Endpoint text of a producer index, or None when it names an output the component lacks.
    fn producer(&self, p: usize) -> Option<String> {
        if p < self.sources.len() {
            return Some(format!("s{p}"));
        }
        let q = p - self.sources.len();
        let (c, o) = (q / OUTPUTS.len(), q % OUTPUTS.len());
        self.outputs_of(c)
            .contains(&o)
            .then(|| format!("C{c}.{}", OUTPUTS[o]))
    }

    fn consumer(&self, k: usize) -> Option<String> {
        if k == self.components.len() * INPUTS.len() {
            return Some("out".to_string());
        }
        let (c, i) = (k / INPUTS.len(), k % INPUTS.len());
        self.inputs_of(c)
            .contains(&i)
            .then(|| format!("C{c}.{}", INPUTS[i]))
    }

    /// The valid streams, one per (from, to) pair (the first declared wins).
    pub fn stream_lines(&self) -> Vec<String> {
        let mut seen = std::collections::BTreeMap::new();
        for (p, k, seal) in &self.streams {
            let (Some(from), Some(to)) = (self.producer(*p), self.consumer(*k)) else {
                continue;
            };
            seen.entry((from, to)).or_insert_with(|| seal.clone());
        }
        seen.into_iter()
            .map(|((from, to), seal)| match seal {
                Some(s) => format!("  - {{ from: {from}, to: {to}, seal: [{}] }}", names(&s)),
                None => format!("  - {{ from: {from}, to: {to} }}"),
            })
            .collect()
    }

    /// The spec as YAML, with components and streams in the given permutation seeds.
    pub fn yaml(&self, component_order: &[usize], stream_order: &[usize]) -> String {
        let mut s = String::from("sources:\n");
        for (i, seal) in self.sources.iter().enumerate() {
            match seal {
                Some(k) => s.push_str(&format!("  s{i}: {{ seal: [{}] }}\n", names(k))),
                None => s.push_str(&format!("  s{i}: {{}}\n")),
            }
        }
        s.push_str("components:\n");
        for &ci in component_order {
            let c = &self.components[ci];
            s.push_str(&format!("  C{ci}:\n    replicated: {}\n", c.replicated));
            match &c.order {
                Some(None) => s.push_str("    order: global\n"),
                Some(Some(k)) => s.push_str(&format!("    order: [{}]\n", names(k))),
                None => {}
            }
            s.push_str("    paths:\n");
            for p in &c.paths {
                let annotation = LABELS[p.label];
                let label = annotation.as_str();
                let gate = match &p.gate {
                    _ if annotation.is_confluent() => String::new(),
                    Some(g) => format!(", gate: [{}]", names(g)),
                    None => ", gate: \"*\"".to_string(),
                };
                s.push_str(&format!(
                    "      - {{ from: {}, to: {}, label: {label}{gate} }}\n",
                    INPUTS[p.from], OUTPUTS[p.to]
                ));
            }
        }
        let lines = self.stream_lines();
        s.push_str("streams:\n");
        if lines.is_empty() {
            // A spec needs a stream (S009): with none drawn, the first producer feeds the sink.
            let from = (0..self.sources.len() + self.components.len() * OUTPUTS.len())
                .find_map(|p| self.producer(p));
            match from {
                Some(from) => s.push_str(&format!("  - {{ from: {from}, to: out }}\n")),
                None => s.push_str("  []\n"),
            }
        }
        for &i in stream_order.iter().filter(|&&i| i < lines.len()) {
            s.push_str(&lines[i]);
            s.push('\n');
        }
        s.push_str("sinks:\n  out: {}\n");
        s
    }

    /// The spec as YAML, components and streams in declaration order.
    pub fn yaml_in_order(&self) -> String {
        let c: Vec<usize> = (0..self.components.len()).collect();
        let s: Vec<usize> = (0..self.stream_lines().len()).collect();
        self.yaml(&c, &s)
    }
}

fn names(k: &[usize]) -> String {
    k.iter().map(|&i| ATTRS[i]).collect::<Vec<_>>().join(", ")
}

/// A spec for the planner from a seed: up to three sources, most of them `sealable` (some
/// sealed), up to four components with gates (sometimes `*`), existing orders and
/// replication, streams that sometimes close cycles, and sinks of every tolerance on the
/// outputs. The same seed gives the same text.
///
/// ```
/// use blazes::check::{self, Outcome};
/// use blazes::generator::random::seeded;
///
/// let text = seeded(7);
/// assert_eq!(text, seeded(7));
/// let report = check::check_bytes("seeded.yaml", text.as_bytes(), &Default::default());
/// assert!(matches!(report.outcome, Outcome::Analysed(_)), "a valid spec");
/// ```
pub fn seeded(seed: u64) -> String {
    let mut r = Rng(seed);
    let mut s = String::from("sources:\n");
    let n_src = 1 + r.below(3);
    for i in 0..n_src {
        let mut fields = Vec::new();
        if r.chance(15) {
            fields.push(format!("seal: [{}]", plan_keys(&mut r).join(", ")));
        }
        if r.chance(70) {
            let n = 1 + r.below(2);
            let ks: Vec<String> = (0..n)
                .map(|_| format!("[{}]", plan_keys(&mut r).join(", ")))
                .collect();
            fields.push(format!("sealable: [{}]", ks.join(", ")));
        }
        s.push_str(&format!("  s{i}: {{ {} }}\n", fields.join(", ")));
    }
    s.push_str("components:\n");
    let n_comp = 1 + r.below(4);
    let mut outputs: Vec<String> = Vec::new();
    let mut inputs: Vec<String> = Vec::new();
    for c in 0..n_comp {
        s.push_str(&format!("  C{c}:\n"));
        if r.chance(40) {
            s.push_str("    replicated: true\n");
        }
        if r.chance(10) {
            s.push_str(&format!("    order: [{}]\n", plan_keys(&mut r).join(", ")));
        }
        s.push_str("    paths:\n");
        let n_in = 1 + r.below(2);
        let n_out = 1 + r.below(2);
        let mut written = vec![false; n_out];
        for i in 0..n_in {
            let o = r.below(n_out);
            written[o] = true;
            let annotation = Annotation::ALL[r.below(Annotation::ALL.len())];
            let label = annotation.as_str();
            let gate = if !annotation.is_confluent() {
                if r.chance(15) {
                    ", gate: \"*\"".to_string()
                } else {
                    format!(", gate: [{}]", plan_keys(&mut r).join(", "))
                }
            } else {
                String::new()
            };
            s.push_str(&format!(
                "      - {{ from: i{i}, to: o{o}, label: {label}{gate} }}\n"
            ));
            inputs.push(format!("C{c}.i{i}"));
        }
        // An output exists only if a path writes it.
        for (o, w) in written.iter().enumerate() {
            if *w {
                outputs.push(format!("C{c}.o{o}"));
            }
        }
    }
    s.push_str("streams:\n");
    let mut used: Vec<String> = Vec::new();
    for input in &inputs {
        let n = 1 + r.below(2);
        for _ in 0..n {
            // Mostly sources and earlier outputs; sometimes any output (cycles).
            let pick = r.below(n_src + outputs.len());
            let from = if pick < n_src {
                format!("s{pick}")
            } else {
                outputs[pick - n_src].clone()
            };
            s.push_str(&format!("  - {{ from: {from}, to: {input} }}\n"));
            used.push(from);
        }
    }
    s.push_str("sinks:\n");
    let tolerances = ["Async", "Async", "Async", "Run", "Inst"];
    let mut sinks = String::new();
    let mut streams = String::new();
    for (k, o) in outputs.iter().enumerate() {
        if !used.contains(o) || r.chance(30) {
            sinks.push_str(&format!(
                "  k{k}: {{ tolerate: {} }}\n",
                tolerances[r.below(tolerances.len())]
            ));
            streams.push_str(&format!("  - {{ from: {o}, to: k{k} }}\n"));
        }
    }
    s.push_str(&sinks);
    // Streams to sinks go with the other streams.
    s.replace("sinks:\n", &format!("{streams}sinks:\n"))
}

/// One to three of the attributes `a`, `b`, `c`.
fn plan_keys(r: &mut Rng) -> Vec<&'static str> {
    let all = ["a", "b", "c"];
    let mut v: Vec<&str> = all.iter().copied().filter(|_| r.chance(50)).collect();
    if v.is_empty() {
        v.push(all[r.below(3)]);
    }
    v
}
