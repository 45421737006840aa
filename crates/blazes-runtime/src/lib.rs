//! Replication runtime: the mechanisms that enforce a coordination plan.
//!
//! The analyzer (the `blazes` crate) decides which coordination a dataflow needs (section 7 of
//! the label algebra); this crate runs it. It depends on no analyzer crate, only on the plan
//! document's types (`blazes-plan`): the planner names the piece of this crate each of its
//! mechanism kinds needs (`blazes::plan::Kind::runtime_piece`), and `blazes deploy` hands the
//! runtime the plan as its JSON document ([`deploy`]).
//!
//! A global order on the embedded log: two producers' messages, a retry absorbed, one order
//! for every reader; then the engine objects a plan document asks for:
//!
//! ```
//! use blazes_runtime::{Envelope, MemLog, Sequencer, Submitted};
//!
//! let mut seq = Sequencer::open(MemLog::new()).unwrap();
//! let msg = |producer, seq, text: &str| Envelope {
//!     producer, epoch: 0, seq, payload: text.as_bytes().to_vec(),
//! };
//! let batch = [msg(1, 1, "a"), msg(2, 1, "b"), msg(1, 1, "a")];
//! let outcome = seq.submit(&batch).unwrap();
//! assert_eq!(outcome[2], Submitted::Duplicate); // producer 1's retry lands once
//! let order: Vec<_> = seq.read_from(0, 10).unwrap().into_iter().map(|m| m.envelope.payload).collect();
//! assert_eq!(order, [b"a".to_vec(), b"b".to_vec()]);
//!
//! // What `blazes deploy` creates for a plan that orders `Count` by word.
//! let plan = r#"{"version": 2, "files": [{"path": "wc.yaml", "name": "wc", "status": "repaired",
//!     "mechanisms": [{"kind": "keyed-order", "component": "Count", "key": ["word"]}]}]}"#;
//! let files = blazes_runtime::deploy::read_plan(plan).unwrap();
//! let deployment = blazes_runtime::deploy::derive(&files[0], 3).unwrap();
//! let names: Vec<_> = deployment.objects().map(|o| o.name().to_string()).collect();
//! assert_eq!(names, ["wc-Count-keyed"]);
//! ```
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

#[macro_use]
extern crate blazes_plan;

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

/// The crate's README, whose example runs as a doctest so that it stays true.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

/// Option structs cannot be built field by field outside the crate, so adding a setting breaks
/// no caller; they start from a constructor and chain setters:
///
/// ```
/// use blazes_runtime::{FileLogConfig, FsyncPolicy};
/// let config = FileLogConfig::default().segment_bytes(1 << 20).fsync(FsyncPolicy::Manual);
/// assert_eq!(config.segment_bytes, 1 << 20);
/// ```
///
/// ```compile_fail,E0639
/// use blazes_runtime::{FileLogConfig, FsyncPolicy};
/// let config = FileLogConfig { segment_bytes: 1 << 20, max_record_bytes: 1024, fsync: FsyncPolicy::Manual };
/// ```
#[cfg(doctest)]
pub struct OptionStructsAreNonExhaustive;
