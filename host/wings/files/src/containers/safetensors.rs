//! The `.safetensors` header: its length bounded ([`MAX_SAFETENSORS_HEADER`], so that a
//! hostile length field cannot make it allocate gigabytes), then parsed into its tensors
//! (`parse_safetensors`) by `header` (its entries, with no key twice in any object),
//! with the offsets checked here as the format's crate checks them; and the content test
//! that tells a `.safetensors` file without its extension (`looks_like_safetensors`).

pub(crate) mod header;

use crate::containers::npy::{BOOL, INTEGER, ShapeOverflow, UNKNOWN_DTYPE, element_count};
use crate::containers::{TensorElement, TensorEntry};
use bitexact_support::element::Endian;
use bitexact_support::output::excerpt;
use shared::Format;

/// Largest `.safetensors` JSON header accepted, in bytes. The format allows 100 MB; 2 MiB
/// is about 20,000 tensors, far more than real checkpoint files hold (a few hundred to
/// a few thousand), and keeps the parsed header and the report well under `scan`'s
/// 64 MiB heap budget (`host/tests/heap_bound.rs` measures the peak at this limit).
///
/// Parse time, measured on adversarial headers (release build, a loaded 2-core machine):
/// `serde_json` is one recursive-descent pass and refuses nesting over 128 at once; the
/// crate then sorts the tensors by offset (n log n) and fills hash maps. The costliest
/// families (tens of thousands of tensors, a shape of a million dimensions, a million
/// metadata keys, an unknown key holding 30-deep arrays) took 12 to 40 ns per byte at
/// 64 KiB and 35 to 130 ns at 16 MiB: 256 times the size, 3 to 9 times the cost per byte
/// (the sort's log factor and cache misses; quadratic work would be 256 times). At this
/// limit the worst took 0.3 s. (Measured with the crate's parse; `header`,
/// which replaced it, makes the same kind of passes plus one that checks every object's
/// keys for repeats, and has not been measured on these families yet.)
pub const MAX_SAFETENSORS_HEADER: u64 = 2 << 20;
/// `.safetensors` files start with the header length as a little-endian u64.
pub(crate) const SAFETENSORS_LEN_BYTES: usize = 8;

/// Why a `.safetensors` header is refused by `parse_safetensors`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SafetensorsError {
    /// The file is shorter than the header length field.
    #[error("truncated: {file_len} bytes, shorter than the 8-byte header length")]
    NoLength {
        /// The file's length.
        file_len: u64,
    },
    /// The byte after the 8-byte length is not the `{` that starts a safetensors header:
    /// a text file, say, whose first 8 bytes read as an absurd length.
    #[error("not a safetensors file: byte 8 is {found:#04x}, not the '{{' a safetensors header starts with")]
    NotSafetensors {
        /// The byte found.
        found: u8,
    },
    /// The length field exceeds [`MAX_SAFETENSORS_HEADER`].
    #[error("oversized header: {len} bytes (limit {MAX_SAFETENSORS_HEADER})")]
    Oversized {
        /// Bytes claimed.
        len: u64,
    },
    /// The file ends before the header does.
    #[error("truncated header: claims {claimed} bytes, file holds {available} after the length")]
    Truncated {
        /// Bytes of header claimed.
        claimed: u64,
        /// Bytes in the file after the length field.
        available: u64,
    },
    /// A tensor name appears twice.
    #[error("tensor name '{}' appears twice in the header", excerpt(.name))]
    DuplicateName {
        /// The name.
        name: String,
    },
    /// A key appears twice in one object inside a tensor's entry or the metadata.
    #[error("key '{}' appears twice in the entry of '{}'", excerpt(.key), excerpt(.entry))]
    DuplicateKey {
        /// The key.
        key: String,
        /// The top-level key (tensor name or `__metadata__`) it lies under.
        entry: String,
    },
    /// A header that is not what the format prescribes.
    #[error("invalid header: {0}")]
    Invalid(serde_json::Error),
    /// The tensors claim more data than the file holds.
    #[error("header claims {claimed} data bytes, the file holds only {available} after the header")]
    DataBeyondEnd {
        /// Bytes the header describes.
        claimed: u64,
        /// Bytes in the file after the header.
        available: u64,
    },
    /// Bytes after the last tensor's data.
    #[error("{count} bytes after the last tensor belong to no tensor")]
    TrailingBytes {
        /// How many.
        count: u64,
    },
    /// A tensor whose data does not start where the previous one's ends (in order of
    /// offsets; the first at 0).
    #[error("tensor '{}': data_offsets start at {start}, where the data before it ends at {expected}", excerpt(.name))]
    OffsetsOutOfOrder {
        /// The name.
        name: String,
        /// Where its data starts.
        start: usize,
        /// Where it should.
        expected: usize,
    },
    /// A tensor whose shape's element count overflows.
    #[error(transparent)]
    Shape(#[from] ShapeOverflow),
    /// A tensor whose data offsets do not match its shape and dtype.
    #[error("tensor '{}': data_offsets do not match its shape and dtype", excerpt(.name))]
    Offsets {
        /// The name.
        name: String,
    },
}

/// `true` if `bytes` start like a `.safetensors` file: a little-endian header length
/// that fits the file and [`MAX_SAFETENSORS_HEADER`], then a JSON object's `{` (the
/// `safetensors` crate refuses a header that starts with anything else). Neither NumPy's
/// magic nor a zip archive's can pass: both would claim a header of terabytes.
pub(crate) fn looks_like_safetensors(bytes: &[u8]) -> bool {
    let Some((length_field, rest)) = bytes.split_first_chunk::<SAFETENSORS_LEN_BYTES>() else {
        return false;
    };
    let header_len = u64::from_le_bytes(*length_field);
    header_len >= 2 && header_len <= MAX_SAFETENSORS_HEADER.min(rest.len() as u64) && rest.first() == Some(&b'{')
}

/// Parses a `.safetensors` header, after its length has been checked against
/// [`MAX_SAFETENSORS_HEADER`] and the file size: no key may appear twice anywhere in it,
/// every tensor's data must follow the previous one's with the size its shape and dtype
/// give, and together they must cover the rest of the file exactly. The checks are the
/// `safetensors` crate's (`Metadata::validate`), made here so that a dtype the crate does
/// not know is one tensor listed as not scanned (its size unchecked), not the whole
/// file refused.
pub(crate) fn parse_safetensors(head: &[u8], file_len: u64) -> Result<Vec<TensorEntry>, SafetensorsError> {
    let Some((length_field, rest)) = head.split_first_chunk::<SAFETENSORS_LEN_BYTES>() else {
        return Err(SafetensorsError::NoLength { file_len });
    };
    if let Some(&found) = rest.first().filter(|&&b| b != b'{') {
        return Err(SafetensorsError::NotSafetensors { found });
    }
    let header_len = u64::from_le_bytes(*length_field);
    if header_len > MAX_SAFETENSORS_HEADER {
        return Err(SafetensorsError::Oversized { len: header_len });
    }
    let after_length = file_len.saturating_sub(SAFETENSORS_LEN_BYTES as u64);
    let Some(header) = rest.get(..header_len as usize).filter(|_| header_len <= after_length) else {
        return Err(SafetensorsError::Truncated { claimed: header_len, available: after_length });
    };
    // Before the parse, whose maps would keep the last of two entries of one name.
    if let Some(repeated) = header::duplicate_key(header) {
        return Err(match repeated.entry {
            None => SafetensorsError::DuplicateName { name: repeated.key },
            Some(entry) => SafetensorsError::DuplicateKey { key: repeated.key, entry },
        });
    }
    let mut entries = header::entries(header).map_err(SafetensorsError::Invalid)?;
    // Stable: tensors of equal offsets (empty ones) stay in file order.
    entries.sort_by_key(|(_, entry)| entry.data_offsets);
    let data_start = SAFETENSORS_LEN_BYTES + header.len();
    let mut tensors = Vec::with_capacity(entries.len());
    let mut data_len = 0;
    // `data` is relative to the data section until the section is known to fit the file.
    for (name, entry) in entries {
        let (start, end) = entry.data_offsets;
        if start != data_len || end < start {
            return Err(SafetensorsError::OffsetsOutOfOrder { name, start, expected: data_len });
        }
        data_len = end;
        let dtype = header::known_dtype(&entry.dtype);
        let element = dtype.map_or(TensorElement::Unsupported(UNKNOWN_DTYPE), safetensors_element);
        let elements = element_count(&name, &entry.shape)?;
        // Unknown dtypes have no size to check; their data is not read.
        let size_matches =
            dtype.is_none_or(|dtype| (elements as u128) * (dtype.bitsize() as u128) == ((end - start) as u128) * 8);
        if !size_matches {
            return Err(SafetensorsError::Offsets { name });
        }
        tensors.push(TensorEntry {
            dtype: dtype.map_or(entry.dtype, |dtype| format!("{dtype:?}")),
            element,
            shape: entry.shape,
            elements,
            data: start..end,
            deflated: None,
            fortran_order: false,
            name,
        });
    }
    let file_data_len = after_length - header_len;
    if data_len as u64 > file_data_len {
        return Err(SafetensorsError::DataBeyondEnd { claimed: data_len as u64, available: file_data_len });
    }
    if (data_len as u64) < file_data_len {
        return Err(SafetensorsError::TrailingBytes { count: file_data_len - data_len as u64 });
    }
    for tensor in &mut tensors {
        tensor.data = data_start + tensor.data.start..data_start + tensor.data.end;
    }
    Ok(tensors)
}

/// How a safetensors dtype is checked. E8M0 (whose 0xFF is NaN, but which has no sign
/// bit for `shared`'s classification to work on) and dtypes newer than the crate are
/// [`TensorElement::Unsupported`].
fn safetensors_element(dtype: safetensors::Dtype) -> TensorElement {
    use safetensors::Dtype as D;
    let float = |format: Format| TensorElement::Float(format, Endian::Little);
    match dtype {
        D::F16 => float(Format::Binary16),
        D::BF16 => float(Format::Bfloat16),
        D::F32 => float(Format::Binary32),
        D::F64 => float(Format::Binary64),
        D::F8_E4M3 => float(Format::Fp8E4m3),
        D::F8_E5M2 => float(Format::Fp8E5m2),
        D::F8_E4M3FNUZ => float(Format::Fp8E4m3Fnuz),
        D::F8_E5M2FNUZ => float(Format::Fp8E5m2Fnuz),
        D::C64 => TensorElement::Complex(Format::Binary32, Endian::Little),
        D::BOOL => TensorElement::AlwaysFinite(BOOL),
        D::U8 | D::I8 | D::U16 | D::I16 | D::U32 | D::I32 | D::U64 | D::I64 => TensorElement::AlwaysFinite(INTEGER),
        D::F4 | D::F6_E2M3 | D::F6_E3M2 => TensorElement::AlwaysFinite("MX format without NaN or infinity"),
        D::F8_E8M0 => TensorElement::Unsupported("E8M0 is not supported"),
        _ => TensorElement::Unsupported("dtype not supported"),
    }
}
