//! The fuzzers' seeds and every committed crash input, run through exactly what the fuzz
//! targets run (`blazes::fuzzing::pipeline`), plus fast random inputs: `cargo test` guards the
//! fuzzers' findings without nightly or libFuzzer.

mod common;

use blazes::fuzzing::{self, GateChoice, LabelChoice, Op, PathField, Rename, ScalarChoice};
use blazes::label::Annotation;
use common::root;
use proptest::prelude::*;

fn files(dir: &str) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(root().join(dir)) else {
        return Vec::new();
    };
    let mut v: Vec<_> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    v.sort();
    v
}

#[test]
fn seeds_and_regressions_run_clean() {
    let seeds = files("fuzz/seeds");
    assert!(
        seeds.len() >= 20,
        "fuzz/seeds holds the specs and the error fixtures"
    );
    for path in seeds.iter().chain(&files("fuzz/regressions")) {
        let bytes = std::fs::read(path).unwrap();
        let code = fuzzing::pipeline(&bytes, &fuzzing::fuzz_options());
        assert!((0..=2).contains(&code), "{}", path.display());
        // And with the CLI's default limits.
        fuzzing::pipeline(&bytes, &Default::default());
    }
}

#[test]
fn seeds_match_the_specs_and_fixtures() {
    // The seeds are copies; a spec or fixture added without a seed is a gap in the corpus.
    let seeds: Vec<String> = files("fuzz/seeds")
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    for spec in files("specs") {
        let name = spec.file_name().unwrap().to_string_lossy().into_owned();
        assert!(seeds.contains(&name), "fuzz/seeds lacks {name}");
    }
    // The white boxes: SQL and Bloom in the corpus, so that mutations reach both parsers.
    for (dir, prefix) in [("specs/sql", "sql-"), ("specs/whitebox", "whitebox-")] {
        for spec in files(dir) {
            let name = format!("{prefix}{}", spec.file_name().unwrap().to_string_lossy());
            assert!(seeds.contains(&name), "fuzz/seeds lacks {name}");
        }
    }
    for fixture in files("tests/fixtures/errors") {
        let name = format!("error-{}", fixture.file_name().unwrap().to_string_lossy());
        assert!(seeds.contains(&name), "fuzz/seeds lacks {name}");
    }
}

fn seed_texts() -> Vec<String> {
    files("specs")
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect()
}

fn idx() -> impl Strategy<Value = u16> {
    0u16..64
}

fn keys() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(0u8..8, 0..4)
}

fn op() -> impl Strategy<Value = Op> {
    let label = prop_oneof![
        Annotation::ALL.len() as u32 =>
            proptest::sample::select(Annotation::ALL.to_vec()).prop_map(LabelChoice::of),
        1 => Just(LabelChoice::OwWithGate),
        1 => Just(LabelChoice::Other)
    ];
    let gate = prop_oneof![
        Just(GateChoice::Star),
        Just(GateChoice::Remove),
        keys().prop_map(GateChoice::Keys),
        Just(GateChoice::NotNames),
        Just(GateChoice::Empty)
    ];
    let field = prop_oneof![
        Just(PathField::From),
        Just(PathField::To),
        Just(PathField::Label),
        Just(PathField::Gate)
    ];
    let rename = prop_oneof![
        Just(Rename::Same),
        Just(Rename::Upper),
        Just(Rename::Lower),
        Just(Rename::Fresh)
    ];
    let scalar = prop_oneof![
        Just(ScalarChoice::Null),
        any::<bool>().prop_map(ScalarChoice::Bool),
        any::<i64>().prop_map(ScalarChoice::Int),
        any::<f64>().prop_map(ScalarChoice::Float),
        "[a-zA-Z.* é\\t]{0,12}".prop_map(ScalarChoice::Str),
        (0u16..64).prop_map(ScalarChoice::Long)
    ];
    prop_oneof![
        (idx(), label).prop_map(|(i, l)| Op::Label(i, l)),
        (idx(), gate).prop_map(|(i, g)| Op::Gate(i, g)),
        (idx(), idx(), field).prop_map(|(a, b, f)| Op::SwapPaths(a, b, f)),
        (idx(), any::<bool>(), idx()).prop_map(|(stream, to_end, target)| Op::Retarget {
            stream,
            to_end,
            target
        }),
        idx().prop_map(Op::Reverse),
        (idx(), idx()).prop_map(|(from, to)| Op::AddStream { from, to }),
        (idx(), idx()).prop_map(|(a, b)| Op::Cycle(a, b)),
        idx().prop_map(Op::SelfLoop),
        idx().prop_map(Op::RemoveStream),
        (idx(), rename).prop_map(|(i, r)| Op::DuplicateComponent(i, r)),
        (idx(), any::<bool>()).prop_map(|(i, b)| Op::Replicated(i, b)),
        (idx(), proptest::option::of(keys())).prop_map(|(i, k)| Op::Order(i, k)),
        (idx(), keys()).prop_map(|(i, k)| Op::SealSource(i, k)),
        (idx(), keys()).prop_map(|(i, k)| Op::SealStream(i, k)),
        (0u16..400, scalar).prop_map(|(i, s)| Op::Replace(i, s)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Structural mutations of the shipped specs: never a panic, always a valid exit status.
    #[test]
    fn mutated_specs_never_panic(seed in 0usize..64, ops in proptest::collection::vec(op(), 0..12)) {
        let seeds = seed_texts();
        let text = fuzzing::mutate(&seeds[seed % seeds.len()], &ops).expect("seeds are YAML");
        fuzzing::pipeline(text.as_bytes(), &fuzzing::fuzz_options());
    }

    /// Random bytes, and a spec with random bytes spliced in.
    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256), at in 0usize..2000) {
        fuzzing::pipeline(&bytes, &fuzzing::fuzz_options());
        let mut spec = std::fs::read(root().join("specs/ad-poor.yaml")).unwrap();
        let at = at % spec.len();
        spec.splice(at..at, bytes);
        fuzzing::pipeline(&spec, &fuzzing::fuzz_options());
    }
}

#[test]
fn the_mutator_round_trips_a_seed() {
    // With no ops the emitted text is the same spec: the analysis agrees on the verdict.
    for text in seed_texts() {
        let emitted = fuzzing::mutate(&text, &[]).unwrap();
        let a = blazes::check::check_bytes("a.yaml", text.as_bytes(), &Default::default());
        let b = blazes::check::check_bytes("a.yaml", emitted.as_bytes(), &Default::default());
        assert_eq!(a.exit_code(), b.exit_code(), "{emitted}");
    }
}

/// Found by `mutated_specs_never_panic` once the planner was in the pipeline: a keyed order on
/// the intersection of two gates is a key set the planner interns in its own copy of the
/// interner, and `render --plan` looked its names up in the dataflow's (index out of bounds).
#[test]
fn render_plan_with_a_key_the_planner_invented() {
    let ops = [
        Op::DuplicateComponent(0, Rename::Upper),
        Op::Cycle(45, 0),
        Op::Order(14, Some(vec![0, 4])),
    ];
    let text = fuzzing::mutate(&seed_texts()[0], &ops).unwrap();
    fuzzing::pipeline(text.as_bytes(), &fuzzing::fuzz_options());
}

/// The topology fixtures of `tests/fixtures/import` (the import fuzz targets' seeds), each
/// with the engine its directory or file name says.
fn import_fixtures() -> Vec<(blazes::import::Engine, Vec<u8>)> {
    use blazes::import::Engine;
    let mut out = Vec::new();
    for dir in [
        "tests/fixtures/import/kafka-streams",
        "tests/fixtures/import/flink",
        "tests/fixtures/import/storm-flux",
        "tests/fixtures/import/errors",
        "tests/fixtures/import/hostile",
    ] {
        for path in files(dir) {
            let name = format!("{}/{}", dir, path.file_name().unwrap().to_string_lossy());
            let engine = Engine::ALL
                .into_iter()
                .find(|e| name.contains(&format!("/{}", e.name())))
                .unwrap_or_else(|| panic!("{name} names no engine"));
            out.push((engine, std::fs::read(&path).unwrap()));
        }
    }
    out
}

#[test]
fn import_fixtures_run_clean() {
    let fixtures = import_fixtures();
    assert!(fixtures.len() >= 20, "the import fixtures are the seeds");
    for (engine, bytes) in &fixtures {
        let code = fuzzing::import_pipeline(*engine, bytes, &fuzzing::fuzz_options());
        assert!((0..=2).contains(&code));
        fuzzing::import_pipeline(*engine, bytes, &Default::default());
    }
}

/// Negative control of the invariant `import_pipeline` checks (an imported topology gives a
/// valid spec): the importer minus its sanitising of names writes a spec the check rejects, so
/// the invariant can fail. `step.one` is a processor name; a spec name cannot hold a dot.
#[test]
fn an_import_without_sanitised_names_is_an_invalid_spec() {
    use blazes::import::{self, Catalog, Engine};
    let path = "tests/fixtures/import/hostile/kafka-streams-collisions-and-cycle.txt";
    let text = std::fs::read_to_string(root().join(path)).unwrap();
    let catalog = Catalog::builtin(Engine::KafkaStreams).unwrap();
    let imported = import::import(
        Engine::KafkaStreams,
        &text,
        &catalog,
        "c",
        &Default::default(),
    )
    .unwrap();
    let valid = blazes::check::check_bytes("c.yaml", imported.spec.as_bytes(), &Default::default());
    assert!(matches!(valid.outcome, blazes::check::Outcome::Analysed(_)));
    let unsanitised = imported.spec.replace("\"step_one\":", "\"step.one\":");
    assert_ne!(unsanitised, imported.spec);
    let report = blazes::check::check_bytes("c.yaml", unsanitised.as_bytes(), &Default::default());
    assert!(
        matches!(report.outcome, blazes::check::Outcome::Invalid(_)),
        "a dotted component name must make the spec invalid"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// Topology fixtures with bytes spliced in, cut, or a line repeated: never a panic.
    #[test]
    fn mutated_topologies_never_panic(
        pick in 0usize..64,
        bytes in proptest::collection::vec(any::<u8>(), 0..24),
        at in 0usize..4000,
        cut in 0usize..64,
    ) {
        let fixtures = import_fixtures();
        let (engine, original) = &fixtures[pick % fixtures.len()];
        let mut text = original.clone();
        let at = at % (text.len() + 1);
        let end = (at + cut).min(text.len());
        text.splice(at..end, bytes);
        fuzzing::import_pipeline(*engine, &text, &fuzzing::fuzz_options());
        // The same bytes as the other engines' input.
        for e in blazes::import::Engine::ALL {
            fuzzing::import_pipeline(e, &text, &fuzzing::fuzz_options());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Topology fixtures with lines swapped, repeated or removed (an edge before its
    /// processor, a processor twice, a node without its id, a stream without its grouping):
    /// never a panic, and every invariant of `import_pipeline` holds.
    #[test]
    fn topologies_with_lines_moved_never_panic(
        pick in 0usize..64,
        ops in proptest::collection::vec((0usize..200, 0usize..200, 0u8..3), 1..8),
    ) {
        let fixtures = import_fixtures();
        let (engine, original) = &fixtures[pick % fixtures.len()];
        let text = String::from_utf8_lossy(original).into_owned();
        let mut lines: Vec<&str> = text.split('\n').collect();
        for (a, b, kind) in ops {
            if lines.is_empty() {
                break;
            }
            let (a, b) = (a % lines.len(), b % lines.len());
            match kind {
                0 => lines.swap(a, b),
                1 => lines.insert(b, lines[a]),
                _ => {
                    lines.remove(a);
                }
            }
        }
        fuzzing::import_pipeline(*engine, lines.join("\n").as_bytes(), &fuzzing::fuzz_options());
    }
}

/// The white-box fuzz targets' seeds: every program of the shipped specs and fixtures, and
/// hostile ones (`fuzz/programs/{sql,bloom}`), with their language.
fn programs() -> Vec<(fuzzing::Program, Vec<u8>)> {
    let mut out = Vec::new();
    for (dir, language) in [
        ("fuzz/programs/sql", fuzzing::Program::Sql),
        ("fuzz/programs/bloom", fuzzing::Program::Bloom),
    ] {
        for path in files(dir) {
            out.push((language, std::fs::read(&path).unwrap()));
        }
    }
    out
}

#[test]
fn white_box_programs_run_clean() {
    let programs = programs();
    assert!(
        programs.len() >= 30,
        "fuzz/programs holds the shipped programs"
    );
    let mut analysed = 0;
    for (language, bytes) in &programs {
        let code = fuzzing::whitebox(*language, bytes, &fuzzing::fuzz_options());
        assert!((0..=2).contains(&code));
        analysed += usize::from(code != 2);
    }
    // The harness reaches the analysis: the shipped programs make valid specs.
    assert!(analysed >= 25, "only {analysed} programs made a valid spec");
}

#[test]
fn the_program_seeds_hold_every_shipped_program() {
    // A white box added to a spec without its program here is a gap in the corpus.
    let seeds: Vec<Vec<u8>> = programs().into_iter().map(|p| p.1).collect();
    for path in files("specs/sql")
        .into_iter()
        .chain(files("specs/whitebox"))
    {
        let text = std::fs::read_to_string(&path).unwrap();
        let mut lines = text.lines().peekable();
        while let Some(line) = lines.next() {
            let t = line.trim_start();
            if !(t == "sql: |" || t == "bloom: |") {
                continue;
            }
            let indent = line.len() - t.len();
            let mut body = Vec::new();
            while let Some(l) =
                lines.next_if(|l| l.trim().is_empty() || l.len() - l.trim_start().len() > indent)
            {
                body.push(l);
            }
            while body.last().is_some_and(|l| l.trim().is_empty()) {
                body.pop();
            }
            let cut = body
                .iter()
                .filter(|l| !l.trim().is_empty())
                .map(|l| l.len() - l.trim_start().len())
                .min()
                .unwrap_or(0);
            let program: String = body
                .iter()
                .map(|l| format!("{}\n", l.get(cut..).unwrap_or("")))
                .collect();
            assert!(
                seeds.contains(&program.into_bytes()),
                "fuzz/programs lacks a program of {}",
                path.display()
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// Programs with bytes spliced in or cut out (an unterminated string, a bracket short, a
    /// keyword broken): never a panic, every invariant of `whitebox` holds.
    #[test]
    fn mutated_programs_never_panic(
        pick in 0usize..64,
        bytes in proptest::collection::vec(any::<u8>(), 0..16),
        at in 0usize..2000,
        cut in 0usize..32,
    ) {
        let programs = programs();
        let (language, original) = &programs[pick % programs.len()];
        let mut text = original.clone();
        let at = at % (text.len() + 1);
        let end = (at + cut).min(text.len());
        text.splice(at..end, bytes);
        fuzzing::whitebox(*language, &text, &fuzzing::fuzz_options());
    }
}
