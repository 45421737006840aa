//! The plan document of `blazes`: the contract between the planner, which writes it
//! (`blazes plan --format json`), and the runtime, which deploys it (`blazes deploy`,
//! `blazes_runtime::deploy`). Both sides name mechanism kinds and statuses through the types
//! here, so a kind one side knows and the other does not is a compile error on the writer's
//! side and a clear error on the reader's, never a string that silently matches nothing.
//!
//! ```
//! use blazes_plan::{MechanismKind, PlanFile, PlanStatus};
//!
//! let entry: PlanFile = serde_json::from_str(r#"{
//!     "path": "wordcount.yaml", "name": "wordcount", "status": "repaired",
//!     "mechanisms": [{ "kind": "keyed-order", "component": "Count", "key": ["batch", "word"] }]
//! }"#).unwrap();
//! assert_eq!(entry.status, PlanStatus::Repaired);
//! assert_eq!(entry.mechanisms[0].kind, MechanismKind::KeyedOrder);
//!
//! // A kind this version does not know is an error that names it.
//! let err = serde_json::from_str::<PlanFile>(r#"{
//!     "path": "p.yaml", "status": "repaired", "mechanisms": [{ "kind": "quorum-order" }]
//! }"#).unwrap_err();
//! assert!(err.to_string().contains("unknown mechanism kind `quorum-order`"));
//! ```
//!
//! The document's shape: version 2 is `{"version": 2, "files": [entry, ...]}`, one entry per
//! spec; version 1 was a single entry at the top level with its `version`. The writer adds
//! fields within a version and never renames or removes one; these types hold the fields a
//! deployment reads (the rest: costs, findings fixed, sinks, reasons, the verification by
//! execution, are documented in the project's `docs/plan.md`) and ignore the others, so an
//! older reader keeps reading a newer writer's document of the same version.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// The version of the document's shape that the writer produces.
pub const VERSION: u64 = 2;
/// The versions a reader of this crate understands.
pub const READS: [u64; 2] = [1, 2];

/// What a mechanism of a plan is. The planner's own kinds map onto these one to one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum MechanismKind {
    /// A seal reaches an order-sensitive path: the consumer buffers each partition until
    /// every producer sealed it.
    SealBarrier,
    /// The plan adds `seal:` to a source that can punctuate the key.
    AddSeal,
    /// The plan orders a component's inputs per key (`order: [keys]`).
    KeyedOrder,
    /// The plan orders all of a component's inputs (`order: global`).
    GlobalOrder,
}

impl MechanismKind {
    /// Every kind, in the order plans list them.
    pub const ALL: [MechanismKind; 4] = [
        MechanismKind::SealBarrier,
        MechanismKind::AddSeal,
        MechanismKind::KeyedOrder,
        MechanismKind::GlobalOrder,
    ];

    /// The kind's name in the document (`seal-barrier`, `add-seal`, `keyed-order`,
    /// `global-order`).
    pub fn as_str(self) -> &'static str {
        match self {
            MechanismKind::SealBarrier => "seal-barrier",
            MechanismKind::AddSeal => "add-seal",
            MechanismKind::KeyedOrder => "keyed-order",
            MechanismKind::GlobalOrder => "global-order",
        }
    }

    /// The kind a document names, if this version knows it.
    pub fn from_name(name: &str) -> Option<MechanismKind> {
        MechanismKind::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

impl fmt::Display for MechanismKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Names as a sentence's list: `a`, `b`, `c`.
fn listed(names: impl Iterator<Item = &'static str>) -> String {
    names
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl Serialize for MechanismKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for MechanismKind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Name;
        impl Visitor<'_> for Name {
            type Value = MechanismKind;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a mechanism kind")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<MechanismKind, E> {
                MechanismKind::from_name(v).ok_or_else(|| {
                    E::custom(format_args!(
                        "unknown mechanism kind `{v}` (this version reads {}; upgrade blazes)",
                        listed(MechanismKind::ALL.iter().map(|k| k.as_str()))
                    ))
                })
            }
        }
        d.deserialize_str(Name)
    }
}

/// The outcome of planning one spec.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PlanStatus {
    /// Nothing to repair: every sink is as good as it tolerates.
    Ok,
    /// The mechanisms make every sink as good as it tolerates.
    Repaired,
    /// Some sink cannot be repaired by any allowed mechanism.
    Unrepairable,
    /// The spec is invalid: the entry lists its diagnostics and no plan.
    Invalid,
}

impl PlanStatus {
    /// Every status.
    pub const ALL: [PlanStatus; 4] = [
        PlanStatus::Ok,
        PlanStatus::Repaired,
        PlanStatus::Unrepairable,
        PlanStatus::Invalid,
    ];

    /// The status's name in the document.
    pub fn as_str(self) -> &'static str {
        match self {
            PlanStatus::Ok => "ok",
            PlanStatus::Repaired => "repaired",
            PlanStatus::Unrepairable => "unrepairable",
            PlanStatus::Invalid => "invalid",
        }
    }

    /// The status a document names, if this version knows it.
    pub fn from_name(name: &str) -> Option<PlanStatus> {
        PlanStatus::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

impl fmt::Display for PlanStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for PlanStatus {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for PlanStatus {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Name;
        impl Visitor<'_> for Name {
            type Value = PlanStatus;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a plan status")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<PlanStatus, E> {
                PlanStatus::from_name(v).ok_or_else(|| {
                    E::custom(format_args!(
                        "unknown plan status `{v}` (this version reads {}; upgrade blazes)",
                        listed(PlanStatus::ALL.iter().map(|k| k.as_str()))
                    ))
                })
            }
        }
        d.deserialize_str(Name)
    }
}

/// A version 2 document: one entry per spec, in the order they were given.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Document {
    /// The document's version ([`VERSION`]).
    pub version: u64,
    /// The specs' plans.
    #[serde(default)]
    pub files: Vec<PlanFile>,
}

/// One spec's plan: the fields a deployment reads.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PlanFile {
    /// The spec's path as the user wrote it.
    pub path: String,
    /// The dataflow's name (absent for an invalid spec).
    #[serde(default)]
    pub name: Option<String>,
    /// The outcome of planning it.
    pub status: PlanStatus,
    /// The mechanisms, in the plan's order: those the plan adds, then its seal barriers.
    #[serde(default)]
    pub mechanisms: Vec<Mechanism>,
}

impl PlanFile {
    /// An entry with no mechanisms.
    pub fn new(path: impl Into<String>, name: Option<String>, status: PlanStatus) -> PlanFile {
        PlanFile {
            path: path.into(),
            name,
            status,
            mechanisms: Vec::new(),
        }
    }

    /// The entry with `mechanism` appended.
    pub fn with(mut self, mechanism: Mechanism) -> PlanFile {
        self.mechanisms.push(mechanism);
        self
    }
}

/// One mechanism of a plan: the fields a deployment reads.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Mechanism {
    /// What it is.
    pub kind: MechanismKind,
    /// The component it is on (the consumer of a seal, the ordered component); absent for an
    /// added seal.
    #[serde(default)]
    pub component: Option<String>,
    /// A seal barrier's input interface.
    #[serde(default)]
    pub input: Option<String>,
    /// An added seal's source.
    #[serde(default)]
    pub source: Option<String>,
    /// An added seal's internal stream, whose producer punctuates it (instead of a source).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<StreamRef>,
    /// The key of an order or a seal (empty for a global order).
    #[serde(default)]
    pub key: Vec<String>,
    /// The producers a seal barrier waits for.
    #[serde(default)]
    pub producers: Vec<String>,
    /// The engine task an order covers as a whole (`task:` in the spec): one order for
    /// every order-sensitive component the task runs, of which `component` is the first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
}

/// An internal stream, as the spec writes its endpoints.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamRef {
    /// `Component.output`.
    pub from: String,
    /// `Component.input`.
    pub to: String,
    /// The component that writes it, and punctuates it when the plan seals it.
    #[serde(default)]
    pub producer: Option<String>,
}

impl Mechanism {
    /// A mechanism of `kind` with every other field empty.
    pub fn new(kind: MechanismKind) -> Mechanism {
        Mechanism {
            kind,
            component: None,
            input: None,
            source: None,
            stream: None,
            key: Vec::new(),
            producers: Vec::new(),
            task: None,
        }
    }

    /// On `component`.
    pub fn on(mut self, component: impl Into<String>) -> Mechanism {
        self.component = Some(component.into());
        self
    }

    /// At the input interface `input` (a seal barrier's).
    pub fn at_input(mut self, input: impl Into<String>) -> Mechanism {
        self.input = Some(input.into());
        self
    }

    /// At the source `source` (an added seal's).
    pub fn at_source(mut self, source: impl Into<String>) -> Mechanism {
        self.source = Some(source.into());
        self
    }

    /// On the internal stream `from -> to`, which the component of `from` punctuates (an
    /// added seal's).
    pub fn at_stream(mut self, from: impl Into<String>, to: impl Into<String>) -> Mechanism {
        let from = from.into();
        let producer = from.split_once('.').map(|(c, _)| c.to_string());
        self.stream = Some(StreamRef {
            from,
            to: to.into(),
            producer,
        });
        self
    }

    /// Keyed by `key`.
    pub fn keyed<S: Into<String>>(mut self, key: impl IntoIterator<Item = S>) -> Mechanism {
        self.key = key.into_iter().map(Into::into).collect();
        self
    }

    /// Covering the engine task `task` (an order's).
    pub fn for_task(mut self, task: impl Into<String>) -> Mechanism {
        self.task = Some(task.into());
        self
    }

    /// Waiting for `producers` (a seal barrier's).
    pub fn producers<S: Into<String>>(
        mut self,
        producers: impl IntoIterator<Item = S>,
    ) -> Mechanism {
        self.producers = producers.into_iter().map(Into::into).collect();
        self
    }
}

/// Builder-style setters for a `#[non_exhaustive]` option struct with public fields: callers
/// start from the struct's constructor and chain `.field(value)` (or assign the field), so a
/// new setting is never a breaking change. Each setter repeats its field's documentation.
///
/// Shared by the crates of the workspace (the analyzer's options and the runtime's configs), and
/// here because this is the one crate both depend on; not part of the plan document's API.
#[doc(hidden)]
#[macro_export]
macro_rules! setters {
    ($ty:ty { $($(#[doc = $doc:expr])* $field:ident: $t:ty),* $(,)? }) => {
        impl $ty {
            $(
                $(#[doc = $doc])*
                #[must_use]
                pub fn $field(mut self, $field: $t) -> Self {
                    self.$field = $field;
                    self
                }
            )*
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_and_status_reads_back_what_it_writes() {
        for k in MechanismKind::ALL {
            let text = serde_json::to_string(&k).unwrap();
            assert_eq!(serde_json::from_str::<MechanismKind>(&text).unwrap(), k);
            assert_eq!(MechanismKind::from_name(k.as_str()), Some(k));
        }
        for s in PlanStatus::ALL {
            let text = serde_json::to_string(&s).unwrap();
            assert_eq!(serde_json::from_str::<PlanStatus>(&text).unwrap(), s);
        }
    }

    #[test]
    fn an_unknown_kind_or_status_is_an_error_naming_it() {
        let e = serde_json::from_str::<MechanismKind>("\"Keyed-Order\"").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("unknown mechanism kind `Keyed-Order` (this version reads `seal-barrier`, `add-seal`, `keyed-order`, `global-order`; upgrade blazes)"),
            "{e}"
        );
        let e = serde_json::from_str::<PlanStatus>("\"done\"").unwrap_err();
        assert!(e.to_string().contains("unknown plan status `done`"), "{e}");
    }

    #[test]
    fn fields_a_newer_writer_adds_are_ignored() {
        let m: Mechanism = serde_json::from_str(
            r#"{"kind": "seal-barrier", "component": "C", "input": "i", "key": ["k"],
                "producers": ["s"], "cost": 1, "runtime": "..."}"#,
        )
        .unwrap();
        assert_eq!(
            m,
            Mechanism::new(MechanismKind::SealBarrier)
                .on("C")
                .at_input("i")
                .keyed(["k"])
                .producers(["s"])
        );
    }
}

/// The crate's README, whose example runs as a doctest so that it stays true.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
