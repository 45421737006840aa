//! The roles: one ad server, one report server replica, the cache; each a process the driver spawns.

use super::*;

/// A role's exit: a failure is one line on stderr and exit 1 (the driver reports it).
/// A role's exit: the engine objects of its deployment from the plan, then its logic; a
/// failure is one line on stderr and exit 1 (the driver reports it).
pub(crate) async fn role<F, Fut>(setup: &Setup, plan: Option<PathBuf>, run: F) -> ExitCode
where
    F: FnOnce(Engine) -> Fut,
    Fut: std::future::Future<Output = Result<(), Failure>>,
{
    let result = match plan::engine(setup, plan.as_deref()) {
        Ok(engine) => run(engine).await,
        Err(e) => Err(e.into()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

pub(crate) async fn connect(
    url: &str,
) -> Result<(async_nats::Client, jetstream::Context), Failure> {
    let client = async_nats::connect(url).await?;
    let js = jetstream::new(client.clone());
    Ok((client, js))
}

/// Subscribes to the driver's start signal, then says `ready`.
pub(crate) async fn ready(client: &async_nats::Client) -> Result<async_nats::Subscriber, Failure> {
    let go = client.subscribe(GO).await?;
    client.flush().await?;
    say("ready");
    Ok(go)
}

pub(crate) async fn adserver(
    url: &str,
    s: u32,
    setup: &Setup,
    engine: Engine,
) -> Result<(), Failure> {
    let (client, js) = connect(url).await?;
    let me = Setup::adserver(s);
    let keyed = match setup.coordination {
        Coordination::Ordered => Some(Keyed::open(js.clone(), engine.keyed_config()?).await?),
        _ => None,
    };
    let barrier = match setup.coordination {
        Coordination::Sealed | Coordination::IndependentSeal => Some(BarrierProducer::new(
            js.clone(),
            &engine.barrier_config(setup)?,
            &me,
        )),
        _ => None,
    };
    let mut go = ready(&client).await?;
    go.next().await;
    let started = Instant::now();
    // Every deployment keeps up to IN_FLIGHT publishes outstanding (each a task, so that a
    // paced server's clicks leave when they are due), so that the deployments differ by their
    // mechanism rather than by how the ad servers use the connection.
    let mut in_flight: Vec<tokio::task::JoinHandle<Result<(), Failure>>> = Vec::new();
    async fn drain(
        in_flight: &mut Vec<tokio::task::JoinHandle<Result<(), Failure>>>,
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
        let payload = Bytes::from(serde_json::to_vec(&c)?);
        match setup.coordination {
            Coordination::None => {
                let js = js.clone();
                let subject = format!("adnet.clicks.{s}");
                in_flight.push(tokio::spawn(async move {
                    js.publish(subject, payload).await?.await?;
                    Ok(())
                }));
            }
            Coordination::Ordered => {
                let input = Bytes::from(serde_json::to_vec(&Input::Click(c.clone()))?);
                let keyed = keyed.clone().expect("opened for ordered");
                in_flight.push(tokio::spawn(async move {
                    keyed
                        .publish(&c.id.to_string(), &format!("click-{s}-{k}"), input)
                        .await?;
                    Ok(())
                }));
            }
            Coordination::Sealed | Coordination::IndependentSeal => {
                let producer = barrier.clone().expect("opened for sealed");
                let partition = setup.partition(&c);
                let index = counts.entry(partition.clone()).or_insert(0);
                let (p, i) = (partition.clone(), *index);
                in_flight.push(tokio::spawn(async move {
                    producer.record(&p, i, payload).await?;
                    Ok(())
                }));
                *index += 1;
                // Partitions are walked in blocks: seal one once this server has left it, after
                // its records are acknowledged (a seal counts stored records).
                let next = (k + 1 < setup.clicks).then(|| setup.partition(&setup.click(s, k + 1)));
                if next.as_deref() != Some(partition.as_str()) {
                    drain(&mut in_flight).await?;
                    let producer = barrier.as_ref().expect("opened for sealed");
                    producer.seal(&partition, counts[&partition]).await?;
                }
            }
        }
        if in_flight.len() >= IN_FLIGHT {
            drain(&mut in_flight).await?;
        }
    }
    drain(&mut in_flight).await?;
    client.flush().await?;
    eprintln!(
        "{me}: {} clicks in {:.2} s",
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

    async fn respond(
        &mut self,
        client: &async_nats::Client,
        setup: &Setup,
        r: Request,
    ) -> Result<(), Failure> {
        match self.answer(setup, &r) {
            Some(answer) => {
                let response = Response {
                    replica: self.replica,
                    q: r.q,
                    answer,
                };
                client
                    .publish(RESPONSES, serde_json::to_vec(&response)?.into())
                    .await?;
                self.answered += 1;
            }
            None => self.pending.push(r),
        }
        Ok(())
    }

    /// Answers the waiting requests that can be answered now.
    async fn retry_pending(
        &mut self,
        client: &async_nats::Client,
        setup: &Setup,
    ) -> Result<(), Failure> {
        for r in std::mem::take(&mut self.pending) {
            self.respond(client, setup, r).await?;
        }
        Ok(())
    }

    fn finished(&self, setup: &Setup) -> bool {
        self.applied == setup.total_clicks() && self.answered == setup.queries
    }
}

pub(crate) async fn report(
    url: &str,
    replica: u32,
    setup: &Setup,
    engine: Engine,
) -> Result<(), Failure> {
    let (client, js) = connect(url).await?;
    let mut state = ReportState {
        replica,
        by_id: BTreeMap::new(),
        by_part: BTreeMap::new(),
        applied: 0,
        answered: 0,
        pending: Vec::new(),
        released: Default::default(),
    };
    let started;
    match setup.coordination {
        Coordination::None => {
            // Two inputs on two paths: the click stream through this replica's own consumer,
            // the requests on a subject. Nothing orders one against the other.
            let stream = js.get_stream(CLICKS_STREAM).await?;
            let consumer = stream
                .create_consumer(jetstream::consumer::pull::OrderedConfig {
                    filter_subject: "adnet.clicks.*".into(),
                    ..Default::default()
                })
                .await?;
            let mut clicks = consumer.messages().await?;
            let mut requests = client.subscribe(REQUESTS).await?;
            let mut go = ready(&client).await?;
            go.next().await;
            started = Instant::now();
            while !state.finished(setup) {
                tokio::select! {
                    biased;
                    Some(m) = requests.next() => {
                        let r: Request = serde_json::from_slice(&m.payload)?;
                        state.respond(&client, setup, r).await?;
                    }
                    Some(m) = clicks.next() => {
                        let c: Click = serde_json::from_slice(&m?.payload)?;
                        state.apply(setup, &c);
                        if !state.pending.is_empty() {
                            state.retry_pending(&client, setup).await?;
                        }
                    }
                }
            }
        }
        Coordination::Ordered => {
            // The plan's keyed order: clicks and requests of one ad are in one partition's
            // order, which every replica reads from the same stream.
            let config = engine.keyed_config()?;
            let filter_subject = format!("{}.in.*", config.name);
            let keyed = Keyed::open(js.clone(), config).await?;
            let consumer = keyed
                .stream()
                .create_consumer(jetstream::consumer::pull::OrderedConfig {
                    filter_subject,
                    ..Default::default()
                })
                .await?;
            let mut inputs = consumer.messages().await?;
            let mut go = ready(&client).await?;
            go.next().await;
            started = Instant::now();
            while !state.finished(setup) {
                let Some(m) = inputs.next().await else {
                    return Err("the keyed stream's consumer ended".into());
                };
                match serde_json::from_slice::<Input>(&m?.payload)? {
                    Input::Click(c) => {
                        state.apply(setup, &c);
                        if !state.pending.is_empty() {
                            state.retry_pending(&client, setup).await?;
                        }
                    }
                    Input::Request(r) => state.respond(&client, setup, r).await?,
                }
            }
        }
        Coordination::Sealed | Coordination::IndependentSeal => {
            // Replica 0 runs the barrier instance; every replica applies its releases, which
            // the server stores once per partition. More instances are safe, but an instance
            // reading a partition's records that another one has just purged after releasing
            // it waits out the runtime's 5 s read timeout, which would swamp the measurement.
            let mut barrier = SealBarrier::open(js.clone(), engine.barrier_config(setup)?).await?;
            let runs_barrier = replica == 0;
            let mut requests = client.subscribe(REQUESTS).await?;
            let mut go = ready(&client).await?;
            go.next().await;
            started = Instant::now();
            let mut from = 1;
            let mut tick = tokio::time::interval(Duration::from_millis(20));
            while !state.finished(setup) {
                tokio::select! {
                    biased;
                    Some(m) = requests.next() => {
                        let r: Request = serde_json::from_slice(&m.payload)?;
                        state.respond(&client, setup, r).await?;
                    }
                    _ = tick.tick() => {
                        if runs_barrier {
                            for event in barrier.poll().await? {
                                if !matches!(event, BarrierEvent::Released(_)) {
                                    eprintln!("report-{replica}: barrier: {event:?}");
                                }
                            }
                        }
                        let releases = barrier.releases(from).await?;
                        for release in releases {
                            from = release.sequence + 1;
                            for record in &release.records {
                                let c: Click = serde_json::from_slice(&record.payload)?;
                                state.apply(setup, &c);
                            }
                            state.released.insert(release.partition);
                        }
                        state.retry_pending(&client, setup).await?;
                    }
                }
            }
        }
    }
    client.flush().await?;
    eprintln!(
        "report-{replica}: {} clicks, {} answers in {:.2} s",
        state.applied,
        state.answered,
        started.elapsed().as_secs_f64()
    );
    say("done");
    Ok(())
}

pub(crate) async fn cache(url: &str, setup: &Setup, engine: Engine) -> Result<(), Failure> {
    let (client, js) = connect(url).await?;
    let keyed = match setup.coordination {
        Coordination::Ordered => Some(Keyed::open(js.clone(), engine.keyed_config()?).await?),
        _ => None,
    };
    let mut responses = client.subscribe(RESPONSES).await?;
    let mut go = ready(&client).await?;
    go.next().await;
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
            Some(m) = responses.next() => {
                let r: Response = serde_json::from_slice(&m.payload)?;
                report.served.entry(r.q).or_insert(r.replica);
                report.answers.entry(r.q).or_default().insert(r.replica, r.answer);
                received += 1;
            }
            _ = tick.tick(), if next_q < setup.queries => {
                let request = setup.request(next_q);
                match &keyed {
                    Some(keyed) => {
                        let input = serde_json::to_vec(&Input::Request(request.clone()))?;
                        keyed
                            .publish(&request.id.to_string(), &format!("req-{next_q}"), input.into())
                            .await?;
                    }
                    None => {
                        client
                            .publish(REQUESTS, serde_json::to_vec(&request)?.into())
                            .await?;
                        client.flush().await?;
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
