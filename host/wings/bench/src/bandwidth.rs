//! Bandwidth of the count and stream kernels against a device-to-device copy that moves
//! the same bytes in the same run, each kernel's output checked in that run.

use super::{BenchConfig, is_selected, median, selected};
use bitexact_gpu::{Gpu, GpuError};
use bitexact_verify::table::{VARIANTS, Variant};
use shared::{Claim, Family, Format, KernelKind, KernelName};
use std::collections::HashMap;

/// One bandwidth measurement.
#[derive(Clone, Debug, serde::Serialize)]
pub struct BandwidthRow {
    /// What ran: a kernel name, or `copy` for the baseline.
    pub kernel: String,
    /// Bytes read plus bytes written per run.
    pub bytes_moved: u64,
    /// Median device time per run.
    pub median_ms: f64,
    /// `bytes_moved / median time`, in 10^9 bytes per second.
    pub gb_per_s: f64,
    /// Same-run device-to-device copy moving the same bytes.
    pub copy_gb_per_s: f64,
    /// `gb_per_s / copy_gb_per_s`, in percent.
    pub percent_of_copy: f64,
    /// What was checked about the kernel's output in this run.
    pub checked: String,
    /// For an exact conversion kernel, the same-run figure of the inexact form users
    /// run today ([`inexact_baseline`]); `None` for other kernels, and for families
    /// without such a form.
    pub inexact_baseline: Option<Baseline>,
}

/// The inexact kernel an exact conversion kernel is compared with, as measured in the
/// same run over the same input.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Baseline {
    /// Its kernel's name.
    pub kernel: String,
    /// Its median device time per run.
    pub median_ms: f64,
    /// Its GB/s (the same bytes moved).
    pub gb_per_s: f64,
    /// The exact kernel's median time over the baseline's: what exactness costs.
    pub exact_over_inexact_time: f64,
}

/// The variant whose [`KernelKind::Stream`] kernel is the inexact baseline of `exact`'s:
/// for an exact UNORM/SNORM → f32 variant with a stream kernel, the variant of the same
/// family and input width that claims [`Claim::OneUlp`] and has one (the common
/// `x * fl(1/(2^n - 1))` shortcut: `unorm8_mul_recip` for UNORM8 codes in bytes), if
/// the table has it.
#[doc(hidden)]
pub fn inexact_baseline(exact: &Variant) -> Option<&'static Variant> {
    let conversion = matches!(exact.family, Family::UnormToF32 { .. } | Family::SnormToF32 { .. });
    if !conversion || exact.claim != Claim::Exact || !exact.has(KernelKind::Stream) {
        return None;
    }
    VARIANTS.iter().find(|b| {
        b.family == exact.family
            && b.input_bits == exact.input_bits
            && b.claim == Claim::OneUlp
            && b.has(KernelKind::Stream)
    })
}

/// Input bits of element `i` of the bandwidth benchmarks: a fixed scramble (never all
/// zeros: zeros can run faster), truncated to the element width by the upload.
pub(crate) fn scramble(i: u64) -> u64 {
    i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 24
}

/// Median GB/s of a device copy that moves `bytes_moved` bytes (half read, half
/// written), measured once per size per run.
fn copy_gb_per_s(
    gpu: &Gpu,
    config: &BenchConfig,
    bytes_moved: u64,
    measured: &mut HashMap<u64, f64>,
) -> Result<f64, GpuError> {
    if let Some(&gb_per_s) = measured.get(&bytes_moved) {
        return Ok(gb_per_s);
    }
    let half = (bytes_moved / 2) as usize;
    let src = gpu.upload(&bitexact_support::parallel::map_indices(half, |i| scramble(i as u64) as u8))?;
    let mut dst = gpu.zeros::<u8>(half)?;
    let ms = median(gpu.time_ms(config.warmup, config.reps, || gpu.copy(&src, &mut dst))?);
    let gb_per_s = bytes_moved as f64 / (ms * 1e6);
    measured.insert(bytes_moved, gb_per_s);
    Ok(gb_per_s)
}

fn row(kernel: String, bytes_moved: u64, ms: f64, copy: f64, checked: String) -> BandwidthRow {
    let gb_per_s = bytes_moved as f64 / (ms * 1e6);
    BandwidthRow {
        kernel,
        bytes_moved,
        median_ms: ms,
        gb_per_s,
        copy_gb_per_s: copy,
        percent_of_copy: 100.0 * gb_per_s / copy,
        checked,
        inexact_baseline: None,
    }
}

/// Encodings of `format` that are not finite, by the independent reference
/// (`bitexact::verify::reference`): from the candidates ±(exponent all ones, mantissa zero),
/// ±(all ones), the quiet NaN and the sign bit alone, those it classifies as NaN or
/// infinite (FNUZ formats: only the sign bit alone).
#[doc(hidden)]
pub fn non_finite_encodings(format: Format) -> Vec<u64> {
    let layout = bitexact_verify::reference::layout(format);
    let (e, m) = (layout.exponent_bits, layout.mantissa_bits);
    let sign = 1u64 << (e + m);
    let top = ((1u64 << e) - 1) << m;
    let mantissa = (1u64 << m) - 1;
    let candidates = [top, sign | top, top | mantissa, sign | top | mantissa, top | 1 << (m - 1), sign];
    let mut found: Vec<u64> = Vec::new();
    for c in candidates {
        if !bitexact_verify::reference::class(format, c).is_finite() && !found.contains(&c) {
            found.push(c);
        }
    }
    found
}

/// The input of a count benchmark over `len` elements of `format`: element `i` is the
/// scramble, or zero where that is not finite (by the reference), except at
/// `injected`, which get the non-finite encodings of `format` in turn.
fn count_input(format: Format, injected: [u64; 3]) -> impl Fn(u64) -> u64 + Sync {
    let specials = non_finite_encodings(format);
    let mask = u64::MAX >> (64 - format.bits());
    move |i| match injected.iter().position(|&j| j == i) {
        Some(k) => specials[k % specials.len()],
        None => {
            let bits = scramble(i) & mask;
            if bitexact_verify::reference::class(format, bits).is_finite() { bits } else { 0 }
        }
    }
}

/// Non-finite counting over `bytes` of each format's elements, with three non-finite
/// values injected: every selected variant with a count kernel, each checked in the
/// same run (exact ones must find the three and the first).
pub(super) fn bench_count(
    gpu: &Gpu,
    config: &BenchConfig,
    copies: &mut HashMap<u64, f64>,
    progress: &dyn Fn(&str),
) -> Result<Vec<BandwidthRow>, GpuError> {
    let mut rows = Vec::new();
    // The input of the last format, reused by the next variant of the same format.
    let mut input: Option<(Format, bitexact_gpu::DeviceElements)> = None;
    let mut scratch = gpu.zeros::<u64>(2)?;
    for v in selected(config) {
        let Some(kernel) = v.ops.count_nonfinite() else { continue };
        let Family::IsFinite(format) = v.family else { continue };
        let len = config.bytes / (format.bits() / 8) as usize;
        let injected = [len / 3, len / 2, len.saturating_sub(1)].map(|i| i as u64);
        let elements = match input.take() {
            Some((f, elements)) if f == format => elements,
            _ => kernel.upload(gpu, len, &count_input(format, injected))?,
        };
        let name = KernelName { variant: v.name, kind: KernelKind::CountNonfinite }.to_string();
        progress(&name);
        let bytes_moved = (len * (format.bits() / 8) as usize) as u64;
        let copy = copy_gb_per_s(gpu, config, bytes_moved, copies)?;
        // Timed runs accumulate into a scratch result nobody reads, so nothing but the
        // kernel sits between the events; the check below is a separate, fresh run.
        let ms = median(gpu.time_ms(config.warmup, config.reps, || kernel.launch(gpu, &elements, &mut scratch))?);
        let found = kernel.count(gpu, &elements, 0)?;
        let checked = if v.claim == Claim::Exact {
            if found.count != injected.len() as u64 || found.first != Some(injected[0]) {
                let detail = format!("found {found:?}, injected at {injected:?}");
                return Err(GpuError::WrongResult { kernel: name, detail });
            }
            format!("count {} and first index {} as injected", found.count, injected[0])
        } else {
            format!("count {} (claim: {})", found.count, v.claim.name())
        };
        rows.push(row(name, bytes_moved, ms, copy, checked));
        input = Some((format, elements));
    }
    Ok(rows)
}

/// Conversions over `bytes` input bytes of each pair of input and output widths (UNORM
/// codes → f32, f32 → UNORM codes, ...): every selected variant with a stream kernel
/// (its `Stream` kernel, and its `HardwareStream` kernel where it has one and the
/// device runs its module), and the inexact baseline of each exact one
/// ([`inexact_baseline`]), every output checked against the same function on the CPU in
/// the same run ([`check_stream_output`]); then each exact row gets its baseline's
/// figures.
pub(super) fn bench_stream(
    gpu: &Gpu,
    config: &BenchConfig,
    copies: &mut HashMap<u64, f64>,
    progress: &dyn Fn(&str),
) -> Result<Vec<BandwidthRow>, GpuError> {
    let wanted = |v: &Variant| {
        is_selected(config, v)
            || VARIANTS.iter().any(|e| is_selected(config, e) && inexact_baseline(e).is_some_and(|b| b.name == v.name))
    };
    let chosen: Vec<&'static Variant> = VARIANTS.iter().filter(|v| v.has(KernelKind::Stream) && wanted(v)).collect();
    let mut widths: Vec<(u32, u32)> = chosen.iter().map(|v| (v.input_bits, v.output_bits)).collect();
    widths.sort_unstable();
    widths.dedup();
    let mut measured: Vec<(&'static Variant, BandwidthRow)> = Vec::new();
    for (in_bits, out_bits) in widths {
        let group: Vec<&'static Variant> =
            chosen.iter().copied().filter(|v| (v.input_bits, v.output_bits) == (in_bits, out_bits)).collect();
        let Some(first) = group.first().and_then(|v| v.ops.stream()) else { continue };
        let (in_size, out_size) = ((in_bits / 8) as usize, (out_bits / 8) as usize);
        let len = config.bytes / in_size;
        let input = first.upload(gpu, len, &scramble)?;
        let bytes_moved = (len * (in_size + out_size)) as u64;
        let copy = copy_gb_per_s(gpu, config, bytes_moved, copies)?;
        for v in group {
            let kernels = [(KernelKind::Stream, v.ops.stream()), (KernelKind::HardwareStream, v.ops.hardware_stream())];
            for (kind, kernel) in kernels {
                let Some(kernel) = kernel else { continue };
                let name = KernelName { variant: v.name, kind };
                if kind == KernelKind::HardwareStream
                    && let Err(reason) =
                        gpu.runs(bitexact_gpu::ptx::module_of(name, shared::hardware::Conversion::of(v.family)).target)
                {
                    progress(&format!("{name} skipped: {reason}"));
                    continue;
                }
                progress(&name.to_string());
                // A fresh (zeroed) output for each kernel: the last kernel's results (the
                // same variant's `Stream` kernel's, before its `HardwareStream` one) would
                // otherwise pass for any element this kernel fails to write.
                let mut output = kernel.output(gpu, len)?;
                let ms = median(gpu.time_ms(config.warmup, config.reps, || kernel.launch(gpu, &input, &mut output))?);
                let got = output.download(gpu)?;
                let checked = check_stream_output(v, kind, in_bits, &got)?;
                measured.push((v, row(name.to_string(), bytes_moved, ms, copy, checked)));
            }
        }
    }
    let baselines: Vec<Option<Baseline>> = measured
        .iter()
        .map(|(v, exact)| {
            let base = inexact_baseline(v)?;
            let (_, b) = measured.iter().find(|(m, _)| m.name == base.name)?;
            Some(Baseline {
                kernel: b.kernel.clone(),
                median_ms: b.median_ms,
                gb_per_s: b.gb_per_s,
                exact_over_inexact_time: exact.median_ms / b.median_ms,
            })
        })
        .collect();
    Ok(measured
        .into_iter()
        .zip(baselines)
        .filter(|((v, _), _)| is_selected(config, v))
        .map(|((_, row), baseline)| BandwidthRow { inexact_baseline: baseline, ..row })
        .collect())
}

/// Checks every output `got` of `v`'s stream kernel of kind `kind` (over the bench input
/// [`scramble`] of `in_bits`-bit elements) against `v` on the CPU, on all cores, and says
/// what was checked. A [`KernelKind::HardwareStream`] kernel's result on a NaN input
/// must be a NaN of the result format (the instruction's own, which the three-way check
/// reports), every other result the CPU's bits. [`GpuError::WrongResult`] says how many
/// differ, and where first.
fn check_stream_output(
    v: &Variant,
    kind: KernelKind,
    in_bits: u32,
    got: &bitexact_gpu::HostElements,
) -> Result<String, GpuError> {
    use bitexact_verify::reference::{InputClass, conversion_input_class, conversion_output_is_nan};
    let mask = u64::MAX >> (64 - in_bits);
    let own_nan = |x: u64| kind == KernelKind::HardwareStream && conversion_input_class(v.family, x) == InputClass::Nan;
    let len = got.len();
    let (wrong, first_wrong) = bitexact_support::parallel::count_where(len, |i| {
        let (x, bits) = (scramble(i as u64) & mask, got.get(i));
        let right = if own_nan(x) {
            bits.is_some_and(|b| conversion_output_is_nan(v.family, b))
        } else {
            bits == Some(v.ops.eval(x))
        };
        (!right).then_some(i)
    });
    if let Some(i) = first_wrong {
        let detail = format!("{wrong} outputs differ from the CPU, first at {i}");
        return Err(GpuError::WrongResult { kernel: KernelName { variant: v.name, kind }.to_string(), detail });
    }
    if kind != KernelKind::HardwareStream {
        return Ok(format!("all {len} outputs == CPU"));
    }
    let (nans, _) = bitexact_support::parallel::count_where(len, |i| own_nan(scramble(i as u64) & mask).then_some(i));
    Ok(format!("all {len} outputs == CPU, but a NaN of the format for the {nans} NaN inputs"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream kernel's output is checked bit for bit against the CPU, except that a
    /// `HardwareStream` kernel may give any NaN of the format for a NaN input (and must
    /// give a NaN there).
    #[test]
    fn stream_outputs_are_checked_against_the_cpu_with_the_instructions_nan_allowed() {
        use bitexact_gpu::HostElements;
        use bitexact_verify::reference::{InputClass, conversion_input_class};
        let v = VARIANTS.iter().find(|v| v.name == "f32_to_f16").expect("in the table");
        let len = 1 << 16;
        let inputs: Vec<u64> = (0..len as u64).map(|i| scramble(i) & 0xFFFF_FFFF).collect();
        let nan = |x: u64| conversion_input_class(v.family, x) == InputClass::Nan;
        let cpu: Vec<u16> = inputs.iter().map(|&x| v.ops.eval(x) as u16).collect();
        // The instruction's canonical NaN for every NaN input, the CPU's bits elsewhere.
        let canonical: Vec<u16> = inputs.iter().zip(&cpu).map(|(&x, &c)| if nan(x) { 0x7FFF } else { c }).collect();
        let nans = inputs.iter().filter(|&&x| nan(x)).count();
        assert!(nans > 0 && canonical != cpu, "the sample has NaN inputs whose payload the CPU keeps");
        let check = |kind, got: &[u16]| check_stream_output(v, kind, 32, &HostElements::U16(got.to_vec()));
        for kind in [KernelKind::Stream, KernelKind::HardwareStream] {
            assert!(check(kind, &cpu).is_ok(), "{kind:?}");
        }
        let said = check(KernelKind::HardwareStream, &canonical).expect("a NaN of the format for each NaN input");
        assert!(said.ends_with(&format!("for the {nans} NaN inputs")), "{said}");
        assert!(check(KernelKind::Stream, &canonical).is_err(), "the software kernel keeps the payload");
        // A wrong finite result, and a NaN input given infinity, fail either kind.
        let i = inputs.iter().position(|&x| !nan(x)).expect("a non-NaN input");
        let mut wrong = cpu.clone();
        wrong[i] ^= 1;
        let j = inputs.iter().position(|&x| nan(x)).expect("a NaN input");
        let mut not_nan = cpu.clone();
        not_nan[j] = 0x7C00;
        for (kind, got, first) in [
            (KernelKind::Stream, &wrong, i),
            (KernelKind::HardwareStream, &wrong, i),
            (KernelKind::HardwareStream, &not_nan, j),
        ] {
            let error = check(kind, got).expect_err("a wrong output").to_string();
            assert!(error.contains(&format!("1 outputs differ from the CPU, first at {first}")), "{kind:?}: {error}");
        }
    }

    /// `scripts/torch_baseline.py` times PyTorch on the bench's own input bits: the
    /// overflow-free form it computes them with on the GPU gives the same bits as
    /// `scramble` for the first 4096 elements and the last 4096 of a 1 GiB f32 input.
    /// Needs `python3` (standard library only); `REQUIRE_PYTHON=1`, which CI sets, makes
    /// its absence a failure.
    #[test]
    fn the_torch_baseline_converts_the_same_input_bits() {
        use std::process::Command;
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../scripts/torch_baseline.py");
        for from in [0u64, (1 << 28) - 4096] {
            let run = Command::new("python3")
                .arg(script)
                .args(["--scramble-sample", "4096", "--scramble-from", &from.to_string()])
                .output();
            let Some(output) = bitexact_support::skip::require_or_skip("REQUIRE_PYTHON", run) else { return };
            assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
            let printed: Vec<u64> = String::from_utf8_lossy(&output.stdout)
                .lines()
                .map(|line| u64::from_str_radix(line.trim_start_matches("0x"), 16).expect("hex"))
                .collect();
            let ours: Vec<u64> = (from..from + 4096).map(|i| scramble(i) & 0xFFFF_FFFF).collect();
            assert_eq!(printed, ours, "from {from}");
        }
    }

    #[test]
    fn exact_conversions_are_compared_with_the_one_ulp_shortcut_of_their_family_and_width() {
        let baseline =
            |name: &str| inexact_baseline(bitexact_verify::table::find(name).expect("in the table")).map(|b| b.name);
        for v in VARIANTS.iter().filter(|v| v.has(KernelKind::Stream)) {
            let Some(b) = inexact_baseline(v) else { continue };
            assert_eq!((b.family, b.input_bits, b.claim), (v.family, v.input_bits, Claim::OneUlp), "{}", v.name);
            assert_eq!(v.claim, Claim::Exact, "{}", v.name);
        }
        assert_eq!(baseline("unorm8_times3_int"), Some("unorm8_mul_recip"));
        assert_eq!(baseline("unorm16_div_ieee"), Some("unorm16_mul_recip"));
        // No baseline for the baseline itself, nor where the table has no shortcut of the
        // same input width (UNORM8 codes in 16-bit words, SNORM), nor outside the
        // UNORM/SNORM → f32 families: f32 ↔ binary16 / bfloat16 / FP8 have no inexact
        // form in the table, UNORM → binary16 / bfloat16 no streamed one.
        for name in [
            "unorm8_mul_recip",
            "unorm8_to_f32",
            "snorm8_to_f32",
            "f16_finite_exp_mask",
            "unorm8_to_f16_odd",
            "unorm16_to_bf16_via_f32",
            "f32_to_f16",
            "f32_to_bf16",
            "f32_to_e4m3",
            "f32_to_e5m2_satfinite",
            "f16_to_f32_scaled",
            "bf16_to_f32",
            "e4m3_to_f32_scaled",
        ] {
            assert_eq!(baseline(name), None, "{name}");
        }
    }

    #[test]
    fn injected_encodings_are_non_finite_and_the_rest_of_a_count_input_is_finite() {
        use bitexact_verify::reference::class;
        use shared::Class;
        for format in Format::ALL {
            let specials = non_finite_encodings(format);
            assert!(!specials.is_empty(), "{}", format.name());
            assert!(specials.iter().all(|&b| !class(format, b).is_finite()), "{}: {specials:x?}", format.name());
            // Formats with infinities get both among the first three injected.
            let infinities = specials.iter().take(3).filter(|&&b| class(format, b) == Class::Infinite).count();
            let has_infinities =
                (0..1u64 << format.bits().min(16)).any(|b| class(format, b) == Class::Infinite) || format.bits() > 16;
            assert_eq!(infinities, if has_infinities { 2 } else { 0 }, "{}: {specials:x?}", format.name());
            let injected = [5, 77, 1000];
            let input = count_input(format, injected);
            for i in 0..4096 {
                assert_eq!(class(format, input(i)).is_finite(), !injected.contains(&i), "{} at {i}", format.name());
            }
        }
    }
}
