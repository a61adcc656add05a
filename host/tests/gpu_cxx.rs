//! The CUDA C++ baseline on the GPU: every form's kernel (`cuda-baseline/forms.cu`,
//! markers `bitexact::cuda_tools::baseline::cxx`) on every input of its family's domain,
//! under every NVRTC flag set, compared bit for bit with the family's exact reference
//! (`bitexact::verify::reference`, the one the Rust variants' proofs use). Under default
//! flags every form's `Expect` must hold; under each fast-math flag the test prints the
//! mismatch count per form instead of failing (and writes the table into
//! `$BITEXACT_REPORT_DIR/cxx-gpu-check.md` when that is set, as `scripts/gpu-check.sh`
//! does).
//!
//! The PTX comes from the folder `$BITEXACT_CXX_PTX_DIR` names (the bundle's, made by
//! `bitexact sass --cxx --emit-ptx`), or from NVRTC when that is installed. Without a
//! GPU, or without either source of PTX, the GPU tests print `skipped: <reason>`;
//! `REQUIRE_GPU=1` makes that a failure. The comparison itself (`cxx_gpu::tally`,
//! `cxx_gpu::holds`) is tested here on the CPU with made-up results.

use bitexact::cuda_tools::baseline::{Expect, FORMS, Flags, Form, cxx};
use bitexact::cuda_tools::cxx_gpu::{self, Tally};
use bitexact::gpu::{self, HostElements, KernelModule};
use bitexact::support::skip::require_or_skip;
use bitexact::verify::{domain, reference};
use rayon::prelude::*;
use shared::Primitive;
use std::fmt::Write as _;

/// Inputs per launch: domains of 2^32 inputs are checked in 16 chunks.
const CHUNK: u64 = 1 << 28;

/// Where `scripts/gpu-check.sh` collects reports.
const REPORT_DIR_VAR: &str = "BITEXACT_REPORT_DIR";

/// The reference's results for `inputs` of `family`, on all cores.
fn expected(family: shared::Family, inputs: &[u64]) -> Vec<u64> {
    let mut out = vec![0u64; inputs.len()];
    inputs
        .par_chunks(1 << 16)
        .zip(out.par_chunks_mut(1 << 16))
        .for_each(|(inputs, out)| reference::expected_many(family, inputs, out));
    out
}

/// One loaded module of the baseline's PTX per flag set, in [`Flags::ALL`] order.
type Modules = Vec<(Flags, KernelModule)>;

/// The GPU, the baseline's PTX for it and one module per flag set, or `None` after
/// printing why the test is skipped.
fn gpu_and_modules() -> Option<(gpu::Gpu, cxx_gpu::FormsPtx, Modules)> {
    let gpu = gpu::open_or_skip()?;
    let ptx = require_or_skip("REQUIRE_GPU", cxx_gpu::for_device(gpu.info().sm()))?;
    let modules = Flags::ALL
        .into_iter()
        .map(|flags| {
            // SAFETY: `BITEXACT_CXX_PTX_DIR`, where set, names the bundle's `cxx-ptx/`,
            // which `bitexact sass --cxx --emit-ptx` wrote; otherwise NVRTC compiled it here.
            let module = unsafe { ptx.load(&gpu, flags) };
            (flags, module.unwrap_or_else(|e| panic!("{} PTX: {e}", flags.label())))
        })
        .collect();
    Some((gpu, ptx, modules))
}

/// One cell of the report: the mismatch count, `(NaN bits)` when every mismatch is a NaN
/// in other bits, `✗` when the form's expectation does not hold.
fn cell(expect: Expect, tally: &Tally) -> String {
    let mut text = tally.mismatches.to_string();
    if tally.mismatches > 0 && tally.mismatches == tally.nan_bits_only {
        text += " (NaN bits)";
    }
    if !cxx_gpu::holds(expect, tally) {
        text += " ✗";
    }
    text
}

/// The report: one row per form, one column per flag set.
fn report(ptx: &cxx_gpu::FormsPtx, device: &str, rows: &[(&Form, Vec<Tally>)]) -> String {
    let mut text = format!(
        "# CUDA C++ baseline on the GPU: mismatches with the exact reference, every input\n\n\
         device {device}; PTX for {} from {}. A cell: wrong results (of the domain's inputs); \
         `(NaN bits)`: all of them NaNs in other bits; `✗`: the form's expectation does not hold \
         under that flag set (under default flags a test failure).\n\n| C++ form | expect | inputs |",
        ptx.arch, ptx.origin
    );
    for (flags, _) in ptx.by_flags() {
        text += &format!(" {} |", flags.label());
    }
    text += &format!("\n|---|---|---|{}\n", "---|".repeat(ptx.by_flags().len()));
    for (form, tallies) in rows {
        let inputs = tallies.first().map_or(0, |t| t.elements);
        let _ = write!(text, "| `{}` | {} | {inputs} |", form.code, form.expect.name());
        for tally in tallies {
            let _ = write!(text, " {} |", cell(form.expect, tally));
        }
        text += "\n";
    }
    text
}

#[test]
fn every_cxx_form_holds_its_claim_on_every_input_and_fast_math_mismatches_are_counted() {
    let Some((gpu, ptx, modules)) = gpu_and_modules() else { return };
    let mut rows: Vec<(&Form, Vec<Tally>)> = Vec::new();
    for form in FORMS {
        let started = std::time::Instant::now();
        let kernels = form.kernels;
        let family = kernels.family();
        let count = domain::count(family);
        let mut tallies = vec![Tally::default(); modules.len()];
        for start in (0..count).step_by(CHUNK as usize) {
            let len = (count - start).min(CHUNK) as usize;
            let mut inputs = Vec::with_capacity(len);
            domain::extend_with_inputs(family, start, len as u64, &mut inputs);
            let expected = expected(family, &inputs);
            let input = kernels.upload(&gpu, len, &|i| inputs[i as usize]).unwrap_or_else(|e| panic!("{e}"));
            for ((flags, module), tally) in modules.iter().zip(&mut tallies) {
                // A fresh output per run, so that no run inherits another's results.
                let mut output = kernels.output(&gpu, len).unwrap_or_else(|e| panic!("{e}"));
                kernels
                    .run_cxx(module, &input, &mut output)
                    .unwrap_or_else(|e| panic!("{} {}: {e}", form.name, flags.label()));
                let got = output.download(&gpu).unwrap_or_else(|e| panic!("{e}"));
                *tally = std::mem::take(tally).merge(cxx_gpu::tally(family, &inputs, &got, &expected));
            }
        }
        let counts: Vec<u64> = tallies.iter().map(|t| t.mismatches).collect();
        println!(
            "{}: {count} inputs, mismatches per flag set {counts:?} ({:.1} s)",
            kernels.name(),
            started.elapsed().as_secs_f64()
        );
        rows.push((form, tallies));
    }
    let device = format!("{} (sm_{})", gpu.info().name, gpu.info().sm());
    let text = report(&ptx, &device, &rows);
    println!("{text}");
    if let Some(dir) = std::env::var_os(REPORT_DIR_VAR) {
        let path = std::path::Path::new(&dir).join("cxx-gpu-check.md");
        std::fs::write(&path, &text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
    // Under default flags every expectation holds.
    let broken: Vec<String> = rows
        .iter()
        .filter(|(form, tallies)| !cxx_gpu::holds(form.expect, &tallies[0]))
        .map(|(form, tallies)| {
            let t = &tallies[0];
            let first = t.first.map_or(String::new(), |m| {
                format!("; first: input {:#x}, gpu {:#x}, reference {:#x}", m.input, m.got, m.expected)
            });
            format!(
                "{} ({}): expected {}, {} of {} differ ({} NaN bits only, max ulp {:?}){first}",
                form.kernel(),
                form.code,
                form.expect.name(),
                t.mismatches,
                t.elements,
                t.nan_bits_only,
                t.max_ulp
            )
        })
        .collect();
    assert!(broken.is_empty(), "under default flags:\n{}", broken.join("\n"));
}

/// Each form's C++ kernel and its Rust variant's `Map` kernel, on the same short buffer
/// (the launches the bench times): the Rust kernel gives the variant's CPU results, and
/// the C++ kernel under default flags the reference's where the form is exact. The
/// form's timing kernels run too: the latency kernel counts cycles, the throughput
/// kernel writes one word per thread.
#[test]
fn both_kernels_of_each_form_run_on_the_same_buffers() {
    let Some((gpu, _, modules)) = gpu_and_modules() else { return };
    let len = 4099;
    for form in FORMS {
        let kernels = form.kernels;
        let family = kernels.family();
        let count = domain::count(family);
        let inputs: Vec<u64> =
            (0..len as u64).map(|i| domain::input(family, i.wrapping_mul(0x9E37_79B9) % count)).collect();
        let input = kernels.upload(&gpu, len, &|i| inputs[i as usize]).expect("upload");
        let variant = bitexact::verify::table::find(form.variant).expect("in the table");
        let mut rust = kernels.output(&gpu, len).expect("alloc");
        kernels.run_rust(&gpu, &input, &mut rust).unwrap_or_else(|e| panic!("{}: {e}", variant.name));
        let rust = rust.download(&gpu).expect("download");
        for (i, &x) in inputs.iter().enumerate() {
            assert_eq!(rust.get(i), Some(variant.eval(x)), "{} at input {x:#x}", variant.name);
        }
        let mut cxx = kernels.output(&gpu, len).expect("alloc");
        kernels.run_cxx(&modules[0].1, &input, &mut cxx).unwrap_or_else(|e| panic!("{}: {e}", form.name));
        let got = cxx.download(&gpu).expect("download");
        let tally = cxx_gpu::tally(family, &inputs, &got, &expected(family, &inputs));
        if form.expect == Expect::Exact {
            assert_eq!(tally.mismatches, 0, "{}: {tally:?}", form.kernel());
        }
        // A buffer of another width is a typed error, not a launch.
        let other = gpu::DeviceElements::upload::<u64>(&gpu, len, &|i| i).expect("upload");
        assert!(matches!(kernels.run_cxx(&modules[0].1, &other, &mut cxx), Err(gpu::GpuError::Length { .. })));
        let mut out = gpu.zeros::<u64>(64).expect("alloc");
        kernels.cxx_latency(&modules[0].1, 7, 256, &mut out).unwrap_or_else(|e| panic!("{}: {e}", form.name));
        assert!(gpu.download(&out).expect("download")[0] >= 256, "{}: under a cycle per step", form.name);
        let two_blocks =
            cudarc::driver::LaunchConfig { grid_dim: (2, 1, 1), block_dim: (32, 1, 1), shared_mem_bytes: 0 };
        let mut out = gpu.zeros::<u64>(64).expect("alloc");
        kernels.cxx_launch_throughput(&modules[0].1, two_blocks, 7, 256, &mut out).unwrap_or_else(|e| panic!("{e}"));
        let words = gpu.download(&out).expect("download");
        assert!(words.iter().filter(|&&w| w != 0).count() > 32, "{}: {words:x?}", form.name);
    }
}

// ---- the comparison, on the CPU ----

/// f32 → binary16 inputs with their reference results: normal values, a subnormal
/// result, ±inf and NaNs with payloads.
fn f16_sample() -> (shared::Family, Vec<u64>, Vec<u64>) {
    let family = <cxx::f32_to_f16_rn as Primitive>::FAMILY;
    let inputs: Vec<u64> =
        vec![0x3F80_0000, 0x4049_0FDB, 0x3380_0000, 0x7F80_0000, 0xFF80_0000, 0x7FC0_0001, 0xFFA0_0000, 0x0000_0000];
    let expected = expected(family, &inputs);
    (family, inputs, expected)
}

fn u16s(bits: &[u64]) -> HostElements {
    HostElements::U16(bits.iter().map(|&b| b as u16).collect())
}

/// Which expectations a tally bears out, in the order Exact, ExactButNanBits, OneUlp,
/// Incorrect.
fn verdicts(tally: &Tally) -> [bool; 4] {
    [Expect::Exact, Expect::ExactButNanBits, Expect::OneUlp, Expect::Incorrect].map(|e| cxx_gpu::holds(e, tally))
}

#[test]
fn identical_results_hold_only_the_exact_expectations() {
    let (family, inputs, expected) = f16_sample();
    let tally = cxx_gpu::tally(family, &inputs, &u16s(&expected), &expected);
    assert_eq!((tally.elements, tally.mismatches, tally.first), (inputs.len() as u64, 0, None));
    assert_eq!(verdicts(&tally), [true, true, false, false]);
}

#[test]
fn one_differing_bit_breaks_the_exact_expectations() {
    let (family, inputs, expected) = f16_sample();
    let mut got = expected.clone();
    got[1] ^= 1; // π: one ULP off
    let tally = cxx_gpu::tally(family, &inputs, &u16s(&got), &expected);
    assert_eq!((tally.mismatches, tally.nan_bits_only, tally.max_ulp), (1, 0, Some(1)));
    let first = tally.first.expect("a mismatch");
    assert_eq!((first.input, first.got, first.expected), (inputs[1], got[1], expected[1]));
    assert_eq!(verdicts(&tally), [false, false, true, true]);
    // Two ULPs off: not 1-ULP either.
    got[1] ^= 3;
    let tally = cxx_gpu::tally(family, &inputs, &u16s(&got), &expected);
    assert_eq!(tally.max_ulp, Some(2));
    assert_eq!(verdicts(&tally), [false, false, false, true]);
}

#[test]
fn a_nan_in_other_bits_passes_only_exact_but_nan_bits() {
    let (family, inputs, expected) = f16_sample();
    let nan = inputs.iter().position(|&x| x == 0x7FC0_0001).expect("a NaN input");
    assert_ne!(expected[nan], 0x7FFF, "the reference keeps the payload");
    let mut got = expected.clone();
    got[nan] = 0x7FFF; // the conversion instruction's canonical NaN
    let tally = cxx_gpu::tally(family, &inputs, &u16s(&got), &expected);
    assert_eq!((tally.mismatches, tally.nan_bits_only, tally.max_ulp), (1, 1, None));
    assert_eq!(verdicts(&tally), [false, true, false, true]);
    // A NaN input given infinity is no NaN: that breaks it.
    got[nan] = 0x7C00;
    let tally = cxx_gpu::tally(family, &inputs, &u16s(&got), &expected);
    assert_eq!((tally.mismatches, tally.nan_bits_only), (1, 0));
    assert_eq!(verdicts(&tally), [false, false, false, true]);
}

#[test]
fn a_wrong_boolean_is_no_ulp_away() {
    let family = <cxx::f16_finite_hltu_habs_inf as Primitive>::FAMILY;
    let inputs: Vec<u64> = (0..=u16::MAX as u64).collect();
    let expected = expected(family, &inputs);
    // The negative control's mistake: true for every NaN.
    let got: Vec<u8> = inputs.iter().zip(&expected).map(|(&x, &e)| u8::from(e == 1 || x & 0x7FFF > 0x7C00)).collect();
    let tally = cxx_gpu::tally(family, &inputs, &HostElements::U8(got), &expected);
    assert_eq!((tally.mismatches, tally.nan_bits_only, tally.max_ulp), (2 * 1023, 0, None));
    assert_eq!(tally.first.map(|m| m.input), Some(0x7C01), "the first NaN, in input order");
    assert_eq!(verdicts(&tally), [false, false, false, true]);
}

#[test]
fn tallies_of_chunks_merge_in_order() {
    let (family, inputs, expected) = f16_sample();
    let mut got = expected.clone();
    got[0] ^= 1;
    got[2] ^= 1;
    let whole = cxx_gpu::tally(family, &inputs, &u16s(&got), &expected);
    let (a, b) = (3, inputs.len());
    let first = cxx_gpu::tally(family, &inputs[..a], &u16s(&got[..a]), &expected[..a]);
    let second = cxx_gpu::tally(family, &inputs[a..b], &u16s(&got[a..b]), &expected[a..b]);
    assert_eq!(first.merge(second), whole);
    assert_eq!(whole.first.map(|m| m.input), Some(inputs[0]));
    assert_eq!(Tally::default().merge(whole.clone()), whole);
}
