//! The component host: a service author writes a component's logic; the plan decides how its
//! inputs arrive and how its outputs are identified.
//!
//! [`Host::open`] reads the component's place in a plan document (parsed with
//! [`crate::runtime::deploy`]'s types, so the names are the ones `blazes deploy` lists) and
//! opens the mechanism the plan puts on the component's inputs:
//!
//! | the plan gives the component | [`Host::inputs`] yields | progress ([`Host::done`], [`Host::checkpoint`]) |
//! |---|---|---|
//! | a `seal-barrier` on its input | each released partition, whole ([`Input::Released`]) | a durable consumer of the barrier's releases, acknowledged after the logic handled one |
//! | a `global-order` | the sequenced stream, in position order ([`Input::Sequenced`]) | `(next position, state)` in the plan's checkpoint bucket |
//! | a `keyed-order` | one leased session's messages, in offset order ([`Input::Keyed`]) | the session's fenced commit of `(offset, state)` |
//! | nothing | the plain stream `<spec>-<component>-in`, in stream order ([`Input::Message`]) | a durable consumer, acknowledged after the logic handled a message |
//!
//! [`Host::outputs`] publishes into a consumer component's input the way the plan gives *that*
//! component its inputs: records and seals into its barrier, inputs into its sequence (an
//! epoch-fenced producer), keyed inputs into its partitions, messages into its plain stream.
//! Every output carries an id derived from the plan's names, the producing instance and the
//! position of the input that caused it (`<spec>-<component>-<instance>:<position>:<index>`),
//! so an input that is handled again after a crash (it was not yet acknowledged or
//! checkpointed) publishes the same ids and the server stores each output once.
//!
//! The order of work for a logic is therefore: take an input, publish its outputs (each
//! `publish` returns once the server stored it), then [`Host::done`] (and, for stateful logic,
//! [`Host::checkpoint`] now and then). A process killed anywhere in that sequence resumes from
//! the last acknowledgement or checkpoint without losing an input or counting one twice.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::consumer::pull;
use async_nats::jetstream::{self, kv, stream};
use bytes::Bytes;
use futures_util::StreamExt;
use tokio::sync::Mutex;

use super::barrier::{BarrierConfig, BarrierEvent, BarrierProducer, BatchRecord, SealBarrier};
use super::deploy::{consumer_config, stream_config};
use super::sequencer::{Producer, Sequenced, Sequencer, SequencerConfig, valid_token};
use super::session::{Keyed, KeyedConfig, Session};
use super::{NatsError, headers, publish};
use crate::runtime::deploy::{
    self, ConsumerObject, DeployError, Deployment, PlanFile, StreamObject,
};

/// What went wrong in a host. One sentence each.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// The plan document could not be read or derived.
    #[error("the plan cannot be hosted: {0}")]
    Plan(#[from] DeployError),
    /// A name the host needs is not a NATS token.
    #[error("`{0}` is not a valid instance or component name (use [A-Za-z0-9_-]+)")]
    Name(String),
    /// The consumer component of an output handle gets its inputs in a way that needs another
    /// call (a barrier's records need a partition and an index, a sequence a producer).
    #[error("`{consumer}` receives {channel}; use {call} to publish to it")]
    WrongChannel {
        /// The consumer component.
        consumer: String,
        /// How it receives its inputs.
        channel: &'static str,
        /// The call that publishes to it.
        call: &'static str,
    },
    /// A durable consumer of the same name reads other subjects than this instance needs.
    #[error(
        "the durable consumer `{name}` exists with filter `{deployed}`, but this instance reads `{wanted}`; give the instance another name or redeploy"
    )]
    ConsumerDiffers {
        /// The consumer.
        name: String,
        /// Its filter on the server.
        deployed: String,
        /// The filter this instance needs.
        wanted: String,
    },
    /// A checkpoint could not be read back.
    #[error("the checkpoint of `{0}` is not one the host wrote")]
    Checkpoint(String),
    /// The engine failed.
    #[error(transparent)]
    Nats(#[from] NatsError),
}

/// How a host's instance is deployed.
#[derive(Debug, Clone)]
pub struct HostConfig {
    /// The component, as the spec names it.
    pub component: String,
    /// This instance (`[A-Za-z0-9_-]`): part of every output id and of the durable consumer's
    /// name. Instances that split a component's work need distinct names; replicas that compute
    /// the same outputs share one, so their outputs de-duplicate.
    pub instance: String,
    /// The upstream instances a seal barrier waits for (the processes that seal its
    /// partitions); empty: the producers the plan names.
    pub seal_producers: Vec<String>,
    /// Whether this instance runs the seal barrier's releases (reads every record and seal and
    /// releases complete partitions). Any number of instances may; each partition is released
    /// once. Every instance receives the releases either way. Default: true.
    pub release_barrier: bool,
    /// On a plain stream: read only the messages published with this key (one instance per
    /// key, as a grouping by field routes them), instead of every message. Default: none.
    pub input_key: Option<String>,
    /// Partitions of a keyed component (the same number for every instance and producer).
    pub partitions: u32,
    /// Raft replicas of every object the host creates (the plan's objects get the same).
    pub replicas: usize,
    /// How long an operation retries while the cluster fails over.
    pub retry_for: Duration,
    /// How long the server waits for an acknowledgement before it redelivers a message (to the
    /// restarted instance).
    pub ack_wait: Duration,
}

impl HostConfig {
    /// Instance `instance` of `component`, on a 3-node cluster.
    pub fn new(component: &str, instance: &str) -> Self {
        HostConfig {
            component: component.to_string(),
            instance: instance.to_string(),
            seal_producers: Vec::new(),
            release_barrier: true,
            input_key: None,
            partitions: 1,
            replicas: deploy::DEFAULT_REPLICAS,
            retry_for: super::DEFAULT_RETRY_FOR,
            ack_wait: deploy::ACK_WAIT,
        }
    }
}

pub use crate::runtime::deploy::Channel;

/// The channel the plan gives `component`'s inputs (a plain stream when it gives none).
pub fn channel_of(
    plan: &PlanFile,
    deployment: &Deployment,
    component: &str,
) -> Result<Channel, HostError> {
    Ok(deploy::channel_of(plan, deployment, component))
}

/// What instance `config` of a component reading `channel` opens besides the mechanism: the
/// plain input stream (if any) and its durable consumer (if any), as [`deploy::with_hosts`]
/// lists them for a host with the default configuration.
pub fn input_objects(
    deployment: &Deployment,
    channel: &Channel,
    config: &HostConfig,
) -> (Option<StreamObject>, Option<ConsumerObject>) {
    let stream = matches!(channel, Channel::Plain { .. })
        .then(|| deploy::plain_input(deployment, &config.component, config.replicas));
    let consumer = deploy::input_consumer(
        channel,
        &config.component,
        &config.instance,
        config.input_key.as_deref(),
        config.ack_wait,
    );
    (stream, consumer)
}

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
    },
}

struct Inner {
    js: jetstream::Context,
    plan: PlanFile,
    deployment: Deployment,
    config: HostConfig,
    channel: Channel,
    id_prefix: String,
    reader: Mutex<Reader>,
    /// Sequence channel: the restored state and the position after the last handled input.
    handled: Mutex<(u64, Option<Bytes>)>,
    checkpoints: Option<kv::Store>,
}

/// One instance of a component, hosted. Cloning shares the instance.
#[derive(Clone)]
pub struct Host {
    inner: Arc<Inner>,
}

fn check_name(s: &str) -> Result<(), HostError> {
    if valid_token(s) {
        Ok(())
    } else {
        Err(HostError::Name(s.to_string()))
    }
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
        let id_prefix = format!("{}-{component}-{}", deployment.prefix, config.instance);
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
                let s = super::ensure_stream(&js, stream_config(object), config.retry_for).await?;
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
                Reader::Keyed {
                    keyed: Box::new(keyed),
                    session: None,
                }
            }
        };
        Ok(Host {
            inner: Arc::new(Inner {
                js,
                plan: plan.clone(),
                deployment,
                config,
                channel,
                id_prefix,
                reader: Mutex::new(reader),
                handled: Mutex::new(handled),
                checkpoints,
            }),
        })
    }

    /// How the plan gives this component its inputs.
    pub fn channel(&self) -> &Channel {
        &self.inner.channel
    }

    /// The state of the last checkpoint (global order) or of the session's last commit (keyed
    /// order; known once the session's first input arrived), `None` when there is none.
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
                    // once, and the durable consumer hands it to this instance.
                    // Several instances poll; one that loses the race to release a partition
                    // finds its records purged and reports it inconsistent until it reads the
                    // release, so only stalls (producers that never seal) are worth a word.
                    for event in b.poll().await? {
                        if let BarrierEvent::Stalled { partition, missing } = event {
                            eprintln!(
                                "host: partition {partition} waits for seals from {}",
                                missing.join(", ")
                            );
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
                        let records = super::barrier::decode(&m.payload).ok_or_else(|| {
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
                    pending.push_back(Delivery {
                        position,
                        input,
                        redelivered,
                        ack: Some(Arc::new(m)),
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
            Reader::Keyed { keyed, session } => loop {
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
                }
                let s = session.as_mut().expect("a session");
                match s.next().await {
                    Ok(i) => {
                        return Ok(Delivery {
                            position: i.offset,
                            input: Input::Keyed {
                                partition: s.partition(),
                                key: i.key,
                                payload: i.payload,
                            },
                            redelivered: i.offset <= s.committed().0,
                            ack: None,
                        });
                    }
                    Err(NatsError::LeaseLost { .. }) => *session = None,
                    Err(e) => return Err(e.into()),
                }
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
            m.ack().await.map_err(|e| NatsError::Unavailable {
                subject: m.subject.to_string(),
                waited: Duration::ZERO,
                last: e.to_string(),
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
                    last: e.to_string(),
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
                s.commit(offset, state).await?;
            }
        }
        Ok(())
    }

    /// A handle that publishes this instance's outputs into `consumer`'s inputs.
    pub async fn outputs(&self, consumer: &str) -> Result<Outputs, HostError> {
        let inner = &self.inner;
        let channel = channel_of(&inner.plan, &inner.deployment, consumer)?;
        let producer = format!(
            "{}-{}",
            deploy::sanitize(&inner.config.component),
            inner.config.instance
        );
        Outputs::open(
            inner.js.clone(),
            &inner.deployment,
            consumer,
            channel,
            &producer,
            &inner.id_prefix,
            &inner.config,
        )
        .await
    }
}

/// The outputs of instance `config.instance` of a source (a producer without inputs, such as
/// the spec's `sources`) into `consumer`'s inputs, as `plan` deploys them.
pub async fn source_outputs(
    js: jetstream::Context,
    plan: &PlanFile,
    config: &HostConfig,
    consumer: &str,
) -> Result<Outputs, HostError> {
    check_name(&config.instance)?;
    let deployment = deploy::derive(plan, config.replicas)?;
    let channel = channel_of(plan, &deployment, consumer)?;
    let component = deploy::sanitize(&config.component);
    let producer = format!("{component}-{}", config.instance);
    let id_prefix = format!("{}-{producer}", deployment.prefix);
    Outputs::open(
        js,
        &deployment,
        consumer,
        channel,
        &producer,
        &id_prefix,
        config,
    )
    .await
}

/// Publishes one instance's outputs into a consumer component's inputs, with ids that make a
/// replayed output land once. Cloning shares the handle.
#[derive(Clone)]
pub struct Outputs {
    inner: Arc<OutputsInner>,
}

struct OutputsInner {
    js: jetstream::Context,
    consumer: String,
    channel: Channel,
    id_prefix: String,
    retry_for: Duration,
    plain_subject: String,
    barrier: Option<BarrierProducer>,
    keyed: Option<Keyed>,
    sequence: Option<Mutex<Producer>>,
}

impl Outputs {
    async fn open(
        js: jetstream::Context,
        deployment: &Deployment,
        consumer: &str,
        channel: Channel,
        producer: &str,
        id_prefix: &str,
        config: &HostConfig,
    ) -> Result<Outputs, HostError> {
        let mut barrier = None;
        let mut keyed = None;
        let mut sequence = None;
        let mut plain_subject = String::new();
        match &channel {
            Channel::Barrier { stream, producers } => {
                let ps: Vec<&str> = producers.iter().map(String::as_str).collect();
                let mut bc = BarrierConfig::new(stream, &ps);
                bc.replicas = config.replicas;
                bc.retry_for = config.retry_for;
                // The producer's records and seals need the stream to exist.
                SealBarrier::open(js.clone(), bc.clone()).await?;
                barrier = Some(BarrierProducer::new(js.clone(), &bc, producer));
            }
            Channel::Sequence { stream, .. } => {
                let mut sc = SequencerConfig::new(stream);
                sc.replicas = config.replicas;
                sc.retry_for = config.retry_for;
                let s = Sequencer::open(js.clone(), sc).await?;
                sequence = Some(Mutex::new(s.producer(producer).await?));
            }
            Channel::Keyed { stream } => {
                let mut kc = KeyedConfig::new(stream, config.partitions);
                kc.replicas = config.replicas;
                kc.retry_for = config.retry_for;
                keyed = Some(Keyed::open(js.clone(), kc).await?);
            }
            Channel::Plain { stream } => {
                let object = deploy::plain_input(deployment, consumer, config.replicas);
                super::ensure_stream(&js, stream_config(&object), config.retry_for).await?;
                plain_subject = format!("{stream}.{producer}");
            }
        }
        Ok(Outputs {
            inner: Arc::new(OutputsInner {
                js,
                consumer: consumer.to_string(),
                channel,
                id_prefix: id_prefix.to_string(),
                retry_for: config.retry_for,
                plain_subject,
                barrier,
                keyed,
                sequence,
            }),
        })
    }

    /// How the consumer receives what this handle publishes.
    pub fn channel(&self) -> &Channel {
        &self.inner.channel
    }

    /// The id of output `index` of the input at `position`.
    pub fn id(&self, position: u64, index: u32) -> String {
        format!("{}:{position}:{index}", self.inner.id_prefix)
    }

    fn wrong(&self, call: &'static str) -> HostError {
        HostError::WrongChannel {
            consumer: self.inner.consumer.clone(),
            channel: self.inner.channel.describe(),
            call,
        }
    }

    /// Publishes output `index` of the input at `position` to a consumer on a plain stream
    /// (a non-empty `key` routes it to the instance reading that key) or a keyed order (`key`
    /// chooses the partition).
    pub async fn publish(
        &self,
        position: u64,
        index: u32,
        key: &str,
        payload: Bytes,
    ) -> Result<(), HostError> {
        let id = self.id(position, index);
        let i = &self.inner;
        match &i.channel {
            Channel::Plain { .. } => {
                // A key routes the message to the instance reading that key
                // (`HostConfig::input_key`); without one, every instance reads it.
                let subject = if key.is_empty() {
                    i.plain_subject.clone()
                } else {
                    check_name(key)?;
                    format!("{}.{key}", i.plain_subject)
                };
                publish(&i.js, &subject, headers(&id, None), payload, i.retry_for).await?;
            }
            Channel::Keyed { .. } => {
                i.keyed
                    .as_ref()
                    .expect("keyed")
                    .publish(key, &id, payload)
                    .await?;
            }
            Channel::Barrier { .. } => return Err(self.wrong("`record` and `seal`")),
            Channel::Sequence { .. } => return Err(self.wrong("`send`")),
        }
        Ok(())
    }

    /// Publishes record `index` (dense from 0 per partition) of this instance for a barrier's
    /// `partition`; the id is the barrier's (`rec:<partition>:<producer>:<index>`).
    pub async fn record(
        &self,
        partition: &str,
        index: u64,
        payload: Bytes,
    ) -> Result<(), HostError> {
        let b = self
            .inner
            .barrier
            .as_ref()
            .ok_or_else(|| self.wrong("`publish`"))?;
        check_name(partition)?;
        Ok(b.record(partition, index, payload).await?)
    }

    /// Seals `partition` after `count` records of this instance.
    pub async fn seal(&self, partition: &str, count: u64) -> Result<(), HostError> {
        let b = self
            .inner
            .barrier
            .as_ref()
            .ok_or_else(|| self.wrong("`publish`"))?;
        check_name(partition)?;
        Ok(b.seal(partition, count).await?)
    }

    /// Appends `payload` to the consumer's total order (an epoch-fenced producer: a restarted
    /// instance fences the previous one and continues its sequence).
    pub async fn send(&self, payload: Bytes) -> Result<u64, HostError> {
        let p = self
            .inner
            .sequence
            .as_ref()
            .ok_or_else(|| self.wrong("`publish`"))?;
        Ok(p.lock().await.send(payload).await?.position)
    }
}

async fn get_stream(
    js: &jetstream::Context,
    name: &str,
    retry_for: Duration,
) -> Result<stream::Stream, NatsError> {
    let started = tokio::time::Instant::now();
    loop {
        match js.get_stream(name).await {
            Ok(s) => return Ok(s),
            Err(e) if started.elapsed() >= retry_for => {
                return Err(NatsError::Unavailable {
                    subject: name.to_string(),
                    waited: started.elapsed(),
                    last: e.to_string(),
                });
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// Opens the durable consumer `wanted` (creating it if no deployment did). One that exists with
/// another filter would hand this instance other inputs than it needs: refused.
async fn durable_consumer(
    s: &stream::Stream,
    wanted: &ConsumerObject,
    retry_for: Duration,
) -> Result<jetstream::consumer::Consumer<pull::Config>, HostError> {
    let name = wanted.name.clone();
    let config = consumer_config(wanted, None);
    let started = tokio::time::Instant::now();
    loop {
        match s.get_or_create_consumer(&name, config.clone()).await {
            Ok(c) => {
                let deployed = c.cached_info().config.filter_subject.clone();
                if deployed != wanted.filter {
                    return Err(HostError::ConsumerDiffers {
                        name,
                        deployed,
                        wanted: wanted.filter.clone(),
                    });
                }
                return Ok(c);
            }
            Err(e) if started.elapsed() >= retry_for => {
                return Err(NatsError::Unavailable {
                    subject: name,
                    waited: started.elapsed(),
                    last: e.to_string(),
                }
                .into());
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

async fn open_bucket(
    js: &jetstream::Context,
    bucket: &str,
    replicas: usize,
    retry_for: Duration,
) -> Result<kv::Store, NatsError> {
    let started = tokio::time::Instant::now();
    loop {
        let store = match js.get_key_value(bucket).await {
            Ok(s) => Ok(s),
            Err(_) => js
                .create_key_value(kv::Config {
                    bucket: bucket.to_string(),
                    history: deploy::CHECKPOINT_HISTORY,
                    num_replicas: replicas,
                    ..Default::default()
                })
                .await
                .map_err(|e| e.to_string()),
        };
        match store {
            Ok(s) => return Ok(s),
            Err(e) if started.elapsed() >= retry_for => {
                return Err(NatsError::Unavailable {
                    subject: bucket.to_string(),
                    waited: started.elapsed(),
                    last: e,
                });
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// The plan's components that have a mechanism on their inputs, by name (what a host would
/// open for each).
pub fn channels(plan: &PlanFile, replicas: usize) -> Result<BTreeMap<String, Channel>, HostError> {
    let deployment = deploy::derive(plan, replicas)?;
    let mut out = BTreeMap::new();
    for m in &plan.mechanisms {
        if let Some(c) = &m.component
            && m.kind != "add-seal"
        {
            out.insert(c.clone(), channel_of(plan, &deployment, c)?);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::deploy::{Object, read_plan};

    fn plan(mechanisms: &str) -> PlanFile {
        let doc = format!(
            r#"{{"version": 2, "files": [{{"path": "s.yaml", "name": "wc", "status": "repaired", "mechanisms": [{mechanisms}]}}]}}"#
        );
        read_plan(&doc).unwrap().remove(0)
    }

    #[test]
    fn channels_are_named_as_deploy_lists_them() {
        let p = plan(
            r#"{"kind": "add-seal", "source": "tweets", "key": ["batch"]},
               {"kind": "seal-barrier", "component": "Count", "input": "words", "key": ["batch"], "producers": ["tweets"]},
               {"kind": "global-order", "component": "Rank"},
               {"kind": "keyed-order", "component": "Report", "key": ["id"]}"#,
        );
        let d = deploy::derive(&p, 1).unwrap();
        let listed: Vec<&str> = d.objects().map(Object::name).collect();
        let c = channels(&p, 1).unwrap();
        assert_eq!(
            c["Count"],
            Channel::Barrier {
                stream: "wc-Count-words-seal".into(),
                producers: vec!["tweets".into()]
            }
        );
        assert_eq!(
            c["Rank"],
            Channel::Sequence {
                stream: "wc-Rank-seq".into(),
                checkpoints: "wc-Rank-replicas".into()
            }
        );
        assert_eq!(
            c["Report"],
            Channel::Keyed {
                stream: "wc-Report-keyed".into()
            }
        );
        for channel in c.values() {
            let name = match channel {
                Channel::Barrier { stream, .. }
                | Channel::Sequence { stream, .. }
                | Channel::Keyed { stream }
                | Channel::Plain { stream } => stream,
            };
            assert!(
                listed.contains(&name.as_str()),
                "{name} is not in {listed:?}"
            );
        }
        // A component without a mechanism reads the plain stream deploy names for it.
        assert_eq!(
            channel_of(&p, &d, "Commit").unwrap(),
            Channel::Plain {
                stream: "wc-Commit-in".into()
            }
        );
    }

    /// What a host with the default configuration opens besides the mechanism, for instances
    /// `0..n` of every component of `p`.
    fn opened(p: &PlanFile, components: &[&str], instances: &[&str]) -> Vec<Object> {
        let d = deploy::derive(p, 1).unwrap();
        let mut out = Vec::new();
        for c in components {
            let channel = channel_of(p, &d, c).unwrap();
            for (n, i) in instances.iter().enumerate() {
                let mut config = HostConfig::new(c, i);
                config.replicas = 1;
                let (stream, consumer) = input_objects(&d, &channel, &config);
                if n == 0 {
                    out.extend(stream.map(Object::Stream));
                }
                out.extend(consumer.map(Object::Consumer));
            }
        }
        out
    }

    #[test]
    fn the_host_opens_exactly_what_deploy_lists() {
        let p = plan(
            r#"{"kind": "add-seal", "source": "tweets", "key": ["batch"]},
               {"kind": "seal-barrier", "component": "Count", "input": "words", "key": ["batch"], "producers": ["tweets"]},
               {"kind": "global-order", "component": "Rank"},
               {"kind": "keyed-order", "component": "Report", "key": ["id"]}"#,
        );
        let components = ["Split", "Count", "Rank", "Report", "Commit"];
        let names: Vec<String> = components.iter().map(|c| c.to_string()).collect();
        let listed = |instances: usize| -> Vec<Object> {
            let d =
                deploy::with_hosts(&p, deploy::derive(&p, 1).unwrap(), &names, instances).unwrap();
            d.hosted
                .iter()
                .flat_map(|h| h.objects.iter().map(|(_, o)| o.clone()))
                .collect()
        };
        assert_eq!(opened(&p, &components, &["0"]), listed(1));
        assert_eq!(opened(&p, &components, &["0", "1", "2"]), listed(3));
        assert_eq!(
            listed(1).len(),
            5,
            "Split and Commit: stream and consumer; Count: consumer"
        );
        // Negative control: an instance named otherwise than deploy numbers them opens a
        // consumer deploy does not list.
        assert_ne!(opened(&p, &components, &["a"]), listed(1));
        // A key-routed reader reads other subjects than the listed consumer.
        let d = deploy::derive(&p, 1).unwrap();
        let mut keyed = HostConfig::new("Commit", "0");
        keyed.input_key = Some("0".into());
        let channel = channel_of(&p, &d, "Commit").unwrap();
        let (_, consumer) = input_objects(&d, &channel, &keyed);
        assert!(!listed(1).contains(&Object::Consumer(consumer.unwrap())));
    }

    #[test]
    fn wrong_channel_errors_are_one_sentence() {
        let e = HostError::WrongChannel {
            consumer: "Count".into(),
            channel: Channel::Barrier {
                stream: String::new(),
                producers: vec![],
            }
            .describe(),
            call: "`record` and `seal`",
        };
        assert_eq!(
            e.to_string(),
            "`Count` receives its inputs through a seal barrier; use `record` and `seal` to publish to it"
        );
        assert!(HostError::Name("a.b".into()).to_string().contains("`a.b`"));
    }
}
