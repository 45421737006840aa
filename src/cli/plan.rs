//! `blazes plan`: the cheapest coordination that repairs each spec, printed in the chosen
//! format and, with `--apply` or `--in-place`, written into a copy of the spec or the spec.

use std::io::Write;
use std::path::PathBuf;

use super::args::{Color, PlanArgs};
use super::import::check_file;
use super::io::{Access, io_reason, is_stdin, same_file, use_color, write_atomically};
use super::usage_error;
use crate::check::{EXIT_CLEAN, EXIT_FINDINGS, EXIT_INVALID, FileReport, Options, Outcome};
use crate::plan::{self, Plan, Status};
use crate::report::format::{Planned, Settings};
use crate::report::plan_json::{Applied, AppliedStatus};
use crate::simulate::verify::{self, Verification};

/// One spec of `blazes plan`: its report, its plan when it is valid, what `--apply` did, and
/// the plan's verification by execution.
struct PlanOutcome {
    report: FileReport,
    plan: Option<Plan>,
    applied: Option<Applied>,
    simulation: Option<Verification>,
}

impl PlanOutcome {
    fn exit_code(&self) -> i32 {
        match &self.plan {
            None => EXIT_INVALID,
            Some(_) if self.applied.as_ref().map(|a| a.status) == Some(AppliedStatus::Failed) => {
                EXIT_INVALID
            }
            Some(p) if p.status == Status::Unrepairable => EXIT_FINDINGS,
            // A plan that execution refutes leaves a sink worse than it tolerates: exit 1, as
            // `blazes simulate` exits when it shows such a sink.
            Some(_) if self.simulation.as_ref().is_some_and(Verification::refuted) => EXIT_FINDINGS,
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
    if args.no_simulate
        && let Some(flag) = args.run.first_given()
    {
        return usage_error(&format!(
            "`{flag}` sets how the plan is verified by execution, which --no-simulate skips; drop one of them"
        ));
    }
    // `--schedules` runs that many on any spec; without it the budget scales with the spec.
    let sim_options = args.run.options(verify::PLAN_SCHEDULES);
    let budget = |df: &crate::graph::Dataflow| {
        match args.run.schedules {
        Some(_) => Ok(sim_options.clone()),
        None => verify::plan_budget(df.components.len())
            .map(|schedules| crate::simulate::Options {
                schedules,
                ..sim_options.clone()
            })
            .ok_or_else(|| {
                format!(
                    "the spec has {} components, more than `blazes plan` simulates by default ({}); pass --schedules N, or run `blazes simulate` on the applied spec",
                    crate::report::grouped::thousands(df.components.len()),
                    verify::PLAN_MAX_COMPONENTS
                )
            }),
    }
    };
    let limits = args.limits.limits();
    let plan_options = args.choice.options();
    let options = Options {
        fail_on: plan_options.fail_on,
        limits: limits.clone(),
        ..Options::default()
    };
    let mut outcomes: Vec<PlanOutcome> = Vec::with_capacity(args.specs.len());
    for (spec, out) in args.specs.iter().zip(outputs) {
        let report = check_file(spec, &args.from, &options);
        let plan = match &report.outcome {
            Outcome::Analysed(a) => Some(plan::plan(&a.dataflow, &plan_options)),
            Outcome::Invalid(_) => None,
        };
        let simulation = match (&report.outcome, &plan) {
            (Outcome::Analysed(a), Some(p))
                if !args.no_simulate && p.status != Status::Unrepairable =>
            {
                let v = match budget(&a.dataflow) {
                    Ok(o) => verify::verify_plan(&a.dataflow, p, options.fail_on, &o),
                    Err(reason) => Verification::skipped(reason, &sim_options),
                };
                if let Some(f) = &v.failure {
                    say!(
                        "error: the plan for `{}` does not hold when executed: sink `{}` was observed {} with the plan in force, but it tolerates {}; this is a bug in blazes (the analysis or the planner), please report it with the spec",
                        report.path,
                        f.sink,
                        f.observed.as_str(),
                        f.tolerate.as_str()
                    );
                }
                Some(v)
            }
            _ => None,
        };
        let refuted = simulation.as_ref().is_some_and(Verification::refuted);
        let applied = match (&plan, out) {
            (Some(plan), Some(o)) => {
                let output = o.display().to_string();
                Some(if refuted {
                    // A plan known not to hold is not written where it would be trusted.
                    let message = format!(
                        "nothing written to `{output}`: the plan failed its verification by execution"
                    );
                    say!("error: {message}");
                    Applied {
                        output,
                        status: AppliedStatus::Skipped,
                        message: Some(message),
                    }
                } else if report.files.is_composed() {
                    // A mechanism of an instance belongs in the file it was used from; the
                    // splice edits one text, and writing the flattened names into the checked
                    // file would name components it does not have.
                    let message = format!(
                        "nothing written to `{output}`: `--apply` does not yet write plans into composed specs (`use:`/`dataflow:`); add the mechanisms above by hand, in the file of each component (docs/compose.md)"
                    );
                    say!("error: {message}");
                    Applied {
                        output,
                        status: AppliedStatus::Failed,
                        message: Some(message),
                    }
                } else if plan.status == Status::Unrepairable {
                    let message =
                        format!("nothing written to `{output}`: the plan cannot repair this spec");
                    say!("error: {message}");
                    Applied {
                        output,
                        status: AppliedStatus::Skipped,
                        message: Some(message),
                    }
                } else {
                    let edited =
                        plan::apply::apply_verified(&report.text, plan, &limits, options.fail_on);
                    // What OUT holds now: the spec itself under --in-place, else whatever
                    // file is there (a previous plan, or the user's own edits).
                    let existing = match args.in_place {
                        true => Some(report.text.clone().into_bytes()),
                        false => std::fs::read(&o).ok(),
                    };
                    // Rewriting an unchanged file would still bump its modification time and
                    // trigger watchers and rebuilds for nothing.
                    let unchanged = matches!((&edited, &existing), (Ok(t), Some(e)) if t.as_bytes() == e.as_slice());
                    let clobbers = !args.in_place && !args.force && existing.is_some();
                    let written = edited.and_then(|t| match (unchanged, clobbers) {
                        (true, _) => Ok(()),
                        (false, true) => Err(format!(
                            "refusing to overwrite `{output}`, which exists and differs (it may hold your edits); pass --force to replace it, or --apply another file"
                        )),
                        (false, false) => write_atomically(&o, t.as_bytes()).map_err(|e| {
                            format!("cannot write `{output}`: {}", io_reason(&e, Access::Write))
                        }),
                    });
                    match written {
                        Ok(()) if unchanged => {
                            say!("`{output}` needs no change; left as it is");
                            Applied {
                                output,
                                status: AppliedStatus::Unchanged,
                                message: None,
                            }
                        }
                        Ok(()) => {
                            say!("wrote the planned spec to `{output}`");
                            Applied {
                                output,
                                status: AppliedStatus::Written,
                                message: None,
                            }
                        }
                        Err(e) => {
                            say!("error: {e}");
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
            simulation,
        });
    }
    let planned: Vec<Planned> = outcomes
        .iter()
        .map(|o| Planned {
            report: &o.report,
            plan: o.plan.as_ref(),
            applied: o.applied.as_ref(),
            simulation: o.simulation.as_ref(),
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
    let mut code = EXIT_CLEAN;
    for o in &outcomes {
        code = code.max(o.exit_code());
        if args.check
            && let Some(p) = &o.plan
            && p.status == Status::Repaired
        {
            say!(
                "error: `{}` is repairable but not repaired: the plan adds {} (`blazes plan --apply OUT` writes it)",
                o.report.path,
                crate::vocabulary::plural(p.mechanisms.len(), "mechanism", "mechanisms")
            );
            code = code.max(EXIT_FINDINGS);
        }
    }
    code
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::check_bytes;
    use crate::label::FailOn;
    use crate::simulate;

    /// The exit code of a spec whose plan is verified, and of the same spec with a mechanism
    /// of its plan removed, which execution refutes: 1, as for a sink beyond its tolerance.
    #[test]
    fn a_refuted_plan_exits_1() {
        let text = include_str!("../../specs/wordcount.yaml");
        let report = check_bytes("wordcount.yaml", text.as_bytes(), &Options::default());
        let Outcome::Analysed(a) = &report.outcome else {
            panic!("the shipped spec is valid");
        };
        let plan = plan::plan(&a.dataflow, &plan::Options::default());
        assert_eq!(plan.status, Status::Repaired);
        let o = simulate::Options {
            schedules: 200,
            ..simulate::Options::default()
        };
        let held = verify::verify_plan(&a.dataflow, &plan, FailOn::default(), &o);
        let mut less = plan.clone();
        less.mechanisms.clear();
        let refuted = verify::verify_plan(&a.dataflow, &less, FailOn::default(), &o);
        let code = |simulation: Verification| {
            PlanOutcome {
                report: check_bytes("wordcount.yaml", text.as_bytes(), &Options::default()),
                plan: Some(plan.clone()),
                applied: None,
                simulation: Some(simulation),
            }
            .exit_code()
        };
        assert_eq!(code(held), EXIT_CLEAN);
        assert_eq!(code(refuted), EXIT_FINDINGS);
    }
}
