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
all the keys (never `gate: \"*\"`). With several inputs, the order is one sequence of the \
records of all of them together, interleaving included (a sequencer in front of the \
component, or one log it reads every input from), not an order per input: that is what \
protects a read against the writes of another input, and what `blazes plan` deploys. \
`order: [keys]` is one such sequence per partition of the keys, over every input. On a covered path an OW write adds no Taint and an OR read \
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
partitions by (traced through views, subqueries, aliases and join equalities, of ON or of \
WHERE; a key computed by an expression, such as a day of `dateTime`, or taken from another \
input is left out, and `*` when no key is left):\n\
\n\
\x20 projection, WHERE, UNION ALL, scalar functions        CR\n\
\x20 inner join, EXISTS/IN over insert-only inputs        CW\n\
\x20 GROUP BY, DISTINCT, UNION, outer join, NOT EXISTS,   OW(keys)\n\
\x20   NOT IN, EXCEPT, ROW_NUMBER/Top-N, dedup, OVER,\n\
\x20   MATCH_RECOGNIZE, ORDER BY ... LIMIT\n\
\x20 window aggregation on t (TUMBLE/HOP/CUMULATE/SESSION OW(keys, window-t): sealed by a\n\
\x20   tables, or GROUP BY k, TUMBLE(t, ...))               source's `watermark: t`\n\
\x20 the same with WATERMARK FOR t in the DDL              the same; the DDL's watermark seals\n\
\x20                                                         the stream if a source feeds it\n\
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

/// The page `blazes explain spec`.
pub static SPEC: Topic = Topic {
    name: "spec",
    summary: "the spec format: every field, with an example",
    text: "A spec is one YAML file (UTF-8, YAML 1.2, spaces not tabs). Every field, with what it \
says:\n\
\n\
\x20 version: 1                 optional; the only version there is\n\
\x20 name: wordcount            optional; default: the file name without `.yaml`\n\
\x20 sources:                   the dataflow's inputs, by name\n\
\x20   tweets:\n\
\x20     seal: [batch]          optional: the source punctuates every partition of batch;\n\
\x20                            `seal: []` is a bounded input\n\
\x20     sealable: [[batch]]    optional: keys it could seal if asked (`blazes plan` may)\n\
\x20     watermark: ts          optional: event time ts, which seals the windows over ts\n\
\x20 components:                required, at least one\n\
\x20   Count:\n\
\x20     paths:                 (alias `annotation`) one per input -> output pair\n\
\x20       - { from: words, to: counts, label: OW, gate: [word, batch] }\n\
\x20                            label: CR, CW, OR or OW (`blazes explain CR` ...);\n\
\x20                            gate (alias `subscript`): on OR/OW only, attributes or \"*\";\n\
\x20                            state: static on an OR path: nothing writes what it reads\n\
\x20     order: [word]          optional: coordination in place, `global` or [keys]\n\
\x20     replicas: 3            optional: 3 instances that each get every record (or\n\
\x20                            `replicated: true`, alias `Rep`; the two must agree)\n\
\x20     partitions: 4          optional: 4 instances that each get a share of the records,\n\
\x20     partition_by: [word]     routed by these attributes (`blazes explain replicas`)\n\
\x20     task: sub-topology-1   optional: the engine task that runs it with others (a\n\
\x20                            Kafka Streams sub-topology): `plan` orders a task as one\n\
\x20     sql: |                 instead of paths: the logic as Flink SQL (`blazes explain sql`)\n\
\x20     bloom: |               or as a Bloom module (`blazes explain bloom`)\n\
\x20 streams:                   required: the edges, each from a source or Component.output\n\
\x20   - { from: tweets, to: Count.words }       to Component.input or a sink\n\
\x20   - { from: Count.counts, to: db, seal: [batch] }\n\
\x20                            seal: optional, the producer punctuates this stream on batch\n\
\x20 sinks:                     optional: the dataflow's outputs, by name\n\
\x20   db: { tolerate: Run }    optional: the worst label accepted (default Async)\n\
\x20 engine: kafka-streams      optional: the engine the spec was imported from (`blazes\n\
\x20                            import` writes it): `plan` also speaks its terms\n\
\x20 lint:                      optional: which warnings fail or are not reported\n\
\x20   deny: [warnings]         codes (C005 or implicit-source) or `warnings`\n\
\x20   allow: [C007]            also `warn: [...]`; --deny/--allow override these\n\
\n\
A component's interfaces are the names its paths use (`from`: inputs, `to`: outputs). An \
input no stream feeds is an external Async source (C005); an output no stream leaves is a \
sink named `Component.output`. A spec with no component or no stream is S009. Merge keys \
(`<<: *anchor`) are accepted. The modelling questions have their own pages: \
`blazes explain last-writer-wins`, `external-state`, `write-only`, `same-name`, `order`, \
`producers`, `replicas`.",
};

/// The page `blazes explain replicas`.
pub static REPLICAS: Topic = Topic {
    name: "replicas",
    summary: "replicas (every instance gets every record) vs partitions (each gets a share); tasks",
    text: "`replicas: N` (or `replicated: true`) is N instances of a component that each receive \
every record, each in its own order, and must agree: the analysis labels their \
disagreement (Inst, Diverge). `replicas: 1` with `replicated: true`, or `replicas: 3` with \
`replicated: false`, is an error.\n\
\n\
`partitions: N` with `partition_by: [keys]` is N instances that each receive a disjoint share \
of the records, routed by the keys: a Kafka consumer group, a Storm parallelism with fields \
grouping. No record reaches two of them, so they cannot disagree: the analysis treats the \
component as one instance. Both together replicate each partition. `blazes deploy` runs one \
instance per partition, each reading only its partition's messages.\n\
\n\
`task: NAME` groups components that an engine runs together in one task (a Kafka Streams \
sub-topology: each of its tasks passes a record through every processor before it reads the \
next). An order of the task's input partitions orders all of them, so `blazes plan` orders the \
order-sensitive members of a task as one mechanism, at one cost, and never one of them alone.",
};

/// The page `blazes explain last-writer-wins`.
pub static LAST_WRITER_WINS: Topic = Topic {
    name: "last-writer-wins",
    summary: "last-writer-wins by version (a max register, CW) vs by arrival (OW)",
    text: "Which annotation a \"last writer wins\" store gets depends on what decides the winner.\n\
\n\
- By version: each write carries a version (a timestamp set by the producer, a sequence \
number), and the store keeps the highest per key, whatever order the writes arrive in. That \
is a max register, a lattice: the result is the same in every order, so the path is `CW` \
(`{ from: updates, to: table, label: CW }`). Ties must be broken deterministically (by writer \
id), or it is not a max register.\n\
- By arrival: the store keeps whatever came last. A replay, or a replica, that sees the \
writes in another order keeps another value: the path is `OW` gated on the key \
(`{ from: updates, to: table, label: OW, gate: [key] }`), a point of order unless the input \
is sealed on the key or the component is ordered (`order: [key]`).\n\
\n\
A version assigned on arrival (the store's own clock) is arrival order: `OW`.",
};

/// The page `blazes explain external-state`.
pub static EXTERNAL_STATE: Topic = Topic {
    name: "external-state",
    summary: "a read of state no path of the spec writes (a cache, a database): `state: static`",
    text: "An `OR` path reads state. When the component has no writing path (no `CW`/`OW`), the \
spec does not say what writes that state (a cache, a database, a blocklist), and state nobody \
declared is state something else writes: the analysis treats it as written by an unsealed \
external input, Async. The read is then protected only when the component is ordered for the \
gate (`order: [key]` or `order: global`); otherwise it is a point of order (C002), and warning \
C008 says why.\n\
\n\
The ways out, by what the state really is:\n\
- Nothing writes it while the dataflow runs (a table loaded before it starts): \
`state: static` on the path, `{ from: q, to: a, label: OR, gate: [key], state: static }`.\n\
- Something writes it: model the writer as a `CW` or `OW` path of the component, fed by the \
stream of its writes (sealed if the writer punctuates, which protects the read).\n\
- Its writes and the reads are in one order: `order: [key]` on the component.",
};

/// The page `blazes explain write-only`.
pub static WRITE_ONLY: Topic = Topic {
    name: "write-only",
    summary: "state that is written and never read back inside the dataflow",
    text: "A path always has an output. For state the dataflow writes and never reads back (a \
database a job fills, a file it appends to), the output is the state itself, and its sink is \
what ends up stored: `{ from: counts, to: db, label: CW }` with a stream `{ from: \
Commit.db, to: db }` into a sink `db`. The sink's label then says whether the stored contents \
are the same in every run. Choose `CW` when the writes commute (inserts into a set, upserts by \
version: `blazes explain last-writer-wins`) and `OW` when the order decides (overwrite by \
arrival, a running total). Do not write it as `CR`: that claims there is no state, and hides \
a point of order.",
};

/// The page `blazes explain same-name`.
pub static SAME_NAME: Topic = Topic {
    name: "same-name",
    summary: "one name used as an input and as an output of a component",
    text: "A component's interfaces are the names its paths use: `from` names an input, `to` an \
output. The same name may be both, `{ from: x, to: x, label: CR }`: that is two interfaces, \
the input `A.x` and the output `A.x`. A stream `to: A.x` feeds the input; a stream `from: \
A.x` leaves the output (it is never read back into the input unless a stream says so: \
`{ from: A.x, to: A.x }` is a cycle, which is allowed). Different names read more easily in \
reports; the analysis does not mind.",
};

/// The page `blazes explain producers`.
pub static PRODUCERS: Topic = Topic {
    name: "producers",
    summary: "what a seal barrier waits for: the producers that punctuate its input",
    text: "A seal barrier buffers each partition of its input until every producer of that \
input has sealed the partition. Its producers are where the seal comes from, followed back \
through the confluent paths (CR, CW) that passed it on: a source with `seal:` (or a \
`watermark:`), or the component that produces a stream declared with `seal:` (it \
punctuates; a component that re-seals an already sealed stream is the producer too). Two \
sources sealed on batch that feed one input through confluent paths make a barrier with two \
producers: a partition is released once both sealed it.\n\
\n\
`blazes plan` names each barrier with its producers, and `blazes deploy` gives the barrier \
one producer set to wait for. The barrier does not wait for a writer of its input that the \
spec does not model: model every writer of the input.",
};

/// Every topic, in the order `blazes explain` lists them.
pub static ALL: &[&Topic] = &[
    &SPEC,
    &LABELS,
    &CR,
    &CW,
    &OR,
    &OW,
    &SEAL,
    &GATE,
    &ORDER,
    &TOLERATE,
    &REPLICAS,
    &LAST_WRITER_WINS,
    &EXTERNAL_STATE,
    &WRITE_ONLY,
    &SAME_NAME,
    &PRODUCERS,
    &PLAN,
    &SQL,
    &BLOOM,
];

/// Other names of a topic: the spec's fields and the words users ask with.
pub static ALIASES: &[(&str, &Topic)] = &[
    ("replicated", &REPLICAS),
    ("partitions", &REPLICAS),
    ("partition_by", &REPLICAS),
    ("task", &REPLICAS),
    ("lww", &LAST_WRITER_WINS),
    ("max-register", &LAST_WRITER_WINS),
    ("state", &EXTERNAL_STATE),
    ("static", &EXTERNAL_STATE),
    ("barrier", &PRODUCERS),
    ("seal-barrier", &PRODUCERS),
];

/// Looks a topic up by name or alias, case-insensitively.
pub fn find(query: &str) -> Option<&'static Topic> {
    ALL.iter()
        .copied()
        .find(|t| t.name.eq_ignore_ascii_case(query))
        .or_else(|| {
            ALIASES
                .iter()
                .find(|(a, _)| a.eq_ignore_ascii_case(query))
                .map(|&(_, t)| t)
        })
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
    let width = ALL.iter().map(|t| t.name.len()).max().unwrap_or(0);
    for t in ALL {
        s.push_str(&format!("  {:<width$}  {}\n", t.name, t.summary));
    }
    s
}
