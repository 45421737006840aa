//! The YAML parser's errors in the words of a spec. The parser speaks of its own states
//! ("while parsing a block collection, did not find expected '-' indicator"); users wrote lists,
//! fields and brackets, and need to know which line to fix and how. Each error the parser can
//! give for a hand-written spec is described from the text around it (the indentation of the
//! lines above, the bracket left open); anything else keeps the parser's wording with its
//! jargon translated.

use serde_saphyr::granit_parser::ErrorKind;

use crate::codes;
use crate::diagnostic::{Diagnostic, LineIndex, Span};

/// What a line of the spec starts with.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Start {
    /// `- ...`: a list item.
    Item,
    /// `key: ...` (the key as written).
    Field(String),
    /// Anything else: text that is neither.
    Other(String),
}

/// One line of the spec, as the indentation rules see it.
#[derive(Clone, Debug)]
struct Line {
    /// 1-based.
    number: usize,
    /// Byte offset of the first character after the indentation.
    content: usize,
    /// Leading spaces.
    indent: usize,
    start: Start,
}

impl Line {
    fn at(text: &str, index: &LineIndex, number: usize) -> Line {
        let begin = index.line_start(number - 1, text);
        let end = text[begin..]
            .find(['\n', '\r'])
            .map_or(text.len(), |i| begin + i);
        let line = text[begin..end].trim_end_matches('\r');
        let body = line.trim_start_matches(' ');
        let indent = line.len() - body.len();
        let start = if body == "-" || body.starts_with("- ") {
            Start::Item
        } else {
            match field_key(body) {
                Some(k) => Start::Field(k.to_string()),
                None => Start::Other(shorten(body)),
            }
        };
        Line {
            number,
            content: begin + indent,
            indent,
            start,
        }
    }

    /// Blank or a comment: not part of the structure.
    fn is_blank(text: &str, index: &LineIndex, number: usize) -> bool {
        let begin = index.line_start(number - 1, text);
        let rest = &text[begin..];
        let line = rest.find(['\n', '\r']).map_or(rest, |i| &rest[..i]).trim();
        line.is_empty() || line.starts_with('#')
    }

    /// How the line is named in a message: "`paths:`", "this list item", "`x`".
    fn what(&self) -> String {
        match &self.start {
            Start::Item => "this list item".to_string(),
            Start::Field(k) => format!("`{k}:`"),
            Start::Other(t) => format!("`{t}`"),
        }
    }

    fn column(&self) -> usize {
        self.indent + 1
    }

    /// The span of the line's first character (the `-` of an item, a key's first letter).
    fn first(&self, text: &str) -> Span {
        Span::char_at(text, self.content)
    }
}

/// The key of `key: value` (or `key:` at the end of the line), when the text starts with one.
fn field_key(body: &str) -> Option<&str> {
    if body.starts_with(['"', '\'', '[', '{', '#', '&', '*', '!', '|', '>']) {
        return None;
    }
    let colon = body
        .char_indices()
        .find(|&(i, c)| c == ':' && body[i + 1..].chars().next().is_none_or(char::is_whitespace))?
        .0;
    Some(body[..colon].trim_end()).filter(|k| !k.is_empty())
}

/// At most 30 characters of what the user wrote, for quoting in a message.
fn shorten(s: &str) -> String {
    let s = s.trim();
    if s.chars().count() > 30 {
        format!("{}…", s.chars().take(29).collect::<String>())
    } else {
        s.to_string()
    }
}

/// The lines above `number` that carry structure, nearest first.
fn above<'a>(
    text: &'a str,
    index: &'a LineIndex,
    number: usize,
) -> impl Iterator<Item = Line> + 'a {
    (1..number)
        .rev()
        .filter(move |&n| !Line::is_blank(text, index, n))
        .map(move |n| Line::at(text, index, n))
}

/// A bracket of a `[...]` list or `{...}` mapping, open where the parser stopped.
#[derive(Clone, Copy, Debug)]
struct Open {
    bracket: char,
    offset: usize,
}

/// The `[` and `{` still open at `end`, outermost first. A small scanner, not a parser: it
/// knows where a bracket or a quote can start a value, and skips quoted strings, comments and
/// block scalars (`|`, `>`), which is what a hand-written spec needs.
fn open_brackets(text: &str, end: usize) -> Vec<Open> {
    let bytes = text.as_bytes();
    let end = end.min(bytes.len());
    let mut stack: Vec<Open> = Vec::new();
    // Whether a value can start here: after indentation, `- `, `: `, `[`, `{` or `,`.
    let mut value_start = true;
    let mut i = 0;
    let mut line_indent = 0;
    let mut at_line_start = true;
    while i < end {
        let c = bytes[i];
        if at_line_start {
            let spaces = bytes[i..].iter().take_while(|&&b| b == b' ').count();
            line_indent = spaces;
            i += spaces;
            at_line_start = false;
            value_start = true;
            continue;
        }
        match c {
            b'\n' | b'\r' => {
                at_line_start = true;
                i += 1;
                continue;
            }
            b'#' if i == 0 || matches!(bytes[i - 1], b' ' | b'\t' | b'\n' | b'\r') => {
                i = text[i..].find(['\n', '\r']).map_or(bytes.len(), |n| i + n);
                continue;
            }
            b'"' | b'\'' if value_start => {
                let mut j = i + 1;
                while j < bytes.len() {
                    match bytes[j] {
                        b'\\' if c == b'"' => j += 1,
                        b'\'' if c == b'\'' && bytes.get(j + 1) == Some(&b'\'') => j += 1,
                        b if b == c => break,
                        _ => {}
                    }
                    j += 1;
                }
                i = j + 1;
                value_start = false;
                continue;
            }
            b'|' | b'>' if value_start && stack.is_empty() => {
                // A block scalar: the lines indented deeper than this one are its text.
                let mut j = text[i..].find('\n').map_or(bytes.len(), |n| i + n + 1);
                while j < bytes.len() {
                    let rest = &text[j..];
                    let line = rest.find('\n').map_or(rest, |n| &rest[..n]);
                    let indent = line.len() - line.trim_start_matches(' ').len();
                    if !line.trim().is_empty() && indent <= line_indent {
                        break;
                    }
                    j += line.len() + 1;
                }
                i = j.min(bytes.len());
                at_line_start = true;
                continue;
            }
            b'[' | b'{' if value_start || !stack.is_empty() => {
                stack.push(Open {
                    bracket: c as char,
                    offset: i,
                });
                value_start = true;
            }
            b']' | b'}' if !stack.is_empty() => {
                stack.pop();
                value_start = false;
            }
            b',' if !stack.is_empty() => value_start = true,
            b':' if bytes.get(i + 1).is_none_or(|b| b.is_ascii_whitespace()) => value_start = true,
            b'-' | b'?'
                if value_start && bytes.get(i + 1).is_none_or(|b| b.is_ascii_whitespace()) => {}
            b' ' | b'\t' => {}
            _ => value_start = false,
        }
        i += 1;
    }
    stack
}

fn closing(open: char) -> char {
    if open == '[' { ']' } else { '}' }
}

fn collection(open: char) -> &'static str {
    if open == '[' { "list" } else { "mapping" }
}

fn syntax(message: String) -> Diagnostic {
    Diagnostic::new(&codes::YAML_SYNTAX, message)
}

/// A bracket opened on an earlier line and still open where the parser stopped: the usual
/// cause of the errors the parser reports further down.
fn unclosed(text: &str, index: &LineIndex, offset: usize) -> Option<Diagnostic> {
    let (here, _) = index.line_col(text, offset);
    // The innermost bracket open here that is never closed, or was opened on an earlier line
    // (specs write brackets on one line): one opened and closed on this line is not the cause.
    let at_end: Vec<usize> = open_brackets(text, text.len())
        .iter()
        .map(|o| o.offset)
        .collect();
    let open = *open_brackets(text, offset)
        .iter()
        .rev()
        .find(|o| at_end.contains(&o.offset) || index.line_col(text, o.offset).0 < here)?;
    let (line, col) = index.line_col(text, open.offset);
    let close = closing(open.bracket);
    let what = collection(open.bracket);
    let d = syntax(format!(
        "the `{}` {what} opened on line {line}, column {col} is not closed, so what follows it is read as part of it",
        open.bracket
    ))
    .at(Span::char_at(text, offset), format!("still inside the `{}`", open.bracket))
    .related(Span::new(open.offset, 1), "opened here");
    Some(if here > line {
        d.help(format!(
            "add the missing `{close}` where the {what} ends (on line {line} if it is written on one line)"
        ))
    } else {
        d.help(format!("add the missing `{close}` where the {what} ends"))
    })
}

/// The lines above that a misindented line could belong with: the nearest field or item
/// indented deeper, and the nearest indented less.
fn neighbours(text: &str, index: &LineIndex, line: &Line) -> (Option<Line>, Option<Line>) {
    let mut deeper = None;
    let mut shallower = None;
    for l in above(text, index, line.number) {
        if matches!(l.start, Start::Other(_)) {
            continue;
        }
        if l.indent > line.indent && deeper.is_none() && shallower.is_none() {
            deeper = Some(l);
        } else if l.indent < line.indent {
            shallower = Some(l);
            break;
        }
    }
    (shallower, deeper)
}

/// An error about indentation, told from the line the parser stopped on and the lines above.
fn indentation(text: &str, index: &LineIndex, offset: usize, in_list: bool) -> Diagnostic {
    let (number, _) = index.line_col(text, offset);
    let line = Line::at(text, index, number);
    let first = line.first(text);
    let col = line.column();
    if line.start == Start::Item {
        let item = above(text, index, number).find(|l| l.start == Start::Item);
        return match item {
            Some(prev) if prev.indent != line.indent => syntax(format!(
                "this list item starts at column {col}, but the items of the list above start at column {}",
                prev.column()
            ))
            .at(first, "list item here")
            .related(prev.first(text), format!("the list's items start at column {}", prev.column()))
            .help(format!(
                "items of one list start in the same column: indent this `-` like the one on line {}",
                prev.number
            )),
            _ => syntax(format!(
                "a list item (`- `) starts at column {col} where the lines around it are fields (`name: value`)"
            ))
            .at(first, "list item here")
            .help("indent the list under the field it belongs to, or write this line as `name: value`"),
        };
    }
    let what = line.what();
    if in_list {
        // The parser is inside a list and wanted the next `- ` item.
        if let Some(item) = above(text, index, number).find(|l| l.start == Start::Item) {
            let body = text[item.content + 1..]
                .find(|c: char| c != ' ')
                .map_or(item.indent + 2, |n| item.indent + 1 + n);
            return if item.indent == line.indent {
                syntax(format!(
                    "{what} starts at column {col}, where the list's items start, but it is not a list item"
                ))
                .at(first, "expected a `- ` list item here")
                .related(item.first(text), "the list's items start here")
                .help(format!(
                    "start it with `- ` to make it a new item, or indent it to column {} to make it a field of the item on line {}",
                    body + 1,
                    item.number
                ))
            } else {
                syntax(format!(
                    "{what} starts at column {col}, but the fields of the list item on line {} start at column {}",
                    item.number,
                    body + 1
                ))
                .at(first, "misindented")
                .related(item.first(text), "the item starts here")
                .help(format!(
                    "fields of one mapping start in the same column: indent {what} to column {}",
                    body + 1
                ))
            };
        }
    }
    let (shallower, deeper) = neighbours(text, index, &line);
    let mut d = match (&shallower, &deeper) {
        (Some(s), Some(dp)) => syntax(format!(
            "{what} starts at column {col}, between the fields at column {} (line {}) and column {} (line {}), so it belongs to neither",
            s.column(),
            s.number,
            dp.column(),
            dp.number
        )),
        (None, Some(dp)) | (Some(dp), None) => syntax(format!(
            "{what} starts at column {col}, but the line it follows starts at column {} (line {})",
            dp.column(),
            dp.number
        )),
        (None, None) => syntax(format!(
            "{what} starts at column {col}, where no field or list item of the spec can be"
        )),
    }
    .at(first, "misindented");
    for n in [&shallower, &deeper].into_iter().flatten() {
        d = d.related(n.first(text), format!("column {}", n.column()));
    }
    d.help(match line.start {
        Start::Other(_) => "a line is a field (`name: value`) or a list item (`- value`), indented like the others of its mapping or list; a value that continues on this line must be indented deeper than its field",
        _ => "fields of one mapping start in the same column: indent this line like the fields it belongs with",
    })
}

/// The parser's own wording with its vocabulary replaced by the spec's: the fallback for
/// errors a hand-written spec rarely meets.
fn translate(raw: &str) -> String {
    let mut msg = raw.to_string();
    for prefix in ["while parsing ", "while scanning "] {
        if let Some(rest) = msg.strip_prefix(prefix)
            && let Some((_, tail)) = rest.split_once(", ")
        {
            msg = tail.to_string();
        }
    }
    const WORDS: &[(&str, &str)] = &[
        ("unexpected EOF while parsing", "the file ends inside"),
        ("unexpected eof", "the file ends too early"),
        (" while parsing ", " inside "),
        (" while scanning ", " in "),
        ("block collection", "list"),
        ("block sequence", "list"),
        ("block mapping", "mapping"),
        ("implicit flow mapping", "`{...}` mapping"),
        ("flow sequence", "`[...]` list"),
        ("flow mapping", "`{...}` mapping"),
        ("plain scalar", "unquoted value"),
        ("quoted scalar", "quoted value"),
        ("block scalar", "`|` or `>` text"),
        ("node content", "value"),
        ("scalar", "value"),
        ("node", "value"),
        ("simple key", "field name"),
        ("'-' indicator", "`- ` list item"),
        ("indicator", "character"),
        ("EOF", "the end of the file"),
        ("eof", "the end of the file"),
    ];
    for (from, to) in WORDS {
        msg = msg.replace(from, to);
    }
    msg
}

/// The diagnostic of a parser error (`raw` is its own wording), located at `offset`.
pub(super) fn describe(
    kind: &ErrorKind,
    raw: &str,
    text: &str,
    index: &LineIndex,
    offset: usize,
) -> Diagnostic {
    let here = Span::char_at(text, offset);
    let (line, col) = index.line_col(text, offset);
    use ErrorKind as K;
    match kind {
        K::ExpectedBlockMappingKey | K::InvalidIndentation => unclosed(text, index, offset)
            .unwrap_or_else(|| indentation(text, index, offset, false)),
        K::ExpectedBlockSequenceEntry => unclosed(text, index, offset)
            .unwrap_or_else(|| indentation(text, index, offset, true)),
        K::InvalidColonPlacement
        | K::UnexpectedEofFlowSequence
        | K::UnexpectedEofFlowMapping
        | K::UnexpectedEofImplicitFlowMapping
        | K::ExpectedFlowSequenceSeparator
        | K::ExpectedFlowMappingSeparator => unclosed(text, index, offset).unwrap_or_else(|| {
            let (open, close) = match kind {
                K::UnexpectedEofFlowSequence | K::ExpectedFlowSequenceSeparator => ('[', ']'),
                _ => ('{', '}'),
            };
            syntax(format!(
                "the `{open}...{close}` {} on line {line} is malformed at column {col}: its items are separated by single commas and it ends with `{close}`",
                collection(open)
            ))
            .at(here, "here")
            .help(format!("check for a missing `,` or `{close}`, or a stray `,`"))
        }),
        K::UnclosedFlowCollection { open } => {
            let close = closing(*open);
            syntax(format!(
                "the `{open}` {} on line {line}, column {col} is never closed",
                collection(*open)
            ))
            .at(here, "opened here")
            .help(format!("add the `{close}` where the {} ends", collection(*open)))
        }
        K::MismatchedFlowCollectionEnd { open, close } => syntax(format!(
            "the `{open}` {} on line {line}, column {col} is closed by `{close}`, which closes a {}",
            collection(*open),
            collection(if *close == ']' { '[' } else { '{' })
        ))
        .at(here, "opened here")
        .help(format!(
            "close it with `{}`, or add the `{}` that the `{close}` closes",
            closing(*open),
            if *close == ']' { '[' } else { '{' }
        )),
        K::MisplacedFlowCollectionEnd => {
            let c = text[offset..].chars().next().unwrap_or(']');
            syntax(format!("this `{c}` closes no `[` or `{{` before it"))
                .at(here, "nothing to close")
                .help("remove it, or add the bracket it was meant to close")
        }
        K::UnclosedQuotedScalar => {
            let q = text[offset..].chars().next().filter(|c| matches!(c, '"' | '\'')).unwrap_or('"');
            syntax(format!("the quote `{q}` on line {line}, column {col} is never closed"))
                .at(here, "opened here")
                .help(format!("end the value with `{q}`, or remove the quote"))
        }
        K::InvalidTrailingDoubleQuotedScalar | K::InvalidTrailingSingleQuotedScalar => {
            syntax("text follows the closing quote of a quoted value".to_string())
                .at(here, "after the closing quote")
                .help("quote the whole value, or remove what follows the quote")
        }
        K::MappingValueNotAllowed | K::FlowMappingValueAdjacentCollection => {
            if let Some(d) = unclosed(text, index, offset) {
                return d;
            }
            let l = Line::at(text, index, line);
            let body = &text[l.content..];
            if body.starts_with('-') && !body[1..].starts_with([' ', '\n', '\r']) {
                return syntax("`-` must be followed by a space to start a list item".to_string())
                    .at(l.first(text), "no space after `-`")
                    .help("write `- ` (a dash and a space) before the item");
            }
            syntax(format!(
                "a value on line {line} contains `: ` (a colon and a space), which starts another field on the same line"
            ))
            .at(here, "second `:` here")
            .help("put a nested field on its own line, indented under its parent; to keep the colon in a value, quote the value (`\"a: b\"`)")
        }
        K::SimpleKeyExpected => {
            let l = Line::at(text, index, line);
            let token = shorten(text[l.content..].lines().next().unwrap_or(""));
            if token.contains(':') {
                syntax(format!(
                    "`{token}` is not a field: a field is `name: value`, with a space after the colon"
                ))
            } else {
                syntax(format!(
                    "`{token}` is not a field: a field is `name: value`, and this line has no `:`"
                ))
            }
            .at(l.first(text), "expected `name: value`")
            .help("add a space after the colon, or the missing `: value`")
        }
        K::UnexpectedCharacter { character } => syntax(format!(
            "a value cannot start with `{}`, which YAML reserves",
            character.escape_default()
        ))
        .at(here, "reserved character")
        .help(format!("quote the value: \"{}…\"", character.escape_default())),
        K::UnknownQuotedScalarEscape
        | K::InvalidQuotedScalarHexEscape
        | K::InvalidUnicodeEscape
        | K::InvalidLowSurrogate
        | K::InvalidLowSurrogateHexEscape
        | K::MissingLowSurrogate
        | K::UnpairedLowSurrogate => syntax(
            "a double-quoted value has an invalid escape (a `\\` followed by an unknown sequence)"
                .to_string(),
        )
        .at(here, "invalid escape")
        .help("write `\\\\` for a backslash, or use single quotes, which have no escapes"),
        K::MissingAnchorOrAliasName => syntax(
            "`&` (an anchor) or `*` (an alias) must be followed by a name".to_string(),
        )
        .at(here, "name missing")
        .help("name the anchor (`&defaults`) and refer to it by that name (`*defaults`); quote a value that starts with `&` or `*`"),
        K::BlockEntryInFlowCollection => syntax(
            "a `- ` list item cannot be written inside `[...]` or `{...}`".to_string(),
        )
        .at(here, "list item here")
        .help("inside brackets, separate items with `,`; or write the list as indented `- ` lines"),
        K::InvalidBlockEntryWhitespace => {
            syntax("`-` must be followed by a space to start a list item".to_string())
                .at(here, "no space after `-`")
                .help("write `- ` (a dash and a space) before the item")
        }
        K::InvalidMappingValueWhitespace => {
            syntax("a field's `:` must be followed by a space".to_string())
                .at(here, "no space after `:`")
                .help("write `name: value`, with a space after the colon")
        }
        K::CommentNotSeparated => syntax("a `#` comment must be separated from the text before it by a space".to_string())
            .at(here, "comment here")
            .help("add a space before `#`, or quote the value if `#` is part of it"),
        K::BomInsideDocument => syntax("a byte order mark (U+FEFF) is allowed only at the start of the file".to_string())
            .at(here, "byte order mark")
            .help("remove the invisible U+FEFF character (it often comes from pasting files together)"),
        K::UnsupportedYamlMajorVersion | K::DuplicateVersionDirective => syntax(
            "the `%YAML` directive asks for a YAML version other than 1.x".to_string(),
        )
        .at(here, "directive")
        .help("specs are YAML 1.2: remove the `%YAML` line"),
        K::TabInIndentation | K::TabInBlockIndentation | K::TabNotAllowed | K::TabInPlainScalar | K::TabAtBlockScalarStart => {
            syntax("a tab is used where YAML allows only spaces".to_string())
                .at(here, "tab here")
                .help("replace the tab with spaces")
        }
        K::InvalidBlockScalarIndent | K::ZeroBlockScalarIndent | K::InvalidBlockScalarHeader => {
            syntax("the text of a `|` or `>` value is not indented consistently".to_string())
                .at(here, "here")
                .help("indent every line of the text at least as much as its first line, and deeper than its field")
        }
        K::DocumentIndicatorInQuotedScalar => syntax(
            "a line of a quoted value starts with `---` or `...`, which YAML reads as the end of the document".to_string(),
        )
        .at(here, "here")
        .help("indent the line, or write the value on one line"),
        K::BlockSequenceEntryNotAllowed => {
            let l = Line::at(text, index, line);
            let under = match &l.start {
                Start::Field(k) => format!(" under `{k}:`"),
                _ => String::new(),
            };
            syntax(format!(
                "a `- ` list item cannot start on line {line} after other text: an indented list starts on a line of its own"
            ))
            .at(here, "list item here")
            .help(format!(
                "put the items on the following lines, indented{under}, or write the list in brackets: `[a, b]`"
            ))
        }
        K::PlainScalarStartsWithDashFlowIndicator => {
            syntax("`-` followed by a bracket or a comma is not a list item".to_string())
                .at(here, "no space after `-`")
                .help("write `- ` (a dash and a space) before the item, or quote a value that starts with `-`")
        }
        K::ExpectedDocumentStart | K::InvalidDocumentEnd => {
            let (number, _) = index.line_col(text, offset);
            syntax(format!(
                "line {number} follows the end of the spec's top-level value, but a spec is one mapping of `name: value` fields"
            ))
            .at(here, "after the end")
            .help("write the spec as fields (`components:`, `streams:`, ...) at the start of their lines; a list or bracketed value cannot be the whole spec")
        }
        K::ExpectedNodeContent => syntax("a value is missing here".to_string())
            .at(here, "value expected")
            .help("write the value, or `null`/`[]`/`{}` for an empty one"),
        K::UnexpectedEofBlockMapping | K::UnexpectedEofBlockSequence | K::UnexpectedEof => {
            syntax("the spec ends in the middle of a value".to_string())
                .at(here, "the file ends here")
                .help("check the last lines: a quote or bracket may be unclosed, or a value missing")
        }
        _ => syntax(format!("the spec is not valid YAML here: {}", translate(raw)))
            .at(here, "here"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_brackets_skip_quotes_comments_and_block_text() {
        let text = "a: '[x' # {\nb: |\n  [not a list\nc: [1, {d: 2}\n";
        let open = open_brackets(text, text.len());
        assert_eq!(open.len(), 1, "{open:?}");
        assert_eq!(open[0].bracket, '[');
        assert_eq!(open[0].offset, text.find("[1").unwrap());
        // A bracket inside an unquoted value of a block mapping opens nothing.
        assert!(open_brackets("a: b[c\n", 7).is_empty());
    }

    #[test]
    fn translate_leaves_no_parser_state_words() {
        for raw in [
            "while parsing a block collection, did not find expected '-' indicator",
            "while parsing a node, did not find expected node content",
            "unexpected EOF while parsing a flow sequence",
            "while scanning a plain scalar, found a tab",
        ] {
            let t = translate(raw);
            for word in [
                "block",
                "flow",
                "scalar",
                "node",
                "while parsing",
                "EOF",
                "indicator",
            ] {
                assert!(!t.contains(word), "{raw} -> {t}");
            }
        }
    }
}
