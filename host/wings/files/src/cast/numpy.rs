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
//!   Which NumPy types have a safetensors name is the element-type table's
//!   ([`crate::dtype::ElementType::of_numpy`]).

use crate::containers::{Container, TensorEntry};
use std::path::Path;

/// Whether `dtype` is a NumPy type string as `dtype.str` spells it (it starts with a
/// byte order), not a safetensors dtype name: an array whose type the element-type table
/// lacks ([`crate::dtype::ElementType::of_numpy`]), so it kept NumPy's string.
pub(crate) fn is_numpy_type_string(dtype: &str) -> bool {
    dtype.starts_with(crate::dtype::NUMPY_BYTE_ORDERS)
}

/// Whether the NumPy type string `canonical` is big-endian (a multi-byte type with `>`).
pub(crate) fn is_big_endian(canonical: &str) -> bool {
    canonical.starts_with('>')
}

/// Whether `tensor`'s bytes are in another order than C order would put them: a
/// Fortran-ordered array with two or more dimensions longer than 1.
pub(crate) fn needs_reordering(tensor: &TensorEntry) -> bool {
    tensor.fortran_order && tensor.shape.iter().filter(|&&d| d > 1).count() > 1
}

/// The name of the output file of an input file: the same name for a safetensors file,
/// the stem with `.safetensors` for a `.npy` or `.npz` one.
pub(crate) fn output_file_name(path: &Path, container: Container) -> String {
    let lossy = |name: Option<&std::ffi::OsStr>| name.map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    match container {
        Container::Safetensors => lossy(path.file_name()),
        Container::Npy | Container::Npz => format!("{}.safetensors", lossy(path.file_stem())),
    }
}

/// The name the one array of the `.npy` file at `path` gets: the file's stem.
pub(crate) fn npy_tensor_name(path: &Path) -> String {
    path.file_stem().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "array".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_orders_are_read_from_the_type_string() {
        assert!(is_big_endian(">f2") && !is_big_endian("<f2") && !is_big_endian("|u1"));
        assert!(is_numpy_type_string("<c8") && is_numpy_type_string("|b1") && !is_numpy_type_string("F8_E4M3"));
    }

    #[test]
    fn output_names_follow_the_input_stem() {
        assert_eq!(output_file_name(Path::new("a/w.npy"), Container::Npy), "w.safetensors");
        assert_eq!(output_file_name(Path::new("a/w.npz"), Container::Npz), "w.safetensors");
        assert_eq!(output_file_name(Path::new("a/m.safetensors"), Container::Safetensors), "m.safetensors");
        assert_eq!(npy_tensor_name(Path::new("dir/embed.npy")), "embed");
    }
}
