//! `--format sarif`: one SARIF 2.1.0 log with one run, as GitHub code scanning ingests it.
//!
//! The rules are the diagnostic code registry ([`crate::codes`]), with the same text
//! `blazes explain` prints, so the code scanning UI and the terminal never disagree. Columns
//! are UTF-16 code units (SARIF's default `columnKind`, stated explicitly on the run) because
//! that is what GitHub and the SARIF viewers compute positions in.

use std::collections::BTreeMap;

use serde_sarif::sarif::{
    ArtifactContent, ArtifactLocation, Location, Message, MultiformatMessageString,
    PhysicalLocation, Region, ReportingConfiguration, ReportingDescriptor, Result as SarifResult,
    ResultLevel, Run, Sarif, Tool, ToolComponent,
};

use crate::check::FileReport;
use crate::codes::{self, Code};
use crate::diagnostic::{Diagnostic, LineIndex, Severity, Span};

/// The OASIS schema of the format version we write.
pub const SCHEMA: &str =
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";

/// Where people learn what the tool does: the crate's repository when Cargo.toml names one,
/// else the paper the analysis implements.
pub const INFORMATION_URI: &str = {
    let repo = env!("CARGO_PKG_REPOSITORY");
    if repo.is_empty() {
        "https://arxiv.org/abs/1309.3324"
    } else {
        repo
    }
};

/// The key of our `partialFingerprints` entry; bump the version when the hashed fields change,
/// so code scanning treats old and new fingerprints as different schemes instead of
/// mismatching them.
pub const FINGERPRINT_KEY: &str = "blazes/v1";

/// The base the artifact URIs are relative to (GitHub resolves it to the repository root).
pub const SRCROOT: &str = "%SRCROOT%";

/// Renders the reports as one SARIF log (pretty-printed JSON, trailing newline). `cwd` makes
/// absolute spec paths relative; relative paths are used as given.
pub fn render(reports: &[FileReport], cwd: Option<&std::path::Path>) -> String {
    let rules: Vec<ReportingDescriptor> = codes::ALL.iter().map(|c| rule(c)).collect();
    let mut results = Vec::new();
    for r in reports {
        file_results(r, cwd, &mut results);
    }
    let driver = ToolComponent::builder()
        .name("blazes")
        .full_name(format!("blazes {}", env!("CARGO_PKG_VERSION")))
        .version(env!("CARGO_PKG_VERSION"))
        .semantic_version(env!("CARGO_PKG_VERSION"))
        .information_uri(INFORMATION_URI)
        .rules(rules)
        .build();
    let run = Run::builder()
        .tool(Tool::builder().driver(driver).build())
        .column_kind(serde_json::json!("utf16CodeUnits"))
        .results(results)
        .build();
    let log = Sarif::builder()
        .schema(SCHEMA)
        .version(serde_json::json!("2.1.0"))
        .runs(vec![run])
        .build();
    let mut s = serde_json::to_string_pretty(&log).expect("a SARIF log always serialises");
    s.push('\n');
    s
}

/// SARIF validators want sentences; our messages and summaries are written without the final
/// period so they compose into other sentences.
fn sentence(s: &str) -> String {
    let t = s.trim_end();
    if t.ends_with(['.', '?', '!']) {
        t.to_string()
    } else {
        format!("{t}.")
    }
}

/// `unordered-write` -> `UnorderedWrite`: SARIF's convention for a rule's friendly name.
fn pascal(name: &str) -> String {
    name.split('-')
        .map(|w| {
            let mut c = w.chars();
            c.next().map_or_else(String::new, |f| {
                f.to_uppercase().collect::<String>() + c.as_str()
            })
        })
        .collect()
}

fn level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
    }
}

fn rule(c: &Code) -> ReportingDescriptor {
    let explain = format!("{} ({}): {}\n\n{}", c.id, c.name, c.summary, c.explanation);
    ReportingDescriptor::builder()
        .id(c.id)
        .name(pascal(c.name))
        .short_description(
            MultiformatMessageString::builder()
                .text(sentence(c.summary))
                .build(),
        )
        .full_description(
            MultiformatMessageString::builder()
                .text(sentence(c.explanation))
                .build(),
        )
        .help(
            MultiformatMessageString::builder()
                .text(explain.clone())
                .markdown(format!(
                    "**{}** ({}): {}\n\n{}\n\nRun `blazes explain {}` for this text in a terminal.",
                    c.id, c.name, c.summary, c.explanation, c.id
                ))
                .build(),
        )
        .help_uri(INFORMATION_URI)
        .default_configuration(
            ReportingConfiguration::builder()
                .level(serde_json::json!(level(c.severity)))
                .build(),
        )
        .build()
}

/// The URI of a spec path: relative to `cwd` when possible, with forward slashes and
/// percent-encoding, or `None` for standard input, which has no location to point at.
pub fn artifact_uri(path: &str, cwd: Option<&std::path::Path>) -> Option<(String, bool)> {
    if path == "<stdin>" || path == "-" {
        return None;
    }
    let p = std::path::Path::new(path);
    let climbs = p
        .components()
        .any(|c| matches!(c, std::path::Component::ParentDir));
    let (rel, relative) = if p.is_absolute() || climbs {
        // `../x.yaml` is not under the root the URI base stands for: resolve it against the
        // working directory, and fall back to an absolute URI when it lies outside.
        let abs = normalize(&cwd.map_or_else(|| p.to_path_buf(), |c| c.join(p)));
        match cwd.and_then(|c| abs.strip_prefix(normalize(c)).ok()) {
            Some(r) => (r.to_string_lossy().into_owned(), true),
            None if abs.is_absolute() => (abs.to_string_lossy().into_owned(), false),
            None => (path.to_string(), true),
        }
    } else {
        (path.to_string(), true)
    };
    let mut rel = rel.replace('\\', "/");
    while let Some(r) = rel.strip_prefix("./") {
        rel = r.to_string();
    }
    let enc = percent_encode(&rel);
    Some(if relative {
        (enc, true)
    } else {
        (format!("file://{enc}"), false)
    })
}

/// Removes `.` and resolves `..` lexically (no file system access: the spec may not exist).
fn normalize(p: &std::path::Path) -> std::path::PathBuf {
    use std::path::Component;
    let mut out = std::path::PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// Encodes everything but RFC 3986 unreserved characters and `/`.
fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// 1-based line and UTF-16 column of a byte offset.
fn line_col_utf16(text: &str, index: &LineIndex, offset: usize) -> (i64, i64) {
    let offset = offset.min(text.len());
    let (line, _) = index.line_col(text, offset);
    let start = index.offset(text, line, 1).min(offset);
    let col = text
        .get(start..offset)
        .map_or(offset - start, |s| s.encode_utf16().count());
    (line as i64, col as i64 + 1)
}

fn region(text: &str, index: &LineIndex, span: Span) -> Region {
    let (sl, sc) = line_col_utf16(text, index, span.offset);
    let (el, ec) = line_col_utf16(text, index, span.end());
    let mut r = Region::builder()
        .start_line(sl)
        .start_column(sc)
        .end_line(el)
        .end_column(ec)
        .build();
    if let Some(t) = text.get(span.offset..span.end()).filter(|t| !t.is_empty()) {
        r.snippet = Some(ArtifactContent::builder().text(t).build());
    }
    r
}

/// The lines of the span with one line of context either side, so viewers without the
/// repository can still show where the finding is.
fn context_region(text: &str, index: &LineIndex, span: Span) -> Option<Region> {
    if text.is_empty() {
        return None;
    }
    let (sl, _) = index.line_col(text, span.offset);
    let (el, _) = index.line_col(text, span.end());
    let first = sl.saturating_sub(1).max(1);
    let start = index.offset(text, first, 1);
    let end = text[span.end().min(text.len())..]
        .match_indices('\n')
        .nth(1)
        .map_or(text.len(), |(i, _)| span.end().min(text.len()) + i + 1);
    let (last, _) = index.line_col(text, end.saturating_sub(1).max(start));
    let snippet = text.get(start..end)?;
    Some(
        Region::builder()
            .start_line(first as i64)
            .end_line(last.max(el) as i64)
            .snippet(ArtifactContent::builder().text(snippet).build())
            .build(),
    )
}

fn location(
    uri: &Option<(String, bool)>,
    text: &str,
    index: &LineIndex,
    span: Span,
) -> Option<PhysicalLocation> {
    let (u, relative) = uri.as_ref()?;
    let artifact = if *relative {
        ArtifactLocation::builder()
            .uri(u.clone())
            .uri_base_id(SRCROOT)
            .build()
    } else {
        ArtifactLocation::builder().uri(u.clone()).build()
    };
    let mut pl = PhysicalLocation::builder()
        .artifact_location(artifact)
        .region(region(text, index, span))
        .build();
    pl.context_region = context_region(text, index, span);
    Some(pl)
}

/// FNV-1a, 64 bits: small, stable across platforms and releases (unlike `DefaultHasher`).
fn fnv1a(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for &b in p.as_bytes().iter().chain(std::iter::once(&0u8)) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// The identity of a finding: the rule, the file, the message (which names the components,
/// interfaces and labels involved) and the text under the primary span, never positions, so
/// a finding keeps its fingerprint when unrelated lines move.
fn fingerprint(path: &str, d: &Diagnostic, text: &str) -> String {
    let under = d
        .primary
        .as_ref()
        .and_then(|p| text.get(p.span.offset..p.span.end()))
        .unwrap_or("");
    format!(
        "{:016x}",
        fnv1a(&[d.code.id, path, &d.message, under.trim()])
    )
}

fn file_results(r: &FileReport, cwd: Option<&std::path::Path>, out: &mut Vec<SarifResult>) {
    let index = LineIndex::new(&r.text);
    let uri = artifact_uri(&r.path, cwd);
    let identity_path = uri.as_ref().map_or(r.path.as_str(), |(u, _)| u.as_str());
    // Identical findings in one file get an occurrence number, so their fingerprints differ
    // and stay stable as long as their relative order does.
    let mut seen: BTreeMap<String, u32> = BTreeMap::new();
    for d in r.diagnostics() {
        let rule_index = codes::ALL
            .iter()
            .position(|c| c.id == d.code.id)
            .unwrap_or(0) as i64;
        let mut text = sentence(&d.message);
        if let Some(h) = &d.help {
            text.push_str("\nHelp: ");
            text.push_str(&sentence(h));
        }
        let span = d.primary.as_ref().map_or(Span::new(0, 0), |p| p.span);
        let mut locations = Vec::new();
        if let Some(pl) = location(&uri, &r.text, &index, span) {
            let mut loc = Location::builder().physical_location(pl).build();
            if let Some(p) = d.primary.as_ref().filter(|p| !p.text.is_empty()) {
                loc.message = Some(Message::builder().text(sentence(&p.text)).build());
            }
            locations.push(loc);
        }
        let related: Vec<Location> = d
            .related
            .iter()
            .enumerate()
            .filter_map(|(i, n)| {
                let pl = location(&uri, &r.text, &index, n.span)?;
                let mut loc = Location::builder()
                    .id(i as i64)
                    .physical_location(pl)
                    .build();
                if !n.text.is_empty() {
                    loc.message = Some(Message::builder().text(sentence(&n.text)).build());
                }
                Some(loc)
            })
            .collect();
        let base = fingerprint(identity_path, d, &r.text);
        let n = seen.entry(base.clone()).or_insert(0);
        *n += 1;
        let mut fps = BTreeMap::new();
        fps.insert(FINGERPRINT_KEY.to_string(), format!("{base}:{n}"));
        let lvl = match d.severity {
            Severity::Error => ResultLevel::Error,
            Severity::Warning => ResultLevel::Warning,
        };
        let mut res = SarifResult::builder()
            .rule_id(d.code.id)
            .rule_index(rule_index)
            .level(lvl)
            .message(Message::builder().text(text).build())
            .partial_fingerprints(fps)
            .build();
        if !locations.is_empty() {
            res.locations = Some(locations);
        }
        if !related.is_empty() {
            res.related_locations = Some(related);
        }
        out.push(res);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_columns_count_surrogate_pairs() {
        // `😀` is one char but two UTF-16 code units; `é` is one of each.
        let text = "a: é😀x\n";
        let index = LineIndex::new(text);
        let x = text.find('x').unwrap();
        assert_eq!(line_col_utf16(text, &index, x), (1, 7));
    }

    #[test]
    fn uris_are_relative_and_encoded() {
        let cwd = std::path::Path::new("/repo");
        assert_eq!(
            artifact_uri("./specs/a b.yaml", Some(cwd)),
            Some(("specs/a%20b.yaml".to_string(), true))
        );
        assert_eq!(
            artifact_uri("/repo/specs/x.yaml", Some(cwd)),
            Some(("specs/x.yaml".to_string(), true))
        );
        assert_eq!(
            artifact_uri("/elsewhere/x.yaml", Some(cwd)),
            Some(("file:///elsewhere/x.yaml".to_string(), false))
        );
        assert_eq!(
            artifact_uri("../repo/specs/x.yaml", Some(cwd)),
            Some(("specs/x.yaml".to_string(), true))
        );
        assert_eq!(
            artifact_uri("../other/x.yaml", Some(cwd)),
            Some(("file:///other/x.yaml".to_string(), false))
        );
        assert_eq!(artifact_uri("<stdin>", Some(cwd)), None);
    }

    #[test]
    fn friendly_names_are_pascal_case() {
        assert_eq!(pascal("unordered-write"), "UnorderedWrite");
        assert_eq!(pascal("gate"), "Gate");
    }

    #[test]
    fn fnv_is_the_reference_function() {
        // FNV-1a 64 of "a" followed by our 0 separator byte, computed by hand from the
        // published constants; guards against accidental changes to the fingerprint scheme.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in [b'a', 0] {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        assert_eq!(fnv1a(&["a"]), h);
    }
}
