//! One file through the whole pipeline: bytes -> spec -> dataflow -> analysis.
//!
//! This is the library's entry point for `blazes check` and everything built on it: the CLI
//! reads the bytes, calls [`check_bytes`], and hands the [`FileReport`] to a `report` format.

use crate::analysis::{self, Analysis, FailOn};
use crate::diagnostic::{self, Diagnostic, Severity};
use crate::graph::{self, Dataflow};
use crate::spec::{self, Limits};

#[derive(Clone, Debug, Default)]
pub struct Options {
    pub fail_on: FailOn,
    pub limits: Limits,
}

#[derive(Debug)]
pub enum Outcome {
    /// The spec could not be read or is invalid: only diagnostics (all errors of the file).
    Invalid(Vec<Diagnostic>),
    Analysed(Box<Analysed>),
}

/// A spec that was read and analysed. The [`Spec`](spec::Spec) itself is not kept: the dataflow has all
/// of it that the reports need, and on a big input it is as large (`blazes plan --apply`
/// reads the text again for its spans).
#[derive(Debug)]
pub struct Analysed {
    pub dataflow: Dataflow,
    pub analysis: Analysis,
    /// Analysis diagnostics, sorted by position.
    pub diagnostics: Vec<Diagnostic>,
}

#[derive(Debug)]
pub struct FileReport {
    /// The path as the user wrote it (`<stdin>` for standard input).
    pub path: String,
    /// The spec text (lossily decoded when it was not UTF-8), for snippets.
    pub text: String,
    pub outcome: Outcome,
}

/// Exit statuses, as ripgrep and the issue define them.
pub const EXIT_CLEAN: i32 = 0;
pub const EXIT_FINDINGS: i32 = 1;
pub const EXIT_INVALID: i32 = 2;

impl FileReport {
    pub fn exit_code(&self) -> i32 {
        match &self.outcome {
            Outcome::Invalid(_) => EXIT_INVALID,
            Outcome::Analysed(a) if a.analysis.failing() => EXIT_FINDINGS,
            Outcome::Analysed(_) => EXIT_CLEAN,
        }
    }

    pub fn diagnostics(&self) -> &[Diagnostic] {
        match &self.outcome {
            Outcome::Invalid(d) => d,
            Outcome::Analysed(a) => &a.diagnostics,
        }
    }
}

/// The name a spec gets when it has no `name:` field: the file stem.
fn stem(path: &str) -> String {
    std::path::Path::new(path)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or(path)
        .to_string()
}

/// Reads and analyses one spec. `path` is only used for naming.
pub fn check_bytes(path: &str, bytes: &[u8], options: &Options) -> FileReport {
    check_owned(path, bytes.to_vec(), options)
}

/// [`check_bytes`] on bytes the caller gives up: they become the report's text without a copy,
/// which for a big spec is hundreds of megabytes.
pub fn check_owned(path: &str, bytes: Vec<u8>, options: &Options) -> FileReport {
    // The reader needs a big stack, and the whole check on its thread lets the analysis reuse
    // the memory of the spec (see `on_reader_stack`).
    spec::yaml::on_reader_stack(&options.limits, || check_here(path, bytes, options))
}

fn check_here(path: &str, bytes: Vec<u8>, options: &Options) -> FileReport {
    let (spec, mut diags, text) = spec::parse_vec(bytes, &options.limits);
    let Some(spec) = spec else {
        return FileReport {
            path: path.to_string(),
            text,
            outcome: Outcome::Invalid(diags),
        };
    };
    // The spec is consumed by the build: the analysis reuses its memory.
    let (mut dataflow, graph_diags) = graph::build(spec, &stem(path));
    diags.extend(graph_diags);
    if diags.iter().any(|d| d.severity == Severity::Error) {
        diagnostic::sort(&mut diags);
        return FileReport {
            path: path.to_string(),
            text,
            outcome: Outcome::Invalid(diags),
        };
    }
    let mut analysis = analysis::analyze(&mut dataflow, options.fail_on);
    // The analysis' diagnostics move into the report's list (big specs have hundreds of
    // thousands); usually there is nothing before them, and the list itself is taken.
    if diags.is_empty() {
        diags = std::mem::take(&mut analysis.diagnostics);
    } else {
        diags.append(&mut analysis.diagnostics);
    }
    diagnostic::sort(&mut diags);
    FileReport {
        path: path.to_string(),
        text,
        outcome: Outcome::Analysed(Box::new(Analysed {
            dataflow,
            analysis,
            diagnostics: diags,
        })),
    }
}
