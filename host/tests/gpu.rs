//! GPU conformance: every kernel run for real on the device, its results compared bit
//! for bit with `shared` run on the CPU. Without a CUDA driver or device each test
//! prints `skipped: <reason>` and passes, and so does each check the device cannot run
//! (an instruction newer than the device, a buffer larger than its memory);
//! `REQUIRE_GPU=1` makes each such skip a failure.

use bitexact::gpu::ptx;
use bitexact::gpu::{self, Gpu, GpuError};
use bitexact::support::skip::skip_or_fail;
use bitexact::verify::gpu_check::GpuCheck;
use bitexact::verify::reference::{InputClass, conversion_input_class, conversion_output_is_nan};
use bitexact::verify::table::{VARIANTS, Variant};
use bitexact::verify::three_way::ThreeWay;
use shared::hardware::Conversion;
use shared::{Claim, KernelKind, KernelName};

/// The switch that makes a skip of these tests a failure: a missing GPU, or one that
/// cannot run a check (too old for an instruction, too little memory).
const REQUIRE_GPU: &str = "REQUIRE_GPU";

/// Inputs per GPU launch in the whole-domain test (domains larger than this, such as
/// 2^32 encodings, are checked in consecutive chunks).
const CHUNK: u64 = 1 << 28;

fn assert_matches(variant: &Variant, what: &str, check: Result<GpuCheck, GpuError>) {
    let check = check.unwrap_or_else(|e| panic!("{} ({what}): {e}", variant.name));
    if let Some(m) = check.first_mismatch {
        panic!(
            "{} ({what}): GPU differs from CPU on {} of {} elements; first at index {}: input {:#x}, gpu {:#x}, cpu {:#x}",
            variant.name, check.mismatches, check.elements, m.index, m.input, m.gpu, m.cpu
        );
    }
    assert_eq!(check.mismatches, 0);
}

#[test]
fn every_variant_matches_the_cpu_on_every_input_of_its_domain() {
    let Some(gpu) = gpu::open_or_skip() else { return };
    for v in VARIANTS {
        let domain = bitexact::verify::domain::count(v.family);
        for start in (0..domain).step_by(CHUNK as usize) {
            let len = (domain - start).min(CHUNK) as usize;
            let input_at = |i: u64| bitexact::verify::domain::input(v.family, start + i);
            assert_matches(v, "whole domain", v.ops.gpu_check(&gpu, len, &input_at));
        }
        println!("{}: {domain} inputs, GPU == CPU bit for bit", v.name);
    }
}

/// Every conversion the GPU has an instruction for, on every input (2^32 for f32
/// sources, in chunks): the variant on the GPU, the instruction on the GPU and the
/// variant on the CPU. The software form must equal the CPU everywhere; the instruction
/// must equal it on every non-NaN input (NaN: NVIDIA documents only that the result is a
/// NaN, and returns the canonical 0x7FFF for binary16 and bfloat16 where the family
/// keeps the payload). The instruction's stream kernel, where the variant has one, must
/// equal its per-element kernel on every input. The report says where they differ, by
/// input class. A device too old for an instruction skips that conversion, saying which
/// target it needs.
#[test]
fn software_hardware_and_cpu_agree_on_every_input_of_each_conversion() {
    let Some(gpu) = gpu::open_or_skip() else { return };
    'variants: for v in VARIANTS {
        let Some(kernel) = v.ops.hardware() else { continue };
        let instruction = Conversion::of(v.family).expect("a hardware kernel's family has an instruction");
        let domain = bitexact::verify::domain::count(v.family);
        let mut total: Option<ThreeWay> = None;
        for start in (0..domain).step_by(CHUNK as usize) {
            let len = (domain - start).min(CHUNK) as usize;
            match kernel.three_way(&gpu, start, len) {
                Err(GpuError::NeedsTarget { reason, .. }) => {
                    skip_or_fail(REQUIRE_GPU, format!("{} ({}): {reason}", v.name, instruction.ptx()));
                    continue 'variants;
                }
                Err(e) => panic!("{}: {e}", v.name),
                Ok(part) => {
                    total = Some(match total {
                        None => part,
                        Some(t) => t.merge(part),
                    })
                }
            }
        }
        let report = total.expect("a domain is not empty");
        println!("{} ({}): {report}", v.name, instruction.ptx());
        assert_eq!(report.elements, domain, "{}", v.name);
        assert_eq!(report.software.inputs, 0, "{}: the software form on the GPU: {}", v.name, report.software);
        assert!(
            report.hardware.only_in(&[InputClass::Nan]),
            "{}: {} differs from the family beyond NaN: {}",
            v.name,
            instruction.ptx(),
            report.hardware
        );
        // The non-saturating FP8 forms select their NaN themselves: exact everywhere.
        if matches!(instruction, Conversion::F32ToE4m3 | Conversion::F32ToE5m2) {
            assert_eq!(report.hardware.inputs, 0, "{}: {}", v.name, report.hardware);
        }
        assert_eq!(report.hardware_stream.is_some(), v.has(KernelKind::HardwareStream), "{}", v.name);
        assert_eq!(report.stream_vs_hardware, 0, "{}: the hardware stream kernel: {report}", v.name);
    }
}

/// A fixed scramble, so lengths tests see varied inputs rather than a ramp.
fn scrambled(i: u64) -> u64 {
    i.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(29)
}

#[test]
fn launch_arithmetic_holds_for_awkward_lengths() {
    let Some(gpu) = gpu::open_or_skip() else { return };
    for len in [0usize, 1, 31, 32, 33, 1023, (1 << 20) + 7] {
        for v in VARIANTS {
            assert_matches(v, &format!("length {len}"), v.ops.gpu_check(&gpu, len, &scrambled));
        }
    }
}

#[test]
fn a_buffer_over_2_pow_31_bytes_is_converted_completely() {
    let Some(gpu) = gpu::open_or_skip() else { return };
    // UNORM8 → f32: 2^29 + 3 elements make an output of 2^31 + 12 bytes, so byte
    // offsets past 2^31 are exercised; inputs and outputs need about 2.6 GB.
    let len = (1usize << 29) + 3;
    if gpu.info().memory_bytes < 4 << 30 {
        skip_or_fail(REQUIRE_GPU, "the device has under 4 GiB of memory");
        return;
    }
    let v = bitexact::verify::table::find("unorm8_times3_int").expect("in the table");
    assert_matches(v, "2^31-byte output", v.ops.gpu_check(&gpu, len, &scrambled));
}

#[test]
fn a_device_buffer_is_reused_across_calls() {
    let Some(gpu) = gpu::open_or_skip() else { return };
    use shared::variants::{unorm8_div_ieee, unorm8_mul_recip, unorm8_series};
    let bytes: Vec<u8> = (0..=255u8).cycle().take(4099).collect();
    let input = gpu.upload(&bytes).expect("upload");
    let mut output = gpu.zeros::<u32>(bytes.len()).expect("alloc");
    let expect = |f: fn(u8) -> f32| bytes.iter().map(|&x| f(x).to_bits()).collect::<Vec<u32>>();
    // Every Map kernel is in the embedded baseline module.
    let module = gpu.module_for::<unorm8_series>(KernelKind::Map).expect("the baseline module");
    module.map::<unorm8_series>(&input.as_view(), &mut output.as_view_mut()).expect("first call");
    assert_eq!(gpu.download(&output).expect("download"), expect(shared::unorm8::series));
    module.map::<unorm8_mul_recip>(&input.as_view(), &mut output.as_view_mut()).expect("second call, same buffers");
    assert_eq!(gpu.download(&output).expect("download"), expect(shared::unorm8::mul_recip));
    module.map::<unorm8_div_ieee>(&input.as_view(), &mut output.as_view_mut()).expect("third call, same buffers");
    assert_eq!(gpu.download(&output).expect("download"), expect(shared::unorm8::div_ieee));
    // A length mismatch is a typed error, not a launch.
    let mut short = gpu.zeros::<u32>(10).expect("alloc");
    let mismatch = module.map::<unorm8_series>(&input.as_view(), &mut short.as_view_mut());
    assert!(matches!(mismatch, Err(GpuError::Length { .. })));
    // So is a copy's, with its own variant.
    let copy_error = |r: Result<(), GpuError>| match r {
        Err(GpuError::CopyLength { from, into, .. }) => Some((from, into)),
        _ => None,
    };
    assert_eq!(copy_error(gpu.copy(&output, &mut short)), Some((bytes.len(), 10)));
    assert_eq!(copy_error(gpu.download_into(&short, &mut [0u32; 11])), Some((10, 11)));
}

#[test]
fn stream_kernels_match_the_cpu_at_every_alignment_and_tail() {
    let Some(gpu) = gpu::open_or_skip() else { return };
    // Not a multiple of 4, so the scalar tail runs too; starting at 1..3 puts both
    // buffers off the alignment of their four-element accesses (the scalar pass for
    // everything).
    let len = (1usize << 20) + 13;
    let streams = VARIANTS.iter().flat_map(|v| {
        let software = v.ops.stream().map(|k| (v, KernelKind::Stream, k));
        software.into_iter().chain(v.ops.hardware_stream().map(|k| (v, KernelKind::HardwareStream, k)))
    });
    for (v, kind, kernel) in streams {
        let name = v.kernel(kind).expect("a variant with a stream kernel names it");
        if kind == KernelKind::HardwareStream
            && let Err(reason) = gpu.runs(ptx::module_of(name, Conversion::of(v.family)).target)
        {
            skip_or_fail(REQUIRE_GPU, format!("{name}: {reason}"));
            continue;
        }
        let input = kernel.upload(&gpu, len, &scrambled).unwrap_or_else(|e| panic!("{name}: {e}"));
        let mask = u64::MAX >> (64 - v.input_bits);
        // 0 and 4 keep both buffers aligned (vector loop, then a tail of 1 or 2).
        for from in [0, 1, 2, 3, 4, len - 3, len] {
            // A fresh output per run, so that no run inherits another's results.
            let mut output = kernel.output(&gpu, len).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(output.bits(), v.output_bits, "{name}");
            kernel.run(&gpu, &input, from, &mut output).unwrap_or_else(|e| panic!("{name}: {e}"));
            let got = output.download(&gpu).expect("download");
            assert_eq!(got.len(), len, "{name}");
            for i in from..len {
                let x = scrambled(i as u64) & mask;
                let (bits, cpu) = (got.get(i).expect("in range"), v.eval(x));
                // The instruction's NaN is its own (the three-way check counts where): a
                // NaN input must give a NaN of the format, every other input the CPU's bits.
                if kind == KernelKind::HardwareStream && conversion_input_class(v.family, x) == InputClass::Nan {
                    assert!(
                        conversion_output_is_nan(v.family, bits),
                        "{name} from {from}, at {i}: NaN {x:#x} gave {bits:#x}"
                    );
                    continue;
                }
                assert_eq!(bits, cpu, "{name} from {from}, at {i}: input {x:#x}, gpu {bits:#x}, cpu {cpu:#x}");
            }
        }
        // An input or output of another width is a typed error, not a launch.
        let other = bitexact::gpu::DeviceElements::upload::<u64>(&gpu, 4, &scrambled).expect("upload");
        let mut output = kernel.output(&gpu, len).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(matches!(kernel.run(&gpu, &other, 0, &mut output), Err(GpuError::Length { .. })), "{name}");
        let mut other_out = bitexact::gpu::DeviceElements::zeros::<u64>(&gpu, len).expect("alloc");
        assert!(matches!(kernel.run(&gpu, &input, 0, &mut other_out), Err(GpuError::Length { .. })), "{name}");
    }
}

#[test]
fn nonfinite_count_kernels_find_every_injected_value() {
    let Some(gpu) = gpu::open_or_skip() else { return };
    let len = (1usize << 20) + 5; // a scalar tail after the 16-byte chunks
    for v in VARIANTS {
        let Some(kernel) = v.ops.count_nonfinite() else { continue };
        let shared::Family::IsFinite(format) = v.family else { panic!("{}: a count kernel of {}", v.name, v.family) };
        // Finite values by the reference, then non-finite ones at chosen places: in the
        // first 16 bytes (the head when starting off a boundary), in the middle, and in
        // the tail.
        let specials = bitexact::bench::non_finite_encodings(format);
        let mask = u64::MAX >> (64 - v.input_bits);
        let finite = |i: u64| {
            let bits = scrambled(i) & mask;
            if bitexact::verify::reference::class(format, bits).is_finite() { bits } else { 0 }
        };
        let injected = [3, 4097, 5000, 70_001, len - 3, len - 1];
        let input_at = |i: u64| match injected.iter().position(|&j| j as u64 == i) {
            Some(k) => specials[k % specials.len()],
            None => finite(i),
        };
        let input = kernel.upload(&gpu, len, &input_at).unwrap_or_else(|e| panic!("{}: {e}", v.name));
        for from in [0, 1, 2, 3, 5, 9, len - 2, len] {
            let got = kernel.count(&gpu, &input, from).unwrap_or_else(|e| panic!("{}: {e}", v.name));
            // What the variant itself says, element by element on the CPU.
            let flagged: Vec<u64> =
                (from..len).filter(|&i| v.eval(input_at(i as u64)) == 0).map(|i| (i - from) as u64).collect();
            assert_eq!(got.count, flagged.len() as u64, "{} from {from}: count", v.name);
            assert_eq!(got.first, flagged.first().copied(), "{} from {from}: first index", v.name);
            if v.claim == Claim::Exact {
                let expected: Vec<u64> = injected.iter().filter(|&&i| i >= from).map(|&i| (i - from) as u64).collect();
                assert_eq!(flagged, expected, "{} from {from}: exact variants find exactly the injected", v.name);
            }
        }
    }
}

/// The first word where `a` and `b` differ, with both words in hex.
fn first_difference(a: &[u32], b: &[u32]) -> Option<(usize, String, String)> {
    assert_eq!(a.len(), b.len());
    let i = a.iter().zip(b).position(|(x, y)| x != y)?;
    Some((i, format!("{:#010x}", a[i]), format!("{:#010x}", b[i])))
}

#[test]
fn the_gpu_backend_of_scan_and_normalize_matches_the_cpu_backend() {
    use bitexact::files::backend::{self, Backend, CountJob, CpuBackend, GPU_CHUNK_BYTES};
    use bitexact::files::normalize::image::{SampleWidth, conversion};
    use bitexact::files::source::Source;
    use bitexact::files::write::Dtype;
    use bitexact::support::element::Endian;
    let Some(_) = gpu::open_or_skip() else { return };
    let gpu = backend::gpu_backend().expect("a GPU that opened once opens again");
    for format in shared::Format::ALL {
        let size = format.bytes();
        // Over three staging chunks and a ragged fourth, so that both lanes are used
        // twice; finite by the reference, with non-finite values in the first, second
        // and last chunk, and a trailing partial element (ignored on both sides; a byte
        // is a whole element of the FP8 formats).
        let chunk = GPU_CHUNK_BYTES / size;
        let len = 3 * chunk + 12_345;
        let specials = bitexact::bench::non_finite_encodings(format);
        let mask = u64::MAX >> (64 - 8 * size);
        let mut bytes = Vec::with_capacity(len * size + 1);
        for i in 0..len {
            let bits = match [777, chunk + 5, len - 2].iter().position(|&j| j == i) {
                Some(k) => specials[k % specials.len()],
                None => {
                    let bits = scrambled(i as u64) & mask;
                    if bitexact::verify::reference::class(format, bits).is_finite() { bits } else { 0 }
                }
            };
            bytes.extend_from_slice(&bits.to_le_bytes()[..size]);
        }
        if size > 1 {
            bytes.push(0xFF);
        }
        // A misaligned view too: the data of a tensor need not start on an aligned address.
        let mut shifted = vec![0u8];
        shifted.extend_from_slice(&bytes);
        // And read on demand, as `scan` reads files.
        let read = |offset: u64, buf: &mut [u8]| {
            let offset = offset as usize;
            buf.copy_from_slice(&bytes[offset..offset + buf.len()]);
            Ok(())
        };
        let sources =
            [Source::Bytes(&bytes), Source::Bytes(&shifted[1..]), Source::Read { len: bytes.len(), read: &read }];
        for data in sources {
            let job = CountJob { format, endian: Endian::Little, data, progress: &|_| {} };
            let on_gpu = gpu.count(job).expect("gpu");
            let on_cpu = CpuBackend.count(job).expect("cpu");
            assert_eq!(on_gpu, on_cpu, "{}", format.name());
            assert_eq!((on_gpu.non_finite(), on_gpu.first_non_finite), (3, Some(777)), "{}", format.name());
        }
        // A tensor smaller than one chunk, after the big ones (the staging is reused).
        let small = Source::Bytes(&bytes[..1000 * size + 1]);
        let on_gpu =
            gpu.count(CountJob { format, endian: Endian::Little, data: small, progress: &|_| {} }).expect("gpu");
        assert_eq!((on_gpu.non_finite(), on_gpu.first_non_finite), (1, Some(777)), "{}", format.name());
    }
    // Conversions, every one `normalize` runs: one call of several staging chunks (both
    // lanes, each twice, a ragged last chunk), calls of the size `normalize` makes (cut in
    // four chunks), and misaligned samples.
    let bytes8: Vec<u8> = (0..3 * GPU_CHUNK_BYTES as u64 + 12_345).map(|i| scrambled(i) as u8).collect();
    let words: Vec<u16> = (0..(3 << 20) + 5).map(|i: u32| scrambled(u64::from(i)) as u16).chain(0..=u16::MAX).collect();
    let pieces8 = [&bytes8[..], &bytes8[1..], &bytes8[..1 << 20], &bytes8[7..3_000_008]];
    let pieces16 = [&words[..], &words[words.len() - 65_536..], &words[1..1 << 20]];
    let samples16 = pieces16.map(bytemuck::cast_slice::<u16, u8>);
    for dtype in Dtype::ALL {
        for (width, pieces) in [(SampleWidth::Unorm8, &pieces8[..]), (SampleWidth::Unorm16, &samples16[..])] {
            let conversion = conversion(width, dtype);
            for &samples in pieces {
                let n = samples.len() / conversion.in_bytes();
                let (mut a, mut b) = (vec![0u32; n], vec![0u32; n]);
                let bytes = n * conversion.out_bytes();
                gpu.convert(conversion, samples, &mut bytemuck::cast_slice_mut(&mut a)[..bytes]).expect("gpu");
                CpuBackend.convert(conversion, samples, &mut bytemuck::cast_slice_mut(&mut b)[..bytes]).expect("cpu");
                let first = first_difference(&a, &b);
                assert_eq!(first, None, "{conversion:?} of {n} samples: (word, gpu, cpu)");
            }
        }
    }
}

/// The staging lanes directly: chunks of any length (none, one element, a full lane)
/// come back in order, each with its own inputs and results, through one staging used
/// by both kernels in turn.
#[test]
fn staged_chunks_come_back_in_order_whatever_their_lengths() {
    use shared::Primitive;
    type Convert = shared::variants::unorm8_times3_int;
    type Count = shared::variants::f16_finite_exp_mask;
    let Some(gpu) = gpu::open_or_skip() else { return };
    let lane = 1 << 16;
    let mut staging = gpu.staging(lane, 4 * lane).expect("staging");
    let lengths = [lane, 0, 1, 7, lane - 1, 12_345, lane, 3];
    let input_of = |i: usize, j: usize| scrambled((i * lane + j) as u64);
    let mut seen = Vec::new();
    let module = gpu.module_for::<Convert>(KernelKind::Stream).expect("the baseline module");
    module
        .stream_staged::<Convert, GpuError>(
            &mut staging,
            lengths.len(),
            |i, input| {
                for (j, x) in input[..lengths[i]].iter_mut().enumerate() {
                    *x = input_of(i, j) as u8;
                }
                Ok(lengths[i])
            },
            |i, input, output| {
                assert_eq!((input.len(), output.len()), (lengths[i], lengths[i]), "chunk {i}");
                for (j, (&x, &y)) in input.iter().zip(output).enumerate() {
                    assert_eq!(x, input_of(i, j) as u8, "chunk {i} input {j}");
                    assert_eq!(y, Convert::apply(x).to_bits(), "chunk {i} result {j}");
                }
                seen.push(i);
                Ok(())
            },
        )
        .expect("staged conversion");
    assert_eq!(seen, (0..lengths.len()).collect::<Vec<_>>());
    // Counts: a NaN (0x7E00) at element i of chunk i, where the chunk has one.
    let mut found = Vec::new();
    module
        .count_staged::<Count, GpuError>(
            &mut staging,
            lengths.len(),
            |i, input| {
                for (j, x) in input[..lengths[i] / 2].iter_mut().enumerate() {
                    *x = if j == i { 0x7E00 } else { input_of(i, j) as u16 & 0x3FFF };
                }
                Ok(lengths[i] / 2)
            },
            |i, input, nonfinite| {
                assert_eq!(input.len(), lengths[i] / 2);
                found.push((i, nonfinite.count, nonfinite.first));
                Ok(())
            },
        )
        .expect("staged count");
    let expected: Vec<_> =
        (0..lengths.len()).map(|i| if i < lengths[i] / 2 { (i, 1, Some(i as u64)) } else { (i, 0, None) }).collect();
    assert_eq!(found, expected);
}

#[test]
fn every_kernel_in_the_ptx_loads() {
    let Some(gpu) = gpu::open_or_skip() else { return };
    // The names are the PTX's entries (the verify wing's `expected_kernels` test).
    for name in VARIANTS.iter().flat_map(Variant::kernels) {
        match gpu.load(name) {
            Err(GpuError::NeedsTarget { reason, .. }) => skip_or_fail(REQUIRE_GPU, format!("loading {name}: {reason}")),
            loaded => loaded.unwrap_or_else(|e| panic!("{e}")),
        }
    }
    // A kind the table does not give a variant is not in the PTX.
    let not_built = KernelName::of::<shared::variants::f16_is_nan>(KernelKind::Stream);
    assert!(matches!(gpu.load(not_built), Err(GpuError::KernelMissing { .. })));
}

/// Runs everywhere: without a GPU, opening one is a typed error, never a panic.
#[test]
fn opening_a_gpu_never_panics() {
    match Gpu::open(0) {
        Ok(gpu) => println!(
            "device 0: {} (sm_{}{})",
            gpu.info().name,
            gpu.info().compute_capability.0,
            gpu.info().compute_capability.1
        ),
        Err(e) => {
            assert!(e.is_unavailable(), "unexpected error without a GPU: {e}");
            println!("no GPU here: {e}");
        }
    }
    match Gpu::open(1 << 20) {
        Ok(_) => panic!("device 2^20 cannot exist"),
        Err(e) => assert!(e.is_unavailable(), "{e}"),
    }
}
