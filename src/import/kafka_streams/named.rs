//! Processors the catalogue does not know, judged by what the description does say.
//!
//! Kafka's documentation tells users to name every processor (`Named.as`, `Grouped.as`, ...),
//! and a named processor's line shows no operator type, only its name and its stores. The
//! stores say a lot: a processor that lists none holds no state the topology manages; one
//! that lists a store another processor writes reads that state (the stream-table race); one
//! alone with its store keeps its own state. A GlobalKTable join lists no store at all: in a
//! topology with a global store, such a join, and any named processor that lists no store,
//! may read the global state, and is linked to it.
//!
//! Each rule is a catalogue [`Entry`] with no pattern, appended to the catalogue the import
//! uses, so that the spec's comments, `--explain` and the store links treat a rule like any
//! entry. A user catalogue entry matching the processor comes first, as always.

use std::collections::{BTreeSet, HashMap};

use crate::codes;
use crate::diagnostic::Diagnostic;
use crate::import::catalog::{Catalog, Entry, one_line};
use crate::import::{Operator, Topology};
use crate::label::Annotation;

/// Where the rules say they come from, in comments and `--explain`.
const ORIGIN: &str = "the Kafka Streams importer's rule for";

/// The rules, in the order they are appended to the catalogue.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Rule {
    Stateless,
    OwnStore,
    Reader,
    Ambiguous,
    GlobalReader,
}

const RULES: [Rule; 5] = [
    Rule::Stateless,
    Rule::OwnStore,
    Rule::Reader,
    Rule::Ambiguous,
    Rule::GlobalReader,
];

impl Rule {
    fn entry(self) -> Entry {
        let (label, gate, keeps, reads, warn, what, reason): (
            _,
            Option<&str>,
            bool,
            bool,
            Option<&str>,
            &str,
            &str,
        ) = match self {
            Rule::Stateless => (
                Annotation::CR,
                None,
                true,
                false,
                None,
                "named processors that list no store",
                "a named processor shows no operator type, but it lists no state store, so it holds no state the topology manages: each record on its own. It keeps each key's order where that matters: Kafka Streams repartitions before any stateful operation that a key change precedes",
            ),
            Rule::OwnStore => (
                Annotation::OW,
                Some("key"),
                false,
                false,
                Some(
                    "a named processor with its own state store: the description does not say what it does with it; assumed order-sensitive per key (an aggregation, a suppress); user code that reads across keys needs an entry with gate \"*\"",
                ),
                "named processors alone with their stores",
                "it is the only processor listing its stores: it keeps its own state and emits from it, so what it emits depends on the order of each key's records",
            ),
            Rule::Reader => (
                Annotation::OR,
                Some("key"),
                false,
                true,
                None,
                "named processors reading a store another processor writes",
                "it lists a store that another processor writes: it reads that state while the writer changes it (the stream-table race), so what it emits depends on which came first",
            ),
            Rule::Ambiguous => (
                Annotation::OW,
                Some("*"),
                false,
                false,
                Some(
                    "named processors share a store and the description does not show which of them writes it and which reads it; assumed order-sensitive across all keys",
                ),
                "named processors sharing a store with no known writer",
                "it shares a store with other named processors and which writes it is not shown: the most conservative annotation",
            ),
            Rule::GlobalReader => (
                Annotation::OR,
                Some("key"),
                false,
                true,
                // The link's own warning says what was assumed, naming the global store.
                None,
                "named processors that list no store, beside a global store",
                "it lists no store, but a GlobalKTable join lists none either: it may read the global store, which its own sub-topology updates concurrently",
            ),
        };
        Entry {
            classes: Vec::new(),
            names: Vec::new(),
            label,
            gate: gate.map(|g| vec![g.to_string()]),
            seal: None,
            order: None,
            replicated: None,
            replicas: None,
            keeps_key_order: keeps,
            reads_state: reads,
            warn: warn.map(str::to_string),
            reason: reason.to_string(),
            origin: format!("{ORIGIN} {what}"),
        }
    }
}

/// Whether a processor's name is one Kafka Streams generated (`KSTREAM-FILTER-0000000001`):
/// it names the operator, so a class the catalogue does not know is an unknown operator, not a
/// named processor.
pub(super) fn generated(name: &str) -> bool {
    let class = super::class_of(name);
    class.len() < name.len()
        && class.contains('-')
        && class.bytes().all(|b| b.is_ascii_uppercase() || b == b'-')
}

/// The stores the processors of global-store sub-topologies list.
fn global_stores(topology: &Topology) -> BTreeSet<&str> {
    topology
        .stores
        .iter()
        .filter(|(i, _, _)| topology.operators[*i].replicated.is_some())
        .map(|(_, s, _)| s.as_str())
        .collect()
}

/// Gives every processor no entry matched a rule (see the module's doc), and links the
/// readers of a global store to it: joins whose entry says `reads-state` but that list no
/// store (a GlobalKTable join) and named processors that list none. The rules' entries are
/// appended to `catalog`, and `entries[i]` set to the rule of operator `i`.
pub fn judge(topology: &mut Topology, catalog: &mut Catalog, entries: &mut [Option<usize>]) {
    let first_rule = catalog.entries.len();
    let rule_at = |r: Rule| first_rule + RULES.iter().position(|x| *x == r).unwrap_or(0);
    let entry_of = |i: usize, catalog: &Catalog, entries: &[Option<usize>]| {
        entries[i].and_then(|e| catalog.entries.get(e).cloned())
    };
    let mut listed: HashMap<&str, Vec<usize>> = HashMap::new();
    let mut own: Vec<Vec<&str>> = vec![Vec::new(); topology.operators.len()];
    for (i, s, _) in &topology.stores {
        listed.entry(s.as_str()).or_default().push(*i);
        own[*i].push(s.as_str());
    }
    let named: Vec<bool> = topology
        .operators
        .iter()
        .enumerate()
        .map(|(i, op)| entries[i].is_none() && op.kind == "processor" && !generated(&op.name))
        .collect();
    let globals = global_stores(topology);
    let mut rules: Vec<(usize, Rule)> = Vec::new();
    for (i, op) in topology.operators.iter().enumerate() {
        if !named[i] {
            continue;
        }
        let stores = &own[i];
        let rule = if stores.is_empty() {
            if globals.is_empty() || op.replicated.is_some() {
                Rule::Stateless
            } else {
                Rule::GlobalReader
            }
        } else {
            // Another processor that writes one of its stores: a known entry that does not
            // only read, or (for a global store) the global sub-topology's processor.
            let others = stores
                .iter()
                .flat_map(|s| listed[s].iter().copied())
                .filter(|&j| j != i);
            let mut known_writer = false;
            let mut named_partner = false;
            for j in others {
                match entry_of(j, catalog, entries) {
                    Some(e) if !e.reads_state => known_writer = true,
                    Some(_) => {}
                    None if named[j] => named_partner = true,
                    None => known_writer = true,
                }
            }
            match (known_writer, named_partner) {
                (true, _) => Rule::Reader,
                (false, true) => Rule::Ambiguous,
                (false, false) => Rule::OwnStore,
            }
        };
        rules.push((i, rule));
    }
    catalog.entries.extend(RULES.iter().map(|r| r.entry()));
    for (i, r) in rules {
        entries[i] = Some(rule_at(r));
    }
    link_global_readers(
        topology,
        catalog,
        entries,
        &globals.into_iter().map(str::to_string).collect::<Vec<_>>(),
    );
}

/// Links each processor that reads state but lists no store to the global stores: it is
/// given each of them as a store it lists, so that the store links join it to their writers.
/// More than one global store is ambiguous: it is linked to all, and a warning says so.
fn link_global_readers(
    topology: &mut Topology,
    catalog: &Catalog,
    entries: &[Option<usize>],
    globals: &[String],
) {
    if globals.is_empty() {
        return;
    }
    let listing: BTreeSet<usize> = topology.stores.iter().map(|(i, _, _)| *i).collect();
    let mut links = Vec::new();
    let mut warnings = Vec::new();
    for (i, op) in topology.operators.iter().enumerate() {
        let reads = entries[i].is_some_and(|e| catalog.entries[e].reads_state);
        if !reads || listing.contains(&i) || op.replicated.is_some() {
            continue;
        }
        for g in globals {
            links.push((i, g.clone(), op.span));
        }
        let named = entries[i]
            .is_some_and(|e| catalog.entries[e].origin == Rule::GlobalReader.entry().origin);
        warnings.push(global_warning(op, globals, named));
    }
    topology.stores.extend(links);
    topology.warnings.extend(warnings);
}

/// The warning of a link to the global stores; `named`: a named processor that lists no store,
/// which may or may not be a GlobalKTable join.
fn global_warning(op: &Operator, globals: &[String], named: bool) -> Diagnostic {
    let names: Vec<String> = globals
        .iter()
        .map(|g| format!("`{}`", one_line(g)))
        .collect();
    let what = if named {
        format!(
            "{} `{}` is named and lists no store, and a GlobalKTable join lists none: it may read the global state",
            op.kind,
            one_line(&op.name)
        )
    } else {
        format!(
            "{} `{}` reads state but lists no store, as a GlobalKTable join does not list the global store it reads",
            op.kind,
            one_line(&op.name)
        )
    };
    let (message, help) = if globals.len() == 1 {
        (
            format!(
                "{what}; it is linked to the topology's global store {}",
                names[0]
            ),
            "if it reads no global store, give it a user catalogue entry by name that says what it does (label: CR if it handles each record on its own)",
        )
    } else {
        (
            format!(
                "{what}; this topology has {} global stores ({}) and which one it reads is not shown, so it is linked to all of them",
                globals.len(),
                names.join(", ")
            ),
            "to link it to the one it reads, import the spec and keep only that store's stream into it",
        )
    };
    Diagnostic::new(&codes::MISSING_INFORMATION, message)
        .at(op.span, "linked to the global state")
        .help(help)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_names_are_told_from_user_names() {
        assert!(generated("KSTREAM-FILTER-0000000001"));
        assert!(generated("KSTREAM-BRANCH-0000000001-0"));
        assert!(!generated("filter-positive"));
        assert!(!generated("orders-this-join"));
        assert!(!generated("step-2"));
        assert!(!generated("Join"));
    }
}
