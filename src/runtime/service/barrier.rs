//! The barrier task: back-pressure without polling, stall reports.

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Debug;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio::time::{Instant, MissedTickBehavior};

use super::{QUEUE, ServiceError};
use crate::runtime::barrier::{BarrierError, Release, SealBarrier};
use crate::runtime::sequencer::ProducerId;

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
