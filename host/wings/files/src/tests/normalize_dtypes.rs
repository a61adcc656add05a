//! Every output dtype of `normalize` ([`Dtype::ALL`], from `files::write`'s table) is
//! whole: it has one `conversions()` entry per sample width (so a half-added dtype
//! fails here), its division by a PNM's `maxval` is the exact reference's on every code
//! of a set of `maxval`s, and it is written to every container that holds it with the
//! exact reference's value for every UNORM8 and UNORM16 code (read back by the
//! `safetensors` and `npyz` crates). (`host/tests/normalize_dtypes.rs` checks that
//! `--dtype` offers it with its `--help` line.)
//! The reference is `bitexact_verify::reference`'s integer arithmetic, matched to a
//! dtype by its bit layout alone.

use crate::backend::Device;
use crate::normalize::divide;
use crate::normalize::image::{SampleWidth, conversions};
use crate::write::{Dtype, DtypeOf, DtypeVisitor, with_dtype};
use crate::{NormalizeOptions, normalize};
use bitexact_verify::reference::{
    BFLOAT16, BINARY16, BINARY32, FP8_E4M3, FP8_E5M2, NarrowFormat, Rounded, div_to_narrow, unorm_to_narrow_bits,
};
use rayon::prelude::*;
use std::path::Path;

/// The exact reference's format of the layout of `dtype` (the one of its exponent and
/// mantissa widths: a quotient in [0, 1] never meets the largest finite, where formats
/// of one layout may differ), and the `safetensors` crate's dtype of that format. A
/// dtype of a layout named nowhere here fails, until its reference is named.
fn reference_format(dtype: Dtype) -> (NarrowFormat, safetensors::Dtype) {
    use safetensors::Dtype as S;
    let layout = (dtype.exponent_bits(), dtype.mantissa_bits());
    let known =
        [(BINARY32, S::F32), (BINARY16, S::F16), (BFLOAT16, S::BF16), (FP8_E4M3, S::F8_E4M3), (FP8_E5M2, S::F8_E5M2)];
    let found = known.into_iter().find(|(format, _)| (format.exponent_bits, format.mantissa_bits) == layout);
    found.unwrap_or_else(|| panic!("--dtype {}: no reference format of {layout:?} bits; name one here", dtype.name()))
}

/// A stored value's encoding (its bytes, little-endian).
fn encoding<T: bytemuck::Pod>(value: T) -> u64 {
    let mut bytes = [0u8; 8];
    let value = bytemuck::bytes_of(&value);
    bytes[..value.len()].copy_from_slice(value);
    u64::from_le_bytes(bytes)
}

#[test]
fn every_dtype_has_one_conversion_per_sample_width_of_its_widths() {
    let table = conversions();
    let mut missing = Vec::new();
    for dtype in Dtype::ALL {
        for width in SampleWidth::ALL {
            let entries: Vec<_> = table.iter().filter(|&&(w, d, _)| (w, d) == (width, dtype)).collect();
            match entries.as_slice() {
                [(_, _, conversion)] => {
                    let in_bytes = if width == SampleWidth::Unorm8 { 1 } else { 2 };
                    let bytes = (conversion.in_bytes(), conversion.out_bytes());
                    assert_eq!(bytes, (in_bytes, dtype.bytes() as usize), "{width:?} → {}", dtype.name());
                }
                entries => missing.push(format!("{width:?} → {}: {} entries", dtype.name(), entries.len())),
            }
        }
    }
    assert!(missing.is_empty(), "conversions() needs exactly one entry for each: {missing:?}");
}

#[test]
fn every_dtype_is_named_once_and_found_by_its_name() {
    for dtype in Dtype::ALL {
        assert_eq!(Dtype::from_name(dtype.name()), Some(dtype));
        assert_eq!(Dtype::ALL.iter().filter(|d| d.name() == dtype.name()).count(), 1, "{}", dtype.name());
        assert_eq!(u64::from(1 + dtype.exponent_bits() + dtype.mantissa_bits()), 8 * dtype.bytes());
    }
    assert_eq!(Dtype::from_name("f64"), None);
    assert_eq!(serde_json::to_value(Dtype::Bf16).unwrap(), "bf16");
}

/// `--dtype`'s help line for each dtype (`Dtype::summary`, which
/// `host/tests/normalize_dtypes.rs` finds in `normalize --help`) names its title, its
/// `.npy` type string or why there is none, and its `.safetensors` dtype as the
/// `safetensors` crate spells it.
#[test]
fn every_dtype_summary_names_its_containers_types() {
    for dtype in Dtype::ALL {
        let (_, safetensors_dtype) = reference_format(dtype);
        let summary = dtype.summary();
        assert!(summary.starts_with(&format!("{}: ", dtype.title())), "{summary}");
        assert!(summary.contains(&format!(".safetensors {safetensors_dtype:?}")), "{summary}");
        // NumPy has the IEEE binary formats, as little-endian `f` of their byte size, and
        // no other float (bfloat16, FP8).
        let ieee = [BINARY32, BINARY16]
            .iter()
            .any(|f| (f.exponent_bits, f.mantissa_bits) == (dtype.exponent_bits(), dtype.mantissa_bits()));
        match dtype.npy_descr() {
            Some(descr) => {
                assert!(ieee && descr == format!("<f{}", dtype.bytes()), "{}: {descr}", dtype.name());
                assert!(summary.contains(&format!(".npy {descr}")), "{summary}");
            }
            None => {
                assert!(!ieee, "{}: NumPy has it", dtype.name());
                assert!(summary.contains("NumPy has no such dtype, so no .npy"), "{summary}");
            }
        }
    }
}

/// The first `v` in `0..=m` where [`divide::to`] differs from the reference, for the
/// dtype visited.
struct FirstWrongDivision(u16);

impl DtypeVisitor for FirstWrongDivision {
    type Output = Option<String>;

    fn visit<D: DtypeOf>(self) -> Option<String> {
        let (m, (format, _)) = (self.0, reference_format(D::DTYPE));
        (0..=m).find_map(|v| {
            let got = encoding(divide::to::<D>(v, m));
            let want = match div_to_narrow(format, u64::from(v), u64::from(m)) {
                Rounded::Finite(encoding) => encoding,
                Rounded::Overflow => unreachable!("a quotient at most 1"),
            };
            (got != want).then(|| format!("{} {v}/{m}: got {got:#x}, want {want:#x}", D::DTYPE.name()))
        })
    }
}

#[test]
fn every_dtype_divides_every_code_of_a_set_of_maxvals_correctly_rounded() {
    // As normalize_maxval.rs's set: small ones, powers of two and their neighbours,
    // primes, the largest ones (binary16 subnormals from m > 16384).
    let maxvals: [u16; 24] = [
        1, 2, 3, 5, 7, 10, 100, 127, 128, 129, 254, 256, 257, 1000, 1023, 1024, 4095, 4096, 9973, 16383, 16385, 32749,
        65521, 65534,
    ];
    let cases: Vec<(Dtype, u16)> = Dtype::ALL.into_iter().flat_map(|d| maxvals.map(|m| (d, m))).collect();
    let wrong: Vec<String> =
        cases.into_par_iter().filter_map(|(dtype, m)| with_dtype(dtype, FirstWrongDivision(m))).collect();
    assert!(wrong.is_empty(), "{wrong:?}");
}

/// The values of the tensor in `file` (`.npy` or `.safetensors`), with the header's
/// type: the `.npy` descr, or the `.safetensors` dtype as the crate reads it.
fn read_back(file: &Path, name: &str, dtype: Dtype) -> (String, Vec<u64>) {
    let bytes = std::fs::read(file).unwrap();
    let (header_type, data) = if file.extension().is_some_and(|e| e == "npy") {
        let npy = npyz::NpyFile::new(&bytes[..]).expect("npyz reads it");
        let data_len = npy.shape().iter().product::<u64>() * dtype.bytes();
        (npy.dtype().descr(), bytes[bytes.len() - data_len as usize..].to_vec())
    } else {
        let file = safetensors::SafeTensors::deserialize(&bytes).expect("safetensors reads it");
        let tensor = file.tensor(name).expect("the tensor");
        (format!("{:?}", tensor.dtype()), tensor.data().to_vec())
    };
    let values = data.chunks(dtype.bytes() as usize).map(|value| {
        let mut bytes = [0u8; 8];
        bytes[..value.len()].copy_from_slice(value);
        u64::from_le_bytes(bytes)
    });
    (header_type, values.collect())
}

#[test]
fn every_dtype_is_written_to_every_container_that_holds_it_with_the_exact_value_of_every_code() {
    let dir = tempfile::tempdir().unwrap();
    let grey8 = dir.path().join("grey8.png");
    image::GrayImage::from_fn(16, 16, |x, y| image::Luma([(y * 16 + x) as u8])).save(&grey8).unwrap();
    let grey16 = dir.path().join("grey16.png");
    image::ImageBuffer::from_fn(256, 256, |x, y| image::Luma([(y * 256 + x) as u16])).save(&grey16).unwrap();
    for dtype in Dtype::ALL {
        let (format, safetensors_dtype) = reference_format(dtype);
        for (bits, image) in [(8u32, &grey8), (16, &grey16)] {
            let want: Vec<u64> = (0..1u64 << bits).map(|code| unorm_to_narrow_bits(format, bits, code)).collect();
            let containers = if dtype.npy_descr().is_some() { &["safetensors", "npy"][..] } else { &["safetensors"] };
            for container in containers {
                let out = dir.path().join(format!("{bits}.{}.{container}", dtype.name()));
                let options =
                    NormalizeOptions { dtype, device: Device::Cpu, name: "x".into(), ..NormalizeOptions::default() };
                let done = normalize(image, &out, &options).unwrap().commit().unwrap();
                assert_eq!(done.dtype, dtype);
                let (header_type, got) = read_back(&out, "x", dtype);
                let want_type = match dtype.npy_descr() {
                    Some(descr) if *container == "npy" => format!("'{descr}'"),
                    _ => format!("{safetensors_dtype:?}"),
                };
                assert_eq!(header_type, want_type, "UNORM{bits} → {} .{container}", dtype.name());
                let wrong = (0..want.len()).find(|&code| got[code] != want[code]);
                assert_eq!(wrong, None, "UNORM{bits} → {} .{container}: first code wrong", dtype.name());
            }
            if dtype.npy_descr().is_none() {
                let out = dir.path().join(format!("{bits}.{}.npy", dtype.name()));
                let options = NormalizeOptions { dtype, device: Device::Cpu, ..NormalizeOptions::default() };
                let error = normalize(image, &out, &options).err().expect("a .npy of a dtype NumPy lacks is refused");
                assert!(error.to_string().contains(".npy cannot hold"), "{error}");
            }
        }
    }
}
