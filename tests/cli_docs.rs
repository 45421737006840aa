//! What the binary says about itself: `blazes explain` (codes and topics), shell completions
//! and man pages. The completions are loaded by a real bash and the man pages rendered by
//! `man -l` and groff, each with a negative control that the same harness rejects.

mod common;

use std::process::{Command, Output, Stdio};

use common::*;

/// Whether an external tool is on the PATH; in CI a missing one fails the test with how to
/// install it.
fn tool(name: &str, install: &str) -> bool {
    let found = runs("sh", &["-c", &format!("command -v {name}")]);
    require_tool(found, &format!("`{name}`"), install)
}

fn sh(program: &str, args: &[&str], input: &[u8], env: &[(&str, &str)]) -> Output {
    use std::io::Write;
    let mut child = Command::new(program)
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{program} runs: {e}"));
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

// ---- explain ---------------------------------------------------------------------------------

/// The code ids of an index, in the order listed; `Err` when they are not in id order, or the
/// topics do not follow the codes.
fn index_order(text: &str) -> Result<Vec<String>, String> {
    let (codes, topics) = text
        .split_once("\nTopics")
        .ok_or("no topic list after the codes")?;
    let ids: Vec<String> = codes
        .lines()
        .filter_map(|l| l.trim_start().split(' ').next())
        .filter(|w| {
            w.len() == 4
                && (w.starts_with('C')
                    || w.starts_with('S')
                    || w.starts_with('I')
                    || w.starts_with('W'))
        })
        .map(str::to_string)
        .collect();
    let mut sorted = ids.clone();
    sorted.sort();
    if ids != sorted {
        return Err(format!("codes out of order: {ids:?}"));
    }
    if topics.contains("C001") || topics.contains("S001") {
        return Err("a code is listed among the topics".into());
    }
    Ok(ids)
}

#[test]
fn explain_lists_codes_in_id_order_then_topics() {
    let o = blazes(&["explain"]);
    assert_eq!(o.status.code(), Some(0));
    let text = stdout(&o);
    let ids = index_order(&text).unwrap();
    let mut all: Vec<String> = blazes::codes::ALL
        .iter()
        .map(|c| c.id.to_string())
        .collect();
    all.sort();
    assert_eq!(ids, all, "every code, once");
    let topics = text.split_once("\nTopics").unwrap().1;
    let width = blazes::topics::ALL
        .iter()
        .map(|t| t.name.len())
        .max()
        .unwrap();
    for t in blazes::topics::ALL {
        assert!(
            topics.contains(&format!("  {:<width$}  {}", t.name, t.summary)),
            "topic {} listed",
            t.name
        );
    }
    // Negative control: the registry's own order (S014 was added after S016) is what an
    // unsorted listing would print, and the check rejects it.
    let unsorted: String = blazes::codes::ALL
        .iter()
        .map(|c| format!("  {}  {}\n", c.id, c.name))
        .collect();
    assert!(index_order(&format!("{unsorted}\nTopics:\n")).is_err());
}

#[test]
fn every_topic_has_a_page_in_any_case() {
    for t in blazes::topics::ALL {
        for q in [
            t.name.to_string(),
            t.name.to_lowercase(),
            t.name.to_uppercase(),
        ] {
            let o = blazes(&["explain", &q]);
            assert_eq!(o.status.code(), Some(0), "explain {q}: {}", stderr(&o));
            let page = stdout(&o);
            assert_eq!(page, blazes::topics::page(t), "explain {q}");
            assert!(page.len() > 300, "explain {q} says something");
        }
    }
    // The vocabulary the issue asked for.
    for q in [
        "labels", "CR", "CW", "OR", "OW", "seal", "gate", "order", "tolerate", "plan",
    ] {
        assert!(blazes::topics::find(q).is_some(), "topic {q}");
    }
    assert!(stdout(&blazes(&["explain", "OW"])).starts_with("OW: order-sensitive write"));
    // `plan` keeps the planner's own page.
    assert_eq!(stdout(&blazes(&["explain", "plan"])), blazes::plan::EXPLAIN);
}

#[test]
fn gate_is_the_topic_and_s004_keeps_its_id() {
    let topic = stdout(&blazes(&["explain", "gate"]));
    assert!(topic.starts_with("gate: "), "{topic}");
    assert!(topic.contains("S004"), "the topic points to the code");
    let code = stdout(&blazes(&["explain", "S004"]));
    assert!(code.starts_with("S004 (gate): "), "{code}");
}

#[test]
fn an_unknown_topic_suggests_the_nearest() {
    let o = blazes(&["explain", "sael"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.starts_with("error: unknown diagnostic code or topic `sael`; did you mean `seal`?"),
        "{e}"
    );
    assert!(stdout(&o).is_empty());
}

// ---- completions -----------------------------------------------------------------------------

/// Loads `script` into bash, checks the `blazes` completion is registered, and returns what it
/// offers for the words given (the last one is being completed).
fn bash_complete(script: &[u8], words: &[&str]) -> Result<Vec<String>, String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("blazes.bash");
    std::fs::write(&path, script).unwrap();
    let cword = words.len() - 1;
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let cmd = format!(
        "source '{}' || exit 3\n\
         complete -p blazes || exit 4\n\
         COMP_WORDS=({}); COMP_CWORD={cword}; COMP_LINE='{}'; COMP_POINT=${{#COMP_LINE}}\n\
         fn=$(complete -p blazes | sed -n 's/.* -F \\([^ ]*\\) .*/\\1/p')\n\
         \"$fn\" blazes '{}' '{}' || exit 5\n\
         printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        path.display(),
        quoted.join(" "),
        words.join(" "),
        words[cword],
        words[cword.saturating_sub(1)],
    );
    let o = sh("bash", &["--norc", "--noprofile", "-c", &cmd], b"", &[]);
    if !o.status.success() {
        return Err(format!(
            "bash exited {:?}: {}",
            o.status.code(),
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    let out = String::from_utf8(o.stdout).unwrap();
    let mut lines = out.lines();
    let registered = lines.next().unwrap_or_default();
    if !registered.contains("blazes") {
        return Err(format!("not registered: {registered}"));
    }
    Ok(lines.map(str::to_string).collect())
}

#[test]
fn bash_loads_the_completions_and_completes() {
    if !tool("bash", "apt-get install bash") {
        return;
    }
    let script = blazes(&["completions", "bash"]);
    assert_eq!(script.status.code(), Some(0));
    // The line the README gives, verbatim.
    let o = sh(
        "bash",
        &[
            "-c",
            &format!(
                "source <('{}' completions bash); complete -p blazes",
                env!("CARGO_BIN_EXE_blazes")
            ),
        ],
        b"",
        &[],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("-F _blazes blazes"));

    let sub = bash_complete(&script.stdout, &["blazes", "ch"]).unwrap();
    assert_eq!(sub, ["check"]);
    let all = bash_complete(&script.stdout, &["blazes", ""]).unwrap();
    for c in [
        "check",
        "plan",
        "deploy",
        "simulate",
        "render",
        "explain",
        "gen",
        "import",
        "completions",
        "man",
    ] {
        assert!(all.iter().any(|w| w == c), "{c} offered: {all:?}");
    }
    let formats = bash_complete(&script.stdout, &["blazes", "check", "--format", ""]).unwrap();
    assert_eq!(formats, ["human", "json", "sarif", "github"]);
    let shells = bash_complete(&script.stdout, &["blazes", "completions", ""]).unwrap();
    for s in ["bash", "zsh", "fish", "powershell"] {
        assert!(shells.iter().any(|w| w == s), "{s} offered: {shells:?}");
    }

    // Negative control: the script without its `complete` registration loads, but registers
    // nothing, and the harness says so.
    let text = String::from_utf8(script.stdout.clone()).unwrap();
    let unregistered: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("complete "))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_ne!(
        unregistered, text,
        "the script has a `complete` line to remove"
    );
    assert!(bash_complete(unregistered.as_bytes(), &["blazes", "ch"]).is_err());
}

#[test]
fn every_shell_gets_a_script_naming_every_command() {
    for (shell, marker) in [
        ("bash", "complete -F _blazes"),
        ("zsh", "#compdef blazes"),
        ("fish", "complete -c blazes"),
        ("powershell", "Register-ArgumentCompleter"),
        ("elvish", "edit:completion:arg-completer[blazes]"),
    ] {
        let o = blazes(&["completions", shell]);
        assert_eq!(o.status.code(), Some(0), "{shell}");
        let s = stdout(&o);
        assert!(s.contains(marker), "{shell} script has `{marker}`");
        for c in [
            "check",
            "plan",
            "deploy",
            "simulate",
            "render",
            "explain",
            "import",
            "completions",
            "man",
        ] {
            assert!(s.contains(c), "{shell} script names {c}");
        }
        assert_eq!(
            o.stdout,
            blazes(&["completions", shell]).stdout,
            "{shell}: deterministic"
        );
    }
    let bad = blazes(&["completions", "tcsh"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("invalid value 'tcsh'"));
}

// ---- man -------------------------------------------------------------------------------------

/// Renders roff with `man -l` and with groff's warnings on; `Err` carries any complaint.
fn render_man(roff: &[u8]) -> Result<String, String> {
    let env = [
        ("MANPAGER", "cat"),
        ("MANWIDTH", "100"),
        ("LC_ALL", "C.UTF-8"),
    ];
    let o = sh("man", &["-l", "-"], roff, &env);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    if !o.status.success() || !err.trim().is_empty() {
        return Err(format!("man -l: {err}"));
    }
    let g = sh("groff", &["-man", "-Tutf8", "-ww", "-z"], roff, &env);
    let gerr = String::from_utf8_lossy(&g.stderr).into_owned();
    if !g.status.success() || !gerr.trim().is_empty() {
        return Err(format!("groff: {gerr}"));
    }
    Ok(String::from_utf8_lossy(&o.stdout).into_owned())
}

#[test]
fn man_pages_render_without_warnings() {
    let main = blazes(&["man"]);
    assert_eq!(main.status.code(), Some(0));
    let roff = stdout(&main);
    assert!(roff.contains(".TH blazes 1"), "{roff}");
    for c in [
        "check",
        "render",
        "explain",
        "plan",
        "deploy",
        "simulate",
        "gen",
        "import",
        "completions",
        "man",
    ] {
        assert!(roff.contains(&format!("blazes\\-{c}(1)")), "lists {c}");
    }
    assert_eq!(main.stdout, blazes(&["man"]).stdout, "deterministic");
    if !(tool("man", "apt-get install man-db") && tool("groff", "apt-get install groff")) {
        return;
    }
    let page = render_man(&main.stdout).unwrap();
    for section in ["NAME", "SYNOPSIS", "DESCRIPTION", "SUBCOMMANDS", "VERSION"] {
        assert!(page.contains(section), "{section} in\n{page}");
    }
    for c in [
        "check",
        "render",
        "explain",
        "plan",
        "deploy",
        "simulate",
        "gen",
        "import",
        "completions",
        "man",
    ] {
        let o = blazes(&["man", c]);
        assert_eq!(o.status.code(), Some(0), "man {c}");
        let page = render_man(&o.stdout).unwrap_or_else(|e| panic!("man {c}: {e}"));
        // man justifies lines with extra spaces.
        let page = page.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            page.contains(&format!("blazes-{c}")) && page.contains(&format!("blazes {c}")),
            "man {c}:\n{page}"
        );
    }
    let check = render_man(&blazes(&["man", "check"]).stdout).unwrap();
    assert!(check.contains("--fail-on"), "{check}");
    // Negative control: the same page with one undefined macro is rejected.
    let mut broken = main.stdout.clone();
    broken.extend_from_slice(b".XYZ not a macro\n");
    assert!(render_man(&broken).is_err());
}

#[test]
fn man_of_an_unknown_command_is_a_usage_error() {
    let o = blazes(&["man", "chek"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o),
        "error: `chek` is not a blazes command (did you mean `check`?); the commands are: check, render, explain, plan, simulate, deploy, summarize, gen, import, completions, man\n"
    );
    assert!(stdout(&o).is_empty());
}

/// The spec format and the modelling questions users asked have pages (snapshotted: their
/// texts are the user documentation), the spec's field names reach the page about them, and a
/// near miss is suggested. The control: a word no topic or alias is near gets no suggestion.
#[test]
fn the_spec_and_the_modelling_questions_have_pages() {
    for q in [
        "spec",
        "replicas",
        "last-writer-wins",
        "external-state",
        "write-only",
        "same-name",
        "producers",
    ] {
        let o = blazes(&["explain", q]);
        assert_eq!(o.status.code(), Some(0), "explain {q}");
        insta::assert_snapshot!(format!("explain_{q}"), stdout(&o));
    }
    // Every field of the spec is on its page.
    let spec = stdout(&blazes(&["explain", "spec"]));
    for field in [
        "version:",
        "name:",
        "sources:",
        "seal:",
        "sealable:",
        "watermark:",
        "components:",
        "paths:",
        "label:",
        "gate",
        "state: static",
        "order:",
        "replicas:",
        "replicated:",
        "partitions:",
        "partition_by:",
        "sql:",
        "bloom:",
        "streams:",
        "sinks:",
        "tolerate:",
        "lint:",
        "deny:",
        "allow:",
        "warn:",
        "annotation",
        "subscript",
        "Rep",
    ] {
        assert!(spec.contains(field), "`{field}` on the spec page");
    }
    for (alias, topic) in [
        ("replicated", "replicas"),
        ("partitions", "replicas"),
        ("lww", "last-writer-wins"),
        ("state", "external-state"),
        ("barrier", "producers"),
    ] {
        assert_eq!(
            stdout(&blazes(&["explain", alias])),
            stdout(&blazes(&["explain", topic])),
            "explain {alias}"
        );
    }
    let o = blazes(&["explain", "replicatd"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("did you mean `replicated`?"),
        "{}",
        stderr(&o)
    );
    let o = blazes(&["explain", "zzzzzzzz"]);
    assert!(!stderr(&o).contains("did you mean"), "{}", stderr(&o));
}
