//! `blazes render`: the analysed dataflow as a Graphviz graph.
//!
//! Components are boxes listing their paths (points of order highlighted with their gate),
//! replicated components are stacked boxes; sources and sinks have shapes of their own; each
//! stream is an edge labelled and coloured by its derived label. Coordination mechanisms to
//! draw (seal barriers, added seals, orderings) are plain data ([`Drawn`]), filled from a
//! plan's mechanisms by id ([`mechanisms`]).
//!
//! [`plan_dot`] draws a spec *after* its coordination plan: the labels are those of the
//! analysis with the plan's mechanisms applied (the dataflow [`crate::plan::apply::applied`]
//! builds with the orders and seals `--apply` writes), the mechanisms the plan adds are drawn green,
//! dashed and tagged `+`, and a legend explains the colours and marks. So the picture says
//! what the plan achieves, never a mechanism next to the damage it removes.
//!
//! The graph is built as `graphviz-rust` structures and printed to DOT text. Node ids are
//! indices, never names, and everything is emitted in IR order: the same spec always gives
//! byte-identical DOT. Running `dot` to get SVG is IO and lives in [`svg`], used by the CLI.
//! The DOT vocabulary (colours, pens, escaping, statements) is in `dot`, the sources', sinks'
//! and components' nodes in `nodes`; this module lays out the graph, its edges and
//! mechanisms.

mod dot;
mod nodes;
pub mod svg;

use std::collections::BTreeMap;

use graphviz_rust::dot_structures::{Graph, GraphAttributes, Id, Stmt, Subgraph};
use graphviz_rust::printer::{DotPrinter, PrinterContext};

use crate::analysis::{Analysis, FailOn, PointOfOrder};
use crate::graph::{CompId, Consumer, Dataflow, IfaceId, Producer, SourceId, StreamId};
use crate::label::Label;
use crate::vocabulary;
use dot::*;
use nodes::{component_node, sinks, sources};

/// A coordination mechanism to draw where it goes.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Drawn {
    /// The consumer buffers each partition of `key` until every producer sealed it: drawn as
    /// a bar on the consuming input. `added`: the plan brings it (a seal it adds), rather than
    /// the spec's own seals.
    Barrier {
        component: CompId,
        input: IfaceId,
        key: Vec<String>,
        added: bool,
    },
    /// A source must punctuate `key`: drawn on the source.
    AddSeal { source: SourceId, key: Vec<String> },
    /// A component must punctuate its output stream per `key`: drawn on the stream.
    SealStream { stream: StreamId, key: Vec<String> },
    /// The component's inputs are ordered, per key (`Some`) or globally (`None`): drawn as an
    /// ordering node in front of the component.
    Order {
        component: CompId,
        keys: Option<Vec<String>>,
    },
}

/// The mechanisms of a coordination plan, as things to draw: the added seals and orders, and
/// every seal barrier the runtime must provide once the plan is applied.
pub fn mechanisms(plan: &crate::plan::Plan) -> Vec<Drawn> {
    use crate::graph::Order as O;
    use crate::plan::Choice;
    // Key names come from the mechanism, not from `df.keys`: the planner interns the keys it
    // invents (the intersection of two gates for a keyed order) in its own copy of the
    // interner, so their `KeySet`s do not exist in `df.keys`.
    let mut out: Vec<Drawn> = plan
        .mechanisms
        .iter()
        .flat_map(|m| {
            // An order is drawn at every component it takes effect at (a task's members).
            let at: &[CompId] = match m.choice {
                Choice::AddSeal { .. } | Choice::SealStream { .. } => &[],
                Choice::Order { .. } => &m.components,
            };
            let seal = match m.choice {
                Choice::AddSeal { source, .. } => Some(Drawn::AddSeal {
                    source,
                    key: m.key.clone(),
                }),
                Choice::SealStream { stream, .. } => Some(Drawn::SealStream {
                    stream,
                    key: m.key.clone(),
                }),
                Choice::Order { .. } => None,
            };
            let keys = match m.choice {
                Choice::Order {
                    order: O::Keys(_), ..
                } => Some(m.key.clone()),
                _ => None,
            };
            seal.into_iter()
                .chain(at.iter().map(move |&component| Drawn::Order {
                    component,
                    keys: keys.clone(),
                }))
        })
        .collect();
    // The plan was made for this dataflow (or a copy with the plan's edits): its ids are
    // this dataflow's.
    out.extend(plan.barriers.iter().map(|b| Drawn::Barrier {
        component: b.component,
        input: b.input,
        key: b.key.clone(),
        added: b.added,
    }));
    out
}

/// Where a stream into `input` enters the drawing, and the head label it carries there.
struct Entry {
    node: String,
    headlabel: Option<String>,
}

/// Builds the DOT graph of an analysed dataflow with the given mechanisms drawn (as
/// mechanisms added to it: see [`plan_dot`] for the picture of a plan).
///
/// ```
/// use blazes::check::{self, Outcome};
/// use blazes::render;
///
/// let spec = "
/// sources:
///   tweets: {}
/// components:
///   Count:
///     paths:
///       - { from: words, to: counts, label: OW, gate: [word] }
/// streams:
///   - { from: tweets, to: Count.words }
///   - { from: Count.counts, to: db }
/// sinks:
///   db: {}
/// ";
/// let report = check::check_bytes("count.yaml", spec.as_bytes(), &Default::default());
/// let Outcome::Analysed(a) = &report.outcome else { panic!("a valid spec") };
/// let dot = render::to_dot(&a.dataflow, &a.analysis, &[]);
/// assert!(dot.starts_with("digraph"));
/// // The same spec always gives the same bytes: node ids are indices, never names.
/// assert_eq!(dot, render::to_dot(&a.dataflow, &a.analysis, &[]));
/// ```
pub fn to_dot(df: &Dataflow, an: &Analysis, drawn: &[Drawn]) -> String {
    build(df, an, drawn, None, &BTreeMap::new(), false)
}

/// [`to_dot`] for a composed spec, with each instance's frame labelled by the summary of the
/// file it uses (`check::Analysed::summaries`): its paths, one per line, or why it has none.
pub fn to_dot_summarized(
    df: &Dataflow,
    an: &Analysis,
    drawn: &[Drawn],
    summaries: &[crate::check::ModuleSummary],
) -> String {
    let frames = frames_of(summaries);
    build(df, an, drawn, None, &frames, false)
}

/// Per instance path, the lines of the summary it behaves as: its used file's, or, for an
/// instance its composites coordinate, the file's with that coordination applied.
fn frames_of(summaries: &[crate::check::ModuleSummary]) -> BTreeMap<String, Vec<String>> {
    use crate::analysis::summary::Summary;
    let lines = |header: String, summary: &Summary| {
        let mut l = vec![header];
        match summary {
            Summary::Exact(g) => {
                l.extend(
                    g.paths
                        .iter()
                        .map(|p| format!("{} → {}: {}", p.from, p.to, p.signature())),
                );
                if !g.replicated {
                    l.push("not replicated".into());
                }
            }
            Summary::None(_) | Summary::TooBig(_) => l.push("no summary".into()),
        }
        l
    };
    let mut frames = BTreeMap::new();
    for m in summaries {
        let plain = lines(format!("summary of {}:", m.file), &m.summary);
        for i in &m.instances {
            frames.insert(i.clone(), plain.clone());
        }
        for c in &m.coordinated {
            let header = format!(
                "summary of {} with {}:",
                m.file,
                c.describe().replace('`', "")
            );
            let l = lines(header, &c.summary);
            for i in &c.instances {
                frames.insert(i.clone(), l.clone());
            }
        }
    }
    frames
}

/// The graph of a composed spec with each top-level instance drawn as one box: its name, the
/// summary of the file it uses and how many points of order are inside; the streams inside it
/// are not drawn, those that cross its boundary end at the box (`render --collapse`).
pub fn to_dot_collapsed(
    df: &Dataflow,
    an: &Analysis,
    summaries: &[crate::check::ModuleSummary],
) -> String {
    let frames = frames_of(summaries);
    build(df, an, &[], None, &frames, true)
}

/// The graph of `df` after `plan`: the labels, points of order and sink verdicts of the
/// analysis with the plan's mechanisms applied, the added mechanisms marked, a caption
/// with the plan's verdict and a legend of the colours and marks.
///
/// An unrepairable plan adds nothing, so its picture is the spec's own, captioned as such.
pub fn plan_dot(df: &Dataflow, plan: &crate::plan::Plan, fail_on: FailOn) -> String {
    use crate::plan::Status;
    let (after_df, after) = crate::plan::apply::applied(df, plan, fail_on);
    let drawn = mechanisms(plan);
    let n = plan.mechanisms.len();
    let caption = match plan.status {
        Status::Ok => "plan: nothing to coordinate".to_string(),
        Status::Repaired => format!(
            "plan: repaired by {} (cost {}), drawn with +",
            vocabulary::plural(n, "added mechanism", "added mechanisms"),
            plan.cost
        ),
        Status::Unrepairable => {
            "plan: unrepairable with the allowed mechanisms (see blazes plan)".to_string()
        }
    };
    build(
        &after_df,
        &after,
        &drawn,
        Some(&caption),
        &BTreeMap::new(),
        false,
    )
}

/// The legend of a plan's picture: what the colours of the labels and the marks mean.
fn legend() -> Stmt {
    let labels = [
        (
            Some(Label::Seal(crate::label::KeySet::EMPTY)),
            "Seal(K)",
            "deterministic; every partition of K is closed",
        ),
        (
            Some(Label::Async),
            "Async",
            "deterministic contents, any order",
        ),
        (
            Some(Label::Run),
            "Run",
            "a replay can give different contents",
        ),
        (Some(Label::Inst), "Inst", "replicas disagree for a while"),
        (
            Some(Label::Diverge),
            "Diverge",
            "replicas disagree for good",
        ),
        (None, "no source", "no source reaches it (dashed)"),
    ];
    let row = |left: String, right: &str| {
        format!(
            r#"<TR><TD ALIGN="LEFT">{left}</TD><TD ALIGN="LEFT">{}</TD></TR>"#,
            small(&html(right), None)
        )
    };
    let mut s = String::from(
        r#"<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="2"><TR><TD COLSPAN="2" ALIGN="LEFT"><B>stream labels</B></TD></TR>"#,
    );
    for (l, name, meaning) in labels {
        let (color, _) = style_of(l);
        s.push_str(&row(
            format!(r#"<FONT COLOR="{color}"><B>{name}</B></FONT>"#),
            meaning,
        ));
    }
    s.push_str(r#"<TR><TD COLSPAN="2" ALIGN="LEFT"><B>marks</B></TD></TR>"#);
    s.push_str(&row(
        format!(r#"<FONT COLOR="{ALARM}">⚠ red box</FONT>"#),
        "point of order: order changes the result",
    ));
    s.push_str(&row(
        format!(r#"<FONT COLOR="{ALARM}">✗ red sink</FONT>"#),
        "receives a label worse than it tolerates",
    ));
    s.push_str(&row(
        "▮ bar".to_string(),
        "seal barrier: buffers each partition until sealed",
    ));
    s.push_str(&row(
        format!(r#"<FONT COLOR="{PLAN}"><B>+</B> dashed</FONT>"#),
        "added by the plan",
    ));
    s.push_str("</TABLE>");
    Stmt::Subgraph(Subgraph {
        id: Id::Plain("cluster_legend".to_string()),
        stmts: vec![
            Stmt::GAttribute(GraphAttributes::Graph(vec![
                attr("label", "legend"),
                attr("fontsize", "10"),
                attr("color", GREY),
                attr("style", "rounded"),
            ])),
            node(
                "legend",
                vec![
                    attr("shape", "plain"),
                    html_attr("label", &s),
                    attr("tooltip", "legend"),
                ],
            ),
        ],
    })
}

/// Draws the whole graph: its attributes, the nodes, what stands in front of each input, the
/// streams, the implicit sinks, in that order (the order of the DOT statements is part of the
/// byte-identical output).
fn build(
    df: &Dataflow,
    an: &Analysis,
    drawn: &[Drawn],
    caption: Option<&str>,
    frames: &BTreeMap<String, Vec<String>>,
    collapse: bool,
) -> String {
    let placed = Placement::of(drawn);
    let planned = caption.is_some();
    // A collapsed component is drawn as its top-level instance's box, `x<n>` by the order in
    // which the instances first appear.
    let mut boxes: Vec<String> = Vec::new();
    let collapsed: Vec<Option<String>> = df
        .components
        .iter()
        .map(|c| {
            let (top, _) = c.name.split_once('.').filter(|_| collapse)?;
            let n = match boxes.iter().position(|b| b == top) {
                Some(n) => n,
                None => {
                    boxes.push(top.to_string());
                    boxes.len() - 1
                }
            };
            Some(format!("x{n}"))
        })
        .collect();
    let mut d = Drawing {
        df,
        an,
        stmts: graph_attributes(df, caption),
        frames,
        collapsed,
        boxes,
    };
    sources(df, &placed.add_seals, &mut d.stmts);
    d.components(&placed.orders, planned);
    sinks(df, an, &mut d.stmts);
    if planned {
        d.stmts.push(legend());
    }
    let entries = d.inputs(&placed);
    d.streams(&entries, &placed.stream_seals);
    d.implicit_sinks();
    print(df, d.stmts)
}

/// The graph-wide, node and edge attributes, with the title (the spec's name, and the caption
/// of a plan's picture).
fn graph_attributes(df: &Dataflow, caption: Option<&str>) -> Vec<Stmt> {
    let title = match caption {
        Some(c) => format!(
            "<B>{}</B><BR/>{}",
            html(&df.name),
            small(&html(c), Some(PLAN))
        ),
        None => format!("<B>{}</B>", html(&df.name)),
    };
    vec![
        Stmt::GAttribute(GraphAttributes::Graph(vec![
            attr("rankdir", "LR"),
            attr("fontname", FONT),
            attr("labelloc", "t"),
            html_attr("label", &title),
            attr("nodesep", "0.4"),
            attr("ranksep", "0.8"),
        ])),
        Stmt::GAttribute(GraphAttributes::Node(vec![
            attr("fontname", FONT),
            attr("fontsize", "11"),
        ])),
        Stmt::GAttribute(GraphAttributes::Edge(vec![
            attr("fontname", FONT),
            attr("fontsize", "10"),
            attr("labelfontsize", "8"),
            attr("labelfontcolor", "#616161"),
        ])),
    ]
}

/// The mechanisms grouped by where they go; BTreeMaps keep the output order fixed.
struct Placement {
    /// Per input: the barrier's keys, and whether the plan brings any of them.
    barrier_keys: BTreeMap<IfaceId, (Vec<String>, bool)>,
    /// Per component: its order, keyed (`Some`) or global (`None`).
    orders: BTreeMap<CompId, Option<Vec<String>>>,
    add_seals: BTreeMap<SourceId, Vec<String>>,
    stream_seals: BTreeMap<StreamId, Vec<String>>,
}

impl Placement {
    fn of(drawn: &[Drawn]) -> Placement {
        let mut p = Placement {
            barrier_keys: BTreeMap::new(),
            orders: BTreeMap::new(),
            add_seals: BTreeMap::new(),
            stream_seals: BTreeMap::new(),
        };
        for d in drawn {
            match d {
                Drawn::Barrier {
                    input, key, added, ..
                } => {
                    let k = if key.is_empty() {
                        "∅".to_string()
                    } else {
                        key.join(", ")
                    };
                    let (v, any_added) = p.barrier_keys.entry(*input).or_default();
                    if !v.contains(&k) {
                        v.push(k);
                    }
                    *any_added |= added;
                }
                Drawn::Order { component, keys } => {
                    // A global order subsumes any keyed one on the same component.
                    let e = p.orders.entry(*component).or_insert_with(|| keys.clone());
                    if keys.is_none() {
                        *e = None;
                    }
                }
                Drawn::AddSeal { source, key } => {
                    p.add_seals.insert(*source, key.clone());
                }
                Drawn::SealStream { stream, key } => {
                    p.stream_seals.insert(*stream, key.clone());
                }
            }
        }
        p
    }
}

/// The graph being drawn: the analysed dataflow and the statements so far.
struct Drawing<'a> {
    df: &'a Dataflow,
    an: &'a Analysis,
    stmts: Vec<Stmt>,
    /// Per instance path, the lines of its summary, written on its frame.
    frames: &'a BTreeMap<String, Vec<String>>,
    /// `--collapse`: per component, the box of its top-level instance (`x<n>`), and the
    /// instances' names by box.
    collapsed: Vec<Option<String>>,
    boxes: Vec<String>,
}

impl Drawing<'_> {
    /// A node per component, with its points of order; in a plan's picture an ordered
    /// component is marked as such.
    fn components(&mut self, orders: &BTreeMap<CompId, Option<Vec<String>>>, planned: bool) {
        let (df, an) = (self.df, self.an);
        let mut nodes = Vec::with_capacity(df.components.len());
        for (n, name) in self.boxes.iter().enumerate() {
            nodes.push((Vec::new(), self.instance_box(n, name)));
        }
        for ci in 0..df.components.len() {
            if self.collapsed[ci].is_some() {
                continue;
            }
            let cid = CompId(ci as u32);
            let pts: Vec<&PointOfOrder> = an.points.iter().filter(|p| p.component == cid).collect();
            let node = component_node(df, an, cid, &pts, planned && orders.contains_key(&cid));
            // An expanded composite's components are named by their instance path
            // (`Eu.Billing.Join`, docs/compose.md); a flat spec's names have no dot.
            let path: Vec<&str> = df.components[ci].name.split('.').collect();
            nodes.push((path[..path.len() - 1].to_vec(), node));
        }
        self.stmts.extend(clusters(nodes, 0, self.frames));
    }

    /// The box of a collapsed instance: its name, its summary and the points of order inside.
    fn instance_box(&self, n: usize, name: &str) -> Stmt {
        let inside = |c: usize| self.collapsed[c].as_deref() == Some(&format!("x{n}"));
        let points = self
            .an
            .points
            .iter()
            .filter(|p| inside(p.component.index()))
            .count();
        let mut rows = vec![(format!("<B>{}</B>", html(name)), None)];
        match self.frames.get(name) {
            Some(lines) => rows.extend(lines.iter().map(|l| (small(&html(l), None), None))),
            None => rows.push((small("an inline dataflow", None), None)),
        }
        if points > 0 {
            rows.push((
                small(
                    &format!(
                        "⚠ {points} point{} of order inside",
                        if points == 1 { "" } else { "s" }
                    ),
                    Some(ALARM),
                ),
                Some("#ffebee"),
            ));
        }
        let mut a = vec![
            attr("shape", "box"),
            attr("style", "rounded,dashed"),
            html_attr("label", &table(&rows)),
            attr("tooltip", &format!("instance {name} (collapsed)")),
        ];
        if points > 0 {
            a.push(attr("color", ALARM));
        }
        node(&format!("x{n}"), a)
    }

    /// The node a component is drawn as: its own, or its collapsed instance's box.
    fn node_of(&self, c: CompId) -> String {
        self.collapsed[c.index()]
            .clone()
            .unwrap_or_else(|| comp_id(c))
    }

    /// Mechanisms in front of components, and where each input's streams enter the drawing
    /// (indexed by input).
    fn inputs(&mut self, placed: &Placement) -> Vec<Option<Entry>> {
        let df = self.df;
        let mut entry: Vec<Option<Entry>> = (0..df.ifaces.len()).map(|_| None).collect();
        for (ci, c) in df.components.iter().enumerate() {
            let cid = CompId(ci as u32);
            let order = placed.orders.get(&cid);
            if let Some(keys) = order {
                self.ordering_node(ci, &c.name, keys.as_deref());
            }
            for &i in &c.inputs {
                let after_order = if order.is_some() {
                    self.ordered_input(ci, cid, i)
                } else if self.collapsed[ci].is_some() {
                    Entry {
                        node: self.node_of(cid),
                        headlabel: None,
                    }
                } else {
                    Entry {
                        node: comp_id(cid),
                        headlabel: Some(df.iface(i).name.clone()),
                    }
                };
                let e = match placed.barrier_keys.get(&i) {
                    Some((keys, added)) => self.barrier(i, keys, *added, &after_order),
                    None => after_order,
                };
                if df.iface(i).streams.is_empty() {
                    self.implicit_source(i, &e);
                }
                entry[i.index()] = Some(e);
            }
        }
        entry
    }

    /// The ordering node the plan adds in front of component `ci` (orders in the spec are a
    /// row of the component; a drawn one is added).
    fn ordering_node(&mut self, ci: usize, name: &str, keys: Option<&[String]>) {
        let text = match keys {
            Some(k) => format!(
                r#"<FONT COLOR="{PLAN}"><B>+</B> keyed order</FONT><BR/>{}"#,
                small(&html(&k.join(", ")), None)
            ),
            None => format!(
                r#"<FONT COLOR="{PLAN}"><B>+</B> global order</FONT><BR/>{}"#,
                small("sequencer", None)
            ),
        };
        self.stmts.push(node(
            &format!("o{ci}"),
            vec![
                attr("shape", "invtrapezium"),
                attr("style", "filled,dashed,bold"),
                attr("fillcolor", PLAN_BG),
                attr("color", PLAN),
                html_attr("label", &text),
                attr(
                    "tooltip",
                    &format!("ordering in front of {name}, added by the plan"),
                ),
            ],
        ));
    }

    /// The edge from the ordering node of component `ci` into its input `i`; streams into the
    /// input enter at the ordering node.
    fn ordered_input(&mut self, ci: usize, cid: CompId, i: IfaceId) -> Entry {
        let df = self.df;
        // One edge per input from the ordering node, so the input stays named.
        let (color, _) = style_of(self.an.labels.iface[i.index()]);
        self.stmts.push(edge(
            &format!("o{ci}"),
            &comp_id(cid),
            vec![
                attr("headlabel", &df.iface(i).name),
                attr("color", color),
                attr("tooltip", &format!("ordered into {}", df.iface_name(i))),
            ],
        ));
        Entry {
            node: format!("o{ci}"),
            headlabel: None,
        }
    }

    /// The seal barrier on input `i`, a bar with the edge from it to where the input's streams
    /// would otherwise enter (`after`); streams into the input enter at the bar.
    fn barrier(&mut self, i: IfaceId, keys: &[String], added: bool, after: &Entry) -> Entry {
        let df = self.df;
        let b = format!("b{}", i.0);
        let (fill, tag, by) = if added {
            (PLAN, "<B>+</B> ", ", added by the plan")
        } else {
            ("#212121", "", "")
        };
        let mut bar = vec![
            attr("shape", "box"),
            attr("style", "filled"),
            attr("fillcolor", fill),
            attr("color", fill),
            attr("width", "0.08"),
            attr("height", "0.45"),
            attr("fixedsize", "true"),
            attr("label", ""),
            html_attr(
                "xlabel",
                &small(
                    &format!("{tag}seal barrier: {}", html(&keys.join("; "))),
                    added.then_some(PLAN),
                ),
            ),
            attr(
                "tooltip",
                &format!(
                    "seal barrier on {}: buffer each partition of {} until sealed{by}",
                    df.iface_name(i),
                    keys.join("; ")
                ),
            ),
        ];
        if added {
            bar[1] = attr("style", "filled,dashed");
        }
        self.stmts.push(node(&b, bar));
        let (color, width) = style_of(self.an.labels.iface[i.index()]);
        let mut a = vec![
            attr("color", color),
            attr("penwidth", width),
            attr(
                "tooltip",
                &format!("through the barrier into {}", df.iface_name(i)),
            ),
        ];
        if let Some(h) = &after.headlabel {
            a.push(attr("headlabel", h));
        }
        self.stmts.push(edge(&b, &after.node, a));
        Entry {
            node: b,
            headlabel: None,
        }
    }

    /// An input no stream feeds is an external Async source (C005): draw it so the label has
    /// somewhere to come from.
    fn implicit_source(&mut self, i: IfaceId, e: &Entry) {
        let df = self.df;
        let x = format!("x{}", i.0);
        self.stmts.push(node(
            &x,
            vec![
                attr("shape", "cds"),
                attr("style", "dashed"),
                html_attr(
                    "label",
                    &table(&[
                        (html(&df.iface_name(i)), None),
                        (small("implicit source", None), None),
                    ]),
                ),
            ],
        ));
        let label = self.an.labels.iface[i.index()];
        let mut a = stream_attrs(label, df, &format!("external → {}", df.iface_name(i)));
        if let Some(h) = &e.headlabel {
            a.push(attr("headlabel", h));
        }
        self.stmts.push(edge(&x, &e.node, a));
    }

    /// An edge per stream, into the entry of its input (`entries`, from [`Drawing::inputs`]).
    fn streams(&mut self, entries: &[Option<Entry>], sealed: &BTreeMap<StreamId, Vec<String>>) {
        let df = self.df;
        for (si, s) in df.streams.iter().enumerate() {
            let from = match s.from {
                Producer::Source(src) => format!("s{}", src.0),
                Producer::Output(o) => self.node_of(df.iface(o).component),
            };
            let (to, head) = match s.to {
                Consumer::Sink(k) => (format!("k{}", k.0), None),
                Consumer::Input(i) => match &entries[i.index()] {
                    Some(e) => (e.node.clone(), e.headlabel.clone()),
                    None => (
                        comp_id(df.iface(i).component),
                        Some(df.iface(i).name.clone()),
                    ),
                },
            };
            let added = sealed.get(&StreamId(si as u32)).map(Vec::as_slice);
            let tooltip = match added {
                Some(k) => format!(
                    "{} → {}, punctuated by its producer: seal on {} added by the plan",
                    s.from_text,
                    s.to_text,
                    k.join(", ")
                ),
                None => format!("{} → {}", s.from_text, s.to_text),
            };
            // Inside a collapsed box, a stream is not drawn.
            if from == to && from.starts_with('x') {
                continue;
            }
            let mut a = stream_attrs_with(self.an.labels.stream[si], df, &tooltip, added);
            if let Producer::Output(o) = s.from
                && self.collapsed[df.iface(o).component.index()].is_none()
            {
                a.push(attr("taillabel", &df.iface(o).name));
            }
            if let Some(h) = head {
                a.push(attr("headlabel", &h));
            }
            self.stmts.push(edge(&from, &to, a));
        }
    }

    /// An edge from each output no stream consumes to its implicit sink.
    fn implicit_sinks(&mut self) {
        let df = self.df;
        for (i, f) in df.ifaces.iter().enumerate() {
            if let Some(k) = f.implicit_sink {
                let l = self.an.labels.iface[i];
                let name = df.iface_name(IfaceId(i as u32));
                let mut a = stream_attrs(l, df, &format!("{name} (not consumed)"));
                if self.collapsed[f.component.index()].is_none() {
                    a.push(attr("taillabel", &f.name));
                }
                self.stmts
                    .push(edge(&self.node_of(f.component), &format!("k{}", k.0), a));
            }
        }
    }
}

/// A component's node with the instance path it is drawn in.
type Placed<'a> = (Vec<&'a str>, Stmt);

/// Component nodes, each with its instance path, drawn inside one `cluster_` subgraph per
/// instance (nested as the instances are), in the order each instance first appears: a flat
/// spec's nodes (no instance) come out as they are.
fn clusters(nodes: Vec<Placed>, depth: usize, frames: &BTreeMap<String, Vec<String>>) -> Vec<Stmt> {
    let mut out = Vec::new();
    let mut groups: Vec<(Vec<&str>, Vec<Placed>)> = Vec::new();
    for (path, node) in nodes {
        if path.len() == depth {
            out.push(node);
            continue;
        }
        let key = path[..=depth].to_vec();
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, g)) => g.push((path, node)),
            None => groups.push((key, vec![(path, node)])),
        }
    }
    for (key, members) in groups {
        let name = key.join(".");
        let label = match frames.get(&name) {
            Some(lines) => {
                let shown: Vec<String> = lines.iter().map(|l| small(&html(l), None)).collect();
                html_attr(
                    "label",
                    &format!("<B>{}</B><BR/>{}", html(&name), shown.join("<BR/>")),
                )
            }
            None => attr("label", &name),
        };
        let mut stmts = vec![Stmt::GAttribute(GraphAttributes::Graph(vec![
            label,
            attr("fontsize", "10"),
            attr("color", GREY),
            attr("style", "rounded,dashed"),
        ]))];
        stmts.extend(clusters(members, depth + 1, frames));
        out.push(Stmt::Subgraph(Subgraph {
            id: quoted(&format!("cluster_{name}")),
            stmts,
        }));
    }
    out
}

/// The statements as DOT text, ending with a newline.
fn print(df: &Dataflow, stmts: Vec<Stmt>) -> String {
    let g = Graph::DiGraph {
        id: quoted(&df.name),
        strict: false,
        stmts,
    };
    let mut s = g.print(&mut PrinterContext::default());
    s.push('\n');
    s
}
