//! Raw bytes as the `sql:` program of a white-box component, derived and then checked through
//! the whole pipeline (`blazes::fuzzing::whitebox`). Seed it with the shipped programs:
//! `cargo fuzz run whitebox_sql fuzz/programs/sql`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    blazes::fuzzing::whitebox(
        blazes::fuzzing::Program::Sql,
        data,
        &blazes::fuzzing::fuzz_options(),
    );
});
