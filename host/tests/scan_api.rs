//! The file tools as a library: the CPU scan of every format against the exact
//! reference, and one `files::scan` call over a sharded checkpoint.

use bitexact::files::backend::count::{self, Counts};
use bitexact::files::source::Source;
use bitexact::support::element::Endian;
use bitexact::verify::reference;
use shared::{Class, Format};

/// Encodings of `format` to check: every one up to 16 bits; for binary32 and binary64
/// every exponent field with both signs and a spread of mantissas.
fn encodings(format: Format) -> Vec<u64> {
    let width = format.bits();
    if width <= 16 {
        return (0..1u64 << width).collect();
    }
    let mantissa_bits = if width == 32 { 23 } else { 52 };
    let mantissas = [0, 1, 2, (1 << (mantissa_bits - 1)) - 1, 1 << (mantissa_bits - 1), (1 << mantissa_bits) - 1];
    (0..1u64 << (width - mantissa_bits)).flat_map(|top| mantissas.map(|m| top << mantissa_bits | m)).collect()
}

/// What the scan must find in `values`, decoded field by field by the reference.
fn expected(format: Format, values: &[u64]) -> Counts {
    let sign = 1u64 << (format.bits() - 1);
    let mut counts = Counts::default();
    for (i, &bits) in values.iter().enumerate() {
        match reference::class(format, bits) {
            Class::Nan => counts.nan += 1,
            Class::Infinite if bits & sign == 0 => counts.pos_inf += 1,
            Class::Infinite => counts.neg_inf += 1,
            _ => continue,
        }
        counts.first_non_finite.get_or_insert(i as u64);
    }
    counts
}

#[test]
fn the_cpu_scan_of_every_format_matches_the_reference_in_both_byte_orders() {
    for format in Format::ALL {
        // Finite values first, so that the first index is not 0.
        let mut values = encodings(format);
        values.sort_by_key(|&bits| !reference::class(format, bits).is_finite());
        let want = expected(format, &values);
        assert!(want.first_non_finite.is_some(), "{format:?} has non-finite encodings");
        for endian in [Endian::Little, Endian::Big] {
            let bytes: Vec<u8> = values
                .iter()
                .flat_map(|&bits| {
                    let le = bits.to_le_bytes();
                    let mut element = le[..format.bytes()].to_vec();
                    if endian == Endian::Big {
                        element.reverse();
                    }
                    element
                })
                .collect();
            assert_eq!(count::count_slice(format, endian, &bytes, 0), want, "{format:?} {endian:?}");
            let none = |_: u64| {};
            let parallel = count::count_parallel(format, endian, Source::Bytes(&bytes), &none).expect("in memory");
            assert_eq!(parallel, want, "{format:?} {endian:?}, in parallel");
        }
    }
}

#[test]
fn every_format_is_counted_by_an_exact_is_finite_variant_with_a_count_kernel() {
    for format in Format::ALL {
        let name = count::count_variant_name(format).expect("a count variant");
        let variant = bitexact::verify::table::VARIANTS.iter().find(|v| v.name == name).expect("in the table");
        assert_eq!(variant.family, shared::Family::IsFinite(format), "{name}");
        assert_eq!(variant.claim, shared::Claim::Exact, "{name}");
        assert!(variant.kinds.contains(&shared::KernelKind::CountNonfinite), "{name}");
    }
}

use crate::common;

/// A sharded checkpoint: an index and two shards, a NaN in the second; one shard also
/// holds a tensor the index does not list there (a warning, scanned all the same).
#[test]
fn a_sharded_checkpoint_is_scanned_through_the_library_alone() {
    use bitexact::files::{ScanOptions, scan};
    let dir = tempfile::tempdir().unwrap();
    let f32s = |values: &[f32]| values.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>();
    let first = dir.path().join("model-00001-of-00002.safetensors");
    let second = dir.path().join("model-00002-of-00002.safetensors");
    common::write_safetensors(
        &first,
        &[
            ("a", safetensors::Dtype::F32, vec![4], f32s(&[0.0, 1.0, 2.0, 3.0])),
            ("extra", safetensors::Dtype::F32, vec![1], f32s(&[f32::NEG_INFINITY])),
        ],
    );
    common::write_safetensors(
        &second,
        &[("b", safetensors::Dtype::F32, vec![2, 3], f32s(&[1.0, 2.0, 3.0, 4.0, f32::NAN, 6.0]))],
    );
    let index = dir.path().join("model.safetensors.index.json");
    let map = r#"{"metadata": {}, "weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}}"#;
    std::fs::write(&index, map).unwrap();

    let scanned = scan(std::slice::from_ref(&index), &ScanOptions::default()).expect("scanned");
    let report = &scanned.report;
    assert_eq!(report.files.len(), 2, "both shards, in name order");
    assert_eq!(report.files[0].file, first.display().to_string());
    assert_eq!(report.files[1].file, second.display().to_string());
    let total = &report.total;
    assert_eq!((total.files, total.tensors, total.elements), (2, 3, 11));
    assert_eq!((total.nan, total.pos_inf, total.neg_inf), (1, 0, 1));
    let at = total.first_non_finite.as_ref().expect("a non-finite value");
    assert_eq!((at.file.as_str(), at.tensor.as_str(), at.index), (first.to_str().unwrap(), "extra", 0));
    let b = &report.files[1].tensors[0];
    assert_eq!((b.name.as_ref(), b.counts.nan, b.counts.first_non_finite), ("b", 1, Some(4)));
    assert!(!report.all_finite);
    assert_eq!(scanned.warnings.len(), 1, "{:?}", scanned.warnings);
    assert_eq!((scanned.warnings[0].shard.as_path(), scanned.warnings[0].first.as_str()), (first.as_path(), "extra"));
    assert!(report.device.starts_with("cpu"), "a small job runs on the CPU: {}", report.device);

    // A tensor the index lists but no shard holds is an error, naming the index.
    let map = map.replace(r#""b": "#, r#""c": "#);
    std::fs::write(&index, map).unwrap();
    let error = scan(std::slice::from_ref(&index), &ScanOptions::default()).expect_err("c is missing");
    assert!(error.to_string().starts_with(&format!("{}: ", index.display())), "{error}");
}
