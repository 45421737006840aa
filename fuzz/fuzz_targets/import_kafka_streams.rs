//! Raw bytes as a kafka-streams topology through `blazes import` and the check of the spec it
//! becomes, located in the topology (`blazes::fuzzing::import_pipeline`). Seed it with the
//! fixtures: `cargo fuzz run import_kafka_streams tests/fixtures/import/kafka-streams`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    blazes::fuzzing::import_pipeline(
        blazes::import::Engine::KafkaStreams,
        data,
        &blazes::fuzzing::fuzz_options(),
    );
});
