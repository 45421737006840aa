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
use crate::nats::NatsError;
use crate::nats::barrier::{BarrierConfig, BarrierEvent, BatchRecord, SealBarrier};
use crate::nats::deploy::stream_config;
use crate::nats::sequencer::{Sequenced, Sequencer, SequencerConfig};
use crate::nats::session::{KEY, Keyed, KeyedConfig, Session};

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
        messages: Option<pull::Ordered>,
        next: u64,
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
                if let Some(value) = store.get(&key).await.map_err(|e| NatsError::Refused {
                    subject: bucket.clone(),
                    reason: e.to_string(),
                })? {
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
                    Reader::KeyedReplica {
                        keyed: Box::new(keyed),
                        messages: None,
                        next: 1,
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
            } => loop {
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
                            BarrierEvent::Inconsistent { partition, reason } => tracing::error!(
                                component = %self.inner.config.component,
                                instance = %self.inner.config.instance,
                                %partition,
                                %reason,
                                "partition is sealed but not released"
                            ),
                            _ => {}
                        }
                    }
                }
                let batch = consumer
                    .fetch()
                    .max_messages(256)
                    .expires(Duration::from_millis(100))
                    .messages()
                    .await;
                let mut batch = match batch {
                    Ok(b) => b,
                    Err(_) => {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                };
                while let Some(m) = batch.next().await {
                    let Ok(m) = m else { break };
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
            },
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
            Reader::KeyedReplica {
                keyed,
                messages,
                next,
            } => loop {
                if messages.is_none() {
                    let consumer = keyed
                        .stream()
                        .create_consumer(pull::OrderedConfig {
                            filter_subject: format!("{}.in.*", keyed.config().name),
                            deliver_policy: jetstream::consumer::DeliverPolicy::ByStartSequence {
                                start_sequence: *next,
                            },
                            ..Default::default()
                        })
                        .await;
                    match consumer {
                        Ok(c) => match c.messages().await {
                            Ok(m) => *messages = Some(m),
                            Err(_) => {
                                tokio::time::sleep(Duration::from_millis(200)).await;
                                continue;
                            }
                        },
                        Err(_) => {
                            tokio::time::sleep(Duration::from_millis(200)).await;
                            continue;
                        }
                    }
                }
                let m = match messages.as_mut().expect("a consumer").next().await {
                    Some(Ok(m)) => m,
                    // The ordered consumer failed over or ended: recreate it where we are.
                    Some(Err(_)) | None => {
                        *messages = None;
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                };
                let Ok(info) = m.info() else {
                    *messages = None;
                    continue;
                };
                let position = info.stream_sequence;
                if position < *next {
                    continue;
                }
                *next = position + 1;
                let partition = m
                    .subject
                    .rsplit('.')
                    .next()
                    .and_then(|p| p.parse().ok())
                    .ok_or_else(|| NatsError::Malformed {
                        subject: m.subject.to_string(),
                        sequence: position,
                        reason: "not a keyed input subject".into(),
                    })?;
                let key = m
                    .headers
                    .as_ref()
                    .and_then(|h| crate::nats::header(h, KEY))
                    .unwrap_or_default()
                    .to_string();
                return Ok(Delivery {
                    position,
                    input: Input::Keyed {
                        partition,
                        key,
                        payload: m.message.payload,
                    },
                    redelivered: false,
                    ack: None,
                });
            },
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
            store
                .put(&key, value.into())
                .await
                .map_err(|e| NatsError::Unavailable {
                    subject: key.clone(),
                    waited: Duration::ZERO,
                    source: e.into(),
                })?;
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
