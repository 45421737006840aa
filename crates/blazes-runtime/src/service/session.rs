//! The session task: the broker, its clock and lease-loss events.

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio::time::{Instant, MissedTickBehavior};

use super::{QUEUE, ServiceError, call, offload};
use crate::log::Log;
use crate::sequencer::ProducerId;
use crate::session::{
    BrokerConfig, Lease, PartitionId, Published, Session, SessionBroker, SessionError,
    SessionEvent, SessionMessage, WorkerId,
};

type SessionReply<T> = oneshot::Sender<Result<T, ServiceError<SessionError>>>;

struct PublishRequest {
    producer: ProducerId,
    epoch: u64,
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
    BeginEpoch(ProducerId, SessionReply<u64>),
    Accept(WorkerId, Option<PartitionId>, SessionReply<Option<Session>>),
    Renew(Lease, SessionReply<Lease>),
    Poll(Lease, usize, SessionReply<Vec<SessionMessage>>),
    Commit(Lease, u64, Vec<u8>, SessionReply<()>),
    Release(Lease, SessionReply<()>),
}

/// Timing of a [`SessionService`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionConfig {
    /// Lease time-to-live; a worker must renew more often than this.
    pub ttl: Duration,
    /// How often the task looks for expired leases. An expiry is enforced to the millisecond by
    /// every call; this only bounds how late the `LeaseLost` event reaches an idle worker.
    pub tick: Duration,
}

impl SessionConfig {
    /// Leases of `ttl`, expiries looked for every tenth of it (at least every millisecond).
    pub fn new(ttl: Duration) -> Self {
        SessionConfig {
            ttl,
            tick: (ttl / 10).max(Duration::from_millis(1)),
        }
    }
}

setters!(SessionConfig {
    /// Lease time-to-live; a worker must renew more often than this.
    ttl: Duration,
    /// How often the task looks for expired leases (default: a tenth of the TTL).
    tick: Duration,
});

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
                    c.publish(m.producer, m.epoch, m.seq, &m.key, &m.payload)
                })
                .await;
                answer!(reply, result)
            }
            SessionRequest::BeginEpoch(producer, reply) => {
                let result;
                (core, result) = offload(core, move |c| c.begin_epoch(producer)).await;
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
        // As in `answer_or_stopped`: a request queued as the task ends is never answered.
        let mut answer = answer;
        tokio::select! {
            biased;
            answered = &mut answer => answered.map_err(|_| ServiceError::Stopped),
            () = self.tx.closed() => answer.try_recv().map_err(|_| ServiceError::Stopped),
        }
    }

    /// Starts a new epoch for a (re)started `producer` ([`SessionBroker::begin_epoch`]);
    /// resolves once it is durable.
    pub async fn begin_epoch(
        &self,
        producer: ProducerId,
    ) -> Result<u64, ServiceError<SessionError>> {
        call(&self.tx, |reply| {
            SessionRequest::BeginEpoch(producer, reply)
        })
        .await
    }

    /// Appends message `seq` of `producer`'s `epoch` (counted per partition, see
    /// [`SessionBroker::publish`]) to its key's partition; resolves once it is durable.
    pub async fn publish(
        &self,
        producer: ProducerId,
        epoch: u64,
        seq: u64,
        key: Vec<u8>,
        payload: Vec<u8>,
    ) -> Result<Published, ServiceError<SessionError>> {
        let request = PublishRequest {
            producer,
            epoch,
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
