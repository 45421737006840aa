//! The component host: a service author writes a component's logic; the plan decides how its
//! inputs arrive and how its outputs are identified.
//!
//! [`Host::open`] reads the component's place in a plan document (parsed with
//! [`crate::deploy`]'s types, so the names are the ones `blazes deploy` lists) and
//! opens the mechanism the plan puts on the component's inputs:
//!
//! | the plan gives the component | [`Host::inputs`] yields | progress ([`Host::done`], [`Host::checkpoint`]) |
//! |---|---|---|
//! | a `seal-barrier` on its input | each released partition, whole ([`Input::Released`]) | a durable consumer of the barrier's releases, acknowledged after the logic handled one |
//! | a `global-order` | the sequenced stream, in position order ([`Input::Sequenced`]) | `(next position, state)` in the plan's checkpoint bucket |
//! | a `keyed-order` | one leased session's messages, in offset order ([`Input::Keyed`]), between the partition's [`Input::Assigned`] and [`Input::Revoked`] | the session's fenced commit of `(offset, state)` for that partition |
//! | a `keyed-order`, read as a replica ([`HostConfig::keyed_replica`]) | every partition's messages, in the keyed stream's order ([`Input::Keyed`]) | none: a replica applies the whole stream |
//! | nothing | the plain stream `<spec>-<component>-in`, in stream order ([`Input::Message`]) | a durable consumer, acknowledged after the logic handled a message |
//!
//! [`Host::outputs`] publishes into a consumer component's input the way the plan gives *that*
//! component its inputs: records and seals into its barrier, inputs into its sequence (an
//! epoch-fenced producer), keyed inputs into its partitions, messages into its plain stream.
//! Every output carries an id derived from the plan's names, the producing instance and the
//! position of the input that caused it (`<spec>-<component>-<instance>:<position>:<index>`;
//! for a keyed component `keyed` in place of the instance, since its partitions move between
//! instances), so an input that is handled again after a crash (it was not yet acknowledged or
//! checkpointed) publishes the same ids and the server stores each output once, as long as it
//! is handled again within the duplicate window (two minutes). A keyed instance paused past its
//! lease can still publish outputs (they go to other streams than its lease, where the server
//! cannot check it): they carry the ids its successor gives the same inputs, so a logic whose
//! outputs follow from the committed state and the inputs publishes the same messages twice,
//! stored once. `docs/runtime.md` lists these bounds.
//!
//! The order of work for a logic is therefore: take an input, publish its outputs (each
//! `publish` returns once the server stored it), then [`Host::done`] (and, for stateful logic,
//! [`Host::checkpoint`] now and then). A process killed anywhere in that sequence resumes from
//! the last acknowledgement or checkpoint without losing an input or counting one twice.

mod engine;
mod inputs;
mod outputs;
mod plan;
mod renew;

pub use inputs::{Delivery, Host, Input};
pub use outputs::{Outputs, source_outputs};
pub use plan::{Channel, channel_of, channels, input_objects};

use std::time::Duration;

use super::NatsError;
use super::sequencer::valid_token;
use crate::deploy::{self, DeployError};

/// What went wrong in a host. One sentence each.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HostError {
    /// The plan document could not be read or derived.
    #[error("the plan cannot be hosted: {0}")]
    Plan(#[from] DeployError),
    /// A name the host needs is not a NATS token.
    #[error("`{0}` is not a valid instance or component name (use [A-Za-z0-9_-]+)")]
    Name(String),
    /// The consumer component of an output handle gets its inputs in a way that needs another
    /// call (a barrier's records need a partition and an index, a sequence a producer).
    #[error("`{consumer}` receives {channel}; use {call} to publish to it")]
    WrongChannel {
        /// The consumer component.
        consumer: String,
        /// How it receives its inputs.
        channel: &'static str,
        /// The call that publishes to it.
        call: &'static str,
    },
    /// A durable consumer of the same name reads other subjects than this instance needs.
    #[error(
        "the durable consumer `{name}` exists with filter `{deployed}`, but this instance reads `{wanted}`; give the instance another name or redeploy"
    )]
    ConsumerDiffers {
        /// The consumer.
        name: String,
        /// Its filter on the server.
        deployed: String,
        /// The filter this instance needs.
        wanted: String,
    },
    /// A checkpoint could not be read back.
    #[error("the checkpoint of `{0}` is not one the host wrote")]
    Checkpoint(String),
    /// The engine failed.
    #[error(transparent)]
    Nats(#[from] NatsError),
}

/// How a host's instance is deployed.
#[derive(Debug, Clone)]
pub struct HostConfig {
    /// The component, as the spec names it.
    pub(crate) component: String,
    /// This instance (`[A-Za-z0-9_-]`): part of every output id and of the durable consumer's
    /// name. Instances that split a component's work need distinct names; replicas that compute
    /// the same outputs share one, so their outputs de-duplicate.
    pub(crate) instance: String,
    /// The upstream instances a seal barrier waits for (the processes that seal its
    /// partitions); empty: the producers the plan names.
    pub(crate) seal_producers: Vec<String>,
    /// Whether this instance runs the seal barrier's releases (reads every record and seal and
    /// releases complete partitions). Any number of instances may; each partition is released
    /// once. Every instance receives the releases either way. Default: true.
    pub(crate) release_barrier: bool,
    /// On a plain stream: read only the messages published with this key (one instance per
    /// key, as a grouping by field routes them), instead of every message. Default: none.
    pub(crate) input_key: Option<String>,
    /// On a keyed order: read every partition's inputs in the keyed stream's order, as one of
    /// several replicas that each apply all of them (no lease, no commit: a replica that
    /// restarts reads the stream from its start), instead of one leased session's partition.
    /// Every such replica reads the same inputs in the same order. Default: false.
    pub(crate) keyed_replica: bool,
    /// Partitions of a keyed component (the same number for every instance and producer).
    pub(crate) partitions: u32,
    /// Raft replicas of every object the host creates (the plan's objects get the same).
    pub(crate) replicas: usize,
    /// How long an operation retries while the cluster fails over.
    pub(crate) retry_for: Duration,
    /// How long the server waits for an acknowledgement before it redelivers a message (to the
    /// restarted instance).
    pub(crate) ack_wait: Duration,
    /// Whether the host tells the server, every third of the ack wait, that the inputs it
    /// fetched and the logic has not marked done are still in progress, so that a slow handler
    /// does not get them redelivered while it holds them (as a Service Bus receiver renews its
    /// locks). Default: true.
    pub(crate) renew_in_progress: bool,
    /// Output ids of a keyed component named by the instance instead of the component: the
    /// negative control of the takeover tests, nothing else.
    pub(crate) outputs_named_by_instance: bool,
}

impl HostConfig {
    /// Instance `instance` of `component`, on a 3-node cluster.
    pub fn new(component: &str, instance: &str) -> Self {
        HostConfig {
            component: component.to_string(),
            instance: instance.to_string(),
            seal_producers: Vec::new(),
            release_barrier: true,
            input_key: None,
            keyed_replica: false,
            partitions: 1,
            replicas: deploy::DEFAULT_REPLICAS,
            retry_for: super::DEFAULT_RETRY_FOR,
            ack_wait: deploy::ACK_WAIT,
            renew_in_progress: true,
            outputs_named_by_instance: false,
        }
    }

    /// The component, as the spec names it.
    pub fn component(&self) -> &str {
        &self.component
    }

    /// This instance's name.
    pub fn instance(&self) -> &str {
        &self.instance
    }

    /// The upstream instances a seal barrier waits for: the processes that seal its partitions
    /// (default: the producers the plan names).
    pub fn seal_producers<S: Into<String>>(
        mut self,
        producers: impl IntoIterator<Item = S>,
    ) -> Self {
        self.seal_producers = producers.into_iter().map(Into::into).collect();
        self
    }

    /// Whether this instance runs the seal barrier's releases: reads every record and seal and
    /// releases complete partitions. Any number of instances may; each partition is released
    /// once, and every instance receives the releases either way (default: true).
    pub fn release_barrier(mut self, release: bool) -> Self {
        self.release_barrier = release;
        self
    }

    /// On a plain stream, read only the messages published with `key`: one instance per key, as
    /// a grouping by field routes them (default: every message).
    pub fn input_key(mut self, key: impl Into<String>) -> Self {
        self.input_key = Some(key.into());
        self
    }

    /// On a keyed order, read every partition's inputs in the keyed stream's order, as one of
    /// several replicas that each apply all of them (no lease, no commit), instead of one
    /// leased session's partition (default: false).
    pub fn keyed_replica(mut self, replica: bool) -> Self {
        self.keyed_replica = replica;
        self
    }

    /// Partitions of a keyed component (default: 1).
    pub fn partitions(mut self, partitions: u32) -> Self {
        self.partitions = partitions;
        self
    }

    /// Raft replicas of every object the host creates (default: 3).
    pub fn replicas(mut self, replicas: usize) -> Self {
        self.replicas = replicas;
        self
    }

    /// How long an operation retries while the cluster fails over.
    pub fn retry_for(mut self, retry_for: Duration) -> Self {
        self.retry_for = retry_for;
        self
    }

    /// How long the server waits for an acknowledgement before it redelivers.
    pub fn ack_wait(mut self, ack_wait: Duration) -> Self {
        self.ack_wait = ack_wait;
        self
    }

    /// Whether the host tells the server, every third of the ack wait, that inputs the logic
    /// holds are still in progress, so a slow handler does not get them redelivered, as a
    /// Service Bus receiver renews its locks (default: true).
    pub fn renew_in_progress(mut self, renew: bool) -> Self {
        self.renew_in_progress = renew;
        self
    }
}

impl HostConfig {
    /// Names a keyed component's output ids by the instance, as if each instance's outputs
    /// were its own: the negative control of the takeover tests (a partition's next holder then
    /// publishes its replayed outputs under new ids) and nothing else.
    #[doc(hidden)]
    pub fn outputs_named_by_instance(mut self, yes: bool) -> Self {
        self.outputs_named_by_instance = yes;
        self
    }
}

fn check_name(s: &str) -> Result<(), HostError> {
    if valid_token(s) {
        Ok(())
    } else {
        Err(HostError::Name(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrong_channel_errors_are_one_sentence() {
        let e = HostError::WrongChannel {
            consumer: "Count".into(),
            channel: Channel::Barrier {
                stream: String::new(),
                producers: vec![],
            }
            .describe(),
            call: "`record` and `seal`",
        };
        assert_eq!(
            e.to_string(),
            "`Count` receives its inputs through a seal barrier; use `record` and `seal` to publish to it"
        );
        assert!(HostError::Name("a.b".into()).to_string().contains("`a.b`"));
    }
}
