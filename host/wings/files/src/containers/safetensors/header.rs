//! The `.safetensors` JSON header read as the format's own crate reads it, but listing
//! what the crate's maps would hide: every key of every object is checked for repeats
//! (a map keeps the last of two equal keys without a word), and a tensor's dtype is kept
//! as written, so that one the crate does not know is one tensor not scanned rather
//! than a header refused.
//! [`crate::containers::safetensors::parse_safetensors`] checks the offsets.
//!
//! Both passes are one `serde_json` recursive descent (no backtracking, at most 128
//! levels deep): work linear in the header's size, plus one hash-set insertion per key.

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use std::collections::{BTreeMap, HashSet};

/// The key of the header that holds string metadata, not a tensor.
pub(crate) const METADATA_KEY: &str = "__metadata__";

/// One tensor's entry, as the format describes it; other keys are ignored, as the
/// crate ignores them.
#[derive(serde::Deserialize)]
pub(crate) struct Entry {
    /// The dtype as written: one the crate knows (see [`known_dtype`]) or not.
    pub dtype: String,
    /// The shape.
    pub shape: Vec<u64>,
    /// Where its data starts and ends, in bytes from the start of the data section.
    pub data_offsets: (usize, usize),
}

/// The tensors of `header`, in file order: a JSON object of entries and, under
/// [`METADATA_KEY`], a map of strings.
pub(crate) fn entries(header: &[u8]) -> Result<Vec<(String, Entry)>, serde_json::Error> {
    struct Entries;
    impl<'de> Visitor<'de> for Entries {
        type Value = Vec<(String, Entry)>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a JSON object of tensor entries")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut entries = Vec::new();
            while let Some(key) = map.next_key::<String>()? {
                if key == METADATA_KEY {
                    map.next_value::<BTreeMap<String, String>>()?;
                } else {
                    entries.push((key, map.next_value()?));
                }
            }
            Ok(entries)
        }
    }
    let mut deserializer = serde_json::Deserializer::from_slice(header);
    let entries = deserializer.deserialize_map(Entries)?;
    deserializer.end()?;
    Ok(entries)
}

/// `dtype` as the `safetensors` crate names it, if the crate knows it.
pub(crate) fn known_dtype(dtype: &str) -> Option<safetensors::Dtype> {
    use serde::Deserialize;
    let name = de::value::StrDeserializer::<de::value::Error>::new(dtype);
    safetensors::Dtype::deserialize(name).ok()
}

/// A key that appears twice in one object of the header.
pub(crate) struct RepeatedKey {
    /// The key.
    pub key: String,
    /// The top-level key (a tensor name, or [`METADATA_KEY`]) whose value holds the
    /// object; `None` when the key itself is a top-level one.
    pub entry: Option<String>,
}

/// The first key that appears twice in one object of `header`, at any depth. `None`
/// also for a header that is not JSON: [`entries`] then says why.
pub(crate) fn duplicate_key(header: &[u8]) -> Option<RepeatedKey> {
    let mut found = None;
    let seed = Keys { top_level: true, entry: None, found: &mut found };
    // The visitor stops the parse at the first repeat, with an error that `found` explains.
    let _ = seed.deserialize(&mut serde_json::Deserializer::from_slice(header));
    found
}

/// A JSON value whose objects are checked for repeated keys; `entry` is the top-level
/// key it lies under.
struct Keys<'f> {
    top_level: bool,
    entry: Option<&'f str>,
    found: &'f mut Option<RepeatedKey>,
}

impl<'de> DeserializeSeed<'de> for Keys<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Keys<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(Keys { top_level: false, entry: self.entry, found: &mut *self.found })?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                let entry = (!self.top_level).then(|| self.entry.unwrap_or_default().to_string());
                *self.found = Some(RepeatedKey { key, entry });
                return Err(de::Error::custom("repeated key"));
            }
            let entry = if self.top_level { Some(key.as_str()) } else { self.entry };
            // `entry` borrows `key`, which lives until the value is read.
            map.next_value_seed(Keys { top_level: false, entry, found: &mut *self.found })?;
        }
        Ok(())
    }
}
