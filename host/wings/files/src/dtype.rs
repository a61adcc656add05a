//! The element types that `normalize` writes and `cast` reads, writes or copies from a
//! NumPy file, in one table: [`ElementType`], each entry with its name, what it is, its
//! bytes, its `.safetensors` dtype string, its NumPy type string and its PyTorch dtype
//! name. (`scan` reads more than these, each classified by its container's own parser:
//! `containers::safetensors`, `containers::npy_descr`.)
//!
//! The tools' roles are subsets of it, each an enum made by `roles!` from a list of the
//! table's names, with the facts above taken from the table:
//!
//! - [`crate::write::Dtype`]: what `normalize` writes (`--dtype`);
//! - [`crate::cast::convert::SourceDtype`]: what `cast` reads and converts;
//! - [`crate::cast::convert::Target`]: what `cast` writes (`--to`).
//!
//! The CLI's choices are made from the roles (their names, and their titles or
//! summaries for `--help`), `cast` maps a `.npy` array's type string to the
//! `.safetensors` dtype it copies it as through [`ElementType::of_numpy`], and a
//! `.safetensors` dtype string to a role through the role's `of_safetensors`. The
//! variants of the roles link to their entries here, whose docs carry the titles.
//!
//! # Adding a dtype
//! One entry in `element_types!`'s table below. Then, for each role it takes:
//!
//! - an output of `normalize`: its entry in `write`'s table and one per sample width in
//!   `normalize::image::conversions`, as [`crate::write`]'s doc says;
//! - a source of `cast`: its name in [`SourceDtype`](crate::cast::convert::SourceDtype)'s
//!   list, and its widening in `cast::convert` (`widen_to_f32`, `ElementCast`);
//! - a target of `cast`: its name in [`Target`](crate::cast::convert::Target)'s list, its
//!   encodings and FP8 format in `cast::convert` (`encodings`, `Target::fp8`), its proven
//!   CPU conversion in `cast::chunks` (`narrowing_u16` / `narrowing_u8`, whose `_ => None`
//!   lets a missing one compile: `cast::chunks`' tests run every target), and what the
//!   output's `config.json` says of it in `cast::output` (`write_config`).
//!
//! ```
//! # mod bitexact { pub use bitexact_files as files; }
//! use bitexact::files::dtype::ElementType;
//!
//! let e4m3 = ElementType::of_safetensors("F8_E4M3").unwrap();
//! assert_eq!((e4m3.name(), e4m3.bytes(), e4m3.numpy_type_string()), ("e4m3", 1, None));
//! // A NumPy type string in either byte order.
//! assert_eq!(ElementType::of_numpy(">f2"), Some(ElementType::F16));
//! assert_eq!(ElementType::of_numpy("<c8"), None);
//! ```

/// Defines [`ElementType`] from the table below, one entry per dtype, its fields in this
/// order:
///
/// - `name`: how the CLI (`--dtype`, `--to`), the reports and the JSON spell it;
/// - `title`: what it is, for `--help` and the docs;
/// - `bytes`: bytes per value;
/// - `safetensors`: its `.safetensors` dtype string;
/// - `numpy`: its NumPy type string as `dtype.str` spells it in little-endian order
///   (`<f4`; `|` for one byte), `[]` where NumPy has no such dtype;
/// - `torch`: its `torch.dtype` name, as a `config.json`'s `torch_dtype` spells it.
macro_rules! element_types {
    (@option $numpy:literal) => { Some($numpy) };
    (@option) => { None };
    ($(
        $variant:ident {
            name: $name:literal,
            title: $title:literal,
            bytes: $bytes:literal,
            safetensors: $safetensors:literal,
            numpy: [$($numpy:literal)?],
            torch: $torch:literal $(,)?
        }
    ),* $(,)?) => {
        /// An element type the file tools know: one per entry of this module's table.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum ElementType {
            $(
                #[doc = concat!($title, ": `", $name, "`, ", $bytes, " byte(s), `.safetensors` `", $safetensors, "`",
                    $(", NumPy `", $numpy, "`",)? ", PyTorch `", $torch, "`.")]
                $variant,
            )*
        }

        impl ElementType {
            /// Every element type, in the table's order.
            pub const ALL: [ElementType; [$(ElementType::$variant),*].len()] = [$(ElementType::$variant),*];

            /// Its name, as the CLI, the reports and the JSON spell it: `f32`, `bf16`, `e4m3`.
            pub const fn name(self) -> &'static str {
                match self { $(ElementType::$variant => $name,)* }
            }

            /// What it is, in words: `IEEE 754 binary32`, `bfloat16`.
            pub const fn title(self) -> &'static str {
                match self { $(ElementType::$variant => $title,)* }
            }

            /// Bytes per value.
            pub const fn bytes(self) -> usize {
                match self { $(ElementType::$variant => $bytes,)* }
            }

            /// The `.safetensors` dtype string: `F32`, `BF16`, `F8_E4M3`.
            pub(crate) const fn safetensors_name(self) -> &'static str {
                match self { $(ElementType::$variant => $safetensors,)* }
            }

            /// The NumPy type string, little-endian (`<f4`, `|b1`), or `None` where NumPy
            /// has no such dtype.
            pub const fn numpy_type_string(self) -> Option<&'static str> {
                match self { $(ElementType::$variant => element_types!(@option $($numpy)?),)* }
            }

            /// The `torch.dtype` name, as a `config.json`'s `torch_dtype` spells it:
            /// `float32`, `bfloat16`, `float8_e4m3fn`.
            pub(crate) const fn torch_name(self) -> &'static str {
                match self { $(ElementType::$variant => $torch,)* }
            }
        }
    };
}

// The element types. Adding one: see the module's doc.
element_types! {
    F64 { name: "f64", title: "IEEE 754 binary64", bytes: 8, safetensors: "F64", numpy: ["<f8"], torch: "float64" },
    F32 { name: "f32", title: "IEEE 754 binary32", bytes: 4, safetensors: "F32", numpy: ["<f4"], torch: "float32" },
    F16 { name: "f16", title: "IEEE 754 binary16", bytes: 2, safetensors: "F16", numpy: ["<f2"], torch: "float16" },
    Bf16 { name: "bf16", title: "bfloat16", bytes: 2, safetensors: "BF16", numpy: [], torch: "bfloat16" },
    E4m3 {
        name: "e4m3",
        title: "OCP FP8 E4M3 (largest finite 448, no infinity)",
        bytes: 1,
        safetensors: "F8_E4M3",
        numpy: [],
        torch: "float8_e4m3fn",
    },
    E5m2 {
        name: "e5m2",
        title: "OCP FP8 E5M2 (largest finite 57344)",
        bytes: 1,
        safetensors: "F8_E5M2",
        numpy: [],
        torch: "float8_e5m2",
    },
    I8 { name: "i8", title: "8-bit signed integer", bytes: 1, safetensors: "I8", numpy: ["|i1"], torch: "int8" },
    I16 { name: "i16", title: "16-bit signed integer", bytes: 2, safetensors: "I16", numpy: ["<i2"], torch: "int16" },
    I32 { name: "i32", title: "32-bit signed integer", bytes: 4, safetensors: "I32", numpy: ["<i4"], torch: "int32" },
    I64 { name: "i64", title: "64-bit signed integer", bytes: 8, safetensors: "I64", numpy: ["<i8"], torch: "int64" },
    U8 { name: "u8", title: "8-bit unsigned integer", bytes: 1, safetensors: "U8", numpy: ["|u1"], torch: "uint8" },
    U16 { name: "u16", title: "16-bit unsigned integer", bytes: 2, safetensors: "U16", numpy: ["<u2"], torch: "uint16" },
    U32 { name: "u32", title: "32-bit unsigned integer", bytes: 4, safetensors: "U32", numpy: ["<u4"], torch: "uint32" },
    U64 { name: "u64", title: "64-bit unsigned integer", bytes: 8, safetensors: "U64", numpy: ["<u8"], torch: "uint64" },
    Bool { name: "bool", title: "boolean", bytes: 1, safetensors: "BOOL", numpy: ["|b1"], torch: "bool" },
}

/// The byte-order marks a NumPy type string starts with (`dtype.str`: `<` little, `>`
/// big, `|` not applicable; `=` native, in a hand-written header).
pub(crate) const NUMPY_BYTE_ORDERS: [char; 4] = ['<', '>', '|', '='];

/// A NumPy type string without its byte order (`f4` of `<f4`, `>f4`, `=f4` or `|f4`).
fn without_byte_order(type_string: &str) -> &str {
    type_string.strip_prefix(NUMPY_BYTE_ORDERS).unwrap_or(type_string)
}

impl ElementType {
    /// The element type whose `.safetensors` dtype string is `name`, if any.
    #[doc(hidden)]
    pub fn of_safetensors(name: &str) -> Option<ElementType> {
        ElementType::ALL.into_iter().find(|element| element.safetensors_name() == name)
    }

    /// The element type of a NumPy type string as `dtype.str` spells it (`<f4`, `>i8`,
    /// `|b1`), whatever its byte order; `None` for a type the table lacks (complex,
    /// strings, dates, long double, raw bytes, objects).
    pub fn of_numpy(type_string: &str) -> Option<ElementType> {
        let kind_and_size = without_byte_order(type_string);
        ElementType::ALL
            .into_iter()
            .find(|element| element.numpy_type_string().is_some_and(|numpy| without_byte_order(numpy) == kind_and_size))
    }
}

/// Defines a role: an enum of some of [`ElementType`]'s entries, named as the table names
/// them, with its facts taken from the table. `roles! { /// doc  pub enum Target { Bf16,
/// F16 } }` makes `Target::{ALL, element, of, from_name, of_safetensors, name, title,
/// safetensors_name}`, and serialises it as its name.
macro_rules! roles {
    ($(#[$meta:meta])* $vis:vis enum $role:ident { $($variant:ident),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        $vis enum $role {
            $(
                #[doc = concat!("The dtype table's `", stringify!($variant), "` entry ([`Self::title`] says what it is).")]
                $variant,
            )+
        }

        impl $role {
            /// Every member, in the order the role lists them (the order `--help` shows).
            pub const ALL: [$role; [$($role::$variant),+].len()] = [$($role::$variant),+];

            /// Its entry in the element-type table.
            #[doc(hidden)]
            pub const fn element(self) -> $crate::dtype::ElementType {
                match self { $($role::$variant => $crate::dtype::ElementType::$variant,)+ }
            }

            /// The member that is `element`, if it takes this role.
            #[doc(hidden)]
            pub const fn of(element: $crate::dtype::ElementType) -> Option<$role> {
                match element {
                    $($crate::dtype::ElementType::$variant => Some($role::$variant),)+
                    #[allow(unreachable_patterns)]
                    _ => None,
                }
            }

            /// The member named `name` ([`Self::name`]), if any.
            #[doc(hidden)]
            pub fn from_name(name: &str) -> Option<$role> {
                Self::ALL.into_iter().find(|member| member.name() == name)
            }

            /// The member whose `.safetensors` dtype string is `name`, if any.
            #[doc(hidden)]
            pub fn of_safetensors(name: &str) -> Option<$role> {
                $crate::dtype::ElementType::of_safetensors(name).and_then(Self::of)
            }

            /// Its name, as the CLI, the reports and the JSON spell it (the dtype table's).
            pub const fn name(self) -> &'static str {
                self.element().name()
            }

            /// What it is, in words (the dtype table's title).
            pub const fn title(self) -> &'static str {
                self.element().title()
            }

            /// The `.safetensors` dtype string.
            #[doc(hidden)]
            pub const fn safetensors_name(self) -> &'static str {
                self.element().safetensors_name()
            }

            /// Whether this is `element` ([`Self::element`]), in a `const` context too.
            #[doc(hidden)]
            pub const fn is_element(self, element: $crate::dtype::ElementType) -> bool {
                self.element() as u8 == element as u8
            }
        }

        /// Serialised as its name.
        impl ::serde::Serialize for $role {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.name())
            }
        }
    };
}
pub(crate) use roles;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_container_strings_are_each_unique() {
        let all = ElementType::ALL;
        for (i, a) in all.iter().enumerate() {
            for b in &all[i + 1..] {
                assert_ne!(a.name(), b.name());
                assert_ne!(a.safetensors_name(), b.safetensors_name());
                if let (Some(x), Some(y)) = (a.numpy_type_string(), b.numpy_type_string()) {
                    assert_ne!(without_byte_order(x), without_byte_order(y), "{a:?} and {b:?}");
                }
            }
        }
    }

    #[test]
    fn every_entry_is_found_by_its_strings() {
        for element in ElementType::ALL {
            assert_eq!(ElementType::of_safetensors(element.safetensors_name()), Some(element));
            if let Some(numpy) = element.numpy_type_string() {
                assert_eq!(ElementType::of_numpy(numpy), Some(element));
                // The bytes are the type string's size, NumPy's own count.
                assert_eq!(without_byte_order(numpy)[1..].parse::<usize>().ok(), Some(element.bytes()), "{numpy}");
            }
        }
    }

    #[test]
    fn numpy_types_are_found_whatever_the_byte_order() {
        let found = |s: &str| ElementType::of_numpy(s).map(ElementType::safetensors_name);
        assert_eq!(found("<f4"), Some("F32"));
        assert_eq!(found(">f8"), Some("F64"));
        assert_eq!(found("=f2"), Some("F16"));
        assert_eq!(found("|b1"), Some("BOOL"));
        assert_eq!(found("|u1"), Some("U8"));
        assert_eq!(found("<c8"), None);
        assert_eq!(found("<U3"), None);
        assert_eq!(found("<f16"), None);
        assert_eq!(found("<V4"), None);
    }
}
