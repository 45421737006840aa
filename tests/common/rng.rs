//! The deterministic source of the tests' schedules and generated specs: the library's own
//! [`blazes::generator::Rng`] (SplitMix64, the RNG of `blazes gen` and of
//! `blazes::generator::random`), seeded by proptest, so a failing schedule shrinks and replays
//! exactly.
// Not every test binary draws numbers itself.
#![allow(unused_imports)]

pub use blazes::generator::Rng;
