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
//! - [`SessionService`]: owns the [`SessionBroker`](crate::SessionBroker); reads a
//!   monotonic clock (milliseconds since the service started, the unit of the core's `now`),
//!   ticks on an interval and delivers each
//!   [`SessionEvent::LeaseLost`](crate::SessionEvent::LeaseLost) to the channel of the
//!   worker that held the lease.
//! - [`BarrierService`]: owns a [`DurableBarrier`](crate::DurableBarrier); journals the
//!   queued messages with one append and one sync before answering them or handing on the
//!   releases they complete; a `push` that the core answers with
//!   [`BarrierError::Full`](crate::BarrierError::Full) waits in the task (no polling)
//!   until a release frees room, then is retried in arrival order; a partition pending longer
//!   than a configured time is reported once on `stalls`, with the producers it waits for.
//!
//! The cores do synchronous IO through [`Log`](crate::Log); [`AsyncLog`] is the same
//! seam in async form. The sequencer service drives its IO-free state
//! ([`SequencerState`](crate::SequencerState)) over an [`AsyncLog`]:
//! either an async engine ([`SequencerService::spawn_on`]) or a synchronous log run on tokio's
//! blocking pool ([`Blocking`], what [`SequencerService::spawn`] uses), so neither its appends
//! nor its group-commit fsync hold a worker thread. The session task runs the broker's calls
//! that write and fsync a log (publish, accept, commit, release) on the blocking pool too, the
//! broker moving there and back; reads, renewals and ticks stay on the task. So does the
//! barrier task with its journal.

use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};

use super::log::LogError;

/// Why an adapter call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
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
pub(super) async fn call<Req, T, E>(
    tx: &mpsc::Sender<Req>,
    make: impl FnOnce(oneshot::Sender<Result<T, ServiceError<E>>>) -> Req,
) -> Result<T, ServiceError<E>> {
    let (reply, answer) = oneshot::channel();
    tx.send(make(reply))
        .await
        .map_err(|_| ServiceError::Stopped)?;
    answer_or_stopped(tx, answer).await
}

/// Waits for the task's answer, or for the task to be gone.
///
/// Why not just `answer.await`: a send that races with the task's end can leave the request
/// (and its reply sender) queued in a channel whose receiver is already dropped; tokio frees
/// such a value only when the last sender goes, and the caller holds one while it waits, so
/// the answer would never come. `tx.closed()` resolves once the receiver is dropped; an answer
/// already given still wins (`biased`).
pub(super) async fn answer_or_stopped<Req, T, E>(
    tx: &mpsc::Sender<Req>,
    mut answer: oneshot::Receiver<Result<T, ServiceError<E>>>,
) -> Result<T, ServiceError<E>> {
    tokio::select! {
        biased;
        answered = &mut answer => answered.unwrap_or(Err(ServiceError::Stopped)),
        () = tx.closed() => match answer.try_recv() {
            Ok(answered) => answered,
            Err(_) => Err(ServiceError::Stopped),
        },
    }
}

/// Runs `op` on `core` on tokio's blocking pool, for the calls that write and fsync a log; the
/// core travels there and back, as the task's sole owner.
pub(super) async fn offload<C, T>(core: C, op: impl FnOnce(&mut C) -> T + Send + 'static) -> (C, T)
where
    C: Send + 'static,
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

/// Bound on requests queued per service: callers beyond it wait in `send`, which is the
/// back-pressure of the request path.
pub(super) const QUEUE: usize = 1024;

mod barrier;
mod sequencer;
mod session;

pub use barrier::{BarrierConfig, BarrierHandle, BarrierService, Stalled};
pub use sequencer::{AsyncLog, Blocking, SequencerHandle, SequencerService};
pub use session::{SessionConfig, SessionHandle, SessionService};

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    type Reply = oneshot::Sender<Result<(), ServiceError<()>>>;

    /// A request sent with a permit taken before the task ended lands in the channel after its
    /// receiver is gone (the race a killed service meets). The caller must hear `Stopped`.
    #[tokio::test]
    async fn a_request_queued_after_the_task_ended_is_answered_stopped() {
        let (tx, rx) = mpsc::channel::<Reply>(4);
        let permit = tx.reserve().await.unwrap();
        drop(rx);
        let (reply, answer) = oneshot::channel();
        permit.send(reply);
        let got = tokio::time::timeout(Duration::from_secs(5), answer_or_stopped(&tx, answer))
            .await
            .expect("the caller must not wait forever");
        assert!(matches!(got, Err(ServiceError::Stopped)));
    }

    /// Control: waiting on the answer alone, as the services did, never ends in that race.
    #[tokio::test]
    async fn control_waiting_on_the_answer_alone_hangs() {
        let (tx, rx) = mpsc::channel::<Reply>(4);
        let permit = tx.reserve().await.unwrap();
        drop(rx);
        let (reply, answer) = oneshot::channel();
        permit.send(reply);
        assert!(
            tokio::time::timeout(Duration::from_millis(200), answer)
                .await
                .is_err()
        );
        drop(tx);
    }

    /// An answer given before the task ended still wins over the closed channel.
    #[tokio::test]
    async fn an_answer_given_before_the_end_is_kept() {
        let (tx, rx) = mpsc::channel::<Reply>(4);
        let (reply, answer) = oneshot::channel();
        tx.send(reply).await.unwrap();
        let mut rx = rx;
        rx.recv().await.unwrap().send(Ok(())).unwrap();
        drop(rx);
        assert!(matches!(answer_or_stopped(&tx, answer).await, Ok(())));
    }
}
