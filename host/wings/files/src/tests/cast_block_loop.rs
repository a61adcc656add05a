//! `bitexact cast`'s block loop (`files::cast::chunks::convert_block_with`: the f32
//! input read in place or through its scratch copy, the CPU-level narrowing, the
//! vectorised search for a refused element) on every one of the 2^32 f32 inputs, for
//! every plain narrowing `cast` runs, against the exact reference
//! (`verify::reference::NarrowConversion`, integer rounding; computed where it changes,
//! `fill_f32_monotone`) and the refusal the reference implies: the output bytes, and
//! the index and kind of the first refused element of each block.
//!
//! `cargo test -p bitexact-files --profile proofs cast_block_loop -- --ignored` (it was
//! a test of the conformance crate; the block loop is the wing's plumbing, so its proof
//! is the wing's). (The quick checks of the same loop
//! against the scalar path, on every 16-bit encoding and a stride of f32s, are
//! `cast::chunks`'s unit tests.)

use crate::cast::chunks::convert_block_with;
// The plain narrowings `cast` runs on f32 (and widened bf16 and f16) sources, and the
// saturating bfloat16 it never asks for: the list the block loop's quick tests walk.
use crate::cast::chunks::tests::PLAIN;
use crate::cast::convert::{ElementCast, Outcome, SourceDtype, Target};
use bitexact_verify::reference::{NarrowConversion, class, fill_f32_monotone};
use rayon::prelude::*;
use shared::{Class, Format};

/// Inputs per block: the block loop's own unit in `cast` is 2^14; 2^16 consecutive
/// f32s share their sign and exponent.
const BLOCK: usize = 1 << 16;

/// The reference's format of `target`.
fn format_of(target: Target) -> Format {
    match target {
        Target::Bf16 => Format::Bfloat16,
        Target::F16 => Format::Binary16,
        Target::E4m3 => Format::Fp8E4m3,
        Target::E5m2 => Format::Fp8E5m2,
    }
}

/// Whether `bits` of `format` is NaN or infinite, by the reference's classification.
fn is_nonfinite(format: Format, bits: u64) -> bool {
    matches!(class(format, bits), Class::Nan | Class::Infinite)
}

/// A task's buffers, kept from one block to the next.
#[derive(Default)]
struct Buffers {
    input: Vec<u8>,
    codes: Vec<u64>,
    expected: Vec<u8>,
    shifted_in: Vec<u8>,
    shifted_out: Vec<u8>,
    scratch: Vec<u32>,
}

/// The f32 inputs `first..first + BLOCK` through `conversion`'s block loop, aligned and
/// one byte off (the scratch paths), checked and unchecked, against the reference.
fn check_block(conversion: &ElementCast, reference: &NarrowConversion, format: Format, first: u32, b: &mut Buffers) {
    let Buffers { input, codes, expected, shifted_in, shifted_out, scratch } = b;
    input.clear();
    input.extend((first..=first + (BLOCK as u32 - 1)).flat_map(u32::to_le_bytes));
    codes.clear();
    codes.resize(BLOCK, 0);
    fill_f32_monotone(u64::from(first), codes, |x| reference.convert(x));
    let width = conversion.output_bytes();
    expected.clear();
    match width {
        1 => expected.extend(codes.iter().map(|&c| c as u8)),
        _ => expected.extend(codes.iter().flat_map(|&c| (c as u16).to_le_bytes())),
    }
    // The first refused element: a NaN or infinite input, or a finite one whose exact
    // result is not finite (an overflow without saturation). The codes come in runs:
    // classified where they change.
    let mut last = None;
    let want = codes.iter().enumerate().find_map(|(i, &c)| {
        if (first + i as u32) & 0x7F80_0000 == 0x7F80_0000 {
            return Some((i, Outcome::NonFiniteValues));
        }
        if last == Some(c) {
            return None;
        }
        last = Some(c);
        is_nonfinite(format, c).then_some((i, Outcome::Overflow))
    });
    assert_eq!(input.as_ptr().align_offset(4), 0, "the aligned pass reads the f32s in place");
    shifted_in.clear();
    shifted_in.push(0);
    shifted_in.extend_from_slice(input);
    let out_len = expected.len();
    shifted_out.clear();
    shifted_out.resize(2 * out_len + 1, 0);
    let (aligned_out, misaligned_out) = shifted_out.split_at_mut(out_len);
    for (input, output) in [(&input[..], aligned_out), (&shifted_in[1..], &mut misaligned_out[1..])] {
        // Each pass over a different fill, so that an element it leaves unwritten shows.
        output.fill(0);
        let got = convert_block_with(conversion, input, output, true, scratch);
        if output != &expected[..] {
            let at = output.iter().zip(expected.iter()).position(|(a, b)| a != b).unwrap_or(0) / width;
            panic!(
                "{conversion:?}: input {:#010x}: got {:02x?}, exact {:02x?}",
                first + at as u32,
                &output[at * width..][..width],
                &expected[at * width..][..width]
            );
        }
        assert_eq!(got, want, "{conversion:?}, inputs from {first:#010x}: first refused element");
        output.fill(0xA5);
        assert_eq!(convert_block_with(conversion, input, output, false, scratch), None, "{conversion:?}: unchecked");
        assert!(output == &expected[..], "{conversion:?}, inputs from {first:#010x}: outputs differ, unchecked");
    }
}

#[test]
#[ignore = "2^32 inputs per conversion: `cargo test --workspace --profile proofs -- --ignored` runs it (CI does)"]
fn every_f32_through_the_block_loop_equals_the_exact_reference() {
    for (target, overflow) in PLAIN {
        let conversion = ElementCast::Plain { source: SourceDtype::F32, target, overflow };
        let format = format_of(target);
        let reference = NarrowConversion::new(format, overflow);
        (0..(1u64 << 32) / BLOCK as u64).into_par_iter().for_each_init(Buffers::default, |buffers, block| {
            check_block(&conversion, &reference, format, (block * BLOCK as u64) as u32, buffers)
        });
    }
}

/// The same check on a few blocks in the quick run: subnormals, around 1.0, each
/// format's overflow threshold inside a block (E4M3 464, E5M2 61440, binary16 65520,
/// bfloat16's near f32's largest; negative E4M3 too), the largest finite f32s then
/// infinity then NaNs in one block (both signs: a refused input after index 0, and the
/// saturating conversions' check of their inputs), −inf, the NaNs, and the thresholds
/// where binary16, E4M3 and E5M2 round to zero.
#[test]
fn blocks_around_the_edges_equal_the_exact_reference() {
    let firsts = [
        0u32,
        0x3F80_0000,
        0x43E7_8000,
        0x476F_8000,
        0x477F_7000,
        0x7F7F_0000,
        0x7F7F_8000,
        0x7F80_0000,
        0x8000_0000,
        0xC3E7_8000,
        0xFF7F_8000,
        0xFF80_0000,
        0xFFFF_0000,
        0x3300_0000,
        0x3A80_0000,
        0x3700_0000,
    ];
    let mut buffers = Buffers::default();
    for (target, overflow) in PLAIN {
        let conversion = ElementCast::Plain { source: SourceDtype::F32, target, overflow };
        let format = format_of(target);
        let reference = NarrowConversion::new(format, overflow);
        for first in firsts {
            check_block(&conversion, &reference, format, first, &mut buffers);
        }
    }
}
