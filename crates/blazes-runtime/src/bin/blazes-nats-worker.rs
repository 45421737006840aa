//! A keyed-session worker on JetStream: counts inputs per key. The tests run it as a real
//! process to SIGKILL and SIGSTOP it; it also shows the worker-facing API end to end.
//!
//! ```text
//! blazes-nats-worker --servers nats://127.0.0.1:4222 --name KEYED --partitions 2 --worker w1
//!                    [--ttl 2] [--work-ms 100] [--max-sessions 4] [--fencing on|off]
//!                    [--user U --password P]
//! ```
//!
//! For each input it prints `holding <partition> <offset>`, waits `--work-ms` (the work),
//! emits `<key>:<count>:<offset>` and commits (offset, counts); `accepted <partition> <grant>
//! <committed offset>` and `lost <partition> <reason>` mark sessions. `--fencing off` is the
//! tests' negative control (commits and outputs without the lease check).

use std::collections::BTreeMap;
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use blazes_runtime::nats::async_nats;
use blazes_runtime::nats::sequencer::Fencing;
use blazes_runtime::nats::session::{Keyed, KeyedConfig, Session};
use futures_util::StreamExt;

struct Args {
    servers: Vec<String>,
    name: String,
    partitions: u32,
    worker: String,
    ttl: u64,
    work_ms: u64,
    max_sessions: usize,
    fencing: Fencing,
    user: Option<(String, String)>,
}

fn parse() -> Result<Args, String> {
    let mut args = Args {
        servers: Vec::new(),
        name: String::new(),
        partitions: 1,
        worker: String::new(),
        ttl: 2,
        work_ms: 100,
        max_sessions: 4,
        fencing: Fencing::Enforced,
        user: None,
    };
    let mut user = None;
    let mut password = None;
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        let number = |v: String| {
            v.parse::<u64>()
                .map_err(|_| format!("{flag}: `{v}` is not a number"))
        };
        match flag.as_str() {
            "--servers" => args.servers = value()?.split(',').map(str::to_string).collect(),
            "--name" => args.name = value()?,
            "--partitions" => args.partitions = number(value()?)? as u32,
            "--worker" => args.worker = value()?,
            "--ttl" => args.ttl = number(value()?)?,
            "--work-ms" => args.work_ms = number(value()?)?,
            "--max-sessions" => args.max_sessions = number(value()?)? as usize,
            "--fencing" => {
                args.fencing = match value()?.as_str() {
                    "on" => Fencing::Enforced,
                    "off" => Fencing::Off,
                    other => return Err(format!("--fencing: `{other}` is not on or off")),
                }
            }
            "--user" => user = Some(value()?),
            "--password" => password = Some(value()?),
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    if args.servers.is_empty() || args.name.is_empty() || args.worker.is_empty() {
        return Err("--servers, --name and --worker are required".into());
    }
    args.user = user.zip(password);
    Ok(args)
}

fn say(line: String) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let mut options = async_nats::ConnectOptions::new();
    if let Some((user, password)) = &args.user {
        options = options.user_and_password(user.clone(), password.clone());
    }
    let client = match options.connect(args.servers.as_slice()).await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: cannot connect to {}: {e}", args.servers.join(","));
            return ExitCode::from(1);
        }
    };
    let js = async_nats::jetstream::new(client);
    let mut config = KeyedConfig::new(&args.name, args.partitions);
    config.lease_ttl = Duration::from_secs(args.ttl);
    let keyed = match Keyed::open(js, config).await {
        Ok(k) => k,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    let worker = keyed.worker_with(&args.worker, args.fencing);
    let slots = Arc::new(tokio::sync::Semaphore::new(args.max_sessions));
    let mut sessions = std::pin::pin!(worker.sessions());
    loop {
        let permit = slots.clone().acquire_owned().await.expect("semaphore");
        let session = match sessions
            .next()
            .await
            .expect("the stream of sessions never ends")
        {
            Ok(s) => s,
            Err(e) => {
                say(format!("error accepting: {e}"));
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        let work = Duration::from_millis(args.work_ms);
        tokio::spawn(async move {
            let p = session.partition();
            if let Err(e) = run(session, work).await {
                say(format!("lost {p} {e}"));
            }
            drop(permit);
        });
    }
}

/// Counts per key; the state is `key=count` lines.
async fn run(mut session: Session, work: Duration) -> Result<(), blazes_runtime::nats::NatsError> {
    let p = session.partition();
    let (offset, state) = session.committed();
    say(format!("accepted {p} {} {offset}", session.grant()));
    let mut counts: BTreeMap<String, u64> = String::from_utf8_lossy(state)
        .lines()
        .filter_map(|l| {
            l.split_once('=')
                .and_then(|(k, c)| Some((k.to_string(), c.parse().ok()?)))
        })
        .collect();
    loop {
        let input = session.next().await?;
        say(format!("holding {p} {}", input.offset));
        tokio::time::sleep(work).await;
        let count = counts.entry(input.key.clone()).or_default();
        *count += 1;
        let output = format!("{}:{}:{}", input.key, count, input.offset);
        session.emit(input.offset, 0, output.into()).await?;
        let state: String = counts.iter().map(|(k, c)| format!("{k}={c}\n")).collect();
        session.commit(input.offset, state.into()).await?;
        say(format!("done {p} {}", input.offset));
    }
}
