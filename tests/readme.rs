//! The README's examples are the real output: every `console` block's `$ blazes ...` command
//! is run and its output compared with the lines under it. A line `...` stands for any number
//! of lines, a line ending in `...` for a line that starts with what precedes it. A command
//! joined to another by the shell (`&&`, `|`, `>`) is shown without output and not run.

mod common;

use common::*;

/// One `$ blazes ...` command with the output the README shows under it.
#[derive(Debug)]
struct Example {
    line: usize,
    args: Vec<String>,
    expected: Vec<String>,
}

fn examples(readme: &str) -> Vec<Example> {
    let mut out: Vec<Example> = Vec::new();
    let mut in_console = false;
    for (i, line) in readme.lines().enumerate() {
        if line.starts_with("```") {
            in_console = line == "```console";
            continue;
        }
        if !in_console {
            continue;
        }
        if let Some(cmd) = line.strip_prefix("$ ") {
            let words: Vec<String> = cmd.split_whitespace().map(String::from).collect();
            assert_eq!(words[0], "blazes", "README line {}: {line}", i + 1);
            out.push(Example {
                line: i + 1,
                args: words[1..].to_vec(),
                expected: Vec::new(),
            });
        } else if let Some(e) = out.last_mut() {
            e.expected.push(line.to_string());
        }
    }
    out
}

/// Whether `actual` is what `expected` shows, `...` lines and `...` ends as wildcards.
fn matches(expected: &[String], actual: &[&str]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((e, rest)) if e.trim() == "..." => {
            (0..=actual.len()).any(|skip| matches(rest, &actual[skip..]))
        }
        Some((e, rest)) => match actual.split_first() {
            None => false,
            Some((a, more)) => {
                let same = match e.strip_suffix("...") {
                    Some(prefix) => a.starts_with(prefix),
                    None => a == e,
                };
                same && matches(rest, more)
            }
        },
    }
}

#[test]
fn every_console_example_of_the_readme_is_the_real_output() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let all = examples(&readme);
    let mut compared = 0;
    for e in &all {
        if e.args
            .iter()
            .any(|a| ["&&", "|", ">", ">>"].contains(&a.as_str()))
        {
            assert!(
                e.expected.is_empty(),
                "README line {}: a shell pipeline shows output it cannot be checked against",
                e.line
            );
            continue;
        }
        let args: Vec<&str> = e.args.iter().map(String::as_str).collect();
        let o = blazes(&args);
        let out = stdout(&o);
        let actual: Vec<&str> = out.lines().collect();
        assert!(
            matches(&e.expected, &actual),
            "README line {}: `blazes {}` prints\n{out}\nbut the README shows\n{}",
            e.line,
            args.join(" "),
            e.expected.join("\n")
        );
        compared += 1;
    }
    assert!(
        compared >= 2,
        "the README's examples were found ({compared})"
    );
    // Negative controls: one changed character, a line too many, and a wildcard that does
    // not match are all caught by the same comparison.
    let e = all.iter().find(|e| !e.expected.is_empty()).unwrap();
    let args: Vec<&str> = e.args.iter().map(String::as_str).collect();
    let out = stdout(&blazes(&args));
    let actual: Vec<&str> = out.lines().collect();
    let mut changed = e.expected.clone();
    changed[0] = changed[0].replacen(':', ";", 1);
    assert!(!matches(&changed, &actual));
    let mut longer = e.expected.clone();
    longer.push("one more line".into());
    assert!(!matches(&longer, &actual));
    assert!(!matches(&["nothing like it...".to_string()], &actual));
    assert!(matches(&["...".to_string()], &actual));
}
