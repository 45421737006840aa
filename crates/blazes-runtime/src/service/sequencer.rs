//! The sequencer task: group commit over an [`AsyncLog`].

use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use super::{QUEUE, ServiceError, call};
use crate::log::{Log, LogError, Record};
use crate::sequencer::{
    ATTEMPTS, Envelope, Sequenced, Sequencer, SequencerError, SequencerState, Submitted,
    decode_record,
};

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
            // The task drives every call to its end, so the log is always back here; a call
            // that panicked has already ended this task by resuming its panic.
            match run_sequencer(state, Blocking::new(log), rx)
                .await
                .into_inner()
                .await
            {
                Ok(log) => log,
                Err(_) => unreachable!("a call that panicked resumed its panic in this task"),
            }
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
///
/// Work on the blocking pool cannot be cancelled. A call whose future is dropped before it
/// finishes (a `select!` or `timeout` around it) keeps running, and the log comes back when it
/// ends: the next call waits for it, then goes on. A call that panicked lost the log, and every
/// later call is [`LogError::Poisoned`].
#[derive(Debug)]
pub struct Blocking<L> {
    log: Option<L>,
    /// Where the call running on the blocking pool hands the log back.
    returning: Option<oneshot::Receiver<L>>,
}

impl<L: Log + Send + 'static> Blocking<L> {
    /// Wraps `log`.
    pub fn new(log: L) -> Self {
        Blocking {
            log: Some(log),
            returning: None,
        }
    }

    /// The wrapped log, once any call still running on the blocking pool has handed it back;
    /// [`LogError::Poisoned`] if a call panicked with it.
    pub async fn into_inner(mut self) -> Result<L, LogError> {
        self.take().await
    }

    async fn take(&mut self) -> Result<L, LogError> {
        if let Some(log) = self.log.take() {
            return Ok(log);
        }
        match self.returning.take() {
            Some(back) => back.await.map_err(|_| LogError::Poisoned),
            None => Err(LogError::Poisoned),
        }
    }

    async fn run<T: Send + 'static>(
        &mut self,
        op: impl FnOnce(&mut L) -> Result<T, LogError> + Send + 'static,
    ) -> Result<T, LogError> {
        let mut log = self.take().await?;
        let (back, returning) = oneshot::channel();
        self.returning = Some(returning);
        let out = tokio::task::spawn_blocking(move || {
            let out = op(&mut log);
            // The caller may be gone (its future dropped); the log then waits in the channel
            // for the next call.
            let _ = back.send(log);
            out
        })
        .await;
        match out {
            Ok(out) => {
                self.log = Some(self.take().await?);
                out
            }
            Err(join) => std::panic::resume_unwind(join.into_panic()),
        }
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
