//! The example's CPU proofs, which run everywhere (CI included): the CPU twin against an
//! independent exact reference on all 65,536 binary16 inputs, the kernel's own loop run
//! on the host against the twin, and the built PTX against what the `unsafe impl`
//! vouches for.

use bitexact::verify::reference::{binary16_class, expected};
use device_support::{Lane, stream_count};
use f16_load::PTX;
use f16_load_kernels::{F16ToF32Checked, to_f32_checked};
use shared::{Class, KernelKind, KernelName, Primitive};

/// Every binary16 encoding, in order.
fn every_half() -> Vec<u16> {
    (0..=u16::MAX).collect()
}

/// The twin's results on `input`: the f32 bits, the count and the first index.
fn twin(input: &[u16]) -> (Vec<u32>, u64, Option<u64>) {
    let mut output = vec![0f32; input.len()];
    let (count, first) = to_f32_checked(input, &mut output);
    (output.into_iter().map(f32::to_bits).collect(), count, first)
}

#[test]
fn the_twin_is_exact_and_counts_every_non_finite_half() {
    let input = every_half();
    let (bits, count, first) = twin(&input);
    let mut expected_count = 0;
    let mut expected_first = None;
    for (i, &b) in input.iter().enumerate() {
        // The reference: the widening by integer arithmetic on the fields, and the
        // class from the fields, both `bitexact::verify`'s, not the code under test.
        let want = expected(F16ToF32Checked::FAMILY, u64::from(b)) as u32;
        assert_eq!(bits[i], want, "input {b:#06x}: got {:#010x}, want {want:#010x}", bits[i]);
        if matches!(binary16_class(b), Class::Infinite | Class::Nan) {
            expected_count += 1;
            expected_first = expected_first.or(Some(i as u64));
        }
    }
    assert_eq!((count, first), (expected_count, expected_first));
    assert!(count > 0 && count < input.len() as u64, "the domain has both finite and non-finite halves");
}

/// Runs the kernel's body, `device_support::stream_count::<F16ToF32Checked>`, one lane
/// after another over `input` starting `offset` elements into its buffer (the GPU runs
/// the lanes at once; the loop gives each element to one lane either way).
fn kernel_on_the_host(input: &[u16], offset: usize, lanes: u64) -> (Vec<u32>, [u64; 2]) {
    let mut source = vec![0u16; input.len() + offset];
    source[offset..].copy_from_slice(input);
    let mut output = vec![0u32; input.len() + 1];
    let mut result = [0u64, u64::MAX];
    for index in 0..lanes {
        // SAFETY: `source[offset..]` and `output[1..]` hold `input.len()` elements each,
        // aligned for their types, and `result` 2 `u64`s.
        unsafe {
            stream_count::<F16ToF32Checked>(
                Lane { index, lanes },
                source[offset..].as_ptr(),
                output[1..].as_mut_ptr(),
                input.len() as u64,
                result.as_mut_ptr(),
            )
        };
    }
    assert_eq!(output[0], 0, "written before the output");
    (output.split_off(1), result)
}

#[test]
fn the_kernel_loop_equals_the_twin_on_every_half_for_any_lanes_and_alignment() {
    let input = every_half();
    let (bits, count, first) = twin(&input);
    for lanes in [1, 7, 256, 4096] {
        for offset in 0..4 {
            let (got, result) = kernel_on_the_host(&input, offset, lanes);
            assert!(got == bits, "{lanes} lanes, offset {offset}: a result differs from the twin's");
            assert_eq!(result, [count, first.unwrap_or(u64::MAX)], "{lanes} lanes, offset {offset}");
        }
    }
}

#[test]
fn the_ptx_holds_the_kernel_the_unsafe_impl_vouches_for() {
    let name = KernelName::of::<F16ToF32Checked>(KernelKind::StreamCount).to_string();
    assert_eq!(ptx_builder::ptx_text::entry_names(PTX), [name.as_str()]);
    // The parameters of `(*const u16, *mut u32, u64, *mut u64)`: four 64-bit values.
    let header = PTX.split(&format!(".entry {name}(")).nth(1).and_then(|rest| rest.split(')').next()).unwrap();
    let params: Vec<&str> = header.split(',').map(str::trim).collect();
    assert_eq!(params.len(), 4, "{header}");
    assert!(params.iter().all(|p| p.starts_with(".param .u64")), "{params:?}");
    assert_eq!(ptx_builder::check_ptx(PTX, ptx_builder::Target::new(75)), []);
}
