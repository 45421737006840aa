//! `blazes deploy`: plans a spec, hands the plan document to the runtime, and prints (with
//! `--dry-run`) or creates the engine objects its mechanisms need.
//!
//! The runtime reads the plan as `blazes plan --format json` writes it, never the analyzer's
//! types: this module is the one place where the two meet.

use std::path::PathBuf;

use super::args::{LimitArgs, PlanChoiceArgs};
use super::io::{check_file, use_color};
use super::usage_error;
use crate::check::{EXIT_CLEAN, EXIT_FINDINGS, EXIT_INVALID, Options, Outcome};
use crate::report;
use blazes_runtime::deploy::{self, DeployError, Deployment};

#[derive(clap::Args, Debug)]
pub(crate) struct DeployArgs {
    /// The spec whose plan to deploy; `-` reads standard input.
    #[arg(value_name = "SPEC")]
    pub spec: PathBuf,
    /// The NATS server (`nats://host:4222`) whose JetStream gets the objects; several URLs
    /// of one cluster are separated by commas.
    #[arg(long, value_name = "URL")]
    pub nats: Option<String>,
    /// Print the engine objects of the plan instead of creating them (no server needed).
    #[arg(long)]
    pub dry_run: bool,
    /// Change nothing: check that the running system gives the plan's guarantees what they
    /// assume (server version, file storage, replicas, the duplicate window against the replay
    /// horizon, writes synced before they are acknowledged, TLS off this machine), list what
    /// does not hold, and exit 1 on an error. A deployment runs the same checks first and
    /// refuses on an error.
    #[arg(long, conflicts_with_all = ["dry_run", "force"])]
    pub check: bool,
    /// The servers' monitoring endpoint (`http://host:8222`, the server's `http:` setting):
    /// where the checks read whether writes are synced before they are acknowledged; without
    /// it that check is reported as not done.
    #[arg(long, value_name = "URL")]
    pub monitor: Option<String>,
    /// Apply a plan that differs from what the server holds: print the differences, then
    /// create the missing objects and update the differing ones in place (their messages are
    /// kept); objects no longer in the plan are left for you to delete.
    #[arg(long, conflicts_with = "dry_run")]
    pub force: bool,
    /// Raft replicas of every stream and bucket (3 for a 3-node cluster, 1 for one server).
    #[arg(long, value_name = "N", default_value_t = deploy::DEFAULT_REPLICAS as u8,
          value_parser = clap::value_parser!(u8).range(1..=5))]
    pub replicas: u8,
    /// Instances of each component run by the component host (`blazes_runtime::nats::host`),
    /// numbered from 0: each gets a durable consumer `<component>-<instance>` of its inputs
    /// (barrier releases, or the plain input stream of a component without a mechanism). Not
    /// Raft replicas (`--replicas`); the default is the host's single instance `0`. A component
    /// with `partitions: N` in the spec gets N instances instead, one per partition, each
    /// reading only its partition's messages (routed by instance) when it has no mechanism.
    #[arg(long, value_name = "N", default_value_t = deploy::DEFAULT_INSTANCES as u16,
          value_parser = clap::value_parser!(u16).range(1..=MAX_INSTANCES as i64))]
    pub instances: u16,
    /// Route the inputs of COMPONENT by instance: instance `i` of it reads only the messages
    /// published to it with routing key `i` (a host with `input_key` `i`), through a consumer
    /// filtered on `<stream>.*.<i>`, instead of every message. Only for a component without a
    /// mechanism on its inputs (a plain stream); repeat it for several components; needs
    /// `--instances`.
    #[arg(long, value_name = "COMPONENT", requires = "instances")]
    pub route_by_instance: Vec<String>,
    /// How the deployed plan is chosen, as for `blazes plan`: the same flags deploy the plan
    /// it printed.
    #[command(flatten)]
    pub choice: PlanChoiceArgs,
    #[command(flatten)]
    pub limits: LimitArgs,
}

/// The most instances of one component `blazes deploy` deploys (`--instances`, `partitions:`).
const MAX_INSTANCES: usize = 1000;

/// Each component's `partitions: N`, read again from the spec's text (the dataflow the
/// analysis keeps does not need them: partitions are one instance to the analysis).
fn partitions(text: &str, limits: &crate::spec::Limits) -> Vec<(String, usize)> {
    let (spec, _) = crate::spec::parse(text, limits);
    spec.map(|s| {
        s.components
            .into_iter()
            .filter_map(|c| {
                let p = c.partitions?;
                Some((c.name.text, usize::try_from(p.count).unwrap_or(usize::MAX)))
            })
            .collect()
    })
    .unwrap_or_default()
}

/// The deployment of `args.spec`'s plan, or the exit status of why there is none (the reason
/// already printed).
fn deployment(args: &DeployArgs) -> Result<Deployment, i32> {
    let options = Options {
        limits: args.limits.limits(),
        ..Options::default()
    };
    let report = check_file(&args.spec, &options);
    let Outcome::Analysed(a) = &report.outcome else {
        let text = report::human::render(
            std::slice::from_ref(&report),
            report::human::Style {
                color: use_color(super::args::Color::Auto, &std::io::stderr()),
                ..Default::default()
            },
        );
        say_part!("{text}");
        return Err(EXIT_INVALID);
    };
    let partitions = partitions(&report.text, &options.limits);
    if let Some((c, n)) = partitions.iter().find(|(_, n)| *n > MAX_INSTANCES) {
        say!(
            "error: component `{}` has `partitions: {n}`, but `blazes deploy` deploys at most {MAX_INSTANCES} instances of a component",
            crate::report::escape::one_line(c)
        );
        return Err(EXIT_INVALID);
    }
    let plan_options = args.choice.options();
    let plan = crate::plan::plan(&a.dataflow, &plan_options);
    let document = report::plan_json::render(&report.path, plan.named(&a.dataflow));
    let derived = deploy::read_plan(&document).and_then(|files| {
        let file = files
            .first()
            .ok_or_else(|| DeployError::Json("the plan document lists no spec".into()))?;
        let components: Vec<String> = a
            .dataflow
            .components
            .iter()
            .map(|c| c.name.clone())
            .collect();
        deploy::derive(file, usize::from(args.replicas)).and_then(|d| {
            deploy::with_partitioned_hosts(
                file,
                d,
                &components,
                usize::from(args.instances),
                &args.route_by_instance,
                &partitions,
            )
        })
    });
    derived.map_err(|e| {
        say!("error: {}", crate::report::escape::one_line(&e.to_string()));
        match e {
            DeployError::Unrepairable(_) => EXIT_FINDINGS,
            _ => EXIT_INVALID,
        }
    })
}

pub(crate) fn run(args: &DeployArgs) -> i32 {
    if !args.dry_run && args.nats.is_none() {
        return usage_error(if args.check {
            "`blazes deploy --check` needs `--nats URL` of the system to check"
        } else {
            "`blazes deploy` needs `--nats URL` to create the objects, or `--dry-run` to print them"
        });
    }
    let d = match deployment(args) {
        Ok(d) => d,
        Err(code) => return code,
    };
    if args.dry_run {
        // The objects are named after the spec's names: escaped for the terminal.
        let text = deploy::render(&d);
        super::io::write_out(crate::report::escape::visible(&text).as_bytes());
        return EXIT_CLEAN;
    }
    apply(args, args.nats.as_deref().unwrap_or_default(), &d)
}

#[cfg(not(feature = "nats"))]
fn apply(_args: &DeployArgs, _url: &str, _d: &Deployment) -> i32 {
    usage_error(
        "this blazes was built without the JetStream runtime, so it cannot apply a plan; install it with `cargo install --path . --features nats` (`--dry-run` works without it)",
    )
}

/// The servers `--nats` names: URLs of one cluster separated by commas (spaces around them
/// allowed), each one checked, so a typo is a usage error rather than a connection timeout.
#[cfg(feature = "nats")]
fn server_list(arg: &str) -> Result<Vec<blazes_runtime::nats::async_nats::ServerAddr>, String> {
    let mut servers = Vec::new();
    for (i, part) in arg.split(',').map(str::trim).enumerate() {
        if part.is_empty() {
            return Err(format!(
                "`--nats {arg}`: server {} of the list is empty (separate URLs with single commas)",
                i + 1
            ));
        }
        servers.push(part.parse().map_err(|e| {
            format!("`--nats {arg}`: `{part}` is not a server URL ({e}); use nats://host:port")
        })?);
    }
    Ok(servers)
}

/// The findings of the system checks in lines: a summary, then one line each.
#[cfg(feature = "nats")]
fn findings_text(d: &Deployment, findings: &[blazes_runtime::nats::doctor::Finding]) -> String {
    use blazes_runtime::nats::doctor::Severity;
    let errors = findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .count();
    let warnings = findings.len() - errors;
    let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    let mut out = format!(
        "{}: the system for the plan of `{}`: {}, {}\n",
        d.path,
        d.spec,
        plural(errors, "error"),
        plural(warnings, "warning")
    );
    for f in findings {
        let level = match f.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        out.push_str(&format!("  {level}: {}: {}\n", f.about, f.message));
    }
    out
}

#[cfg(feature = "nats")]
fn apply(args: &DeployArgs, url: &str, d: &Deployment) -> i32 {
    use blazes_runtime::nats::async_nats;
    use blazes_runtime::nats::deploy::{Change, Outcome, deploy, deploy_forced};
    use blazes_runtime::nats::doctor::{self, Horizon, Severity};
    let force = args.force;
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => return usage_error(&format!("cannot start the async runtime: {e}")),
    };
    let servers = match server_list(url) {
        Ok(servers) => servers,
        Err(e) => return usage_error(&e),
    };
    let outcome = runtime.block_on(async {
        // The client tries the servers in turn and fails over between them later.
        let connect = async_nats::ConnectOptions::new()
            .connection_timeout(std::time::Duration::from_secs(5))
            .connect(servers.as_slice());
        let client = tokio::time::timeout(std::time::Duration::from_secs(10), connect)
            .await
            .map_err(|_| format!("cannot connect to `{url}` within 10 s"))?
            .map_err(|e| format!("cannot connect to `{url}`: {e}"))?;
        let urls: Vec<String> = url.split(',').map(|u| u.trim().to_string()).collect();
        let findings = doctor::check(
            &client,
            d,
            &urls,
            args.monitor.as_deref(),
            Horizon::default(),
        )
        .await
        .map_err(|e| e.to_string())?;
        let errors = findings.iter().any(|f| f.severity == Severity::Error);
        if args.check {
            return Ok(Checked(findings));
        }
        if errors {
            return Ok(Unsafe(findings));
        }
        if !findings.is_empty() {
            say_part!("{}", findings_text(d, &findings));
        }
        let js = async_nats::jetstream::new(client);
        let outcome = deploy(&js, d).await.map_err(|e| e.to_string())?;
        match outcome {
            Outcome::Refused(changes) if force => {
                // The differences are shown before anything is changed, as without --force.
                say_part!(
                    "the server differs from the plan of `{}`; --force applies it:\n{}",
                    d.spec,
                    changes
                        .iter()
                        .filter(|c| c.is_difference())
                        .map(|c| format!("  {}\n", c.describe()))
                        .collect::<String>()
                );
                deploy_forced(&js, d)
                    .await
                    .map(Forced)
                    .map_err(|e| e.to_string())
            }
            other => Ok(Done(other)),
        }
    });
    /// What happened: a plain deployment's outcome, a forced one's comparison, the checks
    /// alone (`--check`), or a deployment refused by the checks.
    enum Applied {
        Done(Outcome),
        Forced(Vec<Change>),
        Checked(Vec<doctor::Finding>),
        Unsafe(Vec<doctor::Finding>),
    }
    use Applied::{Checked, Done, Forced, Unsafe};
    let lines = |changes: &[Change], applied: bool| {
        changes
            .iter()
            .map(|c| match c {
                Change::Create(o) if applied => format!("  created {} {}\n", o.kind(), o.name()),
                c => format!("  {}\n", c.describe()),
            })
            .collect::<String>()
    };
    let outcome = match outcome {
        Ok(Checked(findings)) => {
            super::io::write_out(findings_text(d, &findings).as_bytes());
            return if findings.iter().any(|f| f.severity == Severity::Error) {
                EXIT_FINDINGS
            } else {
                EXIT_CLEAN
            };
        }
        Ok(Unsafe(findings)) => {
            say_part!(
                "{}error: not deployed: the system does not give the plan's guarantees what they assume (fix the errors above; `blazes deploy --check` lists them again)\n",
                findings_text(d, &findings)
            );
            return EXIT_FINDINGS;
        }
        Ok(Forced(changes)) => {
            let count = |f: fn(&Change) -> bool| changes.iter().filter(|c| f(c)).count();
            let orphans = count(|c| matches!(c, Change::Orphan { .. }));
            super::io::write_out(
                format!(
                    "{}: deployed the plan of `{}` with --force: {} created, {} updated in place, {} unchanged{}\n{}",
                    d.path,
                    d.spec,
                    count(|c| matches!(c, Change::Create(_))),
                    count(|c| matches!(c, Change::Differs { .. })),
                    count(|c| matches!(c, Change::Unchanged(_))),
                    if orphans == 0 {
                        String::new()
                    } else {
                        format!(
                            ", {orphans} orphan{} left in place (delete {} once no service uses {})",
                            if orphans == 1 { "" } else { "s" },
                            if orphans == 1 { "it" } else { "them" },
                            if orphans == 1 { "it" } else { "them" }
                        )
                    },
                    changes
                        .iter()
                        .map(|c| match c {
                            Change::Create(o) => format!("  created {} {}\n", o.kind(), o.name()),
                            Change::Differs { object, .. } => {
                                format!("  updated {} {}\n", object.kind(), object.name())
                            }
                            c => format!("  {}\n", c.describe()),
                        })
                        .collect::<String>()
                )
                .as_bytes(),
            );
            return EXIT_CLEAN;
        }
        Ok(Done(o)) => Ok(o),
        Err(e) => Err(e),
    };
    match outcome {
        Err(e) if e.contains("replicas") => usage_error(&format!(
            "{e} (`--replicas N` sets the replicas of every object: 1 for a single server, at most the cluster's size)"
        )),
        Err(e) => usage_error(&e),
        Ok(Outcome::NoChange(changes)) => {
            super::io::write_out(
                format!(
                    "{}: no change: every object of the plan of `{}` exists as planned ({} object{})\n{}",
                    d.path,
                    d.spec,
                    changes.len(),
                    if changes.len() == 1 { "" } else { "s" },
                    lines(&changes, false)
                )
                .as_bytes(),
            );
            EXIT_CLEAN
        }
        Ok(Outcome::Applied(changes)) => {
            let created = changes
                .iter()
                .filter(|c| matches!(c, Change::Create(_)))
                .count();
            super::io::write_out(
                format!(
                    "{}: deployed the plan of `{}`: {created} created, {} unchanged\n{}",
                    d.path,
                    d.spec,
                    changes.len() - created,
                    lines(&changes, true)
                )
                .as_bytes(),
            );
            EXIT_CLEAN
        }
        Ok(Outcome::Refused(changes)) => {
            say_part!(
                "error: the server differs from the plan of `{}`; nothing was changed (services may run on these objects: drain them and delete the differing objects, deploy under another spec name, or apply it with --force):\n{}",
                d.spec,
                lines(&changes, false)
            );
            EXIT_FINDINGS
        }
    }
}
