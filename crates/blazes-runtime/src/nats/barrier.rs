//! Seal barrier on JetStream: a partition is released once, complete, across barrier crashes.
//!
//! The stream `<name>` holds, per partition `P` and producer `p`:
//!
//! | subject | written by | what |
//! |---|---|---|
//! | `<name>.rec.P.p` | producer `p` | record `index` of `p` for `P` (id `rec:P:p:index`) |
//! | `<name>.seal.P.p` | producer `p` | `p` sealed `P` after `count` records (id `seal:P:p`) |
//! | `<name>.set.P` | whoever declares it | the producers `P` waits for (else the configured set) |
//! | `<name>.rel.P` | the barrier only | the release: the whole batch, created once |
//!
//! **Exactly once.** The barrier reads the stream in order and keeps, per open partition, only
//! the seals it has seen (no records: they stay in the stream). When every producer of `P`'s
//! set has sealed it, the barrier reads `P`'s records back, checks that each producer's indices
//! are exactly `0..count`, and publishes the batch on `<name>.rel.P` with
//! `Nats-Expected-Last-Subject-Sequence: 0`: the server stores the first release of `P` and
//! refuses every later one, whichever barrier instance (a restarted one, a second one) tries.
//! The release message *is* the hand-off: downstream reads `<name>.rel.>`
//! ([`SealBarrier::releases`]), so the batch is handed on only once it is durable. Only then
//! are `P`'s records and seals purged from the stream (the "ack"), up to the last sequence the
//! release read (its `Blazes-Covered` header): a record stored between that read and the
//! release message is not in the batch, and stays to be reported. A crash between the release
//! and the purge is repaired by the next instance, which finds the release and purges again.
//!
//! **Late and retried.** A record or seal for a released partition is compared with the
//! release: the same (producer, index, payload) is a retry ([`BarrierEvent::Retried`], e.g. a
//! producer's resend after the duplicate window), anything else is late
//! ([`BarrierEvent::Late`]); both are deleted from the stream at the next poll, after the
//! caller has the report (a crash in between reports them again). Records of a producer
//! outside the partition's set are late too: reported when the partition is released.
//!
//! **Stalls.** A partition that some but not all of its producers have sealed for longer than
//! `stall_after` is reported once ([`BarrierEvent::Stalled`]) with the producers it waits for.
//!
//! **No buffer deadlock.** The barrier holds no records in memory and needs no consumer
//! acknowledgements (an ack-pending limit filled by two half-complete partitions would stop
//! delivery, the deadlock of a bounded buffer): its memory is the seals of open partitions and
//! one batch during its release. The only bound on records is the stream's storage limit,
//! which producers meet as a refused publish, not as a stalled barrier.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use async_nats::jetstream::{self, stream};
use bytes::Bytes;
use tokio::time::Instant;

use super::sequencer::valid_token;
use super::{NatsError, StoredMessage, headers, last_on_subject, publish, read_stream};

/// Header: a record's index.
pub const INDEX: &str = "Blazes-Index";
/// Header: the number of records a seal covers.
pub const COUNT: &str = "Blazes-Count";
/// Header: on a release, the last stream sequence it read (its records and seals up to there
/// are purged once it is stored; later ones are reported).
pub const COVERED: &str = "Blazes-Covered";

/// When the barrier releases a partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReleaseRule {
    /// When every producer of the partition's set has sealed it and all its records arrived.
    AllSealed,
    /// On the first seal: the tests' negative control, nothing else.
    FirstSeal,
    /// [`ReleaseRule::AllSealed`], but a complete partition whose records are gone is reported
    /// inconsistent without asking whether another instance released it: the tests' negative
    /// control, nothing else.
    AllSealedBlind,
    /// [`ReleaseRule::AllSealed`], but the purge after a release removes everything of the
    /// partition stored before the release message, read or not, and records of producers
    /// outside the partition's set go unreported: the tests' negative control, nothing else.
    AllSealedPurgeBeforeRelease,
}

/// A barrier's stream and policy.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct BarrierConfig {
    /// Stream name and subject prefix (`[A-Za-z0-9_-]`).
    pub name: String,
    /// The producers a partition waits for unless a set is declared for it.
    pub producers: Vec<String>,
    /// Report a partition sealed by some but not all producers after this long.
    pub stall_after: Duration,
    /// Raft replicas of the stream.
    pub replicas: usize,
    /// The server's duplicate window.
    pub duplicate_window: Duration,
    /// How long an operation retries while the cluster fails over.
    pub retry_for: Duration,
    /// Always [`ReleaseRule::AllSealed`] outside the tests.
    pub rule: ReleaseRule,
}

impl BarrierConfig {
    /// A 3-way replicated barrier `name` waiting for `producers`, reporting stalls after 30 s.
    pub fn new(name: &str, producers: &[&str]) -> Self {
        BarrierConfig {
            name: name.to_string(),
            producers: producers.iter().map(|p| p.to_string()).collect(),
            stall_after: Duration::from_secs(30),
            replicas: 3,
            duplicate_window: Duration::from_secs(120),
            retry_for: super::DEFAULT_RETRY_FOR,
            rule: ReleaseRule::AllSealed,
        }
    }
}

setters!(BarrierConfig {
    /// The producers a partition waits for unless a set is declared for it.
    producers: Vec<String>,
    /// Report a partition sealed by some but not all producers after this long (default: 30 s).
    stall_after: Duration,
    /// Raft replicas of the stream (default: 3).
    replicas: usize,
    /// The server's duplicate window (default: 2 min).
    duplicate_window: Duration,
    /// How long an operation retries while the cluster fails over.
    retry_for: Duration,
});

/// One record of a released batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchRecord {
    /// Its producer.
    pub producer: String,
    /// Its index among the producer's records for the partition.
    pub index: u64,
    /// Its payload.
    pub payload: Bytes,
}

/// A released partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Release {
    /// The partition.
    pub partition: String,
    /// Stream sequence of the release message.
    pub sequence: u64,
    /// The batch, ordered by (producer, index).
    pub records: Vec<BatchRecord>,
}

/// What a [`SealBarrier::poll`] observed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BarrierEvent {
    /// This instance released the partition (its release message is durable).
    Released(Release),
    /// A record for a released partition that is not in its batch.
    Late {
        /// The partition.
        partition: String,
        /// The producer.
        producer: String,
        /// The record's index.
        index: u64,
    },
    /// A record for a released partition that is in its batch: a resend.
    Retried {
        /// The partition.
        partition: String,
        /// The producer.
        producer: String,
        /// The record's index.
        index: u64,
    },
    /// Some producers sealed the partition, these have not, for longer than `stall_after`.
    Stalled {
        /// The partition.
        partition: String,
        /// The producers it still waits for.
        missing: Vec<String>,
    },
    /// Every producer sealed the partition but its records do not match the seals (a missing
    /// index, or one index with two payloads); the partition stays open.
    Inconsistent {
        /// The partition.
        partition: String,
        /// What does not match.
        reason: String,
    },
}

#[derive(Default)]
struct Open {
    seals: BTreeMap<String, u64>,
    set: Option<Vec<String>>,
    first_seal: Option<Instant>,
    stall_reported: bool,
    inconsistent_reported: bool,
    dirty: bool,
}

/// A seal barrier instance. Any number may run; each partition is released once.
pub struct SealBarrier {
    js: jetstream::Context,
    stream: stream::Stream,
    config: BarrierConfig,
    open: BTreeMap<String, Open>,
    released: BTreeSet<String>,
    read_from: u64,
    /// Late and retried messages reported by the last poll, deleted at the start of the next
    /// (once the caller has the report): a crash in between reports them again.
    reported: Vec<u64>,
}

/// A producer's handle on a barrier stream.
#[derive(Clone)]
pub struct BarrierProducer {
    js: jetstream::Context,
    name: String,
    producer: String,
    retry_for: Duration,
}

impl BarrierProducer {
    /// A producer's handle without opening the barrier: publishing records and seals needs
    /// only the producer's own subjects (`<name>.rec.*.<producer>`, `<name>.seal.*.<producer>`),
    /// not the stream's API, so a least-privilege producer uses this.
    pub fn new(js: jetstream::Context, config: &BarrierConfig, producer: &str) -> Self {
        assert!(
            valid_token(producer),
            "producer `{producer}` must be [A-Za-z0-9_-]+"
        );
        BarrierProducer {
            js,
            name: config.name.clone(),
            producer: producer.to_string(),
            retry_for: config.retry_for,
        }
    }

    /// Publishes record `index` (from 0) of this producer for `partition`; resends are stored
    /// once inside the duplicate window.
    pub async fn record(
        &self,
        partition: &str,
        index: u64,
        payload: Bytes,
    ) -> Result<(), NatsError> {
        assert!(
            valid_token(partition),
            "partition `{partition}` must be [A-Za-z0-9_-]+"
        );
        let mut h = headers(&format!("rec:{partition}:{}:{index}", self.producer), None);
        h.insert(INDEX, index.to_string().as_str());
        let subject = format!("{}.rec.{partition}.{}", self.name, self.producer);
        publish(&self.js, &subject, h, payload, self.retry_for)
            .await
            .map(|_| ())
    }

    /// Seals `partition` after `count` records (publish them, and wait for their
    /// acknowledgements, first).
    pub async fn seal(&self, partition: &str, count: u64) -> Result<(), NatsError> {
        assert!(
            valid_token(partition),
            "partition `{partition}` must be [A-Za-z0-9_-]+"
        );
        let mut h = headers(&format!("seal:{partition}:{}", self.producer), None);
        h.insert(COUNT, count.to_string().as_str());
        let subject = format!("{}.seal.{partition}.{}", self.name, self.producer);
        publish(&self.js, &subject, h, Bytes::new(), self.retry_for)
            .await
            .map(|_| ())
    }
}

fn encode(records: &[BatchRecord]) -> Bytes {
    let mut v = Vec::new();
    for r in records {
        v.extend_from_slice(&(r.producer.len() as u32).to_be_bytes());
        v.extend_from_slice(r.producer.as_bytes());
        v.extend_from_slice(&r.index.to_be_bytes());
        v.extend_from_slice(&(r.payload.len() as u32).to_be_bytes());
        v.extend_from_slice(&r.payload);
    }
    v.into()
}

/// Decodes a release message's batch (`None` if it is not one).
pub fn decode(mut b: &[u8]) -> Option<Vec<BatchRecord>> {
    fn take<'a>(b: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
        let (head, rest) = (b.get(..n)?, b.get(n..)?);
        *b = rest;
        Some(head)
    }
    let mut out = Vec::new();
    while !b.is_empty() {
        let n = u32::from_be_bytes(take(&mut b, 4)?.try_into().ok()?) as usize;
        let producer = String::from_utf8(take(&mut b, n)?.to_vec()).ok()?;
        let index = u64::from_be_bytes(take(&mut b, 8)?.try_into().ok()?);
        let n = u32::from_be_bytes(take(&mut b, 4)?.try_into().ok()?) as usize;
        let payload = Bytes::copy_from_slice(take(&mut b, n)?);
        out.push(BatchRecord {
            producer,
            index,
            payload,
        });
    }
    Some(out)
}

impl SealBarrier {
    /// Opens (creating if needed) the barrier's stream and rebuilds the open partitions from it.
    pub async fn open(js: jetstream::Context, config: BarrierConfig) -> Result<Self, NatsError> {
        assert!(
            valid_token(&config.name),
            "name `{}` must be [A-Za-z0-9_-]+",
            config.name
        );
        let n = &config.name;
        let stream = super::ensure_stream(
            &js,
            stream::Config {
                name: n.clone(),
                subjects: vec![
                    format!("{n}.rec.*.*"),
                    format!("{n}.seal.*.*"),
                    format!("{n}.set.*"),
                    format!("{n}.rel.*"),
                ],
                num_replicas: config.replicas,
                duplicate_window: config.duplicate_window,
                ..Default::default()
            },
            config.retry_for,
        )
        .await?;
        Ok(SealBarrier {
            js,
            stream,
            config,
            open: BTreeMap::new(),
            released: BTreeSet::new(),
            read_from: 1,
            reported: Vec::new(),
        })
    }

    /// A producer's handle (`producer`: `[A-Za-z0-9_-]`).
    pub fn producer(&self, producer: &str) -> BarrierProducer {
        BarrierProducer::new(self.js.clone(), &self.config, producer)
    }

    /// Declares the producers `partition` waits for (once; later declarations are refused
    /// with `Fenced`). Declare before the partition's first seal.
    pub async fn declare(&self, partition: &str, producers: &[&str]) -> Result<(), NatsError> {
        assert!(valid_token(partition));
        let subject = format!("{}.set.{partition}", self.config.name);
        let mut h = headers(&format!("set:{partition}"), None);
        h.insert(super::EXPECTED_LAST_SUBJECT_SEQUENCE, "0");
        publish(
            &self.js,
            &subject,
            h,
            producers.join("\n").into(),
            self.config.retry_for,
        )
        .await
        .map(|_| ())
    }

    /// Reads what arrived since the last poll, releases every partition that became complete,
    /// and reports releases, late and retried records, stalls and inconsistencies.
    pub async fn poll(&mut self) -> Result<Vec<BarrierEvent>, NatsError> {
        let mut events = Vec::new();
        for sequence in std::mem::take(&mut self.reported) {
            self.delete(sequence).await?;
        }
        let messages = read_stream(
            &self.stream,
            None,
            self.read_from,
            4096,
            self.config.retry_for,
        )
        .await?;
        for m in messages {
            self.read_from = m.sequence + 1;
            self.observe(m, &mut events).await?;
        }
        let ready: Vec<String> = self
            .open
            .iter()
            .filter(|(_, o)| o.dirty)
            .map(|(p, _)| p.clone())
            .collect();
        for p in ready {
            self.try_release(&p, &mut events).await?;
        }
        let now = Instant::now();
        for (p, o) in self.open.iter_mut() {
            let waited = o
                .first_seal
                .is_some_and(|t| now.duration_since(t) >= self.config.stall_after);
            if waited && !o.stall_reported {
                let set = o
                    .set
                    .clone()
                    .unwrap_or_else(|| self.config.producers.clone());
                let missing: Vec<String> = set
                    .into_iter()
                    .filter(|s| !o.seals.contains_key(s))
                    .collect();
                if !missing.is_empty() {
                    o.stall_reported = true;
                    events.push(BarrierEvent::Stalled {
                        partition: p.clone(),
                        missing,
                    });
                }
            }
        }
        Ok(events)
    }

    async fn observe(
        &mut self,
        m: StoredMessage,
        events: &mut Vec<BarrierEvent>,
    ) -> Result<(), NatsError> {
        let parts: Vec<&str> = m.subject.split('.').collect();
        let (kind, partition) = (parts.get(1).copied(), parts.get(2).map(|p| p.to_string()));
        let (Some(kind), Some(partition)) = (kind, partition) else {
            return Ok(());
        };
        let producer = parts.get(3).map(|p| p.to_string());
        let malformed = |reason: &str| NatsError::Malformed {
            subject: m.subject.clone(),
            sequence: m.sequence,
            reason: reason.to_string(),
        };
        match kind {
            "rel" => {
                self.open.remove(&partition);
                self.released.insert(partition.clone());
                // A crash may have come between the release and the purge. What the release
                // did not read (its `Blazes-Covered` is older) is left to be reported.
                let covered = m
                    .header(COVERED)
                    .and_then(|c| c.parse::<u64>().ok())
                    .unwrap_or(m.sequence.saturating_sub(1));
                self.purge(&partition, covered).await?;
            }
            "set" => {
                let set = String::from_utf8_lossy(&m.payload)
                    .lines()
                    .map(str::to_string)
                    .collect();
                if !self.released.contains(&partition) {
                    let o = self.open.entry(partition).or_default();
                    o.set = Some(set);
                    o.dirty = true;
                }
            }
            "seal" | "rec" if self.released.contains(&partition) => {
                let producer = producer.ok_or_else(|| malformed("no producer token"))?;
                let index = m.header(INDEX).and_then(|i| i.parse::<u64>().ok());
                if kind == "rec" {
                    let index = index.ok_or_else(|| malformed("a record needs Blazes-Index"))?;
                    let release = self.release_of(&partition).await?;
                    let retried = release.iter().any(|r| {
                        r.producer == producer && r.index == index && r.payload == m.payload
                    });
                    events.push(if retried {
                        BarrierEvent::Retried {
                            partition: partition.clone(),
                            producer,
                            index,
                        }
                    } else {
                        BarrierEvent::Late {
                            partition: partition.clone(),
                            producer,
                            index,
                        }
                    });
                }
                self.reported.push(m.sequence);
            }
            "seal" => {
                let producer = producer.ok_or_else(|| malformed("no producer token"))?;
                let count = m
                    .header(COUNT)
                    .and_then(|c| c.parse::<u64>().ok())
                    .ok_or_else(|| malformed("a seal needs Blazes-Count"))?;
                let o = self.open.entry(partition).or_default();
                o.seals.insert(producer, count);
                o.first_seal.get_or_insert_with(Instant::now);
                o.dirty = true;
            }
            "rec" => {
                let o = self.open.entry(partition).or_default();
                o.dirty = true;
            }
            _ => {}
        }
        Ok(())
    }

    async fn try_release(
        &mut self,
        partition: &str,
        events: &mut Vec<BarrierEvent>,
    ) -> Result<(), NatsError> {
        let Some(o) = self.open.get_mut(partition) else {
            return Ok(());
        };
        o.dirty = false;
        let set = o
            .set
            .clone()
            .unwrap_or_else(|| self.config.producers.clone());
        let complete = match self.config.rule {
            ReleaseRule::AllSealed
            | ReleaseRule::AllSealedBlind
            | ReleaseRule::AllSealedPurgeBeforeRelease => {
                set.iter().all(|p| o.seals.contains_key(p))
            }
            ReleaseRule::FirstSeal => !o.seals.is_empty(),
        };
        if !complete {
            return Ok(());
        }
        let seals = o.seals.clone();
        let filter = format!("{}.rec.{partition}.*", self.config.name);
        let stored = read_stream(
            &self.stream,
            Some(&filter),
            1,
            usize::MAX,
            self.config.retry_for,
        )
        .await?;
        // Everything the release decides about: the records read, and the stream up to the
        // seal that completed the partition. A record stored later (between this read and the
        // release) is not in the batch, so it must survive the purge and be reported.
        let covered = stored
            .iter()
            .map(|m| m.sequence)
            .max()
            .unwrap_or(0)
            .max(self.read_from.saturating_sub(1));
        let mut batch: BTreeMap<(String, u64), Bytes> = BTreeMap::new();
        let mut problem = None;
        for m in stored {
            let producer = m.subject.rsplit('.').next().unwrap_or_default().to_string();
            let Some(index) = m.header(INDEX).and_then(|i| i.parse::<u64>().ok()) else {
                problem = Some(format!("record at {} has no Blazes-Index", m.sequence));
                continue;
            };
            match batch.get(&(producer.clone(), index)) {
                Some(p) if *p != m.payload => {
                    problem = Some(format!(
                        "{producer} sent index {index} twice with different payloads"
                    ));
                }
                _ => {
                    batch.insert((producer, index), m.payload);
                }
            }
        }
        for (producer, count) in &seals {
            let have = batch
                .range((producer.clone(), 0)..(producer.clone(), u64::MAX))
                .count() as u64;
            let dense = batch
                .range((producer.clone(), *count)..(producer.clone(), u64::MAX))
                .next()
                .is_none();
            if have != *count || !dense {
                problem.get_or_insert_with(|| {
                    format!("{producer} sealed after {count} records, {have} arrived")
                });
            }
        }
        if self.config.rule != ReleaseRule::FirstSeal
            && let Some(reason) = problem
        {
            // Several instances may run the barrier: one that read the last seal while another
            // released the partition finds the records purged. The release says so.
            if self.config.rule == ReleaseRule::AllSealed
                && last_on_subject(
                    &self.stream,
                    &format!("{}.rel.{partition}", self.config.name),
                    self.config.retry_for,
                )
                .await?
                .is_some()
            {
                // Its release message is ahead of our read position; reading it purges.
                self.open.remove(partition);
                self.released.insert(partition.to_string());
                return Ok(());
            }
            let o = self.open.get_mut(partition).expect("open");
            if !o.inconsistent_reported {
                o.inconsistent_reported = true;
                events.push(BarrierEvent::Inconsistent {
                    partition: partition.to_string(),
                    reason,
                });
            }
            return Ok(());
        }
        let (records, outside): (Vec<BatchRecord>, Vec<BatchRecord>) = batch
            .into_iter()
            .map(|((producer, index), payload)| BatchRecord {
                producer,
                index,
                payload,
            })
            .partition(|r| {
                self.config.rule == ReleaseRule::FirstSeal || seals.contains_key(&r.producer)
            });
        let subject = format!("{}.rel.{partition}", self.config.name);
        let mut h = headers(&format!("rel:{partition}"), None);
        h.insert(super::EXPECTED_LAST_SUBJECT_SEQUENCE, "0");
        h.insert(COUNT, records.len().to_string().as_str());
        h.insert(COVERED, covered.to_string().as_str());
        let created = publish(
            &self.js,
            &subject,
            h,
            encode(&records),
            self.config.retry_for,
        )
        .await;
        self.open.remove(partition);
        self.released.insert(partition.to_string());
        let blind = self.config.rule == ReleaseRule::AllSealedPurgeBeforeRelease;
        let mut purge_to = covered;
        match created {
            Ok(stored) if !stored.duplicate => {
                events.push(BarrierEvent::Released(Release {
                    partition: partition.to_string(),
                    sequence: stored.sequence,
                    records,
                }));
                if blind {
                    purge_to = stored.sequence - 1;
                    return self.purge(partition, purge_to).await;
                }
                // Records of producers the partition does not wait for are not part of it:
                // reported, never dropped without a word.
                events.extend(outside.into_iter().map(|r| BarrierEvent::Late {
                    partition: partition.to_string(),
                    producer: r.producer,
                    index: r.index,
                }));
            }
            // Released already, by us before a crash: not again.
            Ok(_) => {}
            // Released by another instance: its release message is ahead of our read position,
            // and reading it purges.
            Err(NatsError::Fenced { .. }) => return Ok(()),
            Err(e) => {
                self.released.remove(partition);
                return Err(e);
            }
        }
        self.purge(partition, purge_to).await
    }

    async fn release_of(&self, partition: &str) -> Result<Vec<BatchRecord>, NatsError> {
        let subject = format!("{}.rel.{partition}", self.config.name);
        let m = last_on_subject(&self.stream, &subject, self.config.retry_for).await?;
        let m = m.ok_or_else(|| NatsError::Refused {
            subject: subject.clone(),
            reason: "release missing".into(),
        })?;
        decode(&m.payload).ok_or(NatsError::Malformed {
            subject,
            sequence: m.sequence,
            reason: "not a batch".into(),
        })
    }

    /// Purges the partition's records and seals up to `covered`, the last sequence its release
    /// read; anything after it is late or a resend, and must be read and reported first.
    async fn purge(&self, partition: &str, covered: u64) -> Result<(), NatsError> {
        for kind in ["rec", "seal"] {
            let filter = format!("{}.{kind}.{partition}.*", self.config.name);
            let started = Instant::now();
            while let Err(e) = self
                .stream
                .purge()
                .filter(filter.clone())
                // Purges below this sequence, so `covered` itself goes.
                .sequence(covered + 1)
                .await
            {
                if started.elapsed() >= self.config.retry_for {
                    return Err(NatsError::Unavailable {
                        subject: filter,
                        waited: started.elapsed(),
                        source: e.into(),
                    });
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        Ok(())
    }

    async fn delete(&self, sequence: u64) -> Result<(), NatsError> {
        // Already gone (purged with its partition) is fine; a failure leaves the message to be
        // reported again by the next instance, which is the safe side.
        let _ = self.stream.delete_message(sequence).await;
        Ok(())
    }

    /// The barrier as a stream of its events: polls (as [`SealBarrier::poll`]) and yields each
    /// event in order, waiting `every` between polls that found nothing. An error of a poll
    /// (the cluster unavailable past `retry_for`) is yielded and the next item polls again, as
    /// async-nats' message streams do; the stream never ends by itself, so drop it to stop.
    ///
    /// ```no_run
    /// # async fn run(
    /// #     js: blazes_runtime::nats::async_nats::jetstream::Context,
    /// # ) -> Result<(), blazes_runtime::nats::NatsError> {
    /// use blazes_runtime::nats::barrier::{BarrierConfig, BarrierEvent, SealBarrier};
    /// use futures_util::StreamExt;
    /// use std::time::Duration;
    ///
    /// let barrier = SealBarrier::open(js, BarrierConfig::new("counts", &["p1", "p2"])).await?;
    /// let mut events = std::pin::pin!(barrier.into_events(Duration::from_millis(20)));
    /// while let Some(event) = events.next().await {
    ///     if let BarrierEvent::Released(r) = event? {
    ///         println!("{}: {} records", r.partition, r.records.len());
    ///     }
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn into_events(
        self,
        every: Duration,
    ) -> impl futures_util::Stream<Item = Result<BarrierEvent, NatsError>> {
        let state = (self, std::collections::VecDeque::new(), false);
        futures_util::stream::unfold(
            state,
            move |(mut barrier, mut queue, mut idle)| async move {
                loop {
                    if let Some(event) = queue.pop_front() {
                        return Some((Ok(event), (barrier, queue, false)));
                    }
                    if idle {
                        tokio::time::sleep(every).await;
                    }
                    match barrier.poll().await {
                        Ok(events) => {
                            idle = events.is_empty();
                            queue.extend(events);
                        }
                        Err(e) => return Some((Err(e), (barrier, queue, true))),
                    }
                }
            },
        )
    }

    /// Every release in the stream from `from`, in order: what downstream consumes.
    pub async fn releases(&self, from: u64) -> Result<Vec<Release>, NatsError> {
        let filter = format!("{}.rel.*", self.config.name);
        let stored = read_stream(
            &self.stream,
            Some(&filter),
            from,
            usize::MAX,
            self.config.retry_for,
        )
        .await?;
        stored
            .into_iter()
            .map(|m| {
                let records = decode(&m.payload).ok_or_else(|| NatsError::Malformed {
                    subject: m.subject.clone(),
                    sequence: m.sequence,
                    reason: "not a batch".into(),
                })?;
                let partition = m.subject.rsplit('.').next().unwrap_or_default().to_string();
                Ok(Release {
                    partition,
                    sequence: m.sequence,
                    records,
                })
            })
            .collect()
    }
}
