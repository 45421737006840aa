//! The one shape of an output format, and the registries the command line offers: [`CHECK`]
//! for `blazes check --format`, [`PLAN`] for `blazes plan --format`.
//!
//! A format is a [`Format`] value in its own module (its name on the command line, its help,
//! and the function that writes it), listed once in a registry. The command line derives its
//! `--format` choices, their help, the completions and the man pages from the registry, and
//! calls every format the same way: the reports, the [`Settings`], and a writer.
//!
//! ```
//! use blazes::check::{Options, check_bytes};
//! use blazes::report::format::{self, Settings};
//!
//! let spec = b"
//! sources: { tweets: {} }
//! components:
//!   Count:
//!     paths: [{ from: tweets, to: counts, label: OW, gate: [word] }]
//! streams:
//!   - { from: tweets, to: Count.tweets }
//!   - { from: Count.counts, to: db }
//! sinks: { db: {} }
//! ";
//! let reports = [check_bytes("count.yaml", spec, &Options::default())];
//! let github = format::CHECK.iter().find(|f| f.name == "github").unwrap();
//! let mut out = Vec::new();
//! (github.write)(&reports, &Settings::default(), &mut out).unwrap();
//! assert!(String::from_utf8(out).unwrap().starts_with("::error file=count.yaml"));
//! ```

use std::fmt;
use std::io::{self, Write};
use std::path::Path;

use super::plan_json::{Applied, PlannedFile};
use super::witness::Witnesses;
use super::{github, human, json, plan_human, plan_json, plan_yaml, sarif};
use crate::check::{FileReport, Outcome};
use crate::plan::{Named, Plan};
use crate::simulate::verify::Verification;

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
    /// `blazes check --witness`: the simulations whose witnesses each format attaches to its
    /// unsafe sinks (C004). `None` leaves every format as it is without the flag.
    pub witnesses: Option<&'a Witnesses>,
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
    /// The plan's verification by execution; `None` with `--no-simulate`, for an invalid spec
    /// and for a plan that cannot repair the spec.
    pub simulation: Option<&'a Verification>,
}

impl<'a> Planned<'a> {
    /// The plan with the dataflow it was made for (the report's), which names its ids.
    pub fn named(&self) -> Option<Named<'a>> {
        match (&self.report.outcome, self.plan) {
            (Outcome::Analysed(a), Some(plan)) => Some(plan.named(&a.dataflow)),
            _ => None,
        }
    }

    /// The entry of the versioned plan document (JSON, YAML) for this spec.
    pub fn file(&self) -> PlannedFile<'a> {
        PlannedFile {
            path: &self.report.path,
            report: Some(self.report),
            plan: self.named(),
            applied: self.applied,
            simulation: self.simulation,
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

/// The first name a registry gives twice: the later format could never be chosen.
pub fn duplicate_name<W>(registry: &[&Format<W>]) -> Option<&'static str> {
    registry
        .iter()
        .enumerate()
        .find(|(i, f)| registry[..*i].iter().any(|g| g.name == f.name))
        .map(|(_, f)| f.name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{Options, check_bytes};

    #[test]
    fn every_name_is_given_once() {
        assert_eq!(duplicate_name(CHECK), None);
        assert_eq!(duplicate_name(PLAN), None);
        // Negative control: a registry listing a format twice is caught.
        let twice: [&Format<CheckWrite>; 3] = [&json::FORMAT, &sarif::FORMAT, &json::FORMAT];
        assert_eq!(duplicate_name(&twice), Some("json"));
    }

    fn written(format: &Format<CheckWrite>, chain_notes: bool) -> Vec<u8> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("specs");
        let mut names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            // `specs/sql/` and `specs/whitebox/` are directories.
            .filter(|p| p.is_file())
            .collect();
        names.sort();
        let options = Options {
            chain_notes,
            ..Options::default()
        };
        let reports: Vec<FileReport> = names
            .iter()
            .map(|p| {
                check_bytes(
                    &p.display().to_string(),
                    &std::fs::read(p).unwrap(),
                    &options,
                )
            })
            .collect();
        let mut out = Vec::new();
        (format.write)(&reports, &Settings::default(), &mut out).unwrap();
        out
    }

    /// The CLI drops the provenance chains for a format that says it does not print them: its
    /// output must not change for it.
    #[test]
    fn a_format_without_chain_notes_does_not_print_them() {
        for format in CHECK.iter().filter(|f| !f.chain_notes) {
            assert_eq!(
                written(format, true),
                written(format, false),
                "--format {} changes without the provenance chains",
                format.name
            );
        }
        // Negative control: the human format prints them, so its output changes.
        const { assert!(human::FORMAT.chain_notes) };
        assert_ne!(
            written(&human::FORMAT, true),
            written(&human::FORMAT, false)
        );
    }
}
