//! `--format github`: GitHub Actions workflow commands (`::error file=...,line=...::msg`), one
//! per diagnostic, so findings appear inline on the pull request's changed files.
//!
//! The escaping is the one GitHub's own toolkit (`@actions/core`) applies: `%`, CR and LF in
//! the message; additionally `:` and `,` in property values, which would otherwise end the
//! value early.

use crate::check::FileReport;
use crate::diagnostic::{Diagnostic, LineIndex, Severity};

fn escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// GitHub resolves `file=` against the repository root; `./` prefixes confuse the matching
/// against the diff, so they are dropped.
fn file_property(path: &str) -> String {
    let mut p = path.replace('\\', "/");
    while let Some(r) = p.strip_prefix("./") {
        p = r.to_string();
    }
    p
}

fn command(path: &str, text: &str, index: &LineIndex, d: &Diagnostic) -> String {
    let kind = match d.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
    };
    let mut props = Vec::new();
    if path != "<stdin>" {
        props.push(format!("file={}", escape_property(&file_property(path))));
        if let Some(p) = &d.primary {
            let (line, col) = index.line_col(text, p.span.offset);
            let (end_line, end_col) = index.line_col(text, p.span.end());
            props.push(format!("line={line}"));
            props.push(format!("col={col}"));
            // GitHub only honours endColumn on single-line annotations.
            if end_line == line {
                props.push(format!("endColumn={end_col}"));
            } else {
                props.push(format!("endLine={end_line}"));
            }
        }
    }
    props.push(format!(
        "title={}",
        escape_property(&format!("{} {}", d.code.id, d.code.name))
    ));
    let mut msg = d.message.clone();
    for n in &d.related {
        let (line, col) = index.line_col(text, n.span.offset);
        msg.push_str(&format!("\n  {line}:{col}: {}", n.text));
    }
    if let Some(h) = &d.help {
        msg.push_str(&format!("\nhelp: {h}"));
    }
    format!("::{kind} {}::{}\n", props.join(","), escape_data(&msg))
}

/// One workflow command per diagnostic, files in the order given, diagnostics in their
/// sorted order. A file with no diagnostic prints nothing.
pub fn render(reports: &[FileReport]) -> String {
    let mut out = String::new();
    for r in reports {
        let index = LineIndex::new(&r.text);
        for d in r.diagnostics() {
            out.push_str(&command(&r.path, &r.text, &index, d));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_like_the_toolkit() {
        assert_eq!(escape_data("50% a\nb"), "50%25 a%0Ab");
        assert_eq!(escape_property("a:b,c"), "a%3Ab%2Cc");
        assert_eq!(file_property("./specs/x.yaml"), "specs/x.yaml");
    }
}
