//! Output that is safe and bounded (issue 23 §3), on the real binary: a spec cannot drive the
//! terminal of whoever reads its report, a binary file is not echoed, the human report is
//! bounded like SARIF and GitHub, and colour follows `NO_COLOR` and `TERM=dumb`.

mod common;

use std::path::PathBuf;
use std::process::{Command, Stdio};

use common::{assert_clean_failure, blazes, blazes_stdin, stderr, stdout};

/// A fresh directory of the target's temporary directory for `test`.
fn dir(test: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("output-{test}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write(test: &str, name: &str, bytes: &[u8]) -> String {
    let p = dir(test).join(name);
    std::fs::write(&p, bytes).unwrap();
    p.display().to_string()
}

/// The characters a terminal acts on that no report may print: ESC, BEL, NUL, DEL, the
/// one-character CSI.
const CONTROLS: [char; 5] = ['\u{1b}', '\u{7}', '\0', '\u{7f}', '\u{9b}'];

fn assert_no_controls(what: &str, text: &str) {
    for c in CONTROLS {
        assert!(
            !text.contains(c),
            "{what} contains U+{:04X}:\n{text}",
            u32::from(c)
        );
    }
}

/// Raw control bytes in a comment: the YAML reader refuses them (S001), and the snippet of
/// the line shows them escaped.
const RAW: &[u8] = b"# \x1b[31mred\x1b[0m \x1b]0;pwned\x07 del\x7f\ncomponents: {}\n";

/// Control characters inside names and values, written with YAML's own escapes, so that the
/// file is valid YAML whose strings carry them into messages (names with them are refused,
/// S007, and values are quoted in messages).
const QUOTED: &str = r#"sources:
  "src\e[31m": {}
components:
  "Count\e]0;pwned\a":
    paths: [{ from: i, to: o, label: "OW\x7f\e[2J", gate: ["k\u009b31m"] }]
    order: "glob\u009b31m"
streams:
  - { from: "src\e[31m", to: "Count\e]0;pwned\a.i" }
sinks: { "db\0x": {} }
"#;

/// A valid spec whose name (which the plan quotes) carries an OSC title sequence and BEL.
const NAMED: &str = r#"name: "spec\e]0;pwned\a\x7f"
sources:
  src: {}
components:
  Count:
    paths: [{ from: i, to: o, label: OW, gate: [k] }]
streams:
  - { from: src, to: Count.i }
"#;

#[test]
fn raw_control_bytes_of_a_comment_are_shown_escaped() {
    let spec = write("raw", "raw.yaml", RAW);
    for color in ["never", "always"] {
        let o = blazes(&["check", "--color", color, &spec]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        let out = stdout(&o);
        // The summary and the snippet: the comment's line escaped, visibly.
        assert!(
            out.contains(r"\e[31mred\e[0m \e]0;pwned\x07 del\x7f"),
            "{out}"
        );
        if color == "never" {
            assert_no_controls("the uncoloured report", &out);
        } else {
            // Colour is ours: every ESC left starts one of miette's SGR sequences.
            let ours = out.matches('\u{1b}').count();
            let sgr = out.matches("\u{1b}[").count();
            assert_eq!(ours, sgr, "{out:?}");
            assert!(!out.contains("\u{1b}]0;"), "{out:?}");
            for c in ['\u{7}', '\0', '\u{7f}', '\u{9b}'] {
                assert!(!out.contains(c), "{out:?}");
            }
        }
    }
    let o = blazes(&["check", "--format", "github", &spec]);
    assert_no_controls("the GitHub annotations", &stdout(&o));
    // Negative control: the bytes are in the file the report is about.
    assert!(RAW.contains(&0x1b) && RAW.contains(&0x07) && RAW.contains(&0x7f));
}

#[test]
fn names_and_values_with_control_characters_are_escaped_in_every_human_output() {
    let spec = write("quoted", "quoted.yaml", QUOTED.as_bytes());
    for color in ["never", "always"] {
        let o = blazes(&["check", "--color", color, &spec]);
        assert_eq!(o.status.code(), Some(2));
        let out = stdout(&o);
        assert!(out.contains("pwned"), "the name is quoted:\n{out}");
        assert!(!out.contains("\u{1b}]0;"), "{out:?}");
        for c in ['\u{7}', '\0', '\u{7f}', '\u{9b}'] {
            assert!(!out.contains(c), "{out:?}");
        }
    }
    assert_no_controls(
        "GitHub",
        &stdout(&blazes(&["check", "--format", "github", &spec])),
    );
    let named = write("quoted", "named.yaml", NAMED.as_bytes());
    let plan = blazes(&["plan", &named]);
    let out = stdout(&plan);
    assert!(out.contains(r"plan for `spec\e]0;pwned\x07\x7f`"), "{out}");
    assert_no_controls("the plan", &out);
    for cmd in ["simulate", "check", "deploy"] {
        let args: Vec<&str> = match cmd {
            "deploy" => vec![cmd, "--dry-run", &named],
            _ => vec![cmd, &named],
        };
        let o = blazes(&args);
        assert_no_controls(cmd, &stdout(&o));
        assert_no_controls(cmd, &stderr(&o));
        assert_clean_failure(&o);
    }
    // JSON and SARIF escape by serde: valid documents. The plan's JSON holds the name as the
    // spec has it, which is the negative control: the characters do reach the reports, so
    // the human formats above escaped them.
    for (cmd, format) in [("check", "json"), ("check", "sarif"), ("plan", "json")] {
        let o = blazes(&[cmd, "--format", format, &named]);
        let text = stdout(&o);
        // serde escapes every C0 control (ESC, BEL, NUL); DEL and the C1 controls are
        // valid in a JSON string as they are.
        for c in ['\u{1b}', '\u{7}', '\0'] {
            assert!(!text.contains(c), "{format}: {text:?}");
        }
        let doc: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
        if cmd == "plan" {
            assert!(doc.to_string().contains("\\u001b]0;pwned\\u0007"), "{text}");
        }
    }
}

#[test]
fn a_binary_file_is_reported_as_such_without_its_bytes() {
    let mut bytes = b"PK\x03\x04SECRET-HEAD".to_vec();
    bytes.extend_from_slice(&[0, 0, 0x1b, b'[', b'2', b'J', 0xff, 0xfe]);
    bytes.extend_from_slice(b"SECRET-TAIL");
    let spec = write("bytes", "image.yaml", &bytes);
    for format in ["human", "github", "json", "sarif"] {
        let o = blazes(&["check", "--format", format, &spec]);
        assert_eq!(o.status.code(), Some(2), "{format}");
        let all = format!("{}{}", stdout(&o), stderr(&o));
        assert!(!all.contains("SECRET"), "{format} echoes the file:\n{all}");
        assert_no_controls(format, &all);
        assert!(all.contains("binary"), "{format}:\n{all}");
        assert_clean_failure(&o);
    }
    let o = blazes(&["check", &spec]);
    let out = stdout(&o);
    assert!(
        out.contains("binary, not a spec: a NUL byte at line 1, column 16 (byte 15)"),
        "located:\n{out}"
    );
    // Negative control: without the NUL byte the file is text with an invalid byte (S010),
    // whose snippet shows what comes before it, escaped.
    let text = write("bytes", "latin1.yaml", b"# caf\xe9\ncomponents: {}\n");
    let o = blazes(&["check", &text]);
    assert_eq!(o.status.code(), Some(2));
    assert!(!stdout(&o).contains("binary"), "{}", stdout(&o));
    assert!(stdout(&o).contains("not valid UTF-8"), "{}", stdout(&o));
}

/// An unused source (a warning, C009) before an unordered write (C001) and its sink (C004).
const WARNING_FIRST: &str = "sources:
  unused: {}
  src: {}
components:
  Count:
    paths: [{ from: i, to: o, label: OW, gate: [k] }]
streams:
  - { from: src, to: Count.i }
  - { from: Count.o, to: db }
sinks:
  db: {}
";

/// A generated fleet has thousands of findings.
fn fleet(test: &str) -> String {
    let d = dir(test);
    let path = d.join("fleet.yaml");
    let o = blazes(&[
        "gen",
        "--components",
        "400",
        "--seed",
        "3",
        "-o",
        path.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    path.display().to_string()
}

/// Diagnostics shown in full: each starts with its code, `  × S001(...)` or `  ⚠ C007(...)`.
fn shown(out: &str) -> Vec<&str> {
    out.lines()
        .filter(|l| l.starts_with("  × ") || l.starts_with("  ⚠ "))
        .collect()
}

#[test]
fn the_human_report_is_bounded_and_counts_the_rest() {
    let spec = fleet("bounded");
    let all = blazes(&["check", "--max-results", "1000000", &spec]);
    let total = shown(&stdout(&all)).len();
    assert!(total > 60, "the fleet has many findings ({total})");
    assert!(!stdout(&all).contains("more finding"));
    let default = blazes(&["check", &spec]);
    let out = stdout(&default);
    assert_eq!(default.status.code(), all.status.code());
    assert_eq!(shown(&out).len(), 50, "the default shows 50");
    let more = format!(
        "... and {} more findings (use --max-results to show more)",
        total - 50
    );
    assert!(out.contains(&more), "{more}:\n{}", &out[out.len() - 500..]);
    // The summary is the same, whatever is shown.
    assert_eq!(
        out.lines().last(),
        stdout(&all).lines().last(),
        "the summary line"
    );
    let three = blazes(&["check", "--max-results", "3", &spec]);
    let out = stdout(&three);
    assert_eq!(shown(&out).len(), 3);
    assert!(out.contains(&format!("... and {} more findings", total - 3)));
    // The most severe first: with room for one, an error, though the first diagnostic in
    // the file is a warning.
    let small = write("severe", "warning-first.yaml", WARNING_FIRST.as_bytes());
    let everything = stdout(&blazes(&["check", &small]));
    let all_shown = shown(&everything);
    assert!(
        all_shown.len() == 3 && all_shown[0].starts_with("  ⚠ "),
        "negative control: the file's first diagnostic is a warning, so output order alone would keep it: {all_shown:?}"
    );
    let one = stdout(&blazes(&["check", "--max-results", "1", &small]));
    let kept = shown(&one);
    assert_eq!(kept.len(), 1);
    assert!(kept[0].starts_with("  × "), "{kept:?}");
    assert!(one.contains("... and 2 more findings"), "{one}");
    // One more finding than the bound is still counted, in the singular.
    let n = (total - 1).to_string();
    let o = blazes(&["check", "--max-results", &n, &spec]);
    assert!(
        stdout(&o).contains("... and 1 more finding (use"),
        "singular"
    );
}

#[test]
fn max_results_zero_is_a_usage_error_that_says_why() {
    let o = blazes(&["check", "--max-results", "0", "specs/wordcount.yaml"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("--max-results"), "{err}");
    assert!(err.contains("N >= 1"), "{err}");
    assert!(stdout(&o).is_empty());
    let o = blazes(&["check", "--max-results", "1", "specs/wordcount.yaml"]);
    assert_ne!(o.status.code(), Some(2), "negative control: 1 is accepted");
    let help = stdout(&blazes(&["check", "--help"]));
    assert!(help.contains("0 is refused"), "{help}");
}

/// Runs `blazes` with standard output on a pseudo-terminal (colour is decided for a
/// terminal), with `env` set; returns what the terminal received.
fn on_terminal(args: &[&str], env: &[(&str, &str)]) -> String {
    on_terminal_as(args, env, false)
}

/// [`on_terminal`], with standard error on the terminal instead when `stderr`.
fn on_terminal_as(args: &[&str], env: &[(&str, &str)], stderr: bool) -> String {
    use std::io::Read;
    use std::os::fd::FromRawFd;
    let (mut master, mut slave) = (0, 0);
    // SAFETY: openpty writes two file descriptors into the given integers; the rest are null
    // (no name, default terminal settings and size).
    let r = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(r, 0, "openpty");
    // SAFETY: both descriptors are fresh and owned here alone.
    let (master, slave) = unsafe {
        (
            std::fs::File::from_raw_fd(master),
            std::fs::File::from_raw_fd(slave),
        )
    };
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_blazes"));
    cmd.args(args)
        .current_dir(common::root())
        .env_remove("NO_COLOR");
    if stderr {
        cmd.stderr(Stdio::from(slave)).stdout(Stdio::null());
    } else {
        cmd.stdout(Stdio::from(slave)).stderr(Stdio::null());
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    drop(cmd);
    let reader = std::thread::spawn(move || {
        let mut master = master;
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        // Reading the master fails (EIO) once the child closed the terminal.
        while let Ok(n) = master.read(&mut buf) {
            if n == 0 {
                break;
            }
            out.extend_from_slice(&buf[..n]);
        }
        out
    });
    child.wait().unwrap();
    String::from_utf8_lossy(&reader.join().unwrap()).into_owned()
}

#[test]
fn term_dumb_means_no_colour_as_no_color_does() {
    let args = ["check", "specs/wordcount.yaml"];
    let coloured = on_terminal(&args, &[("TERM", "xterm-256color")]);
    assert!(
        coloured.contains('\u{1b}'),
        "negative control: a terminal gets colour:\n{coloured}"
    );
    let dumb = on_terminal(&args, &[("TERM", "dumb")]);
    assert!(!dumb.contains('\u{1b}'), "{dumb:?}");
    assert!(dumb.contains("C001"), "the report itself is there:\n{dumb}");
    let no_color = on_terminal(&args, &[("TERM", "xterm-256color"), ("NO_COLOR", "1")]);
    assert!(!no_color.contains('\u{1b}'), "{no_color:?}");
}

/// `blazes simulate` gets the size-aware default budget of `check --witness` and says so; a
/// spec past its limit is not simulated, saying why; `--schedules` is the control.
#[test]
fn simulate_takes_the_size_aware_budget_and_says_so() {
    let d = dir("budget");
    let generate = |n: &str, name: &str| {
        let p = d.join(name);
        let o = blazes(&[
            "gen",
            "--components",
            n,
            "--seed",
            "3",
            "-o",
            p.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        p.display().to_string()
    };
    let small = generate("10", "ten.yaml");
    let o = blazes(&["simulate", &small]);
    let out = stdout(&o);
    assert!(
        out.contains("(budget: at most 4,000 schedules, reduced from 10,000 for a spec of 10 components; --schedules N runs more)"),
        "{out}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&stdout(&blazes(&["simulate", "--format", "json", &small]))).unwrap();
    assert!(
        json["files"][0]["note"].as_str().unwrap().contains("4,000"),
        "{json}"
    );
    let given = stdout(&blazes(&["simulate", "--schedules", "5", &small]));
    assert!(
        !given.contains("budget:"),
        "control: --schedules is as asked:\n{given}"
    );
    let big = generate("300", "big.yaml");
    let o = blazes(&["simulate", &big]);
    assert_eq!(o.status.code(), Some(0));
    assert!(
        stdout(&o).contains("not simulated: the spec has 300 components, more than `blazes simulate` simulates by default (200); pass --schedules N"),
        "{}",
        stdout(&o)
    );
    assert!(stderr(&o).contains("note: "), "{}", stderr(&o));
}

/// A simulation longer than a second counts its schedules on standard error when that is a
/// terminal, and erases the count before the report; not on a pipe (the control).
#[test]
fn simulate_shows_progress_on_a_terminal() {
    let d = dir("progress");
    let p = d.join("slow.yaml");
    let o = blazes(&[
        "gen",
        "--components",
        "20",
        "--seed",
        "5",
        "-o",
        p.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    let spec = p.display().to_string();
    let args = ["simulate", "--schedules", "200", &spec];
    let started = std::time::Instant::now();
    let err = on_terminal_as(&args, &[("TERM", "xterm")], true);
    if started.elapsed() < std::time::Duration::from_millis(1500) {
        // Too fast to be shown on this machine: nothing to check, but nothing may be shown.
        assert!(!err.contains("simulating,"), "{err:?}");
        return;
    }
    // Which phase is under way after the first second depends on the machine: exploring the
    // schedules, or already shrinking the witnesses.
    assert!(
        err.contains("simulating, ") || err.contains(": shrinking witness "),
        "{err:?}"
    );
    if err.contains("simulating, ") {
        assert!(err.contains(" of at most 200 schedules"), "{err:?}");
    }
    assert!(err.ends_with("\r\u{1b}[K"), "the count is erased: {err:?}");
    let piped = blazes(&args);
    assert!(
        !stderr(&piped).contains("simulating,") && !stderr(&piped).contains("shrinking witness"),
        "{}",
        stderr(&piped)
    );
}

/// A file with no text to show (unreadable, binary) gets its message without an empty snippet
/// box; a file with text keeps its snippet (the control).
#[test]
fn a_file_without_text_gets_no_empty_snippet_box() {
    let o = blazes(&["check", "no/such/spec.yaml"]);
    assert_eq!(o.status.code(), Some(2));
    let out = stdout(&o);
    assert!(
        out.contains("cannot read `no/such/spec.yaml`: no such file"),
        "{out}"
    );
    assert!(!out.contains('╭') && !out.contains('╰'), "{out}");
    assert!(out.contains("   at [no/such/spec.yaml]\n"), "{out}");
    let o = blazes_stdin(&["check", "-"], b"components: {}\n");
    assert!(stdout(&o).contains('╭'), "control: {}", stdout(&o));
}

/// An empty name is said in words, not quoted as ``.
#[test]
fn an_empty_name_is_said_in_words() {
    let spec = b"sources: { s: {} }\ncomponents:\n  \"\":\n    paths: [{ from: i, to: o, label: CR }]\nstreams: [{ from: s, to: A.i }]\n";
    let out = stdout(&blazes_stdin(&["check", "-"], spec));
    assert!(out.contains("a component name is empty (`\"\"`)"), "{out}");
    assert!(!out.contains("``"), "{out}");
}

/// A path given on the command line reaches standard error in every subcommand's own
/// messages (a missing file, a file written): it is shown escaped there too. The control: the
/// same commands on a plain missing path name it as given.
#[test]
fn paths_on_the_command_line_are_escaped_in_every_message() {
    let hostile = "no\u{1b}]0;pwned\u{7}such\u{1b}[31m.txt";
    let cases: [&[&str]; 5] = [
        &["check", hostile],
        &["import", "kafka-streams", hostile],
        &["plan", hostile],
        &["render", hostile],
        &["simulate", hostile],
    ];
    for args in cases {
        let o = blazes(args);
        let (out, err) = (stdout(&o), stderr(&o));
        assert_eq!(o.status.code(), Some(2), "{args:?}: {out}{err}");
        assert_no_controls(&format!("{args:?} stderr"), &err);
        assert_no_controls(&format!("{args:?} stdout"), &out);
        assert!(
            format!("{out}{err}").contains(r"no\e]0;pwned\x07such\e[31m.txt"),
            "{args:?} names the path escaped:\n{out}{err}"
        );
        let mut plain = args.to_vec();
        *plain.last_mut().unwrap() = "nosuch.txt";
        let o = blazes(&plain);
        assert!(
            format!("{}{}", stdout(&o), stderr(&o)).contains("nosuch.txt"),
            "control {plain:?}"
        );
    }
}
