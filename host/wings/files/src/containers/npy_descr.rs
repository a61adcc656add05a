//! An `.npy` header's `'descr'` string read as NumPy reads it ([`numpy_type`]):
//! `np.load` hands it to `np.dtype(descr)`, which takes far more than the `<f4` that
//! `np.save` writes. Accepted here, as NumPy 2 on 64-bit little-endian Linux accepts them:
//!
//! - an optional byte order `<` (little), `>` (big), `=` (native) or `|` (not
//!   applicable): for a multi-byte type NumPy reads `=` *and* `|` as native, which is
//!   little-endian on every machine this runs on;
//! - then a type character alone (`e`, `f`, `d`, `g`, `F`, `D`, `G`, `?`, `b`, `B`, `h`,
//!   `H`, `i`, `I`, `l`, `L`, `q`, `Q`, `p`, `P`, `S`, `U`, `V`, `M`, `m`, `c`, `O`, and `a`
//!   without a byte order), or a kind and a size in bytes (`f2`, `f4`, `f8`, `f16`, `c8`,
//!   `c16`, `c32`, `b1`, `i1`…`i8`, `u1`…`u8`, `S`/`a`/`U`/`V` with any length,
//!   `M8`/`m8` with an optional `[unit]`), the size read as C's `strtol` reads it
//!   (leading spaces, a `+`, leading zeros);
//! - or, without a byte order, one of NumPy's type names (`float32`, `half`, `double`,
//!   `complex64`, `int64`, `bool`, ...), or `datetime64[unit]` / `timedelta64[unit]` (with
//!   a byte order too).
//!
//! `host/wings/files/src/tests/numpy_descr.rs` compares this with NumPy itself, where NumPy is installed.
//! Structured and sub-array strings (`<f4,<f4`, `(2,)f4`) are not read.

/// The kinds of NumPy dtypes, as `dtype.kind` names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NumpyKind {
    /// `b`: bool.
    Bool,
    /// `i`: signed integer.
    Int,
    /// `u`: unsigned integer.
    Uint,
    /// `f`: floating point.
    Float,
    /// `c`: complex, two floats.
    Complex,
    /// `S`: bytes.
    Bytes,
    /// `U`: UCS-4 text.
    Unicode,
    /// `V`: raw bytes.
    Void,
    /// `M`: datetime64.
    DateTime,
    /// `m`: timedelta64.
    TimeDelta,
    /// `O`: pickled Python objects.
    Object,
}

/// A type string as NumPy reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NumpyType {
    /// The kind.
    pub kind: NumpyKind,
    /// Bytes per element (`dtype.itemsize`; 8 for a pickled object's pointer, whose data
    /// is a pickle, not elements).
    pub item_size: u64,
    /// `true` for big-endian storage.
    pub big_endian: bool,
    /// The type as `dtype.str` spells it (`<d` is `<f8`, `float32` is `<f4`).
    pub canonical: String,
}

/// Type names NumPy accepts without a byte order, with the kind character and size they
/// stand for.
const NAMES: &[(&str, char, u64)] = &[
    ("float16", 'f', 2),
    ("half", 'f', 2),
    ("float32", 'f', 4),
    ("single", 'f', 4),
    ("float64", 'f', 8),
    ("double", 'f', 8),
    ("float", 'f', 8),
    ("float128", 'f', 16),
    ("longdouble", 'f', 16),
    ("complex64", 'c', 8),
    ("csingle", 'c', 8),
    ("complex128", 'c', 16),
    ("cdouble", 'c', 16),
    ("complex", 'c', 16),
    ("complex256", 'c', 32),
    ("clongdouble", 'c', 32),
    ("bool", 'b', 1),
    ("bool_", 'b', 1),
    ("int8", 'i', 1),
    ("byte", 'i', 1),
    ("uint8", 'u', 1),
    ("ubyte", 'u', 1),
    ("int16", 'i', 2),
    ("short", 'i', 2),
    ("uint16", 'u', 2),
    ("ushort", 'u', 2),
    ("int32", 'i', 4),
    ("intc", 'i', 4),
    ("uint32", 'u', 4),
    ("uintc", 'u', 4),
    ("int64", 'i', 8),
    ("int", 'i', 8),
    ("long", 'i', 8),
    ("longlong", 'i', 8),
    ("intp", 'i', 8),
    ("uint64", 'u', 8),
    ("uint", 'u', 8),
    ("ulong", 'u', 8),
    ("ulonglong", 'u', 8),
    ("uintp", 'u', 8),
    ("str", 'U', 0),
    ("str_", 'U', 0),
    ("bytes", 'S', 0),
    ("bytes_", 'S', 0),
    ("void", 'V', 0),
    ("datetime64", 'M', 8),
    ("timedelta64", 'm', 8),
    ("object", 'O', 8),
    ("object_", 'O', 8),
];

/// Type characters that stand alone, with the kind character and size they stand for
/// (`l` and `p` are C's `long` and `intptr_t`: 8 bytes on 64-bit Linux).
const CHARS: &[(char, char, u64)] = &[
    ('e', 'f', 2),
    ('f', 'f', 4),
    ('d', 'f', 8),
    ('g', 'f', 16),
    ('F', 'c', 8),
    ('D', 'c', 16),
    ('G', 'c', 32),
    ('?', 'b', 1),
    ('b', 'i', 1),
    ('B', 'u', 1),
    ('h', 'i', 2),
    ('H', 'u', 2),
    ('i', 'i', 4),
    ('I', 'u', 4),
    ('l', 'i', 8),
    ('L', 'u', 8),
    ('q', 'i', 8),
    ('Q', 'u', 8),
    ('p', 'i', 8),
    ('P', 'u', 8),
    ('S', 'S', 0),
    ('U', 'U', 0),
    ('V', 'V', 0),
    ('M', 'M', 8),
    ('m', 'm', 8),
    ('c', 'S', 1),
    ('O', 'O', 8),
];

/// datetime64 / timedelta64 units.
const TIME_UNITS: &[&str] = &["Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns", "ps", "fs", "as"];

/// `descr` read as `np.dtype(descr)` reads a type string (see the module doc), or `None`
/// where NumPy refuses it or it is not a single type.
pub fn numpy_type(descr: &str) -> Option<NumpyType> {
    let (order, body) = match descr.chars().next()? {
        order @ ('<' | '>' | '=' | '|') => (Some(order), &descr[1..]),
        _ => (None, descr),
    };
    let (kind_char, size, unit) =
        if let Some(&(_, kind, size)) = NAMES.iter().find(|(name, ..)| order.is_none() && *name == body) {
            (kind, size, None)
        } else if let Some((kind, unit)) = time_name(body) {
            (kind, 8, Some(unit))
        } else {
            let mut chars = body.chars();
            let first = chars.next()?;
            let rest = chars.as_str();
            match CHARS.iter().find(|(c, ..)| *c == first) {
                Some(&(_, kind, size)) if rest.is_empty() => (kind, size, None),
                _ if first == 'a' && rest.is_empty() && order.is_none() => ('S', 0, None),
                _ => sized(first, rest)?,
            }
        };
    Some(typed(kind_char, size, unit, order == Some('>')))
}

/// A kind character and a size: `f4`, `S10`, `M8[ns]`.
fn sized(kind: char, rest: &str) -> Option<(char, u64, Option<&str>)> {
    let (size, after) = strtol(rest)?;
    let unit = match (kind, after) {
        (_, "") => None,
        ('M' | 'm', after) => Some(time_unit(after)?),
        _ => return None,
    };
    let fits = match kind {
        'f' => matches!(size, 2 | 4 | 8 | 16),
        'c' => matches!(size, 8 | 16 | 32),
        'b' => size == 1,
        'i' | 'u' => matches!(size, 1 | 2 | 4 | 8),
        'S' | 'a' | 'U' | 'V' => true,
        'M' | 'm' => size == 8,
        'O' => matches!(size, 4 | 8),
        _ => false,
    };
    fits.then_some((if kind == 'a' { 'S' } else { kind }, size, unit))
}

/// `datetime64[unit]` or `timedelta64[unit]`: the kind character and the unit.
fn time_name(text: &str) -> Option<(char, &str)> {
    let (kind, unit) = match text.strip_prefix("datetime64") {
        Some(unit) => ('M', unit),
        None => ('m', text.strip_prefix("timedelta64")?),
    };
    Some((kind, time_unit(unit)?))
}

/// `[unit]` (empty for none): the unit, or `None` if it is not one.
fn time_unit(text: &str) -> Option<&str> {
    if text.is_empty() {
        return Some("");
    }
    let unit = text.strip_prefix('[')?.strip_suffix(']')?;
    TIME_UNITS.contains(&unit).then_some(unit)
}

/// A size as C's `strtol` reads it, with what follows: leading whitespace, an optional
/// `+`, then at least one digit.
fn strtol(text: &str) -> Option<(u64, &str)> {
    let text = text.trim_start_matches([' ', '\t', '\n', '\x0B', '\x0C', '\r']);
    let text = text.strip_prefix('+').unwrap_or(text);
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    Some((text[..digits].parse().ok()?, &text[digits..]))
}

/// The type of a kind character and a size (in characters for `U`), spelled as
/// `dtype.str` spells it.
fn typed(kind_char: char, size: u64, unit: Option<&str>, big: bool) -> NumpyType {
    use NumpyKind as K;
    let kind = match kind_char {
        'b' => K::Bool,
        'i' => K::Int,
        'u' => K::Uint,
        'f' => K::Float,
        'c' => K::Complex,
        'S' => K::Bytes,
        'U' => K::Unicode,
        'V' => K::Void,
        'M' => K::DateTime,
        'm' => K::TimeDelta,
        _ => K::Object,
    };
    let item_size = match kind {
        K::Unicode => size * 4,
        K::Object => 8,
        _ => size,
    };
    let has_order = !matches!(kind, K::Bool | K::Bytes | K::Void | K::Object) && item_size != 1;
    let has_order = has_order || kind == K::Unicode;
    let order = match (has_order, big) {
        (false, _) => '|',
        (true, true) => '>',
        (true, false) => '<',
    };
    let canonical = match (kind, unit) {
        (K::Object, _) => format!("{order}O"),
        (_, Some(unit)) if !unit.is_empty() => format!("{order}{kind_char}{size}[{unit}]"),
        _ => format!("{order}{kind_char}{size}"),
    };
    NumpyType { kind, item_size, big_endian: big && has_order, canonical }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What NumPy 2.4.6 gives for `np.dtype(descr).str` and `.itemsize` (seen
    /// 2026-12-01); `host/wings/files/src/tests/numpy_descr.rs` asks NumPy itself, where it is installed.
    #[test]
    fn the_spellings_np_load_reads_are_read_as_numpy_reads_them() {
        for (descr, canonical, item_size) in [
            ("<d", "<f8", 8),
            ("<e", "<f2", 2),
            ("f", "<f4", 4),
            ("float32", "<f4", 4),
            ("<F", "<c8", 8),
            ("=f2", "<f2", 2),
            ("|f4", "<f4", 4),
            (">d", ">f8", 8),
            ("<f 4", "<f4", 4),
            ("f04", "<f4", 4),
            ("complex64", "<c8", 8),
            (">U10", ">U10", 40),
            ("<a10", "|S10", 10),
            ("<i1", "|i1", 1),
            ("datetime64[ns]", "<M8[ns]", 8),
            ("O", "|O", 8),
        ] {
            let read = numpy_type(descr).unwrap_or_else(|| panic!("{descr:?} refused"));
            assert_eq!((read.canonical.as_str(), read.item_size), (canonical, item_size), "{descr:?}");
        }
        for refused in ["<float32", "f1", "<f12", "u16", "c4", "b2", "<a", "<<f4", "f4 ", " f4", "M[ns]", "", "<"] {
            assert_eq!(numpy_type(refused), None, "{refused:?}");
        }
    }
}
