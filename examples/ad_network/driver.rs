//! The driver: a local nats-server, the plan, the roles as processes, the outcome.

use super::*;

/// The nats-server binary, or a one-sentence reason why there is none.
pub(crate) fn server_binary() -> Result<(), String> {
    const INSTALL: &str = "set BLAZES_NATS_SERVER to a nats-server 2.11+ binary (`scripts/nats-server-path` installs the pinned one and prints its path)";
    if let Some(path) = std::env::var_os("BLAZES_NATS_SERVER") {
        return if std::path::Path::new(&path).is_file() {
            Ok(())
        } else {
            Err(format!(
                "BLAZES_NATS_SERVER={} is not a file; {INSTALL}",
                std::path::Path::new(&path).display()
            ))
        };
    }
    let on_path = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("nats-server").is_file()));
    if on_path {
        Ok(())
    } else {
        Err(format!("nats-server not found; {INSTALL}"))
    }
}

/// Starts the server and the roles, waits for them, and prints the outcome.
pub(crate) async fn drive(setup: Setup, bench: bool) -> ExitCode {
    if let Err(e) = setup.validate().and_then(|()| server_binary()) {
        eprintln!("error: {e}");
        return ExitCode::from(2);
    }
    // The plan document lives in a temporary directory until every role has read it.
    let dir = match tempfile::tempdir() {
        Ok(dir) => dir,
        Err(e) => {
            eprintln!("error: cannot create a temporary directory for the plan: {e}");
            return ExitCode::FAILURE;
        }
    };
    let planned = deployment(&setup, dir.path());
    let plan = match planned {
        Ok(planned) => planned,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    match drive_inner(&setup, &plan, bench).await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The plan document of the deployment, checked as the roles will read it; a one-sentence
/// error when the plan lacks the mechanism the coordination needs.
pub(crate) fn deployment(setup: &Setup, dir: &Path) -> Result<PathBuf, String> {
    let plan = plan::plan_document(&plan::spec(setup.query), dir)?;
    plan::deployed(setup, &plan)?;
    Ok(plan)
}

/// The role arguments every spawned process gets.
pub(crate) fn role_args(setup: &Setup) -> Vec<String> {
    vec![
        "--query".into(),
        setup.query.name().into(),
        "--coordination".into(),
        setup.coordination.name().into(),
        "--producers".into(),
        setup.producers.to_string(),
        "--replicas".into(),
        setup.replicas.to_string(),
        "--clicks".into(),
        setup.clicks.to_string(),
        "--ids".into(),
        setup.ids.to_string(),
        "--queries".into(),
        setup.queries.to_string(),
        "--pace-us".into(),
        setup.pace_us.to_string(),
        "--query-every-ms".into(),
        setup.query_every_ms.to_string(),
    ]
}

pub(crate) async fn drive_inner(
    setup: &Setup,
    plan: &Path,
    bench: bool,
) -> Result<ExitCode, Failure> {
    let Some(cluster) = support_nats::Cluster::start(1, "").await else {
        return Err("nats-server is missing".into());
    };
    let client = cluster.client().await;
    let js = jetstream::new(client.clone());
    cluster.wait_ready(&js, 1).await;
    let url = cluster.urls_arg();
    // Each role's host opens (creating if needed) the engine objects of its plan.
    let exe = std::env::current_exe()?;
    let spawn = |role: &str, extra: Vec<String>| {
        let mut command = Command::new(&exe);
        command
            .arg(role)
            .args(["--nats", url.as_str()])
            .args(extra)
            .args(role_args(setup))
            .arg("--plan")
            .arg(plan);
        (role.to_string(), support_nats::Proc::spawn(command))
    };
    let mut procs = Vec::new();
    for r in 0..setup.replicas {
        procs.push(spawn("report", vec!["--replica".into(), r.to_string()]));
    }
    procs.push(spawn("cache", vec![]));
    for s in 0..setup.producers {
        procs.push(spawn("adserver", vec!["--index".into(), s.to_string()]));
    }
    wait_all(&mut procs, "ready", Duration::from_secs(60)).await?;
    let started = Instant::now();
    // The start signal is a plain publish, which the server may drop for a subscriber it
    // considers slow: it is repeated until the run ends (a role reads only the first).
    let repeat = {
        let client = client.clone();
        tokio::spawn(async move {
            loop {
                let _ = client.publish(GO, Bytes::new()).await;
                let _ = client.flush().await;
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        })
    };
    let finished = wait_all(&mut procs, "done", Duration::from_secs(600)).await;
    repeat.abort();
    finished?;
    let completion = started.elapsed().as_secs_f64();
    let cache = &procs[setup.replicas as usize].1;
    let line = cache
        .lines()
        .into_iter()
        .find_map(|l| l.strip_prefix("answers ").map(str::to_string))
        .ok_or("the cache printed no answers")?;
    let report: CacheReport = serde_json::from_str(&line)?;
    if bench {
        bench::report(setup, completion);
        return Ok(ExitCode::SUCCESS);
    }
    print_outcome(setup, &report, completion);
    Ok(ExitCode::SUCCESS)
}

/// Waits until every process printed `line`; a process that exits first is an error.
pub(crate) async fn wait_all(
    procs: &mut [(String, support_nats::Proc)],
    line: &str,
    limit: Duration,
) -> Result<(), Failure> {
    // The limit counts the polls' sleeps rather than reading the clock: this VM's monotonic
    // clock has been seen to jump by minutes, which would end a clock-based wait at once.
    let pause = Duration::from_millis(10);
    let mut waited = Duration::ZERO;
    loop {
        let mut waiting = Vec::new();
        for (role, p) in procs.iter_mut() {
            if p.lines().iter().any(|l| l == line) {
                continue;
            }
            if let Some(status) = p.child.try_wait()? {
                // Its last lines may still be on their way through the pipe.
                tokio::time::sleep(Duration::from_millis(100)).await;
                if p.lines().iter().any(|l| l == line) {
                    continue;
                }
                return Err(format!(
                    "{role} (pid {}) exited with {status} before `{line}`",
                    p.child.id()
                )
                .into());
            }
            waiting.push(role.clone());
        }
        if waiting.is_empty() {
            return Ok(());
        }
        if waited >= limit {
            return Err(format!(
                "timed out after {} s waiting for `{line}` from: {}",
                limit.as_secs(),
                waiting.join(", ")
            )
            .into());
        }
        tokio::time::sleep(pause).await;
        waited += pause;
    }
}

pub(crate) fn print_outcome(setup: &Setup, report: &CacheReport, completion: f64) {
    say(&format!(
        "ad network: query {}, coordination {}, {} ad servers x {} clicks, {} report replicas, 1 cache, {} requests",
        setup.query.name().to_uppercase(),
        setup.coordination.name(),
        setup.producers,
        setup.clicks,
        setup.replicas,
        setup.queries
    ));
    let mut differing = 0;
    for (q, by_replica) in &report.answers {
        let first = by_replica.values().next();
        if by_replica.values().all(|a| Some(a) == first) {
            continue;
        }
        differing += 1;
        let served = report.served.get(q).copied().unwrap_or(0);
        say(&format!(
            "  request {q}: the cache served replica {served}'s answer; the replicas answered:"
        ));
        for (r, answer) in by_replica {
            say(&format!("    replica {r}: {answer}"));
        }
    }
    if differing == 0
        && let Some((q, by_replica)) = report.answers.iter().next()
        && let Some(answer) = by_replica.values().next()
    {
        say(&format!("  request {q}: every replica answered `{answer}`"));
    }
    say(&format!("completed in {completion:.2} s"));
    say(&format!(
        "replicas disagree on {differing} of {} requests",
        report.answers.len()
    ));
    say(&format!("agree: {}", differing == 0));
}
