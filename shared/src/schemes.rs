//! Division-free UNORMn / SNORMn → f32 schemes, one per n: for each, the cheapest scheme
//! `bitexact search` found to be correctly rounded on every code.
//!
//! GENERATED FILE: do not edit. Regenerate with
//!
//! ```sh
//! cargo run --release -p host -- search --emit-rust > shared/src/schemes.rs
//! ```
//!
//! `cargo test` proves every entry again on every code, and fails if the finder's
//! answer differs from this file.

use crate::scheme::Scheme;

/// The scheme of UNORMn → f32 for n = 1..=16, at index n - 1.
pub const UNORM: [Scheme; 16] = [
    // n = 1, d = 1: t (convert)
    Scheme::Convert,
    // n = 2, d = 3: t * 0x1.555556p-2 (naive)
    Scheme::Mul { c: f32::from_bits(0x3eaaaaab) },
    // n = 3, d = 7: ((x * 3) as f32) * 0x1.861862p-5 (times_m)
    Scheme::IntMul { m: 3, c: f32::from_bits(0x3d430c31) },
    // n = 4, d = 15: ((x * 3) as f32) * 0x1.6c16c2p-6 (times_m)
    Scheme::IntMul { m: 3, c: f32::from_bits(0x3cb60b61) },
    // n = 5, d = 31: ((x * 3) as f32) * 0x1.605816p-7 (times_m)
    Scheme::IntMul { m: 3, c: f32::from_bits(0x3c302c0b) },
    // n = 6, d = 63: ((x * 5) as f32) * 0x1.a01a02p-9 (times_m)
    Scheme::IntMul { m: 5, c: f32::from_bits(0x3b500d01) },
    // n = 7, d = 127: ((x * 31) as f32) * 0x1.0a56bep-12 (times_m)
    Scheme::IntMul { m: 31, c: f32::from_bits(0x39852b5f) },
    // n = 8, d = 255: ((x * 3) as f32) * 0x1.56ac02p-10 (times_m)
    Scheme::IntMul { m: 3, c: f32::from_bits(0x3aab5601) },
    // n = 9, d = 511: ((x * 9) as f32) * 0x1.c80072p-13 (times_m)
    Scheme::IntMul { m: 9, c: f32::from_bits(0x39640039) },
    // n = 10, d = 1023: ((x * 85) as f32) * 0x1.81e1fap-17 (times_m)
    Scheme::IntMul { m: 85, c: f32::from_bits(0x3740f0fd) },
    // n = 11, d = 2047: ((x * 683) as f32) * 0x1.800006p-21 (times_m)
    Scheme::IntMul { m: 683, c: f32::from_bits(0x35400003) },
    // n = 12, d = 4095: ((x * 7) as f32) * 0x1.24a494p-15 (times_m)
    Scheme::IntMul { m: 7, c: f32::from_bits(0x3812524a) },
    // n = 13, d = 8191: ((x * 7) as f32) * 0x1.249b6ep-16 (times_m)
    Scheme::IntMul { m: 7, c: f32::from_bits(0x37924db7) },
    // n = 14, d = 16383: ((x * 21) as f32) * 0x1.861e7ap-19 (times_m)
    Scheme::IntMul { m: 21, c: f32::from_bits(0x36430f3d) },
    // n = 15, d = 32767: ((x * 73) as f32) * 0x1.c0e3f2p-22 (times_m)
    Scheme::IntMul { m: 73, c: f32::from_bits(0x34e071f9) },
    // n = 16, d = 65535: fma(t, 0x1.0001p-16, t * 0x1.0001p-48) (series_fma)
    Scheme::Fma { c0: f32::from_bits(0x37800080), c1: f32::from_bits(0x27800080) },
];

/// The scheme of SNORMn → f32 for n = 2..=16, at index n - 2.
pub const SNORM: [Scheme; 15] = [
    // n = 2, d = 1: t (convert)
    Scheme::Convert,
    // n = 3, d = 3: t * 0x1.555556p-2 (naive)
    Scheme::Mul { c: f32::from_bits(0x3eaaaaab) },
    // n = 4, d = 7: ((x * 3) as f32) * 0x1.861862p-5 (times_m)
    Scheme::IntMul { m: 3, c: f32::from_bits(0x3d430c31) },
    // n = 5, d = 15: ((x * 3) as f32) * 0x1.6c16c2p-6 (times_m)
    Scheme::IntMul { m: 3, c: f32::from_bits(0x3cb60b61) },
    // n = 6, d = 31: ((x * 3) as f32) * 0x1.605816p-7 (times_m)
    Scheme::IntMul { m: 3, c: f32::from_bits(0x3c302c0b) },
    // n = 7, d = 63: ((x * 5) as f32) * 0x1.a01a02p-9 (times_m)
    Scheme::IntMul { m: 5, c: f32::from_bits(0x3b500d01) },
    // n = 8, d = 127: ((x * 31) as f32) * 0x1.0a56bep-12 (times_m)
    Scheme::IntMul { m: 31, c: f32::from_bits(0x39852b5f) },
    // n = 9, d = 255: ((x * 3) as f32) * 0x1.56ac02p-10 (times_m)
    Scheme::IntMul { m: 3, c: f32::from_bits(0x3aab5601) },
    // n = 10, d = 511: ((x * 9) as f32) * 0x1.c80072p-13 (times_m)
    Scheme::IntMul { m: 9, c: f32::from_bits(0x39640039) },
    // n = 11, d = 1023: ((x * 85) as f32) * 0x1.81e1fap-17 (times_m)
    Scheme::IntMul { m: 85, c: f32::from_bits(0x3740f0fd) },
    // n = 12, d = 2047: ((x * 683) as f32) * 0x1.800006p-21 (times_m)
    Scheme::IntMul { m: 683, c: f32::from_bits(0x35400003) },
    // n = 13, d = 4095: ((x * 7) as f32) * 0x1.24a494p-15 (times_m)
    Scheme::IntMul { m: 7, c: f32::from_bits(0x3812524a) },
    // n = 14, d = 8191: ((x * 7) as f32) * 0x1.249b6ep-16 (times_m)
    Scheme::IntMul { m: 7, c: f32::from_bits(0x37924db7) },
    // n = 15, d = 16383: ((x * 21) as f32) * 0x1.861e7ap-19 (times_m)
    Scheme::IntMul { m: 21, c: f32::from_bits(0x36430f3d) },
    // n = 16, d = 32767: ((x * 73) as f32) * 0x1.c0e3f2p-22 (times_m)
    Scheme::IntMul { m: 73, c: f32::from_bits(0x34e071f9) },
];
