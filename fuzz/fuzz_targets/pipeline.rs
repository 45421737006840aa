//! Raw bytes through the whole pipeline: read, validate, build, analyse, render (human and
//! JSON). `blazes::fuzzing::pipeline` panics when an invariant users rely on breaks.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    blazes::fuzzing::pipeline(data, &blazes::fuzzing::fuzz_options());
});
