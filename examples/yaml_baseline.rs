//! The parse-only baseline for `scripts/bench-scale`: deserialise a spec with the same YAML
//! library and options `blazes check` uses, into a generic value, and nothing else. A spec
//! whose name ends in `.json` is deserialised by `serde_json::from_slice` instead: the
//! baseline of the JSON reader.
//!
//! `cargo run --release --example yaml_baseline -- SPEC`

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: yaml_baseline SPEC");
        std::process::exit(2);
    };
    let bytes = std::fs::read(&path).expect("readable spec");
    let value: serde_json::Value = if path.ends_with(".json") {
        serde_json::from_slice(&bytes).unwrap_or_else(|e| {
            eprintln!("{e}");
            std::process::exit(2);
        })
    } else {
        let options = blazes::spec::yaml::reader_options(&blazes::spec::Limits::default());
        serde_saphyr::from_slice_with_options(&bytes, options).unwrap_or_else(|e| {
            eprintln!("{e}");
            std::process::exit(2);
        })
    };
    // Touch the value so the work cannot be optimised away, then skip freeing it, as check does.
    println!("{}", value.as_object().map_or(0, |o| o.len()));
    std::mem::forget(value);
}
