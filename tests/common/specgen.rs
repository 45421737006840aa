//! The random spec generators of the tests, both in the library
//! ([`blazes::generator::random`]): [`spec`], a proptest strategy over
//! [`RandomSpec`] (small dataflows with cycles, seals, gates, replication and orders, written
//! out as YAML in any order of components and streams), and [`seeded`], a planner's spec
//! from a seed of the shared [`Rng`](super::rng::Rng). This file is only the strategy: what
//! proptest draws and shrinks.
// Each test binary uses part of it.
#![allow(dead_code, unused_imports)]

use proptest::prelude::*;

pub use blazes::generator::random::{
    ATTRS, INPUTS, LABELS, OUTPUTS, RandomComponent, RandomPath, RandomSpec, seeded,
};

fn keys() -> impl Strategy<Value = Vec<usize>> {
    proptest::collection::btree_set(0..ATTRS.len(), 0..=2).prop_map(|s| s.into_iter().collect())
}

fn nonempty_keys() -> impl Strategy<Value = Vec<usize>> {
    proptest::collection::btree_set(0..ATTRS.len(), 1..=3).prop_map(|s| s.into_iter().collect())
}

fn path() -> impl Strategy<Value = RandomPath> {
    (
        0..INPUTS.len(),
        0..OUTPUTS.len(),
        0..LABELS.len(),
        proptest::option::weighted(0.8, nonempty_keys()),
    )
        .prop_map(|(from, to, label, gate)| RandomPath {
            from,
            to,
            label,
            gate,
        })
}

fn component() -> impl Strategy<Value = RandomComponent> {
    (
        proptest::collection::vec(path(), 1..=3),
        any::<bool>(),
        proptest::option::weighted(0.2, proptest::option::of(nonempty_keys())),
    )
        .prop_map(|(paths, replicated, order)| RandomComponent {
            paths,
            replicated,
            order,
        })
}

pub fn spec(max_components: usize) -> impl Strategy<Value = RandomSpec> {
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
        .prop_map(|(sources, components, streams)| RandomSpec {
            sources,
            components,
            streams,
        })
}
