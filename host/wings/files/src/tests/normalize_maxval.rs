//! `v / m` for a PNM's `maxval` `m`: `crate::normalize::divide` against the exact
//! rational reference (`bitexact_verify::reference`) on every code `v` in `0..=m`, to f32,
//! binary16 and bfloat16, for a set of `m` here and for every `m` in the ignored test.

use crate::normalize::divide;
use bitexact_verify::reference::{BFLOAT16, BINARY16, NarrowFormat, Rounded, div_to_f32, div_to_narrow, fill_monotone};
use conformance::reference::scaled::is_rounded_quotient;
use rayon::prelude::*;

/// The reference encoding of `v / m` in `format`.
fn narrow(format: NarrowFormat, v: u16, m: u16) -> u16 {
    match div_to_narrow(format, u64::from(v), u64::from(m)) {
        Rounded::Finite(encoding) => u16::try_from(encoding).expect("a 16-bit encoding"),
        Rounded::Overflow => unreachable!("a quotient at most 1"),
    }
}

/// The first `v` in `0..=m` where a function differs from the reference: the format,
/// `v`, and both encodings in hex. The 16-bit references are monotone in `v` (a rounding
/// of `v / m`), so they are computed where they change (`fill_monotone`); the f32 result
/// is checked by multiplication against the midpoints around it
/// (`scaled::is_rounded_quotient`, the verdict of the exact division without one).
fn first_wrong(m: u16) -> Option<String> {
    let codes = usize::from(m) + 1;
    let (mut f16_want, mut bf16_want) = (vec![0u16; codes], vec![0u16; codes]);
    fill_monotone(0, &mut f16_want, |v| narrow(BINARY16, v as u16, m));
    fill_monotone(0, &mut bf16_want, |v| narrow(BFLOAT16, v as u16, m));
    let m_bits = f32::from(m).to_bits();
    (0..=m).find_map(|v| {
        let f32_got = divide::to_f32(v, m).to_bits();
        let f32_right =
            if v == 0 { f32_got == 0 } else { is_rounded_quotient(f32::from(v).to_bits(), m_bits, f32_got) };
        let f16 = (divide::to_f16_bits(v, m), f16_want[usize::from(v)]);
        let bf16 = (divide::to_bf16_bits(v, m), bf16_want[usize::from(v)]);
        if !f32_right {
            let want = div_to_f32(u64::from(v), u64::from(m)).map(f32::to_bits);
            Some(format!("f32 {v}/{m}: got {f32_got:#010x}, want {:#010x}", want.unwrap_or(0)))
        } else if f16.0 != f16.1 {
            Some(format!("f16 {v}/{m}: got {:#06x}, want {:#06x}", f16.0, f16.1))
        } else if bf16.0 != bf16.1 {
            Some(format!("bf16 {v}/{m}: got {:#06x}, want {:#06x}", bf16.0, bf16.1))
        } else {
            None
        }
    })
}

#[test]
fn every_code_of_a_set_of_maxvals_is_correctly_rounded_to_f32_f16_and_bf16() {
    // Small ones, the red team's (100, 1000, 1023, 4095), powers of two and their
    // neighbours, primes, and the largest ones (binary16 subnormals from m > 16384).
    let maxvals: [u16; 24] = [
        1, 2, 3, 5, 7, 10, 100, 127, 128, 129, 254, 256, 257, 1000, 1023, 1024, 4095, 4096, 9973, 16383, 16385, 32749,
        65521, 65534,
    ];
    let wrong: Vec<String> = maxvals.par_iter().filter_map(|&m| first_wrong(m)).collect();
    assert!(wrong.is_empty(), "{wrong:?}");
}

#[test]
#[ignore = "every maxval 1..=65535: 2^31 quotients in three formats"]
fn every_code_of_every_maxval_is_correctly_rounded_to_f32_f16_and_bf16() {
    let wrong: Vec<String> = (1..=u16::MAX).into_par_iter().filter_map(first_wrong).collect();
    assert!(wrong.is_empty(), "{} maxvals wrong, first ones: {:?}", wrong.len(), &wrong[..wrong.len().min(10)]);
}

/// The 16-bit references filled by runs equal the reference on each code alone, for the
/// maxvals of the set (the ignored test rests on that fill).
#[test]
fn the_references_filled_by_runs_equal_them_code_by_code() {
    for m in [1u16, 3, 100, 1023, 4095, 16385, 65534] {
        for format in [BINARY16, BFLOAT16] {
            let mut filled = vec![0u16; usize::from(m) + 1];
            fill_monotone(0, &mut filled, |v| narrow(format, v as u16, m));
            for v in 0..=m {
                assert_eq!(filled[usize::from(v)], narrow(format, v, m), "{format:?} {v}/{m}");
            }
            assert!(filled.windows(2).any(|w| w[0] != w[1]), "{m}: more than one result");
        }
    }
}
