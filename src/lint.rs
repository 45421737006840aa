//! Which warnings fail a check: `--deny CODE|warnings` and `--allow CODE|warnings` (clippy's and
//! ruff's convention), and the spec's own `lint:` settings, which the flags override.
//!
//! A setting names a code by id (`C005`) or name (`implicit-source`), or `warnings` for every
//! warning. The level of a code is the last setting that names it; a code no setting names, or
//! one set back to `warn`, takes the last `warnings` setting. Only warnings are affected: an
//! error (a failing sink, an invalid spec) fails whatever the settings say. A denied warning is
//! reported as an error and fails the check (exit status 1); an allowed one is not reported.

use crate::codes::{self, Code};
use crate::diagnostic::{Diagnostic, Severity};
use crate::spec::did_you_mean;

/// What happens to a warning.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// Not reported.
    Allow,
    /// Reported as a warning (the default).
    Warn,
    /// Reported as an error, and fails the check.
    Deny,
}

impl Level {
    /// The name the spec's `lint:` and the flags use.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Allow => "allow",
            Level::Warn => "warn",
            Level::Deny => "deny",
        }
    }
}

/// What a setting is about: one code, or every warning.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Code(&'static Code),
    Warnings,
}

impl Target {
    /// Reads `warnings`, a code's id or its name; the error says what was meant when it can.
    pub fn parse(s: &str) -> Result<Target, String> {
        if s == "warnings" {
            return Ok(Target::Warnings);
        }
        if let Some(c) = codes::find(s) {
            return Ok(Target::Code(c));
        }
        let names = std::iter::once("warnings")
            .chain(codes::ALL.iter().map(|c| c.id))
            .chain(codes::ALL.iter().map(|c| c.name));
        Err(match did_you_mean(s, names) {
            Some(m) => format!("`{s}` is not a diagnostic code or `warnings`; did you mean `{m}`?"),
            None => format!(
                "`{s}` is not a diagnostic code or `warnings` (`blazes explain` lists the codes)"
            ),
        })
    }

    /// How a setting of this target is written.
    pub fn as_str(self) -> &'static str {
        match self {
            Target::Code(c) => c.id,
            Target::Warnings => "warnings",
        }
    }
}

/// Lint settings, in the order they were given: a later one overrides an earlier one of the same
/// target.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Lints {
    pub settings: Vec<(Target, Level)>,
}

impl Lints {
    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        self.settings.is_empty()
    }

    /// These settings, then `later`'s, which win where both set a target (the flags after the
    /// spec's `lint:`).
    pub fn then(&self, later: &Lints) -> Lints {
        let mut settings = self.settings.clone();
        settings.extend_from_slice(&later.settings);
        Lints { settings }
    }

    /// The level of a warning of `code`.
    pub fn level(&self, code: &Code) -> Level {
        let last = |t: &dyn Fn(Target) -> bool| {
            self.settings
                .iter()
                .rev()
                .find(|(target, _)| t(*target))
                .map(|&(_, l)| l)
        };
        match last(&|t| matches!(t, Target::Code(c) if c.id == code.id)) {
            Some(Level::Allow) => Level::Allow,
            Some(Level::Deny) => Level::Deny,
            Some(Level::Warn) | None => last(&|t| t == Target::Warnings).unwrap_or(Level::Warn),
        }
    }

    /// Applies the settings to a file's diagnostics: allowed warnings are removed, denied ones
    /// become errors (their help says which setting denied them). Returns the codes of the
    /// denied warnings, sorted, each once: what failed the check.
    pub fn apply(&self, diags: &mut Vec<Diagnostic>) -> Vec<&'static str> {
        if self.is_empty() {
            return Vec::new();
        }
        let mut denied = Vec::new();
        diags.retain_mut(|d| {
            if d.severity != Severity::Warning {
                return true;
            }
            match self.level(d.code) {
                Level::Allow => false,
                Level::Warn => true,
                Level::Deny => {
                    d.severity = Severity::Error;
                    let why = format!(
                        "denied warning ({} is denied by the lint settings)",
                        d.code.id
                    );
                    d.help = Some(match d.help.take() {
                        Some(h) => format!("{h}; {why}"),
                        None => why,
                    });
                    denied.push(d.code.id);
                    true
                }
            }
        });
        denied.sort_unstable();
        denied.dedup();
        denied
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lints(s: &[(&str, Level)]) -> Lints {
        Lints {
            settings: s
                .iter()
                .map(|&(t, l)| (Target::parse(t).unwrap(), l))
                .collect(),
        }
    }

    #[test]
    fn a_code_setting_beats_warnings_and_the_last_setting_wins() {
        let c5 = codes::find("C005").unwrap();
        let c7 = codes::find("C007").unwrap();
        let l = lints(&[("warnings", Level::Deny), ("C005", Level::Allow)]);
        assert_eq!(l.level(c5), Level::Allow);
        assert_eq!(l.level(c7), Level::Deny);
        let l = lints(&[("C005", Level::Allow), ("implicit-source", Level::Deny)]);
        assert_eq!(l.level(c5), Level::Deny);
        let l = lints(&[("C005", Level::Warn), ("warnings", Level::Deny)]);
        assert_eq!(l.level(c5), Level::Deny);
        assert_eq!(Lints::default().level(c5), Level::Warn);
    }

    #[test]
    fn an_unknown_code_is_refused_with_what_was_meant() {
        assert!(Target::parse("C0005").unwrap_err().contains("did you mean"));
        assert!(Target::parse("warning").unwrap_err().contains("`warnings`"));
    }
}
