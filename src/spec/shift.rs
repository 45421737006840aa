//! Moving every span of a spec by an offset: an instance of a used file is given its own range
//! of offsets (`compose::Files`), so that a span says which file and which use it is in.

use super::{Composite, GateDecl, KeyList, Name, OrderDecl, Spec};
use crate::diagnostic::Span;

type By<'f> = &'f mut dyn FnMut(Span) -> Span;

fn span(s: &mut Span, by: By) {
    *s = by(*s);
}

fn name(n: &mut Name, by: By) {
    span(&mut n.span, by);
}

fn keys(k: &mut KeyList, by: By) {
    span(&mut k.span, by);
    for n in &mut k.names {
        name(n, by);
    }
}

impl Spec {
    /// Adds `by` to every span of the spec (nested inline dataflows included).
    pub fn shift(&mut self, by: usize) {
        self.map_spans(&mut |s| Span::new(s.offset + by, s.len));
    }

    /// Replaces every span of the spec (nested inline dataflows included) by what `by` makes
    /// of it: how a spec written from a topology points into the topology.
    pub fn map_spans(&mut self, by: By) {
        if let Some(n) = &mut self.name {
            name(n, by);
        }
        if let Some(s) = &mut self.sources_key {
            span(s, by);
        }
        for s in &mut self.sources {
            name(&mut s.name, by);
            span(&mut s.body, by);
            if let Some(k) = &mut s.seal {
                keys(k, by);
            }
            for k in &mut s.sealable {
                keys(k, by);
            }
            if let Some(w) = &mut s.watermark {
                name(w, by);
            }
        }
        for s in &mut self.sinks {
            name(&mut s.name, by);
            span(&mut s.body, by);
            if let Some((_, t)) = &mut s.tolerate {
                span(t, by);
            }
        }
        for c in &mut self.components {
            name(&mut c.name, by);
            span(&mut c.body, by);
            for p in &mut c.paths {
                name(&mut p.from, by);
                name(&mut p.to, by);
                span(&mut p.label_span, by);
                span(&mut p.span, by);
                if let Some(s) = &mut p.static_state {
                    span(s, by);
                }
                match &mut p.gate {
                    Some(GateDecl::Star(s)) => span(s, by),
                    Some(GateDecl::Keys(k)) => keys(k, by),
                    None => {}
                }
            }
            match &mut c.order {
                Some(OrderDecl::Global(s)) => span(s, by),
                Some(OrderDecl::Keys(k)) => keys(k, by),
                None => {}
            }
            if let Some(p) = &mut c.partitions {
                keys(&mut p.by, by);
            }
            match c.composite.as_deref_mut() {
                Some(Composite::Use(n, from)) => {
                    name(n, by);
                    if let Some(f) = from {
                        name(f, by);
                    }
                }
                Some(Composite::Inline(s)) => s.map_spans(by),
                None => {}
            }
        }
        for s in &mut self.streams {
            span(&mut s.from.span, by);
            span(&mut s.to.span, by);
            span(&mut s.span, by);
            if let Some(k) = &mut s.seal {
                keys(k, by);
            }
        }
    }
}
