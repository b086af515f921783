//! The keys a struct deserializes as, read from serde itself: what the configuration
//! file's key reference (`docs/config.md`) is checked against (`file/keys.rs`, and the
//! sections' own tables).

use serde::de::{self, Deserialize, Deserializer, Visitor};

/// The fields of the struct `T` deserializes as (`deny_unknown_fields` structs: exactly
/// the keys accepted).
pub(crate) fn fields_of<T: for<'de> Deserialize<'de>>() -> &'static [&'static str] {
    let mut probe = Probe(None);
    let _ = T::deserialize(&mut probe);
    probe.0.unwrap_or_else(|| {
        panic!(
            "{} is not read as a struct with named fields",
            std::any::type_name::<T>()
        )
    })
}

/// A deserializer that only records which fields a struct asks for.
struct Probe(Option<&'static [&'static str]>);

impl<'de> Deserializer<'de> for &mut Probe {
    type Error = de::value::Error;

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0 = Some(fields);
        Err(de::Error::custom("probed"))
    }

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("not a struct"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}
