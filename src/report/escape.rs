//! Text from a spec made safe to print on a terminal: every control character that a terminal
//! would act on is written visibly instead (`\e[31m`, `\x00`, `\x7f`, `\u{9b}`), so a spec
//! from a pull request cannot colour, retitle, move the cursor of or otherwise drive the
//! terminal of whoever reads its report. Every human writer (the check and plan reports,
//! GitHub annotations, the simulator's report) goes through this module.
//!
//! Escaped: the C0 controls but the line break and the tab (`\x01`, ESC as `\e`), DEL
//! (`\x7f`), a carriage return not followed by a line feed (`\r`: it would overwrite the
//! line), the C1 controls (`\u{9b}`, the one-character CSI) and the bidirectional overrides
//! and isolates (`\u{202e}`), which reorder what a reader sees. JSON and SARIF need none of
//! this: their strings are escaped by serde.

use std::borrow::Cow;

/// Whether `c` is written escaped when it is not a line break or a tab.
fn is_unsafe(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

fn push_escaped(out: &mut String, c: char) {
    match c {
        '\u{1b}' => out.push_str("\\e"),
        '\r' => out.push_str("\\r"),
        '\n' => out.push_str("\\n"),
        '\t' => out.push_str("\\t"),
        c if (c as u32) < 0x80 => out.push_str(&format!("\\x{:02x}", c as u32)),
        c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
    }
}

/// `text` with every unsafe character escaped; line breaks (`\n`, `\r\n`) and tabs are kept,
/// for multi-line text: a snippet of the spec, a whole report.
///
/// ```
/// use blazes::report::escape::visible;
/// assert_eq!(visible("a\u{1b}[31mred\u{7}\n"), "a\\e[31mred\\x07\n");
/// assert_eq!(visible("plain\r\n"), "plain\r\n");
/// ```
pub fn visible(text: &str) -> Cow<'_, str> {
    escape(text, false)
}

/// `text` as one line: [`visible`], and line breaks and tabs escaped too (`\n`, `\t`), for a
/// message, a label, a name or a path, which must not start a line of their own.
///
/// ```
/// use blazes::report::escape::one_line;
/// assert_eq!(one_line("a\nb\u{9b}2J"), "a\\nb\\u{9b}2J");
/// ```
pub fn one_line(text: &str) -> Cow<'_, str> {
    escape(text, true)
}

fn needs_escape(text: &str, one_line: bool, i: usize, c: char) -> bool {
    match c {
        '\n' | '\t' => one_line,
        '\r' => one_line || text.as_bytes().get(i + 1) != Some(&b'\n'),
        c => is_unsafe(c),
    }
}

fn escape(text: &str, one_line: bool) -> Cow<'_, str> {
    let Some(first) = text
        .char_indices()
        .position(|(i, c)| needs_escape(text, one_line, i, c))
    else {
        return Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len() + 16);
    for (n, (i, c)) in text.char_indices().enumerate() {
        if n >= first && needs_escape(text, one_line, i, c) {
            push_escaped(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// A spec's text with its unsafe characters escaped ([`visible`], but a lone carriage return
/// becomes a line feed: it ends a line of the spec, and a snippet draws it as one), and the way from an offset
/// of the original text to the same place in the escaped one, so that a snippet can be drawn
/// from the escaped text under the original diagnostics' spans.
#[derive(Debug)]
pub struct Escaped<'a> {
    pub text: Cow<'a, str>,
    /// One per escaped character, sorted: its offset in the original text, where its escape
    /// starts and ends in the escaped text, and the bytes the escapes up to and including it add.
    /// Empty when nothing was escaped.
    shifts: Vec<Shift>,
}

#[derive(Clone, Copy, Debug)]
struct Shift {
    original: usize,
    escaped: usize,
    /// Where the escape ends in the escaped text.
    end: usize,
    extra: usize,
}

impl<'a> Escaped<'a> {
    pub fn new(text: &'a str) -> Self {
        let mut shifts = Vec::new();
        let mut extra = 0;
        let mut out: Option<String> = None;
        for (i, c) in text.char_indices() {
            if c == '\r' && text.as_bytes().get(i + 1) != Some(&b'\n') {
                // A lone carriage return ends a line of the spec (YAML and the line index
                // count it): a line feed keeps the line, and the offsets, where they were.
                out.get_or_insert_with(|| text[..i].to_string()).push('\n');
                continue;
            }
            if needs_escape(text, false, i, c) {
                let o = out.get_or_insert_with(|| {
                    let mut s = String::with_capacity(text.len() + 16);
                    s.push_str(&text[..i]);
                    s
                });
                let escaped = o.len();
                push_escaped(o, c);
                extra += o.len() - escaped - c.len_utf8();
                shifts.push(Shift {
                    original: i,
                    escaped,
                    end: o.len(),
                    extra,
                });
            } else if let Some(o) = &mut out {
                o.push(c);
            }
        }
        Escaped {
            text: out.map_or(Cow::Borrowed(text), Cow::Owned),
            shifts,
        }
    }

    /// Whether some character was escaped (else the text is the original).
    pub fn changed(&self) -> bool {
        !self.shifts.is_empty()
    }

    /// The offset in the escaped text of the original offset `offset`: an escaped character
    /// starts where its escape starts.
    pub fn offset(&self, offset: usize) -> usize {
        let before = self.shifts.partition_point(|s| s.original < offset);
        offset + before.checked_sub(1).map_or(0, |k| self.shifts[k].extra)
    }

    /// The original offset of an offset of the escaped text (a place inside an escape is its
    /// character); for columns, which count the spec's own characters.
    pub fn original(&self, offset: usize) -> usize {
        let k = self.shifts.partition_point(|s| s.escaped <= offset);
        let Some(last) = k.checked_sub(1).map(|k| self.shifts[k]) else {
            return offset;
        };
        if offset < last.end {
            last.original
        } else {
            offset - last.extra
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_what_a_terminal_acts_on() {
        assert_eq!(visible("\u{1b}]0;pwned\u{7}"), "\\e]0;pwned\\x07");
        assert_eq!(visible("nul\0del\u{7f}"), "nul\\x00del\\x7f");
        assert_eq!(visible("csi\u{9b}31m"), "csi\\u{9b}31m");
        assert_eq!(visible("bidi\u{202e}x"), "bidi\\u{202e}x");
        assert_eq!(visible("over\rwrite"), "over\\rwrite");
        assert_eq!(visible("tab\tand\r\nline\n"), "tab\tand\r\nline\n");
        assert_eq!(one_line("tab\tand\r\nline"), "tab\\tand\\r\\nline");
        // Negative control: ordinary text, including non-ASCII, is left alone and borrowed.
        assert!(matches!(visible("Zürich → 東京"), Cow::Borrowed(_)));
    }

    #[test]
    fn offsets_map_both_ways() {
        let text = "a\u{1b}b\0\u{9b}c";
        let e = Escaped::new(text);
        assert_eq!(e.text, "a\\eb\\x00\\u{9b}c");
        assert!(e.changed());
        let c = text.find('c').unwrap();
        assert_eq!(&e.text[e.offset(c)..], "c");
        let b = text.find('b').unwrap();
        assert_eq!(&e.text[e.offset(b)..e.offset(b) + 1], "b");
        assert_eq!(&e.text[e.offset(1)..e.offset(1) + 2], "\\e");
        for (i, _) in text.char_indices() {
            assert_eq!(e.original(e.offset(i)), i, "offset {i}");
        }
        assert_eq!(e.offset(text.len()), e.text.len());
        // A lone carriage return ends a line: the same offsets, nothing escaped.
        let mac = Escaped::new("a\rb\r\nc");
        assert_eq!(mac.text, "a\nb\r\nc");
        assert_eq!(mac.offset(2), 2);
        let plain = Escaped::new("plain");
        assert!(!plain.changed());
        assert_eq!(plain.offset(3), 3);
    }
}
