//! The CPU's counting loops of every format against the exact reference, in both byte
//! orders, one slice at a time and in parallel; and the count variant each format names.

use crate::backend::count::{self, Counts};
use crate::source::Source;
use bitexact_support::element::Endian;
use bitexact_verify::reference;
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
        let variant = bitexact_verify::table::VARIANTS.iter().find(|v| v.name == name).expect("in the table");
        assert_eq!(variant.family, shared::Family::IsFinite(format), "{name}");
        assert_eq!(variant.claim, shared::Claim::Exact, "{name}");
        assert!(variant.kinds.contains(&shared::KernelKind::CountNonfinite), "{name}");
    }
}
