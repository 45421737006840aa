//! The files of a composed spec and where each span is: every instance of a used file has its
//! own range of offsets, so a span of the expanded graph names its file, its line and the chain
//! of uses that put it there, without a field on every node.

use crate::diagnostic::Span;

/// A spec file read because another one uses it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceFile {
    /// The path as the using file's directory and its `use:` make it (`services/billing.yaml`).
    pub path: String,
    pub text: String,
    /// The engine that printed it, for a topology used with `from:` (its spans are in the
    /// topology; its spec is the importer's, which no file holds).
    pub engine: Option<crate::import::Engine>,
}

/// How a region came to be: the component that uses its file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Use {
    /// The instance's path of names in the expanded graph (`Eu.Billing`).
    pub instance: String,
    /// The region of the using file.
    pub parent: usize,
    /// The `use:` value, as a span of the parent region.
    pub at: Span,
    /// What the composites around the instance put on everything in it, innermost (the
    /// composite of this `use:`) first: how the instance differs from its file as written.
    pub coordination: Vec<Coordination>,
}

/// The `order:` and `replicas:`/`replicated:` of a composite, which apply to every component
/// inside it (`compose::apply_coordination`).
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Coordination {
    pub order: Option<InstanceOrder>,
    pub replicated: bool,
    pub replicas: Option<u64>,
}

/// A composite's `order:`, by names.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum InstanceOrder {
    Global,
    Keys(Vec<String>),
}

impl Coordination {
    /// What the composite `c` declares.
    pub fn of(c: &crate::spec::ComponentDecl) -> Coordination {
        use crate::spec::OrderDecl;
        Coordination {
            order: c.order.as_ref().map(|o| match o {
                OrderDecl::Global(_) => InstanceOrder::Global,
                OrderDecl::Keys(k) => {
                    InstanceOrder::Keys(k.names.iter().map(|n| n.text.clone()).collect())
                }
            }),
            replicated: c.replicated,
            replicas: c.replicas,
        }
    }

    /// Whether it changes nothing inside.
    pub fn is_none(&self) -> bool {
        self.order.is_none() && !self.replicated && self.replicas.is_none()
    }

    /// As the spec writes it: `` `order: [id]`, `replicas: 2` ``.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        match &self.order {
            Some(InstanceOrder::Global) => parts.push("`order: global`".to_string()),
            Some(InstanceOrder::Keys(k)) => parts.push(format!("`order: [{}]`", k.join(", "))),
            None => {}
        }
        match self.replicas {
            Some(n) => parts.push(format!("`replicas: {n}`")),
            None if self.replicated => parts.push("`replicated: true`".to_string()),
            None => {}
        }
        parts.join(", ")
    }
}

/// A range of offsets holding one file's text: the root at 0, an instance of a used file after.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Region {
    pub base: usize,
    /// Index in [`Files::files`]; `None` for the root file (whose text the report holds).
    pub file: Option<usize>,
    pub used: Option<Use>,
}

/// The used files of a composed spec and its regions (empty for a flat spec: every span is in
/// the root file).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Files {
    pub files: Vec<SourceFile>,
    /// Sorted by `base`; the first is the root's (when there are any).
    pub regions: Vec<Region>,
}

/// Where a span is: its region, its file (`None`: the root) and the span in that file's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Located {
    pub region: usize,
    pub file: Option<usize>,
    pub span: Span,
}

impl Files {
    /// Whether any span can be outside the root file.
    pub fn is_composed(&self) -> bool {
        self.regions.len() > 1
    }

    /// The region, file and local span of `span`.
    pub fn locate(&self, span: Span) -> Located {
        let i = self
            .regions
            .partition_point(|r| r.base <= span.offset)
            .saturating_sub(1);
        match self.regions.get(i) {
            Some(r) => Located {
                region: i,
                file: r.file,
                span: Span::new(span.offset - r.base, span.len),
            },
            None => Located {
                region: 0,
                file: None,
                span,
            },
        }
    }

    /// The path of a located file, `root` standing for the root's.
    pub fn path<'a>(&'a self, file: Option<usize>, root: &'a str) -> &'a str {
        file.map_or(root, |f| self.files[f].path.as_str())
    }

    /// The text of a located file, `root` standing for the root's.
    pub fn text<'a>(&'a self, file: Option<usize>, root: &'a str) -> &'a str {
        file.map_or(root, |f| self.files[f].text.as_str())
    }

    /// The chain of uses of a region, innermost first: for each use, the instance, the using
    /// file (`None`: the root) and the `use:` in that file's text.
    pub fn chain(&self, region: usize) -> Vec<(&str, Option<usize>, Span)> {
        let mut out = Vec::new();
        let mut r = region;
        // Regions only point at regions made before them: the walk ends.
        while let Some(u) = self.regions.get(r).and_then(|r| r.used.as_ref()) {
            let parent = &self.regions[u.parent];
            out.push((
                u.instance.as_str(),
                parent.file,
                Span::new(u.at.offset - parent.base, u.at.len),
            ));
            r = u.parent;
        }
        out
    }
}
