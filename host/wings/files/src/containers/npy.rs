//! One `.npy` header (of a file or of an `.npz` member) parsed into its tensor
//! (`parse_npy`, [`NpyError`]), the element count of a shape ([`ShapeOverflow`]), and
//! the reasons a tensor is listed but not scanned (integer, bool, unknown dtypes), which
//! the `.safetensors` parser gives too.

use crate::containers::npy_descr::{NumpyKind, NumpyType, numpy_type};
use crate::containers::npy_header::{self, Descr, NpyHeaderError};
use crate::containers::{TensorElement, TensorEntry};
use bitexact_support::element::Endian;
use bitexact_support::output::excerpt;
use shared::Format;

/// Why an integer tensor is not scanned.
pub(crate) const INTEGER: &str = "integer dtype";
/// Why a boolean tensor is not scanned.
pub(crate) const BOOL: &str = "bool dtype";
/// Why a tensor of a dtype this build does not know is not scanned: a safetensors dtype
/// newer than its `safetensors` crate, a NumPy type string NumPy does not read (`<f1`,
/// which `np.save` writes for `ml_dtypes`' FP8 arrays).
pub(crate) const UNKNOWN_DTYPE: &str = "unknown dtype";

/// Why an `.npy` file (or `.npz` member) is refused by `parse_npy`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NpyError {
    /// The header is refused.
    #[error(transparent)]
    Header(#[from] NpyHeaderError),
    /// `'descr'` is a string NumPy does not read as a dtype.
    #[error("dtype '{}' is not a NumPy type string", excerpt(.descr))]
    NotNumpyType {
        /// `'descr'` as written.
        descr: String,
    },
    /// The shape's element count overflows.
    #[error(transparent)]
    Shape(#[from] ShapeOverflow),
    /// The data the header describes runs past the end of the file.
    #[error("header claims {elements} × {item_size} data bytes, the file holds only {available} after the header")]
    DataBeyondEnd {
        /// Elements the header claims.
        elements: u64,
        /// Bytes per element.
        item_size: u64,
        /// Bytes in the file after the header.
        available: u64,
    },
}

/// A tensor whose shape's element count does not fit in a `u64`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("tensor '{}': shape {} overflows", excerpt(.tensor), excerpt(&format!("{:?}", .shape)))]
pub struct ShapeOverflow {
    /// The tensor's name.
    pub tensor: String,
    /// Its shape.
    pub shape: Vec<u64>,
}

/// Parses an `.npy` header with [`npy_header`] (linear time whatever the bytes), the
/// dtype string as NumPy reads it ([`numpy_type`]). `head` is the start of a file of `file_len`
/// bytes: all of it, or at least [`npy_header::MAX_NPY_HEAD_BYTES`]. The file is an
/// `.npy` file, or an `.npz` member (a deflated one's data is inflated only when it is
/// scanned).
pub(crate) fn parse_npy(head: &[u8], file_len: u64) -> Result<TensorEntry, NpyError> {
    let (header, data_start) = npy_header::read(head)?;
    let (dtype, element, item_size) = match header.descr {
        Descr::Plain(descr) => match numpy_type(&descr) {
            Some(numpy) => {
                // Pickled objects' size only unpickling tells: nothing is read then.
                let item_size = if numpy.kind == NumpyKind::Object { 0 } else { numpy.item_size };
                let element = npy_element(&numpy);
                (numpy.canonical, element, item_size)
            }
            None => {
                let item_size =
                    unknown_type_size(&descr).ok_or_else(|| NpyError::NotNumpyType { descr: descr.clone() })?;
                (descr, TensorElement::Unsupported(UNKNOWN_DTYPE), item_size)
            }
        },
        // Its item size is not worked out: its data is not read.
        Descr::Structured(text) => (text, TensorElement::Unsupported("structured dtype"), 0),
    };
    let elements = element_count("array", &header.shape)?;
    let after_header = file_len.saturating_sub(data_start as u64);
    let data_len = elements.checked_mul(item_size).filter(|&n| n <= after_header).ok_or(NpyError::DataBeyondEnd {
        elements,
        item_size,
        available: after_header,
    })?;
    Ok(TensorEntry {
        name: "array".into(),
        dtype,
        element,
        shape: header.shape,
        elements,
        data: data_start..data_start + data_len as usize,
        deflated: None,
        fortran_order: header.fortran_order,
    })
}

/// The item size of a type string NumPy does not read but that is spelled like one: a
/// byte order (`<`, `>`, `|`, `=`, or none), a letter, and a size in bytes (`<f1`, which
/// `np.save` writes for `ml_dtypes`' FP8 arrays). Anything else is not a type string.
fn unknown_type_size(descr: &str) -> Option<u64> {
    let rest = descr.strip_prefix(['<', '>', '|', '=']).unwrap_or(descr);
    let mut chars = rest.chars();
    chars.next().filter(char::is_ascii_alphabetic)?;
    let size = chars.as_str();
    let digits_only = !size.is_empty() && size.len() <= 4 && size.bytes().all(|b| b.is_ascii_digit());
    digits_only.then(|| size.parse().ok()).flatten()
}

/// How a plain npy dtype is checked: floats of 2, 4 or 8 bytes and complex numbers of
/// two 4- or 8-byte parts are scanned; integers, booleans, strings and dates have no NaN;
/// long double, raw bytes and pickled objects are [`TensorElement::Unsupported`].
fn npy_element(numpy: &NumpyType) -> TensorElement {
    let endian = if numpy.big_endian { Endian::Big } else { Endian::Little };
    let float_of = |bytes: u64| match bytes {
        2 => Some(Format::Binary16),
        4 => Some(Format::Binary32),
        8 => Some(Format::Binary64),
        _ => None,
    };
    match numpy.kind {
        NumpyKind::Bool => TensorElement::AlwaysFinite(BOOL),
        NumpyKind::Int | NumpyKind::Uint => TensorElement::AlwaysFinite(INTEGER),
        NumpyKind::Float => match float_of(numpy.item_size) {
            Some(format) => TensorElement::Float(format, endian),
            None => TensorElement::Unsupported("extended-precision float is not supported"),
        },
        NumpyKind::Complex => match float_of(numpy.item_size / 2) {
            Some(format) if format != Format::Binary16 => TensorElement::Complex(format, endian),
            _ => TensorElement::Unsupported("extended-precision complex is not supported"),
        },
        NumpyKind::Bytes | NumpyKind::Unicode | NumpyKind::DateTime | NumpyKind::TimeDelta => {
            TensorElement::AlwaysFinite("not a floating-point dtype")
        }
        NumpyKind::Object => TensorElement::Unsupported("pickled objects are not read"),
        NumpyKind::Void => TensorElement::Unsupported("raw bytes of unknown type"),
    }
}

/// The product of `shape` (0 for an empty tensor), refusing overflow.
pub(crate) fn element_count(name: &str, shape: &[u64]) -> Result<u64, ShapeOverflow> {
    if shape.contains(&0) {
        return Ok(0);
    }
    shape
        .iter()
        .try_fold(1u64, |n, &d| n.checked_mul(d))
        .ok_or_else(|| ShapeOverflow { tensor: name.to_string(), shape: shape.to_vec() })
}
