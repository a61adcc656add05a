//! Every conversion `normalize` runs, at every CPU level this machine has, on every
//! UNORM8 / UNORM16 code, against the exact reference (`bitexact_verify::reference`):
//! with normal and streaming stores, whole and with a tail, from an aligned output and
//! from one element past it. (It was the conformance crate's `cpu_levels`; the CPU
//! forms themselves are proven at every level by `host/wings/cpu/src/tests/cpu_levels.rs`.)
//!
//! A level this machine lacks prints `skipped: <reason>`; `REQUIRE_CPU_LEVEL=avx512`
//! (or `avx2`) makes a missing level up to that one fail instead.

use crate::normalize::image::{SampleWidth, conversions};
use bitexact_verify::reference;
use test_fixtures::levels::levels;

/// `text` on the process's stderr in one piece, past the test harness's capture: the
/// reports of what was proved (a skip goes through `bitexact::support::skip`).
fn say(text: &str) {
    let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), text.as_bytes());
}

#[test]
fn every_normalize_conversion_is_exact_at_every_level_on_every_code() {
    for level in levels() {
        // Every entry of normalize's table: a new one is proven here with no change.
        for (width, _, conversion) in conversions() {
            let codes: Vec<u64> = match width {
                SampleWidth::Unorm8 => (0..1 << 8).collect(),
                SampleWidth::Unorm16 => (0..1 << 16).collect(),
            };
            let src: Vec<u8> = match width {
                SampleWidth::Unorm8 => codes.iter().map(|&c| c as u8).collect(),
                SampleWidth::Unorm16 => codes.iter().flat_map(|&c| (c as u16).to_ne_bytes()).collect(),
            };
            let mut want = vec![0u64; codes.len()];
            reference::expected_many(conversion.family(), &codes, &mut want);
            // Every code, then all but the last 3 (an odd length, so that the vector
            // loops' tails run), each into a fresh buffer checked in full; with normal
            // and with streaming stores, the output starting at an aligned address and
            // one element past it (so that the streaming form has a head to do first).
            for (n, streaming, skip) in [
                (codes.len(), false, 0),
                (codes.len() - 3, false, 0),
                (codes.len(), true, 0),
                (codes.len() - 3, true, 0),
                (codes.len() - 3, true, 1),
            ] {
                // Aligned for any output type: f32 words.
                let mut out = vec![0u32; (codes.len() + 1) * conversion.out_bytes() / 4 + 1];
                let dst: &mut [u8] = bytemuck::cast_slice_mut(&mut out);
                let dst = &mut dst[skip * conversion.out_bytes()..(skip + n) * conversion.out_bytes()];
                let src = &src[..n * conversion.in_bytes()];
                if streaming {
                    conversion.convert_on_cpu_streaming_at(level, src, dst).expect("whole elements");
                } else {
                    conversion.convert_on_cpu_at(level, src, dst).expect("whole elements");
                }
                for (i, &want) in want[..n].iter().enumerate() {
                    let got = match conversion.out_bytes() {
                        4 => u64::from(u32::from_ne_bytes(dst[4 * i..4 * i + 4].try_into().expect("4 bytes"))),
                        2 => u64::from(u16::from_ne_bytes(dst[2 * i..2 * i + 2].try_into().expect("2 bytes"))),
                        other => panic!("{other}-byte outputs"),
                    };
                    assert_eq!(
                        got,
                        want,
                        "{} ({}) at level {level}: code {i} of {n} (streaming {streaming}, from element {skip}): got {got:#x}, want {want:#x}",
                        conversion.name(),
                        conversion.cpu_form(level),
                    );
                }
            }
            say(&format!(
                "{} at level {level}: {} equals the reference on all {} codes\n",
                conversion.name(),
                conversion.cpu_form(level),
                codes.len()
            ));
        }
    }
}
