//! Streaming SQL (Flink's dialect) as a white box: `sqlparser` reads the statements, with a
//! dialect of ours for what Flink adds (`TABLE t` as a window function's argument, `WATERMARK
//! FOR`, computed columns, `PRIMARY KEY ... NOT ENFORCED`, `FOR SYSTEM_TIME AS OF`), and each
//! query is walked once, carrying per input table what the operators on the way do to it.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;

use sqlparser::ast::{
    Expr, Function, FunctionArg, FunctionArgExpr, FunctionArgumentList, FunctionArguments,
    GroupByExpr, Ident, InTarget, JoinConstraint, JoinOperator, ObjectName, Query, Select,
    SelectItem, SetExpr, SetOperator, SetQuantifier, Spanned, Statement, TableFactor, TableVersion,
    TableWithJoins, WindowType, visit_expressions,
};
use sqlparser::dialect::Dialect;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;

use super::{CLOCK, Derivation, DerivedGate, DerivedPath, TextMap, annotation, window_attr};
use crate::codes;
use crate::diagnostic::Diagnostic;

/// Longest SQL program read, in bytes: deeper than this is not a query a person wrote, and a
/// bound keeps the walk's recursion within the reader's stack.
pub const MAX_SQL_BYTES: usize = 64 * 1024;

/// Most binary operators (`+`, `=`, `AND`, ...) in one SQL program: a chain of them is as deep
/// as it is long once parsed.
pub const MAX_SQL_OPERATORS: usize = 500;

/// What a `CREATE TABLE` says about a table's columns.
#[derive(Clone, Debug, Default)]
struct TableDdl {
    columns: Vec<String>,
    /// `WATERMARK FOR column`, and where the column is named.
    watermark: Option<(String, Pos)>,
    proctime: Vec<String>,
}

/// Flink SQL on top of the generic dialect. The DDL it reads is kept aside (`ddl`), since the
/// generic `CREATE TABLE` statement has no place for a watermark.
#[derive(Debug, Default)]
pub struct FlinkDialect {
    ddl: RefCell<Vec<(String, TableDdl)>>,
}

fn word_is(p: &Parser, n: usize, w: &str) -> bool {
    matches!(&p.peek_nth_token_ref(n).token, Token::Word(x) if x.value.eq_ignore_ascii_case(w) && x.quote_style.is_none())
}

fn eat(p: &mut Parser, w: &str) -> bool {
    if word_is(p, 0, w) {
        p.next_token();
        true
    } else {
        false
    }
}

fn expect(p: &mut Parser, w: &str) -> Result<(), ParserError> {
    if eat(p, w) {
        Ok(())
    } else {
        let t = p.peek_token();
        Err(ParserError::ParserError(format!(
            "Expected: {w}, found: {} at {}",
            t.token, t.span.start
        )))
    }
}

fn function(name: &str, args: Vec<Expr>) -> Expr {
    Expr::Function(Function {
        name: ObjectName::from(vec![Ident::new(name)]),
        uses_odbc_syntax: false,
        parameters: FunctionArguments::None,
        args: FunctionArguments::List(FunctionArgumentList {
            duplicate_treatment: None,
            args: args
                .into_iter()
                .map(|e| FunctionArg::Unnamed(FunctionArgExpr::Expr(e)))
                .collect(),
            clauses: Vec::new(),
        }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: Vec::new(),
    })
}

impl FlinkDialect {
    fn create_table(&self, p: &mut Parser) -> Result<Statement, ParserError> {
        expect(p, "CREATE")?;
        eat(p, "TEMPORARY");
        expect(p, "TABLE")?;
        if word_is(p, 0, "IF") {
            expect(p, "IF")?;
            expect(p, "NOT")?;
            expect(p, "EXISTS")?;
        }
        let name = p.parse_object_name(false)?;
        let mut ddl = TableDdl::default();
        let mut columns = Vec::new();
        p.expect_token(&Token::LParen)?;
        loop {
            if eat(p, "WATERMARK") {
                expect(p, "FOR")?;
                let c = p.parse_identifier()?;
                expect(p, "AS")?;
                p.parse_expr()?;
                let at = (
                    c.span.start.line,
                    c.span.start.column,
                    c.value.chars().count().max(1),
                );
                ddl.watermark = Some((c.value, at));
            } else if word_is(p, 0, "PRIMARY") {
                expect(p, "PRIMARY")?;
                expect(p, "KEY")?;
                p.expect_token(&Token::LParen)?;
                p.parse_comma_separated(|p| p.parse_identifier())?;
                p.expect_token(&Token::RParen)?;
                if eat(p, "NOT") {
                    expect(p, "ENFORCED")?;
                }
            } else if word_is(p, 1, "AS") {
                let c = p.parse_identifier()?;
                expect(p, "AS")?;
                let e = p.parse_expr()?;
                if matches!(&e, Expr::Function(f) if f.name.to_string().eq_ignore_ascii_case("PROCTIME"))
                {
                    ddl.proctime.push(c.value.clone());
                }
                ddl.columns.push(c.value);
            } else {
                let c = p.parse_column_def()?;
                // `METADATA [FROM 'key'] [VIRTUAL]`: where the connector fills the column from.
                if eat(p, "METADATA") {
                    if eat(p, "FROM") {
                        p.next_token();
                    }
                    eat(p, "VIRTUAL");
                }
                ddl.columns.push(c.name.value.clone());
                columns.push(c);
            }
            if !p.consume_token(&Token::Comma) {
                p.expect_token(&Token::RParen)?;
                break;
            }
        }
        if word_is(p, 0, "WITH") {
            p.parse_options(sqlparser::keywords::Keyword::WITH)?;
        }
        let short = last(&name);
        self.ddl.borrow_mut().push((short, ddl));
        Ok(Statement::CreateTable(
            sqlparser::ast::helpers::stmt_create_table::CreateTableBuilder::new(name)
                .columns(columns)
                .build(),
        ))
    }
}

impl Dialect for FlinkDialect {
    fn is_identifier_start(&self, ch: char) -> bool {
        ch.is_alphabetic() || ch == '_'
    }
    fn is_identifier_part(&self, ch: char) -> bool {
        ch.is_alphanumeric() || ch == '_' || ch == '$'
    }
    fn is_delimited_identifier_start(&self, ch: char) -> bool {
        ch == '`' || ch == '"'
    }
    fn supports_table_versioning(&self) -> bool {
        true
    }
    fn supports_match_recognize(&self) -> bool {
        true
    }
    fn supports_filter_during_aggregation(&self) -> bool {
        true
    }
    fn supports_group_by_expr(&self) -> bool {
        true
    }
    fn parse_prefix(&self, p: &mut Parser) -> Option<Result<Expr, ParserError>> {
        // `TABLE bid` as the argument of a window table function.
        if word_is(p, 0, "TABLE") && matches!(p.peek_nth_token_ref(1).token, Token::Word(_)) {
            p.next_token();
            return Some(
                p.parse_object_name(false)
                    .map(|n| function("TABLE", vec![Expr::Identifier(Ident::new(last(&n)))])),
            );
        }
        None
    }
    fn parse_statement(&self, p: &mut Parser) -> Option<Result<Statement, ParserError>> {
        let create_table = word_is(p, 0, "CREATE")
            && (word_is(p, 1, "TABLE") || (word_is(p, 1, "TEMPORARY") && word_is(p, 2, "TABLE")));
        create_table.then(|| self.create_table(p))
    }
}

fn last(n: &ObjectName) -> String {
    n.0.last()
        .and_then(|p| p.as_ident())
        .map_or_else(|| n.to_string(), |i| i.value.clone())
}

/// A program position: line, column (1-based), length in characters.
type Pos = (u64, u64, usize);

fn pos_of(s: &impl Spanned, text: &str) -> Pos {
    let sp = s.span();
    let len = if sp.start.line == sp.end.line {
        (sp.end.column.saturating_sub(sp.start.column)) as usize
    } else {
        text.len().min(1)
    };
    (sp.start.line, sp.start.column, len.max(1))
}

/// Where a column's values come from.
#[derive(Clone, Debug, Default)]
struct Lin {
    /// (input table, attribute).
    attrs: BTreeSet<(String, String)>,
    /// (input table, time attribute) of the windows the column is the bound of.
    windows: BTreeSet<(String, String)>,
    proctime: bool,
    /// Derived from a `WATERMARK FOR` column of the DDL.
    event: bool,
    /// Computed by an expression, not an input attribute carried unchanged: two different
    /// values may give the same result, so the column does not partition by its attributes.
    computed: bool,
}

impl Lin {
    fn union(&mut self, o: &Lin) {
        self.attrs.extend(o.attrs.iter().cloned());
        self.windows.extend(o.windows.iter().cloned());
        self.proctime |= o.proctime;
        self.event |= o.event;
        self.computed |= o.computed;
    }
}

/// What the operators on the way from one input table do.
#[derive(Clone, Debug, Default)]
struct Flow {
    order: bool,
    writes: bool,
    gate: BTreeSet<String>,
    star: bool,
    reasons: Vec<(String, Pos)>,
    nondet: Vec<(String, Pos)>,
}

impl Flow {
    fn merge(&mut self, o: &Flow) {
        self.order |= o.order;
        self.writes |= o.writes;
        self.star |= o.star;
        self.gate.extend(o.gate.iter().cloned());
        self.reasons.extend(o.reasons.iter().cloned());
        self.nondet.extend(o.nondet.iter().cloned());
    }
}

#[derive(Clone, Debug, Default)]
struct Entry {
    qual: Option<String>,
    cols: Vec<(String, Lin)>,
    /// An input table whose columns are not declared: any column name resolves to it.
    open: Option<String>,
}

#[derive(Clone, Debug, Default)]
struct Rel {
    scope: Vec<Entry>,
    flows: BTreeMap<String, Flow>,
    updating: bool,
    /// `FOR SYSTEM_TIME AS OF expr` on this table.
    temporal: Option<Expr>,
    /// The two sides of each equality of an equi-join: a key traced to one side is traced to
    /// the other's attributes too.
    equiv: Vec<(Lin, Lin)>,
}

fn merge_flows(a: &mut BTreeMap<String, Flow>, b: &BTreeMap<String, Flow>) {
    for (k, f) in b {
        a.entry(k.clone()).or_default().merge(f);
    }
}

const NONDET: &[&str] = &[
    "PROCTIME",
    "NOW",
    "CURRENT_TIMESTAMP",
    "LOCALTIMESTAMP",
    "CURRENT_TIME",
    "CURRENT_DATE",
    "LOCALTIME",
    "CURRENT_ROW_TIMESTAMP",
    "RAND",
    "RAND_INTEGER",
    "UUID",
];

const AGGREGATES: &[&str] = &[
    "COUNT",
    "SUM",
    "MIN",
    "MAX",
    "AVG",
    "LISTAGG",
    "COLLECT",
    "FIRST_VALUE",
    "LAST_VALUE",
    "STDDEV_POP",
    "STDDEV_SAMP",
    "VAR_POP",
    "VAR_SAMP",
    "ARRAY_AGG",
    "JSON_ARRAYAGG",
    "JSON_OBJECTAGG",
];

const WINDOWS: &[&str] = &["TUMBLE", "HOP", "CUMULATE", "SESSION"];

struct Walk<'a> {
    text: &'a str,
    /// Places the program in the spec file: reasons name file lines.
    map: &'a TextMap,
    ddl: BTreeMap<String, TableDdl>,
    views: BTreeMap<String, Rel>,
    unsupported: Vec<(String, Pos)>,
}

impl Walk<'_> {
    fn line(&self, p: Pos) -> String {
        format!("line {}", self.map.file_line(p.0))
    }

    fn unsupported(&mut self, what: String, p: Pos) {
        self.unsupported.push((what, p));
    }

    fn resolve(&self, rel: &Rel, qual: Option<&str>, name: &str) -> Lin {
        let matches = |e: &Entry| qual.is_none() || e.qual.as_deref() == qual;
        for e in rel.scope.iter().filter(|e| matches(e)) {
            if let Some((_, l)) = e.cols.iter().find(|(c, _)| c == name) {
                return l.clone();
            }
        }
        if let Some(t) = rel
            .scope
            .iter()
            .filter(|e| matches(e))
            .find_map(|e| e.open.clone())
        {
            let mut l = Lin::default();
            l.attrs.insert((t, name.to_string()));
            return l;
        }
        Lin::default()
    }

    /// The lineage of an expression and the nondeterministic functions it calls.
    fn lin(&self, e: &Expr, rel: &Rel) -> (Lin, Vec<(String, Pos)>) {
        let mut lin = Lin::default();
        let mut nondet = Vec::new();
        let _ = visit_expressions(e, |x| {
            match x {
                Expr::Identifier(i) => lin.union(&self.resolve(rel, None, &i.value)),
                Expr::CompoundIdentifier(parts) if parts.len() >= 2 => {
                    let q = &parts[parts.len() - 2].value;
                    lin.union(&self.resolve(rel, Some(q), &parts[parts.len() - 1].value));
                }
                Expr::Function(f) => {
                    let n = f.name.to_string().to_ascii_uppercase();
                    if NONDET.contains(&n.as_str()) {
                        if n == "PROCTIME" {
                            lin.proctime = true;
                        }
                        nondet.push((format!("{n}()"), pos_of(f, self.text)));
                    }
                }
                _ => {}
            }
            ControlFlow::<()>::Continue(())
        });
        let bare = matches!(e, Expr::Identifier(_) | Expr::CompoundIdentifier(_))
            || matches!(e, Expr::Nested(n) if matches!(**n, Expr::Identifier(_) | Expr::CompoundIdentifier(_)));
        if !bare {
            lin.computed = true;
        }
        if lin.proctime {
            // A column computed from PROCTIME() is processing time itself.
            nondet.retain(|(n, _)| n != "PROCTIME()");
        }
        (lin, nondet)
    }

    /// The gate of input `x` for keys of these lineages: `None` for `*`. A key carried unchanged
    /// from `x`'s attributes (or a window of them) is in the gate; a key computed by an
    /// expression, or from another input, is left out: the gate is then coarser than the
    /// partitioning (records that differ on it still never meet in one group), which is sound.
    /// No key left is `*`.
    fn trace(keys: &[Lin], x: &str) -> Option<BTreeSet<String>> {
        let mut out = BTreeSet::new();
        for k in keys.iter().filter(|k| !k.computed) {
            for (t, a) in &k.attrs {
                if t == x {
                    out.insert(a.clone());
                }
            }
            for (t, a) in &k.windows {
                if t == x {
                    out.insert(window_attr(a));
                }
            }
        }
        (!out.is_empty()).then_some(out)
    }

    fn order(rel: &mut Rel, keys: &[Lin], writes: bool, reason: &str, p: Pos) {
        for (x, f) in rel.flows.iter_mut() {
            f.order = true;
            f.writes |= writes;
            let widened: Vec<Lin> = keys
                .iter()
                .map(|k| {
                    let mut k = k.clone();
                    // Across an equality of a join condition: only to a side that is a bare
                    // attribute too (`a.id = b.id`, not `a.id = f(b.x)`).
                    for (a, b) in &rel.equiv {
                        let other = if a.attrs.iter().any(|p| k.attrs.contains(p)) {
                            b
                        } else if b.attrs.iter().any(|p| k.attrs.contains(p)) {
                            a
                        } else {
                            continue;
                        };
                        if !other.computed {
                            k.attrs.extend(other.attrs.iter().cloned());
                            k.windows.extend(other.windows.iter().cloned());
                        }
                    }
                    k
                })
                .collect();
            match Self::trace(&widened, x) {
                Some(g) => f.gate.extend(g),
                None => f.star = true,
            }
            f.reasons.push((reason.to_string(), p));
        }
    }

    fn write(rel: &mut Rel, reason: &str, p: Pos) {
        for f in rel.flows.values_mut() {
            f.writes = true;
            f.reasons.push((reason.to_string(), p));
        }
    }

    fn nondet(rel: &mut Rel, list: &[(String, Pos)], what: &str) {
        for (n, p) in list {
            for f in rel.flows.values_mut() {
                f.nondet.push((format!("{n} {what}"), *p));
            }
        }
    }

    fn query(&mut self, q: &Query) -> Rel {
        let saved = self.views.clone();
        if let Some(with) = &q.with {
            for cte in &with.cte_tables {
                let r = self.query(&cte.query);
                self.views.insert(cte.alias.name.value.clone(), r);
            }
        }
        let mut rel = self.set_expr(&q.body);
        if let Some(l) = &q.limit_clause {
            let p = pos_of(l, self.text);
            let what = if q.order_by.is_some() {
                "ORDER BY ... LIMIT (a Top-N: rows enter and leave the top as records arrive)"
            } else {
                "LIMIT without ORDER BY (keeps whichever rows arrive first)"
            };
            let r = format!("{what} ({})", self.line(p));
            Self::order(&mut rel, &[], true, &r, p);
            rel.updating = true;
        }
        self.views = saved;
        rel
    }

    fn set_expr(&mut self, s: &SetExpr) -> Rel {
        match s {
            SetExpr::Select(sel) => self.select(sel),
            SetExpr::Query(q) => self.query(q),
            SetExpr::SetOperation {
                op,
                set_quantifier,
                left,
                right,
            } => {
                let mut l = self.set_expr(left);
                let r = self.set_expr(right);
                let p = pos_of(s, self.text);
                merge_flows(&mut l.flows, &r.flows);
                l.updating |= r.updating;
                let all = matches!(set_quantifier, SetQuantifier::All);
                let rcols: Vec<Lin> = r
                    .scope
                    .iter()
                    .flat_map(|e| e.cols.iter().map(|c| c.1.clone()))
                    .collect();
                let mut keys: Vec<Lin> = l
                    .scope
                    .iter()
                    .flat_map(|e| e.cols.iter().map(|c| c.1.clone()))
                    .collect();
                // A column of a set operation comes from both sides, position by position.
                for (k, rc) in keys.iter_mut().zip(&rcols) {
                    k.union(rc);
                }
                match (op, all) {
                    (SetOperator::Union, true) => {}
                    (SetOperator::Union, false) => {
                        let r = format!("UNION removes duplicates ({})", self.line(p));
                        Self::order(&mut l, &keys, true, &r, p);
                        l.updating = true;
                    }
                    _ => {
                        let r = format!(
                            "{op} retracts rows as the other side grows ({})",
                            self.line(p)
                        );
                        Self::order(&mut l, &keys, true, &r, p);
                        l.updating = true;
                    }
                }
                l
            }
            SetExpr::Values(_) => Rel::default(),
            other => {
                let p = pos_of(other, self.text);
                self.unsupported("this kind of query".to_string(), p);
                Rel::default()
            }
        }
    }

    fn table(&mut self, name: &ObjectName, alias: Option<String>) -> Rel {
        let short = last(name);
        let qual = Some(alias.unwrap_or_else(|| short.clone()));
        if let Some(v) = self.views.get(&short) {
            let mut r = v.clone();
            let cols: Vec<(String, Lin)> = r.scope.iter().flat_map(|e| e.cols.clone()).collect();
            let open = r.scope.iter().find_map(|e| e.open.clone());
            r.scope = vec![Entry { qual, cols, open }];
            return r;
        }
        let mut rel = Rel::default();
        rel.flows.insert(short.clone(), Flow::default());
        let entry = match self.ddl.get(&short) {
            Some(d) => Entry {
                qual,
                cols: d
                    .columns
                    .iter()
                    .map(|c| {
                        let mut l = Lin::default();
                        l.attrs.insert((short.clone(), c.clone()));
                        l.proctime = d.proctime.contains(c);
                        l.event = d.watermark.as_ref().map(|w| &w.0) == Some(c);
                        if l.proctime {
                            l.attrs.clear();
                        }
                        (c.clone(), l)
                    })
                    .collect(),
                open: None,
            },
            None => Entry {
                qual,
                cols: Vec::new(),
                open: Some(short),
            },
        };
        rel.scope.push(entry);
        rel
    }

    fn factor(&mut self, t: &TableFactor) -> Rel {
        match t {
            TableFactor::Table {
                name,
                alias,
                args: None,
                version,
                ..
            } => {
                let mut r = self.table(name, alias.as_ref().map(|a| a.name.value.clone()));
                if let Some(TableVersion::ForSystemTimeAsOf(e)) = version {
                    r.temporal = Some(e.clone());
                }
                r
            }
            TableFactor::Derived {
                subquery, alias, ..
            } => {
                let mut r = self.query(subquery);
                let cols: Vec<(String, Lin)> =
                    r.scope.iter().flat_map(|e| e.cols.clone()).collect();
                let open = r.scope.iter().find_map(|e| e.open.clone());
                r.scope = vec![Entry {
                    qual: alias.as_ref().map(|a| a.name.value.clone()),
                    cols,
                    open,
                }];
                r
            }
            TableFactor::NestedJoin {
                table_with_joins, ..
            } => self.from(table_with_joins),
            TableFactor::TableFunction { expr, alias } => {
                self.window(expr, alias.as_ref().map(|a| a.name.value.clone()))
            }
            TableFactor::MatchRecognize {
                table,
                partition_by,
                order_by,
                ..
            } => {
                let mut r = self.factor(table);
                let keys: Vec<Lin> = partition_by.iter().map(|e| self.lin(e, &r).0).collect();
                let p = pos_of(t, self.text);
                let reason = format!(
                    "MATCH_RECOGNIZE matches patterns in arrival order within each partition ({})",
                    self.line(p)
                );
                for o in order_by {
                    let (l, _) = self.lin(&o.expr, &r);
                    if l.proctime {
                        Self::nondet(
                            &mut r,
                            &[("processing time".to_string(), p)],
                            "orders MATCH_RECOGNIZE",
                        );
                    }
                }
                Self::order(&mut r, &keys, true, &reason, p);
                r.updating = true;
                r
            }
            other => {
                let p = pos_of(other, self.text);
                self.unsupported(
                    format!("the table expression `{}`", clip(&other.to_string())),
                    p,
                );
                Rel::default()
            }
        }
    }

    /// `TABLE(TUMBLE(TABLE bid, DESCRIPTOR(t), ...))`.
    fn window(&mut self, expr: &Expr, alias: Option<String>) -> Rel {
        let p = pos_of(expr, self.text);
        let Expr::Function(f) = expr else {
            self.unsupported(
                format!("the table function `{}`", clip(&expr.to_string())),
                p,
            );
            return Rel::default();
        };
        let kind = f.name.to_string().to_ascii_uppercase();
        let args: Vec<&Expr> = match &f.args {
            FunctionArguments::List(l) => l
                .args
                .iter()
                .filter_map(|a| match a {
                    FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e),
                    FunctionArg::Named {
                        arg: FunctionArgExpr::Expr(e),
                        ..
                    } => Some(e),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        };
        let inner = args.first().and_then(|a| match a {
            Expr::Function(t) if t.name.to_string().eq_ignore_ascii_case("TABLE") => {
                match &t.args {
                    FunctionArguments::List(l) => match l.args.first() {
                        Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Identifier(i)))) => {
                            Some(i.value.clone())
                        }
                        _ => None,
                    },
                    _ => None,
                }
            }
            _ => None,
        });
        let time = args.iter().find_map(|a| match a {
            Expr::Function(d) if d.name.to_string().eq_ignore_ascii_case("DESCRIPTOR") => {
                match &d.args {
                    FunctionArguments::List(l) => match l.args.first() {
                        Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(e))) => Some(e.clone()),
                        _ => None,
                    },
                    _ => None,
                }
            }
            _ => None,
        });
        let (true, Some(inner), Some(time)) = (WINDOWS.contains(&kind.as_str()), inner, time)
        else {
            self.unsupported(
                format!("the table function `{}`", clip(&expr.to_string())),
                p,
            );
            return Rel::default();
        };
        let mut r = self.table(
            &ObjectName::from(vec![Ident::new(inner.clone())]),
            alias.clone(),
        );
        let (tl, _) = self.lin(&time, &r);
        let mut wl = Lin {
            windows: tl.attrs.clone(),
            proctime: tl.proctime,
            event: tl.event,
            ..Lin::default()
        };
        if tl.proctime {
            wl.windows.clear();
            Self::nondet(
                &mut r,
                &[(format!("a {kind} window on processing time `{time}`"), p)],
                "closes windows by the wall clock",
            );
        }
        let mut cols = Vec::new();
        for c in ["window_start", "window_end", "window_time"] {
            cols.push((c.to_string(), wl.clone()));
        }
        r.scope.push(Entry {
            qual: Some(alias.unwrap_or(inner)),
            cols,
            open: None,
        });
        // Remember what the window is on, for the reasons.
        r.temporal = None;
        r
    }

    fn from(&mut self, twj: &TableWithJoins) -> Rel {
        let mut left = self.factor(&twj.relation);
        for j in &twj.joins {
            let right = self.factor(&j.relation);
            let p = pos_of(&j.relation, self.text);
            let (kind, c) = match &j.join_operator {
                JoinOperator::Join(c) | JoinOperator::Inner(c) => ("inner", Some(c)),
                JoinOperator::CrossJoin(c) => ("inner", Some(c)),
                JoinOperator::Left(c) | JoinOperator::LeftOuter(c) => ("LEFT", Some(c)),
                JoinOperator::Right(c) | JoinOperator::RightOuter(c) => ("RIGHT", Some(c)),
                JoinOperator::FullOuter(c) => ("FULL", Some(c)),
                JoinOperator::Semi(c) | JoinOperator::LeftSemi(c) | JoinOperator::RightSemi(c) => {
                    ("semi", Some(c))
                }
                JoinOperator::Anti(c) | JoinOperator::LeftAnti(c) | JoinOperator::RightAnti(c) => {
                    ("anti", Some(c))
                }
                _ => ("other", None),
            };
            left = self.join(left, right, kind, c, p);
        }
        left
    }

    fn join(
        &mut self,
        mut left: Rel,
        mut right: Rel,
        kind: &str,
        c: Option<&JoinConstraint>,
        p: Pos,
    ) -> Rel {
        // The keys: both sides of each equality of the ON condition.
        let mut lkeys = Vec::new();
        let mut rkeys = Vec::new();
        let both = Rel {
            scope: left
                .scope
                .iter()
                .chain(right.scope.iter())
                .cloned()
                .collect(),
            ..Rel::default()
        };
        let mut nondet = Vec::new();
        let mut equiv = Vec::new();
        if let Some(JoinConstraint::On(on)) = c {
            let (_, nd) = self.lin(on, &both);
            nondet = nd;
            let _ = visit_expressions(on, |x| {
                if let Expr::BinaryOp {
                    left: a,
                    op: sqlparser::ast::BinaryOperator::Eq,
                    right: b,
                } = x
                {
                    let (a_all, _) = self.lin(a, &both);
                    let (b_all, _) = self.lin(b, &both);
                    equiv.push((a_all, b_all));
                    for side in [a, b] {
                        let (la, _) = self.lin(side, &left);
                        let (ra, _) = self.lin(side, &right);
                        if !la.attrs.is_empty() || !la.windows.is_empty() {
                            lkeys.push(la);
                        } else if !ra.attrs.is_empty() || !ra.windows.is_empty() {
                            rkeys.push(ra);
                        }
                    }
                }
                ControlFlow::<()>::Continue(())
            });
        }
        if kind == "other" {
            self.unsupported("this kind of join".to_string(), p);
        }
        let temporal = right.temporal.take();
        let updating = left.updating || right.updating;
        let line = self.line(p);
        match temporal {
            Some(t) => {
                let (tl, tnd) = self.lin(&t, &left);
                if tl.proctime || !tnd.is_empty() {
                    let list = [(
                        format!("a lookup join FOR SYSTEM_TIME AS OF processing time `{t}`"),
                        p,
                    )];
                    Self::nondet(
                        &mut left,
                        &list,
                        "reads whatever version the table has when a record arrives",
                    );
                    Self::nondet(
                        &mut right,
                        &list,
                        "reads whatever version the table has when a record arrives",
                    );
                    let r = format!("the looked-up table is kept in state ({line})");
                    Self::write(&mut right, &r, p);
                } else {
                    let r = format!(
                        "a temporal join FOR SYSTEM_TIME AS OF `{t}` reads the version table ({line})"
                    );
                    Self::order(&mut left, &lkeys, false, &r, p);
                    let r = format!(
                        "the version table of a temporal join keeps the latest row per key ({line})"
                    );
                    Self::order(&mut right, &rkeys, true, &r, p);
                }
            }
            None => match kind {
                "inner" | "semi" if !updating => {
                    let r = format!(
                        "an {kind} join keeps both inputs in state and only adds results ({line})"
                    );
                    Self::write(&mut left, &r, p);
                    Self::write(&mut right, &r, p);
                }
                _ => {
                    let what = match kind {
                        "inner" | "semi" => format!("an {kind} join over an updating input"),
                        "anti" => "an anti-join retracts a row when a match arrives".to_string(),
                        k => format!(
                            "a {k} OUTER join emits padded rows and retracts them when a match arrives"
                        ),
                    };
                    let r = format!("{what} ({line})");
                    Self::order(&mut left, &lkeys, true, &r, p);
                    Self::order(&mut right, &rkeys, true, &r, p);
                }
            },
        }
        let outer = !matches!(kind, "inner" | "semi");
        let mut out = Rel {
            scope: both.scope,
            flows: left.flows,
            updating: updating || outer,
            temporal: None,
            equiv: left
                .equiv
                .iter()
                .chain(right.equiv.iter())
                .cloned()
                .chain(equiv)
                .collect(),
        };
        merge_flows(&mut out.flows, &right.flows);
        Self::nondet(&mut out, &nondet, "in the join condition");
        out
    }

    fn subqueries(&mut self, e: &Expr, rel: &mut Rel) {
        let mut found = Vec::new();
        let _ = visit_expressions(e, |x| {
            match x {
                Expr::Exists { subquery, negated } => {
                    found.push((subquery.clone(), *negated, None))
                }
                Expr::In {
                    expr,
                    target: InTarget::Subquery(subquery),
                    negated,
                    ..
                } => found.push((subquery.clone(), *negated, Some(expr.clone()))),
                _ => {}
            }
            ControlFlow::<()>::Continue(())
        });
        for (q, negated, key) in found {
            let p = pos_of(&*q, self.text);
            let mut inner = self.query(&q);
            let keys: Vec<Lin> = key.iter().map(|k| self.lin(k, rel).0).collect();
            let inner_keys: Vec<Lin> = if key.is_some() {
                inner
                    .scope
                    .iter()
                    .flat_map(|e| e.cols.iter().map(|c| c.1.clone()))
                    .take(1)
                    .collect()
            } else {
                Vec::new()
            };
            let line = self.line(p);
            if negated || inner.updating || rel.updating {
                let what = if key.is_some() {
                    "NOT IN"
                } else {
                    "NOT EXISTS"
                };
                let what = if negated {
                    what.to_string()
                } else {
                    "a semi-join over an updating input".to_string()
                };
                let r = format!("{what} retracts a row when a match arrives ({line})");
                Self::order(rel, &keys, true, &r, p);
                Self::order(&mut inner, &inner_keys, true, &r, p);
                rel.updating = true;
            } else {
                let r = format!(
                    "a semi-join (EXISTS/IN) keeps both inputs and only adds results ({line})"
                );
                Self::write(rel, &r, p);
                Self::write(&mut inner, &r, p);
            }
            merge_flows(&mut rel.flows, &inner.flows);
        }
    }

    /// A `GROUP BY` key. Besides columns, the group windows of Flink's older syntax, `GROUP BY
    /// bidder, TUMBLE(dateTime, INTERVAL '10' SECOND)` (also `HOP`, `SESSION`): the window of
    /// their time attribute, as the window table functions give it.
    fn group_key(&self, e: &Expr, rel: &Rel) -> Lin {
        if let Expr::Function(f) = e {
            let n = f.name.to_string().to_ascii_uppercase();
            let first = match &f.args {
                FunctionArguments::List(l) => match l.args.first() {
                    Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(a))) => Some(a),
                    _ => None,
                },
                _ => None,
            };
            if let (true, Some(t)) = (["TUMBLE", "HOP", "SESSION"].contains(&n.as_str()), first) {
                let tl = self.lin(t, rel).0;
                if !tl.computed {
                    return Lin {
                        windows: if tl.proctime {
                            BTreeSet::new()
                        } else {
                            tl.attrs
                        },
                        proctime: tl.proctime,
                        event: tl.event,
                        ..Lin::default()
                    };
                }
            }
        }
        self.lin(e, rel).0
    }

    fn select(&mut self, s: &Select) -> Rel {
        let mut rel = Rel::default();
        for (i, twj) in s.from.iter().enumerate() {
            let r = self.from(twj);
            rel = if i == 0 {
                r
            } else {
                self.join(rel, r, "inner", None, pos_of(twj, self.text))
            };
        }
        if !s.lateral_views.is_empty() || s.top.is_some() || !s.connect_by.is_empty() {
            self.unsupported(
                "LATERAL VIEW, TOP or CONNECT BY".to_string(),
                pos_of(s, self.text),
            );
        }
        if let Some(w) = &s.selection {
            // `FROM a, b WHERE a.id = b.auction` joins like `ON`: its top-level equalities carry
            // keys across, as a join condition's do.
            let mut conjuncts = vec![w];
            while let Some(c) = conjuncts.pop() {
                match c {
                    Expr::BinaryOp {
                        left,
                        op: sqlparser::ast::BinaryOperator::And,
                        right,
                    } => conjuncts.extend([&**left, &**right]),
                    Expr::Nested(n) => conjuncts.push(n),
                    Expr::BinaryOp {
                        left,
                        op: sqlparser::ast::BinaryOperator::Eq,
                        right,
                    } => {
                        let pair = (self.lin(left, &rel).0, self.lin(right, &rel).0);
                        rel.equiv.push(pair);
                    }
                    _ => {}
                }
            }
            let (_, nd) = self.lin(w, &rel);
            Self::nondet(
                &mut rel,
                &nd,
                "in WHERE decides which rows pass by the wall clock",
            );
            self.subqueries(w, &mut rel);
        }
        // The projection: the output columns and what they call.
        let mut cols = Vec::new();
        let mut open = None;
        let mut aggregate = None;
        let mut overs = Vec::new();
        for item in &s.projection {
            let (name, e) = match item {
                SelectItem::UnnamedExpr(e) => (
                    match e {
                        Expr::Identifier(i) => i.value.clone(),
                        Expr::CompoundIdentifier(p) => {
                            p.last().map(|i| i.value.clone()).unwrap_or_default()
                        }
                        other => other.to_string(),
                    },
                    e,
                ),
                SelectItem::ExprWithAlias { expr, alias } => (alias.value.clone(), expr),
                SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..) => {
                    for e in &rel.scope {
                        cols.extend(e.cols.iter().cloned());
                        if open.is_none() {
                            open = e.open.clone();
                        }
                    }
                    continue;
                }
                other => {
                    self.unsupported(
                        format!("the select item `{}`", clip(&other.to_string())),
                        pos_of(other, self.text),
                    );
                    continue;
                }
            };
            let (l, nd) = self.lin(e, &rel);
            Self::nondet(&mut rel, &nd, "in the result");
            let _ = visit_expressions(e, |x| {
                if let Expr::Function(f) = x {
                    let n = f.name.to_string().to_ascii_uppercase();
                    match &f.over {
                        Some(w) => overs.push((n, w.clone(), pos_of(f, self.text))),
                        None if AGGREGATES.contains(&n.as_str()) && aggregate.is_none() => {
                            aggregate = Some((f.to_string(), pos_of(f, self.text)))
                        }
                        None => {}
                    }
                }
                ControlFlow::<()>::Continue(())
            });
            cols.push((name, l));
        }
        for (n, w, p) in overs {
            let WindowType::WindowSpec(spec) = w else {
                self.unsupported("a named OVER window".to_string(), p);
                continue;
            };
            let keys: Vec<Lin> = spec
                .partition_by
                .iter()
                .map(|e| self.lin(e, &rel).0)
                .collect();
            let by_proctime = spec
                .order_by
                .iter()
                .any(|o| self.lin(&o.expr, &rel).0.proctime);
            let what = if n == "ROW_NUMBER" || n == "RANK" || n == "DENSE_RANK" {
                format!(
                    "{n}() OVER (PARTITION BY ...) ranks rows as they arrive (a Top-N or a deduplication)"
                )
            } else {
                format!("{n}(...) OVER an aggregation window emits a running result per row")
            };
            let r = format!("{what} ({})", self.line(p));
            Self::order(&mut rel, &keys, true, &r, p);
            if by_proctime {
                Self::nondet(
                    &mut rel,
                    &[("ORDER BY processing time".to_string(), p)],
                    "in the OVER window keeps whichever row arrives first",
                );
            }
            rel.updating = true;
        }
        if let Some(h) = &s.having {
            let (_, nd) = self.lin(h, &rel);
            Self::nondet(&mut rel, &nd, "in HAVING");
        }
        let group: Vec<&Expr> = match &s.group_by {
            GroupByExpr::Expressions(es, _) => es.iter().collect(),
            GroupByExpr::All(_) => {
                self.unsupported("GROUP BY ALL".to_string(), pos_of(s, self.text));
                Vec::new()
            }
        };
        if !group.is_empty() {
            let keys: Vec<Lin> = group.iter().map(|e| self.group_key(e, &rel)).collect();
            let p = pos_of(group[0], self.text);
            let shown = group
                .iter()
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
                .join(", ");
            let agg = aggregate
                .as_ref()
                .map_or(String::new(), |(a, _)| format!("{a} "));
            let windowed = keys.iter().any(|k| !k.windows.is_empty());
            let event_ddl = keys.iter().any(|k| !k.windows.is_empty() && k.event);
            let proc = keys.iter().any(|k| k.proctime);
            let on: Vec<String> = keys
                .iter()
                .flat_map(|k| k.windows.iter().map(|(t, a)| format!("`{t}.{a}`")))
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            let line = self.line(p);
            if event_ddl {
                let r = format!(
                    "{agg}GROUP BY {shown} over a window on {}: emitted once per window when the DDL's WATERMARK FOR passes its end (records later than its bound are dropped) ({line})",
                    on.join(", ")
                );
                Self::order(&mut rel, &keys, true, &r, p);
            } else if windowed {
                let r = format!(
                    "{agg}GROUP BY {shown} over a window on {}: emitted once per window when the watermark passes its end ({line})",
                    on.join(", ")
                );
                Self::order(&mut rel, &keys, true, &r, p);
            } else if proc {
                let r = format!("{agg}GROUP BY {shown} over a processing-time window ({line})");
                Self::order(&mut rel, &keys, true, &r, p);
                // The column was computed from PROCTIME() elsewhere (a subquery, the DDL):
                // grouping by it is where the wall clock decides the result.
                Self::nondet(
                    &mut rel,
                    &[(format!("GROUP BY {shown} on processing time"), p)],
                    "closes groups by the wall clock",
                );
                rel.updating = true;
            } else {
                let r = format!(
                    "{agg}GROUP BY {shown} updates a result per group as records arrive ({line})"
                );
                Self::order(&mut rel, &keys, true, &r, p);
                rel.updating = true;
            }
        } else if let Some((a, p)) = aggregate {
            let r = format!(
                "{a} without GROUP BY updates one global result as records arrive ({})",
                self.line(p)
            );
            Self::order(&mut rel, &[], true, &r, p);
            rel.updating = true;
        }
        if s.distinct.is_some() {
            let p = pos_of(s, self.text);
            let keys: Vec<Lin> = cols.iter().map(|c| c.1.clone()).collect();
            let r = format!(
                "SELECT DISTINCT keeps the first of each row ({})",
                self.line(p)
            );
            Self::order(&mut rel, &keys, true, &r, p);
            rel.updating = true;
        }
        rel.scope = vec![Entry {
            qual: None,
            cols,
            open,
        }];
        rel
    }
}

fn clip(s: &str) -> String {
    if s.chars().count() > 60 {
        let mut t: String = s.chars().take(57).collect();
        t.push_str("...");
        t
    } else {
        s.to_string()
    }
}

/// The message of a parser error without its position, and the position.
fn split_error(e: &ParserError) -> (String, Option<(u64, u64)>) {
    let msg = match e {
        ParserError::TokenizerError(m) | ParserError::ParserError(m) => m.clone(),
        ParserError::RecursionLimitExceeded => {
            return ("the query nests deeper than 50 levels".to_string(), None);
        }
    };
    if let Some(i) = msg.rfind(" at Line: ") {
        let tail = &msg[i + " at Line: ".len()..];
        let mut parts = tail.split(", Column: ");
        let line = parts.next().and_then(|l| l.trim().parse().ok());
        let col = parts.next().and_then(|c| c.trim().parse().ok());
        if let (Some(l), Some(c)) = (line, col) {
            return (msg[..i].to_string(), Some((l, c)));
        }
    }
    (msg, None)
}

/// Derives the paths of a component from its SQL. `file` is the spec's text, `map` places the
/// program in it, `component` names it in messages.
pub fn derive(program: &str, map: &TextMap, file: &str, component: &str) -> Derivation {
    let mut out = Derivation::default();
    let at = |p: Pos| map.span(p.0, p.1, p.2, file);
    if program.len() > MAX_SQL_BYTES {
        out.failed = true;
        out.diagnostics.push(
            Diagnostic::new(
                &codes::WHITEBOX_SYNTAX,
                format!("the SQL of component `{component}` is {} bytes, more than the {MAX_SQL_BYTES} read", program.len()),
            )
            .at(at((1, 1, 1)), "program starts here")
            .help("split the logic into several components"),
        );
        return out;
    }
    // A chain of binary operators parses into a tree as deep as the chain, which every walk
    // (ours, the AST's own drop) recurses through: bound it before parsing.
    if let Ok(tokens) = sqlparser::tokenizer::Tokenizer::new(&FlinkDialect::default(), program)
        .tokenize_with_location()
    {
        let ops = tokens
            .iter()
            .filter(|t| match &t.token {
                Token::Word(w) => {
                    w.quote_style.is_none()
                        && (w.value.eq_ignore_ascii_case("AND")
                            || w.value.eq_ignore_ascii_case("OR"))
                }
                Token::Plus
                | Token::Minus
                | Token::Mul
                | Token::Div
                | Token::Mod
                | Token::Eq
                | Token::Neq
                | Token::Lt
                | Token::Gt
                | Token::LtEq
                | Token::GtEq
                | Token::StringConcat => true,
                _ => false,
            })
            .count();
        if ops > MAX_SQL_OPERATORS {
            let t = &tokens[0];
            out.failed = true;
            out.diagnostics.push(
                Diagnostic::new(
                    &codes::WHITEBOX_SYNTAX,
                    format!("the SQL of component `{component}` has {ops} operators, more than the {MAX_SQL_OPERATORS} read"),
                )
                .at(at((t.span.start.line, t.span.start.column, 1)), "program starts here")
                .help("split the logic into several components"),
            );
            return out;
        }
    }
    let dialect = FlinkDialect::default();
    let parsed = Parser::new(&dialect)
        .with_recursion_limit(50)
        .try_with_sql(program)
        .and_then(|mut p| p.parse_statements());
    let stmts = match parsed {
        Ok(s) => s,
        Err(e) => {
            let (msg, pos) = split_error(&e);
            let (l, c) = pos.unwrap_or((1, 1));
            out.failed = true;
            out.diagnostics.push(
                Diagnostic::new(
                    &codes::WHITEBOX_SYNTAX,
                    format!("the SQL of component `{component}` does not parse: {msg}"),
                )
                .at(at((l, c, 1)), "here")
                .help("blazes reads Flink SQL; see `blazes explain sql`"),
            );
            return out;
        }
    };
    let mut walk = Walk {
        text: program,
        map,
        ddl: dialect.ddl.take().into_iter().collect(),
        views: BTreeMap::new(),
        unsupported: Vec::new(),
    };
    let mut outputs: BTreeMap<String, (BTreeMap<String, Flow>, Pos)> = BTreeMap::new();
    for st in &stmts {
        let before = walk.unsupported.len();
        let (target, rel, p) = match st {
            Statement::CreateTable(_) => continue,
            Statement::CreateView(v) => {
                let r = walk.query(&v.query);
                walk.views.insert(last(&v.name), r);
                continue;
            }
            Statement::Insert(ins) => {
                let Some(src) = &ins.source else {
                    walk.unsupported("INSERT without a query".to_string(), pos_of(st, program));
                    continue;
                };
                let target = match &ins.table {
                    sqlparser::ast::TableObject::TableName(n) => last(n),
                    other => other.to_string(),
                };
                (target, walk.query(src), pos_of(st, program))
            }
            Statement::Query(q) => ("out".to_string(), walk.query(q), pos_of(st, program)),
            other => {
                walk.unsupported(
                    format!("the statement `{}`", clip(&other.to_string())),
                    pos_of(other, program),
                );
                continue;
            }
        };
        let mut flows = rel.flows;
        if walk.unsupported.len() > before {
            let (what, up) = walk.unsupported[before].clone();
            for f in flows.values_mut() {
                f.order = true;
                f.writes = true;
                f.star = true;
                f.reasons.push((
                    format!(
                        "{what} is not understood: the most conservative annotation (line {})",
                        map.file_line(up.0)
                    ),
                    up,
                ));
            }
        }
        let e = outputs
            .entry(target)
            .or_insert_with(|| (BTreeMap::new(), p));
        merge_flows(&mut e.0, &flows);
    }
    for (what, p) in &walk.unsupported {
        out.diagnostics.push(
            Diagnostic::new(
                &codes::WHITEBOX_UNSUPPORTED,
                format!("the SQL of component `{component}` uses {what}, which blazes does not analyse: the paths it touches are OW(*)"),
            )
            .at(at(*p), "not analysed")
            .help("declare the paths by hand in `paths:` if you know better; see `blazes explain sql`"),
        );
    }
    for (target, (flows, sp)) in outputs {
        let mut nondet: Vec<(String, Pos)> = Vec::new();
        for (input, f) in &flows {
            let a = annotation(f.order, f.writes);
            let gate = f.order.then(|| {
                if f.star || f.gate.is_empty() {
                    DerivedGate::Star
                } else {
                    DerivedGate::Keys(f.gate.iter().cloned().collect())
                }
            });
            let reason = if f.reasons.is_empty() {
                "projection and filter only".to_string()
            } else {
                dedup(f.reasons.iter().map(|r| r.0.clone())).join("; ")
            };
            let p = f.reasons.last().map_or(sp, |r| r.1);
            out.paths.push(DerivedPath {
                from: input.clone(),
                to: target.clone(),
                annotation: a,
                gate,
                reason,
                span: at(p),
            });
            nondet.extend(f.nondet.iter().cloned());
        }
        if let Some(first) = nondet.first().cloned() {
            out.paths.push(DerivedPath {
                from: CLOCK.to_string(),
                to: target.clone(),
                annotation: crate::label::Annotation::OW,
                gate: Some(DerivedGate::Star),
                reason: format!(
                    "nondeterministic whatever the order: {} (no order or seal of the inputs fixes this; replace processing time by event time)",
                    dedup(nondet.iter().map(|n| format!("{} (line {})", n.0, map.file_line(n.1 .0)))).join("; ")
                ),
                span: at(first.1),
            });
        }
    }
    out.paths
        .sort_by(|a, b| (&a.from, &a.to).cmp(&(&b.from, &b.to)));
    for (table, ddl) in &walk.ddl {
        if let Some((attr, p)) = &ddl.watermark
            && out.paths.iter().any(|d| &d.from == table)
        {
            out.watermarks
                .push((table.clone(), window_attr(attr), at(*p)));
        }
    }
    out
}

fn dedup(it: impl Iterator<Item = String>) -> Vec<String> {
    let mut seen = BTreeSet::new();
    it.filter(|s| seen.insert(s.clone())).collect()
}
