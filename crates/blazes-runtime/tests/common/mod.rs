//! What the runtime's test binaries share.
pub mod rng;
