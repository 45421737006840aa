//! The vocabulary `blazes explain` teaches besides diagnostic codes: the labels, the four path
//! annotations, seals, gates, orders, sink tolerances, and the planner.
//!
//! A topic's name is matched case-insensitively (`blazes explain ow`). Topics are looked up
//! before code names, so `gate` is this page, not the S004 code named `gate` (which its id
//! still reaches, and which the page points to).

/// One page of `blazes explain TOPIC`.
#[derive(Debug, PartialEq, Eq)]
pub struct Topic {
    pub name: &'static str,
    /// One line: what the page is about.
    pub summary: &'static str,
    pub text: &'static str,
}

/// The page `blazes explain labels`.
pub static LABELS: Topic = Topic {
    name: "labels",
    summary: "the stream labels, best to worst: Seal(K), Async, Run, Inst, Diverge",
    text: "Every stream gets a label that says how far its contents can be trusted:\n\
\n\
  Seal(K)   deterministic contents, and every partition of key K is eventually closed\n\
            (\"no more records with K = k\"); Seal() is a bounded input\n\
  Async     deterministic contents in a nondeterministic order (an unsealed source)\n\
  Run       contents can differ from one run to the next (a replay gives other output)\n\
  Inst      replicas disagree for a while\n\
  Diverge   replicas disagree for good\n\
\n\
Where several streams meet (an input fed by two streams, an output fed by two paths) the \
label is the worst of them, except that two seals combine into a seal on the union of their \
keys: Seal(a) with Seal(b) is Seal(a, b), and Seal with Async is Async. A stream that no \
source reaches has no label at all (warning C007, `no source reaches it`): none is invented.\n\
\n\
Two labels exist only inside a component, while its paths are combined: `Taint` (an \
order-sensitive write, or a write of an Inst stream, corrupted state) becomes Run on one \
instance and Diverge on a replicated component; `NDRead` (an order-sensitive read saw state \
that was not settled) becomes Run on one instance and Inst on a replicated component. Each \
output carries the worst of what its paths contribute, so a contribution never hides a worse \
input: an Inst stream written into state on one instance leaves as Inst (the taint's Run is \
better), on replicas as Diverge.\n\
\n\
Sinks accept Seal and Async by default; see `blazes explain tolerate`. The annotations that \
produce each label: `blazes explain CR` (and CW, OR, OW).",
};

/// The page `blazes explain CR`.
pub static CR: Topic = Topic {
    name: "CR",
    summary: "confluent read: a stateless path (map, filter, split)",
    text: "A `CR` path passes records from an input to an output without keeping state, and its \
result does not depend on the order the records arrive in: map, filter, projection, split.\n\
\n\
It contributes its input's label unchanged, seals included (Seal(K) in, Seal(K) out). It is \
never a point of order and needs no coordination. Declare it with `label: CR` and no gate.",
};

/// The page `blazes explain CW`.
pub static CW: Topic = Topic {
    name: "CW",
    summary: "confluent write: a path into order-insensitive state (set union, grow-only counter)",
    text: "A `CW` path writes into the component's state, but the state it builds does not depend \
on the order of the writes: a set union, a grow-only counter, a max.\n\
\n\
It contributes its input's label unchanged, seals included. One input is dangerous: `Inst`. \
Replicas that disagree for a while write different things into state, and the disagreement \
no longer goes away: the path adds `Taint` (a point of order, C003), which is Run on one \
instance and Diverge on a replicated component, while the Inst itself still passes through; \
the output carries the worse of the two. So an unreplicated writer of an Inst stream outputs \
Inst, a replicated one Diverge. The fix is upstream, where the Inst comes from.\n\
\n\
A CW path also makes the component's `OR` reads order-sensitive: they read what it writes \
(`blazes explain OR`).",
};

/// The page `blazes explain OR`.
pub static OR: Topic = Topic {
    name: "OR",
    summary: "order-sensitive read: a path that answers from state other paths write",
    text: "An `OR(gate)` path answers requests from the state that the component's writing paths \
(`CW`, `OW`) build, so its answer depends on which writes arrived first, within each \
partition of its gate. Declare it with `label: OR, gate: [attributes]` (or `gate: \"*\"`).\n\
\n\
It contributes its input's label, without a seal (Seal(K) in, Async out). The read is \
protected when the component is ordered for the gate (`blazes explain order`), or when every \
input that feeds a writing path carries Seal(K) with K inside the gate: the component then \
answers each partition only once it is sealed (a seal barrier on each of those inputs). An \
unprotected read adds `NDRead`, a point of order (C002): Run on one instance, Inst on a \
replicated component. State that no path of the component writes (a cache, a database the \
spec does not model) is written by something outside the spec: the read is treated as \
reading state written by an unsealed external input, so only an order protects it, and the \
spec gets warning C008. Declare `state: static` on the path when nothing writes that state \
while the dataflow runs (a table loaded before it starts): the read is then protected.\n\
\n\
Fixes: seal the writing inputs on a key within the gate, or order the component; for state \
no path writes, model its writer as a writing path, or declare it `state: static`.",
};

/// The page `blazes explain OW`.
pub static OW: Topic = Topic {
    name: "OW",
    summary: "order-sensitive write: state that depends on input order (running count, last writer wins)",
    text: "An `OW(gate)` path writes state whose value depends on the order of its input records \
within each partition of its gate: a running count committed per batch, last-writer-wins, \
anything non-monotone. Declare it with `label: OW, gate: [attributes]` (or `gate: \"*\"`).\n\
\n\
- Input Seal(K) with K inside the gate: the component buffers each partition of K until it \
is sealed and then applies it whole (a seal barrier); the output is Async.\n\
- Component ordered for the gate (`blazes explain order`): the writes are applied in one \
order everywhere; the output is the input's label without a seal. An Inst input still \
writes a transient disagreement into state and adds Taint, as on a CW path.\n\
- Anything else (Async, Run, Inst, a seal on a key outside the gate): the path adds `Taint`, \
a point of order (C001): Run on one instance, Diverge on a replicated component. The input's \
own label passes too, and the worse of the two wins.\n\
\n\
Fixes, cheapest first: seal the input on a key within the gate, order the component per key \
(`order: [keys]` within the gate), order it globally (`order: global`). `blazes plan` picks.",
};

/// The page `blazes explain seal`.
pub static SEAL: Topic = Topic {
    name: "seal",
    summary: "punctuation: the promise that a partition of a key is complete",
    text: "A seal on key K promises that for every value k, the producer eventually says \"no more \
records with K = k\". A component that is order-sensitive only within partitions of K can then \
wait for each partition to close and process it whole, deterministically: a seal barrier.\n\
\n\
Where seals come from:\n\
- `sources: { tweets: { seal: [batch] } }`: the source punctuates every batch; `seal: []` \
says the input is bounded (Seal(), compatible with every named gate).\n\
- `streams: [ { from: A.out, to: B.in, seal: [batch] } ]`: the producer punctuates that \
stream. This only holds when the stream's derived label is Async or a seal; on Run or worse \
the declaration changes nothing (warning C006).\n\
- `sealable: [[batch]]` on a source says it could seal if asked: `blazes plan` may add the \
seal.\n\
\n\
How they travel: confluent paths (CR, CW) pass a seal through; order-sensitive paths (OR, OW) \
consume it and output at best Async. Seal(a) meeting Seal(b) gives Seal(a, b); a seal meeting \
Async gives Async. A seal on K is compatible with a gate when every attribute of K is in the \
gate (`blazes explain gate`). At run time each barrier waits for the seals of every producer \
of the partition (the runtime crate's seal barrier).",
};

/// The page `blazes explain gate`.
pub static GATE: Topic = Topic {
    name: "gate",
    summary: "the partitions within which an OR/OW path is order-sensitive",
    text: "The gate of an order-sensitive path (`OR`, `OW`) names the attributes within whose \
partitions order matters: `OW` with `gate: [word, batch]` is sensitive to the order of records \
with the same (word, batch) only; records of different partitions may interleave freely. \
`gate: \"*\"` says the partitioning is unknown. A gate is required on OR and OW and forbidden \
on CR and CW (error S004, `blazes explain S004`).\n\
\n\
A seal on key K is compatible with the gate when K is a subset of it: gate (word, batch) \
and a seal on batch are compatible (each gate partition lies inside one batch), gate (id) and \
a seal on campaign are not. The empty seal (a bounded input) is compatible with every named \
gate; nothing is compatible with `*`. Likewise a keyed order `order: [keys]` covers the path \
when its keys are inside the gate; only `order: global` covers `*`.\n\
\n\
A smaller gate is a stronger claim of order-sensitivity: shrinking a gate never improves a \
label.",
};

/// The page `blazes explain order`.
pub static ORDER: Topic = Topic {
    name: "order",
    summary: "coordination already in place on a component: `order: global` or `order: [keys]`",
    text: "`order:` on a component says its inputs already arrive in one order everywhere (every \
replica and every replay): `order: global` (a sequencer or replicated log) or `order: [keys]` \
(one order per partition of the keys: keyed sessions, a partitioned log). `blazes plan` adds \
these when nothing cheaper works.\n\
\n\
A global order covers every path; `order: [keys]` covers an OR/OW path whose gate contains \
all the keys (never `gate: \"*\"`). On a covered path an OW write adds no Taint and an OR read \
is protected. An order fixes the order, not the contents: an Inst input written into state \
still adds Taint (`blazes explain CW`). A compatible seal on a covered OW input is still \
consumed by a seal barrier.\n\
\n\
A replicated component with ordered inputs is a replicated state machine: its replicas emit \
the same outputs, numbered by log position, so consumers can drop the duplicates a failover \
produces (`blazes_runtime::smr`).",
};

/// The page `blazes explain tolerate`.
pub static TOLERATE: Topic = Topic {
    name: "tolerate",
    summary: "the worst label a sink accepts, and how `--fail-on` applies",
    text: "A sink is a declared `sinks:` entry, or an output no stream leaves (an implicit sink, \
named `Component.output`). Each sink either declares the worst label it accepts, \
`tolerate: Run`, `Inst` or `Diverge`, or leaves it to the command line.\n\
\n\
- A sink with a declared `tolerate:` fails when its label is worse than that, whatever \
`--fail-on` says.\n\
- A sink without one fails according to `--fail-on`: `run` (the default) fails on Run, Inst \
and Diverge, `inst` on Inst and Diverge, `diverge` on Diverge only, `never` on nothing.\n\
- A sink that no source reaches has no label and never fails (its streams are reported as \
unreached, warning C007).\n\
\n\
A failing sink is error C004 and makes `blazes check` exit 1. Points of order upstream of a \
failing sink are errors; points of order whose effects every sink accepts are warnings and \
leave the exit status at 0. `blazes plan` looks for the cheapest coordination after which no \
sink fails.",
};

/// The page `blazes explain plan`.
pub static PLAN: Topic = Topic {
    name: "plan",
    summary: "the cost model and search of `blazes plan`",
    text: crate::plan::EXPLAIN,
};

/// The page `blazes explain sql`.
pub static SQL: Topic = Topic {
    name: "sql",
    summary: "white boxes in Flink SQL: which query constructs derive which annotation",
    text: "A component may give its logic as `sql: |` (Flink SQL: CREATE TABLE with WATERMARK \
FOR, computed columns and PRIMARY KEY NOT ENFORCED, CREATE VIEW, INSERT INTO ... SELECT, a \
bare SELECT whose output is `out`) instead of `paths:`. Its inputs are the tables it reads \
that are not views; its outputs the INSERT INTO targets. Each input->output path gets the \
most order-sensitive operator on the way, gated on the input attributes that operator \
partitions by (traced through views, subqueries and aliases; `*` when not traceable):\n\
\n\
\x20 projection, WHERE, UNION ALL, scalar functions        CR\n\
\x20 inner join, EXISTS/IN over insert-only inputs        CW\n\
\x20 GROUP BY, DISTINCT, UNION, outer join, NOT EXISTS,   OW(keys)\n\
\x20   NOT IN, EXCEPT, ROW_NUMBER/Top-N, dedup, OVER,\n\
\x20   MATCH_RECOGNIZE, ORDER BY ... LIMIT\n\
\x20 window aggregation on t (TUMBLE/HOP/CUMULATE/SESSION) OW(keys, window-t): sealed by a\n\
\x20                                                         source's `watermark: t`\n\
\x20 the same with WATERMARK FOR t in the DDL              CW\n\
\x20 temporal join FOR SYSTEM_TIME AS OF event time        probe OR(keys), table OW(keys)\n\
\x20 PROCTIME() windows, NOW(), RAND(), UUID(),            clock -> out OW(*): nondeterministic\n\
\x20   lookup joins on processing time                       whatever the order\n\
\n\
Example: `SELECT auction, COUNT(*) FROM TABLE(HOP(TABLE bid, DESCRIPTOR(dateTime), ...)) \
GROUP BY auction, window_start, window_end` is bid -> out OW(auction, window-dateTime); with \
`bid: { watermark: dateTime }` it is sealed per window (a seal barrier, no point of order). \
An unsupported construct is warning W002 and makes the paths of its statement OW(*); a \
program that does not parse is error W001. `paths:` given too are checked against the \
derivation (W003, W004). More in docs/whitebox.md.",
};

/// The page `blazes explain bloom`.
pub static BLOOM: Topic = Topic {
    name: "bloom",
    summary: "white boxes in Bloom (Bud): which rules derive which annotation",
    text: "A component may give its logic as `bloom: |`, a Bud module: `state do ... end` \
declares `interface input`/`interface output` (the component's interfaces), `table` \
(persistent state), `scratch` and `channel`; `bloom [:name] do ... end` holds rules `lhs op \
rhs` with op `<=` (now), `<+` (next tick), `<-` (delete next tick) or `<~` (asynchronous \
send). For each input->output pair the rules on the way decide:\n\
\n\
\x20 <=, <+, <~, joins (*), projections, blocks           monotone: C\n\
\x20 <- (deletion), notin, group, argagg, reduce,          order-sensitive: O, gated on the\n\
\x20   include?, reading a collection derived by one         keys of the call (:key => :key)\n\
\x20 the input kept in a `table` that a later rule reads   writes state: W\n\
\x20   as its state (not as the probe, right side, of *)\n\
\n\
Example (the Blazes talk's KVS): `log <+ put; log <- (put * log).rights(:key => :key); \
response <= (log * get).pairs(:key => :key)` gives put -> response OW(key) and get -> \
response OR(key); its pub/sub (`log <= publish; sub_log <= subscribe; response <= (log * \
sub_log).pairs(:key => :key)`) gives publish -> response CW and subscribe -> response CR. \
More in docs/whitebox.md.",
};

/// Every topic, in the order `blazes explain` lists them.
pub static ALL: &[&Topic] = &[
    &LABELS, &CR, &CW, &OR, &OW, &SEAL, &GATE, &ORDER, &TOLERATE, &PLAN, &SQL, &BLOOM,
];

/// Looks a topic up by name, case-insensitively.
pub fn find(query: &str) -> Option<&'static Topic> {
    ALL.iter()
        .copied()
        .find(|t| t.name.eq_ignore_ascii_case(query))
}

/// The whole page of `blazes explain TOPIC`.
pub fn page(t: &Topic) -> String {
    if std::ptr::eq(t, &PLAN) {
        // The planner's page has its own title line.
        return t.text.to_string();
    }
    format!("{}: {}\n\n{}\n", t.name, t.summary, t.text)
}

/// `blazes explain` without an argument: every code by id, then every topic.
pub fn index() -> String {
    let mut s = String::from("Diagnostic codes (`blazes explain CODE` for details):\n\n");
    let mut all: Vec<&crate::codes::Code> = crate::codes::ALL.to_vec();
    all.sort_by_key(|c| c.id);
    for c in all {
        s.push_str(&format!(
            "  {}  {:<22} {:<7}  {}\n",
            c.id,
            c.name,
            c.severity.as_str(),
            c.summary
        ));
    }
    s.push_str("\nTopics (`blazes explain TOPIC`):\n\n");
    for t in ALL {
        s.push_str(&format!("  {:<9} {}\n", t.name, t.summary));
    }
    s
}
