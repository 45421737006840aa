//! Histories of what clients asked and were told, checked against what the system stored, by
//! code that shares nothing with the mechanisms under test (the idea of Jepsen's Knossos and
//! Elle, for the properties the runtime promises).
//!
//! A test records every write as an *invocation* (process, key, a value unique to the write)
//! and its *completion*: `Ok` (acknowledged), `Fail` (definitely not done) or `Info` (unknown:
//! a timeout, a crash). After the run it reads back what the system holds, per key in the
//! system's order, and [`History::check`] reports each anomaly:
//!
//! - `Lost`: an acknowledged write is not stored;
//! - `Duplicate`: a value is stored more than once;
//! - `Phantom`: a stored value was never written;
//! - `FailedButStored`: a write reported failed was stored after all;
//! - `Reordered`: on one key, a write acknowledged before another was invoked is stored after it
//!   (per-key real-time order).
//!
//! [`zombie_writes`] checks fencing (no write of a lease grant stored after a later grant began)
//! and [`release_anomalies`] a seal barrier's releases (each partition once, complete).
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

/// How a write ended, as its client saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Acknowledged.
    Ok,
    /// Definitely not done.
    Fail,
    /// Unknown.
    Info,
}

#[derive(Debug, Clone)]
struct Write {
    process: String,
    key: String,
    value: String,
    invoked: u64,
    completed: Option<(u64, Outcome)>,
}

/// What a check found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Anomaly {
    Lost {
        key: String,
        value: String,
    },
    Duplicate {
        key: String,
        value: String,
        times: usize,
    },
    Phantom {
        key: String,
        value: String,
    },
    FailedButStored {
        key: String,
        value: String,
    },
    Reordered {
        key: String,
        first: String,
        then: String,
    },
}

/// A history, shared by the test's tasks.
#[derive(Debug, Default)]
pub struct History {
    inner: Mutex<(u64, Vec<Write>)>,
}

/// The handle of an invoked write, to complete it.
#[derive(Debug, Clone, Copy)]
pub struct Invoked(usize);

impl History {
    /// Records that `process` asks to write `value` (unique in the history) under `key`.
    pub fn invoke(&self, process: &str, key: &str, value: &str) -> Invoked {
        let mut g = self.inner.lock().unwrap();
        g.0 += 1;
        let at = g.0;
        g.1.push(Write {
            process: process.into(),
            key: key.into(),
            value: value.into(),
            invoked: at,
            completed: None,
        });
        Invoked(g.1.len() - 1)
    }

    /// Records how the write ended.
    pub fn complete(&self, w: Invoked, outcome: Outcome) {
        let mut g = self.inner.lock().unwrap();
        g.0 += 1;
        let at = g.0;
        g.1[w.0].completed = Some((at, outcome));
    }

    /// [`History::complete`] from a result: `Ok` or `Fail` as `definite` says of the error,
    /// `Info` otherwise.
    pub fn complete_result<T, E>(
        &self,
        w: Invoked,
        result: &Result<T, E>,
        definite: impl Fn(&E) -> bool,
    ) {
        let outcome = match result {
            Ok(_) => Outcome::Ok,
            Err(e) if definite(e) => Outcome::Fail,
            Err(_) => Outcome::Info,
        };
        self.complete(w, outcome);
    }

    /// The anomalies of this history against `stored`: (key, value) in the system's order.
    pub fn check(&self, stored: &[(String, String)]) -> Vec<Anomaly> {
        let g = self.inner.lock().unwrap();
        let writes = &g.1;
        let mut out = Vec::new();
        let mut count: BTreeMap<(&str, &str), usize> = BTreeMap::new();
        for (k, v) in stored {
            *count.entry((k, v)).or_default() += 1;
        }
        let written: BTreeMap<(&str, &str), &Write> = writes
            .iter()
            .map(|w| ((w.key.as_str(), w.value.as_str()), w))
            .collect();
        for (&(k, v), &n) in &count {
            if n > 1 {
                out.push(Anomaly::Duplicate {
                    key: k.into(),
                    value: v.into(),
                    times: n,
                });
            }
            match written.get(&(k, v)) {
                None => out.push(Anomaly::Phantom {
                    key: k.into(),
                    value: v.into(),
                }),
                Some(w) if w.completed.map(|c| c.1) == Some(Outcome::Fail) => {
                    out.push(Anomaly::FailedButStored {
                        key: k.into(),
                        value: v.into(),
                    })
                }
                Some(_) => {}
            }
        }
        for w in writes {
            if w.completed.map(|c| c.1) == Some(Outcome::Ok)
                && !count.contains_key(&(w.key.as_str(), w.value.as_str()))
            {
                out.push(Anomaly::Lost {
                    key: w.key.clone(),
                    value: w.value.clone(),
                });
            }
        }
        // Per key: the first place each value is stored.
        let mut place: BTreeMap<(&str, &str), usize> = BTreeMap::new();
        for (i, (k, v)) in stored.iter().enumerate() {
            place.entry((k, v)).or_insert(i);
        }
        let mut by_key: BTreeMap<&str, Vec<&Write>> = BTreeMap::new();
        for w in writes {
            by_key.entry(&w.key).or_default().push(w);
        }
        for (key, ws) in by_key {
            for a in &ws {
                let Some((done, Outcome::Ok)) = a.completed else {
                    continue;
                };
                for b in &ws {
                    if b.invoked <= done {
                        continue;
                    }
                    let (Some(pa), Some(pb)) = (
                        place.get(&(key, a.value.as_str())),
                        place.get(&(key, b.value.as_str())),
                    ) else {
                        continue;
                    };
                    if pb < pa {
                        out.push(Anomaly::Reordered {
                            key: key.into(),
                            first: a.value.clone(),
                            then: b.value.clone(),
                        });
                    }
                }
            }
        }
        out
    }

    /// The processes that wrote, for a failure message.
    pub fn processes(&self) -> BTreeSet<String> {
        let g = self.inner.lock().unwrap();
        g.1.iter().map(|w| w.process.clone()).collect()
    }
}

/// Writes stored after a later lease grant began: `writes` are (stream position, grant) of
/// every stored write of a leased resource, `grants` the (grant, position of its first lease
/// message). A fenced zombie's write is one of these.
pub fn zombie_writes(writes: &[(u64, u64)], grants: &[(u64, u64)]) -> Vec<(u64, u64)> {
    writes
        .iter()
        .filter(|(position, grant)| {
            grants
                .iter()
                .any(|(later, began)| later > grant && began < position)
        })
        .copied()
        .collect()
}

/// What is wrong with a barrier's releases: `released` are (partition, values) in release
/// order; `expected` the values each partition must hold (its producers' acknowledged records;
/// `maybe` those whose write was indeterminate may be there or not).
pub fn release_anomalies(
    released: &[(String, BTreeSet<String>)],
    expected: &BTreeMap<String, BTreeSet<String>>,
    maybe: &BTreeSet<String>,
) -> Vec<String> {
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for (p, values) in released {
        if !seen.insert(p.clone()) {
            out.push(format!("{p} released twice"));
        }
        let want = expected.get(p).cloned().unwrap_or_default();
        for v in want.difference(values) {
            out.push(format!("{p} released without the acknowledged {v}"));
        }
        for v in values.difference(&want) {
            if !maybe.contains(v) {
                out.push(format!(
                    "{p} released with {v}, which is not one of its records"
                ));
            }
        }
    }
    for p in expected.keys() {
        if !seen.contains(p) {
            out.push(format!("{p} never released"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// Two acknowledged writes on `k`, then a failed and an indeterminate one.
    fn history() -> History {
        let h = History::default();
        let a = h.invoke("p", "k", "a");
        h.complete(a, Outcome::Ok);
        let b = h.invoke("p", "k", "b");
        h.complete(b, Outcome::Ok);
        let c = h.invoke("p", "k", "c");
        h.complete(c, Outcome::Fail);
        let d = h.invoke("q", "k", "d");
        h.complete(d, Outcome::Info);
        h
    }

    #[test]
    fn a_valid_history_has_no_anomaly_with_or_without_its_indeterminate_write() {
        let h = history();
        assert_eq!(h.check(&s(&[("k", "a"), ("k", "b")])), []);
        assert_eq!(h.check(&s(&[("k", "a"), ("k", "b"), ("k", "d")])), []);
    }

    #[test]
    fn each_known_anomaly_is_found() {
        let h = history();
        assert_eq!(
            h.check(&s(&[("k", "a")])),
            [Anomaly::Lost {
                key: "k".into(),
                value: "b".into()
            }]
        );
        assert_eq!(
            h.check(&s(&[("k", "a"), ("k", "b"), ("k", "b")])),
            [Anomaly::Duplicate {
                key: "k".into(),
                value: "b".into(),
                times: 2
            }]
        );
        assert_eq!(
            h.check(&s(&[("k", "a"), ("k", "b"), ("k", "z")])),
            [Anomaly::Phantom {
                key: "k".into(),
                value: "z".into()
            }]
        );
        assert_eq!(
            h.check(&s(&[("k", "a"), ("k", "b"), ("k", "c")])),
            [Anomaly::FailedButStored {
                key: "k".into(),
                value: "c".into()
            }]
        );
        assert_eq!(
            h.check(&s(&[("k", "b"), ("k", "a")])),
            [Anomaly::Reordered {
                key: "k".into(),
                first: "a".into(),
                then: "b".into()
            }]
        );
    }

    #[test]
    fn concurrent_writes_may_be_stored_in_either_order() {
        let h = History::default();
        let a = h.invoke("p", "k", "a");
        let b = h.invoke("q", "k", "b");
        h.complete(b, Outcome::Ok);
        h.complete(a, Outcome::Ok);
        assert_eq!(h.check(&s(&[("k", "b"), ("k", "a")])), []);
        assert_eq!(h.check(&s(&[("k", "a"), ("k", "b")])), []);
    }

    #[test]
    fn a_write_of_an_older_grant_after_a_newer_grant_began_is_a_zombie_write() {
        // Grant 1 began at 1, grant 5 at 5; grant 1 wrote at 3 (fine) and at 7 (a zombie).
        let grants = [(1, 1), (5, 5)];
        assert_eq!(zombie_writes(&[(3, 1), (6, 5), (7, 1)], &grants), [(7, 1)]);
        assert_eq!(zombie_writes(&[(3, 1), (6, 5)], &grants), []);
    }

    #[test]
    fn a_release_twice_incomplete_or_with_foreign_records_is_found() {
        let set = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<BTreeSet<_>>();
        let expected: BTreeMap<String, BTreeSet<String>> = [
            ("w1".to_string(), set(&["a", "b"])),
            ("w2".to_string(), set(&["c"])),
        ]
        .into();
        let maybe = set(&["m"]);
        let good = [
            ("w1".to_string(), set(&["a", "b", "m"])),
            ("w2".to_string(), set(&["c"])),
        ];
        assert_eq!(
            release_anomalies(&good, &expected, &maybe),
            Vec::<String>::new()
        );
        let bad = [
            ("w1".to_string(), set(&["a", "x"])),
            ("w1".to_string(), set(&["a", "b"])),
        ];
        let found = release_anomalies(&bad, &expected, &maybe);
        assert_eq!(
            found,
            [
                "w1 released without the acknowledged b",
                "w1 released with x, which is not one of its records",
                "w1 released twice",
                "w2 never released"
            ]
        );
    }
}
