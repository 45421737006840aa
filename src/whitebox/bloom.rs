//! Bloom (the Bud subset the talk uses) as a white box: a small tokenizer and parser with spans
//! of their own (`state do ... end` declarations, `bloom [:name] do ... end` statements `lhs op
//! rhs`), and the rules of the talk and of budlabel over the statements' dependency graph.

use std::collections::{BTreeMap, BTreeSet};

use super::{Derivation, DerivedGate, DerivedPath, TextMap, annotation};
use crate::codes;
use crate::diagnostic::{Diagnostic, Span};

/// Longest Bloom program read, in bytes.
pub const MAX_BLOOM_BYTES: usize = 64 * 1024;

#[derive(Clone, Debug, PartialEq, Eq)]
enum Tok {
    Ident(String),
    Symbol(String),
    Op(&'static str),
    Punct(char),
    Str,
    Num,
    Newline,
}

#[derive(Clone, Debug)]
struct Token {
    tok: Tok,
    /// Byte offset in the program.
    at: usize,
    len: usize,
}

/// A located problem: byte offset in the program and message.
type Problem = (usize, String);

fn tokenize(src: &str) -> Result<Vec<Token>, Problem> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let start = i;
        let push = |out: &mut Vec<Token>, tok, len| {
            out.push(Token {
                tok,
                at: start,
                len,
            })
        };
        match c {
            b'\n' | b';' => {
                push(&mut out, Tok::Newline, 1);
                i += 1;
            }
            b' ' | b'\t' | b'\r' => i += 1,
            b'\\' if b.get(i + 1) == Some(&b'\n') => i += 2,
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'\'' | b'"' => {
                i += 1;
                while i < b.len() && b[i] != c {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                if i >= b.len() {
                    return Err((start, "unterminated string".to_string()));
                }
                i += 1;
                push(&mut out, Tok::Str, i - start);
            }
            b'<' if matches!(b.get(i + 1), Some(b'=' | b'+' | b'-' | b'~')) => {
                let op = match b[i + 1] {
                    b'=' => "<=",
                    b'+' => "<+",
                    b'-' => "<-",
                    _ => "<~",
                };
                push(&mut out, Tok::Op(op), 2);
                i += 2;
            }
            b'=' if b.get(i + 1) == Some(&b'>') => {
                push(&mut out, Tok::Op("=>"), 2);
                i += 2;
            }
            b':' if b
                .get(i + 1)
                .is_some_and(|x| x.is_ascii_alphabetic() || *x == b'_') =>
            {
                i += 1;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                push(
                    &mut out,
                    Tok::Symbol(src[start + 1..i].to_string()),
                    i - start,
                );
            }
            c if c.is_ascii_alphabetic() || c == b'_' || c == b'@' => {
                i += 1;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                if i < b.len() && (b[i] == b'?' || b[i] == b'!') {
                    i += 1;
                }
                push(&mut out, Tok::Ident(src[start..i].to_string()), i - start);
            }
            c if c.is_ascii_digit() => {
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'.' || b[i] == b'_')
                {
                    i += 1;
                }
                push(&mut out, Tok::Num, i - start);
            }
            c if c.is_ascii() => {
                push(&mut out, Tok::Punct(c as char), 1);
                i += 1;
            }
            _ => {
                let ch = src[i..].chars().next().map_or(1, char::len_utf8);
                return Err((start, format!("unexpected character `{}`", &src[i..i + ch])));
            }
        }
    }
    Ok(out)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Input,
    Output,
    Table,
    Scratch,
    Channel,
}

#[derive(Clone, Debug)]
struct Rule {
    lhs: String,
    op: &'static str,
    refs: BTreeSet<String>,
    /// Right operands of `*`: the side that probes the other's state.
    right: BTreeSet<String>,
    nonmono: Option<String>,
    keys: BTreeSet<String>,
    at: usize,
    len: usize,
    line: usize,
}

const NONMONO: &[&str] = &[
    "notin", "group", "argagg", "argmax", "argmin", "reduce", "include?",
];
const JOINS: &[&str] = &[
    "pairs", "rights", "lefts", "matches", "combos", "outer", "flat_map",
];

struct Module {
    colls: BTreeMap<String, (Kind, usize)>,
    rules: Vec<Rule>,
    unsupported: Vec<Problem>,
}

fn line_of(src: &str, at: usize) -> usize {
    src[..at.min(src.len())].matches('\n').count() + 1
}

fn parse(src: &str, toks: &[Token]) -> Result<Module, Problem> {
    let mut m = Module {
        colls: BTreeMap::new(),
        rules: Vec::new(),
        unsupported: Vec::new(),
    };
    let ident = |i: usize| match toks.get(i).map(|t| &t.tok) {
        Some(Tok::Ident(s)) => Some(s.as_str()),
        _ => None,
    };
    // Splits the tokens into lines (outside brackets) and tracks the blocks.
    let mut i = 0;
    let mut section: Vec<(&str, usize)> = Vec::new();
    while i < toks.len() {
        // One logical line: up to a newline outside brackets and `do ... end` blocks.
        let start = i;
        let mut depth: i64 = 0;
        // A rule's `do |x| ... end` block continues it over lines.
        let rule = matches!(toks.get(start).map(|t| &t.tok), Some(Tok::Ident(_)))
            && matches!(toks.get(start + 1).map(|t| &t.tok), Some(Tok::Op(o)) if *o != "=>");
        while i < toks.len() {
            match &toks[i].tok {
                Tok::Punct('(' | '[' | '{') => depth += 1,
                Tok::Punct(')' | ']' | '}') => depth -= 1,
                Tok::Ident(w) if rule && w == "do" => depth += 1,
                Tok::Ident(w) if rule && w == "end" => depth -= 1,
                Tok::Newline if depth <= 0 => break,
                _ => {}
            }
            if depth < 0 {
                return Err((toks[i].at, "unbalanced closing bracket".to_string()));
            }
            i += 1;
        }
        if depth > 0 {
            return Err((
                toks[start].at,
                "this bracket or `do` block is never closed".to_string(),
            ));
        }
        let line = &toks[start..i];
        i += 1;
        if line.is_empty() {
            continue;
        }
        let first = match &line[0].tok {
            Tok::Ident(s) => s.as_str(),
            _ => "",
        };
        let opens = line.iter().any(|t| t.tok == Tok::Ident("do".into()));
        let in_bloom = section.last().is_some_and(|s| s.0 == "bloom");
        let in_state = section.last().is_some_and(|s| s.0 == "state");
        match first {
            "end" if line.len() == 1 => {
                if section.pop().is_none() {
                    return Err((line[0].at, "`end` without a block to close".to_string()));
                }
                continue;
            }
            "module" | "class" => {
                section.push(("module", line[0].at));
                continue;
            }
            "require" => continue,
            "include" if !in_bloom => {
                m.unsupported.push((
                    line[0].at,
                    "`include` of another module (its rules are not read)".to_string(),
                ));
                continue;
            }
            "state" if opens => {
                section.push(("state", line[0].at));
                continue;
            }
            "bloom" if opens => {
                section.push(("bloom", line[0].at));
                continue;
            }
            _ => {}
        }
        if in_state {
            let (kind, name_at) = match first {
                "interface" => {
                    let dir = match line.get(1).map(|t| &t.tok) {
                        Some(Tok::Ident(d)) if d == "input" => Kind::Input,
                        Some(Tok::Ident(d)) if d == "output" => Kind::Output,
                        Some(Tok::Symbol(d)) if d == "input" => Kind::Input,
                        Some(Tok::Symbol(d)) if d == "output" => Kind::Output,
                        _ => {
                            return Err((
                                line[0].at,
                                "`interface` must be followed by `input` or `output`".to_string(),
                            ));
                        }
                    };
                    (dir, 3)
                }
                "table" => (Kind::Table, 1),
                "scratch" => (Kind::Scratch, 1),
                "channel" | "loopback" => (Kind::Channel, 1),
                _ => {
                    m.unsupported
                        .push((line[0].at, format!("the declaration `{first}`")));
                    continue;
                }
            };
            match line.get(name_at).map(|t| &t.tok) {
                Some(Tok::Symbol(n)) => {
                    m.colls.insert(n.clone(), (kind, line[name_at].at));
                }
                _ => {
                    return Err((
                        line[0].at,
                        "a collection declaration needs a `:name`".to_string(),
                    ));
                }
            }
            continue;
        }
        if in_bloom {
            let (Some(lhs), Some(Tok::Op(op))) = (ident(start), line.get(1).map(|t| &t.tok)) else {
                m.unsupported.push((
                    line[0].at,
                    "a statement that is not `collection <op> expression`".to_string(),
                ));
                continue;
            };
            if !matches!(*op, "<=" | "<+" | "<-" | "<~") {
                m.unsupported.push((
                    line[0].at,
                    "a statement that is not `collection <op> expression`".to_string(),
                ));
                continue;
            }
            let mut r = Rule {
                lhs: lhs.to_string(),
                op,
                refs: BTreeSet::new(),
                right: BTreeSet::new(),
                nonmono: None,
                keys: BTreeSet::new(),
                at: line[0].at,
                len: line.last().map_or(1, |t| t.at + t.len - line[0].at),
                line: line_of(src, line[0].at),
            };
            let rhs = &line[2..];
            for (k, t) in rhs.iter().enumerate() {
                if let Tok::Ident(s) = &t.tok {
                    let after_dot = k > 0 && rhs[k - 1].tok == Tok::Punct('.');
                    if !after_dot && m.colls.contains_key(s) {
                        r.refs.insert(s.clone());
                        if k > 0 && rhs[k - 1].tok == Tok::Punct('*') {
                            r.right.insert(s.clone());
                        }
                    }
                    if after_dot && (NONMONO.contains(&s.as_str()) || JOINS.contains(&s.as_str())) {
                        if NONMONO.contains(&s.as_str()) && r.nonmono.is_none() {
                            r.nonmono = Some(s.clone());
                        }
                        // The keys: the symbols of the call's arguments (for `group` and
                        // `argagg`, those of its key list).
                        if rhs.get(k + 1).map(|t| &t.tok) == Some(&Tok::Punct('(')) {
                            let mut d = 0;
                            let mut in_list = 0;
                            let listed =
                                matches!(s.as_str(), "group" | "argagg" | "argmax" | "argmin");
                            for t in &rhs[k + 1..] {
                                match &t.tok {
                                    Tok::Punct('(') => d += 1,
                                    Tok::Punct(')') => {
                                        d -= 1;
                                        if d == 0 {
                                            break;
                                        }
                                    }
                                    Tok::Punct('[') => in_list += 1,
                                    Tok::Punct(']') => in_list -= 1,
                                    Tok::Symbol(k) if !listed || in_list > 0 => {
                                        r.keys.insert(k.clone());
                                    }
                                    _ => {}
                                }
                            }
                        }
                    } else if s == "include?" && r.nonmono.is_none() {
                        r.nonmono = Some(s.clone());
                    }
                }
            }
            m.rules.push(r);
            continue;
        }
        m.unsupported.push((
            line[0].at,
            "code outside `state` and `bloom` blocks".to_string(),
        ));
    }
    if let Some((what, at)) = section.last() {
        return Err((*at, format!("this `{what}` block has no `end`")));
    }
    Ok(m)
}

/// Derives the paths of a component from its Bloom module.
pub fn derive(program: &str, map: &TextMap, file: &str, component: &str) -> Derivation {
    let mut out = Derivation::default();
    // Byte offset in the program to a span in the file.
    let line_starts: Vec<usize> = std::iter::once(0)
        .chain(program.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    let at = |off: usize, len: usize| -> Span {
        let li = line_starts.partition_point(|&s| s <= off).saturating_sub(1);
        let col = program[line_starts[li]..off.min(program.len())]
            .chars()
            .count();
        map.span(li as u64 + 1, col as u64 + 1, len, file)
    };
    let fail = |out: &mut Derivation, (off, msg): Problem| {
        out.failed = true;
        out.diagnostics.push(
            Diagnostic::new(
                &codes::WHITEBOX_SYNTAX,
                format!("the Bloom of component `{component}` does not parse: {msg}"),
            )
            .at(at(off, 1), "here")
            .help("blazes reads a Bud module: `state do ... end` and `bloom do ... end`; see `blazes explain bloom`"),
        );
    };
    if program.len() > MAX_BLOOM_BYTES {
        fail(
            &mut out,
            (
                0,
                format!(
                    "it is {} bytes, more than the {MAX_BLOOM_BYTES} read",
                    program.len()
                ),
            ),
        );
        return out;
    }
    let toks = match tokenize(program) {
        Ok(t) => t,
        Err(p) => {
            fail(&mut out, p);
            return out;
        }
    };
    let m = match parse(program, &toks) {
        Ok(m) => m,
        Err(p) => {
            fail(&mut out, p);
            return out;
        }
    };
    for (off, what) in &m.unsupported {
        out.diagnostics.push(
            Diagnostic::new(
                &codes::WHITEBOX_UNSUPPORTED,
                format!(
                    "the Bloom of component `{component}` has {what}, which blazes does not analyse"
                ),
            )
            .at(at(*off, 1), "not analysed")
            .help(
                "declare the paths by hand in `paths:` if this matters; see `blazes explain bloom`",
            ),
        );
    }
    for r in &m.rules {
        if !m.colls.contains_key(&r.lhs) {
            out.failed = true;
            out.diagnostics.push(
                Diagnostic::new(
                    &codes::WHITEBOX_SYNTAX,
                    format!("the Bloom of component `{component}` derives `{}`, which its `state` block does not declare", r.lhs),
                )
                .at(at(r.at, r.lhs.len()), "undeclared collection")
                .help("declare it in `state do ... end` (`table`, `scratch`, `interface output`)"),
            );
        }
    }
    if out.failed {
        return out;
    }
    // Which collections each one feeds, directly.
    let mut feeds: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for r in &m.rules {
        for x in &r.refs {
            feeds.entry(x.as_str()).or_default().insert(r.lhs.as_str());
        }
    }
    let reach = |from: &str| -> BTreeSet<String> {
        let mut seen: BTreeSet<String> = BTreeSet::new();
        let mut todo = vec![from.to_string()];
        seen.insert(from.to_string());
        while let Some(x) = todo.pop() {
            for y in feeds.get(x.as_str()).into_iter().flatten() {
                if seen.insert(y.to_string()) {
                    todo.push(y.to_string());
                }
            }
        }
        seen
    };
    // Collections whose contents depend on order: deleted from, or computed by a
    // non-monotone operator, or derived from one that is.
    let mut nonmono: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    loop {
        let mut changed = false;
        for r in &m.rules {
            let cause = r.op == "<-"
                || r.nonmono.is_some()
                || r.refs.iter().any(|x| nonmono.contains_key(x));
            if cause && !nonmono.contains_key(&r.lhs) {
                let mut g = r.keys.clone();
                for x in &r.refs {
                    if let Some(k) = nonmono.get(x)
                        && g.is_empty()
                    {
                        g = k.clone();
                    }
                }
                nonmono.insert(r.lhs.clone(), g);
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    let kind = |c: &str| m.colls.get(c).map(|k| k.0);
    let inputs: Vec<&String> = m
        .colls
        .iter()
        .filter(|c| c.1.0 == Kind::Input)
        .map(|c| c.0)
        .collect();
    let outputs: Vec<&String> = m
        .colls
        .iter()
        .filter(|c| c.1.0 == Kind::Output)
        .map(|c| c.0)
        .collect();
    let reached: BTreeMap<&str, BTreeSet<String>> =
        m.colls.keys().map(|c| (c.as_str(), reach(c))).collect();
    for i in &inputs {
        for o in &outputs {
            let from_i = &reached[i.as_str()];
            if !from_i.contains(o.as_str()) {
                continue;
            }
            let on: Vec<&Rule> = m
                .rules
                .iter()
                .filter(|r| {
                    r.refs.iter().any(|x| from_i.contains(x))
                        && reached
                            .get(r.lhs.as_str())
                            .is_some_and(|s| s.contains(o.as_str()))
                })
                .collect();
            let mut order = false;
            let mut writes = false;
            let mut star = false;
            let mut gate = BTreeSet::new();
            let mut reasons = Vec::new();
            let mut span_at = on.first().map_or((0, 1), |r| (r.at, r.len));
            for r in &on {
                let mut sensitive = None;
                if r.op == "<-" {
                    sensitive = Some(format!("`{} <-` deletes from `{}`", r.lhs, r.lhs));
                } else if let Some(n) = &r.nonmono {
                    sensitive = Some(format!("`{n}` is not monotone"));
                } else if let Some(z) = r.refs.iter().find(|z| nonmono.contains_key(*z)) {
                    sensitive = Some(format!("it reads `{z}`, whose contents depend on order"));
                }
                if let Some(why) = sensitive {
                    order = true;
                    let keys = if r.keys.is_empty() {
                        r.refs
                            .iter()
                            .find_map(|z| nonmono.get(z))
                            .cloned()
                            .unwrap_or_default()
                    } else {
                        r.keys.clone()
                    };
                    if keys.is_empty() {
                        star = true;
                    }
                    gate.extend(keys);
                    reasons.push(format!("{why} (line {})", map.file_line(r.line as u64)));
                    span_at = (r.at, r.len);
                }
                for x in r.refs.iter().filter(|x| from_i.contains(*x)) {
                    if kind(x) == Some(Kind::Table) && !r.right.contains(x) {
                        writes = true;
                        reasons.push(format!(
                            "`{i}` is kept in table `{x}`, which `{}` reads (line {})",
                            r.lhs,
                            map.file_line(r.line as u64)
                        ));
                    }
                }
                if r.op == "<~" {
                    reasons.push(format!(
                        "`{} <~` sends over an asynchronous channel (line {})",
                        r.lhs,
                        map.file_line(r.line as u64)
                    ));
                }
            }
            let gate = order.then(|| {
                if star || gate.is_empty() {
                    DerivedGate::Star
                } else {
                    DerivedGate::Keys(gate.into_iter().collect())
                }
            });
            let reason = if reasons.is_empty() {
                "monotone rules that keep no state on the way".to_string()
            } else {
                let mut seen = BTreeSet::new();
                reasons.retain(|r| seen.insert(r.clone()));
                reasons.join("; ")
            };
            out.paths.push(DerivedPath {
                from: (*i).clone(),
                to: (*o).clone(),
                annotation: annotation(order, writes),
                gate,
                reason,
                span: at(span_at.0, span_at.1),
            });
        }
    }
    out
}
