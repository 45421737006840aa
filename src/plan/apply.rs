//! Writing a plan into the spec text (`blazes plan --apply`).
//!
//! The spec is edited in place at the spans the reader recorded, never re-serialised, so the
//! user's comments, key order, quoting and flow/block style survive: an `order:` or `seal:`
//! entry is inserted as the first key of the component's or source's mapping (or its value
//! replaced when one exists). The edited text is then read back and re-analysed
//! ([`apply_verified`]): an edit the reader does not see as intended is an error, not a file.
//!
//! A spec may be JSON (JSON is YAML 1.2). The edit is then written in JSON's own syntax
//! (quoted keys and names, `"global"`), so the file stays JSON for the tools that wrote it;
//! [`apply_verified`] checks that it still parses as JSON.

use std::collections::HashMap;

use crate::analysis::{self, FailOn};
use crate::graph::{self, Dataflow, Order};
use crate::label::Label;
use crate::spec::{self, KeyList, Limits, OrderDecl, Spec};

use super::{Choice, Plan};

/// One edit of the spec, by name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Edit {
    Seal {
        source: String,
        key: Vec<String>,
    },
    /// `seal:` on the `index`th declaration of `streams:` (from 0), from `from` to `to` (as
    /// the spec writes its endpoints): by place, since two identical streams are two streams.
    StreamSeal {
        index: usize,
        from: String,
        to: String,
        key: Vec<String>,
    },
    /// `key: None` is `order: global`.
    Order {
        component: String,
        key: Option<Vec<String>>,
    },
}

impl Edit {
    /// The edit in the spec's own words, for messages.
    pub fn describe(&self) -> String {
        match self {
            Edit::Seal { source, key } => {
                format!("`seal: {}` on source `{source}`", flow_list(key))
            }
            Edit::StreamSeal { from, to, key, .. } => {
                format!("`seal: {}` on the stream {from} -> {to}", flow_list(key))
            }
            Edit::Order {
                component,
                key: None,
            } => {
                format!("`order: global` on component `{component}`")
            }
            Edit::Order {
                component,
                key: Some(k),
            } => format!("`order: {}` on component `{component}`", flow_list(k)),
        }
    }
}

/// The edits that record a plan's mechanisms in `spec`, the spec the plan was made for:
/// [`graph::build`] keeps the spec's order, so the plan's ids index its declarations (a
/// stream's too: a spec a plan is made for resolves every stream).
pub fn edits(plan: &Plan, spec: &Spec) -> Vec<Edit> {
    let mut out = Vec::new();
    for m in &plan.mechanisms {
        match m.choice {
            Choice::AddSeal { source, .. } => out.push(Edit::Seal {
                source: spec.sources[source.index()].name.text.clone(),
                key: m.key.clone(),
            }),
            Choice::SealStream { stream, .. } => {
                let st = &spec.streams[stream.index()];
                out.push(Edit::StreamSeal {
                    index: stream.index(),
                    from: st.from.text.clone(),
                    to: st.to.text.clone(),
                    key: m.key.clone(),
                });
            }
            // An order is written on every component it takes effect at (a task's members).
            Choice::Order { order, .. } => out.extend(m.components.iter().map(|c| Edit::Order {
                component: spec.components[c.index()].name.text.clone(),
                key: match order {
                    Order::Global => None,
                    Order::Keys(_) => Some(m.key.clone()),
                },
            })),
        }
    }
    out
}

/// The edits of a plan named as `df`, the dataflow it was made for, names them: for a composed
/// spec, by the instances' flat names (`Eu.Billing.Join`), what the spec expands to again once
/// the edits are in its files.
pub fn edits_of(plan: &Plan, df: &Dataflow) -> Vec<Edit> {
    let mut out = Vec::new();
    for m in &plan.mechanisms {
        match m.choice {
            Choice::AddSeal { source, .. } => out.push(Edit::Seal {
                source: df.sources[source.index()].name.clone(),
                key: m.key.clone(),
            }),
            Choice::SealStream { stream, .. } => {
                let st = &df.streams[stream.index()];
                out.push(Edit::StreamSeal {
                    index: stream.index(),
                    from: st.from_text.clone(),
                    to: st.to_text.clone(),
                    key: m.key.clone(),
                });
            }
            Choice::Order { order, .. } => out.extend(m.components.iter().map(|c| Edit::Order {
                component: df.components[c.index()].name.clone(),
                key: match order {
                    Order::Global => None,
                    Order::Keys(_) => Some(m.key.clone()),
                },
            })),
        }
    }
    out
}

/// The syntax edits are written in: the spec's own ([`Syntax::of`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Syntax {
    Yaml,
    /// The whole spec is a JSON document: every inserted key and name is a JSON string.
    Json,
}

impl Syntax {
    /// JSON when the whole text is one JSON document, YAML otherwise.
    pub fn of(text: &str) -> Syntax {
        if is_json(text) {
            Syntax::Json
        } else {
            Syntax::Yaml
        }
    }

    fn scalar(self, name: &str) -> String {
        match self {
            Syntax::Yaml => scalar(name),
            Syntax::Json => json_string(name),
        }
    }

    fn list(self, names: &[String]) -> String {
        let items: Vec<String> = names.iter().map(|n| self.scalar(n)).collect();
        format!("[{}]", items.join(", "))
    }

    /// `key: value` as an entry of a mapping.
    fn entry(self, key: &str, value: &str) -> String {
        format!("{}: {value}", self.scalar(key))
    }
}

/// Whether the text (after a byte order mark) is one JSON document.
pub fn is_json(text: &str) -> bool {
    let body = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    serde_json::from_str::<serde::de::IgnoredAny>(body).is_ok()
}

fn json_string(name: &str) -> String {
    serde_json::to_string(name).unwrap_or_else(|_| format!("\"{name}\""))
}

/// A YAML scalar for an attribute name: plain when that reads back as the same string,
/// double-quoted otherwise.
fn scalar(name: &str) -> String {
    const RESERVED: [&str; 12] = [
        "true", "false", "yes", "no", "on", "off", "y", "n", "null", "~", "nan", "inf",
    ];
    let plain = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && !RESERVED.contains(&name.to_ascii_lowercase().as_str());
    if plain {
        name.to_string()
    } else {
        json_string(name)
    }
}

fn flow_list(names: &[String]) -> String {
    let items: Vec<String> = names.iter().map(|n| scalar(n)).collect();
    format!("[{}]", items.join(", "))
}

/// A text replacement: `len` bytes at `offset` become `text`.
#[derive(Debug)]
struct Splice {
    offset: usize,
    len: usize,
    text: String,
}

/// The end of the flow sequence that starts at `start` (`[`), quote-aware.
fn flow_end(text: &str, start: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    if bytes.get(start) != Some(&b'[') {
        return None;
    }
    let mut depth = 0usize;
    let mut quote: Option<u8> = None;
    let mut i = start;
    while i < bytes.len() {
        let b = bytes[i];
        match quote {
            Some(q) => {
                if b == b'\\' && q == b'"' {
                    i += 1;
                } else if b == q {
                    quote = None;
                }
            }
            None => match b {
                b'"' | b'\'' => quote = Some(b),
                b'[' => depth += 1,
                b']' => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(i + 1);
                    }
                }
                _ => {}
            },
        }
        i += 1;
    }
    None
}

/// Replaces an existing key list written as a flow sequence (`[a, b]`).
fn replace_list(text: &str, list: &KeyList, value: &str, what: &str) -> Result<Splice, String> {
    let start = list.span.offset;
    let end = flow_end(text, start).ok_or_else(|| {
        format!("cannot rewrite the block-style list of {what}; write it as a flow list `[a, b]` and run again")
    })?;
    Ok(Splice {
        offset: start,
        len: end - start,
        text: value.to_string(),
    })
}

/// Inserts `key: value` as the first entry of the mapping whose value node starts at
/// `body` (a `{` for a flow mapping, the first key for a block mapping).
fn insert_entry(text: &str, body: usize, entry: &str, what: &str) -> Result<Splice, String> {
    let rest = &text[body..];
    if let Some(inner) = rest.strip_prefix('{') {
        let after = inner.trim_start();
        let gap = &inner[..inner.len() - after.len()];
        // A flow mapping written one entry per line (pretty-printed JSON) gets the entry on
        // a line of its own, indented like the entry that follows it.
        if let Some(nl) = gap.rfind('\n')
            && !after.starts_with('}')
        {
            let indent = &gap[nl + 1..];
            return Ok(Splice {
                offset: body + 1,
                len: 0,
                text: format!("\n{indent}{entry},"),
            });
        }
        let sep = if after.starts_with('}') {
            " "
        } else if gap.is_empty() {
            ", "
        } else {
            ","
        };
        return Ok(Splice {
            offset: body + 1,
            len: 0,
            text: format!(" {entry}{sep}"),
        });
    }
    let indent = key_indent(text, body, entry, what)?;
    Ok(Splice {
        offset: body,
        len: 0,
        text: format!("{entry}\n{indent}"),
    })
}

/// The indentation of a block mapping's first key at `body` (a `- ` of a sequence item
/// counts as indentation), or an error when something else precedes it on its line.
fn key_indent(text: &str, body: usize, entry: &str, what: &str) -> Result<String, String> {
    let line_start = text[..body].rfind('\n').map_or(0, |i| i + 1);
    let prefix = &text[line_start..body];
    if !prefix.chars().all(|c| c == ' ' || c == '-') {
        return Err(format!(
            "cannot find where the mapping of {what} starts; add the entry `{entry}` by hand"
        ));
    }
    Ok(" ".repeat(prefix.chars().count()))
}

/// Adds `entry` to a stream written as a block mapping, on a line of its own after its last
/// endpoint's line and indented like its first key: inserted before the first key, it would
/// rewrite the `- from: ...` line of a sequence item.
fn entry_after(
    text: &str,
    decl: &spec::StreamDecl,
    entry: &str,
    what: &str,
) -> Result<Splice, String> {
    let body = decl.span.offset;
    let indent = key_indent(text, body, entry, what)?;
    let last = decl.from.span.end().max(decl.to.span.end());
    Ok(match text[last..].find('\n') {
        Some(i) => Splice {
            offset: last + i + 1,
            len: 0,
            text: format!("{indent}{entry}\n"),
        },
        None => Splice {
            offset: text.len(),
            len: 0,
            text: format!("\n{indent}{entry}"),
        },
    })
}

/// Turns a null value (`name:`, `name: ~`, `name: null`) into `name: { entry }`.
fn fill_null(
    text: &str,
    name_end: usize,
    entry: &str,
    what: &str,
    syntax: Syntax,
) -> Result<Splice, String> {
    let line_end = text[name_end..]
        .find('\n')
        .map_or(text.len(), |i| name_end + i);
    let colon = text[name_end..line_end]
        .find(':')
        .ok_or_else(|| format!("cannot find the `:` after {what}"))?;
    let value_start = name_end + colon + 1;
    let value_end = match syntax {
        Syntax::Yaml => line_end,
        // In JSON the value also ends at the next `,` or `}`: a whole spec may be one line.
        Syntax::Json => text[value_start..line_end]
            .find([',', '}'])
            .map_or(line_end, |i| value_start + i),
    };
    let after = &text[value_start..value_end];
    // The value ends where a comment starts (` #`) or at the end of the line.
    let comment = after
        .char_indices()
        .find(|&(i, c)| c == '#' && (i == 0 || after[..i].ends_with([' ', '\t'])))
        .map(|(i, _)| i);
    let value = after[..comment.unwrap_or(after.len())].trim();
    if !matches!(value, "" | "~" | "null" | "Null" | "NULL") {
        return Err(format!(
            "cannot edit the value of {what}; add the entry `{entry}` by hand"
        ));
    }
    let len = comment.unwrap_or(after.len());
    Ok(Splice {
        offset: value_start,
        len,
        text: format!(" {{ {entry} }}{}", if comment.is_some() { " " } else { "" }),
    })
}

/// Applies the edits to the spec text at its spans, in the spec's own syntax. Fails (with a
/// message naming the place) where the text has a shape the edit cannot handle.
pub fn apply(text: &str, spec: &Spec, edits: &[Edit]) -> Result<String, String> {
    apply_in(text, spec, edits, Syntax::of(text))
}

/// [`apply`], writing the edits in the given syntax.
pub fn apply_in(text: &str, spec: &Spec, edits: &[Edit], syntax: Syntax) -> Result<String, String> {
    // Lookups by name: a plan for a generated fleet edits tens of thousands of components.
    let components: HashMap<&str, &spec::ComponentDecl> = spec
        .components
        .iter()
        .map(|c| (c.name.text.as_str(), c))
        .collect();
    let sources: HashMap<&str, &spec::SourceDecl> = spec
        .sources
        .iter()
        .map(|c| (c.name.text.as_str(), c))
        .collect();
    let mut targets: Vec<Target> = Vec::with_capacity(edits.len());
    for e in edits {
        targets.push(match e {
            Edit::StreamSeal {
                index,
                from,
                to,
                key,
            } => Target::StreamSeal {
                decl: spec
                    .streams
                    .get(*index)
                    .filter(|d| d.from.text == *from && d.to.text == *to)
                    .ok_or_else(|| format!("the spec has no stream {from} -> {to}"))?,
                key,
            },
            Edit::Order { component, key } => Target::Order {
                decl: components
                    .get(component.as_str())
                    .ok_or_else(|| format!("the spec has no component `{component}`"))?,
                key: key.as_deref(),
            },
            Edit::Seal { source, key } => Target::Seal {
                decl: sources
                    .get(source.as_str())
                    .ok_or_else(|| format!("the spec has no source `{source}`"))?,
                key,
            },
        });
    }
    splice_targets(text, &targets, syntax)
}

/// An edit with the declaration of the text's spec it goes into.
#[derive(Clone, Copy, Debug)]
pub enum Target<'s> {
    Seal {
        decl: &'s spec::SourceDecl,
        key: &'s [String],
    },
    StreamSeal {
        decl: &'s spec::StreamDecl,
        key: &'s [String],
    },
    /// `key: None` is `order: global`.
    Order {
        decl: &'s spec::ComponentDecl,
        key: Option<&'s [String]>,
    },
}

/// Writes each target's entry into `text`, the text its declarations were read from. Fails
/// (with a message naming the place) where the text has a shape the edit cannot handle.
pub fn splice_targets(text: &str, targets: &[Target], syntax: Syntax) -> Result<String, String> {
    let mut splices: Vec<Splice> = Vec::with_capacity(targets.len());
    for t in targets {
        splices.push(splice(text, *t, syntax)?);
    }
    // One pass over the text: splicing in place would move the tail once per edit.
    splices.sort_by_key(|s| s.offset);
    let mut out =
        String::with_capacity(text.len() + splices.iter().map(|s| s.text.len()).sum::<usize>());
    let mut at = 0;
    for s in splices {
        out.push_str(&text[at..s.offset]);
        out.push_str(&s.text);
        at = s.offset + s.len;
    }
    out.push_str(&text[at..]);
    Ok(out)
}

fn splice(text: &str, target: Target, syntax: Syntax) -> Result<Splice, String> {
    Ok(match target {
        Target::StreamSeal { decl, key } => {
            let what = format!("the stream {} -> {}", decl.from.text, decl.to.text);
            let value = syntax.list(key);
            let entry = syntax.entry("seal", &value);
            match &decl.seal {
                Some(list) => replace_list(text, list, &value, &format!("the seal of {what}"))?,
                None if !text[decl.span.offset..].starts_with('{') => {
                    entry_after(text, decl, &entry, &what)?
                }
                None => insert_entry(text, decl.span.offset, &entry, &what)?,
            }
        }
        Target::Order { decl, key } => {
            let what = format!("component `{}`", decl.name.text);
            let value = key.map_or_else(|| syntax.scalar("global"), |k| syntax.list(k));
            match &decl.order {
                Some(OrderDecl::Keys(list)) => {
                    replace_list(text, list, &value, &format!("the order of {what}"))?
                }
                Some(OrderDecl::Global(span)) => Splice {
                    offset: span.offset,
                    len: span.len,
                    text: value,
                },
                None => insert_entry(
                    text,
                    decl.body.offset,
                    &syntax.entry("order", &value),
                    &what,
                )?,
            }
        }
        Target::Seal { decl, key } => {
            let what = format!("source `{}`", decl.name.text);
            let value = syntax.list(key);
            let entry = syntax.entry("seal", &value);
            let is_flow = text[decl.body.offset..].starts_with('{');
            match &decl.seal {
                Some(list) => replace_list(text, list, &value, &format!("the seal of {what}"))?,
                // A mapping with no field at all is the null form (`name:`).
                None if !is_flow && decl.sealable.is_empty() => {
                    fill_null(text, decl.name.span.end(), &entry, &what, syntax)?
                }
                None => insert_entry(text, decl.body.offset, &entry, &what)?,
            }
        }
    })
}

/// What the spec becomes once the plan is applied: a copy of the dataflow carrying the
/// plan's mechanisms (what [`edits`] writes into the text), and its analysis, run as the
/// planner and [`apply_verified`] run it to verify a plan. The keys are interned again by
/// name in the copy: the plan's own key sets live in the planner's private key table.
pub fn applied(df: &Dataflow, plan: &Plan, fail_on: FailOn) -> (Dataflow, analysis::Analysis) {
    let mut copy = df.clone();
    for m in &plan.mechanisms {
        let key = |copy: &mut Dataflow| copy.keys.set_of(m.key.iter().map(String::as_str));
        match m.choice {
            Choice::AddSeal { source, .. } => {
                copy.sources[source.index()].seal = Some(key(&mut copy));
            }
            Choice::SealStream { stream, .. } => {
                copy.streams[stream.index()].seal = Some(key(&mut copy));
            }
            Choice::Order { order, .. } => {
                let order = match order {
                    Order::Global => Order::Global,
                    Order::Keys(_) => Order::Keys(key(&mut copy)),
                };
                for c in &m.components {
                    copy.components[c.index()].order = Some(order);
                }
            }
        }
    }
    let analysis = analysis::verdicts(&mut copy, fail_on);
    (copy, analysis)
}

/// Applies the plan and proves the result: the edited text must read back without errors,
/// carry exactly the planned orders and seals, and pass the analysis with `fail_on`.
///
/// `text` is the spec the plan was made for. Where the edits go is read from it again: a
/// checked report keeps the dataflow, not the spec, which on a big input is as large.
pub fn apply_verified(
    text: &str,
    plan: &Plan,
    limits: &Limits,
    fail_on: FailOn,
) -> Result<(String, Vec<Edit>), String> {
    let (spec, diags) = spec::parse(text, limits);
    let Some(spec) = spec.filter(|_| {
        diags
            .iter()
            .all(|d| d.severity != crate::diagnostic::Severity::Error)
    }) else {
        return Err("the spec to edit does not read without errors".to_string());
    };
    let edits = edits(plan, &spec);
    let out = apply(text, &spec, &edits)?;
    if is_json(text) && !is_json(&out) {
        return Err(
            "the edited spec is no longer JSON; the spec's layout defeated the editor".to_string(),
        );
    }
    let (parsed, diags) = spec::parse(&out, limits);
    let error = diags
        .iter()
        .find(|d| d.severity == crate::diagnostic::Severity::Error);
    let Some(parsed) = parsed.filter(|_| error.is_none()) else {
        return Err(format!(
            "the edited spec does not read back: {}",
            error.map_or("invalid YAML".to_string(), |d| d.message.clone())
        ));
    };
    let (mut df, gdiags) = graph::build(parsed, &plan.name);
    if let Some(d) = gdiags
        .iter()
        .find(|d| d.severity == crate::diagnostic::Severity::Error)
    {
        return Err(format!("the edited spec is invalid: {}", d.message));
    }
    carries(&df, &edits)?;
    let a = analysis::verdicts(&mut df, fail_on);
    if a.failing() {
        return Err("the edited spec still fails `blazes check`".to_string());
    }
    Ok((out, edits))
}

/// Whether `df`, read back from an edited spec, carries every edit: the planned seal on each
/// source and stream, the planned order on each component. An edit the reader does not see
/// is an error naming it.
pub(crate) fn carries(df: &Dataflow, edits: &[Edit]) -> Result<(), String> {
    let components: HashMap<&str, usize> = df
        .components
        .iter()
        .enumerate()
        .map(|(i, c)| (c.name.as_str(), i))
        .collect();
    let sources: HashMap<&str, usize> = df
        .sources
        .iter()
        .enumerate()
        .map(|(i, s)| (s.name.as_str(), i))
        .collect();
    let sealed_as = |k: crate::label::KeySet, key: &[String]| {
        Label::Seal(k).display(&df.keys) == format!("Seal({})", key.join(", "))
    };
    for e in edits {
        let ok = match e {
            Edit::StreamSeal {
                index,
                from,
                to,
                key,
            } => df
                .streams
                .get(*index)
                .filter(|st| st.from_text == *from && st.to_text == *to)
                .and_then(|st| st.seal)
                .is_some_and(|k| sealed_as(k, key)),
            Edit::Order { component, key } => components
                .get(component.as_str())
                .and_then(|&c| df.components[c].order)
                .is_some_and(|o| match (o, key) {
                    (Order::Global, None) => true,
                    (Order::Keys(k), Some(names)) => {
                        let mut got = df.keys.names(k);
                        got.sort_unstable();
                        got == names.iter().map(String::as_str).collect::<Vec<_>>()
                    }
                    _ => false,
                }),
            Edit::Seal { source, key } => sources
                .get(source.as_str())
                .and_then(|&s| df.sources[s].seal)
                .is_some_and(|k| sealed_as(k, key)),
        };
        if !ok {
            return Err(format!(
                "the edited spec does not carry the planned {}; the spec's layout defeated the editor",
                e.describe()
            ));
        }
    }
    Ok(())
}
