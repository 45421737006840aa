//! SARIF artifact URIs: spec paths as code scanning resolves them against the repository.

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
