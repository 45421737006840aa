//! The registry of diagnostic codes: the single source of every code's name, default
//! severity and explanation (`blazes explain CODE`, SARIF rules, docs).
//!
//! Codes are stable: a code is never reused for another meaning. `S` codes are problems
//! with the spec itself (exit 2); `C` codes are findings of the coordination analysis.

use crate::diagnostic::Severity;

#[derive(Debug, PartialEq, Eq)]
pub struct Code {
    pub id: &'static str,
    /// Kebab-case name, accepted by `blazes explain` like the id.
    pub name: &'static str,
    pub severity: Severity,
    /// One line: what the finding is.
    pub summary: &'static str,
    /// The long explanation: why it matters and how to fix it.
    pub explanation: &'static str,
}

macro_rules! codes {
    ($($ident:ident = $id:literal, $name:literal, $sev:ident, $summary:literal, $expl:literal;)*) => {
        $(pub static $ident: Code = Code {
            id: $id, name: $name, severity: Severity::$sev, summary: $summary, explanation: $expl,
        };)*
        /// Every code, in registration order (SARIF rule indexes follow it; S014 came after
        /// S016). `blazes explain` lists them sorted by id.
        pub static ALL: &[&Code] = &[$(&$ident),*];
    };
}

codes! {
    UNORDERED_WRITE = "C001", "unordered-write", Error,
    "an order-sensitive write (OW) receives records in a nondeterministic order",
    "An `OW(gate)` path writes state whose value depends on the order of its input records \
within each gate partition (a running count committed per batch, last-writer-wins). When the \
input is `Async`, `Run`, `Inst`, or sealed on a key that is not part of the gate, two runs (or two \
replicas) can apply the records in different orders and write different state: the path \
produces `Taint`, which becomes `Run` on an unreplicated component and `Diverge` on a replicated \
one (or the input's own label, when that is worse).\n\nFixes, cheapest first:\n- seal the input on a key K contained in the gate: a source that \
can punctuate K (`sources.<name>.seal: [K]`) lets the component buffer each partition until it \
is complete (a seal barrier);\n- order the component per key: `order: [keys]` with keys taken \
from the gate (keyed sessions);\n- order the component globally: `order: global` (a sequencer).\n\n\
`blazes plan` picks the cheapest of these for the whole dataflow.";

    UNPROTECTED_READ = "C002", "unprotected-read", Error,
    "an order-sensitive read (OR) observes state written in a nondeterministic order",
    "An `OR(gate)` path reads state that the component's writing paths (`CW`, `OW`) build. \
Unless every writing input is sealed on a key contained in the gate, a read can observe a \
partition before all its writes arrived, and different runs or replicas answer differently: \
the read's output becomes `Inst` on a replicated component and `Run` otherwise.\n\nFixes: seal the \
writing inputs on a key within the gate (the read then waits for each partition to be sealed), \
or order the component's inputs (`order: [keys]` within the gate, or `order: global`).";

    INST_WRITE = "C003", "transient-write", Error,
    "a state-writing path receives a transiently inconsistent (Inst) stream",
    "A `CW` (or ordered `OW`) path writes into state a stream whose replicas disagree for a \
while (`Inst`). On a replicated component the transient disagreement becomes permanent once \
written: its output is `Diverge`. On a single instance the written state depends on the run, \
and the `Inst` itself passes on: its output is `Inst`, never better than forwarding the stream \
would give. The cause is upstream: fix the point of order that makes the stream `Inst` \
(usually an unprotected read on a replicated component).";

    UNSAFE_SINK = "C004", "unsafe-sink", Error,
    "a sink receives a label worse than it tolerates",
    "Each sink accepts deterministic contents (`Seal`, `Async`) unless it declares \
`tolerate: Run|Inst|Diverge`. A declared tolerance decides alone; `--fail-on` sets how bad \
the label of a sink without one must be before it fails (default `run`). This is the finding that sets exit code 1; the points of order upstream of the \
sink (C001-C003) say where coordination is missing.";

    IMPLICIT_SOURCE = "C005", "implicit-source", Warning,
    "an input interface has no stream into it and is treated as an external Async source",
    "An input that no stream feeds is an external source labelled `Async`. If that is intended, \
declare the source under `sources:` and connect it with a stream, which also lets you declare \
`seal:` or `sealable:` on it; if not, a stream is missing.";

    INEFFECTIVE_SEAL = "C006", "ineffective-seal", Warning,
    "a stream declares a seal, but its contents are not deterministic, so the seal means nothing",
    "A stream's `seal: [keys]` says its producer punctuates every partition of those keys. That \
only yields `Seal(keys)` when the stream's derived label is `Async` or a seal: a producer whose \
output is already `Run` or worse cannot promise that a partition is complete and correct. Fix \
the point of order upstream first.";

    UNREACHED = "C007", "unreached", Warning,
    "no source reaches this stream, so it has no label",
    "Streams that no source reaches (for example a cycle with no way in) carry no data the \
analysis can reason about; they are reported as having no label instead of being given an \
invented one. Connect the cycle to a source, or remove it.";

    READ_WITHOUT_WRITER = "C008", "read-without-writer", Warning,
    "an OR path reads state, but its component has no path that writes state",
    "An `OR(gate)` path is order-sensitive because it reads state written by other paths of the \
same component. This component has no `CW` or `OW` path, so there is nothing to read: the read \
is treated as protected. Check the annotation (perhaps it is `CR`, or a writing path is \
missing).";

    UNUSED_DECLARATION = "C009", "unused-declaration", Warning,
    "a declared source or sink is not connected to any stream",
    "A source with no stream out of it, or a sink with no stream into it, takes no part in the \
analysis. Connect it or remove it.";

    YAML_SYNTAX = "S001", "yaml-syntax", Error,
    "the spec is not valid YAML",
    "The file could not be parsed as YAML. The message names the position where the parser \
stopped. Specs are UTF-8 YAML 1.2 (a leading BOM and CRLF line endings are accepted).";

    UNKNOWN_FIELD = "S002", "unknown-field", Error,
    "a mapping has a field the spec format does not define",
    "Each level of the spec accepts a fixed set of fields (see the README's spec format). An \
unknown field is usually a typo; the message suggests the closest known field.";

    UNKNOWN_LABEL = "S003", "unknown-label", Error,
    "a path's label is not one of CR, CW, OR, OW",
    "A path is annotated `CR` (confluent read), `CW` (confluent write), `OR` (order-sensitive \
read) or `OW` (order-sensitive write). The gate of `OR`/`OW` goes in the separate `gate:` field.";

    GATE = "S004", "gate", Error,
    "a gate is missing on an OR/OW path or present on a CR/CW path",
    "`OR` and `OW` paths are order-sensitive within the partitions of their gate: they need \
`gate: [attributes]`, or `gate: \"*\"` when the partitioning is unknown. `CR` and `CW` paths are \
confluent and take no gate.";

    DANGLING_ENDPOINT = "S005", "dangling-endpoint", Error,
    "a stream endpoint names a component, interface, source or sink that does not exist",
    "A stream's `from` is `Component.output` or a source declared under `sources:`; its `to` is \
`Component.input` or a sink declared under `sinks:`. A component's interfaces are the names its \
paths use in `from` (inputs) and `to` (outputs).";

    DUPLICATE = "S006", "duplicate", Error,
    "a key or a name is defined twice",
    "YAML mappings may not repeat a key, and a component, source or sink may be declared only \
once. The message points at the second definition and the first.";

    INVALID_NAME = "S007", "invalid-name", Error,
    "a name is empty, contains a dot, or is not a plain name",
    "Names of components, interfaces, sources, sinks and attributes must be non-empty strings \
without dots (the dot separates a component from its interface in stream endpoints) and \
without whitespace.";

    WRONG_DIRECTION = "S008", "wrong-direction", Error,
    "a stream flows into an output, out of an input, out of a sink or into a source",
    "Streams flow from outputs (or sources) to inputs (or sinks). An interface is an input of its \
component when a path uses it as `from`, an output when a path uses it as `to`.";

    EMPTY = "S009", "empty-spec", Error,
    "the spec file is empty",
    "The file contains no YAML document (or only comments). A spec needs at least `components:`.";

    NOT_UTF8 = "S010", "not-utf8", Error,
    "the spec is not valid UTF-8 text",
    "Specs are UTF-8 text. The message points at the first byte that is not valid UTF-8; a \
binary file fails on its first such byte.";

    LIMIT = "S011", "limit-exceeded", Error,
    "the spec exceeds a resource limit (size, nesting, nodes, alias expansion, components, streams, attributes)",
    "To keep `blazes` safe on untrusted input (specs from pull requests), reading a spec is \
bounded: file size (`--max-file-size`), nesting depth (`--max-depth`), YAML nodes \
(`--max-nodes`), YAML events copied by aliases and merge keys (`--max-aliases`, which is what a \
\"billion laughs\" spec inflates), components (`--max-components`), streams (`--max-streams`) \
and attribute names per gate, seal or order list (`--max-attributes`). The message names the \
limit that was hit, points at where it was hit, and names the flag that raises it; raise it \
only for specs you trust.";

    WRONG_TYPE = "S012", "wrong-type", Error,
    "a field has the wrong kind of value (a list where a mapping is expected, a number where a name is expected, ...)",
    "Every field has one expected shape; the message says which was expected and what was found. \
Names must be strings: quote values such as `yes`, `no`, `1` that YAML reads as booleans or \
numbers.";

    MISSING_FIELD = "S013", "missing-field", Error,
    "a required field is missing",
    "A path needs `from`, `to` and `label`; a stream needs `from` and `to`; a spec needs \
`components`.";

    UNREADABLE = "S015", "unreadable-file", Error,
    "the spec file could not be read",
    "The file does not exist, is a directory, or cannot be read with the current permissions. \
The message carries the operating system's reason.";

    NAME_COLLISION = "S016", "name-collision", Warning,
    "two names differ only in case",
    "Names are case-sensitive: `Count` and `count` are two components, and a seal on `Word` does \
not close a gate on `word`. That is legal but almost always a typo, so `blazes` warns with both \
locations. Names are compared after Unicode lowercasing; they are not otherwise normalised (a \
composed and a decomposed `é` are different names and are not reported).";

    INVALID_VALUE = "S014", "invalid-value", Error,
    "a field has a value outside its allowed set",
    "For example `tolerate:` accepts `Run`, `Inst` or `Diverge`; `order:` accepts `global` or a list \
of attributes; `replicas:` is a positive integer; `version:` is 1.";
}

/// Looks a code up by id (`C001`, case-insensitive) or name (`unordered-write`).
pub fn find(query: &str) -> Option<&'static Code> {
    ALL.iter()
        .copied()
        .find(|c| c.id.eq_ignore_ascii_case(query) || c.name.eq_ignore_ascii_case(query))
}
