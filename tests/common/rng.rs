//! The deterministic source of the tests' schedules and generated specs: the library's own
//! [`blazes::generator::Rng`] (SplitMix64, the RNG of `blazes gen`), seeded by proptest, so a
//! failing schedule shrinks and replays exactly.

pub use blazes::generator::Rng;
