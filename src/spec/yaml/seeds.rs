//! The serde seeds the YAML reader reads with: a node with its span (serde-saphyr's spanned
//! protocol, spoken for a seed), and the streaming of the root mapping, whose sections are
//! handed to the [`Consumer`] one entry or item at a time.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{
    self, Deserialize, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor,
};
use serde_saphyr::Location;

use super::{Consumer, Raw, RawVisitor, Settle, Take};

/// serde-saphyr's `Spanned<T>` for a seed, and leaner. `Spanned` wraps only
/// `T: Deserialize`, and the streaming visitors carry the consumer; and it reads the marker of
/// its protocol as a `String` and both locations of every node, where one is used. This
/// speaks the same protocol: the newtype struct `__yaml_spanned`, which the reader answers
/// with a map of a marker, `value`, `referenced` and `defined`, in that order (see
/// serde-saphyr's `spanned.rs` and `de/spanned_deser.rs`), and stops after `referenced`.
/// Every span test depends on it, so a change of protocol cannot pass unnoticed.
pub(super) struct SpannedSeed<S>(pub(super) S);

/// A node with the location it is used at (an alias: the `*name`).
pub(super) fn spanned() -> SpannedSeed<PhantomData<Raw>> {
    SpannedSeed(PhantomData)
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for SpannedSeed<S> {
    type Value = (S::Value, Location);

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_newtype_struct("__yaml_spanned", SpannedVisitor(self.0))
    }
}

struct SpannedVisitor<S>(S);

impl<'de, S: DeserializeSeed<'de>> Visitor<'de> for SpannedVisitor<S> {
    type Value = (S::Value, Location);

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a span-aware newtype wrapper")
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(SpannedFields(self.0))
    }
}

struct SpannedFields<S>(S);

/// A key of the map the reader presents a spanned value as.
enum SpannedField {
    Value,
    Referenced,
    Defined,
    /// The marker that tells this map from a user's mapping; its value is `true`.
    Other,
}

impl<'de> Deserialize<'de> for SpannedField {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct FieldVisitor;
        impl Visitor<'_> for FieldVisitor {
            type Value = SpannedField;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a Spanned<T> field")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<SpannedField, E> {
                Ok(match v {
                    "value" => SpannedField::Value,
                    "referenced" => SpannedField::Referenced,
                    "defined" => SpannedField::Defined,
                    _ => SpannedField::Other,
                })
            }
        }
        d.deserialize_identifier(FieldVisitor)
    }
}

impl<'de, S: DeserializeSeed<'de>> Visitor<'de> for SpannedFields<S> {
    type Value = (S::Value, Location);

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a span-aware map with value/referenced/defined fields")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
        let mut seed = Some(self.0);
        let mut value = None;
        let mut referenced = None;
        while let Some(field) = a.next_key::<SpannedField>()? {
            match field {
                SpannedField::Value => match seed.take() {
                    Some(seed) => value = Some(a.next_value_seed(seed)?),
                    None => return Err(de::Error::duplicate_field("value")),
                },
                SpannedField::Referenced => referenced = Some(a.next_value::<Location>()?),
                // Read, not skipped: a `Location` has no self-describing form. Reached only
                // if the fields come in another order.
                SpannedField::Defined => {
                    a.next_value::<Location>()?;
                }
                SpannedField::Other => {
                    a.next_value::<IgnoredAny>()?;
                }
            }
            // `defined` follows, a whole `Location` read per node for nothing: the value was
            // read, so the reader is past the node, and nothing checks that the rest of this
            // synthetic map is read.
            if value.is_some() && referenced.is_some() {
                break;
            }
        }
        let value = value.ok_or_else(|| de::Error::missing_field("value"))?;
        let referenced = referenced.ok_or_else(|| de::Error::missing_field("referenced"))?;
        Ok((value, referenced))
    }
}

/// Forwards the visits of everything but a mapping or a list to [`RawVisitor`]: a value that
/// is not what a streaming visitor expected is built whole, with the very errors (and the
/// `expecting` text) that reading a tree would give.
macro_rules! forward_to_raw {
    () => {
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            RawVisitor.expecting(f)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            RawVisitor.visit_unit().map(Some)
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            RawVisitor.visit_none().map(Some)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            RawVisitor.visit_some(d).map(Some)
        }
        fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
            RawVisitor.visit_bool(v).map(Some)
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
            RawVisitor.visit_i64(v).map(Some)
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
            RawVisitor.visit_u64(v).map(Some)
        }
        fn visit_i128<E: de::Error>(self, v: i128) -> Result<Self::Value, E> {
            RawVisitor.visit_i128(v).map(Some)
        }
        fn visit_u128<E: de::Error>(self, v: u128) -> Result<Self::Value, E> {
            RawVisitor.visit_u128(v).map(Some)
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
            RawVisitor.visit_f64(v).map(Some)
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            RawVisitor.visit_str(v).map(Some)
        }
        fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
            RawVisitor.visit_string(v).map(Some)
        }
        fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Self::Value, E> {
            RawVisitor.visit_bytes(v).map(Some)
        }
    };
}

/// The document's root: a mapping is streamed key by key, anything else is built whole.
pub(super) struct RootSeed<'a, 't, C> {
    pub(super) settle: &'a Settle<'t>,
    pub(super) consumer: &'a mut C,
}

impl<'de, C: Consumer> DeserializeSeed<'de> for RootSeed<'_, '_, C> {
    type Value = Option<Raw>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<Raw>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, C: Consumer> Visitor<'de> for RootSeed<'_, '_, C> {
    type Value = Option<Raw>;

    forward_to_raw!();

    fn visit_seq<A: SeqAccess<'de>>(self, a: A) -> Result<Option<Raw>, A::Error> {
        RawVisitor.visit_seq(a).map(Some)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Option<Raw>, A::Error> {
        let settle = self.settle;
        while let Some(key) = a.next_key_seed(spanned())? {
            let take = self.consumer.key(settle.node(key));
            match take {
                Take::Skip => {
                    a.next_value::<IgnoredAny>()?;
                }
                Take::Whole => {
                    let value = a.next_value_seed(spanned())?;
                    self.consumer.value(settle.node(value));
                }
                Take::Entries | Take::Items => {
                    let section = SectionSeed {
                        settle,
                        consumer: &mut *self.consumer,
                        take,
                    };
                    let (whole, loc) = a.next_value_seed(SpannedSeed(section))?;
                    if let Some(raw) = whole {
                        self.consumer.value(settle.finish(raw.0, &loc));
                    }
                }
            }
            self.consumer.end();
        }
        Ok(None)
    }
}

/// The value of a streamed key: the entries of a mapping or the items of a list, handed over
/// one at a time; `Some` tree when the value is of another kind.
struct SectionSeed<'a, 't, C> {
    settle: &'a Settle<'t>,
    consumer: &'a mut C,
    take: Take,
}

impl<'de, C: Consumer> DeserializeSeed<'de> for SectionSeed<'_, '_, C> {
    type Value = Option<Raw>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<Raw>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, C: Consumer> Visitor<'de> for SectionSeed<'_, '_, C> {
    type Value = Option<Raw>;

    forward_to_raw!();

    fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Option<Raw>, A::Error> {
        if self.take != Take::Items {
            return RawVisitor.visit_seq(a).map(Some);
        }
        let consumer = self.consumer;
        while a
            .next_element_seed(ItemSeed {
                settle: self.settle,
                consumer: &mut *consumer,
            })?
            .is_some()
        {}
        Ok(None)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Option<Raw>, A::Error> {
        if self.take != Take::Entries {
            return RawVisitor.visit_map(a).map(Some);
        }
        while let Some(key) = a.next_key_seed(spanned())? {
            if self.consumer.entry_key(self.settle.node(key)) {
                let value = a.next_value_seed(spanned())?;
                self.consumer.entry_value(self.settle.node(value));
            } else {
                a.next_value::<IgnoredAny>()?;
            }
        }
        Ok(None)
    }
}

/// One item of a streamed list: built and handed over if the consumer wants it, else skipped.
struct ItemSeed<'a, 't, C> {
    settle: &'a Settle<'t>,
    consumer: &'a mut C,
}

impl<'de, C: Consumer> DeserializeSeed<'de> for ItemSeed<'_, '_, C> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        if self.consumer.want_item() {
            let item = spanned().deserialize(d)?;
            self.consumer.item(self.settle.node(item));
        } else {
            IgnoredAny::deserialize(d)?;
        }
        Ok(())
    }
}
