//! The DOT vocabulary of the drawing: colours and pens of labels, HTML-like labels and their
//! escaping, and the `graphviz-rust` statements every part is built from.

use graphviz_rust::dot_structures::{Attribute, Edge, EdgeTy, Id, Node, NodeId, Stmt, Vertex};

use crate::graph::{CompId, Dataflow};
use crate::label::Label;

pub(super) const FONT: &str = "Helvetica";
pub(super) const GREY: &str = "#9e9e9e";
pub(super) const ALARM: &str = "#b71c1c";

/// Colour and pen width of a label: calm for deterministic contents, increasingly alarming
/// for Run, Inst, Diverge; grey for what no source reaches.
pub(super) fn style_of(l: Option<Label>) -> (&'static str, &'static str) {
    match l {
        None => (GREY, "1"),
        Some(Label::Seal(_)) => ("#2e7d32", "1.5"),
        Some(Label::Async) => ("#1565c0", "1.5"),
        Some(Label::Run) => ("#ef8f00", "2"),
        Some(Label::Inst) => ("#e65100", "2.5"),
        Some(Label::Diverge) => (ALARM, "3"),
    }
}

pub(super) fn label_text(l: Option<Label>, df: &Dataflow) -> String {
    // An edge label must stay short; the legend says what it means.
    l.map_or_else(|| "no source".to_string(), |l| l.display(&df.keys))
}

/// Escapes text for a Graphviz HTML-like label.
pub(super) fn html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            _ => out.push(c),
        }
    }
    out
}

/// A quoted DOT string.
pub(super) fn quoted(s: &str) -> Id {
    Id::Escaped(format!(
        "\"{}\"",
        s.replace('\\', "\\\\").replace('"', "\\\"")
    ))
}

pub(super) fn attr(k: &str, v: &str) -> Attribute {
    Attribute(Id::Plain(k.to_string()), quoted(v))
}

pub(super) fn html_attr(k: &str, table: &str) -> Attribute {
    Attribute(Id::Plain(k.to_string()), Id::Html(format!("<{table}>")))
}

pub(super) fn node(id: &str, attrs: Vec<Attribute>) -> Stmt {
    Stmt::Node(Node::new(NodeId(Id::Plain(id.to_string()), None), attrs))
}

pub(super) fn edge(from: &str, to: &str, attrs: Vec<Attribute>) -> Stmt {
    Stmt::Edge(Edge {
        ty: EdgeTy::Pair(
            Vertex::N(NodeId(Id::Plain(from.to_string()), None)),
            Vertex::N(NodeId(Id::Plain(to.to_string()), None)),
        ),
        attributes: attrs,
    })
}

/// An HTML table of rows; each row is `(html content, background colour)`.
pub(super) fn table(rows: &[(String, Option<&str>)]) -> String {
    let mut s =
        String::from(r#"<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="2">"#);
    for (content, bg) in rows {
        match bg {
            Some(c) => s.push_str(&format!(r#"<TR><TD BGCOLOR="{c}">{content}</TD></TR>"#)),
            None => s.push_str(&format!("<TR><TD>{content}</TD></TR>")),
        }
    }
    s.push_str("</TABLE>");
    s
}

pub(super) fn small(s: &str, color: Option<&str>) -> String {
    match color {
        Some(c) => format!(r#"<FONT POINT-SIZE="9" COLOR="{c}">{s}</FONT>"#),
        None => format!(r#"<FONT POINT-SIZE="9">{s}</FONT>"#),
    }
}

pub(super) fn comp_id(c: CompId) -> String {
    format!("c{}", c.0)
}

/// Labelled edge attributes for a stream carrying `l`.
pub(super) fn stream_attrs(l: Option<Label>, df: &Dataflow, tooltip: &str) -> Vec<Attribute> {
    stream_attrs_with(l, df, tooltip, None)
}

/// [`stream_attrs`] for a stream the plan seals (`added`: its key), drawn in the plan's
/// colour with the seal under its label.
pub(super) fn stream_attrs_with(
    l: Option<Label>,
    df: &Dataflow,
    tooltip: &str,
    added: Option<&[String]>,
) -> Vec<Attribute> {
    let (color, width) = style_of(l);
    let mut label = format!(
        r#"<FONT COLOR="{color}">{}</FONT>"#,
        html(&label_text(l, df))
    );
    if let Some(k) = added {
        label.push_str(&format!(
            r#"<BR/><FONT COLOR="{PLAN}"><B>+</B> seal: {}</FONT>"#,
            html(&k.join(", "))
        ));
    }
    let mut a = vec![
        html_attr("label", &label),
        attr("color", if added.is_some() { PLAN } else { color }),
        attr("penwidth", width),
        attr("tooltip", tooltip),
    ];
    if l.is_none() {
        a.push(attr("style", "dashed"));
    } else if added.is_some() {
        a.push(attr("style", "dashed,bold"));
    }
    a
}

/// Colour of what a plan adds, and its background in tables.
pub(super) const PLAN: &str = "#00695c";
pub(super) const PLAN_BG: &str = "#e0f2f1";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes() {
        assert_eq!(html("a<b>&\"c"), "a&lt;b&gt;&amp;&quot;c");
        assert_eq!(quoted("a\"b\\"), Id::Escaped("\"a\\\"b\\\\\"".into()));
    }
}
