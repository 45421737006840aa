//! Async adapters (cargo feature `tokio`): each core runs inside one task that owns it.
//!
//! The cores stay deterministic state machines; this module adds only what they leave out on
//! purpose: a task that serialises callers, channels to reach it, and the wall clock. Every
//! request is a message to the owning task, so no core is ever shared behind a lock, and the
//! order in which the task receives requests *is* the order the core sees (for the sequencer,
//! that order is the point).
//!
//! - [`SequencerService`]: many producers `submit` concurrently; one task assigns the order and
//!   acknowledges a group of submissions only after one `sync` of the log (group commit).
//! - [`SessionService`]: owns the [`SessionBroker`]; reads a monotonic clock (milliseconds since
//!   the service started, the unit of the core's `now`), ticks on an interval and delivers each
//!   [`SessionEvent::LeaseLost`] to the channel of the worker that held the lease.
//! - [`BarrierService`]: a `push` that the core answers with [`BarrierError::Full`] waits in the
//!   task (no polling) until a release frees room, then is retried in arrival order; a partition
//!   pending longer than a configured time is reported once on `stalls`, with the producers it
//!   waits for.
//!
//! The cores do synchronous IO through [`Log`]; [`AsyncLog`] is the same seam in async form.
//! The sequencer service drives its IO-free state ([`SequencerState`]) over an [`AsyncLog`]:
//! either an async engine ([`SequencerService::spawn_on`]) or a synchronous log run on tokio's
//! blocking pool ([`Blocking`], what [`SequencerService::spawn`] uses), so neither its appends
//! nor its group-commit fsync hold a worker thread. The session task runs the broker's calls
//! that write and fsync a log (publish, accept, commit, release) on the blocking pool too, the
//! broker moving there and back; reads, renewals and ticks stay on the task.

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio::time::{Instant, MissedTickBehavior};

use super::barrier::{BarrierError, Release, SealBarrier};
use super::log::Record;
use super::log::{Log, LogError};
use super::sequencer::{
    ATTEMPTS, Envelope, ProducerId, Sequenced, Sequencer, SequencerError, SequencerState,
    Submitted, decode_record,
};
use super::session::{
    BrokerConfig, Lease, PartitionId, Published, Session, SessionBroker, SessionError,
    SessionEvent, SessionMessage, WorkerId,
};

/// Why an adapter call failed.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError<E> {
    /// The core refused this request (e.g. a sequence gap, a fenced lease); the service goes on.
    #[error(transparent)]
    Core(E),
    /// The log failed in a way that leaves its durable state unknown (a failed `sync`); the
    /// service stopped rather than acknowledge anything it cannot vouch for. Reopen the log.
    #[error("service stopped after a log failure: {0}")]
    Fatal(Arc<LogError>),
    /// The service task is gone (it stopped after a fatal error, or its runtime shut down).
    #[error("service task has stopped")]
    Stopped,
}

/// Sends `make(reply)` to the task and waits for the answer, mapping a vanished task to
/// [`ServiceError::Stopped`].
async fn call<Req, T, E>(
    tx: &mpsc::Sender<Req>,
    make: impl FnOnce(oneshot::Sender<Result<T, ServiceError<E>>>) -> Req,
) -> Result<T, ServiceError<E>> {
    let (reply, answer) = oneshot::channel();
    tx.send(make(reply))
        .await
        .map_err(|_| ServiceError::Stopped)?;
    answer.await.unwrap_or(Err(ServiceError::Stopped))
}

/// Bound on requests queued per service: callers beyond it wait in `send`, which is the
/// back-pressure of the request path.
const QUEUE: usize = 1024;

// ------------------------------------------------------------------------------------------
// Sequencer

type SubmitReply = oneshot::Sender<Result<Vec<Submitted>, ServiceError<SequencerError>>>;
type ReadReply = oneshot::Sender<Result<Vec<Sequenced>, ServiceError<SequencerError>>>;

enum SequencerRequest {
    Submit(Vec<Envelope>, SubmitReply),
    ReadFrom(u64, usize, ReadReply),
}

/// Cloneable access to a running [`SequencerService`].
#[derive(Debug, Clone)]
pub struct SequencerHandle {
    tx: mpsc::Sender<SequencerRequest>,
}

/// The task that owns a [`Sequencer`].
#[derive(Debug)]
pub struct SequencerService;

/// Most submissions acknowledged by one `sync`: bounds the latency a group adds to its first
/// member while still amortising the fsync across concurrent producers.
const GROUP: usize = 256;

impl SequencerService {
    /// Opens a sequencer on `log` (rebuilding high-water marks, so idempotence survives a
    /// restart) and spawns the task that owns it on the current runtime. The log runs on the
    /// blocking pool ([`Blocking`]), so its IO, fsync included, never holds a worker thread.
    /// The task ends when every handle is dropped; it returns the log so a caller can reopen or
    /// inspect it.
    pub fn spawn<L>(log: L) -> Result<(SequencerHandle, JoinHandle<L>), SequencerError>
    where
        L: Log + Send + 'static,
    {
        let (log, state) = Sequencer::open(log)?.into_parts();
        let (tx, rx) = mpsc::channel(QUEUE);
        let task = tokio::spawn(async move {
            run_sequencer(state, Blocking::new(log), rx)
                .await
                .into_inner()
        });
        Ok((SequencerHandle { tx }, task))
    }

    /// Like [`SequencerService::spawn`], over an engine that is async itself: the high-water
    /// marks are rebuilt from `log` first, then the task owns it.
    pub async fn spawn_on<A: AsyncLog>(
        mut log: A,
    ) -> Result<(SequencerHandle, JoinHandle<A>), SequencerError> {
        let mut state = SequencerState::new();
        catch_up(&mut state, &mut log).await?;
        let (tx, rx) = mpsc::channel(QUEUE);
        let task = tokio::spawn(run_sequencer(state, log, rx));
        Ok((SequencerHandle { tx }, task))
    }
}

/// The [`Log`] seam in async form, for an engine whose operations are round trips. Same
/// contract as [`Log`]: `append_expected` appends only at `expected_end` (else
/// [`LogError::Conflict`], nothing appended), an error for which [`LogError::is_ambiguous`]
/// holds leaves the batch's presence unknown, `read_durable` returns durable records only, and
/// `sync` makes every appended record durable (a no-op for an engine that acknowledges only
/// stored records). A call's future must be driven to completion before the next call.
pub trait AsyncLog: Send + 'static {
    /// [`Log::append_expected`].
    fn append_expected(
        &mut self,
        batch: Vec<Vec<u8>>,
        expected_end: u64,
    ) -> impl Future<Output = Result<Vec<u64>, LogError>> + Send;
    /// [`Log::read_durable`].
    fn read_durable(
        &mut self,
        offset: u64,
        max: usize,
    ) -> impl Future<Output = Result<Vec<Record>, LogError>> + Send;
    /// [`Log::sync`].
    fn sync(&mut self) -> impl Future<Output = Result<(), LogError>> + Send;
}

/// A synchronous [`Log`] as an [`AsyncLog`]: each call runs on tokio's blocking pool, so file
/// IO and its fsync never hold a worker thread.
#[derive(Debug)]
pub struct Blocking<L>(Option<L>);

impl<L: Log + Send + 'static> Blocking<L> {
    /// Wraps `log`.
    pub fn new(log: L) -> Self {
        Blocking(Some(log))
    }

    /// The wrapped log.
    pub fn into_inner(self) -> L {
        self.0
            .expect("a Blocking log is only taken during a call, and calls run to completion")
    }

    async fn run<T: Send + 'static>(&mut self, op: impl FnOnce(&mut L) -> T + Send + 'static) -> T {
        let mut log = self
            .0
            .take()
            .expect("a Blocking log is only taken during a call, and calls run to completion");
        let back = tokio::task::spawn_blocking(move || {
            let out = op(&mut log);
            (log, out)
        })
        .await;
        let (log, out) = match back {
            Ok(back) => back,
            Err(join) => std::panic::resume_unwind(join.into_panic()),
        };
        self.0 = Some(log);
        out
    }
}

impl<L: Log + Send + 'static> AsyncLog for Blocking<L> {
    async fn append_expected(
        &mut self,
        batch: Vec<Vec<u8>>,
        expected_end: u64,
    ) -> Result<Vec<u64>, LogError> {
        self.run(move |log| {
            let refs: Vec<&[u8]> = batch.iter().map(Vec::as_slice).collect();
            log.append_expected(&refs, expected_end)
        })
        .await
    }

    async fn read_durable(&mut self, offset: u64, max: usize) -> Result<Vec<Record>, LogError> {
        self.run(move |log| log.read_durable(offset, max)).await
    }

    async fn sync(&mut self) -> Result<(), LogError> {
        self.run(|log| log.sync()).await
    }
}

/// Folds the log from the state's end (after a sync, so an ambiguous append's records count).
async fn catch_up<A: AsyncLog>(
    state: &mut SequencerState,
    log: &mut A,
) -> Result<(), SequencerError> {
    log.sync().await?;
    loop {
        let batch = log.read_durable(state.end(), 4096).await?;
        if batch.is_empty() {
            break;
        }
        state.fold(&batch)?;
    }
    state.caught_up();
    Ok(())
}

/// [`Sequencer::submit`] over an async log: conditional append, catch-up on a conflict or
/// after an ambiguous failure.
async fn submit<A: AsyncLog>(
    state: &mut SequencerState,
    log: &mut A,
    batch: &[Envelope],
) -> Result<Vec<Submitted>, SequencerError> {
    for _ in 0..ATTEMPTS {
        if state.needs_catch_up() {
            catch_up(state, log).await?;
        }
        let prepared = state.prepare(batch)?;
        let appended = if prepared.records().is_empty() {
            Ok(Vec::new())
        } else {
            log.append_expected(prepared.records().to_vec(), prepared.expected_end())
                .await
        };
        match state.complete(prepared, appended) {
            Ok(out) => return Ok(out),
            Err(LogError::Conflict { .. }) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(SequencerError::Contended { attempts: ATTEMPTS })
}

async fn read<A: AsyncLog>(
    log: &mut A,
    offset: u64,
    max: usize,
) -> Result<Vec<Sequenced>, SequencerError> {
    log.read_durable(offset, max)
        .await?
        .iter()
        .map(decode_record)
        .collect()
}

async fn run_sequencer<A: AsyncLog>(
    mut state: SequencerState,
    mut log: A,
    mut rx: mpsc::Receiver<SequencerRequest>,
) -> A {
    let mut group: Vec<(SubmitReply, Result<Vec<Submitted>, SequencerError>)> = Vec::new();
    while let Some(first) = rx.recv().await {
        // Take what is already queued so that one sync covers every producer waiting now.
        let mut next = Some(first);
        while let Some(req) = next {
            match req {
                SequencerRequest::Submit(batch, reply) => {
                    // Each producer's batch is its own submission: a gap in one must not
                    // reject the messages of another.
                    group.push((reply, submit(&mut state, &mut log, &batch).await));
                }
                SequencerRequest::ReadFrom(offset, max, reply) => {
                    // Reads see durable records only: a record of the group being built is
                    // invisible until the group's sync, so no reader acts on an offset a crash
                    // could hand to another message.
                    let _ = reply.send(
                        read(&mut log, offset, max)
                            .await
                            .map_err(ServiceError::Core),
                    );
                }
            }
            next = if group.len() < GROUP {
                rx.try_recv().ok()
            } else {
                None
            };
        }
        if group.is_empty() {
            continue;
        }
        if let Err(e) = log.sync().await {
            // Records of this group may or may not be on disk, and the high-water marks already
            // count them, so a retry would be acknowledged as a duplicate of something that may
            // be lost. Stop instead; reopening the log recovers a state that is known.
            let e = Arc::new(e);
            for (reply, _) in group.drain(..) {
                let _ = reply.send(Err(ServiceError::Fatal(e.clone())));
            }
            rx.close();
            while let Some(req) = rx.recv().await {
                match req {
                    SequencerRequest::Submit(_, reply) => {
                        let _ = reply.send(Err(ServiceError::Fatal(e.clone())));
                    }
                    SequencerRequest::ReadFrom(_, _, reply) => {
                        let _ = reply.send(Err(ServiceError::Fatal(e.clone())));
                    }
                }
            }
            break;
        }
        for (reply, result) in group.drain(..) {
            let _ = reply.send(result.map_err(ServiceError::Core));
        }
    }
    log
}

impl SequencerHandle {
    /// Submits a producer's batch; resolves once the new messages are durable. Per envelope,
    /// `Appended(offset)` or `Duplicate` (a retry of a message already in the order).
    pub async fn submit(
        &self,
        batch: Vec<Envelope>,
    ) -> Result<Vec<Submitted>, ServiceError<SequencerError>> {
        call(&self.tx, |reply| SequencerRequest::Submit(batch, reply)).await
    }

    /// Reads up to `max` sequenced messages from `offset`.
    pub async fn read_from(
        &self,
        offset: u64,
        max: usize,
    ) -> Result<Vec<Sequenced>, ServiceError<SequencerError>> {
        call(&self.tx, |reply| {
            SequencerRequest::ReadFrom(offset, max, reply)
        })
        .await
    }
}

// ------------------------------------------------------------------------------------------
// Sessions

type SessionReply<T> = oneshot::Sender<Result<T, ServiceError<SessionError>>>;

struct PublishRequest {
    producer: ProducerId,
    seq: u64,
    key: Vec<u8>,
    payload: Vec<u8>,
}

enum SessionRequest {
    Register(
        WorkerId,
        oneshot::Sender<mpsc::UnboundedReceiver<SessionEvent>>,
    ),
    Publish(PublishRequest, SessionReply<Published>),
    Accept(WorkerId, Option<PartitionId>, SessionReply<Option<Session>>),
    Renew(Lease, SessionReply<Lease>),
    Poll(Lease, usize, SessionReply<Vec<SessionMessage>>),
    Commit(Lease, u64, Vec<u8>, SessionReply<()>),
    Release(Lease, SessionReply<()>),
}

/// Timing of a [`SessionService`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionConfig {
    /// Lease time-to-live; a worker must renew more often than this.
    pub ttl: Duration,
    /// How often the task looks for expired leases. An expiry is enforced to the millisecond by
    /// every call; this only bounds how late the `LeaseLost` event reaches an idle worker.
    pub tick: Duration,
}

/// Cloneable access to a running [`SessionService`].
#[derive(Debug, Clone)]
pub struct SessionHandle {
    tx: mpsc::Sender<SessionRequest>,
}

/// The task that owns a [`SessionBroker`] and its clock.
#[derive(Debug)]
pub struct SessionService;

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl SessionService {
    /// Opens the broker over its logs and spawns the task that owns it on the current runtime.
    /// The task ends when every handle is dropped and returns the broker (e.g. to reopen its
    /// logs after a simulated crash).
    pub fn spawn<L>(
        partition_logs: Vec<L>,
        control: L,
        config: SessionConfig,
    ) -> Result<(SessionHandle, JoinHandle<SessionBroker<L>>), SessionError>
    where
        L: Log + Send + 'static,
    {
        // The core counts milliseconds; converting here keeps the unit in one place. The task's
        // clock starts at 0 (see `run_sessions`), so restored leases run one TTL from now.
        // The token secret only has to be unguessable: tokens are stored with their grants.
        let secret = {
            use std::hash::{BuildHasher, Hasher};
            std::hash::RandomState::new().build_hasher().finish()
        };
        let broker = BrokerConfig {
            lease_ttl: millis(config.ttl),
            now: 0,
            secret,
        };
        let core = SessionBroker::open(partition_logs, control, broker)?;
        let (tx, rx) = mpsc::channel(QUEUE);
        let task = tokio::spawn(run_sessions(core, rx, config.tick));
        Ok((SessionHandle { tx }, task))
    }
}

/// Runs `op` on the broker on tokio's blocking pool, for the calls that write and fsync a log;
/// the broker travels there and back, as the task's sole owner.
async fn offload<L, T>(
    core: SessionBroker<L>,
    op: impl FnOnce(&mut SessionBroker<L>) -> T + Send + 'static,
) -> (SessionBroker<L>, T)
where
    L: Log + Send + 'static,
    T: Send + 'static,
{
    let mut core = core;
    let back = tokio::task::spawn_blocking(move || {
        let out = op(&mut core);
        (core, out)
    })
    .await;
    match back {
        Ok(back) => back,
        Err(join) => std::panic::resume_unwind(join.into_panic()),
    }
}

async fn run_sessions<L: Log + Send + 'static>(
    mut core: SessionBroker<L>,
    mut rx: mpsc::Receiver<SessionRequest>,
    tick: Duration,
) -> SessionBroker<L> {
    // The clock's origin is this task's start, which is the `now` the broker was opened at
    // (restored leases run one TTL from it); `tokio::time::Instant` is monotonic and follows
    // the paused clock in tests.
    let start = Instant::now();
    let now = || millis(start.elapsed());
    let mut workers: BTreeMap<WorkerId, mpsc::UnboundedSender<SessionEvent>> = BTreeMap::new();
    let mut ticker = tokio::time::interval(tick.max(Duration::from_millis(1)));
    // After a stall, one catch-up tick finds every expired lease; a burst would find nothing more.
    ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        let req = tokio::select! {
            // Requests first, so the interleaving of calls and ticks does not depend on
            // `select!`'s random choice. Ticks cannot starve: every call delivers events too.
            biased;
            req = rx.recv() => match req {
                Some(req) => req,
                None => break,
            },
            _ = ticker.tick() => {
                deliver(&mut workers, core.tick(now()));
                continue;
            }
        };
        let t = now();
        // A call can itself expire leases (the core checks time on every call), so deliver the
        // resulting events *before* answering: a worker that loses its lease to a takeover is
        // told no later than the worker that took over learns of its grant.
        macro_rules! answer {
            ($reply:expr, $result:expr) => {{
                let result = $result.map_err(ServiceError::Core);
                deliver(&mut workers, core.tick(t));
                let _ = $reply.send(result);
            }};
        }
        match req {
            SessionRequest::Register(worker, reply) => {
                let (etx, erx) = mpsc::unbounded_channel();
                // A restarted worker re-registers under its id; the old receiver is dead anyway.
                workers.insert(worker, etx);
                let _ = reply.send(erx);
            }
            // Publishes, grants, commits and releases write (and fsync) a log: off the worker.
            SessionRequest::Publish(m, reply) => {
                let result;
                (core, result) = offload(core, move |c| {
                    c.publish(m.producer, m.seq, &m.key, &m.payload)
                })
                .await;
                answer!(reply, result)
            }
            SessionRequest::Accept(worker, partition, reply) => {
                let result;
                (core, result) = offload(core, move |c| match partition {
                    None => c.accept(worker, t),
                    Some(p) => c.accept_partition(worker, p, t),
                })
                .await;
                answer!(reply, result)
            }
            SessionRequest::Renew(lease, reply) => answer!(reply, core.renew(&lease, t)),
            SessionRequest::Poll(lease, max, reply) => {
                answer!(reply, core.poll(&lease, t, max))
            }
            SessionRequest::Commit(lease, next, state, reply) => {
                let result;
                (core, result) = offload(core, move |c| c.commit(&lease, next, &state, t)).await;
                answer!(reply, result)
            }
            SessionRequest::Release(lease, reply) => {
                let result;
                (core, result) = offload(core, move |c| c.release(&lease, t)).await;
                answer!(reply, result)
            }
        }
    }
    core
}

/// Sends each event to the worker it concerns. The channels are unbounded because each
/// `LeaseLost` answers one earlier grant to that worker, so a worker can only fall behind by
/// as many events as it accepted sessions; a worker that never registered or went away gets
/// nothing, and fencing still stops it.
fn deliver(
    workers: &mut BTreeMap<WorkerId, mpsc::UnboundedSender<SessionEvent>>,
    events: Vec<SessionEvent>,
) {
    for event in events {
        let SessionEvent::LeaseLost { worker, .. } = event;
        if let Some(tx) = workers.get(&worker)
            && tx.send(event).is_err()
        {
            workers.remove(&worker);
        }
    }
}

impl SessionHandle {
    /// Registers `worker` for events and returns the channel its `LeaseLost` events arrive on.
    /// Register before accepting, or a loss in between goes unreported (fencing still holds).
    pub async fn register(
        &self,
        worker: WorkerId,
    ) -> Result<mpsc::UnboundedReceiver<SessionEvent>, ServiceError<SessionError>> {
        let (reply, answer) = oneshot::channel();
        self.tx
            .send(SessionRequest::Register(worker, reply))
            .await
            .map_err(|_| ServiceError::Stopped)?;
        answer.await.map_err(|_| ServiceError::Stopped)
    }

    /// Appends message `seq` of `producer` (counted per partition, see
    /// [`SessionBroker::publish`]) to its key's partition; resolves once it is durable.
    pub async fn publish(
        &self,
        producer: ProducerId,
        seq: u64,
        key: Vec<u8>,
        payload: Vec<u8>,
    ) -> Result<Published, ServiceError<SessionError>> {
        let request = PublishRequest {
            producer,
            seq,
            key,
            payload,
        };
        call(&self.tx, |reply| SessionRequest::Publish(request, reply)).await
    }

    /// Grants `worker` the lowest-numbered free session, if any.
    pub async fn accept(
        &self,
        worker: WorkerId,
    ) -> Result<Option<Session>, ServiceError<SessionError>> {
        call(&self.tx, |reply| {
            SessionRequest::Accept(worker, None, reply)
        })
        .await
    }

    /// Grants `worker` the session of `partition` if nobody holds a valid lease on it.
    pub async fn accept_partition(
        &self,
        worker: WorkerId,
        partition: PartitionId,
    ) -> Result<Option<Session>, ServiceError<SessionError>> {
        call(&self.tx, |reply| {
            SessionRequest::Accept(worker, Some(partition), reply)
        })
        .await
    }

    /// Extends a valid lease by the TTL from now; use the returned lease from then on.
    pub async fn renew(&self, lease: Lease) -> Result<Lease, ServiceError<SessionError>> {
        call(&self.tx, |reply| SessionRequest::Renew(lease, reply)).await
    }

    /// Delivers up to `max` further messages of the session, in log order.
    pub async fn poll(
        &self,
        lease: Lease,
        max: usize,
    ) -> Result<Vec<SessionMessage>, ServiceError<SessionError>> {
        call(&self.tx, |reply| SessionRequest::Poll(lease, max, reply)).await
    }

    /// Records offset and state together; refused for a stale or expired lease.
    pub async fn commit(
        &self,
        lease: Lease,
        next_offset: u64,
        state: Vec<u8>,
    ) -> Result<(), ServiceError<SessionError>> {
        call(&self.tx, |reply| {
            SessionRequest::Commit(lease, next_offset, state, reply)
        })
        .await
    }

    /// Gives a session back before its TTL.
    pub async fn release(&self, lease: Lease) -> Result<(), ServiceError<SessionError>> {
        call(&self.tx, |reply| SessionRequest::Release(lease, reply)).await
    }
}

// ------------------------------------------------------------------------------------------
// Seal barrier

enum Offer<P, R> {
    Record(ProducerId, P, u64, R),
    Seal(ProducerId, P, u64),
}

type PushReply = oneshot::Sender<Result<(), ServiceError<BarrierError>>>;

/// Cloneable access to a running [`BarrierService`].
pub struct BarrierHandle<P, R> {
    tx: mpsc::Sender<(Offer<P, R>, PushReply)>,
}

impl<P, R> Clone for BarrierHandle<P, R> {
    fn clone(&self) -> Self {
        BarrierHandle {
            tx: self.tx.clone(),
        }
    }
}

impl<P, R> Debug for BarrierHandle<P, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BarrierHandle").finish_non_exhaustive()
    }
}

/// A partition that has waited longer than [`BarrierConfig::stall_after`] for its producers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stalled<P> {
    /// The partition.
    pub partition: P,
    /// Producers it waits for (no seal yet, or records missing below their seal's count).
    pub missing: Vec<ProducerId>,
    /// How long since its first message arrived.
    pub waiting: Duration,
}

/// Configuration of a [`BarrierService`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BarrierConfig {
    /// Releases that may wait for the consumer before the task waits for it.
    pub max_waiting: usize,
    /// A partition pending this long after its first message is reported on
    /// [`BarrierService::stalls`] (once), naming the producers it waits for.
    pub stall_after: Duration,
}

/// The task that owns a [`SealBarrier`], as [`BarrierService::spawn`] returns it.
#[derive(Debug)]
pub struct BarrierService<P: Ord, R> {
    /// Where producers push records and seals (clone it per producer).
    pub handle: BarrierHandle<P, R>,
    /// Released partitions, in the order they completed.
    pub releases: mpsc::Receiver<Release<P, R>>,
    /// Partitions whose producers stopped short of completing them (a producer that stopped
    /// sealing, or lost records): the barrier cannot tell a slow producer from a dead one, so
    /// it reports and keeps waiting; removing a dead producer is a membership decision
    /// ([`SealBarrier::set_producers`] on the core).
    pub stalls: mpsc::UnboundedReceiver<Stalled<P>>,
    /// Ends when every handle is dropped or the receiver of releases is; yields the barrier.
    pub task: JoinHandle<SealBarrier<P, R>>,
}

impl<P, R> BarrierService<P, R>
where
    P: Ord + Clone + Debug + Send + 'static,
    R: Clone + PartialEq + Send + 'static,
{
    /// Spawns the task that owns `barrier`. Releases come out of `releases`, in the order
    /// partitions complete; at most `config.max_waiting` of them wait there before the task
    /// waits for the consumer, so a slow consumer slows producers instead of growing memory.
    pub fn spawn(barrier: SealBarrier<P, R>, config: BarrierConfig) -> Self {
        let (tx, rx) = mpsc::channel(QUEUE);
        let (out_tx, out_rx) = mpsc::channel(config.max_waiting.max(1));
        let (stall_tx, stall_rx) = mpsc::unbounded_channel();
        BarrierService {
            handle: BarrierHandle { tx },
            releases: out_rx,
            stalls: stall_rx,
            task: tokio::spawn(run_barrier(
                barrier,
                rx,
                out_tx,
                stall_tx,
                config.stall_after,
            )),
        }
    }
}

fn offered_partition<P, R>(offer: &Offer<P, R>) -> &P {
    match offer {
        Offer::Record(_, p, _, _) | Offer::Seal(_, p, _) => p,
    }
}

async fn run_barrier<P, R>(
    mut core: SealBarrier<P, R>,
    mut rx: mpsc::Receiver<(Offer<P, R>, PushReply)>,
    out: mpsc::Sender<Release<P, R>>,
    stalls: mpsc::UnboundedSender<Stalled<P>>,
    stall_after: Duration,
) -> SealBarrier<P, R>
where
    P: Ord + Clone + Debug,
    R: Clone + PartialEq,
{
    // Records the core refused with `Full`, oldest first. They wait here, not in a retry loop
    // of the producer: only a release frees room, so they are retried exactly then.
    let mut parked: VecDeque<(Offer<P, R>, PushReply)> = VecDeque::new();
    // Pending partitions: when their first message arrived, and whether they were reported.
    let mut since: BTreeMap<P, (Instant, bool)> = BTreeMap::new();
    let mut ticker = tokio::time::interval((stall_after / 4).max(Duration::from_millis(1)));
    ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        let (offer, reply) = tokio::select! {
            biased;
            req = rx.recv() => match req {
                Some(req) => req,
                None => break,
            },
            _ = ticker.tick() => {
                let now = Instant::now();
                for (partition, (first, reported)) in since.iter_mut() {
                    let waiting = now.duration_since(*first);
                    if !*reported && waiting >= stall_after {
                        *reported = true;
                        let missing = core.missing(partition);
                        let _ = stalls.send(Stalled { partition: partition.clone(), missing, waiting });
                    }
                }
                continue;
            }
        };
        let partition = offered_partition(&offer).clone();
        let released = apply(&mut core, offer, reply, &mut parked);
        if !core.is_released(&partition) && !core.missing(&partition).is_empty() {
            since
                .entry(partition)
                .or_insert_with(|| (Instant::now(), false));
        }
        let mut released = match released {
            Some(release) => vec![release],
            None => continue,
        };
        while !released.is_empty() {
            for release in released.drain(..) {
                since.remove(&release.partition);
                if out.send(release).await.is_err() {
                    // Nobody consumes releases any more: accepting records would be pointless.
                    return core;
                }
            }
            // A release freed room: retry the parked records once each, in arrival order; one
            // that is still refused goes back to the end of the line.
            for _ in 0..parked.len() {
                let Some((offer, reply)) = parked.pop_front() else {
                    break;
                };
                released.extend(apply(&mut core, offer, reply, &mut parked));
            }
        }
    }
    core
}

/// Offers one message to the core and answers its sender, except on `Full`, where the message
/// is parked with its reply still pending. Returns the release it completed, if any.
fn apply<P, R>(
    core: &mut SealBarrier<P, R>,
    offer: Offer<P, R>,
    reply: PushReply,
    parked: &mut VecDeque<(Offer<P, R>, PushReply)>,
) -> Option<Release<P, R>>
where
    P: Ord + Clone + Debug,
    R: Clone + PartialEq,
{
    let result = match &offer {
        Offer::Record(producer, partition, index, record) => {
            core.offer_record(*producer, partition.clone(), *index, record.clone())
        }
        Offer::Seal(producer, partition, count) => {
            core.offer_seal(*producer, partition.clone(), *count)
        }
    };
    match result {
        Err(BarrierError::Full { .. }) => {
            parked.push_back((offer, reply));
            None
        }
        Err(e) => {
            let _ = reply.send(Err(ServiceError::Core(e)));
            None
        }
        Ok(release) => {
            let _ = reply.send(Ok(()));
            release
        }
    }
}

impl<P, R> BarrierHandle<P, R> {
    async fn offer(&self, offer: Offer<P, R>) -> Result<(), ServiceError<BarrierError>> {
        let (reply, answer) = oneshot::channel();
        self.tx
            .send((offer, reply))
            .await
            .map_err(|_| ServiceError::Stopped)?;
        answer.await.unwrap_or(Err(ServiceError::Stopped))
    }

    /// Offers record `index` of `producer` for `partition`; resolves once the barrier accepted
    /// it, waiting while the buffer is full. Errors other than `Full` are returned at once.
    pub async fn push(
        &self,
        producer: ProducerId,
        partition: P,
        index: u64,
        record: R,
    ) -> Result<(), ServiceError<BarrierError>> {
        self.offer(Offer::Record(producer, partition, index, record))
            .await
    }

    /// Offers `producer`'s seal of `partition`, announcing `count` records.
    pub async fn seal(
        &self,
        producer: ProducerId,
        partition: P,
        count: u64,
    ) -> Result<(), ServiceError<BarrierError>> {
        self.offer(Offer::Seal(producer, partition, count)).await
    }
}
