//! The operators Flink's SQL planner puts in a plan (`GroupAggregate[4]`,
//! `[4]:GroupAggregate(groupBy=[user_id], select=[...])`, `Sink: Writer`), read by their kind.
//!
//! A plan names each physical operator with ids that change from one plan to the next (`[4]`,
//! `-4`); the catalogue matches the operator's *kind* without them (`GroupAggregate`), so that
//! an entry (and the one I001 proposes) holds for every plan. What the kind's determinism
//! depends on is read from the node's description: the keys it groups or partitions by
//! (`groupBy=[...]`, `partitionBy=[...]`, `key=[...]`), which a gate calls `$group`, and for a
//! window, an `OVER` or a `MATCH_RECOGNIZE`, whether its time attribute is a rowtime (one a
//! `WatermarkAssigner` declares: the watermark seals it) or a processing time (`PROCTIME()`:
//! nothing does). The class of such an operator says which: `WindowAggregate (event time)`,
//! `WindowAggregate (processing time)`, or `WindowAggregate` when the plan does not show it.

use std::collections::BTreeSet;

/// The kinds the planner prints, longest first where one is a prefix of another.
const KINDS: &[&str] = &[
    "ChangelogNormalize",
    "ConstraintEnforcer",
    "Deduplicate",
    "DropUpdateBefore",
    "Expand",
    "GlobalGroupAggregate",
    "GlobalWindowAggregate",
    "GroupAggregate",
    "GroupWindowAggregate",
    "IncrementalGroupAggregate",
    "IntervalJoin",
    "Join",
    "LocalGroupAggregate",
    "LocalWindowAggregate",
    "LookupJoin",
    "Match",
    "MiniBatchAssigner",
    "OverAggregate",
    "Rank",
    "SourceConversion",
    "TableSourceScan",
    "Union",
    "WatermarkAssigner",
    "WindowAggregate",
    "WindowDeduplicate",
    "WindowJoin",
    "WindowRank",
    "WindowTableFunction",
    "Calc",
    "Sink",
    "Writer",
    "Committer",
];

/// Kinds whose determinism depends on their time attribute.
const TIMED: &[&str] = &[
    "GroupWindowAggregate",
    "WindowAggregate",
    "LocalWindowAggregate",
    "GlobalWindowAggregate",
    "WindowJoin",
    "WindowRank",
    "WindowDeduplicate",
    "OverAggregate",
    "Match",
];

/// Text without the plan-specific ids: `[4]` anywhere, a leading `[4]:`, a trailing `-4`.
pub fn without_ids(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('[') {
        let tail = &rest[i + 1..];
        let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && tail.as_bytes().get(digits) == Some(&b']') {
            out.push_str(&rest[..i]);
            rest = &tail[digits + 1..];
            // `[4]:GroupAggregate`: the colon belonged to the id.
            if out.trim().is_empty() {
                rest = rest.strip_prefix(':').unwrap_or(rest);
            }
        } else {
            out.push_str(&rest[..=i]);
            rest = tail;
        }
    }
    out.push_str(rest);
    let trimmed = out.trim();
    let stripped = match trimmed.rfind('-') {
        Some(i)
            if i > 0
                && i + 1 < trimmed.len()
                && trimmed[i + 1..].bytes().all(|b| b.is_ascii_digit()) =>
        {
            &trimmed[..i]
        }
        _ => trimmed,
    };
    stripped.to_string()
}

/// The planner's kind of an operator whose type (without ids) is `ty`: the word before its
/// details, or the last word after a `:` (`Sink: Writer`, `totals: Committer`).
pub fn kind(ty: &str) -> Option<&'static str> {
    let head = ty.split('(').next().unwrap_or(ty).trim();
    let word = head.rsplit(':').next().unwrap_or(head).trim();
    KINDS.iter().copied().find(|k| *k == word)
}

/// Whether a kind is a sink's: `Sink`, or the two operators of a sink v2.
pub fn is_sink(kind: &str) -> bool {
    matches!(kind, "Sink" | "Writer" | "Committer")
}

/// The list after `field=[` in `text`, split at top-level commas (`groupBy=[a, b]`).
fn list_after(text: &str, field: &str) -> Option<Vec<String>> {
    let needle = format!("{field}=[");
    let mut from = 0;
    while let Some(i) = text[from..].find(&needle) {
        let at = from + i;
        // The field itself, not the end of a longer one (`leftKey=[` is not `key=[`).
        let boundary = text[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !c.is_alphanumeric());
        if boundary {
            let body = &text[at + needle.len()..];
            let mut depth = 0i32;
            let mut end = body.len();
            for (j, c) in body.char_indices() {
                match c {
                    '[' | '(' => depth += 1,
                    ']' | ')' if depth == 0 => {
                        end = j;
                        break;
                    }
                    ']' | ')' => depth -= 1,
                    _ => {}
                }
            }
            return Some(
                body[..end]
                    .split(',')
                    .map(|k| {
                        // `sales DESC`, `$f0`: the column, as a plain attribute name.
                        k.split_whitespace()
                            .next()
                            .unwrap_or("")
                            .chars()
                            .map(|c| {
                                if c.is_alphanumeric() || c == '_' {
                                    c
                                } else {
                                    '_'
                                }
                            })
                            .collect::<String>()
                    })
                    .filter(|k| !k.is_empty())
                    .collect(),
            );
        }
        from = at + needle.len();
    }
    None
}

/// The keys a node groups or partitions by, as its description prints them; an empty list is
/// a global aggregate (no key), `None` a description that does not say.
pub fn group_keys(kind: &str, text: &str) -> Option<Vec<String>> {
    let field = match kind {
        "Rank" | "WindowRank" | "OverAggregate" | "Match" | "WindowDeduplicate" => "partitionBy",
        "Deduplicate" | "ChangelogNormalize" => "key",
        // It merges the partial accumulators of each local group.
        "IncrementalGroupAggregate" => "partialAggGrouping",
        k if k.contains("Aggregate") => "groupBy",
        _ => return None,
    };
    match list_after(text, field) {
        Some(keys) => Some(keys),
        // An aggregate without `groupBy` aggregates everything: no key.
        None if field == "groupBy" && text.contains("select=[") => Some(Vec::new()),
        None => None,
    }
}

/// The time attribute a timed operator's description names: a window's `time_col=[ts]` or
/// the second argument of `TumblingGroupWindow('w$, ts, 5000)`, the first of `orderBy=[ts]`.
fn time_attribute(text: &str) -> Option<String> {
    if let Some(cols) = list_after(text, "time_col") {
        return cols.into_iter().next();
    }
    for w in [
        "TumblingGroupWindow(",
        "SlidingGroupWindow(",
        "SessionGroupWindow(",
    ] {
        if let Some(i) = text.find(w) {
            let args = &text[i + w.len()..];
            let arg = args.split(',').nth(1)?.trim();
            let arg = arg.split(')').next().unwrap_or(arg).trim();
            return Some(arg.to_string());
        }
    }
    list_after(text, "orderBy").and_then(|c| c.into_iter().next())
}

/// The rowtime attributes a plan declares (`WatermarkAssigner(rowtime=[ts], ...)`, a scan's
/// `watermark=[...]` on a column) and its processing-time ones (`PROCTIME() AS pt`).
#[derive(Default)]
pub struct Times {
    rowtime: BTreeSet<String>,
    proctime: BTreeSet<String>,
}

impl Times {
    /// Reads what one operator's text declares.
    pub fn read(&mut self, text: &str) {
        if let Some(cols) = list_after(text, "rowtime") {
            self.rowtime.extend(cols);
        }
        let mut rest = text;
        while let Some(i) = rest.find("PROCTIME() AS ") {
            let after = &rest[i + "PROCTIME() AS ".len()..];
            let name: String = after
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                self.proctime.insert(name);
            }
            rest = after;
        }
    }

    /// The class of an operator of `kind` described by `text`: the kind, and for a timed
    /// kind which time it runs on when the plan shows it.
    pub fn class(&self, kind: &str, text: &str) -> String {
        if !TIMED.contains(&kind) {
            return kind.to_string();
        }
        let time = time_attribute(text);
        let lower = text.to_ascii_lowercase();
        let which = match &time {
            Some(t) if self.rowtime.contains(t) => Some("event time"),
            Some(t) if self.proctime.contains(t) || t.to_ascii_lowercase().contains("proctime") => {
                Some("processing time")
            }
            _ if lower.contains("proctime") => Some("processing time"),
            _ if lower.contains("rowtime") => Some("event time"),
            _ => None,
        };
        match which {
            Some(w) => format!("{kind} ({w})"),
            None => kind.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_stripped() {
        assert_eq!(without_ids("GroupAggregate[4]"), "GroupAggregate");
        assert_eq!(
            without_ids("[4]:GroupAggregate(groupBy=[a], select=[a])"),
            "GroupAggregate(groupBy=[a], select=[a])"
        );
        assert_eq!(without_ids("Calc-3"), "Calc");
        assert_eq!(without_ids("enrich-with-customer"), "enrich-with-customer");
        assert_eq!(
            without_ids("Sink: totals[6]: Writer"),
            "Sink: totals: Writer"
        );
    }

    #[test]
    fn kinds_and_keys_are_read() {
        assert_eq!(kind("GroupAggregate(groupBy=[a])"), Some("GroupAggregate"));
        assert_eq!(kind("Sink: Writer"), Some("Writer"));
        assert_eq!(kind("Map"), None);
        assert_eq!(
            group_keys(
                "GroupAggregate",
                "GroupAggregate(groupBy=[user_id, region], select=[x])"
            ),
            Some(vec!["user_id".to_string(), "region".to_string()])
        );
        assert_eq!(
            group_keys("GroupAggregate", "GroupAggregate(select=[COUNT(*) AS c])"),
            Some(vec![])
        );
        assert_eq!(
            group_keys(
                "Rank",
                "Rank(rankType=[ROW_NUMBER], partitionBy=[category], orderBy=[sales DESC])"
            ),
            Some(vec!["category".to_string()])
        );
        assert_eq!(group_keys("Calc", "Calc(select=[a])"), None);
    }

    #[test]
    fn times_decide_the_class_of_timed_kinds() {
        let mut t = Times::default();
        t.read("WatermarkAssigner(rowtime=[ts], watermark=[(ts - 5000:INTERVAL SECOND)])");
        t.read("Calc(select=[user_id, PROCTIME() AS pt])");
        assert_eq!(
            t.class(
                "WindowAggregate",
                "WindowAggregate(groupBy=[a], window=[TUMBLE(time_col=[ts], size=[1 min])])"
            ),
            "WindowAggregate (event time)"
        );
        assert_eq!(
            t.class(
                "WindowAggregate",
                "WindowAggregate(groupBy=[a], window=[TUMBLE(time_col=[pt], size=[1 min])])"
            ),
            "WindowAggregate (processing time)"
        );
        assert_eq!(
            t.class(
                "GroupWindowAggregate",
                "GroupWindowAggregate(window=[TumblingGroupWindow('w$, other, 5000)])"
            ),
            "GroupWindowAggregate"
        );
        assert_eq!(t.class("Calc", "Calc(select=[a])"), "Calc");
    }
}
