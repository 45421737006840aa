//! JSON specs read at parser speed: the same trees as the YAML reader ([`super::yaml`]) gives,
//! with the same spans, from a reader that only knows JSON.
//!
//! Why a second reader: every JSON document is YAML, so the YAML reader reads JSON specs
//! (importers and `blazes gen --format json` write them), but at the speed of a YAML parser,
//! several times slower than a JSON one. Why it may give up: errors stay the YAML reader's.
//! On anything this reader does not accept (a syntax error, a comment, a limit reached, a
//! string escape it does not know) it returns [`GaveUp`] and the caller reads the text
//! again with the YAML reader, which either reads it (what YAML accepts beyond JSON) or
//! reports the located error and the S011 of a limit as it always did. So this reader must
//! only ever accept what the YAML reader reads to the same tree: it gives up early rather
//! than late (a limit is reached here no later than there), and `tests/json_reader.rs`
//! compares the two on every shipped spec, on generated ones and on mutated JSON.
//!
//! Spans are the YAML reader's: a scalar spans its text (a string with its quotes), a
//! mapping or a list the one byte of its opening bracket.
//!
//! Must not know: the spec format (what the keys mean), or how errors are worded.

use super::yaml::{Consumer, Limits, Node, Take, Value};
use crate::diagnostic::Span;

/// This reader does not accept the text; read it with the YAML reader instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GaveUp;

type Parsed<T> = Result<T, GaveUp>;

/// Whether `text` looks like a JSON document: its first byte other than whitespace opens an
/// object or an array. (A YAML flow mapping does too; this reader then gives up at its first
/// unquoted key, before it has done much.)
pub fn looks_like_json(text: &str) -> bool {
    matches!(
        text.bytes()
            .find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r')),
        Some(b'{' | b'[')
    )
}

/// Reads `text` as one tree, like [`super::yaml::parse`].
pub fn parse(text: &str, limits: &Limits) -> Parsed<Node> {
    let mut p = Parser::new(text, 0, limits);
    p.ws();
    let root = p.value()?;
    p.finish()?;
    Ok(root)
}

/// Streams `text` to `consumer` like [`super::yaml::read`]: the root mapping key by key, the
/// values entry by entry or item by item as the consumer asks. Returns the root's span. On
/// [`GaveUp`], what the consumer was given must be discarded.
pub fn read<C: Consumer>(
    text: &str,
    shift: usize,
    limits: &Limits,
    consumer: &mut C,
) -> Parsed<Span> {
    let mut p = Parser::new(text, shift, limits);
    p.ws();
    if p.peek() != Some(b'{') {
        let root = p.value()?;
        p.finish()?;
        let span = root.span;
        consumer.root(root);
        return Ok(span);
    }
    let span = p.open(b'{')?;
    let mut first = true;
    while p.next_entry(b'}', &mut first)? {
        let key = p.key()?;
        match consumer.key(key) {
            Take::Skip => p.skip()?,
            Take::Whole => consumer.value(p.value()?),
            Take::Entries if p.peek() == Some(b'{') => {
                p.open(b'{')?;
                let mut first = true;
                while p.next_entry(b'}', &mut first)? {
                    let key = p.key()?;
                    if consumer.entry_key(key) {
                        consumer.entry_value(p.value()?);
                    } else {
                        p.skip()?;
                    }
                }
                p.close();
            }
            Take::Items if p.peek() == Some(b'[') => {
                p.open(b'[')?;
                let mut first = true;
                while p.next_entry(b']', &mut first)? {
                    if consumer.want_item() {
                        consumer.item(p.value()?);
                    } else {
                        p.skip()?;
                    }
                }
                p.close();
            }
            Take::Entries | Take::Items => consumer.value(p.value()?),
        }
        consumer.end();
    }
    p.close();
    p.finish()?;
    Ok(span)
}

struct Parser<'t> {
    text: &'t str,
    bytes: &'t [u8],
    pos: usize,
    shift: usize,
    depth: usize,
    nodes: usize,
    max_depth: usize,
    max_nodes: usize,
}

impl<'t> Parser<'t> {
    fn new(text: &'t str, shift: usize, limits: &Limits) -> Self {
        Parser {
            text,
            bytes: text.as_bytes(),
            pos: 0,
            shift,
            depth: 0,
            nodes: 0,
            // One level short of the YAML reader's limits: at the limit itself, that reader
            // decides (and words the S011).
            max_depth: limits.max_depth.saturating_sub(1),
            max_nodes: limits.max_nodes.saturating_sub(1),
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    fn eat(&mut self, b: u8) -> Parsed<()> {
        if self.peek() == Some(b) {
            self.pos += 1;
            Ok(())
        } else {
            Err(GaveUp)
        }
    }

    fn span(&self, start: usize) -> Span {
        Span::new(start + self.shift, self.pos - start)
    }

    fn count(&mut self) -> Parsed<()> {
        self.nodes += 1;
        if self.nodes > self.max_nodes {
            return Err(GaveUp);
        }
        Ok(())
    }

    /// Opens a collection at `{` or `[`: its span, one level deeper.
    fn open(&mut self, bracket: u8) -> Parsed<Span> {
        self.count()?;
        self.depth += 1;
        if self.depth > self.max_depth {
            return Err(GaveUp);
        }
        let start = self.pos;
        self.eat(bracket)?;
        let span = self.span(start);
        self.ws();
        Ok(span)
    }

    /// A collection's closing bracket was consumed by [`Self::next_entry`].
    fn close(&mut self) {
        self.depth -= 1;
    }

    /// Whether another entry or item of the open collection follows (then at it), or its
    /// closing bracket `close` was consumed.
    fn next_entry(&mut self, close: u8, first: &mut bool) -> Parsed<bool> {
        self.ws();
        if self.peek() == Some(close) {
            self.pos += 1;
            self.ws();
            return Ok(false);
        }
        if !std::mem::replace(first, false) {
            self.eat(b',')?;
            self.ws();
        }
        Ok(true)
    }

    /// A key and its colon; the value follows.
    fn key(&mut self) -> Parsed<Node> {
        if self.peek() != Some(b'"') {
            return Err(GaveUp);
        }
        let key = self.value()?;
        self.ws();
        self.eat(b':')?;
        self.ws();
        Ok(key)
    }

    /// Nothing but whitespace may follow the document.
    fn finish(&mut self) -> Parsed<()> {
        self.ws();
        if self.pos == self.bytes.len() {
            Ok(())
        } else {
            Err(GaveUp)
        }
    }

    /// A value not kept: read (so that its syntax and the limits are checked) and dropped.
    fn skip(&mut self) -> Parsed<()> {
        self.value().map(drop)
    }

    fn value(&mut self) -> Parsed<Node> {
        let start = self.pos;
        let value = match self.peek().ok_or(GaveUp)? {
            b'{' => {
                let span = self.open(b'{')?;
                let mut entries = Vec::new();
                let mut first = true;
                while self.next_entry(b'}', &mut first)? {
                    let key = self.key()?;
                    let value = self.value()?;
                    entries.push((key, value));
                }
                self.close();
                return Ok(Node {
                    value: Value::Map(entries),
                    span,
                });
            }
            b'[' => {
                let span = self.open(b'[')?;
                let mut items = Vec::new();
                let mut first = true;
                while self.next_entry(b']', &mut first)? {
                    items.push(self.value()?);
                }
                self.close();
                return Ok(Node {
                    value: Value::Seq(items),
                    span,
                });
            }
            b'"' => Value::Str(self.string()?),
            b't' => self.word("true", Value::Bool(true))?,
            b'f' => self.word("false", Value::Bool(false))?,
            b'n' => self.word("null", Value::Null)?,
            b'-' | b'0'..=b'9' => self.number()?,
            _ => return Err(GaveUp),
        };
        self.count()?;
        let span = self.span(start);
        self.ws();
        Ok(Node { value, span })
    }

    fn word(&mut self, word: &str, value: Value) -> Parsed<Value> {
        if self.bytes[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            Ok(value)
        } else {
            Err(GaveUp)
        }
    }

    /// A number as YAML 1.2's core schema reads it: an integer when it has neither fraction
    /// nor exponent and fits 64 bits, otherwise a float.
    fn number(&mut self) -> Parsed<Value> {
        let start = self.pos;
        let digits = |p: &mut Self| {
            let from = p.pos;
            while let Some(b'0'..=b'9') = p.peek() {
                p.pos += 1;
            }
            p.pos - from
        };
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        let int_start = self.pos;
        let n = digits(self);
        if n == 0 || (n > 1 && self.bytes[int_start] == b'0') {
            return Err(GaveUp);
        }
        let mut integer = true;
        if self.peek() == Some(b'.') {
            self.pos += 1;
            if digits(self) == 0 {
                return Err(GaveUp);
            }
            integer = false;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if digits(self) == 0 {
                return Err(GaveUp);
            }
            integer = false;
        }
        let s = &self.text[start..self.pos];
        if integer {
            if let Ok(i) = s.parse::<i64>() {
                return Ok(Value::Int(i.into()));
            }
            if let Ok(u) = s.parse::<u64>() {
                return Ok(Value::Int(u.into()));
            }
        }
        match s.parse::<f64>() {
            Ok(f) if f.is_finite() => Ok(Value::Float(f)),
            // Out of range: what YAML makes of it is YAML's to say.
            _ => Err(GaveUp),
        }
    }

    /// A string at its opening quote, unescaped.
    fn string(&mut self) -> Parsed<String> {
        self.pos += 1;
        let start = self.pos;
        // The common case, no escape: one slice of the text.
        loop {
            match self.peek().ok_or(GaveUp)? {
                b'"' => {
                    let s = self.text[start..self.pos].to_owned();
                    self.pos += 1;
                    return Ok(s);
                }
                b'\\' => break,
                // Control characters must be escaped in JSON (YAML folds raw line breaks).
                0..=0x1f => return Err(GaveUp),
                _ => self.pos += 1,
            }
        }
        let mut out = String::from(&self.text[start..self.pos]);
        loop {
            let run = self.pos;
            while let Some(b) = self.peek() {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.pos += 1;
            }
            out.push_str(&self.text[run..self.pos]);
            match self.peek().ok_or(GaveUp)? {
                b'"' => {
                    self.pos += 1;
                    return Ok(out);
                }
                b'\\' => {
                    self.pos += 1;
                    let e = self.peek().ok_or(GaveUp)?;
                    self.pos += 1;
                    out.push(match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => self.unicode()?,
                        _ => return Err(GaveUp),
                    });
                }
                _ => return Err(GaveUp),
            }
        }
    }

    /// The character of a `\u` escape (after the `u`), joining a surrogate pair.
    fn unicode(&mut self) -> Parsed<char> {
        let hi = self.hex4()?;
        let code = match hi {
            0xD800..=0xDBFF => {
                if !self.bytes[self.pos..].starts_with(b"\\u") {
                    return Err(GaveUp);
                }
                self.pos += 2;
                let lo = self.hex4()?;
                if !(0xDC00..=0xDFFF).contains(&lo) {
                    return Err(GaveUp);
                }
                0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
            }
            0xDC00..=0xDFFF => return Err(GaveUp),
            c => c,
        };
        char::from_u32(code).ok_or(GaveUp)
    }

    fn hex4(&mut self) -> Parsed<u32> {
        let h = self.bytes.get(self.pos..self.pos + 4).ok_or(GaveUp)?;
        let s = std::str::from_utf8(h).map_err(|_| GaveUp)?;
        let v = u32::from_str_radix(s, 16).map_err(|_| GaveUp)?;
        if !h.iter().all(u8::is_ascii_hexdigit) {
            return Err(GaveUp);
        }
        self.pos += 4;
        Ok(v)
    }
}

/// Why a tree cannot be written as JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unwritable {
    /// A mapping key that is not a string: JSON keys are strings, and writing `1` as `"1"`
    /// would change the tree.
    Key(Span),
    /// A float that is infinite or not a number.
    Float(Span),
}

/// Appends `node` to `out` as compact JSON, keys in their order, so that [`parse`] reads the
/// same tree back (spans aside).
pub fn write(node: &Node, out: &mut String) -> Result<(), Unwritable> {
    match &node.value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) => {
            use std::fmt::Write;
            let _ = write!(out, "{i}");
        }
        // `{:?}` keeps a fraction (`1500.0`), so that the float is not read back as an integer.
        Value::Float(f) if f.is_finite() => {
            use std::fmt::Write;
            let _ = write!(out, "{f:?}");
        }
        Value::Float(_) => return Err(Unwritable::Float(node.span)),
        Value::Str(s) => write_str(s, out),
        Value::Seq(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write(item, out)?;
            }
            out.push(']');
        }
        Value::Map(entries) => {
            out.push('{');
            for (i, (k, v)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_key(k, out)?;
                write(v, out)?;
            }
            out.push('}');
        }
    }
    Ok(())
}

/// Appends a mapping key and its colon.
pub fn write_key(key: &Node, out: &mut String) -> Result<(), Unwritable> {
    let Some(s) = key.as_str() else {
        return Err(Unwritable::Key(key.span));
    };
    write_str(s, out);
    out.push_str(": ");
    Ok(())
}

fn write_str(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                use std::fmt::Write;
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}
