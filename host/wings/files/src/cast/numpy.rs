//! `.npy` and `.npz` inputs of `cast`: what their tensors are called in the
//! safetensors output, which safetensors dtype each becomes, and which arrays cannot be
//! carried over.
//!
//! - A `.npy` file holds one unnamed array: in the output it is named after the file's
//!   stem (`weights.npy` gives the tensor `weights`, in `weights.safetensors`).
//! - An `.npz` archive's members keep their names, as `np.load` gives them (the member
//!   name without its final `.npy`), in `<archive stem>.safetensors`.
//! - Big-endian arrays (`>f4`, `>i8`, ...) are read in their byte order and written
//!   little-endian, as safetensors stores every tensor: converted, not refused.
//! - A Fortran-ordered array with two or more dimensions longer than 1 is refused: its
//!   bytes are in column-major order, which safetensors cannot say, and reordering them
//!   would need the whole array in memory. One with at most one such dimension has the
//!   same bytes in either order, and is read as it is.
//! - An array of a dtype that safetensors has no name for (complex, strings, dates,
//!   long double, raw bytes, objects) is refused, even when it would only be copied.

use crate::containers::{Container, TensorEntry};
use std::path::Path;

/// The safetensors dtype of a NumPy type string as `dtype.str` spells it (`<f4`, `>i8`,
/// `|b1`), whatever its byte order; `None` for a type safetensors cannot hold.
pub fn safetensors_dtype_of_numpy(canonical: &str) -> Option<&'static str> {
    let kind_and_size = canonical.strip_prefix(['<', '>', '|', '=']).unwrap_or(canonical);
    Some(match kind_and_size {
        "f2" => "F16",
        "f4" => "F32",
        "f8" => "F64",
        "i1" => "I8",
        "i2" => "I16",
        "i4" => "I32",
        "i8" => "I64",
        "u1" => "U8",
        "u2" => "U16",
        "u4" => "U32",
        "u8" => "U64",
        "b1" => "BOOL",
        _ => return None,
    })
}

/// Whether `dtype` is a NumPy type string as `dtype.str` spells it (it starts with a
/// byte order), not a safetensors dtype name: an array [`safetensors_dtype_of_numpy`]
/// found no name for.
pub fn is_numpy_type_string(dtype: &str) -> bool {
    dtype.starts_with(['<', '>', '|', '='])
}

/// Whether the NumPy type string `canonical` is big-endian (a multi-byte type with `>`).
pub fn is_big_endian(canonical: &str) -> bool {
    canonical.starts_with('>')
}

/// Whether `tensor`'s bytes are in another order than C order would put them: a
/// Fortran-ordered array with two or more dimensions longer than 1.
pub fn needs_reordering(tensor: &TensorEntry) -> bool {
    tensor.fortran_order && tensor.shape.iter().filter(|&&d| d > 1).count() > 1
}

/// The name of the output file of an input file: the same name for a safetensors file,
/// the stem with `.safetensors` for a `.npy` or `.npz` one.
pub fn output_file_name(path: &Path, container: Container) -> String {
    let lossy = |name: Option<&std::ffi::OsStr>| name.map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    match container {
        Container::Safetensors => lossy(path.file_name()),
        Container::Npy | Container::Npz => format!("{}.safetensors", lossy(path.file_stem())),
    }
}

/// The name the one array of the `.npy` file at `path` gets: the file's stem.
pub fn npy_tensor_name(path: &Path) -> String {
    path.file_stem().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "array".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numpy_types_map_to_safetensors_dtypes_whatever_the_byte_order() {
        assert_eq!(safetensors_dtype_of_numpy("<f4"), Some("F32"));
        assert_eq!(safetensors_dtype_of_numpy(">f8"), Some("F64"));
        assert_eq!(safetensors_dtype_of_numpy("|b1"), Some("BOOL"));
        assert_eq!(safetensors_dtype_of_numpy("|u1"), Some("U8"));
        assert_eq!(safetensors_dtype_of_numpy("<c8"), None);
        assert_eq!(safetensors_dtype_of_numpy("<U3"), None);
        assert_eq!(safetensors_dtype_of_numpy("<f16"), None);
        assert!(is_big_endian(">f2") && !is_big_endian("<f2") && !is_big_endian("|u1"));
    }

    #[test]
    fn output_names_follow_the_input_stem() {
        assert_eq!(output_file_name(Path::new("a/w.npy"), Container::Npy), "w.safetensors");
        assert_eq!(output_file_name(Path::new("a/w.npz"), Container::Npz), "w.safetensors");
        assert_eq!(output_file_name(Path::new("a/m.safetensors"), Container::Safetensors), "m.safetensors");
        assert_eq!(npy_tensor_name(Path::new("dir/embed.npy")), "embed");
    }
}
