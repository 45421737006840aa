//! `blazes deploy`: the engine objects of the shipped specs' plans (`--dry-run`, no server),
//! and the errors of the command. Against a real server: `tests/deploy_nats.rs`.

mod common;

use blazes::plan::Kind;
use blazes_runtime::deploy::{self, Channel};
use common::*;

/// The specs shipped with the repository whose deployment is snapshotted.
const SPECS: &[&str] = &[
    "wordcount.yaml",
    "wordcount-sealed.yaml",
    "wordcount-sealable.yaml",
    "ad-campaign.yaml",
    "ad-poor.yaml",
    "ad-poor-replicated-cache.yaml",
    "ad-thresh.yaml",
    "ad-window.yaml",
];

#[test]
fn dry_runs_of_the_shipped_specs() {
    for spec in SPECS {
        let path = format!("specs/{spec}");
        let o = blazes(&["deploy", "--dry-run", &path]);
        assert_eq!(o.status.code(), Some(0), "{spec}: {}", stderr(&o));
        assert_eq!(
            o.stdout,
            blazes(&["deploy", "--dry-run", &path]).stdout,
            "{spec}: deterministic"
        );
        insta::assert_snapshot!(format!("dry_run@{spec}"), stdout(&o));
    }
}

#[test]
fn a_global_order_needs_a_sequence_outputs_and_checkpoints() {
    let o = blazes(&[
        "deploy",
        "--dry-run",
        "--allow",
        "global",
        "--replicas",
        "1",
        "specs/wordcount.yaml",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    insta::assert_snapshot!("dry_run_global_wordcount", stdout(&o));
}

/// A spec whose names NATS refuses in object names and subjects (a space, a non-ASCII letter).
fn spec_named(component: &str) -> String {
    format!(
        "name: my flow\nsources:\n  tweets: {{}}\ncomponents:\n  \"{component}\":\n    paths:\n      - {{ from: words, to: counts, label: OW, gate: [word] }}\nstreams:\n  - {{ from: tweets, to: \"{component}.words\" }}\n  - {{ from: \"{component}.counts\", to: db }}\nsinks:\n  db: {{}}\n"
    )
}

/// The stream names of a dry run's output.
fn stream_names(out: &str) -> Vec<String> {
    out.lines()
        .filter_map(|l| l.trim_start().strip_prefix("stream "))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect()
}

#[test]
fn names_that_nats_refuses_are_made_legal_and_kept_apart() {
    let run = |component: &str| {
        let o = blazes_stdin(
            &["deploy", "--dry-run", "-"],
            spec_named(component).as_bytes(),
        );
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        stream_names(&stdout(&o))
    };
    let umlaut = run("Zählen");
    let accent = run("Zählén");
    let plain = run("Z_hlen");
    assert_eq!(umlaut.len(), 1);
    for name in umlaut.iter().chain(&accent) {
        assert!(
            name.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
            "{name} is a legal NATS name"
        );
    }
    // Each illegal name carries a hash of the original, so names that clean up alike differ.
    assert_ne!(umlaut, accent);
    assert_ne!(umlaut, plain);
    assert_eq!(plain, ["my_flow-b86681c9-Z_hlen-keyed"]);
    assert_eq!(umlaut, run("Zählen"), "deterministic");
}

#[test]
fn an_invalid_spec_is_reported_located_with_exit_2() {
    let o = blazes_stdin(
        &["deploy", "--dry-run", "-"],
        b"name: x\ncomponents:\n  A: { inputs: { i: { from: nowhere, label: CR } } }\n",
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("<stdin>:"), "{}", stderr(&o));
    assert!(o.stdout.is_empty());
    assert_clean_failure(&o);
}

#[test]
fn applying_needs_a_server_url() {
    let o = blazes(&["deploy", "specs/wordcount.yaml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--nats URL"), "{}", stderr(&o));
    assert_clean_failure(&o);
}

#[test]
fn a_missing_spec_is_exit_2() {
    let o = blazes(&["deploy", "--dry-run", "specs/no-such-spec.yaml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no-such-spec.yaml"), "{}", stderr(&o));
    assert_clean_failure(&o);
}

#[cfg(not(feature = "nats"))]
#[test]
fn applying_without_the_nats_feature_says_how_to_get_it() {
    let o = blazes(&[
        "deploy",
        "--nats",
        "nats://127.0.0.1:1",
        "specs/wordcount.yaml",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("cargo install --path . --features nats"),
        "{}",
        stderr(&o)
    );
    assert_clean_failure(&o);
}

#[cfg(feature = "nats")]
#[test]
fn an_unreachable_server_is_exit_2_with_one_sentence() {
    let o = blazes(&[
        "deploy",
        "--nats",
        "nats://127.0.0.1:1",
        "specs/wordcount.yaml",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("cannot connect"), "{}", stderr(&o));
    assert_clean_failure(&o);
}

/// `deploy` takes `plan`'s flags: with `--allow keyed` the word count that could be sealed is
/// deployed with the keyed order `blazes plan --allow keyed` chooses, not the seal barrier of
/// the default plan; with `--fail-on never` no mechanism is deployed.
#[test]
fn the_deployed_plan_is_chosen_by_the_plan_flags() {
    let spec = "specs/wordcount-sealable.yaml";
    let run = |flags: &[&str]| {
        let mut args = vec!["deploy", "--dry-run", spec];
        args.extend_from_slice(flags);
        let o = blazes(&args);
        assert_eq!(o.status.code(), Some(0), "{flags:?}: {}", stderr(&o));
        stdout(&o)
    };
    let default = run(&[]);
    assert!(default.contains("seal-barrier"), "{default}");
    assert!(!default.contains("keyed-order"), "{default}");
    let keyed = run(&["--allow", "keyed"]);
    assert!(
        keyed.contains("keyed-order on Count by [batch, word]"),
        "{keyed}"
    );
    assert!(!keyed.contains("seal-barrier"), "{keyed}");
    let never = run(&["--fail-on", "never"]);
    // No mechanism: only what the hosted components read their inputs with.
    assert!(
        never.contains("0 mechanisms")
            && never.contains("no mechanism: the spec needs no coordination"),
        "{never}"
    );
    assert!(
        !never.contains("seal-barrier") && !never.contains("keyed-order"),
        "{never}"
    );
}

/// `--route-by-instance C`: instance `i` of `C` reads only the messages routed to key `i`, and
/// the dry run lists the filtered consumers; the same run without the flag lists consumers that
/// read every subject.
#[test]
fn a_component_routed_by_instance_gets_one_filtered_consumer_per_instance() {
    let run = |flags: &[&str]| {
        let mut args = vec!["deploy", "--dry-run", "--instances", "2"];
        args.extend_from_slice(flags);
        args.push("specs/wordcount-sealed.yaml");
        blazes(&args)
    };
    let o = run(&["--route-by-instance", "Splitter"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        o.stdout,
        run(&["--route-by-instance", "Splitter"]).stdout,
        "deterministic"
    );
    let routed = stdout(&o);
    insta::assert_snapshot!("dry_run_routed_by_instance", routed);
    for filter in [
        "filter: wordcount-sealed-Splitter-in.*.0",
        "filter: wordcount-sealed-Splitter-in.*.1",
    ] {
        assert!(routed.contains(filter), "`{filter}` in\n{routed}");
    }
    // Control: without the flag, the same consumers read every subject.
    let plain = stdout(&run(&[]));
    assert!(!plain.contains("Splitter-in.*.0"), "{plain}");
    assert!(!plain.contains("routed by instance"), "{plain}");
}

#[test]
fn routing_by_instance_refuses_what_cannot_be_routed() {
    let spec = "specs/wordcount-sealed.yaml";
    // A component the spec does not have.
    let o = blazes(&[
        "deploy",
        "--dry-run",
        "--instances",
        "2",
        "--route-by-instance",
        "Nope",
        spec,
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o),
        "error: cannot route the inputs of `Nope` by instance: `specs/wordcount-sealed.yaml` has no component `Nope` (its components: Splitter, Count, Commit)\n"
    );
    assert!(o.stdout.is_empty());
    assert_clean_failure(&o);
    // A component whose inputs go through a mechanism (the seal barrier of Count).
    let o = blazes(&[
        "deploy",
        "--dry-run",
        "--instances",
        "2",
        "--route-by-instance",
        "Count",
        spec,
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains(
            "cannot route the inputs of `Count` by instance: the plan of `specs/wordcount-sealed.yaml` gives it its inputs through a seal barrier"
        ),
        "{}",
        stderr(&o)
    );
    assert_clean_failure(&o);
    // Without --instances (one instance reading key 0 is almost surely a mistake).
    let o = blazes(&[
        "deploy",
        "--dry-run",
        "--route-by-instance",
        "Splitter",
        spec,
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--instances"), "{}", stderr(&o));
    assert!(o.stdout.is_empty());
    assert_clean_failure(&o);
}

/// Arguments of `blazes plan` whose plan has a mechanism of `kind`. The match is exhaustive, so
/// a kind the planner gains must be given a spec here, and is then pushed through the runtime.
fn plan_with(kind: Kind) -> &'static [&'static str] {
    match kind {
        Kind::SealBarrier => &["specs/wordcount-sealed.yaml"],
        Kind::AddSeal => &["specs/wordcount-sealable.yaml"],
        Kind::KeyedOrder => &["specs/wordcount.yaml"],
        Kind::GlobalOrder => &["--allow", "global", "specs/wordcount.yaml"],
    }
}

/// Every kind the planner writes is one the document's types read (`Kind::ALL` covers the
/// document's kinds too), the runtime derives engine objects for it, and the component it is
/// on gets the channel that kind means, as `blazes deploy` and the host derive them.
#[test]
fn every_planner_kind_is_read_deployed_and_hosted_by_the_runtime() {
    assert_eq!(
        Kind::ALL.map(Kind::document_kind),
        blazes_plan::MechanismKind::ALL,
        "the planner's kinds and the document's are one list"
    );
    for kind in Kind::ALL {
        let mut args = vec!["plan", "--format", "json", "--no-simulate"];
        args.extend_from_slice(plan_with(kind));
        let o = blazes(&args);
        assert_eq!(o.status.code(), Some(0), "{kind:?}: {}", stderr(&o));
        let files = deploy::read_plan(&stdout(&o)).unwrap_or_else(|e| panic!("{kind:?}: {e}"));
        let file = &files[0];
        let m = file
            .mechanisms
            .iter()
            .find(|m| m.kind == kind.document_kind())
            .unwrap_or_else(|| panic!("{kind:?}: the plan of {args:?} has no such mechanism"));
        let d = deploy::derive(file, 1).unwrap_or_else(|e| panic!("{kind:?}: {e}"));
        let position = file.mechanisms.iter().position(|x| x == m).unwrap();
        let objects = &d.mechanisms[position];
        // The component whose inputs the mechanism governs (an added seal's: its consumer's
        // barrier, listed in the same plan).
        let (component, objects_expected) = match kind {
            Kind::AddSeal => {
                let barrier = file
                    .mechanisms
                    .iter()
                    .find(|b| b.kind == Kind::SealBarrier.document_kind())
                    .expect("an added seal is consumed by a barrier");
                (barrier.component.clone().unwrap(), false)
            }
            _ => (m.component.clone().unwrap(), true),
        };
        assert_eq!(
            !objects.objects.is_empty(),
            objects_expected,
            "{kind:?}: {objects:?}"
        );
        let channel = deploy::channel_of(file, &d, &component);
        let expected = match kind {
            Kind::SealBarrier | Kind::AddSeal => matches!(channel, Channel::Barrier { .. }),
            Kind::KeyedOrder => matches!(channel, Channel::Keyed { .. }),
            Kind::GlobalOrder => matches!(channel, Channel::Sequence { .. }),
        };
        assert!(expected, "{kind:?}: {component} gets {channel:?}");
        #[cfg(feature = "nats")]
        {
            let hosted = blazes_runtime::nats::host::channels(file, 1)
                .unwrap_or_else(|e| panic!("{kind:?}: {e}"));
            assert_eq!(hosted.get(&component), Some(&channel), "{kind:?}");
        }
    }
}

/// The control: a document naming a kind this runtime does not know is refused, naming it,
/// rather than deployed as plain streams.
#[test]
fn a_plan_document_with_an_unknown_kind_is_refused_naming_it() {
    let o = blazes(&[
        "plan",
        "--format",
        "json",
        "--no-simulate",
        "specs/wordcount.yaml",
    ]);
    let text = stdout(&o).replace("\"keyed-order\"", "\"keyed-quorum\"");
    let e = deploy::read_plan(&text).unwrap_err().to_string();
    assert!(e.contains("unknown mechanism kind `keyed-quorum`"), "{e}");
}

/// A component's `partitions: N` is the number of instances `deploy` runs of it: one consumer
/// per partition, each reading only its partition's messages; `--instances` still sizes the
/// others. The control: the same spec without `partitions:` deploys every component alike.
#[test]
fn a_partitioned_component_is_deployed_as_one_instance_per_partition() {
    let spec = std::fs::read_to_string(root().join("specs/wordcount-sealed.yaml")).unwrap();
    let partitioned = spec.replace(
        "  Splitter:\n    paths:",
        "  Splitter:\n    partitions: 3\n    partition_by: [batch]\n    paths:",
    );
    assert_ne!(partitioned, spec, "the spec was edited");
    let run = |text: &str| blazes_stdin(&["deploy", "--dry-run", "-"], text.as_bytes());
    let o = run(&partitioned);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("Splitter (partitions: 3: 3 instances, 0 to 2, instance i reads only the messages routed to key i)"),
        "{out}"
    );
    for i in 0..3 {
        let filter = format!("filter: wordcount-sealed-Splitter-in.*.{i}");
        assert!(out.contains(&filter), "`{filter}` in\n{out}");
    }
    assert!(!out.contains("Splitter-in.*.3"), "{out}");
    // The other hosted components keep the default single instance.
    assert!(out.contains("consumer Commit-0"), "{out}");
    assert!(!out.contains("Commit-1"), "{out}");
    let plain = stdout(&run(&spec));
    assert!(!plain.contains("partitions:"), "{plain}");
    assert!(!plain.contains("Splitter-1"), "{plain}");
    assert!(!plain.contains("Splitter-in.*.0"), "{plain}");
    // More partitions than the deploy can run is refused, naming the component.
    let huge = partitioned.replace("partitions: 3", "partitions: 5000");
    let o = run(&huge);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("component `Splitter` has `partitions: 5000`"),
        "{}",
        stderr(&o)
    );
}
