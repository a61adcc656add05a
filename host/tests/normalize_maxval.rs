//! `v / m` for a PNM's `maxval` `m`: `bitexact::files::normalize::divide` against the exact
//! rational reference (`bitexact::verify::reference`) on every code `v` in `0..=m`, to f32,
//! binary16 and bfloat16, for a set of `m` here and for every `m` in the ignored test.

use bitexact::files::normalize::divide;
use bitexact::verify::reference::{BFLOAT16, BINARY16, NarrowFormat, Rounded, div_to_f32, div_to_narrow};
use rayon::prelude::*;

/// The reference encoding of `v / m` in `format`.
fn narrow(format: NarrowFormat, v: u16, m: u16) -> u16 {
    match div_to_narrow(format, u64::from(v), u64::from(m)) {
        Rounded::Finite(encoding) => u16::try_from(encoding).expect("a 16-bit encoding"),
        Rounded::Overflow => unreachable!("a quotient at most 1"),
    }
}

/// The first `v` in `0..=m` where a function differs from the reference: the format,
/// `v`, and both encodings in hex.
fn first_wrong(m: u16) -> Option<String> {
    (0..=m).find_map(|v| {
        let f32_want = if v == 0 { 0 } else { div_to_f32(u64::from(v), u64::from(m)).expect("in range").to_bits() };
        let f32_got = divide::to_f32(v, m).to_bits();
        let f16 = (divide::to_f16_bits(v, m), narrow(BINARY16, v, m));
        let bf16 = (divide::to_bf16_bits(v, m), narrow(BFLOAT16, v, m));
        if f32_got != f32_want {
            Some(format!("f32 {v}/{m}: got {f32_got:#010x}, want {f32_want:#010x}"))
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
#[ignore = "every maxval 1..=65535: 2^31 quotients in three formats, 96 s on 2 cores in the test profile (measured in .ci/run, 2026-12-02)"]
fn every_code_of_every_maxval_is_correctly_rounded_to_f32_f16_and_bf16() {
    let wrong: Vec<String> = (1..=u16::MAX).into_par_iter().filter_map(first_wrong).collect();
    assert!(wrong.is_empty(), "{} maxvals wrong, first ones: {:?}", wrong.len(), &wrong[..wrong.len().min(10)]);
}
