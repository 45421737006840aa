//! A random spec generator for property tests: small dataflows with cycles, seals, gates,
//! replication and orders, written out as YAML in any order of components and streams.
#![allow(dead_code)]

use proptest::prelude::*;

#[derive(Clone, Debug)]
pub struct GenPath {
    pub from: usize,
    pub to: usize,
    pub label: usize,
    pub gate: Option<Vec<usize>>, // None = "*"
}

#[derive(Clone, Debug)]
pub struct GenComponent {
    pub paths: Vec<GenPath>,
    pub replicated: bool,
    pub order: Option<Option<Vec<usize>>>, // Some(None) = global
}

#[derive(Clone, Debug)]
pub struct GenSpec {
    pub sources: Vec<Option<Vec<usize>>>, // seal keys
    pub components: Vec<GenComponent>,
    /// (producer, consumer, seal): producer < sources.len() is a source, else an output
    /// index `(component, output)` flattened; consumer is an input or the sink.
    pub streams: Vec<(usize, usize, Option<Vec<usize>>)>,
}

const INPUTS: [&str; 3] = ["a", "b", "c"];
const OUTPUTS: [&str; 2] = ["x", "y"];
const ATTRS: [&str; 3] = ["k1", "k2", "k3"];
const LABELS: [&str; 4] = ["CR", "CW", "OR", "OW"];

fn keys() -> impl Strategy<Value = Vec<usize>> {
    proptest::collection::btree_set(0..ATTRS.len(), 0..=2).prop_map(|s| s.into_iter().collect())
}

fn nonempty_keys() -> impl Strategy<Value = Vec<usize>> {
    proptest::collection::btree_set(0..ATTRS.len(), 1..=3).prop_map(|s| s.into_iter().collect())
}

fn path() -> impl Strategy<Value = GenPath> {
    (
        0..INPUTS.len(),
        0..OUTPUTS.len(),
        0..LABELS.len(),
        proptest::option::weighted(0.8, nonempty_keys()),
    )
        .prop_map(|(from, to, label, gate)| GenPath {
            from,
            to,
            label,
            gate,
        })
}

fn component() -> impl Strategy<Value = GenComponent> {
    (
        proptest::collection::vec(path(), 1..=3),
        any::<bool>(),
        proptest::option::weighted(0.2, proptest::option::of(nonempty_keys())),
    )
        .prop_map(|(paths, replicated, order)| GenComponent {
            paths,
            replicated,
            order,
        })
}

pub fn spec(max_components: usize) -> impl Strategy<Value = GenSpec> {
    (
        proptest::collection::vec(proptest::option::of(keys()), 1..=2),
        proptest::collection::vec(component(), 1..=max_components),
    )
        .prop_flat_map(|(sources, components)| {
            let producers = sources.len() + components.len() * OUTPUTS.len();
            let consumers = components.len() * INPUTS.len() + 1;
            let streams = proptest::collection::vec(
                (
                    0..producers,
                    0..consumers,
                    proptest::option::weighted(0.15, keys()),
                ),
                1..=components.len() * 3,
            );
            (Just(sources), Just(components), streams)
        })
        .prop_map(|(sources, components, streams)| GenSpec {
            sources,
            components,
            streams,
        })
}

impl GenSpec {
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
                let label = LABELS[p.label];
                let gate = match (&p.gate, label) {
                    (_, "CR" | "CW") => String::new(),
                    (Some(g), _) => format!(", gate: [{}]", names(g)),
                    (None, _) => ", gate: \"*\"".to_string(),
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
            s.push_str("  []\n");
        }
        for &i in stream_order.iter().filter(|&&i| i < lines.len()) {
            s.push_str(&lines[i]);
            s.push('\n');
        }
        s.push_str("sinks:\n  out: {}\n");
        s
    }

    pub fn yaml_in_order(&self) -> String {
        let c: Vec<usize> = (0..self.components.len()).collect();
        let s: Vec<usize> = (0..self.stream_lines().len()).collect();
        self.yaml(&c, &s)
    }
}

fn names(k: &[usize]) -> String {
    k.iter().map(|&i| ATTRS[i]).collect::<Vec<_>>().join(", ")
}
