//! The spec reader validates each component, stream, source and sink as the YAML reader
//! streams it, section by section. These are the cases that reading in pieces could get wrong
//! where reading one whole tree could not: anchors and merge keys that cross entries or
//! sections, sections out of the usual order or given twice, limits counted while skipping,
//! and a syntax error after entries that were already validated.

use blazes::diagnostic::Diagnostic;
use blazes::spec::{self, Limits, Spec};

fn read(text: &str) -> (Option<Spec>, Vec<Diagnostic>) {
    spec::parse(text, &Limits::default())
}

fn read_limited(text: &str, limits: &Limits) -> (Option<Spec>, Vec<Diagnostic>) {
    spec::parse(text, limits)
}

/// Code and message of each diagnostic, sorted: what must not depend on the order of sections.
fn summary(diags: &[Diagnostic]) -> Vec<(String, String)> {
    let mut v: Vec<_> = diags
        .iter()
        .map(|d| (d.code.id.to_string(), d.message.clone()))
        .collect();
    v.sort();
    v
}

/// The text a diagnostic's primary span covers.
fn primary<'t>(text: &'t str, d: &Diagnostic) -> &'t str {
    let span = d.primary.as_ref().expect("located").span;
    &text[span.offset..span.end()]
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset].matches('\n').count() + 1
}

fn names(spec: &Spec) -> Vec<&str> {
    spec.components
        .iter()
        .map(|c| c.name.text.as_str())
        .collect()
}

const PATH: &str = "{ from: in, to: out, label: CR }";

#[test]
fn an_anchor_in_one_entry_is_aliased_in_another_and_across_sections() {
    let text = "\
sources:
  s: { seal: &key [batch] }
components:
  A:
    paths: &shared
      - { from: in, to: out, label: OW, gate: [batch] }
  B:
    paths: *shared
streams:
  - { from: s, to: A.in, seal: *key }
  - { from: A.out, to: B.in }
  - { from: B.out, to: db }
sinks:
  db: &sink { tolerate: Run }
  archive: *sink
";
    let (spec, diags) = read(text);
    assert!(diags.is_empty(), "{diags:?}");
    let spec = spec.unwrap();
    assert_eq!(names(&spec), ["A", "B"]);
    let b = &spec.components[1];
    assert_eq!(b.paths.len(), 1);
    assert_eq!(b.paths[0].from.text, "in");
    assert!(b.paths[0].gate.is_some());
    let seal = spec.streams[0].seal.as_ref().expect("the aliased seal");
    assert_eq!(seal.names[0].text, "batch");
    assert_eq!(spec.sinks.len(), 2);
    assert!(spec.sinks[1].tolerate.is_some());
}

#[test]
fn merge_keys_in_a_component_and_in_the_components_mapping() {
    let text = format!(
        "\
components:
  <<: {{ M: {{ paths: [{PATH}] }}, A: {{ paths: [] }} }}
  A:
    <<: &opts {{ replicated: true, order: global }}
    replicated: false
    paths: [{PATH}]
  B:
    <<: *opts
    paths: [{PATH}]
streams: [{{ from: src, to: A.in }}]
"
    );
    let (spec, diags) = read(&text);
    assert!(diags.is_empty(), "{diags:?}");
    let spec = spec.unwrap();
    // Merged entries come after the written ones, and a written key wins over a merged one.
    assert_eq!(names(&spec), ["A", "B", "M"]);
    assert!(!spec.components[0].replicated, "A's own `replicated` wins");
    assert_eq!(spec.components[0].paths.len(), 1, "A's own paths win");
    assert!(spec.components[0].order.is_some());
    assert!(spec.components[1].replicated);
}

#[test]
fn a_merge_key_at_the_root_is_read_like_written_sections() {
    let text = format!(
        "<<: {{ components: {{ A: {{ paths: [{PATH}] }} }} }}\nstreams: [{{ from: src, to: A.in }}]\n"
    );
    let (spec, diags) = read(&text);
    assert!(diags.is_empty(), "{diags:?}");
    assert_eq!(names(&spec.unwrap()), ["A"]);
}

#[test]
fn a_section_given_twice_is_reported_with_both_keys_and_the_second_is_ignored() {
    let text = format!(
        "\
components:
  A: {{ paths: [{PATH}] }}
streams: []
components:
  B: {{ paths: [{{ from: in, to: out, label: XX }}] }}
"
    );
    let (spec, diags) = read(&text);
    assert_eq!(diags.len(), 1, "{diags:?}");
    let d = &diags[0];
    assert_eq!(d.code.id, "S006");
    assert_eq!(d.message, "field `components` is given twice in the spec");
    let second = d.primary.as_ref().unwrap().span.offset;
    assert_eq!(line_of(&text, second), 4);
    assert_eq!(line_of(&text, d.related[0].span.offset), 1);
    assert_eq!(names(&spec.unwrap()), ["A"]);
}

#[test]
fn a_component_defined_twice_is_reported_with_both_names() {
    let text = format!("components:\n  A: {{ paths: [{PATH}] }}\n  A: {{ paths: [] }}\n");
    let (_, diags) = read(&text);
    assert_eq!(diags.len(), 1, "{diags:?}");
    assert_eq!(diags[0].message, "component `A` is defined twice");
    assert_eq!(
        line_of(&text, diags[0].primary.as_ref().unwrap().span.offset),
        3
    );
    assert_eq!(line_of(&text, diags[0].related[0].span.offset), 2);
}

#[test]
fn a_typo_of_components_is_suggested_and_not_also_missing() {
    let (_, diags) = read(&format!("component:\n  A: {{ paths: [{PATH}] }}\n"));
    assert_eq!(diags.len(), 1, "{diags:?}");
    assert_eq!(diags[0].message, "unknown field `component` in the spec");
    assert_eq!(diags[0].help.as_deref(), Some("did you mean `components`?"));
}

/// `n` components, the second with an invalid label, and `n` streams, the first malformed,
/// with the streams first or last.
fn over_limit(n: usize, streams_first: bool) -> String {
    let mut components = String::from("components:\n");
    for i in 0..n {
        let label = if i == 1 { "XX" } else { "CR" };
        components.push_str(&format!(
            "  C{i}: {{ paths: [{{ from: in, to: out, label: {label} }}] }}\n"
        ));
    }
    let mut streams = String::from("streams:\n  - { from: C0.out.x, to: C1.in }\n");
    for i in 1..n {
        streams.push_str(&format!("  - {{ from: C{}.out, to: C{i}.in }}\n", i - 1));
    }
    if streams_first {
        streams + &components
    } else {
        components + &streams
    }
}

#[test]
fn the_component_limit_counts_every_component_and_reports_the_limit_alone() {
    let limits = Limits {
        max_components: 5,
        ..Limits::default()
    };
    for streams_first in [false, true] {
        let text = over_limit(8, streams_first);
        let (_, diags) = read_limited(&text, &limits);
        assert_eq!(diags.len(), 1, "streams first: {streams_first}: {diags:?}");
        let d = &diags[0];
        assert_eq!(d.code.id, "S011");
        assert_eq!(
            d.message,
            "the spec declares 8 components, more than the limit of 5"
        );
        // At the first component past the limit, the sixth.
        assert!(primary(&text, d).starts_with('C'));
        let at = d.primary.as_ref().unwrap().span.offset;
        assert!(text[at..].starts_with("C5:"), "{}", &text[at..at + 10]);
    }
    // At the limit, the errors are reported as usual.
    let (_, diags) = read_limited(&over_limit(5, true), &limits);
    assert_eq!(
        summary(&diags)
            .iter()
            .map(|d| d.0.as_str())
            .collect::<Vec<_>>(),
        ["S003", "S007"],
        "{diags:?}"
    );
}

#[test]
fn the_stream_limit_counts_every_stream_and_reports_the_limit_alone() {
    let limits = Limits {
        max_streams: 3,
        ..Limits::default()
    };
    let text = over_limit(6, false) + "sinks:\n  db: { tolerate: Nope }\n";
    let (_, diags) = read_limited(&text, &limits);
    // The component error comes before the streams and is reported; the sink after them is not.
    assert_eq!(
        summary(&diags),
        [
            (
                "S003".to_string(),
                "unknown label `XX` in a path of component `C1`".to_string()
            ),
            (
                "S011".to_string(),
                "the spec declares 6 streams, more than the limit of 3".to_string()
            ),
        ],
        "{diags:?}"
    );
    let limit = diags.iter().find(|d| d.code.id == "S011").unwrap();
    let at = limit.primary.as_ref().unwrap().span.offset;
    assert!(text[at..].starts_with("{ from: C2.out, to: C3.in }"));
}

#[test]
fn a_syntax_error_after_validated_entries_is_the_one_diagnostic() {
    let text = format!(
        "\
components:
  A: {{ paths: [{{ from: in, to: out, label: XX }}] }}
  B: {{ pahts: [] }}
  C: {{ paths: [{PATH}] }}
streams:
  - {{ from: A.out, to: B.in
"
    );
    let (spec, diags) = read(&text);
    assert!(spec.is_none());
    assert_eq!(diags.len(), 1, "{diags:?}");
    assert_eq!(diags[0].code.id, "S001");
    assert!(line_of(&text, diags[0].primary.as_ref().unwrap().span.offset) >= 6);
}

#[test]
fn sections_in_any_order_read_the_same() {
    let sections = [
        "sources:\n  s: { seel: [x] }\n  t: {}\n",
        "components:\n  A: { paths: [{ from: in, to: out, label: XX }] }\n  B: { paths: [{ from: in, to: out, label: OR, gate: [k] }] }\n",
        "streams:\n  - { from: s, to: B.in }\n  - { from: ., to: A.in }\n  - { from: B.out, to: db, seal: [k, k] }\n",
        "sinks:\n  db: { tolerate: Nope }\n  ok: {}\n",
    ];
    let usual: String = sections.concat();
    let (spec, diags) = read(&usual);
    let expected = summary(&diags);
    assert_eq!(
        expected.iter().map(|d| d.0.as_str()).collect::<Vec<_>>(),
        ["S002", "S003", "S006", "S007", "S014"],
        "{diags:?}"
    );
    let spec = spec.unwrap();
    let shape = |s: &Spec| {
        (
            s.sources.len(),
            names(s).join(","),
            s.streams.len(),
            s.sinks.len(),
        )
    };
    let expected_shape = shape(&spec);
    // Every order of the four sections.
    for order in 0..24usize {
        let mut left: Vec<&str> = sections.to_vec();
        let mut text = String::new();
        let mut k = order;
        for n in (1..=4).rev() {
            text.push_str(left.remove(k % n));
            k /= n;
        }
        let (spec, diags) = read(&text);
        assert_eq!(summary(&diags), expected, "{text}");
        assert_eq!(shape(&spec.unwrap()), expected_shape, "{text}");
    }
}
