//! Raw bytes as the `bloom:` program of a white-box component, derived and then checked through
//! the whole pipeline (`blazes::fuzzing::whitebox`). Seed it with the shipped programs:
//! `cargo fuzz run whitebox_bloom fuzz/programs/bloom`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    blazes::fuzzing::whitebox(
        blazes::fuzzing::Program::Bloom,
        data,
        &blazes::fuzzing::fuzz_options(),
    );
});
