//! DOT to SVG through Graphviz's `dot` program. This is the one place the render path does
//! IO (spawning a process); only the CLI calls it, the library's DOT building stays pure.

use std::io::Write;
use std::process::{Command, Stdio};

/// Why `dot` gave no SVG.
#[derive(Debug, thiserror::Error)]
pub enum SvgError {
    #[error(
        "the Graphviz `dot` program is not installed (or not on PATH); install it \
         (Debian/Ubuntu: `apt-get install graphviz`, macOS: `brew install graphviz`) \
         or use `--format dot` and render the DOT text elsewhere"
    )]
    DotMissing,
    #[error("could not run `dot`: {0}")]
    Spawn(std::io::Error),
    #[error("`dot` failed ({status}): {stderr}")]
    Failed { status: String, stderr: String },
}

/// Runs `dot -Tsvg` on the DOT text and returns the SVG bytes.
pub fn dot_to_svg(dot: &str) -> Result<Vec<u8>, SvgError> {
    let mut child = Command::new("dot")
        .arg("-Tsvg")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => SvgError::DotMissing,
            _ => SvgError::Spawn(e),
        })?;
    // Feed stdin from a thread: a large graph can fill the stdout pipe before `dot` has read
    // all its input, and writing and reading from one thread would deadlock.
    let mut stdin = child.stdin.take().expect("stdin was piped");
    let input = dot.to_owned();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().map_err(SvgError::Spawn)?;
    // A write error (broken pipe) means `dot` exited early; its status says why.
    let _ = writer.join();
    if !out.status.success() {
        return Err(SvgError::Failed {
            status: out.status.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(out.stdout)
}
