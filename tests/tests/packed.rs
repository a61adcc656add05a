//! The packed (SWAR) finiteness masks against the scalar functions of each format: every
//! single-lane encoding in every lane, with the other lanes set to varied values. (The
//! whole 2^32-word domain is also walked against the reference in `exhaustive_cpu.rs`.)

use shared::{bfloat16, binary16, fp8, packed};

/// A packed mask function, its lane width, and the scalar test it must agree with.
struct Packed {
    name: &'static str,
    mask: fn(u32) -> u32,
    lane_bits: u32,
    scalar_is_finite: fn(u32) -> bool,
}

fn packed_functions() -> [Packed; 8] {
    let f16 = |lane: u32| binary16::is_finite(lane as u16);
    let bf16 = |lane: u32| bfloat16::is_finite(lane as u16);
    let e4m3 = |lane: u32| fp8::e4m3::is_finite(lane as u8);
    let e5m2 = |lane: u32| fp8::e5m2::is_finite(lane as u8);
    [
        Packed { name: "f16x2 swar", mask: packed::f16x2_is_finite_swar, lane_bits: 16, scalar_is_finite: f16 },
        Packed { name: "f16x2 lanes", mask: packed::f16x2_is_finite_lanes, lane_bits: 16, scalar_is_finite: f16 },
        Packed { name: "bf16x2 swar", mask: packed::bf16x2_is_finite_swar, lane_bits: 16, scalar_is_finite: bf16 },
        Packed { name: "bf16x2 lanes", mask: packed::bf16x2_is_finite_lanes, lane_bits: 16, scalar_is_finite: bf16 },
        Packed { name: "e4m3x4 swar", mask: packed::e4m3x4_is_finite_swar, lane_bits: 8, scalar_is_finite: e4m3 },
        Packed { name: "e4m3x4 lanes", mask: packed::e4m3x4_is_finite_lanes, lane_bits: 8, scalar_is_finite: e4m3 },
        Packed { name: "e5m2x4 swar", mask: packed::e5m2x4_is_finite_swar, lane_bits: 8, scalar_is_finite: e5m2 },
        Packed { name: "e5m2x4 lanes", mask: packed::e5m2x4_is_finite_lanes, lane_bits: 8, scalar_is_finite: e5m2 },
    ]
}

/// Background words for the other lanes: all zeros, all ones (NaN in every format),
/// alternating patterns, and a few scrambles.
fn backgrounds() -> Vec<u32> {
    let mut words = vec![0, u32::MAX, 0x5555_5555, 0xAAAA_AAAA, 0x7F7F_7F7F, 0x7C00_7F80, 0x8000_8000];
    words.extend((1..=9u64).map(|i| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as u32));
    words
}

#[test]
fn every_single_lane_encoding_in_every_lane_agrees_with_the_scalar_test() {
    for p in packed_functions() {
        let lane_max = (1u32 << p.lane_bits) - 1;
        let mut checked = 0u64;
        for background in backgrounds() {
            for shift in (0..u32::BITS).step_by(p.lane_bits as usize) {
                for encoding in 0..=lane_max {
                    let word = (background & !(lane_max << shift)) | encoding << shift;
                    let expected = (0..u32::BITS)
                        .step_by(p.lane_bits as usize)
                        .filter(|&s| (p.scalar_is_finite)((word >> s) & lane_max))
                        .fold(0, |mask, s| mask | lane_max << s);
                    let got = (p.mask)(word);
                    assert_eq!(
                        got, expected,
                        "{}: word {word:#010x}: got {got:#010x}, expected {expected:#010x}",
                        p.name
                    );
                    checked += 1;
                }
            }
        }
        let lanes = u64::from(u32::BITS / p.lane_bits);
        assert_eq!(checked, backgrounds().len() as u64 * lanes * (u64::from(lane_max) + 1));
    }
}

#[test]
fn lane_masks_are_all_ones_or_all_zeros() {
    for p in packed_functions() {
        let lane_max = (1u32 << p.lane_bits) - 1;
        for word in backgrounds() {
            let mask = (p.mask)(word);
            for shift in (0..u32::BITS).step_by(p.lane_bits as usize) {
                let lane = (mask >> shift) & lane_max;
                assert!(lane == 0 || lane == lane_max, "{}: {word:#010x} → {mask:#010x}", p.name);
            }
        }
    }
}
