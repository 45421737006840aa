//! Catalogues: what each operator of an engine does, as the annotation of its paths.
//!
//! A catalogue is YAML, the built-in ones (`src/import/catalogs/*.yaml`) and the user's
//! (`--catalog`) alike:
//!
//! ```yaml
//! version: 1
//! engine: kafka-streams
//! operators:
//!   - class: KSTREAM-AGGREGATE      # glob(s) over the operator's class (`*`, `?`)
//!     name: [count-*]               # or over its name; either or both
//!     label: OW                     # CR, CW, OR, OW
//!     gate: [key]                   # for OR/OW: attributes, `$key`, or "*"
//!     seal: [window]                # its inputs are punctuated on these keys
//!     order: [key]                  # or `global`: coordination already in place
//!     replicated: true              # or `replicas: N`
//!     keeps-key-order: false        # Kafka Streams: forwards its input's per-key order
//!     reads-state: false            # Kafka Streams: reads the stores it lists, written elsewhere
//!     warn: the text does not show whether it is windowed
//!     reason: counts per key; each count emitted depends on the records before it
//! ```
//!
//! The user's entries come before the built-in ones, and the first entry that matches an
//! operator wins. Errors are located in the catalogue's text, all at once, with the spec's
//! codes (unknown field, wrong type, gate, ...).
//!
//! This module is the catalogue as the importers use it (entries, loading, matching operators
//! by glob); `validate` reads a catalogue's YAML into entries.

use std::collections::HashMap;

use super::Engine;
use crate::diagnostic::Diagnostic;
use crate::label::Annotation;
use crate::spec::Limits;

mod validate;

pub use validate::parse;

/// The partition key of an operator's input, in a gate: Storm's FIELDS, Flink's `keyBy`
/// (called `key`, the plan does not name it), Kafka Streams' record key.
pub const PARTITION_KEY: &str = "$key";

/// The keys an operator groups or partitions by, in a gate, where the topology prints them
/// (Flink SQL's `groupBy=[...]`); where it does not, `$group` is the partition key.
pub const GROUP_KEY: &str = "$group";

/// Coordination an entry says is already in place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Order {
    Global,
    Keys(Vec<String>),
}

/// One catalogue entry.
#[derive(Clone, Debug)]
pub struct Entry {
    pub classes: Vec<String>,
    pub names: Vec<String>,
    pub label: Annotation,
    /// For `OR`/`OW`: attributes, [`PARTITION_KEY`], or `["*"]`.
    pub gate: Option<Vec<String>>,
    pub seal: Option<Vec<String>>,
    pub order: Option<Order>,
    pub replicated: Option<bool>,
    pub replicas: Option<u64>,
    pub keeps_key_order: bool,
    pub reads_state: bool,
    pub warn: Option<String>,
    pub reason: String,
    /// Where it is defined, for comments: "built-in kafka-streams catalogue, line 12".
    pub origin: String,
}

impl Entry {
    /// How comments and messages name the entry: its first pattern and where it is defined.
    pub fn title(&self) -> String {
        let pattern = self
            .classes
            .first()
            .map(|c| format!("`{c}`"))
            .or_else(|| self.names.first().map(|n| format!("name `{n}`")))
            .unwrap_or_default();
        if pattern.is_empty() {
            // A rule of an importer, which no pattern matches.
            return self.origin.clone();
        }
        format!("{pattern} ({})", self.origin)
    }

    /// How comments name the entry for an operator it matched: the pattern that matched.
    pub fn title_for(&self, class: &str, name: &str) -> String {
        let pattern = self
            .names
            .iter()
            .find(|p| glob(p, name))
            .map(|n| format!("name `{n}`"))
            .or_else(|| {
                self.classes
                    .iter()
                    .find(|p| glob(p, class))
                    .map(|c| format!("`{c}`"))
            });
        match pattern {
            Some(p) => format!("{p} ({})", self.origin),
            None => self.title(),
        }
    }

    /// The patterns it matches, for the documentation's table.
    pub fn patterns(&self) -> Vec<&str> {
        self.classes
            .iter()
            .chain(&self.names)
            .map(String::as_str)
            .collect()
    }
}

/// The catalogue of one engine: the user's entries, then the built-in ones.
#[derive(Clone, Debug)]
pub struct Catalog {
    pub engine: Engine,
    pub entries: Vec<Entry>,
}

impl Catalog {
    /// The built-in catalogue alone. It is compiled in and tested to be valid; were it not,
    /// its errors are returned like a user's.
    pub fn builtin(engine: Engine) -> Result<Catalog, Vec<Diagnostic>> {
        Catalog::load(engine, None, &Limits::default())
    }

    /// The built-in catalogue of `engine`, preceded by the user's, `(shown path, text)`.
    /// Errors are the user catalogue's, located in its text.
    pub fn load(
        engine: Engine,
        user: Option<(&str, &str)>,
        limits: &Limits,
    ) -> Result<Catalog, Vec<Diagnostic>> {
        let mut entries = Vec::new();
        if let Some((path, text)) = user {
            entries = parse(engine, text, path, limits)?;
        }
        let builtin = parse(
            engine,
            engine.builtin_catalog(),
            &format!("built-in {} catalogue", engine.name()),
            &Limits::default(),
        )?;
        entries.extend(builtin);
        Ok(Catalog { engine, entries })
    }

    /// A matcher that remembers what each class matched (operators share classes).
    pub fn lookup(&self) -> Lookup<'_> {
        Lookup {
            catalog: self,
            by_class: HashMap::new(),
            named: self.entries.iter().any(|e| !e.names.is_empty()),
        }
    }
}

/// Finds the entry of an operator: the first whose name or class pattern matches.
pub struct Lookup<'c> {
    catalog: &'c Catalog,
    by_class: HashMap<String, Option<usize>>,
    named: bool,
}

impl Lookup<'_> {
    pub fn find(&mut self, class: &str, name: &str) -> Option<usize> {
        let entries = &self.catalog.entries;
        let by_class = match self.by_class.get(class) {
            Some(&found) => found,
            None => {
                let found = entries
                    .iter()
                    .position(|e| e.classes.iter().any(|p| glob(p, class)));
                self.by_class.insert(class.to_string(), found);
                found
            }
        };
        if !self.named {
            return by_class;
        }
        // An entry by name that comes before the class's entry wins.
        let end = by_class.unwrap_or(entries.len());
        entries[..end]
            .iter()
            .position(|e| e.names.iter().any(|p| glob(p, name)))
            .or(by_class)
    }
}

/// Whether `text` matches the glob `pattern`: `*` any run of characters, `?` one character,
/// everything else itself. Linear backtracking on the last `*`: O(pattern × text) at worst.
pub fn glob(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || (p[pi] != '*' && p[pi] == t[ti])) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// A text as one line of at most 1000 characters, with control characters made visible: it
/// goes into YAML comments and messages.
pub fn one_line(s: &str) -> String {
    let mut out = String::new();
    for (i, c) in s
        .split_whitespace()
        .flat_map(|w| w.chars().chain([' ']))
        .enumerate()
    {
        if i == 1000 {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.push_str(&format!("<U+{:04X}>", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob("KSTREAM-*", "KSTREAM-FILTER"));
        assert!(glob("*-this-join", "orders-this-join"));
        assert!(glob(
            "Window(*EventTime*",
            "Window(TumblingEventTimeWindows(5000), X)"
        ));
        assert!(!glob(
            "Window(*EventTime*",
            "Window(TumblingProcessingTimeWindows(5000))"
        ));
        assert!(glob("a?c", "abc"));
        assert!(!glob("a?c", "ac"));
        assert!(glob("*", ""));
        assert!(!glob("", "x"));
        assert!(glob("a*b*c", "aXXbYYc"));
        assert!(!glob("a*b*c", "aXXbYY"));
    }

    #[test]
    fn builtin_catalogues_are_valid() {
        for e in Engine::ALL {
            let c = Catalog::builtin(e).unwrap_or_else(|d| panic!("{}: {d:#?}", e.name()));
            assert!(!c.entries.is_empty());
        }
    }
}
