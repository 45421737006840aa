//! The coordination mechanisms on NATS JetStream (cargo feature `nats`).
//!
//! The in-process cores next door run in one process; these run on a replicated JetStream
//! cluster (Raft-replicated streams), so producers, workers, barriers and replicas can live on
//! different machines. Nothing here is a log or a consensus protocol of its own: every guarantee
//! rests on a check the *server* makes when it stores a message, so that a client that is slow,
//! paused or partitioned cannot break it:
//!
//! - `Nats-Msg-Id`: the server drops a second message with the same id inside the stream's
//!   duplicate window (and answers with the first one's sequence);
//! - `Nats-Expected-Last-Subject-Sequence` (with `-Subject`, server 2.11+): the server stores a
//!   message only if the last message on a subject (possibly another subject of the same stream)
//!   has the sequence the writer names; that is compare-and-set, and fencing;
//! - `Nats-TTL` (server 2.11+, stream `allow_msg_ttl`): the server removes a message when its TTL
//!   runs out; a lease whose expiry the server, not a client clock, decides.
//!
//! | mechanism | module | built from |
//! |---|---|---|
//! | global order | [`sequencer`] | one subject per producer, epoch markers, every publish conditioned on its predecessor |
//! | keyed order | [`session`] | TTL'd lease messages; commits and outputs conditioned on the lease subject |
//! | seal barrier | [`barrier`] | seals read from the stream, release markers created once, records purged after |
//! | replicated state machine | [`smr`] | replicas of the sequenced stream, output ids from input positions, durable high-water marks |
//!
//! Connections are the caller's: every mechanism takes an [`async_nats::jetstream::Context`]
//! built from a client connected with whatever options the deployment uses (credentials
//! file, nkey, user and password, TLS). `docs/runtime.md` lists the permissions each role needs.

pub mod barrier;
pub mod deploy;
pub mod doctor;
pub mod host;
mod keyvalue;
pub mod sequencer;
pub mod session;
pub mod smr;

use std::time::Duration;

use async_nats::HeaderMap;
use async_nats::jetstream::context::PublishErrorKind;
use async_nats::jetstream::message::PublishMessage;
use async_nats::jetstream::message::StreamMessage;
use async_nats::jetstream::{self, stream};
use bytes::Bytes;

pub use async_nats;

/// Header: the message id the server de-duplicates on.
pub const MSG_ID: &str = "Nats-Msg-Id";
/// Header: the sequence the last message on a subject must have.
pub const EXPECTED_LAST_SUBJECT_SEQUENCE: &str = "Nats-Expected-Last-Subject-Sequence";
/// Header: the subject that [`EXPECTED_LAST_SUBJECT_SEQUENCE`] is about (server 2.11+).
pub const EXPECTED_LAST_SUBJECT_SEQUENCE_SUBJECT: &str =
    "Nats-Expected-Last-Subject-Sequence-Subject";
/// Header: a message's time to live, decided by the server (server 2.11+).
pub const TTL: &str = "Nats-TTL";

/// How long a mechanism retries a publish whose outcome is unknown (a timeout while a stream
/// leader is elected, a reconnect) before it reports [`NatsError::Unavailable`]. Retries carry
/// the same message id, so a publish that did land is answered as a duplicate, not stored twice.
pub const DEFAULT_RETRY_FOR: Duration = Duration::from_secs(30);

/// An error kept as the source of another, as `async_nats` and `tokio` keep theirs.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What went wrong in a JetStream mechanism.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NatsError {
    /// The server refused a conditioned write: someone newer holds the lease, the epoch or the
    /// slot (a zombie's write, or a lost race). Not retried.
    #[error(
        "fenced: the server refused a conditioned write on `{subject}` (a newer holder exists)"
    )]
    Fenced {
        /// Subject of the refused write.
        subject: String,
    },
    /// The engine did not answer within the retry budget.
    #[error("JetStream unavailable on `{subject}` after retrying for {waited:?}: {source}")]
    Unavailable {
        /// Subject of the operation.
        subject: String,
        /// How long the mechanism retried.
        waited: Duration,
        /// The last error seen: the client's own error (a publish, consumer or KV error of
        /// `async_nats`) when there was one, downcast it to act on its kind.
        source: BoxError,
    },
    /// The engine refused the operation for another reason (permissions, configuration).
    #[error("JetStream refused the operation on `{subject}`: {reason}")]
    Refused {
        /// Subject or stream of the operation.
        subject: String,
        /// The server's or client's reason.
        reason: String,
    },
    /// A message in a mechanism's stream does not have the mechanism's format.
    #[error("malformed message at sequence {sequence} on `{subject}`: {reason}")]
    Malformed {
        /// Subject of the message.
        subject: String,
        /// Its stream sequence.
        sequence: u64,
        /// What is wrong.
        reason: String,
    },
    /// A message id was used again with another subject or payload: the server answers such
    /// a publish as a duplicate of the first and stores nothing, so the new content would be
    /// lost silently. Ids must name content (derive them from the input that caused it).
    #[error(
        "message id `{id}` was already stored at sequence {sequence} of `{stream}` with another subject or payload; the new one was not stored"
    )]
    Conflict {
        /// The reused id.
        id: String,
        /// The stream holding the first message.
        stream: String,
        /// Its sequence.
        sequence: u64,
    },
    /// The session's lease ran out or was taken over; its messages stop.
    #[error("lease on partition {partition} lost")]
    LeaseLost {
        /// The partition.
        partition: u32,
    },
}

/// What a successful conditioned publish stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stored {
    /// Stream sequence of the message (of the first copy, for a duplicate).
    pub sequence: u64,
    /// The server had already stored a message with this id inside its duplicate window.
    pub duplicate: bool,
    /// For a duplicate: its first copy is on another subject than this publish (as an output
    /// another instance replayed is, on a sequence).
    pub(crate) elsewhere: bool,
}

/// A publish with the runtime's headers, retried with the same message id while its outcome is
/// unknown. `Fenced` when the server refuses an expectation.
pub(crate) async fn publish(
    js: &jetstream::Context,
    subject: &str,
    headers: HeaderMap,
    payload: Bytes,
    retry_for: Duration,
) -> Result<Stored, NatsError> {
    publish_to(
        js,
        subject,
        headers,
        payload,
        retry_for,
        Same::SubjectAndPayload,
    )
    .await
}

/// What a duplicate's first copy must share with the publish for the two to be one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Same {
    /// Its subject and payload: the subject is where the message goes.
    SubjectAndPayload,
    /// Its payload: the subject only names who wrote the first copy (a sequence's producer
    /// chain, which an output replayed by another instance is written on).
    Payload,
}

/// [`publish`], with what a duplicate must share with its first copy.
#[tracing::instrument(level = "debug", name = "publish", skip_all, fields(subject = %subject))]
pub(crate) async fn publish_to(
    js: &jetstream::Context,
    subject: &str,
    headers: HeaderMap,
    payload: Bytes,
    retry_for: Duration,
    same: Same,
) -> Result<Stored, NatsError> {
    debug_assert!(
        headers.get(MSG_ID).is_some(),
        "every runtime publish carries a message id"
    );
    let started = tokio::time::Instant::now();
    let mut pause = Duration::from_millis(20);
    /// Why an attempt failed.
    enum Failure {
        /// The outcome is unknown or the cluster is failing over: retry with the same id.
        Retry(BoxError),
        /// The server refused an expectation.
        Fenced,
        /// The server refused the message for good.
        Refused(String),
    }
    loop {
        let attempt = async {
            js.send_publish(
                subject.to_string(),
                PublishMessage::build()
                    .headers(headers.clone())
                    .payload(payload.clone()),
            )
            .await
            .map_err(|e| Failure::Retry(e.into()))?
            .await
            .map_err(|e| match e.kind() {
                PublishErrorKind::WrongLastSequence | PublishErrorKind::WrongLastMessageId => {
                    Failure::Fenced
                }
                PublishErrorKind::MaxPayloadExceeded => Failure::Refused(e.to_string()),
                // Timeouts, "no responders" while a leader is elected, a reconnect: the retry
                // budget decides. A permission error never gets an answer and times out.
                PublishErrorKind::TimedOut
                | PublishErrorKind::BrokenPipe
                | PublishErrorKind::StreamNotFound
                | PublishErrorKind::MaxAckPending
                | PublishErrorKind::Other => Failure::Retry(e.into()),
            })
        };
        match attempt.await {
            Ok(ack) => {
                let elsewhere = if ack.duplicate {
                    let first = check_duplicate(js, &ack, &headers, &payload, retry_for).await?;
                    let elsewhere = first.is_some_and(|s| s != subject);
                    if elsewhere && same == Same::SubjectAndPayload {
                        return Err(conflict(&headers, &ack));
                    }
                    elsewhere
                } else {
                    false
                };
                return Ok(Stored {
                    sequence: ack.sequence,
                    duplicate: ack.duplicate,
                    elsewhere,
                });
            }
            Err(Failure::Fenced) => {
                return Err(NatsError::Fenced {
                    subject: subject.to_string(),
                });
            }
            Err(Failure::Refused(reason)) => {
                return Err(NatsError::Refused {
                    subject: subject.to_string(),
                    reason,
                });
            }
            Err(Failure::Retry(last)) => {
                tracing::debug!(error = %last, "publish outcome unknown; retrying with the same id");
                if started.elapsed() >= retry_for {
                    tracing::warn!(error = %last, waited = ?started.elapsed(), "publish gave up");
                    return Err(NatsError::Unavailable {
                        subject: subject.to_string(),
                        waited: started.elapsed(),
                        source: last,
                    });
                }
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_millis(500));
            }
        }
    }
}

/// Checks that the message the server kept under a duplicate's id has this one's payload: a
/// retry of the same publish, not new content under a reused id. Returns the first copy's
/// subject. A first copy removed since (a seal barrier purges what it released) cannot be
/// compared, and passes.
async fn check_duplicate(
    js: &jetstream::Context,
    ack: &jetstream::publish::PublishAck,
    headers: &HeaderMap,
    payload: &Bytes,
    retry_for: Duration,
) -> Result<Option<String>, NatsError> {
    use async_nats::jetstream::stream::RawMessageErrorKind;
    let stored = retrying(
        &ack.stream,
        retry_for,
        Duration::from_millis(100),
        || async {
            let stream = js.get_stream(&ack.stream).await.map_err(BoxError::from)?;
            match stream.get_raw_message(ack.sequence).await {
                Ok(m) => Ok(Some(m)),
                Err(e) if e.kind() == RawMessageErrorKind::NoMessageFound => Ok(None),
                Err(e) => Err(BoxError::from(e)),
            }
        },
    )
    .await?;
    match stored {
        Some(m) if m.payload != *payload => Err(conflict(headers, ack)),
        Some(m) => Ok(Some(m.subject.to_string())),
        None => Ok(None),
    }
}

fn conflict(headers: &HeaderMap, ack: &jetstream::publish::PublishAck) -> NatsError {
    NatsError::Conflict {
        id: header(headers, MSG_ID).unwrap_or_default().to_string(),
        stream: ack.stream.clone(),
        sequence: ack.sequence,
    }
}

/// Headers with a message id and, when `expect` is set, the condition that the last message on
/// `expect.0` has sequence `expect.1` (0: there is none).
pub(crate) fn headers(msg_id: &str, expect: Option<(&str, u64)>) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(MSG_ID, msg_id);
    if let Some((subject, sequence)) = expect {
        h.insert(
            EXPECTED_LAST_SUBJECT_SEQUENCE,
            sequence.to_string().as_str(),
        );
        h.insert(EXPECTED_LAST_SUBJECT_SEQUENCE_SUBJECT, subject);
    }
    h
}

/// The last message on `subject`, or `None`; retried while the stream has no leader.
#[tracing::instrument(level = "debug", name = "last_on_subject", skip_all, fields(subject = %subject))]
pub(crate) async fn last_on_subject(
    stream: &stream::Stream,
    subject: &str,
    retry_for: Duration,
) -> Result<Option<StoredMessage>, NatsError> {
    use async_nats::jetstream::stream::LastRawMessageErrorKind;
    retrying(subject, retry_for, Duration::from_millis(100), || async {
        match stream.get_last_raw_message_by_subject(subject).await {
            Ok(m) => Ok(Some(StoredMessage::from_raw(m))),
            Err(e) if e.kind() == LastRawMessageErrorKind::NoMessageFound => Ok(None),
            Err(e) => Err(e),
        }
    })
    .await
}

/// Gets or creates a stream, retried while the cluster elects its meta leader.
#[tracing::instrument(level = "debug", name = "ensure_stream", skip_all, fields(stream = %config.name))]
pub(crate) async fn ensure_stream(
    js: &jetstream::Context,
    config: stream::Config,
    retry_for: Duration,
) -> Result<stream::Stream, NatsError> {
    retrying(&config.name, retry_for, Duration::from_millis(200), || {
        js.get_or_create_stream(config.clone())
    })
    .await
}

/// Gets or creates the checkpoint bucket `bucket` (a replica's latest checkpoint per key), as a
/// deployment creates it; retried while the cluster elects its meta leader.
#[tracing::instrument(level = "debug", name = "ensure_bucket", skip_all, fields(bucket = %bucket))]
pub(crate) async fn ensure_bucket(
    js: &jetstream::Context,
    bucket: &str,
    replicas: usize,
    retry_for: Duration,
) -> Result<async_nats::jetstream::kv::Store, NatsError> {
    let config = deploy::bucket_config(&crate::deploy::BucketObject {
        name: bucket.to_string(),
        history: crate::deploy::CHECKPOINT_HISTORY,
        replicas,
    });
    retrying(bucket, retry_for, Duration::from_millis(200), || async {
        match js.get_key_value(bucket).await {
            Ok(s) => Ok(s),
            Err(_) => js
                .create_key_value(config.clone())
                .await
                .map_err(BoxError::from),
        }
    })
    .await
}

/// Runs `op` until it succeeds, pausing `pause` after each failure, for as long as `retry_for`
/// has not passed since the first try (a leader election, a reconnect); then
/// [`NatsError::Unavailable`] on `what` with the last error. Every failure is retried: an
/// operation with failures that must not be (a fence, a refusal) has its own loop.
async fn retrying<T, E, F, Fut>(
    what: &str,
    retry_for: Duration,
    pause: Duration,
    mut op: F,
) -> Result<T, NatsError>
where
    E: Into<BoxError>,
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, E>>,
{
    let started = tokio::time::Instant::now();
    loop {
        match op().await {
            Ok(t) => return Ok(t),
            Err(e) => {
                let e: BoxError = e.into();
                if started.elapsed() >= retry_for {
                    tracing::warn!(%what, error = %e, waited = ?started.elapsed(), "gave up retrying");
                    return Err(NatsError::Unavailable {
                        subject: what.to_string(),
                        waited: started.elapsed(),
                        source: e,
                    });
                }
                tracing::debug!(%what, error = %e, "retrying");
                tokio::time::sleep(pause).await
            }
        }
    }
}

/// A header's value as text.
pub(crate) fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).map(|v| v.as_str())
}

/// The TTL header value: whole seconds, at least one (the server's granularity).
pub(crate) fn ttl_value(ttl: Duration) -> String {
    format!("{}s", ttl.as_secs().max(1))
}

/// A message as stored in a stream.
#[derive(Debug, Clone)]
pub struct StoredMessage {
    /// Its subject.
    pub subject: String,
    /// Its stream sequence.
    pub sequence: u64,
    /// Its headers.
    pub headers: HeaderMap,
    /// Its payload.
    pub payload: Bytes,
}

impl StoredMessage {
    fn from_raw(m: StreamMessage) -> Self {
        StoredMessage {
            subject: m.subject.to_string(),
            sequence: m.sequence,
            headers: m.headers,
            payload: m.payload,
        }
    }

    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        header(&self.headers, name)
    }
}

/// Every message of `stream` with sequence `>= from` (on `filter`'s subjects when given), in
/// stream order and each once, then every message stored after them as it arrives: a tailing
/// read, as `async_nats`' consumers give theirs, for a caller that follows a stream rather
/// than polling [`read_stream`] for batches.
///
/// One ordered consumer serves the subscription; when it fails (a stream leader fails over, a
/// reconnect) the subscription makes another from the position after the last message it
/// yielded, so it neither skips nor repeats. After `retry_for` without a working consumer it
/// yields [`NatsError::Unavailable`], with the client's error as its source, and ends. The
/// server removes a dropped subscription's consumer once it has been idle for a few seconds.
pub fn subscribe(
    stream: stream::Stream,
    filter: Option<String>,
    from: u64,
    retry_for: Duration,
) -> Subscription {
    let budget = RetryBudget::new(stream.cached_info().config.name.clone(), retry_for);
    let tail = Tail {
        stream,
        filter,
        next: from.max(1),
        messages: None,
        budget,
    };
    Subscription {
        inner: Box::pin(futures_util::stream::unfold(
            Some(tail),
            |tail| async move {
                let mut tail = tail?;
                match tail.next().await {
                    Ok(message) => Some((Ok(message), Some(tail))),
                    Err(e) => Some((Err(e), None)),
                }
            },
        )),
    }
}

/// The messages of a [`subscribe`]: a [`futures_util::Stream`] of stored messages, in order.
pub struct Subscription {
    inner: std::pin::Pin<
        Box<dyn futures_util::Stream<Item = Result<StoredMessage, NatsError>> + Send>,
    >,
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription").finish_non_exhaustive()
    }
}

impl futures_util::Stream for Subscription {
    type Item = Result<StoredMessage, NatsError>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        self.inner.as_mut().poll_next(cx)
    }
}

/// A subscription's state: where it is, and the consumer that serves it while it works.
struct Tail {
    stream: stream::Stream,
    filter: Option<String>,
    /// The sequence of the next message to yield.
    next: u64,
    messages: Option<jetstream::consumer::pull::Ordered>,
    budget: RetryBudget,
}

impl Tail {
    #[tracing::instrument(level = "debug", name = "subscription", skip_all, fields(stream = %self.stream.cached_info().config.name, next = self.next))]
    async fn next(&mut self) -> Result<StoredMessage, NatsError> {
        use async_nats::jetstream::consumer::{DeliverPolicy, pull::OrderedConfig};
        use futures_util::StreamExt;
        // How long a quiet subscription waits before it checks that the server is still there.
        let probe =
            (self.budget.retry_for / 4).clamp(Duration::from_millis(100), Duration::from_secs(2));
        loop {
            let failure: BoxError = match &mut self.messages {
                None => match self
                    .stream
                    .create_consumer(OrderedConfig {
                        filter_subject: self.filter.clone().unwrap_or_default(),
                        deliver_policy: DeliverPolicy::ByStartSequence {
                            start_sequence: self.next,
                        },
                        ..Default::default()
                    })
                    .await
                {
                    Ok(consumer) => match consumer.messages().await {
                        Ok(messages) => {
                            self.messages = Some(messages);
                            continue;
                        }
                        Err(e) => e.into(),
                    },
                    Err(e) => e.into(),
                },
                Some(messages) => match tokio::time::timeout(probe, messages.next()).await {
                    // Quiet: an idle stream, or a server gone (the client then waits for it
                    // without a word); ask the stream to tell them apart.
                    Err(_) => match self.stream.get_info().await {
                        Ok(_) => {
                            self.budget.worked();
                            continue;
                        }
                        Err(e) => {
                            self.budget.failed(e.into())?;
                            continue;
                        }
                    },
                    Ok(Some(Ok(m))) => {
                        let sequence = m.info().map_err(|e| NatsError::Malformed {
                            subject: m.subject.to_string(),
                            sequence: self.next,
                            reason: e.to_string(),
                        })?;
                        let sequence = sequence.stream_sequence;
                        // An ordered consumer that resets itself may start over behind us.
                        if sequence < self.next {
                            continue;
                        }
                        self.next = sequence + 1;
                        self.budget.worked();
                        let m = m.message;
                        return Ok(StoredMessage {
                            subject: m.subject.to_string(),
                            sequence,
                            headers: m.headers.unwrap_or_default(),
                            payload: m.payload,
                        });
                    }
                    Ok(Some(Err(e))) => e.into(),
                    Ok(None) => "the consumer ended".into(),
                },
            };
            self.messages = None;
            self.budget.failed(failure)?;
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// How long a reader may keep failing: the clock starts at the first failure after the last
/// success, and the failure that finds `retry_for` passed is reported, as the cause of
/// [`NatsError::Unavailable`] on `subject`.
pub(crate) struct RetryBudget {
    subject: String,
    retry_for: Duration,
    failing_since: Option<tokio::time::Instant>,
}

impl RetryBudget {
    pub(crate) fn new(subject: String, retry_for: Duration) -> Self {
        RetryBudget {
            subject,
            retry_for,
            failing_since: None,
        }
    }

    /// The reader made progress: the next failure starts the clock again.
    pub(crate) fn worked(&mut self) {
        self.failing_since = None;
    }

    /// Counts `failure`: `Unavailable` once the budget is spent.
    pub(crate) fn failed(&mut self, failure: BoxError) -> Result<(), NatsError> {
        let since = *self
            .failing_since
            .get_or_insert_with(tokio::time::Instant::now);
        if since.elapsed() >= self.retry_for {
            tracing::warn!(subject = %self.subject, error = %failure, "gave up retrying");
            return Err(NatsError::Unavailable {
                subject: self.subject.clone(),
                waited: since.elapsed(),
                source: failure,
            });
        }
        tracing::debug!(subject = %self.subject, error = %failure, "retrying");
        Ok(())
    }
}

/// How long a read waits for a message the server counted as pending before it starts over.
const READ_TIMEOUT: Duration = Duration::from_secs(5);
/// How often a waiting read asks the server whether anything is still to come.
const READ_POLL: Duration = Duration::from_millis(100);

/// Reads up to `max` messages of `stream` with sequence `>= from` (on `filter`'s subjects when
/// given), in stream order, through an ordered consumer; retried while the cluster fails over.
/// Returns fewer than `max` when the stream has no more.
///
/// Each read makes one ephemeral consumer and deletes it when it ends. Callers poll (a host
/// waiting for the next input reads every few milliseconds), and a consumer left behind lives
/// on the server until its inactivity threshold (30 s): hundreds of them, each one matched
/// against every message stored, slowed every publish to the stream to a crawl. A read that
/// would start past the stream's last message asks the stream's state instead and makes none.
pub async fn read_stream(
    stream: &stream::Stream,
    filter: Option<&str>,
    from: u64,
    max: usize,
    retry_for: Duration,
) -> Result<Vec<StoredMessage>, NatsError> {
    read(stream, filter, from, max, retry_for, Consumers::Deleted).await
}

/// [`read_stream`] that leaves its consumer on the server and makes one even past the stream's
/// end; it exists for the negative control of the tests and nothing else.
#[doc(hidden)]
pub async fn read_stream_leaving_consumers(
    stream: &stream::Stream,
    filter: Option<&str>,
    from: u64,
    max: usize,
    retry_for: Duration,
) -> Result<Vec<StoredMessage>, NatsError> {
    read(stream, filter, from, max, retry_for, Consumers::Left).await
}

/// What a read does with the server's consumers: the real one deletes each it made.
#[derive(Clone, Copy, PartialEq)]
enum Consumers {
    Deleted,
    Left,
}

#[tracing::instrument(level = "debug", name = "read", skip_all, fields(stream = %stream.cached_info().config.name, from = from, max = max))]
async fn read(
    stream: &stream::Stream,
    filter: Option<&str>,
    from: u64,
    max: usize,
    retry_for: Duration,
    consumers: Consumers,
) -> Result<Vec<StoredMessage>, NatsError> {
    use async_nats::jetstream::consumer::{DeliverPolicy, pull::OrderedConfig};
    let started = tokio::time::Instant::now();
    let name = stream.cached_info().config.name.clone();
    let fail = |last: BoxError| NatsError::Unavailable {
        subject: name.clone(),
        waited: started.elapsed(),
        source: last,
    };
    if max == 0 {
        return Ok(Vec::new());
    }
    loop {
        let last = match consumers {
            Consumers::Left => Ok(u64::MAX),
            Consumers::Deleted => match stream.get_info().await {
                Ok(info) => Ok(info.state.last_sequence),
                Err(e) => Err(BoxError::from(e)),
            },
        };
        let step = match last {
            Ok(last) if last < from.max(1) => return Ok(Vec::new()),
            Ok(_) => match stream
                .create_consumer(OrderedConfig {
                    filter_subject: filter.unwrap_or_default().to_string(),
                    deliver_policy: DeliverPolicy::ByStartSequence {
                        start_sequence: from.max(1),
                    },
                    ..Default::default()
                })
                .await
            {
                Ok(consumer) => {
                    let consumer_name = consumer.cached_info().name.clone();
                    let step = drain(stream, consumer, from, max).await;
                    if consumers == Consumers::Deleted {
                        // Best effort: one the server does not delete now goes when it is idle.
                        let _ = stream.delete_consumer(&consumer_name).await;
                    }
                    step
                }
                Err(e) => Err(BoxError::from(e)),
            },
            Err(e) => Err(e),
        };
        match step {
            Ok(out) => return Ok(out),
            Err(last) if started.elapsed() >= retry_for => return Err(fail(last)),
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// One attempt of [`read_stream`] through `consumer`: the messages, or why to start over.
async fn drain(
    stream: &stream::Stream,
    consumer: jetstream::consumer::Consumer<jetstream::consumer::pull::OrderedConfig>,
    from: u64,
    max: usize,
) -> Result<Vec<StoredMessage>, BoxError> {
    use futures_util::StreamExt;
    if consumer.cached_info().num_pending == 0 {
        return Ok(Vec::new());
    }
    // The ordered consumer's first name; after a reset it has another, whose info this read
    // then cannot ask for (it waits out the timeout, as it would without asking).
    let consumer_name = consumer.cached_info().name.clone();
    let mut messages = consumer.messages().await.map_err(BoxError::from)?;
    let mut out = Vec::new();
    let mut quiet = Duration::ZERO;
    // Messages this consumer delivered to us, to tell "nothing left" from "in flight".
    let mut received = 0u64;
    loop {
        let next = tokio::time::timeout(READ_POLL, messages.next()).await;
        if next.is_err() {
            quiet += READ_POLL;
            // The messages counted as pending when the consumer was made may be gone since (a
            // seal barrier purges the partitions it released): when the server has nothing
            // left to deliver and has delivered no more than we received (nothing in flight),
            // the read is over, rather than waiting out the whole timeout for messages that no
            // longer exist.
            let info = stream.consumer_info(&consumer_name).await;
            if let Ok(info) = info
                && info.num_pending == 0
                && info.delivered.consumer_sequence <= received
            {
                return Ok(out);
            }
            if quiet < READ_TIMEOUT {
                continue;
            }
        }
        let message = match next {
            Ok(Some(Ok(m))) => {
                quiet = Duration::ZERO;
                received += 1;
                m
            }
            Ok(Some(Err(e))) => return Err(e.into()),
            Ok(None) => return Err("the consumer ended".into()),
            Err(_) => {
                return Err(format!("no message within {} s", READ_TIMEOUT.as_secs()).into());
            }
        };
        let info = message.info()?;
        let sequence = info.stream_sequence;
        let pending = info.pending;
        // An ordered consumer that resets (a stream leader failed over) before it delivered
        // anything restarts from the stream's first message, not from `from`: skip what is
        // behind us, so callers see each position once, in order.
        let behind = out.last().map_or(from, |m: &StoredMessage| m.sequence + 1);
        if sequence < behind {
            if pending == 0 {
                return Ok(out);
            }
            continue;
        }
        let message = message.message;
        out.push(StoredMessage {
            subject: message.subject.to_string(),
            sequence,
            headers: message.headers.unwrap_or_default(),
            payload: message.payload,
        });
        if pending == 0 || out.len() >= max {
            return Ok(out);
        }
    }
}

/// A value unique to one incarnation or attempt, for message ids that must never collide with
/// an earlier one inside the duplicate window (a collision would be answered as a duplicate of
/// someone else's message).
pub(crate) fn nonce() -> String {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    h.write_u128(now);
    h.write_u32(std::process::id());
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    format!("{:016x}", h.finish())
}
