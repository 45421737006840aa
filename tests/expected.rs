//! Every shipped spec states its verdict in one `# Expected:` comment, and this test holds the
//! real binary to it, so the comments cannot go stale.
//!
//! The syntax is one line, clauses separated by `; `, in this order:
//!
//! ```text
//! # Expected: exit N; sinks NAME=LABEL ...; points none|COMP:KIND ...; barriers none|COMP.INPUT[K,...] ...[; unreached N][; plan none|MECH ...]
//! ```
//!
//! - `exit N`: the exit status of `blazes check SPEC`.
//! - `sinks`: every sink (declared and implicit) with its label: `Async`, `Run`, `Inst`,
//!   `Diverge`, `Unreached` or `Seal(k,...)` (keys sorted, no spaces).
//! - `points`: every point of order, `KIND` is `unordered-write`, `transient-write` or
//!   `unprotected-read` (the names of the codes C001, C003 and C002); `none` when there is none.
//! - `barriers`: every seal barrier, its key sorted; `none` when there is none.
//! - `unreached N`: the number of streams no source reaches; leaving it out means 0.
//! - `plan`: what `blazes plan SPEC` adds: `add-seal:SOURCE[K,...]`, a seal of an internal
//!   stream `add-seal:COMP.OUTPUT->COMP.INPUT[K,...]`, `keyed-order:COMP[K,...]`,
//!   `global-order:COMP`; `none` means the spec needs nothing (status `ok`). Leaving the clause
//!   out leaves the plan unchecked.
//!
//! Lists compare as multisets (the order written does not matter); everything else is exact.

mod common;

use common::*;
use serde_json::Value;

/// What a spec's `# Expected:` line claims.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Expected {
    exit: i32,
    sinks: Vec<String>,
    points: Vec<String>,
    barriers: Vec<String>,
    unreached: usize,
    plan: Option<Vec<String>>,
}

/// The items of a list clause: `none` is the empty list, and is only allowed alone.
fn items(rest: &str, clause: &str) -> Result<Vec<String>, String> {
    let v: Vec<String> = rest.split(' ').map(str::to_string).collect();
    if v.iter().any(String::is_empty) {
        return Err(format!("`{clause}` has an empty item (double space?)"));
    }
    if v == ["none"] {
        return Ok(Vec::new());
    }
    if v.iter().any(|s| s == "none") {
        return Err(format!("`{clause}` mixes `none` with items"));
    }
    Ok(v)
}

fn check_item(item: &str, clause: &str, ok: impl Fn(&str) -> bool) -> Result<(), String> {
    if ok(item) {
        Ok(())
    } else {
        Err(format!("`{clause}` item `{item}` is malformed"))
    }
}

fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
}

/// A component or source: a name, or in a composed spec the path of instances to it
/// (`Reports.Report`, `docs/compose.md`).
fn is_node(s: &str) -> bool {
    s.split('.').all(is_name)
}

/// `[a,b]`, or `[]` for the empty key (a bounded stream's seal).
fn is_key(s: &str) -> bool {
    s.strip_prefix('[')
        .and_then(|s| s.strip_suffix(']'))
        .is_some_and(|k| k.is_empty() || k.split(',').all(is_name))
}

fn is_label(s: &str) -> bool {
    matches!(s, "Async" | "Run" | "Inst" | "Diverge" | "Unreached")
        || s.strip_prefix("Seal(")
            .and_then(|s| s.strip_suffix(')'))
            .is_some_and(|k| k.is_empty() || k.split(',').all(is_name))
}

/// Parses the one `# Expected:` line of a spec's text. Strict: one line, every required clause,
/// in order, nothing unknown.
fn parse(text: &str) -> Result<Expected, String> {
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.trim_start().starts_with('#') && l.contains("Expected"))
        .collect();
    let line = match lines.as_slice() {
        [l] => *l,
        [] => return Err("no `# Expected:` line".into()),
        _ => return Err("more than one line mentions `Expected`".into()),
    };
    let body = line
        .strip_prefix("# Expected: ")
        .ok_or_else(|| format!("`{line}` does not start with `# Expected: `"))?;
    let mut clauses = body.split("; ").peekable();
    let mut take = |name: &str, required: bool| -> Result<Option<String>, String> {
        match clauses.peek() {
            Some(c) if c.split(' ').next() == Some(name) => {
                let c = clauses.next().unwrap();
                let rest = c[name.len()..]
                    .strip_prefix(' ')
                    .ok_or_else(|| format!("`{name}` has no value"))?;
                Ok(Some(rest.to_string()))
            }
            _ if required => Err(format!("missing the `{name}` clause (or out of order)")),
            _ => Ok(None),
        }
    };
    let exit = take("exit", true)?.unwrap();
    let exit: i32 = match exit.as_str() {
        "0" | "1" | "2" => exit.parse().unwrap(),
        other => return Err(format!("`exit {other}`: the status is 0, 1 or 2")),
    };
    let sinks = items(&take("sinks", true)?.unwrap(), "sinks")?;
    if sinks.is_empty() {
        return Err("`sinks` cannot be `none`: every spec has a sink".into());
    }
    for s in &sinks {
        check_item(s, "sinks", |s| {
            s.split_once('=')
                .is_some_and(|(n, l)| !n.is_empty() && !n.contains(' ') && is_label(l))
        })?;
    }
    let points = items(&take("points", true)?.unwrap(), "points")?;
    for p in &points {
        check_item(p, "points", |p| {
            p.split_once(':').is_some_and(|(c, k)| {
                is_node(c)
                    && matches!(
                        k,
                        "unordered-write" | "transient-write" | "unprotected-read"
                    )
            })
        })?;
    }
    let barriers = items(&take("barriers", true)?.unwrap(), "barriers")?;
    for b in &barriers {
        check_item(b, "barriers", |b| {
            b.split_once('[').is_some_and(|(ci, k)| {
                ci.rsplit_once('.')
                    .is_some_and(|(c, i)| is_node(c) && is_name(i))
                    && is_key(&format!("[{k}"))
            })
        })?;
    }
    let unreached = match take("unreached", false)? {
        None => 0,
        Some(n) => match n.parse::<usize>() {
            Ok(0) => return Err("`unreached 0` is the default: leave the clause out".into()),
            Ok(n) => n,
            Err(_) => return Err(format!("`unreached {n}` is not a count")),
        },
    };
    let plan = match take("plan", false)? {
        None => None,
        Some(rest) => {
            let v = items(&rest, "plan")?;
            for m in &v {
                check_item(m, "plan", |m| match m.split_once(':') {
                    Some(("add-seal" | "keyed-order", t)) => {
                        t.split_once('[').is_some_and(|(n, k)| {
                            let stream = n.split_once("->").filter(|_| m.starts_with("add-seal"));
                            stream.map_or(is_node(n), |(a, b)| is_node(a) && is_node(b))
                                && is_key(&format!("[{k}"))
                        })
                    }
                    Some(("global-order", c)) => is_node(c),
                    _ => false,
                })?;
            }
            Some(v)
        }
    };
    if let Some(extra) = clauses.next() {
        return Err(format!("unknown or misplaced clause `{extra}`"));
    }
    Ok(Expected {
        exit,
        sinks,
        points,
        barriers,
        unreached,
        plan,
    })
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_string())
        .collect()
}

fn label_of(v: &Value) -> String {
    // A sink no source reaches has no label (`null`); the comment calls that `Unreached`.
    let Some(l) = v["label"].as_str() else {
        return "Unreached".to_string();
    };
    match v.get("key") {
        Some(k) if l == "Seal" => format!("Seal({})", strings(k).join(",")),
        _ => l.to_string(),
    }
}

/// What the binary actually reports for a spec, in the comment's vocabulary.
fn observe(spec: &str, with_plan: bool) -> Expected {
    let o = blazes(&["check", "--format", "json", spec]);
    let doc: Value = serde_json::from_str(&stdout(&o)).expect("check --format json prints JSON");
    let f = &doc["files"][0];
    let list = |key: &str| f[key].as_array().unwrap().clone();
    let plan = with_plan.then(|| {
        let p = blazes(&["plan", "--format", "json", spec]);
        let doc: Value = serde_json::from_str(&stdout(&p)).expect("plan --format json prints JSON");
        let doc = &doc["files"][0];
        let added: Vec<String> = doc["mechanisms"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["kind"] != "seal-barrier")
            .map(|m| {
                let kind = m["kind"].as_str().unwrap();
                match kind {
                    "add-seal" => format!(
                        "add-seal:{}[{}]",
                        match m["source"].as_str() {
                            Some(source) => source.to_string(),
                            None => format!(
                                "{}->{}",
                                m["stream"]["from"].as_str().unwrap(),
                                m["stream"]["to"].as_str().unwrap()
                            ),
                        },
                        strings(&m["key"]).join(",")
                    ),
                    "keyed-order" => format!(
                        "keyed-order:{}[{}]",
                        m["component"].as_str().unwrap(),
                        strings(&m["key"]).join(",")
                    ),
                    _ => format!("{kind}:{}", m["component"].as_str().unwrap()),
                }
            })
            .collect();
        // `none` claims there is nothing to coordinate; a list claims the plan repairs the
        // spec with exactly that. Anything else (unrepairable) can never match.
        let consistent = match doc["status"].as_str().unwrap() {
            "ok" => added.is_empty(),
            "repaired" => !added.is_empty() && p.status.code() == Some(0),
            _ => false,
        };
        if consistent {
            added
        } else {
            vec![format!("status:{}", doc["status"])]
        }
    });
    Expected {
        exit: o.status.code().unwrap(),
        sinks: list("sinks")
            .iter()
            .map(|s| format!("{}={}", s["name"].as_str().unwrap(), label_of(s)))
            .collect(),
        points: list("points_of_order")
            .iter()
            .map(|p| {
                format!(
                    "{}:{}",
                    p["component"].as_str().unwrap(),
                    p["kind"].as_str().unwrap()
                )
            })
            .collect(),
        barriers: list("seal_barriers")
            .iter()
            .map(|b| {
                format!(
                    "{}.{}[{}]",
                    b["component"].as_str().unwrap(),
                    b["input"].as_str().unwrap(),
                    strings(&b["key"]).join(",")
                )
            })
            .collect(),
        unreached: list("streams")
            .iter()
            .filter(|s| s["label"].is_null())
            .count(),
        plan,
    }
}

fn sorted(mut e: Expected) -> Expected {
    e.sinks.sort();
    e.points.sort();
    e.barriers.sort();
    if let Some(p) = &mut e.plan {
        p.sort();
    }
    e
}

/// Checks one spec against the expectation given; `Err` says what differs.
fn verify(spec: &str, expected: &Expected) -> Result<(), String> {
    let want = sorted(expected.clone());
    let got = sorted(observe(spec, want.plan.is_some()));
    if want == got {
        Ok(())
    } else {
        Err(format!(
            "{spec}: the `# Expected:` comment says\n  {want:?}\nbut blazes reports\n  {got:?}"
        ))
    }
}

fn specs() -> Vec<String> {
    let mut v = yaml_files("specs");
    assert!(v.len() >= 12, "specs/ holds the shipped specs");
    // The white boxes: the classic streaming queries, the talk's KVS and pub/sub.
    v.extend(yaml_files("specs/sql"));
    v.extend(yaml_files("specs/whitebox"));
    // A system of services in their own files (`docs/compose.md`), and each service alone.
    v.extend(yaml_files("specs/system"));
    v.extend(yaml_files("specs/system/services"));
    assert!(
        v.len() >= 19,
        "specs/sql and specs/whitebox hold the white-box specs"
    );
    v
}

#[test]
fn every_spec_meets_its_expected_comment() {
    let mut failures = Vec::new();
    for spec in specs() {
        let text = std::fs::read_to_string(root().join(&spec)).unwrap();
        match parse(&text) {
            Ok(e) => {
                if let Err(msg) = verify(&spec, &e) {
                    failures.push(msg);
                }
            }
            Err(msg) => failures.push(format!("{spec}: {msg}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Negative control: the same harness with one claim changed must fail, for every clause of
/// every spec. A `verify` that compared too little (or nothing) would let these through.
#[test]
fn a_changed_claim_is_caught() {
    for spec in specs() {
        let text = std::fs::read_to_string(root().join(&spec)).unwrap();
        let e = parse(&text).unwrap_or_else(|m| panic!("{spec}: {m}"));
        let with_plan = Expected {
            plan: Some(e.plan.clone().unwrap_or_default()),
            ..e.clone()
        };
        let mut wrong: Vec<(&str, Expected)> = vec![
            (
                "exit",
                Expected {
                    exit: 1 - e.exit.min(1),
                    ..e.clone()
                },
            ),
            (
                "unreached",
                Expected {
                    unreached: e.unreached + 1,
                    ..e.clone()
                },
            ),
            (
                "a point added",
                Expected {
                    points: [e.points.clone(), vec!["Nobody:unordered-write".into()]].concat(),
                    ..e.clone()
                },
            ),
            (
                "a barrier added",
                Expected {
                    barriers: [e.barriers.clone(), vec!["Nobody.in[k]".into()]].concat(),
                    ..e.clone()
                },
            ),
            (
                "a plan mechanism added",
                Expected {
                    plan: Some(
                        [
                            with_plan.plan.clone().unwrap(),
                            vec!["global-order:Nobody".into()],
                        ]
                        .concat(),
                    ),
                    ..e.clone()
                },
            ),
        ];
        // The sink's label one step off (Run <-> Inst, anything else -> Run).
        let mut sinks = e.sinks.clone();
        let (name, label) = sinks[0].split_once('=').unwrap();
        let other = if label == "Run" { "Inst" } else { "Run" };
        sinks[0] = format!("{name}={other}");
        wrong.push(("a sink label", Expected { sinks, ..e.clone() }));
        if !e.points.is_empty() {
            wrong.push((
                "a point dropped",
                Expected {
                    points: e.points[1..].to_vec(),
                    ..e.clone()
                },
            ));
        }
        if !e.barriers.is_empty() {
            wrong.push((
                "a barrier dropped",
                Expected {
                    barriers: e.barriers[1..].to_vec(),
                    ..e.clone()
                },
            ));
        }
        if let Some(p) = e.plan.as_ref().filter(|p| !p.is_empty()) {
            wrong.push((
                "a plan mechanism dropped",
                Expected {
                    plan: Some(p[1..].to_vec()),
                    ..e.clone()
                },
            ));
        }
        for (what, w) in wrong {
            assert!(
                verify(&spec, &w).is_err(),
                "{spec}: changing {what} went unnoticed"
            );
        }
    }
}

#[test]
fn the_syntax_is_strict() {
    let good = "# Expected: exit 1; sinks db=Run; points Count:unordered-write; barriers none; plan keyed-order:Count[batch,word]\n";
    assert_eq!(
        parse(good),
        Ok(Expected {
            exit: 1,
            sinks: vec!["db=Run".into()],
            points: vec!["Count:unordered-write".into()],
            barriers: vec![],
            unreached: 0,
            plan: Some(vec!["keyed-order:Count[batch,word]".into()]),
        })
    );
    let sealed = "# Expected: exit 0; sinks a=Seal(k) b=Seal(); points none; barriers C.in[k,m]; unreached 2\n";
    assert_eq!(parse(sealed).unwrap().unreached, 2);
    for bad in [
        "name: x\n",
        "# Expected: exit 1; sinks db=Run; points none; barriers none\n# Expected: exit 1\n",
        "#Expected: exit 1; sinks db=Run; points none; barriers none\n",
        "# Expected: exit 3; sinks db=Run; points none; barriers none\n",
        "# Expected: sinks db=Run; exit 1; points none; barriers none\n",
        "# Expected: exit 1; sinks db=Run; points none\n",
        "# Expected: exit 1; sinks none; points none; barriers none\n",
        "# Expected: exit 1; sinks db=Bad; points none; barriers none\n",
        "# Expected: exit 1; sinks db=Run; points Count; barriers none\n",
        "# Expected: exit 1; sinks db=Run; points Count:write; barriers none\n",
        "# Expected: exit 1; sinks db=Run; points none Count:unordered-write; barriers none\n",
        "# Expected: exit 1; sinks db=Run; points none; barriers Count[batch]\n",
        "# Expected: exit 1; sinks db=Run; points none; barriers Count.words[a,]\n",
        "# Expected: exit 1; sinks db=Run;  points none; barriers none\n",
        "# Expected: exit 1; sinks db=Run; points none; barriers none; unreached 0\n",
        "# Expected: exit 1; sinks db=Run; points none; barriers none; plan order:Count\n",
        "# Expected: exit 1; sinks db=Run; points none; barriers none; plan none; verdict bad\n",
        "# Expected: exit 1; sinks db=Run; points none; barriers none; plan none; unreached 2\n",
    ] {
        assert!(parse(bad).is_err(), "accepted: {bad}");
    }
}

/// `docs/algebra.md` derives every shipped spec by hand under a heading naming it, and quotes
/// the spec's `# Expected:` line: a verdict changed in the spec without its derivation fails.
#[test]
fn the_algebra_page_derives_every_spec_with_its_expected_line() {
    let doc = std::fs::read_to_string(root().join("docs/algebra.md")).unwrap();
    let missing = |doc: &str| -> Vec<String> {
        specs()
            .into_iter()
            .filter(|spec| {
                let text = std::fs::read_to_string(root().join(spec)).unwrap();
                let line = text
                    .lines()
                    .find_map(|l| l.strip_prefix("# Expected: "))
                    .unwrap();
                let Some((_, section)) = doc.split_once(&format!("### `{spec}`")) else {
                    return true;
                };
                let section = section.split("\n### ").next().unwrap();
                !section.contains(&format!("\n`{line}`\n"))
            })
            .collect()
    };
    assert_eq!(missing(&doc), Vec::<String>::new());
    // Negative control: the page with one verdict changed no longer matches.
    let stale = doc.replacen("sinks answers=Inst", "sinks answers=Run", 1);
    assert_ne!(stale, doc);
    assert_eq!(missing(&stale), vec!["specs/ad-poor.yaml".to_string()]);
}
