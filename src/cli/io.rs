//! The command line's contact with the outside world: reading specs (bounded by the size
//! limit, `-` for standard input), writing files atomically, printing to standard output, and
//! deciding on colour. Every subcommand goes through these, so each says a thing one way.

use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};

use super::args::Color;
use crate::check::{self, FileReport, Options, Outcome};
use crate::codes;
use crate::diagnostic::{Diagnostic, Span};
use crate::spec::Limits;

/// Which way a file was being used when an IO error happened: a missing file means something
/// different when reading (the file itself) than when writing (a directory on its path).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    Read,
    Write,
}

/// The reason of an IO error in the user's words: the common kinds as short phrases, the
/// others as the OS says them.
pub(crate) fn io_reason(e: &std::io::Error, access: Access) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => match access {
            Access::Read => "no such file".to_string(),
            Access::Write => "no such file or directory".to_string(),
        },
        std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        std::io::ErrorKind::IsADirectory => "it is a directory".to_string(),
        _ => e.to_string(),
    }
}

/// The name a spec is reported under: its path as given, `<stdin>` for `-`.
fn shown(path: &Path) -> String {
    if is_stdin(path) {
        "<stdin>".to_string()
    } else {
        path.display().to_string()
    }
}

/// Whether a spec argument means standard input.
pub(crate) fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Reads a spec from a path (`-` is standard input), bounded by the size limit; returns the
/// name to report it under with its bytes, or with the reason it cannot be read.
pub(crate) fn read_spec(
    path: &Path,
    limits: &Limits,
) -> Result<(String, Vec<u8>), (String, String)> {
    let shown = shown(path);
    let mut bytes = Vec::new();
    // Read one byte past the limit so an oversized input is detected without reading it all.
    let cap = limits.max_bytes as u64 + 1;
    let result = if is_stdin(path) {
        std::io::stdin().lock().take(cap).read_to_end(&mut bytes)
    } else {
        std::fs::File::open(path).and_then(|f| f.take(cap).read_to_end(&mut bytes))
    };
    match result {
        Ok(_) => Ok((shown, bytes)),
        Err(e) => Err((shown, io_reason(&e, Access::Read))),
    }
}

/// Reads the files a composed spec uses, bounded by the size limit like the spec itself.
pub(crate) struct DiskLoader<'l> {
    pub(crate) limits: &'l crate::spec::Limits,
}

impl crate::compose::Loader for DiskLoader<'_> {
    fn load(&mut self, path: &str) -> Result<Vec<u8>, String> {
        // `-` is standard input to `read_spec`; a `use:` names files only.
        if is_stdin(Path::new(path)) {
            return Err("`-` names standard input, not a file".to_string());
        }
        read_spec(Path::new(path), self.limits)
            .map(|(_, bytes)| bytes)
            .map_err(|(_, reason)| reason)
    }
}

/// Checks every spec; unreadable files become invalid reports so the others still run.
pub(crate) fn check_files(specs: &[PathBuf], options: &Options) -> Vec<FileReport> {
    specs.iter().map(|p| check_file(p, options)).collect()
}

/// Checks one spec; an unreadable file is an invalid report.
pub(crate) fn check_file(spec: &Path, options: &Options) -> FileReport {
    match read_spec(spec, &options.limits) {
        Ok((shown, bytes)) => check::check_composed(
            &shown,
            bytes,
            options,
            &mut DiskLoader {
                limits: &options.limits,
            },
        ),
        Err((shown, reason)) => FileReport {
            path: shown.clone(),
            text: String::new(),
            outcome: Outcome::Invalid(vec![
                Diagnostic::new(
                    &codes::UNREADABLE,
                    format!("cannot read `{shown}`: {reason}"),
                )
                .at(Span::new(0, 0), ""),
            ]),

            files: Default::default(),
            input: crate::spec::Input::Spec,
        },
    }
}

/// Whether to colour what goes to `stream` (standard output or standard error): as asked,
/// or, for `auto`, when it is a terminal, `NO_COLOR` is unset or empty, and `TERM` is not
/// `dumb` (a terminal that shows escape sequences as text: Emacs' shell, some CI logs).
pub(crate) fn use_color(choice: Color, stream: &impl IsTerminal) -> bool {
    match choice {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => {
            stream.is_terminal()
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                && std::env::var_os("TERM").is_none_or(|t| t != "dumb")
        }
    }
}

/// Writes to standard output and flushes. A closed pipe (`blazes check ... | head`) is not an
/// error worth a panic, nor a message: the reader has what it wanted.
pub(crate) fn write_out(bytes: &[u8]) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(bytes);
    let _ = out.flush();
}

/// Whether `a` and `b` name the same existing file (so writing one would destroy the other).
pub(crate) fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Writes `bytes` to `path` through a temporary file in the same directory and a rename, so
/// readers never see a half-written file and a failure leaves the old file intact.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_all_atomically(&[(path, bytes)]).map_err(|(_, e)| e)
}

/// Writes every file or none: each is staged in a temporary file beside it (keeping the mode
/// of the file it replaces) before any is renamed into place, and if a rename fails the files
/// already replaced get their old bytes back. On failure, the path that failed and why.
pub(crate) fn write_all_atomically(
    files: &[(&Path, &[u8])],
) -> Result<(), (PathBuf, std::io::Error)> {
    let mut staged: Vec<PathBuf> = Vec::with_capacity(files.len());
    let unstage = |staged: &[PathBuf]| {
        for t in staged {
            let _ = std::fs::remove_file(t);
        }
    };
    for (path, bytes) in files {
        match stage(path, bytes) {
            Ok(tmp) => staged.push(tmp),
            Err(e) => {
                unstage(&staged);
                return Err((path.to_path_buf(), e));
            }
        }
    }
    // What each file held, to put back if a later rename fails (`None`: it did not exist).
    let old: Vec<Option<Vec<u8>>> = files.iter().map(|(p, _)| std::fs::read(p).ok()).collect();
    for (i, ((path, _), tmp)) in files.iter().zip(&staged).enumerate() {
        if let Err(e) = std::fs::rename(tmp, path) {
            unstage(&staged[i..]);
            for ((done, _), was) in files[..i].iter().zip(&old) {
                let _ = match was {
                    Some(bytes) => stage(done, bytes).and_then(|t| std::fs::rename(t, done)),
                    None => std::fs::remove_file(done),
                };
            }
            return Err((path.to_path_buf(), e));
        }
    }
    Ok(())
}

/// `bytes` in a synced temporary file beside `path`, with the mode of the file at `path` when
/// there is one (an in-place edit must not make a script unexecutable or a secret readable).
fn stage(path: &Path, bytes: &[u8]) -> std::io::Result<PathBuf> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::other("the output path names no file"))?;
    let tmp = dir.join(format!(
        ".{}.blazes-{}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    let result = std::fs::File::create(&tmp).and_then(|mut f| {
        f.write_all(bytes)?;
        if let Ok(m) = std::fs::metadata(path) {
            f.set_permissions(m.permissions())?;
        }
        f.sync_all()
    });
    match result {
        Ok(()) => Ok(tmp),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("blazes-io-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// Listing of a directory with each file's bytes: what a failed write must leave as it was.
    fn snapshot(d: &Path) -> Vec<(String, Vec<u8>)> {
        let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| {
                let p = e.unwrap().path();
                let bytes = std::fs::read(&p).unwrap_or_default();
                (p.file_name().unwrap().to_string_lossy().into_owned(), bytes)
            })
            .collect();
        out.sort();
        out
    }

    #[test]
    fn every_file_is_written_or_none() {
        let d = dir("stage");
        let a = d.join("a.yaml");
        std::fs::write(&a, "old a").unwrap();
        let before = snapshot(&d);
        // The second file's directory does not exist: it cannot be staged, so the first, staged
        // already, is not renamed into place, and no temporary file is left.
        let missing = d.join("no/such/b.yaml");
        let got = write_all_atomically(&[(a.as_path(), b"new a"), (missing.as_path(), b"b")]);
        assert_eq!(got.unwrap_err().0, missing);
        assert_eq!(snapshot(&d), before);
        // The control: both in place.
        let b = d.join("b.yaml");
        write_all_atomically(&[(a.as_path(), b"new a"), (b.as_path(), b"b")]).unwrap();
        assert_eq!(std::fs::read(&a).unwrap(), b"new a");
        assert_eq!(std::fs::read(&b).unwrap(), b"b");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_failed_rename_puts_back_the_files_already_replaced() {
        let d = dir("rename");
        let a = d.join("a.yaml");
        std::fs::write(&a, "old a").unwrap();
        // A directory where the second file goes: it stages, but the rename onto it fails.
        let b = d.join("b.yaml");
        std::fs::create_dir(&b).unwrap();
        std::fs::write(b.join("keep"), "x").unwrap();
        let got = write_all_atomically(&[(a.as_path(), b"new a"), (b.as_path(), b"b")]);
        assert_eq!(got.unwrap_err().0, b);
        assert_eq!(std::fs::read(&a).unwrap(), b"old a");
        let names: Vec<String> = snapshot(&d).into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["a.yaml", "b.yaml"], "no temporary file is left");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_replaced_file_keeps_its_mode() {
        use std::os::unix::fs::PermissionsExt;
        let d = dir("mode");
        let a = d.join("a.yaml");
        std::fs::write(&a, "old").unwrap();
        std::fs::set_permissions(&a, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_atomically(&a, b"new").unwrap();
        let mode = std::fs::metadata(&a).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
