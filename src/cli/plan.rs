//! `blazes plan`: the cheapest coordination that repairs each spec, printed in the chosen
//! format and, with `--apply` or `--in-place`, written into a copy of the spec or the spec.

use std::io::Write;
use std::path::PathBuf;

use super::args::{Color, MechanismArg, PlanArgs};
use super::import::check_file;
use super::io::{Access, io_reason, is_stdin, same_file, use_color, write_atomically};
use super::usage_error;
use crate::check::{EXIT_CLEAN, EXIT_FINDINGS, EXIT_INVALID, FileReport, Options, Outcome};
use crate::plan::{self, Plan, Status};
use crate::report::format::{Planned, Settings};
use crate::report::plan_json::{Applied, AppliedStatus};

/// One spec of `blazes plan`: its report, its plan when it is valid, what `--apply` did.
struct PlanOutcome {
    report: FileReport,
    plan: Option<Plan>,
    applied: Option<Applied>,
}

impl PlanOutcome {
    fn exit_code(&self) -> i32 {
        match &self.plan {
            None => EXIT_INVALID,
            Some(_) if self.applied.as_ref().map(|a| a.status) == Some(AppliedStatus::Failed) => {
                EXIT_INVALID
            }
            Some(p) if p.status == Status::Unrepairable => EXIT_FINDINGS,
            Some(_) => EXIT_CLEAN,
        }
    }
}

/// Checks the combination of specs, `--apply` and `--in-place`; returns where each spec's
/// plan is written (if anywhere), or the usage error.
fn plan_outputs(args: &PlanArgs) -> Result<Vec<Option<PathBuf>>, String> {
    let n = args.specs.len();
    if args.in_place
        && let Some(s) = args.specs.iter().find(|s| is_stdin(s))
    {
        return Err(format!(
            "--in-place needs a spec file, not standard input (`{}`)",
            s.display()
        ));
    }
    match &args.apply {
        Some(out) if n > 1 => Err(format!(
            "`--apply {}` writes one file but {n} specs were given; plan them one at a time, or use --in-place to write each plan into its spec",
            out.display()
        )),
        Some(out) => {
            let spec = &args.specs[0];
            if !args.in_place && !is_stdin(spec) && same_file(spec, out) {
                return Err(format!(
                    "refusing to overwrite the input spec `{}`; pass --in-place to edit it, or --apply another file",
                    spec.display()
                ));
            }
            Ok(vec![Some(out.clone())])
        }
        None if args.in_place => Ok(args.specs.iter().map(|s| Some(s.clone())).collect()),
        None => Ok(vec![None; n]),
    }
}

pub(crate) fn run(args: &PlanArgs) -> i32 {
    let outputs = match plan_outputs(args) {
        Ok(o) => o,
        Err(e) => return usage_error(&e),
    };
    let limits = args.limits.limits();
    let options = Options {
        fail_on: args.fail_on.into(),
        limits: limits.clone(),
        ..Options::default()
    };
    let plan_options = plan::Options {
        fail_on: options.fail_on,
        allowed: plan::Allowed {
            seal: args.allow.contains(&MechanismArg::Seal),
            keyed: args.allow.contains(&MechanismArg::Keyed),
            global: args.allow.contains(&MechanismArg::Global),
        },
        exact_limit: usize::from(args.exact_limit),
        evaluation_budget: args.exact_budget,
    };
    let mut outcomes: Vec<PlanOutcome> = Vec::with_capacity(args.specs.len());
    for (spec, out) in args.specs.iter().zip(outputs) {
        let report = check_file(spec, &args.from, &options);
        let plan = match &report.outcome {
            Outcome::Analysed(a) => Some(plan::plan(&a.dataflow, &plan_options)),
            Outcome::Invalid(_) => None,
        };
        let applied = match (&plan, out) {
            (Some(plan), Some(o)) => {
                let output = o.display().to_string();
                Some(if plan.status == Status::Unrepairable {
                    let message =
                        format!("nothing written to `{output}`: the plan cannot repair this spec");
                    eprintln!("error: {message}");
                    Applied {
                        output,
                        status: AppliedStatus::Skipped,
                        message: Some(message),
                    }
                } else {
                    let edited =
                        plan::apply::apply_verified(&report.text, plan, &limits, options.fail_on);
                    // Rewriting an unchanged file would still bump its modification time and
                    // trigger watchers and rebuilds for nothing.
                    let unchanged = args.in_place && edited.as_deref() == Ok(report.text.as_str());
                    let written = edited.and_then(|t| match unchanged {
                        true => Ok(()),
                        false => write_atomically(&o, t.as_bytes()).map_err(|e| {
                            format!("cannot write `{output}`: {}", io_reason(&e, Access::Write))
                        }),
                    });
                    match written {
                        Ok(()) if unchanged => {
                            eprintln!("`{output}` needs no change; left as it is");
                            Applied {
                                output,
                                status: AppliedStatus::Unchanged,
                                message: None,
                            }
                        }
                        Ok(()) => {
                            eprintln!("wrote the planned spec to `{output}`");
                            Applied {
                                output,
                                status: AppliedStatus::Written,
                                message: None,
                            }
                        }
                        Err(e) => {
                            eprintln!("error: {e}");
                            Applied {
                                output,
                                status: AppliedStatus::Failed,
                                message: Some(e),
                            }
                        }
                    }
                })
            }
            _ => None,
        };
        outcomes.push(PlanOutcome {
            report,
            plan,
            applied,
        });
    }
    let planned: Vec<Planned> = outcomes
        .iter()
        .map(|o| Planned {
            report: &o.report,
            plan: o.plan.as_ref(),
            applied: o.applied.as_ref(),
        })
        .collect();
    let settings = Settings {
        color: use_color(Color::Auto, &std::io::stdout()),
        ..Settings::default()
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    // A closed pipe (`blazes plan ... | head`) is not an error worth a panic.
    let _ = (args.format.write)(&planned, &settings, &mut out).and_then(|()| out.flush());
    drop(out);
    outcomes
        .iter()
        .map(PlanOutcome::exit_code)
        .max()
        .unwrap_or(EXIT_CLEAN)
}
