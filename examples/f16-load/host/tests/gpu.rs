//! The example's GPU proof: on every binary16 input, the kernel's results equal the CPU
//! twin's bit for bit, and so do its count and first index; at several lengths and
//! starts (the coalesced loop, its tail, and its scalar pass for a misaligned start).
//! Without a GPU it prints `skipped: ...` (`REQUIRE_GPU=1` makes that a failure).

use bitexact::gpu::{Failing, GpuError, open_or_skip};
use f16_load::{PTX, load_checked};
use f16_load_kernels::to_f32_checked;

#[test]
fn the_gpu_equals_the_cpu_twin_on_every_half() -> Result<(), GpuError> {
    let Some(gpu) = open_or_skip() else { return Ok(()) };
    // SAFETY: `PTX` is `f16-load-kernels`' own, whose `unsafe impl StreamCount` it keeps.
    let module = unsafe { gpu.load_user_module(PTX)? };
    let every: Vec<u16> = (0..=u16::MAX).collect();
    // All 65,536 in order; again rotated, so the first non-finite value moves; 64 copies
    // (4 Mi elements, every lane busy), and short and misaligned pieces.
    let mut rotated = every.clone();
    rotated.rotate_left(31_000);
    let many: Vec<u16> = every.iter().copied().cycle().take(every.len() * 64).collect();
    let mut cases: Vec<(&str, &[u16])> = vec![("every half", &every), ("rotated", &rotated), ("64 copies", &many)];
    for start in 0..4 {
        cases.push(("misaligned start", &every[start..]));
        cases.push(("short", &rotated[start..start + 13]));
    }
    for (what, input) in cases {
        let (gpu_values, gpu_failing) = load_checked(&gpu, &module, input)?;
        let mut cpu_values = vec![0f32; input.len()];
        let (count, first) = to_f32_checked(input, &mut cpu_values);
        let differing = gpu_values.iter().zip(&cpu_values).filter(|(g, c)| g.to_bits() != c.to_bits()).count();
        assert_eq!(differing, 0, "{what} ({} elements): {differing} results differ", input.len());
        assert_eq!(gpu_failing, Failing { count, first }, "{what} ({} elements)", input.len());
    }
    println!("f16_to_f32_checked: GPU == CPU twin on all 65,536 halves ({})", gpu.info().name);
    Ok(())
}
