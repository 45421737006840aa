//! The plan in sentences, written once for every plan format (human, JSON and YAML): what the
//! runtime must provide for each mechanism, one function per mechanism kind
//! ([`seal_barrier`], [`add_seal`], [`keyed_order`], [`global_order`]; [`runtime`] picks one),
//! what a seal barrier buffers, and why a sink cannot be repaired ([`reason`]). The plan
//! holds the facts (kinds, ids, keys, counts); the words are here. A plan on an imported
//! topology (its dataflow's `engine`) says each mechanism in the engine's terms as well
//! ([`engine_terms`]).

use crate::graph::{CompId, Order, SourceId, StreamId};
use crate::import::Engine;
use crate::plan::{Barrier, Choice, Mechanism, Named, Obstacle, Reason};

/// The one wording of a barrier: buffer each partition of its key until every producer
/// sealed it, or with the empty key (`seal: []`, a bounded stream) the whole stream until
/// every producer finished it. `located` names the component and its input.
fn barrier(plan: &Named, b: &Barrier, located: bool) -> String {
    let producers = plan.producer_names(&b.producers);
    let producers = if producers.is_empty() {
        "its producer".to_string()
    } else {
        producers.join(" and ")
    };
    let (what, done) = match (b.key.is_empty(), located) {
        (true, _) => ("the whole stream".to_string(), "finished"),
        (false, false) => (format!("each [{}] partition", b.key.join(", ")), "sealed"),
        (false, true) => (
            format!("each partition of `{}`", b.key.join(", ")),
            "sealed",
        ),
    };
    if located {
        format!(
            "{} buffers {what} on input `{}` until {producers} {done} it",
            plan.component(b.component),
            plan.iface(b.input)
        )
    } else {
        format!("buffers {what} until {producers} {done} it")
    }
}

/// What a seal barrier does, as the human report says it after `component.input`.
pub fn barrier_buffers(plan: &Named, b: &Barrier) -> String {
    barrier(plan, b, false)
}

/// What the runtime must provide for a seal barrier, in a sentence naming the component and
/// its input.
pub fn seal_barrier(plan: &Named, b: &Barrier) -> String {
    let spec = barrier(plan, b, true);
    let Some(engine) = plan.dataflow.engine else {
        return spec;
    };
    let c = plan.component(b.component);
    let terms = match (engine, closes_windows(&b.key)) {
        (Engine::KafkaStreams, true) => format!(
            "{c} is a windowed aggregation followed by `suppress(Suppressed.untilWindowCloses(...))`"
        ),
        (Engine::KafkaStreams, false) => {
            format!(
                "{c} keeps each key's state in its store until the producers' end markers arrive"
            )
        }
        (Engine::Flink, true) => {
            format!(
                "{c} is an event-time window: it fires once the watermark passes the window's end"
            )
        }
        (Engine::Flink, false) => format!(
            "{c} keeps each key's state (a `KeyedProcessFunction`) until the end record arrives"
        ),
        (Engine::StormFlux, true) => {
            format!("{c} is a windowed bolt over event time, with watermarks")
        }
        (Engine::StormFlux, false) => {
            format!("{c} commits each batch once it is complete (Trident, or a batch bolt)")
        }
    };
    format!("{spec}; in {}: {terms}", engine.display())
}

/// What the runtime must provide for an added mechanism, in a sentence: the function of its
/// kind.
///
/// ```
/// use blazes::check::{self, Outcome};
/// use blazes::{plan, report::plan_prose};
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
/// let p = plan::plan(&a.dataflow, &plan::Options::default());
/// let named = p.named(&a.dataflow);
/// assert_eq!(
///     plan_prose::runtime(&named, &named.mechanisms[0]),
///     "one durable order per (word) partition of Count's inputs \
///      (keyed sessions with leases, or a partitioned log)"
/// );
/// ```
pub fn runtime(plan: &Named, m: &Mechanism) -> String {
    let spec = spec_terms(plan, m);
    match plan.dataflow.engine {
        Some(engine) => format!(
            "{spec}; in {}: {}",
            engine.display(),
            engine_terms(plan, m, engine)
        ),
        None => spec,
    }
}

/// What the runtime must provide, in the spec's terms.
fn spec_terms(plan: &Named, m: &Mechanism) -> String {
    match m.choice {
        Choice::AddSeal { source, .. } => add_seal(plan, source, &m.key, &m.components),
        Choice::SealStream { stream, .. } => seal_stream(plan, stream, &m.key, &m.components),
        Choice::Order {
            order: Order::Keys(_),
            ..
        } => keyed_order(plan, m),
        Choice::Order {
            order: Order::Global,
            ..
        } => global_order(plan, m),
    }
}

/// Whose inputs an order of `component` orders: its own, or its task's (the task runs
/// `components`, the members the order takes effect at).
fn whose_inputs(plan: &Named, m: &Mechanism) -> String {
    match plan.task(m) {
        Some(task) => format!(
            "task `{task}`'s inputs (one order for {}, which the task runs together)",
            plan.component_names(&m.components).join(", ")
        ),
        None => format!(
            "{}'s inputs",
            plan.component_names(&m.components).join(", ")
        ),
    }
}

/// An added seal: `source` punctuates every partition of `key` (or, with the empty key, marks
/// the end of its stream) and `consumers` buffer until it does.
pub fn add_seal(plan: &Named, source: SourceId, key: &[String], consumers: &[CompId]) -> String {
    let consumers_buffer = buffer(plan, consumers);
    if key.is_empty() {
        format!(
            "source `{}` marks the end of its stream; {consumers_buffer} the whole stream until it has ended (a seal barrier)",
            plan.source(source)
        )
    } else {
        format!(
            "source `{}` punctuates every `{}` partition; {consumers_buffer} each partition until it is sealed (a seal barrier)",
            plan.source(source),
            key.join(", ")
        )
    }
}

/// "C buffers" / "C, D buffer".
fn buffer(plan: &Named, consumers: &[CompId]) -> String {
    format!(
        "{} buffer{}",
        plan.component_names(consumers).join(", "),
        if consumers.len() == 1 { "s" } else { "" }
    )
}

/// A seal the plan adds to an internal stream: its producer punctuates it, which it can
/// because its own inputs are sealed within the key (the plan checked that).
pub fn seal_stream(plan: &Named, stream: StreamId, key: &[String], consumers: &[CompId]) -> String {
    let producer = plan.stream_producer(stream).unwrap_or("its producer");
    let consumers_buffer = buffer(plan, consumers);
    let stream = plan.stream(stream);
    if key.is_empty() {
        format!(
            "{producer} marks the end of its stream {stream} once its inputs have ended; {consumers_buffer} the whole stream until it has ended (a seal barrier)"
        )
    } else {
        format!(
            "{producer} punctuates every `{k}` partition of its stream {stream} once its inputs have sealed it (they are sealed on `{k}`, so it knows when each is complete); {consumers_buffer} each partition until it is sealed (a seal barrier)",
            k = key.join(", ")
        )
    }
}

/// A keyed order: one durable order per partition of the mechanism's key of its component's
/// inputs (of its task's, when it covers a task).
pub fn keyed_order(plan: &Named, m: &Mechanism) -> String {
    format!(
        "one durable order per ({}) partition of {} (keyed sessions with leases, or a partitioned log)",
        m.key.join(", "),
        whose_inputs(plan, m)
    )
}

/// A global order: one durable total order of every stream into its component (into its
/// task, when it covers a task).
pub fn global_order(plan: &Named, m: &Mechanism) -> String {
    let Choice::Order { component, .. } = m.choice else {
        return String::new();
    };
    let n = plan.producer_streams(component);
    let into = match plan.task(m) {
        Some(task) => format!(
            "task `{task}` (one order for {}, which the task runs together)",
            plan.component_names(&m.components).join(", ")
        ),
        None => plan.component(component).to_string(),
    };
    format!(
        "one durable total order of the {} into {into} (a sequencer or replicated log)",
        if n == 1 {
            "producer stream".to_string()
        } else {
            format!("{n} producer streams")
        },
    )
}

/// The component an order is on, or its task, as the engine's terms name it.
fn ordered_unit(plan: &Named, m: &Mechanism, component: CompId) -> String {
    match plan.task(m) {
        Some(task) => format!("task `{task}`"),
        None => plan.component(component).to_string(),
    }
}

/// Whether a seal key closes windows (the importers name a window attribute `window`, or
/// `window-ATTR` for an event-time one): then the engine's windows are what closes them.
fn closes_windows(key: &[String]) -> bool {
    !key.is_empty()
        && key
            .iter()
            .all(|k| k == "window" || k.starts_with("window-"))
}

/// A mechanism of a plan on an imported topology, in the engine's terms: what to configure in
/// the topology's code (Kafka Streams: repartition by key, co-partition, suppress until the
/// window closes; Flink: `keyBy`, event-time windows with watermarks; Storm: fields grouping).
pub fn engine_terms(plan: &Named, m: &Mechanism, engine: Engine) -> String {
    match m.choice {
        Choice::AddSeal { source, .. } => {
            let src = plan.source(source);
            let at = plan.component_names(&m.components).join(", ");
            let windows = closes_windows(&m.key);
            match (engine, windows) {
                (Engine::KafkaStreams, true) => format!(
                    "give `{src}`'s records event-time timestamps and window {at} with a grace period, then `suppress(Suppressed.untilWindowCloses(...))` so that each window is emitted once, closed"
                ),
                (Engine::KafkaStreams, false) => format!(
                    "the producer of `{src}` writes an end marker per `{}` to the topic (in every partition), and {at} emits a key's result only after its marker",
                    m.key.join(", ")
                ),
                (Engine::Flink, true) => format!(
                    "assign event-time timestamps and watermarks to `{src}` (`assignTimestampsAndWatermarks`) and use event-time windows at {at}: a window fires once the watermark passes its end"
                ),
                (Engine::Flink, false) => format!(
                    "`{src}` emits a watermark, or an end record per `{}`, that {at} waits for before it emits (a `KeyedProcessFunction` with state until the end)",
                    m.key.join(", ")
                ),
                (Engine::StormFlux, true) => format!(
                    "`{src}` emits tuples in time windows with a watermark (`withTimestampField`, `withWatermarkInterval`) and {at} is a windowed bolt over event time"
                ),
                (Engine::StormFlux, false) => format!(
                    "`{src}` emits its tuples in batches per `{}` (Trident, or a batch-end tuple the spout emits), and {at} commits a batch only once it is complete",
                    m.key.join(", ")
                ),
            }
        }
        Choice::SealStream { stream, .. } => {
            let producer = plan.stream_producer(stream).unwrap_or("the producer");
            let at = plan.component_names(&m.components).join(", ");
            let k = m.key.join(", ");
            match (engine, closes_windows(&m.key)) {
                (Engine::KafkaStreams, true) => format!(
                    "{producer} emits each window once, closed (`suppress(Suppressed.untilWindowCloses(...))` after its windowed aggregation), so {at} receives final results only"
                ),
                (Engine::KafkaStreams, false) => format!(
                    "{producer} forwards an end marker per `{k}` to its output topic (in every partition) once its input's marker for that key has arrived, and {at} emits a key's result only after its marker"
                ),
                (Engine::Flink, true) => format!(
                    "{producer} uses event-time windows that fire once the watermark passes their end, and forwards the watermark, so {at}'s event-time windows close after it"
                ),
                (Engine::Flink, false) => format!(
                    "{producer} emits an end record per `{k}` once its input's end record for that key has arrived (a `KeyedProcessFunction`), and {at} waits for it before it emits"
                ),
                (Engine::StormFlux, true) => format!(
                    "{producer} is a windowed bolt over event time that emits a window once it closes, and {at} is windowed over the same event time"
                ),
                (Engine::StormFlux, false) => format!(
                    "{producer} emits a batch-end tuple per `{k}` once its input batch is complete, and {at} commits a batch only once it is complete"
                ),
            }
        }
        Choice::Order {
            component,
            order: Order::Keys(_),
        } => {
            let c = ordered_unit(plan, m, component);
            let k = m.key.join(", ");
            match engine {
                Engine::KafkaStreams => {
                    let copartition = if plan.producer_streams(component) > 1 {
                        ", and co-partition its inputs (the same number of partitions and the same partitioner for every input topic)"
                    } else {
                        ""
                    };
                    format!(
                        "repartition {c}'s input by ({k}) (`selectKey`, then `repartition()` or `groupByKey()`), so that each key's records reach one task through one partition, in the partition's order{copartition}"
                    )
                }
                Engine::Flink => format!(
                    "`keyBy({k})` in front of {c}, fed from sources that keep each key in one partition (Flink keeps the order of one input channel only)"
                ),
                Engine::StormFlux => format!(
                    "fields grouping on ({k}) into {c} (`fieldsGrouping(..., new Fields({}))`), from spouts that emit each key's tuples in order",
                    m.key
                        .iter()
                        .map(|k| format!("\"{k}\""))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            }
        }
        Choice::Order {
            component,
            order: Order::Global,
        } => {
            let c = ordered_unit(plan, m, component);
            match engine {
                Engine::KafkaStreams => format!(
                    "route every input of {c} through one single-partition topic (one task then processes them in one order)"
                ),
                Engine::Flink => format!(
                    "run {c} with parallelism 1 (`setParallelism(1)`) behind a single ordered input"
                ),
                Engine::StormFlux => format!(
                    "global grouping into {c} (`globalGrouping`: one task receives every tuple), from one ordered spout"
                ),
            }
        }
    }
}

/// Why a sink cannot be repaired, in a sentence (with what `--allow` left out, and the gate
/// `*` that only a global order fixes when global orders are left out).
pub fn reason(plan: &Named, r: &Reason) -> String {
    let sink = plan.sink(r.sink);
    let mut message = match r.obstacle {
        Obstacle::NoCandidate => {
            format!("no allowed mechanism applies to the points of order behind `{sink}`")
        }
        Obstacle::Conflicts => format!(
            "no combination of candidates repairs `{sink}`: it would need two seals of one source or two keyed orders of one component at once, and a keyed order by the keys they share would be no keyed order at all"
        ),
        Obstacle::Bound => format!(
            "with every candidate mechanism applied, `{sink}` still receives {}, worse than it tolerates ({})",
            r.label,
            r.tolerate.as_str()
        ),
        Obstacle::Punctuation => format!(
            "only seals of internal streams would repair `{sink}`, and their producers cannot punctuate them: a producer knows a partition of its output is complete only when its own inputs are sealed within that key, and no allowed seal upstream makes them so"
        ),
    };
    if !r.disallowed.is_empty() {
        let kinds: Vec<&str> = r.disallowed.iter().map(|k| k.as_str()).collect();
        message.push_str(&format!("; not allowed by --allow: {}", kinds.join(", ")));
    }
    if r.star_needs_global {
        message.push_str("; a gate `*` can only be fixed by a global order");
    }
    message
}
