//! Division-free UNORM / SNORM → f32 schemes, one per denominator `d = 2^k - 1`: for
//! each, the cheapest scheme `bitexact search` found to be correctly rounded on every
//! code of both conversions that divide by d, UNORMk (codes 0..=d) and SNORM(k+1)
//! (codes -d..=d once the most negative one is clamped; k <= 15).
//!
//! GENERATED FILE: do not edit. Regenerate with
//!
//! ```sh
//! cargo run --release -p host -- search --emit-rust > shared/src/schemes.rs
//! ```
//!
//! `cargo test` proves every entry again on every code of both conversions, and fails
//! if the finder's answer differs from this file.

use crate::scheme::Scheme;

/// The scheme for `x / (2^k - 1)`, k = 1..=16, at index k - 1: `unorm_to_f32::<N>` uses
/// `BY_BITS[N - 1]`, `snorm_to_f32::<N>` uses `BY_BITS[N - 2]`.
pub const BY_BITS: [Scheme; 16] = [
    // k = 1, d = 1 (UNORM1, SNORM2): t (convert)
    Scheme::Convert,
    // k = 2, d = 3 (UNORM2, SNORM3): t * 0x1.555556p-2 (naive)
    Scheme::Mul { c: f32::from_bits(0x3eaaaaab) },
    // k = 3, d = 7 (UNORM3, SNORM4): ((x * 3) as f32) * 0x1.861862p-5 (times_m)
    Scheme::IntMul { m: 3, c: f32::from_bits(0x3d430c31) },
    // k = 4, d = 15 (UNORM4, SNORM5): ((x * 3) as f32) * 0x1.6c16c2p-6 (times_m)
    Scheme::IntMul { m: 3, c: f32::from_bits(0x3cb60b61) },
    // k = 5, d = 31 (UNORM5, SNORM6): ((x * 3) as f32) * 0x1.605816p-7 (times_m)
    Scheme::IntMul { m: 3, c: f32::from_bits(0x3c302c0b) },
    // k = 6, d = 63 (UNORM6, SNORM7): ((x * 5) as f32) * 0x1.a01a02p-9 (times_m)
    Scheme::IntMul { m: 5, c: f32::from_bits(0x3b500d01) },
    // k = 7, d = 127 (UNORM7, SNORM8): ((x * 31) as f32) * 0x1.0a56bep-12 (times_m)
    Scheme::IntMul { m: 31, c: f32::from_bits(0x39852b5f) },
    // k = 8, d = 255 (UNORM8, SNORM9): ((x * 3) as f32) * 0x1.56ac02p-10 (times_m)
    Scheme::IntMul { m: 3, c: f32::from_bits(0x3aab5601) },
    // k = 9, d = 511 (UNORM9, SNORM10): ((x * 9) as f32) * 0x1.c80072p-13 (times_m)
    Scheme::IntMul { m: 9, c: f32::from_bits(0x39640039) },
    // k = 10, d = 1023 (UNORM10, SNORM11): ((x * 85) as f32) * 0x1.81e1fap-17 (times_m)
    Scheme::IntMul { m: 85, c: f32::from_bits(0x3740f0fd) },
    // k = 11, d = 2047 (UNORM11, SNORM12): ((x * 683) as f32) * 0x1.800006p-21 (times_m)
    Scheme::IntMul { m: 683, c: f32::from_bits(0x35400003) },
    // k = 12, d = 4095 (UNORM12, SNORM13): ((x * 7) as f32) * 0x1.24a494p-15 (times_m)
    Scheme::IntMul { m: 7, c: f32::from_bits(0x3812524a) },
    // k = 13, d = 8191 (UNORM13, SNORM14): ((x * 7) as f32) * 0x1.249b6ep-16 (times_m)
    Scheme::IntMul { m: 7, c: f32::from_bits(0x37924db7) },
    // k = 14, d = 16383 (UNORM14, SNORM15): ((x * 21) as f32) * 0x1.861e7ap-19 (times_m)
    Scheme::IntMul { m: 21, c: f32::from_bits(0x36430f3d) },
    // k = 15, d = 32767 (UNORM15, SNORM16): ((x * 73) as f32) * 0x1.c0e3f2p-22 (times_m)
    Scheme::IntMul { m: 73, c: f32::from_bits(0x34e071f9) },
    // k = 16, d = 65535 (UNORM16): fma(t, 0x1.0001p-16, t * 0x1.0001p-48) (series_fma)
    Scheme::Fma { c0: f32::from_bits(0x37800080), c1: f32::from_bits(0x27800080) },
];
