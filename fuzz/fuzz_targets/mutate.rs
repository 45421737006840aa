//! Structure-aware: a valid seed spec edited by a script of structural operations (swap
//! labels, gates and endpoints, add cycles and self-loops, duplicate components under
//! colliding names, put numbers where names go), then the whole pipeline. Reaches the
//! analysis far more often than raw bytes, which mostly stop at the YAML reader.
#![no_main]

use blazes::fuzzing::{self, Op};
use libfuzzer_sys::{arbitrary, fuzz_target};

/// The shipped specs, compiled in so the target needs no files at run time.
const SEEDS: &[&str] = &[
    include_str!("../../specs/ad-campaign.yaml"),
    include_str!("../../specs/ad-poor-replicated-cache.yaml"),
    include_str!("../../specs/ad-poor.yaml"),
    include_str!("../../specs/ad-thresh.yaml"),
    include_str!("../../specs/ad-window.yaml"),
    include_str!("../../specs/cycle-taint.yaml"),
    include_str!("../../specs/cycle.yaml"),
    include_str!("../../specs/replicated-stage.yaml"),
    include_str!("../../specs/wordcount-sealable.yaml"),
    include_str!("../../specs/wordcount-sealed.yaml"),
    include_str!("../../specs/wordcount-star.yaml"),
    include_str!("../../specs/wordcount.yaml"),
];

#[derive(Debug, arbitrary::Arbitrary)]
struct Input {
    seed: u8,
    ops: Vec<Op>,
}

fuzz_target!(|input: Input| {
    let seed = SEEDS[usize::from(input.seed) % SEEDS.len()];
    if let Some(text) = fuzzing::mutate(seed, &input.ops) {
        fuzzing::pipeline(text.as_bytes(), &fuzzing::fuzz_options());
    }
});
