//! Keyed order with competing consumers on JetStream: sessions under server-timed leases.
//!
//! One stream `<name>` per keyed component holds four kinds of subjects per partition `p`:
//!
//! | subject | written by | what |
//! |---|---|---|
//! | `<name>.in.<p>` | producers ([`Keyed::publish`]) | the partition's inputs, in order |
//! | `<name>.lease.<p>` | the lease holder | lease messages with a `Nats-TTL` (stream `allow_msg_ttl`) |
//! | `<name>.commit.<p>` | the lease holder | (offset, state) commits |
//! | `<name>.out.<p>` | the lease holder | the session's outputs |
//!
//! **Lease.** A worker *accepts* partition `p` by publishing a lease message on
//! `<name>.lease.<p>` conditioned (`Nats-Expected-Last-Subject-Sequence`) on the subject being
//! empty or ending with a `released` marker. The message carries a TTL: the server removes it
//! when the TTL runs out, which frees the partition; no client clock decides expiry. The
//! runtime renews the lease every third of the TTL by publishing a new lease message conditioned
//! on the previous one. The sequence of the holder's newest lease message is its *fencing
//! token*; the sequence of its first one is its *grant*.
//!
//! **Fencing.** Every commit and every output is published with
//! `Nats-Expected-Last-Subject-Sequence-Subject: <name>.lease.<p>` and
//! `Nats-Expected-Last-Subject-Sequence: <token>` (server 2.11+): the server stores it only if
//! the holder's newest lease message is still the last message of the lease subject. Once that
//! message expired (and stream sequences only grow, so it can never come back) or a successor's
//! lease message followed it, the write is refused ([`NatsError::Fenced`]). The check and the
//! store are one step in the stream leader, in the Raft log's order, so a worker paused past its
//! lease (GC, SIGSTOP) cannot commit or emit after its successor started, whatever its clock
//! says: in the stream, every write of grant `g` precedes the first lease message of the next
//! grant.
//!
//! **Progress.** A session starts from the last commit on `<name>.commit.<p>` (read after the
//! lease is held, so it sees every commit of every predecessor) and reads `<name>.in.<p>` from
//! the next offset through an ordered consumer. Offsets are stream sequences. Output ids are
//! `out:<p>:<input offset>:<index>`, so a successor that reprocesses inputs its predecessor
//! emitted but did not commit produces the same ids, which the server drops inside the
//! duplicate window.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_nats::jetstream::{self, stream};
use bytes::Bytes;
use futures_util::StreamExt;
use tokio::sync::watch;

use super::sequencer::{Fencing, valid_token};
use super::{NatsError, Stored, TTL, headers, last_on_subject, publish, ttl_value};

/// Header: `lease` or `released` on a lease subject.
pub const KIND: &str = "Blazes-Kind";
/// Header: the worker that holds or held the lease.
pub const WORKER: &str = "Blazes-Worker";
/// Header: the grant (sequence of the holder's first lease message) of a lease, commit or output.
pub const GRANT: &str = "Blazes-Grant";
/// Header: the input offset an output or commit belongs to.
pub const OFFSET: &str = "Blazes-Offset";
/// Header: the key of an input.
pub const KEY: &str = "Blazes-Key";

/// A keyed component's stream and its leases.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct KeyedConfig {
    /// Stream name and subject prefix (`[A-Za-z0-9_-]`).
    pub name: String,
    /// Number of partitions (keys are hashed onto them).
    pub partitions: u32,
    /// Lease time to live, whole seconds (the server's TTL granularity), at least 1 s.
    pub lease_ttl: Duration,
    /// Raft replicas of the stream.
    pub replicas: usize,
    /// The server's duplicate window.
    pub duplicate_window: Duration,
    /// How long a write retries while the cluster fails over.
    pub retry_for: Duration,
}

impl KeyedConfig {
    /// A 3-way replicated keyed stream with `partitions` partitions and 5 s leases.
    pub fn new(name: &str, partitions: u32) -> Self {
        KeyedConfig {
            name: name.to_string(),
            partitions,
            lease_ttl: Duration::from_secs(5),
            replicas: 3,
            duplicate_window: Duration::from_secs(120),
            retry_for: super::DEFAULT_RETRY_FOR,
        }
    }
}

setters!(KeyedConfig {
    /// Number of partitions (keys are hashed onto them).
    partitions: u32,
    /// Lease time to live, whole seconds (the server's TTL granularity), at least 1 s
    /// (default: 5 s).
    lease_ttl: Duration,
    /// Raft replicas of the stream (default: 3).
    replicas: usize,
    /// The server's duplicate window (default: 2 min).
    duplicate_window: Duration,
    /// How long a write retries while the cluster fails over.
    retry_for: Duration,
});

/// A keyed component on JetStream.
#[derive(Clone)]
pub struct Keyed {
    js: jetstream::Context,
    stream: stream::Stream,
    config: KeyedConfig,
}

/// One input of a partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    /// Its offset (stream sequence), increasing within the partition.
    pub offset: u64,
    /// Its key.
    pub key: String,
    /// Its payload.
    pub payload: Bytes,
}

/// The partition of `key` among `partitions` (FNV-1a: stable across processes and versions).
pub fn partition_of(key: &str, partitions: u32) -> u32 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in key.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    (h % u64::from(partitions.max(1))) as u32
}

impl Keyed {
    /// Opens (creating if needed) the component's stream.
    pub async fn open(js: jetstream::Context, config: KeyedConfig) -> Result<Self, NatsError> {
        assert!(
            valid_token(&config.name),
            "name `{}` must be [A-Za-z0-9_-]+",
            config.name
        );
        assert!(config.partitions > 0, "a keyed component needs a partition");
        let n = &config.name;
        let stream = super::ensure_stream(
            &js,
            stream::Config {
                name: n.clone(),
                subjects: ["in", "lease", "commit", "out"]
                    .iter()
                    .map(|k| format!("{n}.{k}.*"))
                    .collect(),
                num_replicas: config.replicas,
                duplicate_window: config.duplicate_window,
                allow_message_ttl: true,
                ..Default::default()
            },
            config.retry_for,
        )
        .await?;
        Ok(Keyed { js, stream, config })
    }

    /// The configuration.
    pub fn config(&self) -> &KeyedConfig {
        &self.config
    }

    /// The stream.
    pub fn stream(&self) -> &stream::Stream {
        &self.stream
    }

    /// Appends an input for `key` to its partition; `id` is the producer's idempotency key
    /// (a retry with the same id is stored once).
    pub async fn publish(&self, key: &str, id: &str, payload: Bytes) -> Result<Stored, NatsError> {
        let p = partition_of(key, self.config.partitions);
        let mut h = headers(&format!("in:{id}"), None);
        h.insert(KEY, key);
        let subject = format!("{}.in.{p}", self.config.name);
        publish(&self.js, &subject, h, payload, self.config.retry_for).await
    }

    /// A worker that accepts sessions. `id` names it in lease messages (`[A-Za-z0-9_-]`).
    pub fn worker(&self, id: &str) -> Worker {
        self.worker_with(id, Fencing::Enforced)
    }

    /// [`Keyed::worker`] with a fencing mode; [`Fencing::Off`] (commits and outputs without the
    /// lease condition) exists for the tests' negative control and nothing else.
    #[doc(hidden)]
    pub fn worker_with(&self, id: &str, fencing: Fencing) -> Worker {
        assert!(valid_token(id), "worker id `{id}` must be [A-Za-z0-9_-]+");
        Worker {
            keyed: self.clone(),
            id: id.to_string(),
            fencing,
            held: Arc::new(Mutex::new(BTreeSet::new())),
        }
    }

    fn subject(&self, kind: &str, p: u32) -> String {
        format!("{}.{kind}.{p}", self.config.name)
    }
}

/// A worker: accepts sessions, any number at a time.
pub struct Worker {
    keyed: Keyed,
    id: String,
    fencing: Fencing,
    held: Arc<Mutex<BTreeSet<u32>>>,
}

impl Worker {
    /// Waits until some partition is free and accepts it (the next session). Partitions are
    /// tried from a worker-dependent start, so workers spread; a partition this worker already
    /// holds is skipped.
    pub async fn accept_next(&self) -> Result<Session, NatsError> {
        let n = self.keyed.config.partitions;
        let start = partition_of(&self.id, n);
        let pause = (self.keyed.config.lease_ttl / 8)
            .clamp(Duration::from_millis(50), Duration::from_millis(250));
        loop {
            for i in 0..n {
                let p = (start + i) % n;
                if self.held.lock().expect("held set").contains(&p) {
                    continue;
                }
                if let Some(session) = self.try_accept(p).await? {
                    return Ok(session);
                }
            }
            tokio::time::sleep(pause).await;
        }
    }

    /// The sessions this worker accepts, as a stream: each item is the next
    /// [`Worker::accept_next`]. Run each session in its own task to hold several at once.
    pub fn sessions(&self) -> impl futures_util::Stream<Item = Result<Session, NatsError>> + '_ {
        futures_util::stream::unfold(self, |worker| async move {
            Some((worker.accept_next().await, worker))
        })
    }

    /// Accepts partition `p` if it is free now.
    pub async fn try_accept(&self, p: u32) -> Result<Option<Session>, NatsError> {
        let keyed = &self.keyed;
        let cfg = &keyed.config;
        let lease_subject = keyed.subject("lease", p);
        let last = last_on_subject(&keyed.stream, &lease_subject, cfg.retry_for).await?;
        let expect = match &last {
            None => 0,
            Some(m) if m.header(KIND) == Some("released") => m.sequence,
            Some(_) => return Ok(None),
        };
        // A fresh id per attempt: the subject can be empty again later (every lease expired),
        // and the same id would then be answered as a duplicate of the old grant.
        let mut h = headers(
            &format!("acquire:{p}:{expect}:{}:{}", self.id, super::nonce()),
            None,
        );
        h.insert(
            super::EXPECTED_LAST_SUBJECT_SEQUENCE,
            expect.to_string().as_str(),
        );
        h.insert(KIND, "lease");
        h.insert(WORKER, self.id.as_str());
        h.insert(TTL, ttl_value(cfg.lease_ttl).as_str());
        let grant = match publish(&keyed.js, &lease_subject, h, Bytes::new(), cfg.retry_for).await {
            Ok(stored) => stored.sequence,
            Err(NatsError::Fenced { .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        let lease = Arc::new(tokio::sync::Mutex::new(LeaseState {
            token: grant,
            lost: false,
        }));
        let (lost_tx, lost_rx) = watch::channel(false);
        let lost_tx = Arc::new(lost_tx);
        self.held.lock().expect("held set").insert(p);
        let renewer = tokio::spawn(renew(
            keyed.clone(),
            p,
            self.id.clone(),
            grant,
            lease.clone(),
            lost_tx.clone(),
        ));
        let mut session = Session {
            keyed: keyed.clone(),
            partition: p,
            worker: self.id.clone(),
            grant,
            fencing: self.fencing,
            lease,
            lost: lost_rx,
            lost_tx,
            renewer,
            held: self.held.clone(),
            committed_offset: 0,
            committed_state: Bytes::new(),
            messages: None,
            next_offset: 1,
        };
        // Read after the lease is held: every predecessor's commit precedes our lease message.
        let commit_subject = keyed.subject("commit", p);
        if let Some(m) = last_on_subject(&keyed.stream, &commit_subject, cfg.retry_for).await? {
            if m.payload.len() < 8 {
                return Err(NatsError::Malformed {
                    subject: m.subject,
                    sequence: m.sequence,
                    reason: "a commit is an 8-byte offset and the state".into(),
                });
            }
            session.committed_offset =
                u64::from_be_bytes(m.payload[..8].try_into().expect("8 bytes"));
            session.committed_state = m.payload.slice(8..);
        }
        session.next_offset = session.committed_offset + 1;
        Ok(Some(session))
    }
}

struct LeaseState {
    token: u64,
    lost: bool,
}

/// Renews the lease every third of its TTL until it is lost or released.
async fn renew(
    keyed: Keyed,
    p: u32,
    worker: String,
    grant: u64,
    lease: Arc<tokio::sync::Mutex<LeaseState>>,
    lost_tx: Arc<watch::Sender<bool>>,
) {
    let ttl = keyed.config.lease_ttl.max(Duration::from_secs(1));
    let subject = keyed.subject("lease", p);
    loop {
        tokio::time::sleep(ttl / 3).await;
        let mut state = lease.lock().await;
        if state.lost {
            return;
        }
        let mut h = headers(
            &format!("renew:{p}:{grant}:{}", state.token),
            Some((&subject, state.token)),
        );
        h.insert(KIND, "lease");
        h.insert(WORKER, worker.as_str());
        h.insert(GRANT, grant.to_string().as_str());
        h.insert(TTL, ttl_value(ttl).as_str());
        // Retrying longer than the TTL is pointless: the lease is gone by then.
        match publish(&keyed.js, &subject, h, Bytes::new(), ttl).await {
            Ok(stored) => state.token = stored.sequence,
            Err(_) => {
                state.lost = true;
                let _ = lost_tx.send(true);
                return;
            }
        }
    }
}

/// A partition held under a lease: its inputs in order, and fenced commits and outputs.
pub struct Session {
    keyed: Keyed,
    partition: u32,
    worker: String,
    grant: u64,
    fencing: Fencing,
    lease: Arc<tokio::sync::Mutex<LeaseState>>,
    lost: watch::Receiver<bool>,
    /// Shared with the renewer: whichever learns first that the lease is gone (a failed
    /// renewal, a refused write) ends the session for [`Session::next`].
    lost_tx: Arc<watch::Sender<bool>>,
    renewer: tokio::task::JoinHandle<()>,
    held: Arc<Mutex<BTreeSet<u32>>>,
    committed_offset: u64,
    committed_state: Bytes,
    messages: Option<super::Subscription>,
    next_offset: u64,
}

impl Session {
    /// The partition.
    pub fn partition(&self) -> u32 {
        self.partition
    }

    /// The grant: the sequence of this holder's first lease message; larger for every later
    /// holder of the partition.
    pub fn grant(&self) -> u64 {
        self.grant
    }

    /// The last committed offset (0: none) and state, as of acceptance and this session's own
    /// commits.
    pub fn committed(&self) -> (u64, &Bytes) {
        (self.committed_offset, &self.committed_state)
    }

    /// The next input of the partition, in order; waits for one. `LeaseLost` once the lease
    /// is gone (the session is over; accept another).
    pub async fn next(&mut self) -> Result<Input, NatsError> {
        loop {
            if *self.lost.borrow() {
                return Err(NatsError::LeaseLost {
                    partition: self.partition,
                });
            }
            // One subscription per session: it follows the partition from the next offset,
            // makes a new consumer when one fails, and ends in `Unavailable` once the server
            // has been gone for `retry_for`.
            let messages = self.messages.get_or_insert_with(|| {
                super::subscribe(
                    self.keyed.stream.clone(),
                    Some(self.keyed.subject("in", self.partition)),
                    self.next_offset,
                    self.keyed.config.retry_for,
                )
            });
            let mut lost = self.lost.clone();
            let next = tokio::select! {
                m = messages.next() => m,
                _ = lost.changed() => continue,
            };
            let m = match next {
                Some(Ok(m)) => m,
                // Gone for `retry_for`: a later call starts a new subscription.
                Some(Err(e)) => {
                    self.messages = None;
                    return Err(e);
                }
                None => {
                    self.messages = None;
                    return Err(NatsError::Unavailable {
                        subject: self.keyed.subject("in", self.partition),
                        waited: self.keyed.config.retry_for,
                        source: "the subscription ended".into(),
                    });
                }
            };
            if m.sequence < self.next_offset {
                continue;
            }
            self.next_offset = m.sequence + 1;
            let key = super::header(&m.headers, KEY)
                .unwrap_or_default()
                .to_string();
            return Ok(Input {
                offset: m.sequence,
                key,
                payload: m.payload,
            });
        }
    }

    /// Publishes output `index` of the input at `offset`, fenced by the lease (`&mut`: a
    /// session is driven by one task). Id
    /// `out:<partition>:<offset>:<index>`: a successor reprocessing the input emits the same id.
    pub async fn emit(
        &mut self,
        offset: u64,
        index: u32,
        payload: Bytes,
    ) -> Result<Stored, NatsError> {
        let id = format!("out:{}:{offset}:{index}", self.partition);
        let subject = self.keyed.subject("out", self.partition);
        self.fenced_write(&subject, &id, offset, payload).await
    }

    /// Commits `offset` (the last input reflected in `state`) and `state` as one message,
    /// fenced by the lease.
    pub async fn commit(&mut self, offset: u64, state: Bytes) -> Result<Stored, NatsError> {
        let id = format!("commit:{}:{}:{offset}", self.partition, self.grant);
        let subject = self.keyed.subject("commit", self.partition);
        let mut payload = Vec::with_capacity(8 + state.len());
        payload.extend_from_slice(&offset.to_be_bytes());
        payload.extend_from_slice(&state);
        let stored = self
            .fenced_write(&subject, &id, offset, payload.into())
            .await?;
        self.committed_offset = offset;
        self.committed_state = state;
        Ok(stored)
    }

    async fn fenced_write(
        &mut self,
        subject: &str,
        id: &str,
        offset: u64,
        payload: Bytes,
    ) -> Result<Stored, NatsError> {
        // Held across the publish: a renewal cannot change the token under a write in flight.
        let mut lease = self.lease.lock().await;
        let lease_subject = self.keyed.subject("lease", self.partition);
        let expect = match self.fencing {
            Fencing::Enforced => Some((lease_subject.as_str(), lease.token)),
            Fencing::Off => None,
        };
        let mut h = headers(id, expect);
        h.insert(GRANT, self.grant.to_string().as_str());
        h.insert(WORKER, self.worker.as_str());
        h.insert(OFFSET, offset.to_string().as_str());
        let result = publish(
            &self.keyed.js,
            subject,
            h,
            payload,
            self.keyed.config.retry_for,
        )
        .await;
        if let Err(NatsError::Fenced { .. }) = result {
            lease.lost = true;
            self.lost_tx.send_replace(true);
        }
        result
    }

    /// Gives the partition up: a `released` marker (fenced) lets the next worker accept it
    /// without waiting for the TTL.
    pub async fn release(self) -> Result<(), NatsError> {
        let mut lease = self.lease.lock().await;
        if lease.lost {
            return Ok(());
        }
        let subject = self.keyed.subject("lease", self.partition);
        let mut h = headers(
            &format!("release:{}:{}", self.partition, self.grant),
            Some((&subject, lease.token)),
        );
        h.insert(KIND, "released");
        h.insert(WORKER, self.worker.as_str());
        h.insert(GRANT, self.grant.to_string().as_str());
        lease.lost = true;
        match publish(
            &self.keyed.js,
            &subject,
            h,
            Bytes::new(),
            self.keyed.config.retry_for,
        )
        .await
        {
            Ok(_) | Err(NatsError::Fenced { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.renewer.abort();
        self.held.lock().expect("held set").remove(&self.partition);
    }
}
