//! Replicated state machine and deduplication on JetStream.
//!
//! Every [`Replica`] reads the sequencer's stream ([`super::sequencer`]) in stream order and
//! applies each input to its own copy of a deterministic [`StateMachine`], so all replicas pass
//! through the same states and produce the same outputs. Output `i` of the input at position
//! `n` gets the id `<component>:<n>:<i>` and is published to the output stream `<outputs>` on
//! `<outputs>.<component>` with that id as `Nats-Msg-Id`: whichever replica publishes it first
//! stores it, the server drops the others' copies inside the duplicate window. A replica
//! publishes an input's outputs, and waits for their acknowledgements, before it applies the
//! next input, so the first copies in the output stream are in position order.
//!
//! A replica checkpoints `(next position, output digest, state)` under its own key in the KV
//! bucket `<checkpoints>` after the outputs of the covered inputs are acknowledged (output
//! commit), and recovers from it. Outputs it republishes after a recovery carry the same ids;
//! those that arrive after the duplicate window are dropped downstream by [`Dedup`], which keeps
//! a durable high-water mark per (consumer, upstream) in a KV bucket, advanced with
//! compare-and-set on the key's revision.
//!
//! The digest is a running FNV-1a hash over every output a replica produced, in order: two
//! replicas at the same position with the same digest produced identical outputs.

use std::collections::BTreeMap;
use std::time::Duration;

use async_nats::jetstream::{self, kv, stream};
use bytes::Bytes;

use super::keyvalue::{Last, compare_and_set, read_last};
use super::sequencer::{Sequencer, read_sequenced, valid_token};
use super::{NatsError, StoredMessage, ensure_bucket, headers, publish};
pub use crate::smr::StateMachine;

/// Header: the component that produced an output.
pub const UPSTREAM: &str = "Blazes-Upstream";
/// Header: the input position an output derives from.
pub const POSITION: &str = "Blazes-Position";
/// Header: the output's index among its input's outputs.
pub const INDEX: &str = "Blazes-Index";
/// Header: the replica whose copy was stored.
pub const REPLICA: &str = "Blazes-Replica";

/// How output ids are chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputIds {
    /// `<component>:<position>:<index>`: the same on every replica and every replay.
    Derived,
    /// No message id: the negative control of the tests (every copy is stored); nothing else.
    Off,
}

/// A replica's place in the deployment.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ReplicaConfig {
    /// The replicated component (`[A-Za-z0-9_-]`): names its outputs.
    pub component: String,
    /// This replica (`[A-Za-z0-9_-]`): names its checkpoint.
    pub replica: String,
    /// The output stream (created if missing).
    pub outputs: String,
    /// The checkpoint bucket (created if missing).
    pub checkpoints: String,
    /// Checkpoint after this many inputs (0: only on [`Replica::checkpoint`]).
    pub checkpoint_every: u64,
    /// Raft replicas of the output stream and the bucket.
    pub replicas: usize,
    /// The output stream's duplicate window.
    pub duplicate_window: Duration,
    /// How long a write retries while the cluster fails over.
    pub retry_for: Duration,
    /// Output ids (always [`OutputIds::Derived`] outside the tests).
    pub output_ids: OutputIds,
    /// A step that fails to publish forgets the outputs it applied and reads the input again:
    /// the negative control of the failure-atomicity test (the retried step applies an input
    /// twice); nothing else.
    #[doc(hidden)]
    pub forget_unpublished: bool,
}

impl ReplicaConfig {
    /// Replica `replica` of `component`, outputs to `<component>-out`, checkpoints in
    /// `<component>-replicas` every 64 inputs.
    pub fn new(component: &str, replica: &str) -> Self {
        ReplicaConfig {
            component: component.to_string(),
            replica: replica.to_string(),
            outputs: format!("{component}-out"),
            checkpoints: format!("{component}-replicas"),
            checkpoint_every: 64,
            replicas: 3,
            duplicate_window: Duration::from_secs(120),
            retry_for: super::DEFAULT_RETRY_FOR,
            output_ids: OutputIds::Derived,
            forget_unpublished: false,
        }
    }
}

setters!(ReplicaConfig {
    /// The output stream (created if missing; default: `<component>-out`).
    outputs: String,
    /// The checkpoint bucket (created if missing; default: `<component>-replicas`).
    checkpoints: String,
    /// Checkpoint after this many inputs (0: only on [`Replica::checkpoint`]; default: 64).
    checkpoint_every: u64,
    /// Raft replicas of the output stream and the bucket (default: 3).
    replicas: usize,
    /// The output stream's duplicate window (default: 2 min).
    duplicate_window: Duration,
    /// How long a write retries while the cluster fails over.
    retry_for: Duration,
});

/// One replica of a component.
pub struct Replica<M: StateMachine> {
    js: jetstream::Context,
    input: stream::Stream,
    kv: kv::Store,
    config: ReplicaConfig,
    machine: M,
    next_position: u64,
    digest: u64,
    since_checkpoint: u64,
    /// Outputs of applied inputs not yet acknowledged by the server, in order: (position,
    /// index, payload). The state has moved past their inputs; the next step or checkpoint
    /// publishes them first.
    unpublished: std::collections::VecDeque<(u64, u32, Bytes)>,
    /// The revision of this replica's newest checkpoint (0: none): the next one replaces it,
    /// and an older incarnation's write after it is refused.
    checkpoint_revision: u64,
}

/// A replica's durable checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// First input position not reflected in the state.
    pub next_position: u64,
    /// Running hash of every output produced before `next_position`.
    pub digest: u64,
    /// The state machine's snapshot.
    pub state: Vec<u8>,
}

impl Checkpoint {
    fn encode(&self) -> Bytes {
        let mut v = Vec::with_capacity(16 + self.state.len());
        v.extend_from_slice(&self.next_position.to_be_bytes());
        v.extend_from_slice(&self.digest.to_be_bytes());
        v.extend_from_slice(&self.state);
        v.into()
    }

    /// Decodes a checkpoint value (`None` if it is not one).
    pub fn decode(bytes: &[u8]) -> Option<Checkpoint> {
        if bytes.len() < 16 {
            return None;
        }
        Some(Checkpoint {
            next_position: u64::from_be_bytes(bytes[..8].try_into().ok()?),
            digest: u64::from_be_bytes(bytes[8..16].try_into().ok()?),
            state: bytes[16..].to_vec(),
        })
    }
}

/// FNV-1a over the output's identity and bytes, chained.
fn chain(digest: u64, position: u64, index: u32, payload: &[u8]) -> u64 {
    let mut h = digest ^ 0xcbf2_9ce4_8422_2325;
    for b in position
        .to_be_bytes()
        .iter()
        .chain(&index.to_be_bytes())
        .chain(payload)
    {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

impl<M: StateMachine> Replica<M> {
    /// Opens replica `config.replica` of a component fed by `input`, recovering from its
    /// checkpoint if it has one (otherwise starting from `initial`).
    pub async fn open(
        js: jetstream::Context,
        input: &Sequencer,
        config: ReplicaConfig,
        initial: M,
    ) -> Result<Self, NatsError> {
        assert!(valid_token(&config.component) && valid_token(&config.replica));
        super::ensure_stream(
            &js,
            stream::Config {
                name: config.outputs.clone(),
                subjects: vec![format!("{}.>", config.outputs)],
                num_replicas: config.replicas,
                duplicate_window: config.duplicate_window,
                ..Default::default()
            },
            config.retry_for,
        )
        .await?;
        let input_stream = input.stream().clone();
        let kv = ensure_bucket(&js, &config.checkpoints, config.replicas, config.retry_for).await?;
        let mut replica = Replica {
            js,
            input: input_stream,
            kv,
            config,
            machine: initial,
            next_position: 1,
            digest: 0,
            since_checkpoint: 0,
            unpublished: Default::default(),
            checkpoint_revision: 0,
        };
        let last = read_last(
            &replica.kv,
            &replica.config.replica,
            replica.config.retry_for,
        )
        .await?;
        replica.checkpoint_revision = last.as_ref().map_or(0, |l| l.revision);
        if let Some(Last {
            value: Some(value),
            revision,
        }) = last
        {
            let checkpoint = Checkpoint::decode(&value).ok_or_else(|| NatsError::Malformed {
                subject: format!("{}.{}", replica.config.checkpoints, replica.config.replica),
                sequence: revision,
                reason: "not a checkpoint".into(),
            })?;
            replica.machine = M::restore(&checkpoint.state).map_err(|e| NatsError::Malformed {
                subject: format!("{}.{}", replica.config.checkpoints, replica.config.replica),
                sequence: revision,
                reason: e.to_string(),
            })?;
            replica.next_position = checkpoint.next_position;
            replica.digest = checkpoint.digest;
        }
        Ok(replica)
    }

    /// The first input position not applied yet.
    pub fn next_position(&self) -> u64 {
        self.next_position
    }

    /// The running hash of every output this replica's state has produced.
    pub fn digest(&self) -> u64 {
        self.digest
    }

    /// The state machine.
    pub fn machine(&self) -> &M {
        &self.machine
    }

    /// Applies up to `max` new inputs in order, publishing each input's outputs (and waiting
    /// for their acknowledgements) before the next input; returns how many were applied.
    ///
    /// Failure-atomic: an input is applied once. When a publish fails (the cluster stayed
    /// unavailable for `retry_for`), the state and [`Replica::next_position`] are past the input
    /// and its outputs not yet stored are kept; the next `step` (or [`Replica::checkpoint`])
    /// publishes them, under the same ids, before anything else.
    pub async fn step(&mut self, max: usize) -> Result<usize, NatsError> {
        self.publish_pending().await?;
        self.checkpoint_if_due().await?;
        let (inputs, next) =
            read_sequenced(&self.input, self.next_position, max, self.config.retry_for).await?;
        let applied = inputs.len();
        for input in inputs {
            let outputs = self.machine.apply(&input.payload);
            for (i, payload) in outputs.into_iter().enumerate() {
                let index = i as u32;
                self.digest = chain(self.digest, input.position, index, &payload);
                self.unpublished
                    .push_back((input.position, index, payload.into()));
            }
            self.next_position = input.position + 1;
            self.since_checkpoint += 1;
            self.publish_pending().await?;
            self.checkpoint_if_due().await?;
        }
        self.next_position = self.next_position.max(next);
        Ok(applied)
    }

    /// Publishes the outputs of applied inputs, oldest first, each removed once stored.
    async fn publish_pending(&mut self) -> Result<(), NatsError> {
        let subject = format!("{}.{}", self.config.outputs, self.config.component);
        while let Some((position, index, payload)) = self.unpublished.front().cloned() {
            let id = match self.config.output_ids {
                OutputIds::Derived => format!("{}:{position}:{index}", self.config.component),
                // A fresh id per copy: what a replica that numbers its own outputs does.
                OutputIds::Off => format!(
                    "{}:{}:{position}:{index}",
                    self.config.replica, self.config.component
                ),
            };
            let mut h = headers(&id, None);
            h.insert(UPSTREAM, self.config.component.as_str());
            h.insert(POSITION, position.to_string().as_str());
            h.insert(INDEX, index.to_string().as_str());
            h.insert(REPLICA, self.config.replica.as_str());
            if let Err(e) = publish(&self.js, &subject, h, payload, self.config.retry_for).await {
                if self.config.forget_unpublished {
                    self.next_position = position;
                    self.unpublished.clear();
                }
                return Err(e);
            }
            self.unpublished.pop_front();
        }
        Ok(())
    }

    async fn checkpoint_if_due(&mut self) -> Result<(), NatsError> {
        if self.config.checkpoint_every > 0 && self.since_checkpoint >= self.config.checkpoint_every
        {
            self.checkpoint().await?;
        }
        Ok(())
    }

    /// Writes the checkpoint, after publishing every output it covers (output commit).
    pub async fn checkpoint(&mut self) -> Result<(), NatsError> {
        self.publish_pending().await?;
        let value = Checkpoint {
            next_position: self.next_position,
            digest: self.digest,
            state: self.machine.snapshot(),
        }
        .encode();
        self.checkpoint_revision = compare_and_set(
            &self.kv,
            &self.config.replica,
            value,
            self.checkpoint_revision,
            self.config.retry_for,
        )
        .await?;
        self.since_checkpoint = 0;
        Ok(())
    }
}

/// A downstream consumer's durable de-duplication: per upstream component, the highest
/// (position, index) it has admitted, in a KV bucket under `<consumer>.<upstream>`.
pub struct Dedup {
    kv: kv::Store,
    consumer: String,
    retry_for: Duration,
    /// upstream -> (high-water, revision of its key, changed since the last commit)
    marks: BTreeMap<String, ((u64, u32), u64, bool)>,
}

impl Dedup {
    /// Opens consumer `consumer`'s marks in `bucket` (created if missing).
    pub async fn open(
        js: &jetstream::Context,
        bucket: &str,
        consumer: &str,
        replicas: usize,
    ) -> Result<Self, NatsError> {
        assert!(valid_token(consumer));
        let retry_for = super::DEFAULT_RETRY_FOR;
        let kv = ensure_bucket(js, bucket, replicas, retry_for).await?;
        Ok(Dedup {
            kv,
            consumer: consumer.to_string(),
            retry_for,
            marks: BTreeMap::new(),
        })
    }

    async fn mark(&mut self, upstream: &str) -> Result<&mut ((u64, u32), u64, bool), NatsError> {
        if !self.marks.contains_key(upstream) {
            let key = format!("{}.{upstream}", self.consumer);
            let loaded = match read_last(&self.kv, &key, self.retry_for).await? {
                None => ((0, 0), 0, false),
                Some(Last {
                    value: None,
                    revision,
                }) => ((0, 0), revision, false),
                Some(e) => {
                    let text =
                        String::from_utf8_lossy(e.value.as_deref().unwrap_or_default()).to_string();
                    let parsed = text
                        .split_once(':')
                        .and_then(|(p, i)| Some((p.parse().ok()?, i.parse().ok()?)));
                    let mark = parsed.ok_or_else(|| NatsError::Malformed {
                        subject: key.clone(),
                        sequence: e.revision,
                        reason: format!("high-water mark `{text}` is not `position:index`"),
                    })?;
                    (mark, e.revision, false)
                }
            };
            self.marks.insert(upstream.to_string(), loaded);
        }
        Ok(self.marks.get_mut(upstream).expect("inserted"))
    }

    /// Keeps the outputs above their upstream's high-water mark (advancing it, in memory) and
    /// drops the rest. Outputs of one upstream must come in their stream's order.
    pub async fn filter(
        &mut self,
        outputs: Vec<StoredMessage>,
    ) -> Result<Vec<StoredMessage>, NatsError> {
        let mut kept = Vec::new();
        for m in outputs {
            let (Some(upstream), Some(position), Some(index)) = (
                m.header(UPSTREAM).map(str::to_string),
                m.header(POSITION).and_then(|v| v.parse::<u64>().ok()),
                m.header(INDEX).and_then(|v| v.parse::<u32>().ok()),
            ) else {
                return Err(NatsError::Malformed {
                    subject: m.subject.clone(),
                    sequence: m.sequence,
                    reason: "an output needs Blazes-Upstream, Blazes-Position and Blazes-Index"
                        .into(),
                });
            };
            let mark = self.mark(&upstream).await?;
            if (position, index) > mark.0 {
                mark.0 = (position, index);
                mark.2 = true;
                kept.push(m);
            }
        }
        Ok(kept)
    }

    /// Makes the marks durable; call after the kept outputs' effects are durable. `Fenced` if
    /// another instance of this consumer advanced a mark meanwhile.
    pub async fn commit(&mut self) -> Result<(), NatsError> {
        let consumer = self.consumer.clone();
        for (upstream, (mark, revision, changed)) in self.marks.iter_mut() {
            if !*changed {
                continue;
            }
            let key = format!("{consumer}.{upstream}");
            let value = Bytes::from(format!("{}:{}", mark.0, mark.1));
            *revision = compare_and_set(&self.kv, &key, value, *revision, self.retry_for).await?;
            *changed = false;
        }
        Ok(())
    }
}
