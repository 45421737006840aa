//! What CI gates on (issue 23, section 1): reads of state the spec does not write, warnings made
//! to fail, empty lists, replicas against `replicated`, unknown attributes, `plan --check`.
//! Each test runs the binary on a spec and its control, one construct apart.

mod common;

use common::*;
use serde_json::Value;

/// `blazes <args> -` on `spec`: the exit status, standard output and standard error.
fn run(args: &[&str], spec: &str) -> (i32, String, String) {
    let mut all: Vec<&str> = args.to_vec();
    all.push("-");
    let o = blazes_stdin(&all, spec.as_bytes());
    (o.status.code().unwrap(), stdout(&o), stderr(&o))
}

/// The codes `check --format json` reports for `spec`, in order.
fn codes(args: &[&str], spec: &str) -> (i32, Vec<String>) {
    let mut all = vec!["check", "--format", "json"];
    all.extend_from_slice(args);
    let (code, out, err) = run(&all, spec);
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    let ids = v["files"][0]["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["code"].as_str().unwrap().to_string())
        .collect();
    (code, ids)
}

/// The exit status and `code: message (help)` of each diagnostic `check --format json` reports.
fn messages(args: &[&str], spec: &str) -> (i32, Vec<String>) {
    let mut all = vec!["check", "--format", "json"];
    all.extend_from_slice(args);
    let (code, out, err) = run(&all, spec);
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    let texts = v["files"][0]["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            format!(
                "{}: {} ({})",
                d["code"].as_str().unwrap(),
                d["message"].as_str().unwrap(),
                d["help"].as_str().unwrap_or_default()
            )
        })
        .collect();
    (code, texts)
}

/// A lookup answering from state the spec does not model; `state` is the path's extra field.
fn lookup(extra: &str) -> String {
    format!(
        "sources:\n  queries: {{}}\ncomponents:\n  Lookup:\n    paths:\n      - {{ from: queries, to: answers, label: OR, gate: [key]{extra} }}\nstreams:\n  - {{ from: queries, to: Lookup.queries }}\n  - {{ from: Lookup.answers, to: out }}\nsinks:\n  out: {{}}\n"
    )
}

#[test]
fn a_read_of_state_no_path_writes_is_a_point_of_order() {
    let (code, ids) = codes(&[], &lookup(""));
    assert_eq!(code, 1, "{ids:?}");
    assert_eq!(ids, ["C002", "C008", "C004"]);
    let (_, out, _) = run(&["check"], &lookup(""));
    assert!(out.contains("unsealed external input"), "{out}");
    assert!(out.contains("state: static"), "{out}");
    assert!(!out.contains("treated as protected"), "{out}");
}

#[test]
fn static_state_is_read_safely() {
    // The control: the same spec, the state declared static.
    let (code, ids) = codes(&[], &lookup(", state: static"));
    assert_eq!((code, ids), (0, Vec::<String>::new()));
}

#[test]
fn an_order_on_the_reader_protects_a_read_of_external_state() {
    let spec = lookup("").replace("  Lookup:\n", "  Lookup:\n    order: [key]\n");
    let (code, ids) = codes(&[], &spec);
    assert_eq!((code, ids), (0, vec!["C008".to_string()]));
}

#[test]
fn state_static_is_refused_where_the_spec_writes_the_state_or_nothing_is_read() {
    let written = lookup(", state: static").replace(
        "    paths:\n",
        "    paths:\n      - { from: updates, to: answers, label: CW }\n",
    );
    let (code, m) = messages(&[], &written);
    assert_eq!(code, 2, "{m:?}");
    assert!(m[0].contains("(CW) writes that state"), "{m:?}");
    let confluent = lookup("").replace("label: OR, gate: [key]", "label: CR, state: static");
    let (code, m) = messages(&[], &confluent);
    assert_eq!(code, 2, "{m:?}");
    assert!(m[0].contains("`state: static` is for an OR path"), "{m:?}");
    let (code, m) = messages(&[], &lookup(", state: statik"));
    assert_eq!(code, 2, "{m:?}");
    assert!(m[0].contains("did you mean `static`?"), "{m:?}");
}

/// A clean spec but for one warning: Merge's input `extra` is fed by no stream (C005).
fn unfed(lint: &str) -> String {
    format!(
        "{lint}sources:\n  a: {{}}\ncomponents:\n  Merge:\n    paths:\n      - {{ from: in, to: out, label: CR }}\n      - {{ from: extra, to: out, label: CR }}\nstreams:\n  - {{ from: a, to: Merge.in }}\n  - {{ from: Merge.out, to: sink }}\nsinks:\n  sink: {{}}\n"
    )
}

#[test]
fn a_denied_warning_fails_the_check_in_every_format() {
    // The control: the warning alone leaves the exit status at 0.
    assert_eq!(codes(&[], &unfed("")), (0, vec!["C005".to_string()]));
    for deny in [
        ["--deny", "C005"],
        ["--deny", "warnings"],
        ["--deny", "implicit-source"],
    ] {
        let (code, out, err) = run(&["check", deny[0], deny[1]], &unfed(""));
        assert_eq!(code, 1, "{deny:?}: {out}{err}");
        assert!(
            out.contains("failed by denied warnings: C005"),
            "{deny:?}: {out}"
        );
    }
    let (code, out, _) = run(&["check", "--format", "json", "--deny", "C005"], &unfed(""));
    assert_eq!(code, 1);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["files"][0]["denied"], serde_json::json!(["C005"]));
    assert_eq!(v["files"][0]["status"], "findings");
    assert_eq!(v["files"][0]["diagnostics"][0]["severity"], "error");
    let (code, out, _) = run(
        &["check", "--format", "sarif", "--deny", "C005"],
        &unfed(""),
    );
    assert_eq!(code, 1);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["runs"][0]["results"][0]["level"], "error");
    let (code, out, _) = run(
        &["check", "--format", "github", "--deny", "C005"],
        &unfed(""),
    );
    assert_eq!(code, 1);
    assert!(
        out.contains(
            "::error title=blazes%3A denied warnings::<stdin>: failed by denied warnings: C005"
        ),
        "{out}"
    );
    // Another code denied: C005 stays a warning.
    assert_eq!(
        codes(&["--deny", "C007"], &unfed("")),
        (0, vec!["C005".to_string()])
    );
}

#[test]
fn an_allowed_warning_is_not_reported_and_a_code_beats_warnings() {
    assert_eq!(codes(&["--allow", "C005"], &unfed("")), (0, Vec::new()));
    assert_eq!(
        codes(&["--deny", "warnings", "--allow", "C005"], &unfed("")),
        (0, Vec::new())
    );
    // An error is not a warning: allowing C004 does not pass an unsafe sink.
    let (code, ids) = codes(&["--allow", "C004", "--allow", "warnings"], &lookup(""));
    assert_eq!(
        (code, ids),
        (1, vec!["C002".to_string(), "C004".to_string()])
    );
}

#[test]
fn the_spec_can_deny_and_the_flags_override_it() {
    let denying = unfed("lint:\n  deny: [warnings]\n");
    let (code, out, _) = run(&["check"], &denying);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("failed by denied warnings: C005"), "{out}");
    assert_eq!(codes(&["--allow", "C005"], &denying), (0, Vec::new()));
    let allowing = unfed("lint:\n  allow: [implicit-source]\n");
    assert_eq!(codes(&[], &allowing), (0, Vec::new()));
    assert_eq!(codes(&["--deny", "C005"], &allowing).0, 1);
}

#[test]
fn unknown_codes_and_contradictions_are_refused() {
    // Usage errors: the spec is not read.
    let o = blazes(&["check", "--deny", "C0005", "specs/wordcount.yaml"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("did you mean `C005`?"), "{err}");
    let o = blazes(&[
        "check",
        "--deny",
        "C005",
        "--allow",
        "C005",
        "specs/wordcount.yaml",
    ]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("both --deny and --allow"), "{err}");
    let (code, m) = messages(
        &[],
        &unfed("lint:\n  deny: [C05, warnings]\n  allow: [warnings]\n  forbid: [C001]\n"),
    );
    assert_eq!(code, 2, "{m:?}");
    assert_eq!(m.len(), 3, "{m:?}");
    assert!(
        m.iter()
            .any(|m| m.contains("unknown field `forbid`") || m.contains("`forbid`")),
        "{m:?}"
    );
    assert!(
        m.iter().any(|m| m.contains("did you mean `C005`?")),
        "{m:?}"
    );
    assert!(m.iter().any(|m| m.contains("both allow and deny")), "{m:?}");
}

/// One OW component fed by a source; `order` and `gate` are written as given.
fn ow(order: &str, gate: &str) -> String {
    format!(
        "sources:\n  a: {{}}\ncomponents:\n  C:\n{order}    paths:\n      - {{ from: in, to: out, label: OW, gate: {gate} }}\nstreams:\n  - {{ from: a, to: C.in }}\n  - {{ from: C.out, to: s }}\nsinks:\n  s: {{}}\n"
    )
}

#[test]
fn empty_orders_and_gates_are_refused_with_what_was_meant() {
    // The controls: `order: global` and `gate: "*"` say what the empty lists seemed to.
    assert_eq!(codes(&[], &ow("    order: global\n", "\"*\"")).0, 0);
    assert_eq!(codes(&[], &ow("", "\"*\"")).0, 1);
    let (code, m) = messages(&[], &ow("    order: []\n", "[]"));
    assert_eq!(code, 2, "{m:?}");
    assert_eq!(m.len(), 2, "every error of the file: {m:?}");
    assert!(
        m.iter()
            .any(|m| m.starts_with("S014") && m.contains("did you mean `order: global`")),
        "{m:?}"
    );
    assert!(
        m.iter()
            .any(|m| m.starts_with("S004") && m.contains("did you mean `gate: \"*\"`")),
        "{m:?}"
    );
}

#[test]
fn an_empty_seal_still_means_a_bounded_input() {
    let sealed = ow("", "[k]").replace("  a: {}", "  a: { seal: [] }");
    assert_eq!(codes(&[], &sealed), (0, Vec::new()));
}

/// The unsealed word count's Count, with `fields` added to it.
fn count(fields: &str) -> String {
    format!(
        "sources:\n  tweets: {{}}\ncomponents:\n  Count:\n{fields}    paths:\n      - {{ from: words, to: counts, label: CW }}\n      - {{ from: words, to: top, label: OW, gate: [word] }}\nstreams:\n  - {{ from: tweets, to: Count.words }}\n  - {{ from: Count.counts, to: db }}\n  - {{ from: Count.top, to: board }}\nsinks:\n  db: {{}}\n  board: {{ tolerate: Run }}\n"
    )
}

#[test]
fn replicated_and_replicas_must_agree() {
    // The controls: each field alone, and the two agreeing.
    for ok in [
        "    replicas: 3\n",
        "    replicated: true\n    replicas: 3\n",
        "    replicated: false\n    replicas: 1\n",
    ] {
        assert_ne!(codes(&[], &count(ok)).0, 2, "{ok}");
    }
    for bad in [
        "    replicated: true\n    replicas: 1\n",
        "    replicated: false\n    replicas: 3\n",
    ] {
        let (code, m) = messages(&[], &count(bad));
        assert_eq!(code, 2, "{bad}: {m:?}");
        assert!(
            m[0].starts_with("S014") && m[0].contains("but `replicas:"),
            "{m:?}"
        );
    }
}

#[test]
fn partitions_are_not_replicas() {
    // Replicated, Count's OW path diverges, worse than `board` tolerates (Run); on one
    // instance it is Run.
    assert_eq!(codes(&[], &count("")), (0, vec!["C001".to_string()]));
    assert_eq!(codes(&[], &count("    replicas: 4\n")).0, 1);
    // Four partitions by word: each record reaches one instance, which is not replication.
    let partitioned = count("    partitions: 4\n    partition_by: [word]\n");
    assert_eq!(codes(&[], &partitioned), (0, vec!["C001".to_string()]));
    // Both: four partitions, each replicated three times.
    let both = count("    partitions: 4\n    partition_by: [word]\n    replicas: 3\n");
    assert_eq!(codes(&[], &both).0, 1);
    let (code, m) = messages(&[], &count("    partitions: 4\n"));
    assert_eq!(code, 2, "{m:?}");
    assert!(m[0].contains("no `partition_by`"), "{m:?}");
    let (code, m) = messages(&[], &count("    partition_by: [word]\n"));
    assert_eq!(code, 2, "{m:?}");
    assert!(m[0].contains("no `partitions`"), "{m:?}");
    let (code, m) = messages(&[], &count("    partitions: 0\n    partition_by: []\n"));
    assert_eq!((code, m.len()), (2, 2), "{m:?}");
}

#[test]
fn plan_check_fails_a_spec_the_plan_would_repair() {
    // The unsealed word count is repairable: 0 without --check, 1 with it.
    let o = blazes(&["plan", "--no-simulate", "specs/wordcount.yaml"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = blazes(&["plan", "--no-simulate", "--check", "specs/wordcount.yaml"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains(
            "`specs/wordcount.yaml` is repairable but not repaired: the plan adds 1 mechanism"
        ),
        "{}",
        stderr(&o)
    );
    // The control: the sealed word count needs nothing, so --check passes it.
    let o = blazes(&[
        "plan",
        "--no-simulate",
        "--check",
        "specs/wordcount-sealed.yaml",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // --check writes nothing.
    let o = blazes(&[
        "plan",
        "--check",
        "--apply",
        "/tmp/never-written.yaml",
        "specs/wordcount.yaml",
    ]);
    assert_eq!(o.status.code(), Some(2));
}

/// A ranker whose input stream is sealed on `seal`; its gate names `epoch`, its order `order`.
fn ranker(seal: &str, order: &str) -> String {
    format!(
        "sources:\n  updates: {{}}\ncomponents:\n  Rank:\n{order}    paths:\n      - {{ from: merged, to: ranks, label: OW, gate: [doc, epoch] }}\nstreams:\n  - {{ from: updates, to: Rank.merged, seal: [{seal}] }}\n  - {{ from: Rank.ranks, to: index }}\nsinks:\n  index: {{ tolerate: Run }}\n"
    )
}

#[test]
fn a_misspelt_attribute_gets_a_did_you_mean() {
    // The control: the seal names the gate's attribute.
    assert_eq!(codes(&[], &ranker("epoch", "")), (0, Vec::new()));
    let (code, m) = messages(&[], &ranker("epoc", ""));
    assert_eq!(code, 0, "{m:?}");
    let lone: Vec<&String> = m.iter().filter(|m| m.starts_with("S017")).collect();
    // Both are named once: one warning, on the later of the two.
    assert_eq!(lone.len(), 1, "{m:?}");
    assert!(
        lone[0].contains("`epoc` is named nowhere else")
            && lone[0].contains("did you mean `epoch`?"),
        "{m:?}"
    );
    // An attribute named once with no neighbour is not reported.
    let (_, m) = messages(&[], &ranker("batch", ""));
    assert!(!m.iter().any(|m| m.starts_with("S017")), "{m:?}");
    // Denied, the warning fails the check.
    assert_eq!(
        codes(&["--deny", "lone-attribute"], &ranker("epoc", "")).0,
        1
    );
}

#[test]
fn a_stream_declared_twice_is_a_warning() {
    let once = unfed("").replace(
        "  - { from: a, to: Merge.in }\n",
        "  - { from: a, to: Merge.in }\n  - { from: a, to: Merge.extra }\n",
    );
    assert_eq!(codes(&[], &once), (0, Vec::new()));
    let twice = unfed("").replace(
        "  - { from: a, to: Merge.in }\n",
        "  - { from: a, to: Merge.in }\n  - { from: a, to: Merge.in }\n",
    );
    assert_eq!(
        codes(&[], &twice),
        (0, vec!["C005".to_string(), "S018".to_string()])
    );
    // Another seal is another stream.
    let sealed = unfed("").replace(
        "  - { from: a, to: Merge.in }\n",
        "  - { from: a, to: Merge.in }\n  - { from: a, to: Merge.in, seal: [k] }\n",
    );
    assert!(!codes(&[], &sealed).1.contains(&"S018".to_string()));
}

#[test]
fn a_spec_without_components_is_s009() {
    let (code, m) = messages(&[], "components: {}\nstreams: []\n");
    assert_eq!(code, 2, "{m:?}");
    assert!(
        m[0].starts_with("S009: the spec declares no components"),
        "{m:?}"
    );
    // Components and no stream between them: S009 as well.
    let one = "components:\n  A:\n    paths:\n      - { from: i, to: o, label: CR }\nstreams: []\n";
    let (code, m) = messages(&[], one);
    assert_eq!(code, 2, "{m:?}");
    assert!(
        m[0].starts_with("S009: the spec declares no streams"),
        "{m:?}"
    );
    let (code, m) = messages(&[], &one.replace("streams: []\n", ""));
    assert_eq!(code, 2, "{m:?}");
    assert!(
        m[0].starts_with("S009: the spec declares no streams"),
        "{m:?}"
    );
    // The control: one component with a stream, and the spec is analysed.
    let fed = "sources: { s: {} }\ncomponents:\n  A:\n    paths:\n      - { from: i, to: o, label: CR }\nstreams: [{ from: s, to: A.i }]\n";
    assert_eq!(codes(&[], fed), (0, vec![]));
}

/// A misspelt `order: global` gets a did-you-mean; another word is told the two shapes. The
/// control: `order: global` itself is accepted.
#[test]
fn a_misspelt_global_order_is_suggested() {
    let spec = |order: &str| {
        format!(
            "sources: {{ s: {{}} }}\ncomponents:\n  A:\n    order: {order}\n    paths: [{{ from: i, to: o, label: CR }}]\nstreams: [{{ from: s, to: A.i }}]\n"
        )
    };
    let (code, m) = messages(&[], &spec("globl"));
    assert_eq!(code, 2);
    assert!(m[0].ends_with("(did you mean `order: global`?)"), "{m:?}");
    let (code, m) = messages(&[], &spec("word"));
    assert_eq!(code, 2);
    assert!(
        m[0].contains("a keyed order is a list of attributes, `order: [key]`"),
        "{m:?}"
    );
    assert!(!m[0].contains("did you mean"), "{m:?}");
    assert_eq!(messages(&[], &spec("global")).0, 0);
}
