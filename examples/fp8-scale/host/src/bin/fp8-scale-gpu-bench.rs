//! Both passes of the per-tensor FP8 example on the GPU against a device-to-device copy
//! measured in the same run, as bandwidth (bytes the kernel touches per second over the
//! copy's read + written bytes per second; the goal is 85 % or more), on 2^28 f32 (1 GiB),
//! the median of 10 timed runs after 3 warm-ups. The codes are checked against the CPU
//! twin. With `--dump DIR` it also writes the tensor (`x.f32`), its two-step E4M3 codes
//! (`two_step_e4m3.u8`) and the scale (`scale.txt`) for `scripts/fp8_torch.py`, which
//! times PyTorch's `(x * s).clamp(-448, 448).to(torch.float8_e4m3fn)` on the same tensor
//! and counts its codes that differ from `two_step`.
//!
//! Prints `skipped: <reason>` and exits 0 without a GPU.

use bitexact::gpu::{Gpu, GpuError, LaunchShape, open_or_skip};
use fp8_scale::{BLOCK_THREADS, PTX, grid_for};
use fp8_scale_kernels::{Amax, Fp8Format, QuantizeE4m3Once, QuantizeE4m3TwoStep, Rounding, amax, quantize};
use std::path::PathBuf;

fn median(mut times: Vec<f64>) -> f64 {
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn main() -> Result<(), GpuError> {
    let args: Vec<String> = std::env::args().collect();
    let dump = args.iter().position(|a| a == "--dump").and_then(|i| args.get(i + 1)).map(PathBuf::from);
    let Some(gpu) = open_or_skip() else { return Ok(()) };
    run(&gpu, dump)
}

fn run(gpu: &Gpu, dump: Option<PathBuf>) -> Result<(), GpuError> {
    // SAFETY: `PTX` is `fp8-scale-kernels`' own.
    let module = unsafe { gpu.load_user_module(PTX)? };
    let n: usize = 1 << 28;
    // Weight-like values: a hash's mantissa and sign, exponents spread over 2^-12 .. 2^3.
    let x: Vec<u32> = (0..n as u64)
        .map(|i| {
            let h = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 29;
            ((h as u32) & 0x807F_FFFF) | ((115 + (h as u32 >> 23) % 15) << 23)
        })
        .collect();
    let a = amax(&x).expect("finite");
    let input = gpu.upload(&x)?;
    let mut amax_device = gpu.upload(&[0u32])?;
    let mut first = gpu.upload(&[u64::MAX])?;
    let mut codes = gpu.zeros::<u8>(n)?;
    let mut dequant = gpu.zeros::<f32>(1)?;
    let shape = LaunchShape::linear(grid_for(gpu, n), BLOCK_THREADS);
    let pass1 = module.kernel::<Amax>()?;
    let once = module.kernel::<QuantizeE4m3Once>()?;
    let two_step = module.kernel::<QuantizeE4m3TwoStep>()?;
    let n64 = n as u64;
    let t1 = median(gpu.time_ms(3, 10, || {
        // SAFETY: `input` holds n values; `amax_device`, `first` one each (a max and a min
        // are idempotent, so repeated launches keep the same result); 256-thread blocks.
        unsafe { pass1.launch(shape, (&input, n64, &mut amax_device, &mut first)) }
    })?);
    let t_once = median(gpu.time_ms(3, 10, || {
        // SAFETY: `input` n values, `codes` n bytes, `amax_device` pass 1's finite result.
        unsafe { once.launch(shape, (&input, &mut codes, n64, &amax_device, &mut dequant)) }
    })?);
    let once_codes = gpu.download(&codes)?;
    let t_two = median(gpu.time_ms(3, 10, || {
        // SAFETY: as above.
        unsafe { two_step.launch(shape, (&input, &mut codes, n64, &amax_device, &mut dequant)) }
    })?);
    let two_codes = gpu.download(&codes)?;
    // The same-run baseline: a device copy of the tensor's bytes (4n read, 4n written).
    let mut copy = gpu.zeros::<u32>(n)?;
    let t_copy = median(gpu.time_ms(3, 10, || gpu.copy(&input, &mut copy))?);
    let copy_rate = (8 * n) as f64 / (t_copy * 1e-3);
    // The CPU twin's codes.
    let mut twin = vec![0u8; n];
    let mismatch = |codes: &[u8], twin: &[u8]| codes.iter().zip(twin).filter(|(g, c)| g != c).count();
    quantize(&x, a, Fp8Format::E4M3, Rounding::Once, &mut twin);
    let once_diff = mismatch(&once_codes, &twin);
    let (s, _) = quantize(&x, a, Fp8Format::E4M3, Rounding::TwoStep, &mut twin);
    let two_diff = mismatch(&two_codes, &twin);
    let gpu_amax = gpu.download(&amax_device)?[0];
    println!("device: {} (sm_{}), {n} f32 elements (1 GiB)", gpu.info().name, gpu.info().sm());
    println!("| what | median ms | GB/s touched | vs device copy | codes differing from the CPU twin |");
    println!("|---|---|---|---|---|");
    println!("| device copy (4n read + 4n written) | {t_copy:.3} | {:.0} | 1.00 | |", copy_rate / 1e9);
    let row = |what: &str, t: f64, bytes: usize, diff: String| {
        let rate = bytes as f64 / (t * 1e-3);
        println!("| {what} | {t:.3} | {:.0} | {:.2} | {diff} |", rate / 1e9, rate / copy_rate);
    };
    row("pass 1: amax (4n read)", t1, 4 * n, format!("amax {}", if gpu_amax == a { "equal" } else { "DIFFERS" }));
    row("pass 2: E4M3 once (4n read + n written)", t_once, 5 * n, once_diff.to_string());
    row("pass 2: E4M3 two_step (4n read + n written)", t_two, 5 * n, two_diff.to_string());
    if let Some(dir) = dump {
        let write = |name: &str, bytes: &[u8]| {
            std::fs::write(dir.join(name), bytes).unwrap_or_else(|e| panic!("writing {name}: {e}"))
        };
        write("x.f32", &x.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>());
        write("two_step_e4m3.u8", &twin);
        write("scale.txt", format!("{s:e}\n").as_bytes());
    }
    let failed = once_diff + two_diff + usize::from(gpu_amax != a);
    if failed > 0 {
        return Err(GpuError::WrongResult {
            kernel: "fp8-scale".into(),
            detail: format!("{failed} results differ from the CPU twin"),
        });
    }
    Ok(())
}
