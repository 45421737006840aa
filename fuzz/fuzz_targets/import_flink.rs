//! Raw bytes as a flink topology through `blazes import` and the check of the spec it
//! becomes, located in the topology (`blazes::fuzzing::import_pipeline`). Seed it with the
//! fixtures: `cargo fuzz run import_flink tests/fixtures/import/flink`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    blazes::fuzzing::import_pipeline(
        blazes::import::Engine::Flink,
        data,
        &blazes::fuzzing::fuzz_options(),
    );
});
