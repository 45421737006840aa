//! Replication runtime: the mechanisms that enforce a coordination plan.
//!
//! The analyzer decides which coordination a dataflow needs (section 7 of the label algebra);
//! this module runs it. It does not depend on any analyzer module: the plan names the piece of
//! this module each of its mechanism kinds needs (`blazes::plan::Kind::runtime_piece`), and
//! `blazes deploy` hands the runtime the plan as its JSON document ([`deploy`]).
//!
//! | mechanism | module | guarantee |
//! |---|---|---|
//! | durable total order | [`log`] | dense offsets, acknowledged records survive crashes |
//! | global ordering | [`sequencer`] | one order for all producers, idempotent retries |
//! | keyed ordering | [`session`] | per-key order, leases with fencing, atomic state commit |
//! | seal barrier | [`barrier`] | a partition is released once, complete, in a fixed order |
//! | replicated state machine | [`smr`] + [`dedup`] | identical outputs with log-derived ids, deduplicated downstream |
//!
//! Every core is a deterministic state machine: no clock (time is passed in as `now`), no IO
//! except through the [`log::Log`] trait, no hash-order iteration. Cores read durable records
//! only and append conditionally, so the trait can be served by another engine (see
//! `docs/runtime.md`, "The `Log` seam"). That makes schedules
//! replayable in tests and the cores model-checkable. With the cargo feature `tokio`, `service`
//! wraps each core in a task that owns it; the clock is read there and nowhere else.

pub mod barrier;
pub mod dedup;
pub mod deploy;
pub mod log;
#[cfg(feature = "nats")]
pub mod nats;
pub mod sequencer;
#[cfg(feature = "tokio")]
pub mod service;
pub mod session;
pub mod smr;

pub use barrier::{
    BarrierError, BarrierOp, DurableBarrier, DurableBarrierError, Release, SealBarrier,
};
pub use dedup::{Dedup, UpstreamId};
pub use log::{FileLog, FileLogConfig, FsyncPolicy, Log, LogError, MemLog, Record, RecoveryReport};
pub use sequencer::{
    Envelope, Prepared, ProducerId, Sequenced, Sequencer, SequencerError, SequencerState, Submitted,
};
#[cfg(feature = "tokio")]
pub use service::{
    AsyncLog, BarrierConfig, BarrierHandle, BarrierService, Blocking, SequencerHandle,
    SequencerService, ServiceError, SessionConfig, SessionHandle, SessionService, Stalled,
};
pub use session::{
    BrokerConfig, Lease, PartitionId, Published, Session, SessionBroker, SessionError,
    SessionEvent, SessionMessage, WorkerId, partition_for,
};
pub use smr::{Output, OutputId, Replica, SmrError, Snapshot, StateMachine};
