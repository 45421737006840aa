//! The one shape of an output format, and the registries the command line offers: [`CHECK`]
//! for `blazes check --format`, [`PLAN`] for `blazes plan --format`.
//!
//! A format is a [`Format`] value in its own module (its name on the command line, its help,
//! and the function that writes it), listed once in a registry. The command line derives its
//! `--format` choices, their help, the completions and the man pages from the registry, and
//! calls every format the same way: the reports, the [`Settings`], and a writer.

use std::fmt;
use std::io::{self, Write};
use std::path::Path;

use super::plan_json::{Applied, PlannedFile};
use super::{github, human, json, plan_human, plan_json, plan_yaml, sarif};
use crate::check::FileReport;
use crate::plan::Plan;

/// What a format may need besides the reports; each reads only what applies to it.
#[derive(Clone, Copy, Debug, Default)]
pub struct Settings<'a> {
    /// Colour the output (human formats; the caller decides, from the flag and the terminal).
    pub color: bool,
    /// `--max-results`: the most results (SARIF) or annotations per level (GitHub); `None`
    /// for the format's own default.
    pub max_results: Option<usize>,
    /// The working directory, against which absolute spec paths are made relative (SARIF).
    pub cwd: Option<&'a Path>,
}

/// One output format. `W` is the signature of its writer: [`CheckWrite`] or [`PlanWrite`].
pub struct Format<W: 'static> {
    /// The value of `--format`.
    pub name: &'static str,
    /// One line for `--help`, the man page and the completions (no final period).
    pub help: Option<&'static str>,
    /// Whether the format prints the provenance chains of points of order as notes. The
    /// analysis keeps them only for such a format: on a big spec they are a quarter of its
    /// memory.
    pub chain_notes: bool,
    /// Writes the whole output. Deterministic: the same input gives the same bytes.
    pub write: W,
}

impl<W> fmt::Debug for Format<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Format").field("name", &self.name).finish()
    }
}

/// How a `blazes check` format writes the reports of every spec given.
pub type CheckWrite = fn(&[FileReport], &Settings, &mut dyn Write) -> io::Result<()>;

/// How a `blazes plan` format writes the plans of every spec given.
pub type PlanWrite = for<'a> fn(&[Planned<'a>], &Settings, &mut dyn Write) -> io::Result<()>;

/// One spec of `blazes plan`: its check report (with the diagnostics of an invalid spec), its
/// plan when it is valid, and what `--apply` or `--in-place` did with it.
#[derive(Clone, Copy, Debug)]
pub struct Planned<'a> {
    pub report: &'a FileReport,
    pub plan: Option<&'a Plan>,
    pub applied: Option<&'a Applied>,
}

impl<'a> Planned<'a> {
    /// The entry of the versioned plan document (JSON, YAML) for this spec.
    pub fn file(&self) -> PlannedFile<'a> {
        PlannedFile {
            path: &self.report.path,
            text: &self.report.text,
            diagnostics: self.report.diagnostics(),
            plan: self.plan,
            applied: self.applied,
        }
    }
}

/// The formats of `blazes check --format`, in the order `--help` lists them; the first is the
/// default.
pub static CHECK: &[&Format<CheckWrite>] = &[
    &human::FORMAT,
    &json::FORMAT,
    &sarif::FORMAT,
    &github::FORMAT,
];

/// The formats of `blazes plan --format`, in the order `--help` lists them; the first is the
/// default.
pub static PLAN: &[&Format<PlanWrite>] =
    &[&plan_human::FORMAT, &plan_yaml::FORMAT, &plan_json::FORMAT];
