//! The host of one component instance: its inputs in the plan's order, and its progress
//! (acknowledgements, checkpoints, commits).

use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::consumer::pull;
use async_nats::jetstream::{self, kv};
use bytes::Bytes;
use futures_util::StreamExt;
use tokio::sync::Mutex;

use super::engine::{durable_consumer, get_stream, open_bucket};
use super::outputs::{Names, Outputs};
use super::plan::{channel_of, input_objects};
use super::renew::InFlight;
use super::{Channel, HostConfig, HostError, check_name};
use crate::deploy::{self, Deployment, PlanFile};
use crate::nats::barrier::{BarrierConfig, BarrierEvent, BatchRecord, SealBarrier};
use crate::nats::deploy::stream_config;
use crate::nats::keyvalue::{compare_and_set, read_last};
use crate::nats::sequencer::{Sequenced, Sequencer, SequencerConfig};
use crate::nats::session::{KEY, Keyed, KeyedConfig, Session};
use crate::nats::{BoxError, NatsError, RetryBudget, Subscription};

/// The token in place of the instance in a keyed component's output ids and plain subjects:
/// every instance of the component names the outputs of an input alike.
const KEYED: &str = "keyed";

/// One input, as the plan's mechanism hands it over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// A seal barrier released this partition: every record of it, ordered by (producer, index).
    Released {
        /// The partition.
        partition: String,
        /// Its records.
        records: Vec<BatchRecord>,
    },
    /// The next input of the total order.
    Sequenced(Sequenced),
    /// This instance now holds keyed `partition` (a leased session started): the inputs that
    /// follow, until [`Input::Revoked`], are the partition's, from the one after its last
    /// commit. The logic starts the partition's state from `restored` (that commit's state;
    /// `None`: the partition's first input), not from what it held before: a checkpoint from
    /// here on is the partition's.
    Assigned {
        /// The partition.
        partition: u32,
        /// The state of its last commit.
        restored: Option<Bytes>,
    },
    /// This instance no longer holds keyed `partition`: its lease ran out or a write was refused
    /// because another instance holds it now. The logic drops what it keeps for the partition;
    /// whatever it did not commit the next holder handles again, from the last commit.
    Revoked {
        /// The partition.
        partition: u32,
    },
    /// The next input of the session's partition.
    Keyed {
        /// The partition.
        partition: u32,
        /// The input's key.
        key: String,
        /// The input.
        payload: Bytes,
    },
    /// The next message of the plain stream.
    Message {
        /// Its subject.
        subject: String,
        /// Its payload.
        payload: Bytes,
    },
}

/// An input handed to the logic, with its position in the component's input stream (the
/// release's, the total order's, the partition's offset, the plain stream's sequence).
#[derive(Debug, Clone)]
pub struct Delivery {
    /// The input's position: output ids derive from it.
    pub position: u64,
    /// The input.
    pub input: Input,
    /// Whether the server delivered it before (the previous incarnation did not acknowledge
    /// it); the logic handles it the same way, the ids make its outputs land once.
    pub redelivered: bool,
    ack: Option<Arc<jetstream::Message>>,
}

/// What the reader of each channel keeps between inputs.
// One per host, behind a mutex: the size of the largest variant costs nothing.
#[allow(clippy::large_enum_variant)]
enum Reader {
    Consumer {
        consumer: Box<jetstream::consumer::Consumer<pull::Config>>,
        barrier: Option<Box<SealBarrier>>,
        pending: std::collections::VecDeque<Delivery>,
    },
    Sequence {
        sequencer: Sequencer,
        next: u64,
        pending: std::collections::VecDeque<Sequenced>,
    },
    Keyed {
        keyed: Box<Keyed>,
        session: Option<Box<Session>>,
        /// A session accepted whose [`Input::Assigned`] the logic has not been handed yet.
        announce: bool,
    },
    /// A replica of a keyed component: every partition, in the stream's order.
    KeyedReplica {
        keyed: Box<Keyed>,
        /// Every partition's inputs from the stream's start, following the stream.
        messages: Subscription,
    },
}

struct Inner {
    js: jetstream::Context,
    plan: PlanFile,
    deployment: Deployment,
    config: HostConfig,
    channel: Channel,
    id_prefix: String,
    /// Whether outputs are named by the keyed partition's input, not by this instance.
    by_partition: bool,
    reader: Mutex<Reader>,
    /// Sequence channel: the restored state and the position after the last handled input.
    handled: Mutex<(u64, Option<Bytes>)>,
    checkpoints: Option<kv::Store>,
    /// The revision of this instance's newest checkpoint (0: none), which the next replaces.
    checkpoint_revision: Mutex<u64>,
    /// Acknowledged channels: the inputs fetched and not yet done, kept in progress.
    in_flight: Option<Arc<InFlight>>,
}

/// One instance of a component, hosted. Cloning shares the instance.
#[derive(Clone)]
pub struct Host {
    inner: Arc<Inner>,
}

impl Host {
    /// Opens instance `config.instance` of `config.component` as `plan` deploys it: derives the
    /// plan's objects, opens (creating if needed) the mechanism on the component's inputs and
    /// resumes from its last acknowledgement or checkpoint.
    pub async fn open(
        js: jetstream::Context,
        plan: &PlanFile,
        config: HostConfig,
    ) -> Result<Host, HostError> {
        check_name(&config.instance)?;
        let deployment = deploy::derive(plan, config.replicas)?;
        let component = deploy::sanitize(&config.component);
        let channel = channel_of(plan, &deployment, &config.component)?;
        // A leased partition moves between instances, and its next holder handles again what
        // the last one did not commit: its outputs must get the same ids whoever holds it.
        // Offsets are sequences of the keyed stream, unique across its partitions, so the
        // component's name and the offset identify the input.
        let by_partition = matches!(channel, Channel::Keyed { .. })
            && !config.keyed_replica
            && !config.outputs_named_by_instance;
        let id_prefix = if by_partition {
            format!("{}-{component}-{KEYED}", deployment.prefix)
        } else {
            format!("{}-{component}-{}", deployment.prefix, config.instance)
        };
        let (plain, input_consumer) = input_objects(&deployment, &channel, &config);
        let mut checkpoints = None;
        let mut checkpoint_revision = 0;
        let mut handled = (1, None);
        let reader = match &channel {
            Channel::Barrier { stream, producers } => {
                let waits: Vec<&str> = if config.seal_producers.is_empty() {
                    producers.iter().map(String::as_str).collect()
                } else {
                    config.seal_producers.iter().map(String::as_str).collect()
                };
                for p in &waits {
                    check_name(p)?;
                }
                let mut bc = BarrierConfig::new(stream, &waits);
                bc.replicas = config.replicas;
                bc.retry_for = config.retry_for;
                let barrier = SealBarrier::open(js.clone(), bc).await?;
                let s = get_stream(&js, stream, config.retry_for).await?;
                let consumer = durable_consumer(
                    &s,
                    input_consumer
                        .as_ref()
                        .expect("a barrier's releases are read durably"),
                    config.retry_for,
                )
                .await?;
                Reader::Consumer {
                    consumer: Box::new(consumer),
                    barrier: config.release_barrier.then(|| Box::new(barrier)),
                    pending: Default::default(),
                }
            }
            Channel::Plain { .. } => {
                let object = plain.as_ref().expect("a plain channel has a stream");
                let s = crate::nats::ensure_stream(&js, stream_config(object), config.retry_for)
                    .await?;
                if let Some(k) = &config.input_key {
                    check_name(k)?;
                }
                let consumer = durable_consumer(
                    &s,
                    input_consumer
                        .as_ref()
                        .expect("a plain stream is read durably"),
                    config.retry_for,
                )
                .await?;
                Reader::Consumer {
                    consumer: Box::new(consumer),
                    barrier: None,
                    pending: Default::default(),
                }
            }
            Channel::Sequence {
                stream,
                checkpoints: bucket,
            } => {
                let mut sc = SequencerConfig::new(stream);
                sc.replicas = config.replicas;
                sc.retry_for = config.retry_for;
                let sequencer = Sequencer::open(js.clone(), sc).await?;
                let store = open_bucket(&js, bucket, config.replicas, config.retry_for).await?;
                let key = format!("{component}-{}", config.instance);
                let last = read_last(&store, &key, config.retry_for).await?;
                checkpoint_revision = last.as_ref().map_or(0, |l| l.revision);
                if let Some(value) = last.and_then(|l| l.value) {
                    if value.len() < 8 {
                        return Err(HostError::Checkpoint(key));
                    }
                    let next = u64::from_be_bytes(value[..8].try_into().expect("8 bytes"));
                    handled = (next, Some(value.slice(8..)));
                }
                checkpoints = Some(store);
                Reader::Sequence {
                    sequencer,
                    next: handled.0,
                    pending: Default::default(),
                }
            }
            Channel::Keyed { stream } => {
                let mut kc = KeyedConfig::new(stream, config.partitions);
                kc.replicas = config.replicas;
                kc.retry_for = config.retry_for;
                let keyed = Keyed::open(js.clone(), kc).await?;
                if config.keyed_replica {
                    let messages = crate::nats::subscribe(
                        keyed.stream().clone(),
                        Some(format!("{stream}.in.*")),
                        1,
                        config.retry_for,
                    );
                    Reader::KeyedReplica {
                        keyed: Box::new(keyed),
                        messages,
                    }
                } else {
                    Reader::Keyed {
                        keyed: Box::new(keyed),
                        session: None,
                        announce: false,
                    }
                }
            }
        };
        let in_flight = match &reader {
            // Renewed at the deployed consumer's ack wait, which may not be this config's.
            Reader::Consumer { consumer, .. } if config.renew_in_progress => {
                Some(InFlight::renewed(consumer.cached_info().config.ack_wait))
            }
            _ => None,
        };
        Ok(Host {
            inner: Arc::new(Inner {
                js,
                plan: plan.clone(),
                deployment,
                config,
                channel,
                id_prefix,
                by_partition,
                reader: Mutex::new(reader),
                handled: Mutex::new(handled),
                checkpoints,
                checkpoint_revision: Mutex::new(checkpoint_revision),
                in_flight,
            }),
        })
    }

    /// How the plan gives this component its inputs.
    pub fn channel(&self) -> &Channel {
        &self.inner.channel
    }

    /// The state of the last checkpoint (global order) or of the session's last commit (keyed
    /// order; known once the session started, and handed over with its [`Input::Assigned`]),
    /// `None` when there is none.
    pub async fn restored(&self) -> Option<Bytes> {
        if let Reader::Keyed {
            session: Some(s), ..
        } = &*self.inner.reader.lock().await
        {
            let (offset, state) = s.committed();
            return (offset > 0).then(|| state.clone());
        }
        self.inner.handled.lock().await.1.clone()
    }

    /// The next input, in the order the plan requires. Waits until there is one.
    pub async fn next(&self) -> Result<Delivery, HostError> {
        let mut reader = self.inner.reader.lock().await;
        match &mut *reader {
            Reader::Consumer {
                consumer,
                barrier,
                pending,
            } => {
                let mut budget = RetryBudget::new(
                    consumer.cached_info().name.clone(),
                    self.inner.config.retry_for,
                );
                let mut quiet_since = tokio::time::Instant::now();
                loop {
                    if let Some(d) = pending.pop_front() {
                        return Ok(d);
                    }
                    if let Some(b) = barrier {
                        // Any instance may release any partition: the server stores each release
                        // once, and the durable consumer hands it to this instance. What keeps a
                        // partition from being released is worth a word to the operator.
                        for event in b.poll().await? {
                            match event {
                                BarrierEvent::Stalled { partition, missing } => tracing::warn!(
                                    component = %self.inner.config.component,
                                    instance = %self.inner.config.instance,
                                    %partition,
                                    missing = %missing.join(", "),
                                    "partition waits for seals"
                                ),
                                BarrierEvent::Inconsistent { partition, reason } => {
                                    tracing::error!(
                                        component = %self.inner.config.component,
                                        instance = %self.inner.config.instance,
                                        %partition,
                                        %reason,
                                        "partition is sealed but not released"
                                    )
                                }
                                _ => {}
                            }
                        }
                    }
                    // A fetch ends after its expiry with what it got; one that the server never
                    // answers (it is gone, the client reconnects) is cut off a second later.
                    let fetched =
                        tokio::time::timeout(FETCH_EXPIRES + Duration::from_secs(1), async {
                            let mut got = Vec::new();
                            let mut batch = match consumer
                                .fetch()
                                .max_messages(256)
                                .expires(FETCH_EXPIRES)
                                .messages()
                                .await
                            {
                                Ok(b) => b,
                                Err(e) => return (got, Some(BoxError::from(e))),
                            };
                            while let Some(m) = batch.next().await {
                                match m {
                                    Ok(m) => got.push(m),
                                    Err(e) => return (got, Some(BoxError::from(e))),
                                }
                            }
                            (got, None)
                        })
                        .await;
                    let (got, failure) = fetched.unwrap_or_else(|_| {
                        (Vec::new(), Some("the server did not answer a fetch".into()))
                    });
                    if let Some(e) = failure {
                        budget.failed(e)?;
                        if got.is_empty() {
                            tokio::time::sleep(Duration::from_millis(100)).await;
                        }
                    }
                    for m in got {
                        let info = m.info().map_err(|e| NatsError::Refused {
                            subject: m.subject.to_string(),
                            reason: e.to_string(),
                        })?;
                        let (position, redelivered) = (info.stream_sequence, info.delivered > 1);
                        let input = if matches!(self.inner.channel, Channel::Barrier { .. }) {
                            let records =
                                crate::nats::barrier::decode(&m.payload).ok_or_else(|| {
                                    NatsError::Malformed {
                                        subject: m.subject.to_string(),
                                        sequence: position,
                                        reason: "not a batch".into(),
                                    }
                                })?;
                            let partition = m.subject.rsplit('.').next().unwrap_or_default();
                            Input::Released {
                                partition: partition.to_string(),
                                records,
                            }
                        } else {
                            Input::Message {
                                subject: m.subject.to_string(),
                                payload: m.payload.clone(),
                            }
                        };
                        let m = Arc::new(m);
                        if let Some(held) = &self.inner.in_flight {
                            held.hold(position, m.clone());
                        }
                        pending.push_back(Delivery {
                            position,
                            input,
                            redelivered,
                            ack: Some(m),
                        });
                    }
                    if !pending.is_empty() {
                        budget.worked();
                        quiet_since = tokio::time::Instant::now();
                    } else if quiet_since.elapsed() >= quiet_probe(self.inner.config.retry_for) {
                        // An empty fetch looks the same whether the stream is idle or the server
                        // is gone: ask the server, so that an outage ends in `Unavailable` after
                        // `retry_for` instead of a wait without end.
                        match consumer.get_info().await {
                            Ok(_) => budget.worked(),
                            Err(e) => budget.failed(e.into())?,
                        }
                        quiet_since = tokio::time::Instant::now();
                    }
                }
            }
            Reader::Sequence {
                sequencer,
                next,
                pending,
            } => loop {
                if let Some(s) = pending.pop_front() {
                    return Ok(Delivery {
                        position: s.position,
                        input: Input::Sequenced(s),
                        redelivered: false,
                        ack: None,
                    });
                }
                let (inputs, after) = sequencer.read_sequenced(*next, 1024).await?;
                *next = after;
                if inputs.is_empty() {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                pending.extend(inputs);
            },
            Reader::Keyed {
                keyed,
                session,
                announce,
            } => {
                if session.is_none() {
                    let w = keyed.worker(&format!(
                        "{}-{}",
                        deploy::sanitize(&self.inner.config.component),
                        self.inner.config.instance
                    ));
                    let accepted = w.accept_next().await?;
                    // Progress is per partition: a new session continues after its own commit.
                    *self.inner.handled.lock().await = (
                        accepted.committed().0 + 1,
                        Some(accepted.committed().1.clone()),
                    );
                    *session = Some(Box::new(accepted));
                    *announce = true;
                }
                let s = session.as_mut().expect("a session");
                let (committed, state) = s.committed();
                if std::mem::take(announce) {
                    // Before any of the partition's inputs: the logic must not carry the state
                    // of another partition (or of its own past) into this one.
                    return Ok(Delivery {
                        position: committed,
                        input: Input::Assigned {
                            partition: s.partition(),
                            restored: (committed > 0).then(|| state.clone()),
                        },
                        redelivered: false,
                        ack: None,
                    });
                }
                match s.next().await {
                    Ok(i) => Ok(Delivery {
                        position: i.offset,
                        input: Input::Keyed {
                            partition: s.partition(),
                            key: i.key,
                            payload: i.payload,
                        },
                        redelivered: i.offset <= s.committed().0,
                        ack: None,
                    }),
                    Err(NatsError::LeaseLost { partition }) => {
                        *session = None;
                        // What the host noted as handled was the lost partition's.
                        *self.inner.handled.lock().await = (1, None);
                        Ok(Delivery {
                            position: 0,
                            input: Input::Revoked { partition },
                            redelivered: false,
                            ack: None,
                        })
                    }
                    Err(e) => Err(e.into()),
                }
            }
            Reader::KeyedReplica { keyed, messages } => {
                let m = match messages.next().await {
                    Some(m) => m?,
                    None => {
                        return Err(NatsError::Unavailable {
                            subject: format!("{}.in.*", keyed.config().name),
                            waited: self.inner.config.retry_for,
                            source: "the subscription ended".into(),
                        }
                        .into());
                    }
                };
                let partition = m
                    .subject
                    .rsplit('.')
                    .next()
                    .and_then(|p| p.parse().ok())
                    .ok_or_else(|| NatsError::Malformed {
                        subject: m.subject.clone(),
                        sequence: m.sequence,
                        reason: "not a keyed input subject".into(),
                    })?;
                let key = crate::nats::header(&m.headers, KEY)
                    .unwrap_or_default()
                    .to_string();
                Ok(Delivery {
                    position: m.sequence,
                    input: Input::Keyed {
                        partition,
                        key,
                        payload: m.payload,
                    },
                    redelivered: false,
                    ack: None,
                })
            }
        }
    }

    /// The inputs as a stream (see [`Host::next`]); ends never, errors are items.
    pub fn inputs(&self) -> impl futures_util::Stream<Item = Result<Delivery, HostError>> + use<> {
        futures_util::stream::unfold(self.clone(), |host| async move {
            let next = host.next().await;
            Some((next, host))
        })
    }

    /// The logic handled `delivery` and its outputs are stored: acknowledge it (barrier
    /// releases, plain messages) or note it for the next checkpoint (global and keyed orders).
    /// The acknowledgement is sent without waiting for the server's confirmation: one lost in
    /// a crash only makes the server deliver the input again, and the outputs of that second
    /// handling carry the ids of the first.
    pub async fn done(&self, delivery: &Delivery) -> Result<(), HostError> {
        if let Some(m) = &delivery.ack {
            if let Some(held) = &self.inner.in_flight {
                held.release(delivery.position);
            }
            m.ack().await.map_err(|e| NatsError::Unavailable {
                subject: m.subject.to_string(),
                waited: Duration::ZERO,
                source: e,
            })?;
        } else {
            let mut h = self.inner.handled.lock().await;
            h.0 = h.0.max(delivery.position + 1);
        }
        Ok(())
    }

    /// Stores `state` as the state after every input marked [`Host::done`]: a restarted
    /// instance resumes from here ([`Host::restored`]) and handles the inputs after it again.
    /// A no-op for the acknowledged channels (their logic keeps no state between inputs).
    pub async fn checkpoint(&self, state: Bytes) -> Result<(), HostError> {
        let (next, _) = self.inner.handled.lock().await.clone();
        if let Some(store) = &self.inner.checkpoints {
            let key = format!(
                "{}-{}",
                deploy::sanitize(&self.inner.config.component),
                self.inner.config.instance
            );
            let mut value = Vec::with_capacity(8 + state.len());
            value.extend_from_slice(&next.to_be_bytes());
            value.extend_from_slice(&state);
            // Replaces this instance's newest checkpoint and no other: an older incarnation
            // still running after a newer one checkpointed is refused (`Fenced`).
            let mut revision = self.inner.checkpoint_revision.lock().await;
            *revision = compare_and_set(
                store,
                &key,
                value.into(),
                *revision,
                self.inner.config.retry_for,
            )
            .await?;
            self.inner.handled.lock().await.1 = Some(state);
            return Ok(());
        }
        let mut reader = self.inner.reader.lock().await;
        if let Reader::Keyed {
            session: Some(s), ..
        } = &mut *reader
        {
            let offset = next.saturating_sub(1);
            if offset > 0 {
                match s.commit(offset, state).await {
                    // Another instance holds the partition now and resumes from the last commit
                    // it sees; the next input this instance gets is the partition's `Revoked`.
                    Ok(_) | Err(NatsError::Fenced { .. }) => {}
                    Err(e) => return Err(e.into()),
                }
            }
        }
        Ok(())
    }

    /// A handle that publishes this instance's outputs into `consumer`'s inputs.
    pub async fn outputs(&self, consumer: &str) -> Result<Outputs, HostError> {
        let inner = &self.inner;
        let channel = channel_of(&inner.plan, &inner.deployment, consumer)?;
        let component = deploy::sanitize(&inner.config.component);
        let producer = format!("{component}-{}", inner.config.instance);
        let keyed = format!("{component}-{KEYED}");
        let names = Names {
            producer: &producer,
            id_prefix: &inner.id_prefix,
            subject: if inner.by_partition {
                &keyed
            } else {
                &producer
            },
        };
        Outputs::open(
            inner.js.clone(),
            &inner.deployment,
            consumer,
            channel,
            names,
            &inner.config,
        )
        .await
    }
}

/// How long a fetch of the durable consumer waits for inputs before it returns what it has.
const FETCH_EXPIRES: Duration = Duration::from_millis(100);

/// How long a host's reader may fetch nothing before it asks the server whether it is there:
/// a quarter of the retry budget, between 100 ms and 2 s.
fn quiet_probe(retry_for: Duration) -> Duration {
    (retry_for / 4).clamp(Duration::from_millis(100), Duration::from_secs(2))
}
