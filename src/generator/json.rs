//! A generated spec written as JSON (`blazes gen --format json`): the YAML the generator
//! writes, read back by the spec's YAML reader and written entry by entry, so that the two
//! formats are the same spec by construction and a spec of a million components is never
//! one tree in memory.

use crate::spec::Limits;
use crate::spec::json::{Unwritable, write, write_key};
use crate::spec::yaml::{self, Consumer, Node, Take};

/// `yaml` (a spec) as JSON: one line per source, component, stream and sink.
pub fn to_json(yaml: &str) -> Result<String, String> {
    let limits = Limits {
        max_bytes: yaml.len().max(Limits::default().max_bytes),
        max_nodes: usize::MAX,
        ..Limits::default()
    };
    let mut w = Writer {
        out: String::with_capacity(yaml.len() + yaml.len() / 2),
        keys: 0,
        section: Section::Entries,
        count: 0,
        wrote_value: false,
        error: None,
        not_mapping: false,
    };
    w.out.push('{');
    yaml::read(yaml, 0, &limits, &mut w).map_err(|d| d.message.clone())?;
    if w.not_mapping {
        return Err("the spec is not a mapping".into());
    }
    if let Some(e) = w.error {
        return Err(match e {
            Unwritable::Key(s) => format!("a key at byte {} is not a string", s.offset),
            Unwritable::Float(s) => format!("the number at byte {} is not finite", s.offset),
        });
    }
    w.out.push_str("\n}\n");
    Ok(w.out)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Section {
    Entries,
    Items,
}

struct Writer {
    out: String,
    keys: usize,
    section: Section,
    count: usize,
    wrote_value: bool,
    error: Option<Unwritable>,
    not_mapping: bool,
}

impl Writer {
    fn put(&mut self, r: Result<(), Unwritable>) {
        if let Err(e) = r {
            self.error.get_or_insert(e);
        }
    }

    fn next(&mut self, open: char) {
        self.out.push_str(if self.count == 0 { "" } else { "," });
        if self.count == 0 {
            self.out.push(' ');
            self.out.push(open);
        }
        self.out.push_str("\n    ");
        self.count += 1;
    }
}

impl Consumer for Writer {
    fn key(&mut self, key: Node) -> Take {
        self.out
            .push_str(if self.keys == 0 { "\n  " } else { ",\n  " });
        self.keys += 1;
        let r = write_key(&key, &mut self.out);
        self.put(r);
        // Drop the space `write_key` puts after the colon: `next` or the value adds its own.
        self.out.pop();
        self.count = 0;
        self.wrote_value = false;
        // The streams are a list: taken item by item, the rest entry by entry.
        self.section = if key.as_str() == Some("streams") {
            Section::Items
        } else {
            Section::Entries
        };
        match self.section {
            Section::Entries => Take::Entries,
            Section::Items => Take::Items,
        }
    }

    fn value(&mut self, value: Node) {
        self.out.push(' ');
        let r = write(&value, &mut self.out);
        self.put(r);
        self.wrote_value = true;
    }

    fn entry_key(&mut self, key: Node) -> bool {
        self.next('{');
        let r = write_key(&key, &mut self.out);
        self.put(r);
        true
    }

    fn entry_value(&mut self, value: Node) {
        let r = write(&value, &mut self.out);
        self.put(r);
    }

    fn want_item(&mut self) -> bool {
        self.next('[');
        true
    }

    fn item(&mut self, item: Node) {
        let r = write(&item, &mut self.out);
        self.put(r);
    }

    fn end(&mut self) {
        let close = match self.section {
            Section::Entries => '}',
            Section::Items => ']',
        };
        if self.count > 0 {
            self.out.push_str("\n  ");
            self.out.push(close);
        } else if !self.wrote_value {
            // An empty mapping or list: no entry and no value was handed over.
            self.out.push(' ');
            self.out.push(if close == '}' { '{' } else { '[' });
            self.out.push(close);
        }
    }

    fn root(&mut self, _root: Node) {
        self.not_mapping = true;
    }
}
