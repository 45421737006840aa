//! The barrier task: a [`DurableBarrier`] with group commit, back-pressure without polling,
//! stall reports.

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio::time::{Instant, MissedTickBehavior};

use super::{QUEUE, ServiceError, offload};
use crate::barrier::{
    BarrierError, BarrierOp, DurableBarrier, DurableBarrierError, Release, SealBarrier,
};
use crate::log::{Log, LogError};
use crate::sequencer::ProducerId;

type PushReply = oneshot::Sender<Result<(), ServiceError<BarrierError>>>;

/// Cloneable access to a running [`BarrierService`].
pub struct BarrierHandle<P, R> {
    tx: mpsc::Sender<(BarrierOp<P, R>, PushReply)>,
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
#[non_exhaustive]
pub struct BarrierConfig {
    /// Releases that may wait for the consumer before the task waits for it.
    pub max_waiting: usize,
    /// A partition pending this long after its first message is reported on
    /// [`BarrierService::stalls`] (once), naming the producers it waits for.
    pub stall_after: Duration,
    /// Journal records between snapshots ([`DurableBarrier::compact_every`]).
    pub compact_every: u64,
}

impl Default for BarrierConfig {
    /// 64 waiting releases, stalls reported after 30 s, a snapshot as often as
    /// [`DurableBarrier`] takes one by default.
    fn default() -> Self {
        BarrierConfig {
            max_waiting: 64,
            stall_after: Duration::from_secs(30),
            compact_every: crate::barrier::COMPACT_EVERY,
        }
    }
}

setters!(BarrierConfig {
    /// Releases that may wait for the consumer before the task waits for it (default: 64).
    max_waiting: usize,
    /// A partition pending this long after its first message is reported as stalled
    /// (default: 30 s).
    stall_after: Duration,
    /// Journal records between snapshots (default: the durable barrier's own).
    compact_every: u64,
});

/// The task that owns a [`DurableBarrier`], as [`BarrierService::open`] returns it.
#[derive(Debug)]
pub struct BarrierService<P: Ord, R, L> {
    /// Where producers push records and seals (clone it per producer), and where the consumer
    /// acknowledges releases ([`BarrierHandle::delivered`]).
    pub handle: BarrierHandle<P, R>,
    /// Released partitions: first those decided before a crash and not acknowledged, then new
    /// ones in the order they completed. Each is durable before it is sent.
    pub releases: mpsc::Receiver<Release<P, R>>,
    /// Partitions whose producers stopped short of completing them (a producer that stopped
    /// sealing, or lost records): the barrier cannot tell a slow producer from a dead one, so
    /// it reports and keeps waiting; removing a dead producer is a membership decision
    /// ([`BarrierHandle::set_producers`]).
    pub stalls: mpsc::UnboundedReceiver<Stalled<P>>,
    /// Ends when every handle is dropped, the receiver of releases is, or the journal failed;
    /// yields the barrier.
    pub task: JoinHandle<DurableBarrier<P, R, L>>,
}

/// Most messages journaled by one append and one sync.
const GROUP: usize = 256;

impl<P, R, L> BarrierService<P, R, L>
where
    P: Ord + Clone + Debug + Serialize + DeserializeOwned + Send + 'static,
    R: Clone + PartialEq + Serialize + DeserializeOwned + Send + 'static,
    L: Log + Send + 'static,
{
    /// Opens the barrier on `journal` ([`DurableBarrier::open`], replaying it into `empty`) and
    /// spawns the task that owns it. The journal's IO, fsync included, runs on tokio's blocking
    /// pool. Releases come out of `releases`; at most `config.max_waiting` of them wait there
    /// before the task waits for the consumer, so a slow consumer slows producers instead of
    /// growing memory.
    pub fn open(
        empty: SealBarrier<P, R>,
        journal: L,
        config: BarrierConfig,
    ) -> Result<Self, DurableBarrierError> {
        let (mut barrier, undelivered) = DurableBarrier::open(empty, journal)?;
        barrier.compact_every(config.compact_every);
        let (tx, rx) = mpsc::channel(QUEUE);
        let (out_tx, out_rx) = mpsc::channel(config.max_waiting.max(1));
        let (stall_tx, stall_rx) = mpsc::unbounded_channel();
        Ok(BarrierService {
            handle: BarrierHandle { tx },
            releases: out_rx,
            stalls: stall_rx,
            task: tokio::spawn(run_barrier(
                barrier,
                undelivered,
                rx,
                out_tx,
                stall_tx,
                config.stall_after,
            )),
        })
    }
}

/// The journal failed: what the task tells every caller it cannot answer any more.
fn fatal(e: DurableBarrierError) -> Arc<LogError> {
    Arc::new(match e {
        DurableBarrierError::Log(e) => e,
        other => LogError::Io {
            path: "barrier journal".into(),
            source: std::io::Error::other(other.to_string()),
        },
    })
}

async fn run_barrier<P, R, L>(
    mut core: DurableBarrier<P, R, L>,
    undelivered: Vec<Release<P, R>>,
    mut rx: mpsc::Receiver<(BarrierOp<P, R>, PushReply)>,
    out: mpsc::Sender<Release<P, R>>,
    stalls: mpsc::UnboundedSender<Stalled<P>>,
    stall_after: Duration,
) -> DurableBarrier<P, R, L>
where
    P: Ord + Clone + Debug + Serialize + DeserializeOwned + Send + 'static,
    R: Clone + PartialEq + Serialize + DeserializeOwned + Send + 'static,
    L: Log + Send + 'static,
{
    // Decided before a crash, not acknowledged: handed out again first, identical.
    for release in undelivered {
        if out.send(release).await.is_err() {
            return core;
        }
    }
    // Messages the core refused with `Full`, oldest first. They wait here, not in a retry loop
    // of the producer: only a release frees room, so they are retried exactly then.
    let mut parked: VecDeque<(BarrierOp<P, R>, PushReply)> = VecDeque::new();
    // Pending partitions: when their first message arrived, and whether they were reported.
    let mut since: BTreeMap<P, (Instant, bool)> = BTreeMap::new();
    let mut ticker = tokio::time::interval((stall_after / 4).max(Duration::from_millis(1)));
    ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        let first = tokio::select! {
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
                        let missing = core.barrier().missing(partition);
                        let _ = stalls.send(Stalled { partition: partition.clone(), missing, waiting });
                    }
                }
                continue;
            }
        };
        // Group commit: everything queued goes into one append and one sync.
        let mut batch = vec![first];
        while batch.len() < GROUP {
            match rx.try_recv() {
                Ok(req) => batch.push(req),
                Err(_) => break,
            }
        }
        loop {
            let (sent, replies): (Vec<_>, Vec<_>) = batch.into_iter().unzip();
            let tracked: Vec<Option<P>> = sent
                .iter()
                .map(|op| match op {
                    BarrierOp::Record { partition, .. }
                    | BarrierOp::Seal { partition, .. }
                    | BarrierOp::Producers { partition, .. } => Some(partition.clone()),
                    BarrierOp::ForgetBelow(_) | BarrierOp::Delivered(_) => None,
                })
                .collect();
            let (ops, outcomes): (Vec<BarrierOp<P, R>>, _);
            (core, (ops, outcomes)) = offload(core, move |c| {
                let outcomes = c.apply_batch(&sent);
                (sent, outcomes)
            })
            .await;
            let outcomes = match outcomes {
                Ok(outcomes) => outcomes,
                Err(e) => {
                    // Nothing of this batch may be acknowledged: it may not be durable.
                    let e = fatal(e);
                    for reply in replies.into_iter().chain(parked.drain(..).map(|(_, r)| r)) {
                        let _ = reply.send(Err(ServiceError::Fatal(e.clone())));
                    }
                    return core;
                }
            };
            // Every outcome is durable now: answer, then hand the releases on.
            let mut released = Vec::new();
            for (((op, reply), outcome), partition) in
                ops.into_iter().zip(replies).zip(outcomes).zip(tracked)
            {
                match outcome {
                    Err(BarrierError::Full { .. }) => parked.push_back((op, reply)),
                    Err(e) => {
                        let _ = reply.send(Err(ServiceError::Core(e)));
                    }
                    Ok(release) => {
                        let _ = reply.send(Ok(()));
                        released.extend(release);
                    }
                }
                if let Some(partition) = partition
                    && !core.barrier().is_released(&partition)
                    && !core.barrier().missing(&partition).is_empty()
                {
                    since
                        .entry(partition)
                        .or_insert_with(|| (Instant::now(), false));
                }
            }
            if released.is_empty() {
                break;
            }
            for release in released {
                since.remove(&release.partition);
                if out.send(release).await.is_err() {
                    // Nobody consumes releases any more: accepting records would be pointless.
                    return core;
                }
            }
            // A release freed room: retry the parked messages, in arrival order; those still
            // refused go back to the line.
            if parked.is_empty() {
                break;
            }
            batch = parked.drain(..).collect();
        }
    }
    core
}

impl<P, R> BarrierHandle<P, R> {
    async fn offer(&self, op: BarrierOp<P, R>) -> Result<(), ServiceError<BarrierError>> {
        let (reply, answer) = oneshot::channel();
        self.tx
            .send((op, reply))
            .await
            .map_err(|_| ServiceError::Stopped)?;
        super::answer_or_stopped(&self.tx, answer).await
    }

    /// Offers record `index` of `producer` for `partition`; resolves once the barrier accepted
    /// it and journaled it durably, waiting while the buffer is full. Errors other than `Full`
    /// are returned at once.
    pub async fn push(
        &self,
        producer: ProducerId,
        partition: P,
        index: u64,
        record: R,
    ) -> Result<(), ServiceError<BarrierError>> {
        self.offer(BarrierOp::Record {
            producer,
            partition,
            index,
            record,
        })
        .await
    }

    /// Offers `producer`'s seal of `partition`, announcing `count` records.
    pub async fn seal(
        &self,
        producer: ProducerId,
        partition: P,
        count: u64,
    ) -> Result<(), ServiceError<BarrierError>> {
        self.offer(BarrierOp::Seal {
            producer,
            partition,
            count,
        })
        .await
    }

    /// Sets the producer set of `partition` ([`SealBarrier::set_producers`]).
    pub async fn set_producers(
        &self,
        partition: P,
        producers: Vec<ProducerId>,
    ) -> Result<(), ServiceError<BarrierError>> {
        self.offer(BarrierOp::Producers {
            partition,
            producers,
        })
        .await
    }

    /// Acknowledges that the consumer has durably dealt with `partition`'s release: after a
    /// crash of the service it is not handed out again. Until then it is, identical.
    pub async fn delivered(&self, partition: P) -> Result<(), ServiceError<BarrierError>> {
        self.offer(BarrierOp::Delivered(partition)).await
    }

    /// Forgets released partitions below `floor` ([`SealBarrier::forget_released_below`]).
    pub async fn forget_released_below(&self, floor: P) -> Result<(), ServiceError<BarrierError>> {
        self.offer(BarrierOp::ForgetBelow(floor)).await
    }
}
