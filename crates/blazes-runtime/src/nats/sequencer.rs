//! Global order on JetStream: one replicated stream is the component's total order.
//!
//! The stream `<name>` holds the subjects `<name>.in.<producer>`: one subject per producer, on
//! which the producer writes a chain. The first message of each incarnation is an *epoch
//! marker* (header `Blazes-Kind: epoch`) that names the incarnation's epoch and the last
//! producer sequence already stored; every later message names its epoch and producer sequence
//! and is published with
//!
//! - `Nats-Msg-Id: <producer>:<epoch>:<seq>`, so a retry of a publish whose acknowledgement was
//!   lost (a leader killed mid-publish) is answered as a duplicate with the first copy's
//!   sequence, and
//! - `Nats-Expected-Last-Subject-Sequence: <sequence of the previous message on the subject>`,
//!   so the server stores it only directly after its predecessor.
//!
//! A restarted producer reads the last message of its subject, takes the next epoch and writes
//! its marker conditioned on that message: from then on the old incarnation's expectation is
//! stale and the server refuses its publishes ([`NatsError::Fenced`]); it is neither accepted
//! nor answered as a duplicate, because its ids carry the old epoch. The new incarnation learns
//! the last stored producer sequence ([`Producer::next_sequence`]) and resends from there, so
//! no message is lost or stored twice across the restart.
//!
//! The stream sequence is the total order: every replica reads the same stream
//! ([`Sequencer::read_sequenced`]) and so applies the same sequence of inputs.

use std::time::Duration;

use async_nats::jetstream::{self, stream};
use bytes::Bytes;

use super::{NatsError, Same, Stored, header, headers, last_on_subject, publish, publish_to};

/// Header: `epoch` for an epoch marker, `data` for an input.
pub const KIND: &str = "Blazes-Kind";
/// Header: the producer's epoch (incarnation number, from 1).
pub const EPOCH: &str = "Blazes-Epoch";
/// Header: the producer sequence (from 1; a marker carries the last one stored before it).
pub const SEQ: &str = "Blazes-Seq";
/// Header: the producer's id.
pub const PRODUCER: &str = "Blazes-Producer";

/// Where a sequencer lives and how it is replicated.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SequencerConfig {
    /// Stream name and subject prefix (`[A-Za-z0-9_-]`).
    pub name: String,
    /// Raft replicas of the stream (3 for a 3-node cluster).
    pub replicas: usize,
    /// The server's duplicate window for message ids.
    pub duplicate_window: Duration,
    /// How long an operation retries while the cluster fails over.
    pub retry_for: Duration,
}

impl SequencerConfig {
    /// A 3-way replicated sequencer named `name` with a two-minute duplicate window.
    pub fn new(name: &str) -> Self {
        SequencerConfig {
            name: name.to_string(),
            replicas: 3,
            duplicate_window: Duration::from_secs(120),
            retry_for: super::DEFAULT_RETRY_FOR,
        }
    }
}

setters!(SequencerConfig {
    /// Raft replicas of the stream (default: 3).
    replicas: usize,
    /// The server's duplicate window for message ids (default: 2 min).
    duplicate_window: Duration,
    /// How long an operation retries while the cluster fails over.
    retry_for: Duration,
});

/// A sequenced stream: producers write into it, replicas read it in order.
#[derive(Clone)]
pub struct Sequencer {
    js: jetstream::Context,
    stream: stream::Stream,
    config: SequencerConfig,
}

/// One input in the total order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sequenced {
    /// Position in the total order (the stream sequence).
    pub position: u64,
    /// The producer.
    pub producer: String,
    /// The producer's epoch when it wrote the input.
    pub epoch: u64,
    /// The producer's sequence number.
    pub seq: u64,
    /// The input.
    pub payload: Bytes,
}

/// What [`Producer::send`] stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sent {
    /// Position in the total order.
    pub position: u64,
    /// The producer sequence of the message.
    pub seq: u64,
    /// The server had stored this id already (a retry of a landed publish).
    pub duplicate: bool,
}

impl Sequencer {
    /// Opens (creating if needed) the sequencer's stream.
    pub async fn open(js: jetstream::Context, config: SequencerConfig) -> Result<Self, NatsError> {
        let stream = super::ensure_stream(
            &js,
            stream::Config {
                name: config.name.clone(),
                subjects: vec![format!("{}.in.*", config.name)],
                num_replicas: config.replicas,
                duplicate_window: config.duplicate_window,
                ..Default::default()
            },
            config.retry_for,
        )
        .await?;
        Ok(Sequencer { js, stream, config })
    }

    /// The stream.
    pub fn stream(&self) -> &stream::Stream {
        &self.stream
    }

    /// The stream's name.
    pub fn stream_name(&self) -> &str {
        &self.config.name
    }

    /// The subject a producer writes on.
    pub fn producer_subject(&self, producer: &str) -> String {
        format!("{}.in.{producer}", self.config.name)
    }

    /// Registers a new incarnation of `producer` (`[A-Za-z0-9_-]`): the next epoch, fencing
    /// every older one.
    pub async fn producer(&self, producer: &str) -> Result<Producer, NatsError> {
        self.producer_with(producer, Fencing::Enforced).await
    }

    /// [`Sequencer::producer`] with a fencing mode; [`Fencing::Off`] exists for the negative
    /// control of the tests (a sequencer without the server-side check) and nothing else.
    #[doc(hidden)]
    pub async fn producer_with(
        &self,
        producer: &str,
        fencing: Fencing,
    ) -> Result<Producer, NatsError> {
        assert!(
            valid_token(producer),
            "producer id `{producer}` must be [A-Za-z0-9_-]+"
        );
        let subject = self.producer_subject(producer);
        let started = tokio::time::Instant::now();
        loop {
            let last = last_on_subject(&self.stream, &subject, self.config.retry_for).await?;
            let (expect, epoch, stored_seq) = match &last {
                None => (0, 1, 0),
                Some(m) => {
                    let (epoch, seq) = epoch_and_seq(m)?;
                    (m.sequence, epoch + 1, seq)
                }
            };
            // The nonce keeps two incarnations racing for the same epoch apart: the loser is
            // refused (and retries with the next epoch) instead of answered as a duplicate.
            let id = format!("{producer}:{epoch}:epoch:{}", super::nonce());
            let mut h = headers(&id, Some((&subject, expect)));
            h.insert(KIND, "epoch");
            h.insert(EPOCH, epoch.to_string().as_str());
            h.insert(SEQ, stored_seq.to_string().as_str());
            h.insert(PRODUCER, producer);
            match publish(&self.js, &subject, h, Bytes::new(), self.config.retry_for).await {
                Ok(Stored { sequence, .. }) => {
                    return Ok(Producer {
                        js: self.js.clone(),
                        subject,
                        producer: producer.to_string(),
                        epoch,
                        last: sequence,
                        next: stored_seq + 1,
                        fencing,
                        retry_for: self.config.retry_for,
                    });
                }
                // Another incarnation registered between our read and our write: read again,
                // for as long as `retry_for` (incarnations that keep racing have a bug to see).
                Err(e @ NatsError::Fenced { .. }) if started.elapsed() >= self.config.retry_for => {
                    return Err(e);
                }
                Err(NatsError::Fenced { .. }) => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Reads up to `max` inputs at positions `>= from`, in order (epoch markers skipped), and
    /// the position to read from next.
    pub async fn read_sequenced(
        &self,
        from: u64,
        max: usize,
    ) -> Result<(Vec<Sequenced>, u64), NatsError> {
        read_sequenced(&self.stream, from, max, self.config.retry_for).await
    }
}

/// Whether the server checks a producer's expectation (the real mechanism) or not (the
/// negative control: a producer whose epoch is never checked).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fencing {
    /// Every publish is conditioned on its predecessor on the producer's subject.
    Enforced,
    /// Publishes carry their ids but no condition.
    Off,
}

/// One incarnation of a producer.
pub struct Producer {
    js: jetstream::Context,
    subject: String,
    producer: String,
    epoch: u64,
    last: u64,
    next: u64,
    fencing: Fencing,
    retry_for: Duration,
}

impl Producer {
    /// This incarnation's epoch.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The producer sequence the next [`Producer::send`] gets: one past the last one stored by
    /// any incarnation. After a restart, resend from here.
    pub fn next_sequence(&self) -> u64 {
        self.next
    }

    /// Appends `payload` to the total order. Retries with the same id while the outcome is
    /// unknown; `Fenced` if a newer incarnation exists.
    pub async fn send(&mut self, payload: Bytes) -> Result<Sent, NatsError> {
        let id = format!("{}:{}:{}", self.producer, self.epoch, self.next);
        self.send_as(&id, payload).await
    }

    /// Appends `payload` under the caller's idempotency key `id`: an input handled again after
    /// a crash sends its outputs under the ids of the first handling, and the server answers
    /// each one stored inside its duplicate window as a duplicate (the same id with other
    /// content is [`NatsError::Conflict`]). A duplicate leaves the chain where it is: the next
    /// new input follows this incarnation's last stored one.
    pub async fn send_as(&mut self, id: &str, payload: Bytes) -> Result<Sent, NatsError> {
        let seq = self.next;
        let expect = match self.fencing {
            Fencing::Enforced => Some((self.subject.as_str(), self.last)),
            Fencing::Off => None,
        };
        let mut h = headers(id, expect);
        h.insert(KIND, "data");
        h.insert(EPOCH, self.epoch.to_string().as_str());
        h.insert(SEQ, seq.to_string().as_str());
        h.insert(PRODUCER, self.producer.as_str());
        // An output replayed by another instance of a keyed component (which took the input's
        // partition over) comes on that instance's chain: the same output all the same.
        let stored = publish_to(
            &self.js,
            &self.subject,
            h,
            payload,
            self.retry_for,
            Same::Payload,
        )
        .await?;
        // A duplicate on another chain, or at or before this chain's end, was stored by an
        // earlier send (another instance's, a previous incarnation's, or this one's for an
        // input handled twice): the chain stays where it is. One after its end on this chain
        // is this send's own first attempt, whose answer was lost.
        if stored.duplicate && (stored.elsewhere || stored.sequence <= self.last) {
            return Ok(Sent {
                position: stored.sequence,
                seq,
                duplicate: true,
            });
        }
        self.last = stored.sequence;
        self.next = seq + 1;
        Ok(Sent {
            position: stored.sequence,
            seq,
            duplicate: stored.duplicate,
        })
    }
}

/// Reads inputs of a sequencer stream (see [`Sequencer::read_sequenced`]).
pub(crate) async fn read_sequenced(
    stream: &stream::Stream,
    from: u64,
    max: usize,
    retry_for: Duration,
) -> Result<(Vec<Sequenced>, u64), NatsError> {
    let messages = super::read_stream(stream, None, from, max, retry_for).await?;
    let mut next = from;
    let mut out = Vec::new();
    for m in messages {
        next = m.sequence + 1;
        if header(&m.headers, KIND) != Some("data") {
            continue;
        }
        let (epoch, seq) = epoch_and_seq(&m)?;
        let producer = header(&m.headers, PRODUCER).unwrap_or_default().to_string();
        out.push(Sequenced {
            position: m.sequence,
            producer,
            epoch,
            seq,
            payload: m.payload,
        });
    }
    Ok((out, next))
}

fn epoch_and_seq(m: &super::StoredMessage) -> Result<(u64, u64), NatsError> {
    let number = |name: &str| {
        header(&m.headers, name)
            .and_then(|v| v.parse::<u64>().ok())
            .ok_or_else(|| NatsError::Malformed {
                subject: m.subject.clone(),
                sequence: m.sequence,
                reason: format!("missing or non-numeric header {name}"),
            })
    };
    Ok((number(EPOCH)?, number(SEQ)?))
}

/// Whether `s` is a single subject token the runtime accepts as a name.
pub(crate) fn valid_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}
