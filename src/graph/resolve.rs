//! Resolving a stream's endpoints to interfaces, sources and sinks by name, and the errors
//! when they do not resolve: dangling names with "did you mean" (within the file's budget),
//! and streams written in the wrong direction.

use std::collections::BTreeSet;

use foldhash::{HashMap, HashMapExt};

use super::build::Builder;
use super::{
    CompId, Component, Consumer, Direction, Iface, IfaceId, Producer, Sink, SinkId, Source,
    SourceId,
};
use crate::codes;
use crate::diagnostic::Diagnostic;

use crate::spec;

impl Builder {
    pub(super) fn resolve_from(&mut self, n: &Names, e: &spec::Endpoint) -> Option<Producer> {
        Some(match self.resolve(n, e, &FROM)? {
            Resolved::Iface(i) => Producer::Output(i),
            Resolved::Declared(k) => Producer::Source(SourceId(k)),
        })
    }

    pub(super) fn resolve_to(&mut self, n: &Names, e: &spec::Endpoint) -> Option<Consumer> {
        Some(match self.resolve(n, e, &TO)? {
            Resolved::Iface(i) => Consumer::Input(i),
            Resolved::Declared(k) => Consumer::Sink(SinkId(k)),
        })
    }

    /// Resolves one end of a stream, or reports why it cannot be: the two ends are mirror
    /// images (outputs and sources upstream, inputs and sinks downstream), told apart by `end`.
    fn resolve(&mut self, n: &Names, e: &spec::Endpoint, end: &End) -> Option<Resolved> {
        let (own_dir, other_dir) = match end.field {
            "from" => (Direction::Output, Direction::Input),
            _ => (Direction::Input, Direction::Output),
        };
        let name = e.name();
        let (own_decl, other_decl) = match end.field {
            "from" => (n.sources.get(name).map(|s| s.0), n.sinks.contains_key(name)),
            _ => (n.sinks.get(name).map(|s| s.0), n.sources.contains_key(name)),
        };
        match e.component() {
            Some(c) => {
                let cid = self.component(n, c, e)?;
                let own_ifaces = n.ifaces_of(cid, own_dir);
                if let Some(i) = own_ifaces.get(name) {
                    return Some(Resolved::Iface(i));
                }
                if n.incomplete[cid.index()] {
                    return None;
                }
                if n.ifaces_of(cid, other_dir).get(name).is_some() {
                    self.push(
                        Diagnostic::new(
                            &codes::WRONG_DIRECTION,
                            format!(
                                "stream {} `{}`, which is an {} of {c}",
                                end.flows, e.text, end.other_iface
                            ),
                        )
                        .at(
                            e.span,
                            format!("an {}, not an {}", end.other_iface, end.own_iface),
                        )
                        .help(format!(
                            "a stream's `{}` must be an {}; the {}s of {c} are: {}",
                            end.field,
                            end.own_iface,
                            end.own_iface,
                            list(&own_ifaces)
                        )),
                    );
                } else {
                    self.unknown_iface(e, c, end.own_iface, &own_ifaces);
                }
                None
            }
            None => {
                if let Some(k) = own_decl {
                    return Some(Resolved::Declared(k));
                }
                let d = if other_decl {
                    Diagnostic::new(
                        &codes::WRONG_DIRECTION,
                        format!(
                            "stream {} `{}`, which is a {}",
                            end.flows, e.text, end.other_decl
                        ),
                    )
                    .at(
                        e.span,
                        format!("a {}, not a {}", end.other_decl, end.own_decl),
                    )
                    .help(end.direction_help)
                } else if n.comp_index.contains_key(name) {
                    Diagnostic::new(
                        &codes::DANGLING_ENDPOINT,
                        format!(
                            "stream endpoint `{}` names a component but not its interface",
                            e.text
                        ),
                    )
                    .at(e.span, "missing `.interface`")
                    .help(format!("write `{}.<{}>`", e.text, end.own_iface))
                } else {
                    let d = Diagnostic::new(
                        &codes::DANGLING_ENDPOINT,
                        format!(
                            "stream {} `{}`, which is not a declared {}",
                            end.names, e.text, end.own_decl
                        ),
                    )
                    .at(e.span, format!("unknown {}", end.own_decl));
                    let known: Vec<&str> = match end.field {
                        "from" => n.sources.keys().copied().collect(),
                        _ => n.sinks.keys().copied().collect(),
                    };
                    match self.suggest(name, known.into_iter()) {
                        Some(s) => d.help(format!("did you mean `{s}`?")),
                        None => d.help(format!(
                            "declare it under `{}s:` (`{}: {{}}`), or write `Component.{}`",
                            end.own_decl, name, end.own_iface
                        )),
                    }
                };
                self.push(d);
                None
            }
        }
    }

    fn component(&mut self, n: &Names, c: &str, e: &spec::Endpoint) -> Option<CompId> {
        if let Some(&id) = n.comp_index.get(c) {
            return Some(id);
        }
        let mut d = Diagnostic::new(
            &codes::DANGLING_ENDPOINT,
            format!(
                "stream endpoint `{}` names component `{c}`, which is not defined",
                e.text
            ),
        )
        .at(e.span, "unknown component");
        if let Some(s) = self.suggest(c, n.comp_index.keys().copied()) {
            d = d.help(format!("did you mean `{s}.{}`?", e.name()));
        }
        self.push(d);
        None
    }

    fn unknown_iface(&mut self, e: &spec::Endpoint, c: &str, dir: &str, known: &IfaceView<'_>) {
        let mut d = Diagnostic::new(
            &codes::DANGLING_ENDPOINT,
            format!("component {c} has no {dir} `{}`", e.name()),
        )
        .at(e.span, format!("unknown {dir}"));
        d = match self.suggest(e.name(), known.keys()) {
            Some(s) => d.help(format!("did you mean `{c}.{s}`?")),
            None => d.help(format!("the {dir}s of {c} are: {}", list(known))),
        };
        self.push(d);
    }
}

/// A resolved endpoint: a component interface, or a declared source (upstream) or sink
/// (downstream), by index.
enum Resolved {
    Iface(IfaceId),
    Declared(u32),
}

/// The words that tell the two ends of a stream apart in messages.
struct End {
    field: &'static str,
    own_iface: &'static str,
    other_iface: &'static str,
    own_decl: &'static str,
    other_decl: &'static str,
    flows: &'static str,
    names: &'static str,
    direction_help: &'static str,
}

const FROM: End = End {
    field: "from",
    own_iface: "output",
    other_iface: "input",
    own_decl: "source",
    other_decl: "sink",
    flows: "flows out of",
    names: "comes from",
    direction_help: "streams flow into sinks; a stream's `from` is a source or `Component.output`",
};

const TO: End = End {
    field: "to",
    own_iface: "input",
    other_iface: "output",
    own_decl: "sink",
    other_decl: "source",
    flows: "flows into",
    names: "goes to",
    direction_help: "streams flow out of sources; a stream's `to` is a sink or `Component.input`",
};

pub(super) struct Names<'a> {
    comp_index: HashMap<&'a str, CompId>,
    incomplete: &'a [bool],
    components: &'a [Component],
    ifaces: &'a [Iface],
    /// Interfaces by name of the components that have more than [`IFACES_INDEXED`] of one
    /// direction; the others are searched in their short lists.
    indexed: HashMap<(CompId, bool), HashMap<&'a str, IfaceId>>,
    sources: HashMap<&'a str, SourceId>,
    sinks: HashMap<&'a str, SinkId>,
}

impl<'a> Names<'a> {
    pub(super) fn new(
        components: &'a [Component],
        incomplete: &'a [bool],
        ifaces: &'a [Iface],
        sources: &'a [Source],
        sinks: &'a [Sink],
    ) -> Self {
        let mut comp_index = HashMap::with_capacity(components.len());
        let mut indexed = HashMap::new();
        for (i, c) in components.iter().enumerate() {
            let cid = CompId(i as u32);
            comp_index.insert(c.name.as_str(), cid);
            for (list, input) in [(&c.inputs, true), (&c.outputs, false)] {
                if list.len() > IFACES_INDEXED {
                    let map = list
                        .iter()
                        .map(|&f| (ifaces[f.index()].name.as_str(), f))
                        .collect();
                    indexed.insert((cid, input), map);
                }
            }
        }
        Names {
            comp_index,
            incomplete,
            components,
            ifaces,
            indexed,
            sources: sources
                .iter()
                .enumerate()
                .map(|(i, s)| (s.name.as_str(), SourceId(i as u32)))
                .collect(),
            sinks: sinks
                .iter()
                .enumerate()
                .map(|(i, s)| (s.name.as_str(), SinkId(i as u32)))
                .collect(),
        }
    }

    fn ifaces_of(&self, cid: CompId, dir: Direction) -> IfaceView<'_> {
        let c = &self.components[cid.index()];
        let input = dir == Direction::Input;
        IfaceView {
            ids: if input { &c.inputs } else { &c.outputs },
            ifaces: self.ifaces,
            index: self.indexed.get(&(cid, input)),
        }
    }
}

/// A component's interfaces of one direction, by name: its short list, searched, or past
/// [`IFACES_INDEXED`] names a map. Components have a handful of interfaces, and a map for each
/// costs more than it saves; but a hostile spec can give one component a hundred thousand,
/// and linear lookups would make building it quadratic.
struct IfaceView<'a> {
    ids: &'a [IfaceId],
    ifaces: &'a [Iface],
    index: Option<&'a HashMap<&'a str, IfaceId>>,
}

pub(super) const IFACES_INDEXED: usize = 32;

impl<'a> IfaceView<'a> {
    fn get(&self, name: &str) -> Option<IfaceId> {
        match self.index {
            Some(m) => m.get(name).copied(),
            None => self
                .ids
                .iter()
                .copied()
                .find(|f| self.ifaces[f.index()].name == name),
        }
    }
    fn len(&self) -> usize {
        self.ids.len()
    }
    fn keys(&self) -> impl ExactSizeIterator<Item = &'a str> + use<'a> {
        let ifaces = self.ifaces;
        self.ids
            .iter()
            .map(move |f| ifaces[f.index()].name.as_str())
    }
}

/// Sorted, backquoted list of interface names (`none` when empty).
fn list(names: &IfaceView<'_>) -> String {
    // A help line, not a dump: a component with thousands of interfaces would make every
    // error about it thousands of names long.
    if names.len() > 12 {
        return format!(
            "{} names (run `blazes check --format json` to list them)",
            names.len()
        );
    }
    let sorted: BTreeSet<&str> = names.keys().collect();
    if sorted.is_empty() {
        return "none".into();
    }
    sorted
        .iter()
        .map(|k| format!("`{k}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
