//! The roles: one ad server, one report server replica, the cache; each a process the driver
//! spawns. A role's logic reads its inputs and publishes its outputs through the component host
//! (`blazes_runtime::nats::host`), which opens whatever the plan puts on Report's inputs; no
//! role names an engine object.

use blazes_runtime::deploy::PlanFile;
use blazes_runtime::nats::host::{
    Channel, Delivery, Host, HostConfig, HostError, Input, Outputs, source_outputs,
};
use tokio::sync::mpsc;

use super::*;

/// A role's exit: a failure is one line on stderr and exit 1 (the driver reports it).
pub(crate) async fn role<F, Fut>(run: F) -> ExitCode
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Result<(), Failure>>,
{
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// What every role has: the connection, the plan it is deployed by, the workload.
pub(crate) struct Role {
    client: async_nats::Client,
    js: jetstream::Context,
    plan: PlanFile,
    setup: Setup,
}

impl Role {
    pub(crate) async fn connect(url: &str, plan: &Path, setup: Setup) -> Result<Role, Failure> {
        let client = async_nats::connect(url).await?;
        let js = jetstream::new(client.clone());
        Ok(Role {
            client,
            js,
            plan: plan::deployed(&setup, plan)?,
            setup,
        })
    }

    /// Instance `instance` of `component`, on the driver's one-node server.
    fn config(&self, component: &str, instance: u32) -> HostConfig {
        HostConfig::new(component, &instance.to_string())
            .replicas(1)
            .partitions(PARTITIONS)
            // Every report replica applies every input of the keyed order, in one order.
            .keyed_replica(true)
            // The barrier waits for every ad server (a partition one ad server declared its own
            // waits for that one alone).
            .seal_producers((0..self.setup.producers).map(Setup::adserver))
            // Replica 0 runs the barrier's releases; every replica receives them. More
            // instances are safe, but one reading a partition's records that another has just
            // purged after releasing it waits out the runtime's 5 s read timeout, which would
            // swamp the measurement.
            .release_barrier(instance == 0)
    }

    async fn host(&self, component: &str, instance: u32) -> Result<Host, HostError> {
        Host::open(
            self.js.clone(),
            &self.plan,
            self.config(component, instance),
        )
        .await
    }

    /// Subscribes to the driver's start signal, says `ready`, and waits for the signal.
    async fn ready_and_go(&self) -> Result<(), Failure> {
        let mut go = self.client.subscribe(GO).await?;
        self.client.flush().await?;
        say("ready");
        go.next().await;
        Ok(())
    }
}

/// The host's inputs, read by a task of their own: `Host::next` is not cancel-safe, and the
/// roles wait for their inputs and for requests or ticks at once.
fn inputs(host: &Host) -> mpsc::Receiver<Result<Delivery, HostError>> {
    let (tx, rx) = mpsc::channel(1024);
    let host = host.clone();
    tokio::spawn(async move {
        loop {
            let d = host.next().await;
            let failed = d.is_err();
            if tx.send(d).await.is_err() || failed {
                break;
            }
        }
    });
    rx
}

pub(crate) async fn adserver(role: Role, s: u32) -> Result<(), Failure> {
    let setup = &role.setup;
    let out = source_outputs(
        role.js.clone(),
        &role.plan,
        &role.config(ADSERVERS, s),
        REPORT,
    )
    .await?;
    role.ready_and_go().await?;
    let started = Instant::now();
    // Every deployment keeps up to IN_FLIGHT publishes outstanding (each a task, so that a
    // paced server's clicks leave when they are due), so that the deployments differ by their
    // mechanism rather than by how the ad servers use the connection.
    let mut in_flight: Vec<tokio::task::JoinHandle<Result<(), HostError>>> = Vec::new();
    async fn drain(
        in_flight: &mut Vec<tokio::task::JoinHandle<Result<(), HostError>>>,
    ) -> Result<(), Failure> {
        for task in in_flight.drain(..) {
            task.await??;
        }
        Ok(())
    }
    // Records per seal partition, for the record indices and the seal counts.
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    for k in 0..setup.clicks {
        // Pace by the schedule rather than by sleeping per click: the timer's resolution is a
        // millisecond, the pace may be finer.
        if setup.pace_us > 0 {
            let due = Duration::from_micros(setup.pace_us * u64::from(k));
            if let Some(wait) = due.checked_sub(started.elapsed())
                && wait >= Duration::from_millis(1)
            {
                tokio::time::sleep(wait).await;
            }
        }
        let c = setup.click(s, k);
        match out.channel() {
            Channel::Plain { .. } | Channel::Keyed { .. } => {
                // A keyed order partitions by ad; a plain stream takes the clicks as they come.
                let key = match out.channel() {
                    Channel::Keyed { .. } => c.id.to_string(),
                    _ => String::new(),
                };
                let input = Bytes::from(serde_json::to_vec(&ReportInput::Click(c))?);
                let out = out.clone();
                in_flight.push(tokio::spawn(async move {
                    out.publish(u64::from(k), 0, &key, input).await
                }));
            }
            Channel::Barrier { .. } => {
                let partition = setup.partition(&c);
                let index = counts.entry(partition.clone()).or_insert(0);
                if *index == 0 && setup.coordination == Coordination::IndependentSeal {
                    // This ad server's campaigns are its own: their seal is its alone.
                    out.declare_sole_producer(&partition).await?;
                }
                let (p, i) = (partition.clone(), *index);
                let payload = Bytes::from(serde_json::to_vec(&c)?);
                let records = out.clone();
                in_flight.push(tokio::spawn(
                    async move { records.record(&p, i, payload).await },
                ));
                *index += 1;
                // Partitions are walked in blocks: seal one once this server has left it, after
                // its records are acknowledged (a seal counts stored records).
                let next = (k + 1 < setup.clicks).then(|| setup.partition(&setup.click(s, k + 1)));
                if next.as_deref() != Some(partition.as_str()) {
                    drain(&mut in_flight).await?;
                    out.seal(&partition, counts[&partition]).await?;
                }
            }
            Channel::Sequence { .. } => {
                return Err("the ad network's plans give Report no global order".into());
            }
        }
        if in_flight.len() >= IN_FLIGHT {
            drain(&mut in_flight).await?;
        }
    }
    drain(&mut in_flight).await?;
    eprintln!(
        "{}: {} clicks in {:.2} s",
        Setup::adserver(s),
        setup.clicks,
        started.elapsed().as_secs_f64()
    );
    say("done");
    Ok(())
}

/// A report server replica's state: clicks per ad and per (ad, partition).
pub(crate) struct ReportState {
    replica: u32,
    by_id: BTreeMap<u32, u64>,
    by_part: BTreeMap<(u32, u32), u64>,
    applied: u64,
    answered: u32,
    /// Requests that cannot be answered yet (THRESH below its threshold; sealed partitions not
    /// yet released).
    pending: Vec<Request>,
    released: std::collections::BTreeSet<String>,
}

impl ReportState {
    fn apply(&mut self, setup: &Setup, c: &Click) {
        *self.by_id.entry(c.id).or_insert(0) += 1;
        let part = match setup.query {
            Query::Window => c.window,
            _ => c.campaign,
        };
        *self.by_part.entry((c.id, part)).or_insert(0) += 1;
        self.applied += 1;
    }

    /// The answer to `r` now, or `None` when it must wait.
    fn answer(&self, setup: &Setup, r: &Request) -> Option<String> {
        let clicks = self.by_id.get(&r.id).copied().unwrap_or(0);
        match setup.query {
            Query::Poor => {
                // Poor: below half of an even share of the clicks.
                let poor = clicks * 2 < setup.share();
                Some(format!(
                    "ad {}: {clicks} clicks, {}",
                    r.id,
                    if poor { "poor" } else { "not poor" }
                ))
            }
            Query::Thresh => {
                let threshold = setup.share() / 2;
                (clicks >= threshold).then(|| format!("ad {}: reached {threshold}", r.id))
            }
            Query::Campaign | Query::Window => {
                if setup.coordination.sealed() {
                    let partition = setup.request_partition(r)?;
                    if !self.released.contains(&partition) {
                        return None;
                    }
                }
                let part = r.part.unwrap_or(0);
                let n = self.by_part.get(&(r.id, part)).copied().unwrap_or(0);
                let what = if setup.query == Query::Window {
                    "window"
                } else {
                    "campaign"
                };
                Some(format!("ad {} in {what} {part}: {n} clicks", r.id))
            }
        }
    }

    /// Answers `r` into the cache's input (its output id is the request's number: an answer
    /// given again lands once), or keeps it for later.
    async fn respond(&mut self, out: &Outputs, setup: &Setup, r: Request) -> Result<(), Failure> {
        match self.answer(setup, &r) {
            Some(answer) => {
                let response = Response {
                    replica: self.replica,
                    q: r.q,
                    answer,
                };
                let payload = Bytes::from(serde_json::to_vec(&response)?);
                out.publish(u64::from(r.q), 0, "", payload).await?;
                self.answered += 1;
            }
            None => self.pending.push(r),
        }
        Ok(())
    }

    /// Answers the waiting requests that can be answered now.
    async fn retry_pending(&mut self, out: &Outputs, setup: &Setup) -> Result<(), Failure> {
        for r in std::mem::take(&mut self.pending) {
            self.respond(out, setup, r).await?;
        }
        Ok(())
    }

    fn finished(&self, setup: &Setup) -> bool {
        self.applied == setup.total_clicks() && self.answered == setup.queries
    }
}

pub(crate) async fn report(role: Role, replica: u32) -> Result<(), Failure> {
    let setup = &role.setup;
    let host = role.host(REPORT, replica).await?;
    let out = host.outputs(CACHE).await?;
    // A keyed order carries the requests with the clicks, in one order. Otherwise the plan
    // leaves the requests unordered against the clicks, and they arrive on the cache's subject.
    let mut requests = match host.channel() {
        Channel::Keyed { .. } => None,
        _ => Some(role.client.subscribe(REQUESTS).await?),
    };
    let mut state = ReportState {
        replica,
        by_id: BTreeMap::new(),
        by_part: BTreeMap::new(),
        applied: 0,
        answered: 0,
        pending: Vec::new(),
        released: Default::default(),
    };
    let mut delivered = inputs(&host);
    role.ready_and_go().await?;
    let started = Instant::now();
    while !state.finished(setup) {
        let next_request = async {
            match requests.as_mut() {
                Some(r) => r.next().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            Some(m) = next_request => {
                let r: Request = serde_json::from_slice(&m.payload)?;
                state.respond(&out, setup, r).await?;
            }
            d = delivered.recv() => {
                let d = d.ok_or("the host stopped reading")??;
                match &d.input {
                    Input::Released { partition, records } => {
                        for record in records {
                            let c: Click = serde_json::from_slice(&record.payload)?;
                            state.apply(setup, &c);
                        }
                        state.released.insert(partition.clone());
                        state.retry_pending(&out, setup).await?;
                    }
                    Input::Keyed { payload, .. } | Input::Message { payload, .. } => {
                        match serde_json::from_slice::<ReportInput>(payload)? {
                            ReportInput::Click(c) => {
                                state.apply(setup, &c);
                                if !state.pending.is_empty() {
                                    state.retry_pending(&out, setup).await?;
                                }
                            }
                            ReportInput::Request(r) => state.respond(&out, setup, r).await?,
                        }
                    }
                    Input::Sequenced(_) => {
                        return Err("the ad network's plans give Report no global order".into());
                    }
                    // A keyed replica reads every partition and leases none.
                    Input::Assigned { .. } | Input::Revoked { .. } => {
                        return Err("a report replica holds no partition lease".into());
                    }
                }
                host.done(&d).await?;
            }
        }
    }
    eprintln!(
        "report-{replica}: {} clicks, {} answers in {:.2} s",
        state.applied,
        state.answered,
        started.elapsed().as_secs_f64()
    );
    say("done");
    Ok(())
}

pub(crate) async fn cache(role: Role) -> Result<(), Failure> {
    let setup = &role.setup;
    let host = role.host(CACHE, 0).await?;
    let out = host.outputs(REPORT).await?;
    let mut responses = inputs(&host);
    role.ready_and_go().await?;
    let mut report = CacheReport {
        answers: BTreeMap::new(),
        served: BTreeMap::new(),
    };
    let expected = setup.queries as usize * setup.replicas as usize;
    let mut received = 0;
    let mut next_q = 0;
    let mut tick = tokio::time::interval(Duration::from_millis(setup.query_every_ms.max(1)));
    while received < expected {
        tokio::select! {
            biased;
            d = responses.recv() => {
                let d = d.ok_or("the host stopped reading")??;
                let Input::Message { payload, .. } = &d.input else {
                    return Err("the cache reads a plain stream".into());
                };
                let r: Response = serde_json::from_slice(payload)?;
                report.served.entry(r.q).or_insert(r.replica);
                // A response handled again (its acknowledgement was lost) counts once.
                if report.answers.entry(r.q).or_default().insert(r.replica, r.answer).is_none() {
                    received += 1;
                }
                host.done(&d).await?;
            }
            _ = tick.tick(), if next_q < setup.queries => {
                let request = setup.request(next_q);
                match out.channel() {
                    Channel::Keyed { .. } => {
                        let input = serde_json::to_vec(&ReportInput::Request(request.clone()))?;
                        out.publish(u64::from(next_q), 0, &request.id.to_string(), input.into())
                            .await?;
                    }
                    _ => {
                        role.client
                            .publish(REQUESTS, serde_json::to_vec(&request)?.into())
                            .await?;
                        role.client.flush().await?;
                    }
                }
                next_q += 1;
            }
        }
    }
    say(&format!("answers {}", serde_json::to_string(&report)?));
    say("done");
    Ok(())
}
