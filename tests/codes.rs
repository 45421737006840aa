//! One fixture per diagnostic code, `tests/fixtures/codes/<ID>-<name>.yaml`, each its own
//! snapshot of what users see (the human report and the JSON document), and a check that every
//! code of the registry is shown by the fixture named after it (S015, about the file itself,
//! by reading a file that does not exist). The bad-input classes of `tests/fixtures/errors` and
//! `tests/fixtures/accepted` are tested on their own in `check.rs` and `hostile.rs`.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::*;

const CODES: &str = "tests/fixtures/codes";

/// The one code about the file itself rather than its contents: no fixture can hold it, so
/// reading a file that does not exist must report it.
const UNREADABLE_FILE: &str = "S015";

/// The fixture path relative to the crate root, as the user would type it (the reports print
/// it, so the snapshots must not depend on where the crate is checked out).
fn relative(path: &Path) -> String {
    let name = path.file_name().unwrap().to_string_lossy();
    format!("{CODES}/{name}")
}

#[test]
fn human_report_of_each_code_fixture() {
    insta::glob!("fixtures/codes/*.yaml", |path| {
        let o = blazes(&["check", &relative(path)]);
        let code = o.status.code().expect("blazes exits");
        insta::assert_snapshot!("human", format!("exit {code}\n{}", stdout(&o)));
    });
}

#[test]
fn json_report_of_each_code_fixture() {
    insta::glob!("fixtures/codes/*.yaml", |path| {
        let o = blazes(&["check", "--format", "json", &relative(path)]);
        let text = stdout(&o);
        serde_json::from_str::<serde_json::Value>(&text).expect("check --format json is JSON");
        insta::assert_snapshot!("json", text);
    });
}

/// What `blazes explain` prints for every code, in registry order: the explanations are
/// defined next to the code that reports them, and must come out exactly as written.
#[test]
fn explanation_of_every_code() {
    let mut all = String::new();
    for code in blazes::codes::ALL {
        let o = blazes(&["explain", code.id]);
        assert_eq!(o.status.code(), Some(0), "explain {}", code.id);
        all.push_str(&stdout(&o));
        all.push_str("----\n");
    }
    insta::assert_snapshot!("explain", all);
}

/// The problems with how `codes` are shown by fixtures. `named` maps a fixture file name in
/// the codes folder to what `check` prints for it; `others` is what `check` prints for the
/// bad-input fixtures. An analysis code (`C`) needs a fixture `<ID>-<name>.yaml` whose output
/// reports it; a spec code needs some other fixture's output to report it.
fn uncovered(
    codes: &[(&str, &str)],
    named: &BTreeMap<String, String>,
    others: &[String],
) -> Vec<String> {
    let mut problems = Vec::new();
    for &(id, name) in codes {
        // The import codes are about topologies, not specs: `tests/import.rs` shows each
        // with its fixtures (`every_import_code_is_shown_by_a_fixture`).
        if id.starts_with('I') {
            continue;
        }
        let reported = |out: &str| out.contains(&format!("{id}("));
        if id != UNREADABLE_FILE {
            let file = format!("{id}-{name}.yaml");
            match named.get(&file) {
                None => problems.push(format!("{id}: no fixture {CODES}/{file}")),
                Some(out) if !reported(out) => {
                    problems.push(format!("{id}: {CODES}/{file} does not report it"))
                }
                Some(_) => {}
            }
        } else if !others.iter().any(|out| reported(out)) {
            problems.push(format!("{id}: reading a missing file does not report it"));
        }
    }
    problems
}

fn human(path: &str) -> String {
    let o = blazes(&["check", path]);
    format!("{}{}", stdout(&o), stderr(&o))
}

fn named_outputs() -> BTreeMap<String, String> {
    yaml_files(CODES)
        .into_iter()
        .map(|p| (format!("{}.yaml", stem(&p)), human(&p)))
        .collect()
}

fn other_outputs() -> Vec<String> {
    let mut v: Vec<String> = yaml_files("tests/fixtures/errors")
        .into_iter()
        .chain(yaml_files("tests/fixtures/accepted"))
        .map(|p| human(&p))
        .collect();
    // S015 is about the file itself, not its contents: no fixture can hold it.
    v.push(human("tests/fixtures/no-such-file.yaml"));
    v
}

fn registry() -> Vec<(&'static str, &'static str)> {
    blazes::codes::ALL.iter().map(|c| (c.id, c.name)).collect()
}

#[test]
fn every_code_is_shown_by_a_fixture() {
    let named = named_outputs();
    let problems = uncovered(&registry(), &named, &other_outputs());
    assert!(problems.is_empty(), "{problems:#?}");
    // Every fixture of the folder is named after a code of the registry.
    for file in named.keys() {
        assert!(
            registry()
                .iter()
                .any(|(id, name)| *file == format!("{id}-{name}.yaml")),
            "{CODES}/{file} is not named after a code (`<ID>-<name>.yaml`)"
        );
    }
}

/// Negative controls: the same check on a registry with a code nobody wrote a fixture for, on
/// a fixture that does not report its code, and on a spec code no bad input produces.
#[test]
fn a_code_without_its_fixture_is_reported() {
    let named = named_outputs();
    let others = other_outputs();

    let mut with_new = registry();
    with_new.push(("C999", "made-up"));
    assert_eq!(
        uncovered(&with_new, &named, &others),
        [format!("C999: no fixture {CODES}/C999-made-up.yaml")]
    );

    let mut wrong = named.clone();
    let c001 = named["C001-unordered-write.yaml"].clone();
    wrong.insert("C005-implicit-source.yaml".into(), c001);
    assert_eq!(
        uncovered(&registry(), &wrong, &others),
        [format!(
            "C005: {CODES}/C005-implicit-source.yaml does not report it"
        )]
    );

    let mut spec_new = registry();
    spec_new.push(("S999", "made-up"));
    assert_eq!(
        uncovered(&spec_new, &named, &others),
        [format!("S999: no fixture {CODES}/S999-made-up.yaml")]
    );
    // A missing file that no longer reported S015 would be caught too.
    let mut others_without = others.clone();
    others_without.retain(|out| !out.contains("S015("));
    assert_eq!(
        uncovered(&registry(), &named, &others_without),
        ["S015: reading a missing file does not report it"]
    );
}
