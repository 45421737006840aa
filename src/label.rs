//! The label lattice of the Blazes analysis (section 3 of the label algebra).
//!
//! Attribute names are interned to [`Attr`] and sets of them to [`KeySet`], so that a
//! [`Label`] is a small `Copy` value: the propagation joins labels millions of times on big
//! specs and must not clone sets to do it.
//!
//! This module knows nothing of specs, graphs or output: it is the algebra only.

use foldhash::{HashMap, HashMapExt};

/// An interned attribute name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Attr(u32);

/// An interned set of attribute names (a partition key). `KeySet::EMPTY` is `∅`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KeySet(u32);

impl KeySet {
    /// The empty key: a `Seal(∅)` stream is bounded.
    pub const EMPTY: KeySet = KeySet(0);
}

/// Interner for attribute names and key sets.
///
/// Sets are stored sorted by [`Attr`] (interning order), which makes subset tests a merge;
/// anything printed must go through [`Keys::names`], which sorts by name instead.
#[derive(Clone, Debug)]
pub struct Keys {
    names: Vec<Box<str>>,
    by_name: HashMap<Box<str>, Attr>,
    sets: Vec<Box<[Attr]>>,
    by_set: HashMap<Box<[Attr]>, KeySet>,
    unions: HashMap<(KeySet, KeySet), KeySet>,
}

impl Default for Keys {
    fn default() -> Self {
        let empty: Box<[Attr]> = Box::new([]);
        let mut by_set = HashMap::new();
        by_set.insert(empty.clone(), KeySet::EMPTY);
        Keys {
            names: Vec::new(),
            by_name: HashMap::new(),
            sets: vec![empty],
            by_set,
            unions: HashMap::new(),
        }
    }
}

impl Keys {
    /// An empty table (the empty key set is interned already, as [`KeySet::EMPTY`]).
    pub fn new() -> Self {
        Self::default()
    }

    /// The attribute named `name`, interned on first use.
    pub fn attr(&mut self, name: &str) -> Attr {
        if let Some(&a) = self.by_name.get(name) {
            return a;
        }
        let a = Attr(self.names.len() as u32);
        self.names.push(name.into());
        self.by_name.insert(name.into(), a);
        a
    }

    /// The name of attribute `a`.
    pub fn attr_name(&self, a: Attr) -> &str {
        &self.names[a.0 as usize]
    }

    /// Interns the set of the given attributes (duplicates collapse).
    pub fn set(&mut self, attrs: impl IntoIterator<Item = Attr>) -> KeySet {
        let mut v: Vec<Attr> = attrs.into_iter().collect();
        v.sort_unstable();
        v.dedup();
        self.intern_sorted(v)
    }

    /// Interns the set of the given attribute names.
    pub fn set_of<'a>(&mut self, names: impl IntoIterator<Item = &'a str>) -> KeySet {
        let attrs: Vec<Attr> = names.into_iter().map(|n| self.attr(n)).collect();
        self.set(attrs)
    }

    fn intern_sorted(&mut self, v: Vec<Attr>) -> KeySet {
        if let Some(&k) = self.by_set.get(v.as_slice()) {
            return k;
        }
        let k = KeySet(self.sets.len() as u32);
        let boxed: Box<[Attr]> = v.into_boxed_slice();
        self.sets.push(boxed.clone());
        self.by_set.insert(boxed, k);
        k
    }

    /// The attributes of `k`, in the order they were interned.
    pub fn attrs(&self, k: KeySet) -> &[Attr] {
        &self.sets[k.0 as usize]
    }

    /// The names of `k`, sorted by name: the order every output uses.
    pub fn names(&self, k: KeySet) -> Vec<&str> {
        let mut v: Vec<&str> = self.attrs(k).iter().map(|&a| self.attr_name(a)).collect();
        v.sort_unstable();
        v
    }

    /// The key set holding the attributes of both (memoised: joins of seals call it often).
    pub fn union(&mut self, a: KeySet, b: KeySet) -> KeySet {
        if a == b || b == KeySet::EMPTY {
            return a;
        }
        if a == KeySet::EMPTY {
            return b;
        }
        let pair = if a <= b { (a, b) } else { (b, a) };
        if let Some(&k) = self.unions.get(&pair) {
            return k;
        }
        let (x, y) = (self.attrs(a), self.attrs(b));
        let mut v = Vec::with_capacity(x.len() + y.len());
        let (mut i, mut j) = (0, 0);
        while i < x.len() || j < y.len() {
            let next = match (x.get(i), y.get(j)) {
                (Some(&p), Some(&q)) if p == q => {
                    i += 1;
                    j += 1;
                    p
                }
                (Some(&p), Some(&q)) if p < q => {
                    i += 1;
                    p
                }
                (Some(_), Some(&q)) => {
                    j += 1;
                    q
                }
                (Some(&p), None) => {
                    i += 1;
                    p
                }
                (None, Some(&q)) => {
                    j += 1;
                    q
                }
                (None, None) => unreachable!("loop condition"),
            };
            v.push(next);
        }
        let k = self.intern_sorted(v);
        self.unions.insert(pair, k);
        k
    }

    /// The key set of the attributes in both.
    pub fn intersection(&mut self, a: KeySet, b: KeySet) -> KeySet {
        let y = self.attrs(b);
        let v: Vec<Attr> = self
            .attrs(a)
            .iter()
            .copied()
            .filter(|p| y.binary_search(p).is_ok())
            .collect();
        self.intern_sorted(v)
    }

    /// `a ⊆ b`.
    pub fn is_subset(&self, a: KeySet, b: KeySet) -> bool {
        if a == b || a == KeySet::EMPTY {
            return true;
        }
        let y = self.attrs(b);
        self.attrs(a).iter().all(|p| y.binary_search(p).is_ok())
    }

    /// Human form of a key: `batch, word` (sorted by name).
    pub fn display(&self, k: KeySet) -> String {
        self.names(k).join(", ")
    }
}

/// The subscript of an `OR`/`OW` path: the partitions within which it is order-sensitive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Gate {
    /// `*`: the partitioning is unknown; no seal is compatible with it.
    Star,
    Keys(KeySet),
}

impl Gate {
    /// `compatible(gate, K)`: every attribute of the seal key is in the gate.
    pub fn compatible(self, seal: KeySet, keys: &Keys) -> bool {
        match self {
            Gate::Star => false,
            Gate::Keys(g) => keys.is_subset(seal, g),
        }
    }

    /// The gate as a spec writes it: `*`, or its keys separated by commas.
    pub fn display(self, keys: &Keys) -> String {
        match self {
            Gate::Star => "*".to_string(),
            Gate::Keys(k) => keys.display(k),
        }
    }

    /// The gate's key names, sorted (`["*"]` for `*`).
    pub fn names(self, keys: &Keys) -> Vec<String> {
        match self {
            Gate::Star => vec!["*".to_string()],
            Gate::Keys(k) => keys.names(k).into_iter().map(str::to_string).collect(),
        }
    }
}

/// A path annotation (section 2), in severity order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Annotation {
    CR,
    CW,
    OR,
    OW,
}

impl Annotation {
    /// Every annotation, in severity order.
    pub const ALL: [Annotation; 4] = [
        Annotation::CR,
        Annotation::CW,
        Annotation::OR,
        Annotation::OW,
    ];

    /// The annotation as a spec writes it (`CR`, `CW`, `OR`, `OW`).
    pub fn as_str(self) -> &'static str {
        match self {
            Annotation::CR => "CR",
            Annotation::CW => "CW",
            Annotation::OR => "OR",
            Annotation::OW => "OW",
        }
    }

    /// The annotation a spec's `label:` names, if it names one.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.as_str() == s)
    }

    // The three predicates below match exhaustively, so that a new annotation is a compile
    // error here, where its meaning is decided, rather than a silent `false`.

    /// Whether the path's output does not depend on the order of its input (`C`).
    pub fn is_confluent(self) -> bool {
        match self {
            Annotation::CR | Annotation::CW => true,
            Annotation::OR | Annotation::OW => false,
        }
    }

    /// Whether the path writes the component's state (`W`).
    pub fn writes(self) -> bool {
        match self {
            Annotation::CW | Annotation::OW => true,
            Annotation::CR | Annotation::OR => false,
        }
    }

    /// An order-sensitive read of the state the component's writing paths build (`OR`): it is
    /// protected only when those writes are sealed or ordered for its gate.
    pub fn reads_written_state(self) -> bool {
        match self {
            Annotation::OR => true,
            Annotation::CR | Annotation::CW | Annotation::OW => false,
        }
    }
}

/// A final stream label (section 3). "Unreached" is `Option::<Label>::None`, below everything.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Label {
    Seal(KeySet),
    Async,
    Run,
    Inst,
    Diverge,
}

impl Label {
    /// The label of an input that no stream feeds: an external source that declares no seal
    /// (C005).
    pub const UNFED_INPUT: Label = Label::of_source(None);

    /// The label a source gives its streams: `Seal(K)` when it declares `seal: [K]`, `Async`
    /// otherwise.
    ///
    /// ```
    /// use blazes::label::{KeySet, Label};
    /// assert_eq!(Label::of_source(None), Label::Async);
    /// assert_eq!(Label::of_source(Some(KeySet::EMPTY)), Label::Seal(KeySet::EMPTY));
    /// ```
    pub const fn of_source(seal: Option<KeySet>) -> Label {
        match seal {
            Some(k) => Label::Seal(k),
            None => Label::Async,
        }
    }

    /// Position in the severity order; all seals share rank 0. Compare labels with
    /// [`Label::is_at_least`] rather than with numbers.
    pub const fn rank(self) -> u8 {
        match self {
            Label::Seal(_) => 0,
            Label::Async => 1,
            Label::Run => 2,
            Label::Inst => 3,
            Label::Diverge => 4,
        }
    }

    /// The label's name without its key: `Seal`, `Async`, ...
    pub fn kind(self) -> &'static str {
        match self {
            Label::Seal(_) => "Seal",
            Label::Async => "Async",
            Label::Run => "Run",
            Label::Inst => "Inst",
            Label::Diverge => "Diverge",
        }
    }

    /// At least as bad as `other`, ignoring keys (every seal ranks alike): `Run`, `Inst` and
    /// `Diverge` are at least `Run`.
    pub const fn is_at_least(self, other: Label) -> bool {
        self.rank() >= other.rank()
    }

    /// Contents are deterministic (Seal or Async): what sinks accept by default.
    pub const fn is_safe(self) -> bool {
        !self.is_at_least(Label::Run)
    }

    /// `Seal(batch, word)`, `Async`, ...; the empty key is `Seal(∅)` (a bounded stream), as the
    /// algebra writes it, rather than an easily misread `Seal()`.
    pub fn display(self, keys: &Keys) -> String {
        match self {
            Label::Seal(KeySet::EMPTY) => "Seal(∅)".to_string(),
            Label::Seal(k) => format!("Seal({})", keys.display(k)),
            other => other.kind().to_string(),
        }
    }

    /// The join of section 3: the worse label, with `Seal(K1) ⊔ Seal(K2) = Seal(K1 ∪ K2)`.
    pub fn join(self, other: Label, keys: &mut Keys) -> Label {
        match (self, other) {
            (Label::Seal(a), Label::Seal(b)) => Label::Seal(keys.union(a, b)),
            (a, b) if a.is_at_least(b) => a,
            (_, b) => b,
        }
    }

    /// `a ⊑ b` in the lattice.
    pub fn le(self, other: Label, keys: &Keys) -> bool {
        match (self, other) {
            (Label::Seal(a), Label::Seal(b)) => keys.is_subset(a, b),
            (a, b) => b.is_at_least(a),
        }
    }
}

/// What every output says where a stream or sink has no label: no source reaches it.
pub const UNREACHED: &str = "nothing (no source reaches it)";

/// The text of a possibly-unreached label: its display, or [`UNREACHED`].
pub fn show(l: Option<Label>, keys: &Keys) -> String {
    l.map_or_else(|| UNREACHED.to_string(), |l| l.display(keys))
}

/// Joins two possibly-unreached labels (`None` is the bottom).
pub fn join_opt(a: Option<Label>, b: Option<Label>, keys: &mut Keys) -> Option<Label> {
    match (a, b) {
        (None, x) | (x, None) => x,
        (Some(x), Some(y)) => Some(x.join(y, keys)),
    }
}

/// The worst label a sink accepts (`sinks.<name>.tolerate`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Tolerance {
    /// Only deterministic contents (`Seal`/`Async`): the default.
    Async,
    Run,
    Inst,
    Diverge,
}

impl Tolerance {
    /// The tolerance as a spec writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Tolerance::Async => "Async",
            Tolerance::Run => "Run",
            Tolerance::Inst => "Inst",
            Tolerance::Diverge => "Diverge",
        }
    }

    /// The worst label accepted.
    pub const fn worst(self) -> Label {
        match self {
            Tolerance::Async => Label::Async,
            Tolerance::Run => Label::Run,
            Tolerance::Inst => Label::Inst,
            Tolerance::Diverge => Label::Diverge,
        }
    }

    /// The rank of the worst label accepted (see [`Label::rank`]).
    pub const fn rank(self) -> u8 {
        self.worst().rank()
    }

    /// Whether a sink of this tolerance accepts `l`.
    pub const fn accepts(self, l: Label) -> bool {
        self.worst().is_at_least(l)
    }
}

/// How bad the label of a sink that declares no `tolerate:` must be before `check` fails
/// (`--fail-on`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum FailOn {
    #[default]
    Run,
    Inst,
    Diverge,
    Never,
}

impl FailOn {
    /// The best label that fails a sink declaring no `tolerate:`; `None` for `never`.
    pub const fn threshold(self) -> Option<Label> {
        match self {
            FailOn::Run => Some(Label::Run),
            FailOn::Inst => Some(Label::Inst),
            FailOn::Diverge => Some(Label::Diverge),
            FailOn::Never => None,
        }
    }

    /// Whether `l` fails a sink that declares no `tolerate:`.
    pub const fn fails(self, l: Label) -> bool {
        match self.threshold() {
            Some(t) => l.is_at_least(t),
            None => false,
        }
    }

    /// The flag's value as the user writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            FailOn::Run => "run",
            FailOn::Inst => "inst",
            FailOn::Diverge => "diverge",
            FailOn::Never => "never",
        }
    }
}

/// Whether a sink fails on label `l`. A declared `tolerate:` is the spec author's contract and
/// decides alone, whatever `--fail-on` says; `--fail-on` sets the threshold of the sinks that
/// declare none (whose default tolerance is `Async`).
pub fn sink_fails(declared: Option<Tolerance>, fail_on: FailOn, l: Label) -> bool {
    match declared {
        Some(t) => !t.accepts(l),
        None => fail_on.fails(l) && !Tolerance::Async.accepts(l),
    }
}
