//! The registry of diagnostic codes: the single source of every code's name, default
//! severity and explanation (`blazes explain CODE`, SARIF rules, docs).
//!
//! Codes are stable: a code is never reused for another meaning. `S` codes are problems
//! with the spec itself (exit 2); `C` codes are findings of the coordination analysis.

use crate::diagnostic::Severity;

/// A diagnostic code: its stable id (`C001`), name, default severity and texts.
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

/// Defines diagnostic codes. Each is a `static` [`Code`] whose doc comment is its explanation,
/// exactly as `blazes explain` prints it: the lines of a paragraph are joined with one space,
/// paragraphs are separated by a blank line, and a line starting with `- ` starts a list item
/// on its own line. So each code's text is written once, where the code is defined, and reads
/// the same in the API docs.
macro_rules! code {
    ($(
        $(#[doc = $doc:literal])*
        pub static $ident:ident = $id:literal, $name:literal, $sev:ident, $summary:literal;
    )*) => {$(
        $(#[doc = $doc])*
        pub static $ident: $crate::codes::Code = $crate::codes::Code {
            id: $id,
            name: $name,
            severity: $crate::diagnostic::Severity::$sev,
            summary: $summary,
            explanation: {
                const DOC: &str = concat!($($doc, "\n"),*);
                const LEN: usize = $crate::codes::prose_len(DOC);
                const BYTES: [u8; LEN] = $crate::codes::prose::<LEN>(DOC);
                match ::core::str::from_utf8(&BYTES) {
                    Ok(s) => s,
                    Err(_) => panic!("a doc comment is UTF-8"),
                }
            },
        };
    )*};
}
pub(crate) use code;

/// The length of [`prose`]`(doc)`.
pub(crate) const fn prose_len(doc: &str) -> usize {
    prose_into(doc.as_bytes(), &mut [], false)
}

/// A doc comment (its lines, each ending with `\n`) as one text: see [`code!`](code).
pub(crate) const fn prose<const N: usize>(doc: &str) -> [u8; N] {
    let mut out = [0u8; N];
    prose_into(doc.as_bytes(), &mut out, true);
    out
}

/// Writes the prose of `doc` into `out` when `write`, and returns its length either way (a
/// const fn cannot grow a buffer, so the length is computed first).
const fn prose_into(doc: &[u8], out: &mut [u8], write: bool) -> usize {
    let mut n = 0;
    let mut i = 0;
    let mut started = false;
    let mut paragraph = false;
    while i < doc.len() {
        let mut end = i;
        while end < doc.len() && doc[end] != b'\n' {
            end += 1;
        }
        // Doc comments start with a space (`/// text`); list items continue indented.
        let mut start = i;
        while start < end && doc[start] == b' ' {
            start += 1;
        }
        if start == end {
            paragraph = started;
        } else {
            if started {
                let item = end - start >= 2 && doc[start] == b'-' && doc[start + 1] == b' ';
                let sep: &[u8] = if paragraph {
                    b"\n\n"
                } else if item {
                    b"\n"
                } else {
                    b" "
                };
                let mut k = 0;
                while k < sep.len() {
                    if write {
                        out[n] = sep[k];
                    }
                    n += 1;
                    k += 1;
                }
            }
            let mut k = start;
            while k < end {
                if write {
                    out[n] = doc[k];
                }
                n += 1;
                k += 1;
            }
            started = true;
            paragraph = false;
        }
        i = end + 1;
    }
    n
}

// The analysis codes are defined next to the code that reports them, one module each.
pub use crate::analysis::diagnostics::{
    IMPLICIT_SOURCE, INEFFECTIVE_SEAL, INST_WRITE, READ_WITHOUT_WRITER, UNORDERED_WRITE,
    UNPROTECTED_READ, UNREACHED, UNSAFE_SINK, UNUSED_DECLARATION,
};

// The spec codes are reported by `spec` and `graph` (and S015 by the CLI), from many places
// each, so they are defined here.
code! {
    /// The file could not be parsed as YAML. The message names the position where the parser
    /// stopped. Specs are UTF-8 YAML 1.2 (a leading BOM and CRLF line endings are accepted).
    pub static YAML_SYNTAX = "S001", "yaml-syntax", Error,
        "the spec is not valid YAML";

    /// Each level of the spec accepts a fixed set of fields (see the README's spec format). An
    /// unknown field is usually a typo; the message suggests the closest known field.
    pub static UNKNOWN_FIELD = "S002", "unknown-field", Error,
        "a mapping has a field the spec format does not define";

    /// A path is annotated `CR` (confluent read), `CW` (confluent write), `OR` (order-sensitive
    /// read) or `OW` (order-sensitive write). The gate of `OR`/`OW` goes in the separate `gate:`
    /// field.
    pub static UNKNOWN_LABEL = "S003", "unknown-label", Error,
        "a path's label is not one of CR, CW, OR, OW";

    /// `OR` and `OW` paths are order-sensitive within the partitions of their gate: they need
    /// `gate: [attributes]`, or `gate: "*"` when the partitioning is unknown. `CR` and `CW` paths
    /// are confluent and take no gate.
    pub static GATE = "S004", "gate", Error,
        "a gate is missing on an OR/OW path or present on a CR/CW path";

    /// A stream's `from` is `Component.output` or a source declared under `sources:`; its `to` is
    /// `Component.input` or a sink declared under `sinks:`. A component's interfaces are the names
    /// its paths use in `from` (inputs) and `to` (outputs).
    pub static DANGLING_ENDPOINT = "S005", "dangling-endpoint", Error,
        "a stream endpoint names a component, interface, source or sink that does not exist";

    /// YAML mappings may not repeat a key, and a component, source or sink may be declared only
    /// once. The message points at the second definition and the first.
    pub static DUPLICATE = "S006", "duplicate", Error,
        "a key or a name is defined twice";

    /// Names of components, interfaces, sources, sinks and attributes must be non-empty strings
    /// without dots (the dot separates a component from its interface in stream endpoints) and
    /// without whitespace.
    pub static INVALID_NAME = "S007", "invalid-name", Error,
        "a name is empty, contains a dot, or is not a plain name";

    /// Streams flow from outputs (or sources) to inputs (or sinks). An interface is an input of its
    /// component when a path uses it as `from`, an output when a path uses it as `to`.
    pub static WRONG_DIRECTION = "S008", "wrong-direction", Error,
        "a stream flows into an output, out of an input, out of a sink or into a source";

    /// The file contains no YAML document (or only comments), or its `components:` or
    /// `streams:` section is empty or missing. A spec needs at least `components:`, and
    /// `streams:` between its sources, components and sinks: without a stream no source reaches
    /// anything. (A missing `components:` field is S013; an empty one, and a spec with no stream,
    /// are reported here when the spec has no other error.)
    pub static EMPTY = "S009", "empty-spec", Error,
        "the spec file is empty, or declares no components or no streams";

    /// Specs are UTF-8 text. The message points at the first byte that is not valid UTF-8. A file
    /// with a NUL byte is binary (no text has one): the message says so and where the byte is,
    /// and no report shows the file's contents.
    pub static NOT_UTF8 = "S010", "not-utf8", Error,
        "the spec is not valid UTF-8 text";

    /// To keep `blazes` safe on untrusted input (specs from pull requests), reading a spec is
    /// bounded: file size (`--max-file-size`), nesting depth (`--max-depth`), YAML nodes
    /// (`--max-nodes`), YAML events copied by aliases and merge keys (`--max-aliases`, which is
    /// what a "billion laughs" spec inflates), components (`--max-components`), streams
    /// (`--max-streams`) and attribute names per gate, seal or order list (`--max-attributes`). The
    /// message names the limit that was hit, points at where it was hit, and names the flag that
    /// raises it; raise it only for specs you trust.
    pub static LIMIT = "S011", "limit-exceeded", Error,
        "the spec exceeds a resource limit (size, nesting, nodes, alias expansion, components, streams, attributes)";

    /// Every field has one expected shape; the message says which was expected and what was found.
    /// Names must be strings: quote values such as `yes`, `no`, `1` that YAML reads as booleans or
    /// numbers.
    pub static WRONG_TYPE = "S012", "wrong-type", Error,
        "a field has the wrong kind of value (a list where a mapping is expected, a number where a name is expected, ...)";

    /// A path needs `from`, `to` and `label`; a stream needs `from` and `to`; a spec needs
    /// `components`.
    pub static MISSING_FIELD = "S013", "missing-field", Error,
        "a required field is missing";

    /// The file does not exist, is a directory, or cannot be read with the current permissions. The
    /// message carries the operating system's reason.
    pub static UNREADABLE = "S015", "unreadable-file", Error,
        "the spec file could not be read";

    /// Names are case-sensitive: `Count` and `count` are two components, and a seal on `Word` does
    /// not close a gate on `word`. That is legal but almost always a typo, so `blazes` warns with
    /// both locations. Names are compared after Unicode lowercasing; they are not otherwise
    /// normalised (a composed and a decomposed `é` are different names and are not reported).
    pub static NAME_COLLISION = "S016", "name-collision", Warning,
        "two names differ only in case";

    /// An attribute named in one gate, seal, order or `partition_by` list and in no other list of
    /// the spec, while an attribute spelt almost like it is named elsewhere (`epoc` and `epoch`):
    /// a seal, gate or order on a misspelt key matches nothing, silently. The message names the
    /// attribute that exists. An attribute named once with no such neighbour is not reported, names
    /// shorter than four characters are not compared (`k` is one edit from `j`), and names that
    /// differ only in case are S016.
    pub static LONE_ATTRIBUTE = "S017", "lone-attribute", Warning,
        "an attribute is named only once, and another attribute is spelt almost like it";

    /// Two items of `streams:` with the same `from`, `to` and `seal`. The copy changes no label,
    /// but it is usually left behind by an edit, or meant to be another stream.
    pub static DUPLICATE_STREAM = "S018", "duplicate-stream", Warning,
        "the same stream is declared twice";

    /// For example `tolerate:` accepts `Run`, `Inst` or `Diverge`; `order:` accepts `global` or a
    /// list of attributes; `replicas:` is a positive integer; `version:` is 1.
    pub static INVALID_VALUE = "S014", "invalid-value", Error,
        "a field has a value outside its allowed set";
}

// The import codes are reported by `import`, which turns an engine's topology into a spec.
code! {
    /// `blazes import` (and `--from`) annotates each operator from the catalogue of its engine:
    /// the built-in one, and the user's `--catalog`, whose entries come first. An operator that no
    /// entry matches is never assumed safe: it gets the most conservative annotation, `OW` with
    /// gate `*`, which only a global order can make deterministic. The help is the entry to add
    /// to a user catalogue, one field a line so that it copies as YAML, with that conservative
    /// annotation filled in and a reason to edit once you know what the operator does (its class
    /// is the operator's kind, without the ids a plan gives it); `docs/import.md` lists the
    /// fields. `blazes import --explain` shows which entry or rule annotated every operator.
    pub static UNKNOWN_OPERATOR = "I001", "unknown-operator", Warning,
        "no catalogue entry matches an operator, which is annotated OW(*)";

    /// The topology a framework prints leaves things out: a Flink plan does not name the key of a
    /// `keyBy`, a Kafka Streams description does not say whether an aggregation is windowed or how
    /// a `suppress` is configured, and user code (process functions, shell bolts) can do
    /// anything. Where the annotation depends on such a thing, the conservative choice is made and
    /// this warning says what was assumed and how a catalogue entry can say better.
    pub static MISSING_INFORMATION = "I002", "missing-information", Warning,
        "the topology does not show something an annotation depends on; the conservative choice was made";

    /// The file given to `blazes import ENGINE` (or `--from ENGINE`) is not a topology of that
    /// engine: a Kafka Streams `Topology#describe()` text (any version's layout, or ksqlDB's
    /// `EXPLAIN`), a Flink `getExecutionPlan()` JSON or SQL `EXPLAIN` text, or a Storm Flux (or
    /// Heron ECO) YAML file. The message says what was expected where; every problem of the file
    /// is reported at once.
    pub static INVALID_TOPOLOGY = "I003", "invalid-topology", Error,
        "the file is not a valid topology of the engine";
}

// The white-box codes are reported by `whitebox`, which derives a component's paths from its
// `sql:` or `bloom:` program.
code! {
    /// A component's `sql:` or `bloom:` program cannot be read: the SQL does not parse as Flink
    /// SQL, the Bloom is not a Bud module of the subset blazes reads (an unterminated string, a
    /// block without `end`, a rule deriving an undeclared collection), or the program is longer
    /// than blazes reads. No path is derived from it, so the spec is invalid. The location points
    /// into the program, in the spec file. `blazes explain sql` and `blazes explain bloom` list
    /// what is read.
    pub static WHITEBOX_SYNTAX = "W001", "whitebox-syntax", Error,
        "a component's SQL or Bloom program cannot be read";

    /// The program uses a construct whose behaviour blazes does not derive (a table function
    /// other than the window functions, `LATERAL`, a statement other than `CREATE TABLE`,
    /// `CREATE VIEW`, `INSERT INTO ... SELECT` and `SELECT`; in Bloom, `include` or an unknown
    /// declaration). It is never assumed safe: the paths it touches get the most conservative
    /// annotation, `OW` with gate `*`. Declare those paths in `paths:` when you know better.
    pub static WHITEBOX_UNSUPPORTED = "W002", "whitebox-unsupported", Warning,
        "a construct of a white box is not analysed; the paths it touches are OW(*)";

    /// A component gives both its program and `paths:`, and a declared path is less
    /// order-sensitive than what the program does (`CR` where the SQL groups by a key), or its
    /// gate names attributes the program does not partition by. The declared annotation would
    /// give a confident wrong verdict, so the spec is invalid: correct or remove the declared
    /// path.
    ///
    /// The same holds for a composite that gives `paths:` beside `use:`: the used module must
    /// behave as that grey box (its summary, which `blazes summarize FILE` prints). A declared
    /// path less order-sensitive than the module's, a path of the module the declaration lacks,
    /// or a module that no grey box behaves as, is this error.
    pub static WHITEBOX_CONFLICT = "W003", "whitebox-conflict", Error,
        "a declared path is less order-sensitive than the component's program or module";

    /// A declared path is more conservative than what the component's program derives (`OW`
    /// where the SQL only filters). The declared annotation is kept, since it is safe; the
    /// analysis may ask for coordination the program does not need.
    ///
    /// For a composite with `paths:` beside `use:`, the module's dataflow is analysed as it is,
    /// and a declared path more conservative than the module's summary (or one along which no
    /// data flows in the module) only documents it: this warning says the declaration is not
    /// what the module does.
    pub static WHITEBOX_CONSERVATIVE = "W004", "whitebox-conservative", Warning,
        "a declared path is more conservative than the component's program or module";
}

/// Every code, in registration order (SARIF rule indexes follow it; S014 came after S016).
/// `blazes explain` lists them sorted by id.
pub static ALL: &[&Code] = &[
    &UNORDERED_WRITE,
    &UNPROTECTED_READ,
    &INST_WRITE,
    &UNSAFE_SINK,
    &IMPLICIT_SOURCE,
    &INEFFECTIVE_SEAL,
    &UNREACHED,
    &READ_WITHOUT_WRITER,
    &UNUSED_DECLARATION,
    &YAML_SYNTAX,
    &UNKNOWN_FIELD,
    &UNKNOWN_LABEL,
    &GATE,
    &DANGLING_ENDPOINT,
    &DUPLICATE,
    &INVALID_NAME,
    &WRONG_DIRECTION,
    &EMPTY,
    &NOT_UTF8,
    &LIMIT,
    &WRONG_TYPE,
    &MISSING_FIELD,
    &UNREADABLE,
    &NAME_COLLISION,
    &INVALID_VALUE,
    &UNKNOWN_OPERATOR,
    &MISSING_INFORMATION,
    &INVALID_TOPOLOGY,
    &LONE_ATTRIBUTE,
    &DUPLICATE_STREAM,
    &WHITEBOX_SYNTAX,
    &WHITEBOX_UNSUPPORTED,
    &WHITEBOX_CONFLICT,
    &WHITEBOX_CONSERVATIVE,
];

/// Looks a code up by id (`C001`, case-insensitive) or name (`unordered-write`).
pub fn find(query: &str) -> Option<&'static Code> {
    ALL.iter()
        .copied()
        .find(|c| c.id.eq_ignore_ascii_case(query) || c.name.eq_ignore_ascii_case(query))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(doc: &str) -> String {
        let mut out = vec![0; prose_len(doc)];
        prose_into(doc.as_bytes(), &mut out, true);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_doc_comment_reads_as_its_prose() {
        let doc = " One paragraph\n over two lines.\n\n Fixes:\n - one,\n   continued;\n - two.\n";
        assert_eq!(
            text(doc),
            "One paragraph over two lines.\n\nFixes:\n- one, continued;\n- two."
        );
        assert_eq!(prose::<3>(" a\n b\n"), *b"a b");
    }

    #[test]
    fn every_code_has_an_explanation_without_doc_comment_layout() {
        for c in ALL {
            assert!(!c.explanation.is_empty(), "{}", c.id);
            assert!(!c.explanation.contains("  "), "{}: double space", c.id);
            assert!(!c.explanation.ends_with('\n'), "{}", c.id);
        }
    }
}
