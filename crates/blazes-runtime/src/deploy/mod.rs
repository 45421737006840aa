//! From a plan document to the engine objects its mechanisms need, without IO.
//!
//! The runtime reads the document `blazes plan --format json` writes (versions 1 and 2) with
//! its own types: it shares the format with the analyzer, not its code. Each mechanism of a
//! spec's plan becomes the streams and key-value buckets the JetStream mechanisms of
//! `blazes_runtime::nats` open, with the configuration they create them with, named from the spec's
//! names:
//!
//! | mechanism | objects |
//! |---|---|
//! | `keyed-order` on `C` | stream `<spec>-<C>-keyed`: subjects `.in.*`, `.lease.*`, `.commit.*`, `.out.*`; message TTLs allowed (leases) |
//! | `global-order` on `C` | stream `<spec>-<C>-seq` (`.in.*`, one subject per producer); output stream `<spec>-<C>-out` (`.>`); checkpoint bucket `<spec>-<C>-replicas` |
//! | `seal-barrier` on `C`'s input `I` | stream `<spec>-<C>-<I>-seal`: subjects `.rec.*.*`, `.seal.*.*`, `.set.*`, `.rel.*` |
//! | `add-seal` on a source | none of its own: its source seals into the barriers the plan lists |
//! | `add-seal` on a stream | none of its own: the stream's producer seals its output into its consumers' barriers |
//!
//! The mechanisms themselves read through ordered (ephemeral) consumers that each reader
//! creates for itself. The component host (`blazes_runtime::nats::host`) adds, per component of the
//! spec ([`with_hosts`]), what its instances read their inputs with, named here and nowhere else:
//!
//! | the component's inputs | objects |
//! |---|---|
//! | no mechanism | stream `<spec>-<C>-in` (`.>`: one subject per producing instance, then an optional routing key); durable consumer `<C>-<instance>` on it, per instance, reading every subject, or only `.*.<instance>` when the component is routed by instance |
//! | a `seal-barrier` | durable consumer `<C>-<instance>` of the barrier's releases (`.rel.*`), per instance |
//! | a `global-order` or `keyed-order` | none: progress is a checkpoint or a fenced commit |
//!
//! Instances are numbered from `0`, as the host's callers name them (`hosts.rs`; the words of
//! a deployment are `render.rs`). Applying the objects to a
//! server is `blazes_runtime::nats::deploy` (cargo feature `nats`).

mod hosts;
mod render;

pub use hosts::{
    Channel, PLAIN_SUBJECTS, channel_of, consumer_name, input_consumer, plain_input, with_hosts,
    with_partitioned_hosts,
};
pub use render::{describe_object, render};

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

/// The duplicate window every JetStream mechanism gives its streams (their `*Config::new`).
pub const DUPLICATE_WINDOW: Duration = Duration::from_secs(120);
/// Raft replicas of every object unless the deployment says otherwise (a 3-node cluster).
pub const DEFAULT_REPLICAS: usize = 3;
/// Instances of every hosted component unless the deployment says otherwise: instance `0`.
pub const DEFAULT_INSTANCES: usize = 1;
/// How long the server waits for a hosted instance to acknowledge an input before it delivers
/// it again (to the restarted instance).
pub const ACK_WAIT: Duration = Duration::from_secs(5);
/// Inputs a hosted instance may hold unacknowledged.
pub const MAX_ACK_PENDING: i64 = 10_000;
/// History of a checkpoint bucket: a replica reads only its latest checkpoint.
pub const CHECKPOINT_HISTORY: i64 = 1;
/// The description every deployed object carries, followed by the spec's name and `,`; how a
/// later deployment finds the objects of mechanisms that left the plan.
pub const DESCRIPTION_PREFIX: &str = "blazes deploy: spec ";

/// What is wrong with a plan document, or with deploying it. One sentence each.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DeployError {
    /// The text is not a plan document.
    #[error("the plan document is not valid JSON: {0}")]
    Json(String),
    /// A version this runtime does not read.
    #[error(
        "the plan document has version {0}; this runtime reads versions 1 and 2 (upgrade blazes)"
    )]
    Version(u64),
    /// The spec is invalid: there is no plan.
    #[error("`{0}` is invalid: there is no plan to deploy (run `blazes check` on it)")]
    Invalid(String),
    /// The plan cannot make every sink safe.
    #[error(
        "the plan of `{0}` cannot repair it (status `unrepairable`): deploying it would not make its sinks safe"
    )]
    Unrepairable(String),
    /// A field the runtime needs is missing.
    #[error("mechanism {index} of `{path}` ({kind}) has no `{field}`")]
    Missing {
        /// The spec's path.
        path: String,
        /// Position of the mechanism in the plan (from 1).
        index: usize,
        /// Its kind.
        kind: MechanismKind,
        /// The missing field.
        field: &'static str,
    },
    /// A mechanism kind this runtime reads but does not deploy.
    #[error(
        "mechanism {index} of `{path}` has kind `{kind}`, which this runtime does not deploy (upgrade blazes)"
    )]
    UnknownKind {
        /// The spec's path.
        path: String,
        /// Position of the mechanism in the plan (from 1).
        index: usize,
        /// Its kind.
        kind: MechanismKind,
    },
    /// Components to route by instance that the spec does not have.
    #[error(
        "cannot route the inputs of `{component}` by instance: `{path}` has no component `{component}` (its components: {known})"
    )]
    RouteUnknown {
        /// The spec's path.
        path: String,
        /// The component asked for.
        component: String,
        /// The spec's components, comma-separated.
        known: String,
    },
    /// A component to route by instance whose inputs do not arrive on a plain stream.
    #[error(
        "cannot route the inputs of `{component}` by instance: the plan of `{path}` gives it {channel}, and only a component without a mechanism on its inputs (a plain stream) reads by routing key"
    )]
    RouteNotPlain {
        /// The spec's path.
        path: String,
        /// The component asked for.
        component: String,
        /// How it receives its inputs, in words.
        channel: &'static str,
    },
    /// Two mechanisms would own one engine object.
    #[error("the {first} and the {second} would both use the engine object `{name}`; rename one")]
    Collision {
        /// The object's name.
        name: String,
        /// What the first one is for.
        first: String,
        /// What the second one is for.
        second: String,
    },
}

pub use blazes_plan::{Mechanism, MechanismKind, PlanFile, PlanStatus};

/// A version 2 plan document, as the runtime reads it.
#[derive(Debug, Clone, Deserialize)]
struct Document {
    #[serde(default)]
    files: Vec<PlanFile>,
}

/// Reads a plan document (`blazes plan --format json`): its specs' plans, in order.
pub fn read_plan(json: &str) -> Result<Vec<PlanFile>, DeployError> {
    let value: serde_json::Value =
        serde_json::from_str(json).map_err(|e| DeployError::Json(e.to_string()))?;
    let version = value
        .get("version")
        .and_then(serde_json::Value::as_u64)
        .ok_or_else(|| DeployError::Json("it has no numeric `version`".into()))?;
    match version {
        // Version 1 was one spec's entry at the top level.
        1 => serde_json::from_value::<PlanFile>(value)
            .map(|f| vec![f])
            .map_err(|e| DeployError::Json(e.to_string())),
        2 => serde_json::from_value::<Document>(value)
            .map(|d| d.files)
            .map_err(|e| DeployError::Json(e.to_string())),
        v => Err(DeployError::Version(v)),
    }
}

/// A JetStream stream, with the fields a deployment sets and compares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamObject {
    /// The stream's name.
    pub name: String,
    /// Its subjects, in the order the mechanism lists them.
    pub subjects: Vec<String>,
    /// Raft replicas.
    pub replicas: usize,
    /// The server's duplicate window for message ids.
    pub duplicate_window: Duration,
    /// Whether messages may carry a `Nats-TTL` (leases).
    pub allow_msg_ttl: bool,
}

/// A JetStream key-value bucket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketObject {
    /// The bucket's name (its stream is `KV_<name>`).
    pub name: String,
    /// Values kept per key.
    pub history: i64,
    /// Raft replicas.
    pub replicas: usize,
}

/// A durable pull consumer with explicit acknowledgements: a hosted instance's position in
/// its input stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerObject {
    /// The stream it reads.
    pub stream: String,
    /// Its durable name (`<component>-<instance>`).
    pub name: String,
    /// The subjects it reads (empty: every subject of the stream).
    pub filter: String,
    /// How long the server waits for an acknowledgement before it delivers again.
    pub ack_wait: Duration,
    /// Inputs held unacknowledged at most.
    pub max_ack_pending: i64,
}

/// An engine object a mechanism or a hosted component needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Object {
    /// A stream.
    Stream(StreamObject),
    /// A key-value bucket.
    Bucket(BucketObject),
    /// A durable consumer of a stream.
    Consumer(ConsumerObject),
}

impl Object {
    /// The object's name.
    pub fn name(&self) -> &str {
        match self {
            Object::Stream(s) => &s.name,
            Object::Bucket(b) => &b.name,
            Object::Consumer(c) => &c.name,
        }
    }

    /// `stream`, `bucket` or `consumer`.
    pub fn kind(&self) -> &'static str {
        match self {
            Object::Stream(_) => "stream",
            Object::Bucket(_) => "bucket",
            Object::Consumer(_) => "consumer",
        }
    }

    /// The stream that holds the object on the server (`KV_<name>` for a bucket, the stream it
    /// reads for a consumer).
    pub fn stream_name(&self) -> String {
        match self {
            Object::Stream(s) => s.name.clone(),
            Object::Bucket(b) => format!("KV_{}", b.name),
            Object::Consumer(c) => c.stream.clone(),
        }
    }
}

/// One mechanism of the plan with the objects it needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MechanismObjects {
    /// What the mechanism is, in words (`keyed-order on Count by [batch, word]`).
    pub mechanism: String,
    /// Its objects (none for an added seal).
    pub objects: Vec<(Role, Object)>,
    /// Why it has no object, when it has none.
    pub note: Option<String>,
}

/// What an object is for within its mechanism.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A keyed component's inputs, leases, commits and outputs.
    Keyed,
    /// A globally ordered component's total order of inputs.
    Sequence,
    /// The outputs of a replicated component, deduplicated by id.
    Outputs,
    /// The checkpoints of a replicated component's replicas.
    Checkpoints,
    /// A seal barrier's records, seals and releases.
    Barrier,
    /// A component's inputs when the plan gives them no mechanism.
    PlainInput,
    /// One hosted instance's acknowledged position in its inputs.
    Reader,
}

impl Role {
    /// The role in words.
    pub fn describe(self) -> &'static str {
        match self {
            Role::Keyed => "inputs, leases, commits and outputs per partition",
            Role::Sequence => "the total order: one subject per producer",
            Role::Outputs => "the replicas' outputs, de-duplicated by derived ids",
            Role::Checkpoints => "one checkpoint per replica",
            Role::Barrier => "records, seals, producer sets and releases per partition",
            Role::PlainInput => "inputs without a mechanism: one subject per producing instance",
            Role::Reader => "one instance's acknowledged position in its inputs",
        }
    }
}

/// The engine objects of one spec's plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deployment {
    /// The spec's path.
    pub path: String,
    /// The spec's name as written.
    pub spec: String,
    /// The prefix of every object name (the spec's name, made NATS-legal).
    pub prefix: String,
    /// Per mechanism, in the plan's order.
    pub mechanisms: Vec<MechanismObjects>,
    /// Raft replicas of every stream and bucket.
    pub replicas: usize,
    /// Instances per hosted component (`0` until [`with_hosts`]).
    pub instances: usize,
    /// Per hosted component, in the spec's order, what its instances read with ([`with_hosts`];
    /// components that need nothing are left out).
    pub hosted: Vec<HostedObjects>,
}

/// The objects the instances of one hosted component read their inputs with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostedObjects {
    /// The component, as the spec names it.
    pub component: String,
    /// Its objects: the plain input stream (if any), then one consumer per instance.
    pub objects: Vec<(Role, Object)>,
    /// Whether instance `i` reads only the plain messages routed to key `i` (its consumer
    /// filters on `<stream>.*.<i>`) rather than every message.
    pub routed_by_instance: bool,
    /// The spec's `partitions: N` of the component, when it has one: it is deployed as N
    /// instances, one per partition, whatever [`Deployment::instances`] says.
    pub partitions: Option<usize>,
}

impl Deployment {
    /// Every object, in the plan's order, then the hosted components' (streams before the
    /// consumers that read them).
    pub fn objects(&self) -> impl Iterator<Item = &Object> {
        self.mechanisms
            .iter()
            .flat_map(|m| m.objects.iter().map(|(_, o)| o))
            .chain(
                self.hosted
                    .iter()
                    .flat_map(|h| h.objects.iter().map(|(_, o)| o)),
            )
    }

    /// The description the objects of this deployment carry on the server.
    pub fn description(&self) -> String {
        format!("{DESCRIPTION_PREFIX}{},", self.prefix)
    }
}

/// Whether `s` is a name every JetStream object and subject token accepts.
pub fn is_legal_name(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// `name` made NATS-legal: unchanged when it already is (`[A-Za-z0-9_-]+`); otherwise every
/// other character becomes `_` and an FNV-1a hash of the original is appended, so that `a.b`
/// and `a b` do not end up as the same name.
pub fn sanitize(name: &str) -> String {
    if is_legal_name(name) {
        return name.to_string();
    }
    let mut h: u32 = 0x811c_9dc5;
    for b in name.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{cleaned}-{h:08x}")
}

fn stream(name: String, subjects: &[&str], replicas: usize, allow_msg_ttl: bool) -> Object {
    Object::Stream(StreamObject {
        subjects: subjects.iter().map(|s| format!("{name}.{s}")).collect(),
        name,
        replicas,
        duplicate_window: DUPLICATE_WINDOW,
        allow_msg_ttl,
    })
}

/// The subjects of a keyed component's stream (`blazes_runtime::nats::session`).
pub const KEYED_SUBJECTS: [&str; 4] = ["in.*", "lease.*", "commit.*", "out.*"];
/// The subjects of a sequencer's stream (`blazes_runtime::nats::sequencer`).
pub const SEQUENCE_SUBJECTS: [&str; 1] = ["in.*"];
/// The subjects of a replicated component's output stream (`blazes_runtime::nats::smr`).
pub const OUTPUT_SUBJECTS: [&str; 1] = [">"];
/// The subjects of a seal barrier's stream (`blazes_runtime::nats::barrier`).
pub const BARRIER_SUBJECTS: [&str; 4] = ["rec.*.*", "seal.*.*", "set.*", "rel.*"];

/// The engine objects of one spec's plan, with `replicas` Raft replicas each. Fails on a spec
/// without a plan (invalid, unrepairable), on a mechanism it does not know or that lacks a
/// field, and when two mechanisms would share an object's name.
pub fn derive(file: &PlanFile, replicas: usize) -> Result<Deployment, DeployError> {
    match file.status {
        PlanStatus::Invalid => return Err(DeployError::Invalid(file.path.clone())),
        PlanStatus::Unrepairable => return Err(DeployError::Unrepairable(file.path.clone())),
        _ => {}
    }
    let spec = file
        .name
        .clone()
        .ok_or_else(|| DeployError::Json(format!("the entry of `{}` has no `name`", file.path)))?;
    let prefix = sanitize(&spec);
    let mut mechanisms = Vec::new();
    for (i, m) in file.mechanisms.iter().enumerate() {
        let missing = |field| DeployError::Missing {
            path: file.path.clone(),
            index: i + 1,
            kind: m.kind,
            field,
        };
        let component = || m.component.as_deref().ok_or_else(|| missing("component"));
        let keys = format!("[{}]", m.key.join(", "));
        // An order of an engine task is one order, named by the task's first component.
        let on = |c: &str| match &m.task {
            Some(t) => format!("{c} (task {t})"),
            None => c.to_string(),
        };
        let entry = match m.kind {
            MechanismKind::KeyedOrder => {
                let c = component()?;
                let name = format!("{prefix}-{}-keyed", sanitize(c));
                MechanismObjects {
                    mechanism: format!("keyed-order on {} by {keys}", on(c)),
                    objects: vec![(Role::Keyed, stream(name, &KEYED_SUBJECTS, replicas, true))],
                    note: None,
                }
            }
            MechanismKind::GlobalOrder => {
                let c = component()?;
                let base = format!("{prefix}-{}", sanitize(c));
                MechanismObjects {
                    mechanism: format!("global-order on {}", on(c)),
                    objects: vec![
                        (
                            Role::Sequence,
                            stream(format!("{base}-seq"), &SEQUENCE_SUBJECTS, replicas, false),
                        ),
                        (
                            Role::Outputs,
                            stream(format!("{base}-out"), &OUTPUT_SUBJECTS, replicas, false),
                        ),
                        (
                            Role::Checkpoints,
                            Object::Bucket(BucketObject {
                                name: format!("{base}-replicas"),
                                history: CHECKPOINT_HISTORY,
                                replicas,
                            }),
                        ),
                    ],
                    note: None,
                }
            }
            MechanismKind::SealBarrier => {
                let c = component()?;
                let input = m.input.as_deref().ok_or_else(|| missing("input"))?;
                let name = format!("{prefix}-{}-{}-seal", sanitize(c), sanitize(input));
                MechanismObjects {
                    mechanism: format!(
                        "seal-barrier on {c}.{input} by {keys}, waiting for [{}]",
                        m.producers.join(", ")
                    ),
                    objects: vec![(
                        Role::Barrier,
                        stream(name, &BARRIER_SUBJECTS, replicas, false),
                    )],
                    note: None,
                }
            }
            MechanismKind::AddSeal => match (&m.source, &m.stream) {
                (None, Some(stream)) => {
                    let producer = stream.producer.as_deref().unwrap_or("its producer");
                    MechanismObjects {
                        mechanism: format!(
                            "add-seal on stream {} -> {} by {keys}",
                            stream.from, stream.to
                        ),
                        objects: Vec::new(),
                        note: Some(format!(
                            "no object of its own: {producer} seals each partition of its output into the barriers of its consumers, once its own inputs have sealed it"
                        )),
                    }
                }
                _ => {
                    let source = m.source.as_deref().ok_or_else(|| missing("source"))?;
                    MechanismObjects {
                        mechanism: format!("add-seal on source {source} by {keys}"),
                        objects: Vec::new(),
                        note: Some(format!(
                            "no object of its own: {source} seals each partition into the barriers of its consumers"
                        )),
                    }
                }
            },
            // A kind the plan document's types gained that this runtime has no objects for.
            other => {
                return Err(DeployError::UnknownKind {
                    path: file.path.clone(),
                    index: i + 1,
                    kind: other,
                });
            }
        };
        mechanisms.push(entry);
    }
    let d = Deployment {
        path: file.path.clone(),
        spec,
        prefix,
        mechanisms,
        replicas,
        instances: 0,
        hosted: Vec::new(),
    };
    check_collisions(&d)?;
    Ok(d)
}

/// Two objects with one name would be one object on the server, shared by two owners that each
/// think they own it. Buckets live in `KV_<name>` streams, so a stream named `KV_x` and a
/// bucket `x` collide too; consumers are named within their stream.
fn check_collisions(d: &Deployment) -> Result<(), DeployError> {
    let owned = d
        .mechanisms
        .iter()
        .flat_map(|m| m.objects.iter().map(|(_, o)| (o, m.mechanism.clone())))
        .chain(d.hosted.iter().flat_map(|h| {
            h.objects
                .iter()
                .map(|(_, o)| (o, format!("hosted component {}", h.component)))
        }));
    let mut owners: BTreeMap<String, String> = BTreeMap::new();
    for (o, owner) in owned {
        let key = match o {
            Object::Consumer(c) => format!("{}/{}", c.stream, c.name),
            o => o.stream_name(),
        };
        let owner = format!("{} of {owner}", o.kind());
        if let Some(first) = owners.insert(key, owner.clone()) {
            return Err(DeployError::Collision {
                name: o.name().to_string(),
                first,
                second: owner,
            });
        }
    }
    Ok(())
}

/// A repaired plan of the spec `s.yaml` named `name`, with `mechanisms` (JSON objects, comma
/// separated) read as a document would be: the unit tests' plans, here once.
#[cfg(test)]
pub(crate) fn repaired_plan(name: &str, mechanisms: &str) -> PlanFile {
    let doc = format!(
        r#"{{"version": 2, "files": [{{"path": "s.yaml", "name": "{name}", "status": "repaired", "mechanisms": [{mechanisms}]}}]}}"#
    );
    read_plan(&doc).unwrap().remove(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(mechanisms: &str) -> PlanFile {
        repaired_plan("s", mechanisms)
    }

    #[test]
    fn sanitize_keeps_legal_names_and_separates_illegal_ones() {
        assert_eq!(sanitize("word_count-2"), "word_count-2");
        let dotted = sanitize("a.b");
        let spaced = sanitize("a b");
        assert!(is_legal_name(&dotted) && is_legal_name(&spaced));
        assert!(dotted.starts_with("a_b-") && spaced.starts_with("a_b-"));
        assert_ne!(dotted, spaced);
        assert_eq!(sanitize("a.b"), dotted, "deterministic");
    }

    #[test]
    fn colliding_names_are_refused() {
        // Barriers on `A-B`.`C` and on `A`.`B-C` would both be `s-A-B-C-seal`.
        let f = file(
            r#"{"kind": "seal-barrier", "component": "A-B", "input": "C", "key": ["k"]},
               {"kind": "seal-barrier", "component": "A", "input": "B-C", "key": ["k"]}"#,
        );
        let e = derive(&f, 1).unwrap_err();
        assert!(
            matches!(&e, DeployError::Collision { name, .. } if name == "s-A-B-C-seal"),
            "{e}"
        );
    }

    #[test]
    fn unknown_kinds_and_missing_fields_are_named() {
        // An unknown kind is refused when the document is read, before anything is derived.
        let e = read_plan(
            r#"{"version": 2, "files": [{"path": "s.yaml", "name": "s", "status": "repaired", "mechanisms": [{"kind": "teleport", "component": "A"}]}]}"#,
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("unknown mechanism kind `teleport`"),
            "{e}"
        );
        let e = derive(&file(r#"{"kind": "keyed-order", "key": ["k"]}"#), 1).unwrap_err();
        assert!(e.to_string().contains("`component`"), "{e}");
    }

    #[test]
    fn versions_other_than_1_and_2_are_refused() {
        assert_eq!(
            read_plan(r#"{"version": 3, "files": []}"#).unwrap_err(),
            DeployError::Version(3)
        );
        let v1 = read_plan(r#"{"version": 1, "path": "p", "name": "n", "status": "ok"}"#).unwrap();
        assert_eq!(v1[0].name.as_deref(), Some("n"));
    }
}
