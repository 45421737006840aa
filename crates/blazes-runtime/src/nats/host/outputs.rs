//! Publishing an instance's outputs into a consumer component's inputs, the way the plan gives
//! that component its inputs, with ids that make a replayed output land once.

use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream;
use bytes::Bytes;
use tokio::sync::Mutex;

use super::plan::channel_of;
use super::{Channel, HostConfig, HostError, check_name};
use crate::deploy::{self, Deployment, PlanFile};
use crate::nats::barrier::{BarrierConfig, BarrierProducer, SealBarrier};
use crate::nats::deploy::stream_config;
use crate::nats::sequencer::{Producer, Sequencer, SequencerConfig};
use crate::nats::session::{Keyed, KeyedConfig};
use crate::nats::{NatsError, headers, publish};

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
    let names = Names {
        producer: &producer,
        id_prefix: &id_prefix,
        subject: &producer,
    };
    Outputs::open(js, &deployment, consumer, channel, names, config).await
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
    /// The barrier's stream, for declarations, and this instance's producer name in it.
    seal_barrier: Option<(SealBarrier, String)>,
    keyed: Option<Keyed>,
    sequence: Option<Mutex<Producer>>,
}

/// How a producing instance names what it publishes.
pub(super) struct Names<'a> {
    /// Its name as a barrier's producer and a sequence's producer (`<component>-<instance>`).
    pub(super) producer: &'a str,
    /// The prefix of its output ids.
    pub(super) id_prefix: &'a str,
    /// The token of its subjects on a plain stream: the producer's, or the component's for a
    /// keyed component, whose replayed outputs must not differ by the instance that holds the
    /// partition now.
    pub(super) subject: &'a str,
}

impl Outputs {
    pub(super) async fn open(
        js: jetstream::Context,
        deployment: &Deployment,
        consumer: &str,
        channel: Channel,
        names: Names<'_>,
        config: &HostConfig,
    ) -> Result<Outputs, HostError> {
        let Names {
            producer,
            id_prefix,
            subject,
        } = names;
        let mut barrier = None;
        let mut seal_barrier = None;
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
                seal_barrier = Some((
                    SealBarrier::open(js.clone(), bc.clone()).await?,
                    producer.to_string(),
                ));
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
                crate::nats::ensure_stream(&js, stream_config(&object), config.retry_for).await?;
                plain_subject = format!("{stream}.{subject}");
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
                seal_barrier,
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

    /// Declares that the barrier's `partition` waits for this instance's seal alone, instead of
    /// every producer the barrier waits for (a partition only this instance writes). Call it
    /// before the partition's first seal; a partition declared before (by a previous
    /// incarnation) keeps its first declaration.
    pub async fn declare_sole_producer(&self, partition: &str) -> Result<(), HostError> {
        let Some((b, producer)) = &self.inner.seal_barrier else {
            return Err(self.wrong("`publish`"));
        };
        check_name(partition)?;
        match b.declare(partition, &[producer]).await {
            Ok(()) | Err(NatsError::Fenced { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Appends output `index` of the input at `position` to the consumer's total order, and
    /// returns its place in it. The producer is epoch-fenced (a restarted instance fences the
    /// previous one and continues its chain) and the id is the input's, as [`Outputs::publish`]
    /// gives it: an input handled again after a crash sends its outputs under the same ids,
    /// and each lands in the order once (inside the server's duplicate window).
    pub async fn send(&self, position: u64, index: u32, payload: Bytes) -> Result<u64, HostError> {
        let p = self
            .inner
            .sequence
            .as_ref()
            .ok_or_else(|| self.wrong("`publish`"))?;
        let id = self.id(position, index);
        Ok(p.lock().await.send_as(&id, payload).await?.position)
    }
}
