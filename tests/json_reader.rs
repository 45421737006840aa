//! The JSON reader (`spec::json`) against the YAML reader it stands in for: on every JSON
//! text it either gives up (and the YAML reader reads the file) or reads exactly the tree,
//! spans included, that the YAML reader reads; and the spec reader gives the same spec and
//! the same diagnostics either way. The control: it must not give up on the JSON specs it
//! exists for (a reader that always gives up would pass every comparison).

use blazes::generator::{GenOptions, generate, random, to_json};
use blazes::spec::{self, Limits, json, yaml};
use proptest::prelude::*;

fn shipped() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/specs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml") {
            let text = std::fs::read_to_string(&path).unwrap();
            out.push((path.display().to_string(), text));
        }
    }
    out.sort();
    out
}

/// The law, on one text: the JSON reader reads what the YAML reader reads, or gives up.
/// Returns whether it read the text.
fn agrees(text: &str, limits: &Limits) -> Result<bool, String> {
    let fast = json::parse(text, limits);
    let slow = yaml::parse_as_yaml(text, limits);
    match (&fast, &slow) {
        (Err(json::GaveUp), _) => {}
        (Ok(a), Ok(b)) if a == b => {}
        (Ok(a), Ok(b)) => return Err(format!("trees differ:\n json {a:?}\n yaml {b:?}")),
        (Ok(a), Err(d)) => {
            return Err(format!("json read {a:?} where yaml says {}", d.message));
        }
    }
    let (fast_spec, fast_diags) = spec::parse(text, limits);
    let (slow_spec, slow_diags) = spec::parse_as_yaml(text, limits);
    if fast_spec != slow_spec {
        return Err(format!("specs differ:\n {fast_spec:?}\n {slow_spec:?}"));
    }
    if fast_diags != slow_diags {
        return Err(format!(
            "diagnostics differ:\n {fast_diags:?}\n {slow_diags:?}"
        ));
    }
    Ok(fast.is_ok())
}

#[test]
fn shipped_specs_as_json_read_alike_and_fast() {
    let specs = shipped();
    assert!(specs.len() >= 10, "{specs:?}");
    for (path, text) in specs {
        let j = to_json(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(agrees(&j, &Limits::default()), Ok(true), "{path}:\n{j}");
    }
}

#[test]
fn generated_specs_as_json_read_alike_and_fast() {
    for n in [1, 10, 300] {
        let mut o = GenOptions::default();
        o.components = n;
        let j = to_json(&generate(&o)).unwrap();
        assert_eq!(agrees(&j, &Limits::default()), Ok(true));
        let (spec, diags) = spec::parse(&j, &Limits::default());
        assert!(spec.is_some() && diags.is_empty(), "{diags:?}");
    }
}

#[test]
fn scalars_escapes_and_spans_match_yaml() {
    let texts = [
        r#"{"name": "x\u00e9\n\t\"\\\/", "n": -12, "z": 0, "m": -0, "f": 1.5e3, "g": 2.25,
           "h": -1E-2, "t": true, "u": false, "v": null, "e": "", "w": "\ud83d\ude00",
           "big": 18446744073709551615, "bigger": 123456789012345678901234567890,
           "list": [1, "two", [], {}, {"a": ["b"]}], "dup": 1, "dup": 2}"#,
        "[1, 2, 3]",
        "  {\r\n\t\"a\" :\t[ ] }  \n",
        r#"{"components": {"C": {"paths": [{"from": "in", "to": "out", "label": "CW"}]}},
           "streams": [{"from": "s", "to": "C.in"}], "sources": {"s": {}}}"#,
    ];
    for t in texts {
        assert_eq!(agrees(t, &Limits::default()), Ok(true), "{t}");
    }
}

#[test]
fn what_json_does_not_allow_is_left_to_yaml() {
    // YAML beyond JSON, and broken JSON: the JSON reader gives up, YAML reads or reports.
    let texts = [
        "{components: {}}",
        "{\"a\": 1,}",
        "{\"a\": 'single'}",
        "{\"a\": 01}",
        "{\"a\": 1} # a comment",
        "{\"a\": \"tab\there\"}",
        "{\"a\": \"\\ud800\"}",
        "{\"a\": 1e999}",
        "{\"a\": [1, 2}",
        "{\"a\": \"unterminated}",
        "{\"a\": .5}",
        "{\"a\": +1}",
        "{\"a\": \"\\x41\"}",
    ];
    for t in texts {
        assert_eq!(agrees(t, &Limits::default()), Ok(false), "{t}");
    }
}

#[test]
fn limits_are_reached_no_later_than_in_yaml() {
    // Nesting around the depth limit, and node counts around the node limit: at and past
    // each, the YAML reader decides (its S011), so the answers are the same.
    for max_depth in [3, 4, 8] {
        let limits = Limits {
            max_depth,
            ..Limits::default()
        };
        for d in 1..max_depth + 3 {
            let t = format!("{{\"a\": {}1{}}}", "[".repeat(d), "]".repeat(d));
            agrees(&t, &limits).unwrap_or_else(|e| panic!("depth {d}/{max_depth}: {e}"));
        }
    }
    for max_nodes in [5, 9, 20] {
        let limits = Limits {
            max_nodes,
            ..Limits::default()
        };
        for n in 0..max_nodes + 3 {
            let items = vec!["1"; n].join(", ");
            let t = format!("{{\"a\": [{items}]}}");
            agrees(&t, &limits).unwrap_or_else(|e| panic!("{n} nodes/{max_nodes}: {e}"));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_specs_as_json_read_alike(seed in any::<u64>()) {
        let j = to_json(&random::seeded(seed)).unwrap();
        prop_assert_eq!(agrees(&j, &Limits::default()), Ok(true));
    }

    #[test]
    fn mutated_json_reads_alike_or_is_left_to_yaml(
        seed in any::<u64>(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), 0u8..4, any::<prop::sample::Index>()), 1..4),
    ) {
        const BYTES: &[u8] = b"{}[],:\"\\ 0-1.eE+aunlt\n\t#";
        let mut j = to_json(&random::seeded(seed)).unwrap().into_bytes();
        for (at, what, byte) in edits {
            let i = at.index(j.len() + 1);
            let b = *byte.get(BYTES);
            match what {
                0 => j.insert(i, b),
                1 if i < j.len() => { j.remove(i); }
                2 if i < j.len() => j[i] = b,
                _ => j.truncate(i),
            }
        }
        let t = String::from_utf8(j).expect("ASCII edits keep UTF-8");
        if let Err(e) = agrees(&t, &Limits::default()) {
            return Err(TestCaseError::fail(format!("{e}\non:\n{t}")));
        }
    }
}
