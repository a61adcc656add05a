//! `scan` and `normalize` through the library on real files made by the container and
//! image crates: exact counts and first indices in every dtype, and every output f32
//! bit-compared with the integer-arithmetic reference.

use test_fixtures as fixtures;

use crate::backend::CpuBackend;
use crate::normalize::image::{ChannelLayout, Image, ImageLimits, Samples};
use crate::normalize::png_rows::{PngOpen, PngRows, PngRowsError, SampleRun};
use crate::scan::BLOCK_BYTES;
use crate::write;
use bitexact_verify::reference::div_to_f32;
use image::{ImageBuffer, Luma, LumaA, Rgb, Rgba};
use std::path::Path;
use test_fixtures::{DTYPES, Rng};

/// Positions that straddle the group (256 elements) and block boundaries of the scan.
fn boundary_positions(n: usize, block_elements: usize) -> Vec<usize> {
    vec![5, 255, 256, 511, 4096, block_elements - 1, block_elements, block_elements + 1, n - 1]
}

#[test]
fn safetensors_counts_and_first_index_in_every_float_dtype() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("model.safetensors");
    let mut tensors = Vec::new();
    let mut expectations = Vec::new();
    for (seed, dtype) in DTYPES.iter().enumerate() {
        let block_elements = BLOCK_BYTES / dtype.bytes;
        let n = 2 * block_elements + 333;
        let cases = [
            ("spread", vec![n], boundary_positions(n, block_elements)),
            ("late", vec![4, n / 4], vec![block_elements + 7]),
            ("finite", vec![3, 5], vec![]),
        ];
        for (suffix, shape, positions) in cases {
            let count = shape.iter().product();
            let bits = fixtures::elements(dtype, count, &positions, seed as u64 * 31 + positions.len() as u64);
            let name = format!("{}_{suffix}", dtype.name);
            expectations.push((name.clone(), fixtures::expected(dtype, &bits)));
            tensors.push((name, dtype.safetensors, shape, fixtures::to_bytes(dtype, &bits, false)));
        }
    }
    tensors.push(("ids".into(), safetensors::Dtype::I32, vec![4], vec![0xFF; 16]));
    let borrowed: Vec<_> = tensors.iter().map(|(n, d, s, b)| (n.as_str(), *d, s.clone(), b.clone())).collect();
    fixtures::write_safetensors(&path, &borrowed);

    let report = super::scan(&path).unwrap();
    assert_eq!(report.len(), expectations.len() + 1);
    for (name, expected) in &expectations {
        let tensor = report.iter().find(|t| &t.name == name).unwrap();
        assert!(tensor.skipped.is_none());
        super::assert_counts(tensor, *expected, "safetensors");
        if name.ends_with("spread") {
            // E4M3's S.1111.000 is finite (256), so not every injection is non-finite there.
            let found = expected.nan + expected.pos_inf + expected.neg_inf;
            assert!(found >= 3 && expected.first <= Some(256), "{name}: injections missed: {expected:?}");
        }
    }
    let ids = report.iter().find(|t| t.name == "ids").unwrap();
    assert_eq!((ids.skipped, ids.counts.first_non_finite), (Some("integer dtype"), None));
}

/// A file that shrinks after its header was read (another program truncating it while
/// `scan` runs) is a one-line error naming the file and the tensor. Through a memory map
/// it killed the process with SIGBUS.
#[test]
fn a_file_truncated_during_a_scan_is_an_error_naming_it() {
    use crate::read::TensorFile;
    use crate::scan::report::Report;
    use bitexact_support::progress::Progress;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shrinking.safetensors");
    let elements = 3 * BLOCK_BYTES / 4 + 5;
    fixtures::write_safetensors(&path, &[("x", safetensors::Dtype::F32, vec![elements], vec![0; 4 * elements])]);
    let files = [TensorFile::open(&path).unwrap()];
    let data_start = files[0].tensors[0].data.start as u64;
    // Inside the last block, at a block boundary, inside the header.
    for new_len in [data_start + 2 * BLOCK_BYTES as u64 + 3, data_start + BLOCK_BYTES as u64, 10] {
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(new_len).unwrap();
        let error = Report::scan(&files, &CpuBackend, &Progress::new(0, "test")).map(|_| ()).unwrap_err().to_string();
        let expected = format!(
            "{}: tensor 'x': file shrank while being read (now {new_len} bytes, {} needed): truncated by another program?",
            path.display(),
            data_start + 4 * elements as u64
        );
        assert_eq!(error, expected);
    }
}

/// Between the header check of every file and the scan, a file renamed over or removed
/// is an error naming it, never a scan of bytes the header does not describe.
#[test]
fn a_file_replaced_or_removed_after_its_header_was_read_is_an_error() {
    use crate::read::TensorFile;
    use crate::scan::report::Report;
    use bitexact_support::progress::Progress;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("model.safetensors");
    let other = dir.path().join("other.safetensors");
    let write = |path: &Path, bytes: Vec<u8>| {
        fixtures::write_safetensors(path, &[("x", safetensors::Dtype::F32, vec![1], bytes)])
    };
    write(&path, vec![0; 4]);
    let files = [TensorFile::open(&path).unwrap()];
    write(&other, f32::NAN.to_le_bytes().to_vec());
    std::fs::rename(&other, &path).unwrap();
    let error = Report::scan(&files, &CpuBackend, &Progress::new(0, "test")).map(|_| ()).unwrap_err().to_string();
    assert_eq!(error, format!("{}: replaced by another file after its header was read", path.display()));
    std::fs::remove_file(&path).unwrap();
    let error = Report::scan(&files, &CpuBackend, &Progress::new(0, "test")).map(|_| ()).unwrap_err().to_string();
    assert_eq!(
        error,
        format!("{}: cannot open again after its header was read: no such file or directory", path.display())
    );
}

#[test]
fn npy_counts_in_both_byte_orders() {
    let dir = tempfile::tempdir().unwrap();
    for (seed, dtype) in DTYPES.iter().filter(|d| d.npy.is_some()).enumerate() {
        for big_endian in [false, true] {
            let block_elements = BLOCK_BYTES / dtype.bytes;
            let n = block_elements + 100;
            let bits = fixtures::elements(dtype, n, &boundary_positions(n, block_elements)[1..], seed as u64 + 7);
            let path = dir.path().join(format!("{}_{big_endian}.npy", dtype.name));
            fixtures::write_npy(&path, dtype, &[n as u64 / 4, 4], &bits, big_endian);

            let report = super::scan(&path).unwrap();
            let tensor = &report[0];
            assert_eq!(tensor.shape[..], [n as u64 / 4, 4]);
            super::assert_counts(tensor, fixtures::expected(dtype, &bits), &path.display().to_string());
            assert_eq!(tensor.counts.first_non_finite, Some(255));
        }
    }
}

#[test]
fn npy_integer_and_bool_arrays_are_listed_not_scanned() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ints.npy");
    fixtures::write_npy_items(&path, npyz::DType::Plain("<i8".parse().unwrap()), &[3], [1i64, -2, 3]);
    let report = super::scan(&path).unwrap();
    assert_eq!(report[0].skipped, Some("integer dtype"));
    let path = dir.path().join("mask.npy");
    fixtures::write_npy_items(&path, npyz::DType::Plain("|b1".parse().unwrap()), &[3], [true, false, true]);
    let report = super::scan(&path).unwrap();
    assert_eq!(report[0].skipped, Some("bool dtype"));
}

#[test]
fn safetensors_integer_and_bool_tensors_are_listed_not_scanned() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ids_and_mask.safetensors");
    fixtures::write_safetensors(
        &path,
        &[
            ("ids", safetensors::Dtype::U8, vec![2], vec![1, 2]),
            ("mask", safetensors::Dtype::BOOL, vec![2], vec![0, 1]),
        ],
    );
    let report = super::scan(&path).unwrap();
    let skipped: Vec<_> = report.iter().map(|t| (t.name.as_ref(), t.skipped)).collect();
    assert_eq!(skipped, [("ids", Some("integer dtype")), ("mask", Some("bool dtype"))]);
}

/// The correctly rounded `x / den` from integer arithmetic.
fn reference(x: u64, den: u64) -> f32 {
    div_to_f32(x, den).unwrap()
}

/// Compares `out` (in `layout`) with the reference of every sample of `samples`
/// (interleaved, `channels` per pixel of a `width`-wide image).
fn assert_exact(out: &[f32], samples: &[u64], channels: usize, width: usize, layout: ChannelLayout, den: u64) {
    let pixels = samples.len() / channels;
    assert_eq!(out.len(), samples.len());
    for (i, &s) in samples.iter().enumerate() {
        let (pixel, c) = (i / channels, i % channels);
        let at = match layout {
            ChannelLayout::Hwc => i,
            ChannelLayout::Chw => c * pixels + pixel,
        };
        assert_eq!(
            out[at].to_bits(),
            reference(s, den).to_bits(),
            "sample {s} (pixel {}, {}, channel {c}) at output index {at}: got {:#010x}, want {:#010x}",
            pixel % width,
            pixel / width,
            out[at].to_bits(),
            reference(s, den).to_bits()
        );
    }
}

/// Decodes `path` and converts it in both layouts, checking shape and every bit; then
/// the same through [`Image::open`], which streams a PNG in HWC order.
fn check_image(path: &Path, samples: &[u64], channels: u8, width: u32, height: u32, den: u64) {
    let image = Image::decode(path, ImageLimits::default()).unwrap();
    assert_eq!((image.channels, image.width, image.height), (channels, width, height));
    for layout in [ChannelLayout::Hwc, ChannelLayout::Chw] {
        let (h, w, c) = (u64::from(height), u64::from(width), u64::from(channels));
        let shape = if layout == ChannelLayout::Hwc { vec![h, w, c] } else { vec![c, h, w] };
        assert_eq!(image.shape(layout), shape);
        let out = image.to_f32(layout, &CpuBackend).unwrap();
        assert_exact(&out, samples, usize::from(channels), width as usize, layout, den);
        let opened = Image::open(path, layout, ImageLimits::default()).unwrap();
        // A PNG is streamed in HWC order unless interlaced (IHDR's last byte, at 28).
        let bytes = std::fs::read(path).unwrap();
        let row_by_row = bytes.starts_with(b"\x89PNG") && bytes[28] == 0;
        let streamed = matches!(opened.samples, Samples::PngRows(_));
        assert_eq!(streamed, row_by_row && layout == ChannelLayout::Hwc, "{layout:?}: streamed");
        assert_eq!(
            (opened.channels, opened.width, opened.height, opened.bits()),
            (channels, width, height, image.bits())
        );
        let out = opened.to_f32(layout, &CpuBackend).unwrap();
        assert_exact(&out, samples, usize::from(channels), width as usize, layout, den);
    }
}

fn random_samples(n: usize, max: u64, seed: u64) -> Vec<u64> {
    let mut rng = Rng::new(seed);
    (0..n).map(|_| rng.next() % (max + 1)).collect()
}

#[test]
fn png_8_bit_grey_every_value_exact() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("grey8.png");
    let samples: Vec<u64> = (0..256).collect();
    let raw: Vec<u8> = samples.iter().map(|&s| s as u8).collect();
    ImageBuffer::<Luma<u8>, _>::from_raw(16, 16, raw).unwrap().save(&path).unwrap();
    check_image(&path, &samples, 1, 16, 16, 255);
}

#[test]
fn png_8_bit_grey_alpha_rgb_rgba_exact() {
    let dir = tempfile::tempdir().unwrap();
    let (w, h) = (7, 5);
    for channels in 2u8..=4 {
        let samples = random_samples((w * h) as usize * usize::from(channels), 255, u64::from(channels));
        let raw: Vec<u8> = samples.iter().map(|&s| s as u8).collect();
        let path = dir.path().join(format!("c{channels}.png"));
        match channels {
            2 => ImageBuffer::<LumaA<u8>, _>::from_raw(w, h, raw).unwrap().save(&path),
            3 => ImageBuffer::<Rgb<u8>, _>::from_raw(w, h, raw).unwrap().save(&path),
            _ => ImageBuffer::<Rgba<u8>, _>::from_raw(w, h, raw).unwrap().save(&path),
        }
        .unwrap();
        check_image(&path, &samples, channels, w, h, 255);
    }
}

#[test]
fn png_16_bit_grey_every_value_exact() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("grey16.png");
    let samples: Vec<u64> = (0..65536).collect();
    let raw: Vec<u16> = samples.iter().map(|&s| s as u16).collect();
    ImageBuffer::<Luma<u16>, _>::from_raw(256, 256, raw).unwrap().save(&path).unwrap();
    check_image(&path, &samples, 1, 256, 256, 65535);
}

#[test]
fn png_16_bit_grey_alpha_and_rgb_exact() {
    let dir = tempfile::tempdir().unwrap();
    let (w, h) = (11, 6);
    for channels in [2u8, 3] {
        let samples = random_samples((w * h) as usize * usize::from(channels), 65535, 40 + u64::from(channels));
        let raw: Vec<u16> = samples.iter().map(|&s| s as u16).collect();
        let path = dir.path().join(format!("c{channels}_16.png"));
        match channels {
            2 => ImageBuffer::<LumaA<u16>, _>::from_raw(w, h, raw).unwrap().save(&path),
            _ => ImageBuffer::<Rgb<u16>, _>::from_raw(w, h, raw).unwrap().save(&path),
        }
        .unwrap();
        check_image(&path, &samples, channels, w, h, 65535);
    }
}

#[test]
fn png_16_bit_rgba_exact() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rgba16.png");
    let (w, h) = (9, 4);
    let samples = random_samples((w * h * 4) as usize, 65535, 99);
    let raw: Vec<u16> = samples.iter().map(|&s| s as u16).collect();
    ImageBuffer::<Rgba<u16>, _>::from_raw(w, h, raw).unwrap().save(&path).unwrap();
    check_image(&path, &samples, 4, w, h, 65535);
}

#[test]
fn jpeg_exact_against_its_decoded_samples() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("photo.jpg");
    let (w, h) = (24, 16);
    let raw: Vec<u8> = random_samples((w * h * 3) as usize, 255, 5).iter().map(|&s| s as u8).collect();
    ImageBuffer::<Rgb<u8>, _>::from_raw(w, h, raw).unwrap().save(&path).unwrap();
    let decoded: Vec<u64> = image::open(&path).unwrap().into_rgb8().into_raw().into_iter().map(u64::from).collect();
    check_image(&path, &decoded, 3, w, h, 255);
}

#[test]
fn written_tensors_read_back_bit_for_bit() {
    let dir = tempfile::tempdir().unwrap();
    let shape = [2u64, 3, 4];
    let values: Vec<f32> = (0..24u64).map(|x| reference(x * 10, 255)).collect();
    let npy = dir.path().join("t.npy");
    let st = dir.path().join("t.safetensors");
    write::write_f32(&npy, "image", &shape, &values, false).unwrap();
    write::write_f32(&st, "image", &shape, &values, false).unwrap();

    let bytes = std::fs::read(&npy).unwrap();
    let file = npyz::NpyFile::new(&bytes[..]).unwrap();
    assert_eq!(file.shape(), shape);
    assert_eq!(file.dtype(), npyz::DType::Plain("<f4".parse().unwrap()));
    let back: Vec<f32> = file.into_vec().unwrap();
    assert_eq!(
        back.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
        values.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
    );

    let bytes = std::fs::read(&st).unwrap();
    let tensors = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let view = tensors.tensor("image").unwrap();
    assert_eq!((view.dtype(), view.shape()), (safetensors::Dtype::F32, &[2usize, 3, 4][..]));
    let back: Vec<u32> = view.data().as_chunks::<4>().0.iter().map(|&b| u32::from_le_bytes(b)).collect();
    assert_eq!(back, values.iter().map(|x| x.to_bits()).collect::<Vec<_>>());
}

#[test]
fn written_outputs_are_atomic_and_never_clobber() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.npy");
    std::fs::write(&out, b"keep me").unwrap();
    let err = write::write_f32(&out, "image", &[1], &[0.5], false).unwrap_err().to_string();
    assert!(err.contains("already exists"), "{err}");
    assert_eq!(std::fs::read(&out).unwrap(), b"keep me");
    write::write_f32(&out, "image", &[1], &[0.5], true).unwrap();
    assert_ne!(std::fs::read(&out).unwrap(), b"keep me");
    let err = write::write_f32(&dir.path().join("t.png"), "image", &[1], &[0.5], false).unwrap_err().to_string();
    assert!(err.contains("unknown output extension"), "{err}");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers, [std::ffi::OsString::from("t.npy")], "no temporary file may be left behind");
}

#[test]
fn the_reserved_safetensors_key_is_refused_as_a_tensor_name() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.safetensors");
    let err = write::write_f32(&out, "__metadata__", &[1], &[0.5], false).unwrap_err().to_string();
    assert!(err.contains("reserved"), "{err}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing may be written");
    write::write_f32(&dir.path().join("t.npy"), "__metadata__", &[1], &[0.5], false).unwrap();
}

#[test]
fn conversion_kernels_match_the_reference_on_every_input() {
    use crate::backend::convert_slices;
    use crate::normalize::image::{SampleWidth, conversion};
    use crate::write::Dtype;
    let bytes: Vec<u8> = (0..=255).collect();
    let mut out = vec![0.0f32; 256];
    convert_slices(&CpuBackend, conversion(SampleWidth::Unorm8, Dtype::F32), &bytes, &mut out).unwrap();
    assert_exact(&out, &(0..256).collect::<Vec<_>>(), 1, 256, ChannelLayout::Hwc, 255);
    let words: Vec<u16> = (0..=65535).collect();
    let mut out = vec![0.0f32; 65536];
    convert_slices(&CpuBackend, conversion(SampleWidth::Unorm16, Dtype::F32), &words, &mut out).unwrap();
    assert_exact(&out, &(0..65536).collect::<Vec<_>>(), 1, 256, ChannelLayout::Hwc, 65535);
}

#[test]
fn the_16_bit_float_conversions_of_every_backend_entry_match_the_reference_on_every_code() {
    use crate::backend::convert_slices;
    use crate::normalize::image::{SampleWidth, conversion};
    use crate::write::Dtype;
    use bitexact_verify::reference::{BFLOAT16, BINARY16, NarrowFormat, unorm_to_narrow_bits};
    let check = |format: NarrowFormat, bits: u32, out: &[u16], what: &str| {
        for (code, &got) in out.iter().enumerate() {
            let want = unorm_to_narrow_bits(format, bits, code as u64);
            assert_eq!(u64::from(got), want, "{what}: code {code}: got {got:#06x}, want {want:#06x}");
        }
    };
    let bytes: Vec<u8> = (0..=255).collect();
    let mut out = vec![0u16; bytes.len()];
    convert_slices(&CpuBackend, conversion(SampleWidth::Unorm8, Dtype::F16), &bytes, &mut out).unwrap();
    check(BINARY16, 8, &out, "UNORM8 -> f16");
    convert_slices(&CpuBackend, conversion(SampleWidth::Unorm8, Dtype::Bf16), &bytes, &mut out).unwrap();
    check(BFLOAT16, 8, &out, "UNORM8 -> bf16");
    let words: Vec<u16> = (0..=65535).collect();
    let mut out = vec![0u16; words.len()];
    convert_slices(&CpuBackend, conversion(SampleWidth::Unorm16, Dtype::F16), &words, &mut out).unwrap();
    check(BINARY16, 16, &out, "UNORM16 -> f16");
    convert_slices(&CpuBackend, conversion(SampleWidth::Unorm16, Dtype::Bf16), &words, &mut out).unwrap();
    check(BFLOAT16, 16, &out, "UNORM16 -> bf16");
}

#[test]
fn normalized_chunks_of_any_size_and_start_match_the_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rgb.png");
    let (w, h) = (13, 7);
    let raw: Vec<u8> = random_samples((w * h * 3) as usize, 255, 21).iter().map(|&s| s as u8).collect();
    ImageBuffer::<Rgb<u8>, _>::from_raw(w, h, raw).unwrap().save(&path).unwrap();
    let image = Image::decode(&path, ImageLimits::default()).unwrap();
    for layout in [ChannelLayout::Hwc, ChannelLayout::Chw] {
        let whole = image.to_f32(layout, &CpuBackend).unwrap();
        let source = image.normalized(layout, &CpuBackend);
        // Chunks that start and end inside planes, across plane boundaries, one sample.
        for chunk in [1, 5, 90, 91, 92, 200, whole.len()] {
            let mut pieces = Vec::new();
            for start in (0..whole.len()).step_by(chunk) {
                let mut out = vec![0.0; chunk.min(whole.len() - start)];
                write::TensorSource::fill(&source, start as u64, &mut out).unwrap();
                pieces.extend(out);
            }
            assert_eq!(bits(&pieces), bits(&whole), "{layout:?}, chunks of {chunk}");
        }
        let mut past_the_end = vec![0.0; 2];
        assert!(write::TensorSource::fill(&source, whole.len() as u64 - 1, &mut past_the_end).is_err());
    }
}

fn bits(values: &[f32]) -> Vec<u32> {
    values.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn written_safetensors_are_what_the_crate_writes_and_large_tensors_stream() {
    let dir = tempfile::tempdir().unwrap();
    let values: Vec<f32> = (0..24u64).map(|x| reference(x * 10, 255)).collect();
    let ours = dir.path().join("ours.safetensors");
    write::write_f32(&ours, "a \"quoted\" name", &[2, 3, 4], &values, false).unwrap();
    let view = safetensors::tensor::TensorView::new(
        safetensors::Dtype::F32,
        vec![2, 3, 4],
        bytemuck::cast_slice::<f32, u8>(&values),
    )
    .unwrap();
    let theirs = safetensors::serialize([("a \"quoted\" name", view)], None).unwrap();
    assert_eq!(std::fs::read(&ours).unwrap(), theirs);

    // More values than one write chunk, and not a multiple of it.
    let n = 2 * write::WRITE_CHUNK_ELEMENTS + 333;
    let values: Vec<f32> = (0..n).map(|i| reference(i as u64 % 65536, 65535)).collect();
    for name in ["big.npy", "big.safetensors"] {
        let path = dir.path().join(name);
        write::write_f32(&path, "x", &[n as u64], &values, false).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let back: Vec<f32> = if name.ends_with("npy") {
            npyz::NpyFile::new(&bytes[..]).unwrap().into_vec().unwrap()
        } else {
            let tensors = safetensors::SafeTensors::deserialize(&bytes).unwrap();
            bytemuck::pod_collect_to_vec(tensors.tensor("x").unwrap().data())
        };
        assert_eq!(bits(&back), bits(&values), "{name}");
    }
    let err = write::write_f32(&dir.path().join("wrong.npy"), "x", &[2, 2], &[0.5; 3], false).unwrap_err().to_string();
    assert!(err.contains("does not hold 3 values"), "{err}");
}

/// Every sample of a [`PngRows`] of `path` with bands of `band` samples, read in
/// consecutive runs of `chunk`, widened to u64.
fn streamed_samples(path: &Path, band: usize, chunk: usize) -> (u8, u32, Vec<u64>) {
    let PngOpen::Rows(rows) = PngRows::open(path, band).unwrap() else { panic!("{}: not streamed", path.display()) };
    let total = rows.samples() as usize;
    let mut got = vec![u64::MAX; total];
    for start in (0..total).step_by(chunk) {
        let len = chunk.min(total - start);
        rows.read::<PngRowsError>(start as u64, len, |at, run| {
            let out = &mut got[start + at..];
            match run {
                SampleRun::Unorm8(s) => s.iter().zip(out).for_each(|(&s, o)| *o = u64::from(s)),
                SampleRun::Unorm16(s) => s.iter().zip(out).for_each(|(&s, o)| *o = u64::from(s)),
            }
            Ok(())
        })
        .unwrap();
    }
    (rows.channels, rows.bits, got)
}

/// The samples the `image` crate decodes from `path`, widened to u64, with the
/// channel count and bits: an independent decode (`normalize` decodes PNGs with the
/// `png` crate itself).
fn image_crate_samples(path: &Path) -> (u8, u32, Vec<u64>) {
    let decoded = image::open(path).unwrap();
    let channels = decoded.color().channel_count();
    let bits = u32::from(decoded.color().bytes_per_pixel() / channels) * 8;
    let samples = match bits {
        8 => decoded.into_bytes().into_iter().map(u64::from).collect(),
        _ => bytemuck::pod_collect_to_vec::<u8, u16>(&decoded.into_bytes()).into_iter().map(u64::from).collect(),
    };
    (channels, bits, samples)
}

/// The samples [`Image::decode`] decodes from `path` whole, widened to u64, with the
/// channel count and bits.
fn decoded_samples(path: &Path) -> (u8, u32, Vec<u64>) {
    let image = Image::decode(path, ImageLimits::default()).unwrap();
    let samples = match &image.samples {
        Samples::Unorm8(s) => s.iter().map(|&s| u64::from(s)).collect(),
        Samples::Unorm16(s) => s.iter().map(|&s| u64::from(s)).collect(),
        Samples::PngRows(_) => unreachable!("decode decodes whole"),
    };
    (image.channels, image.bits(), samples)
}

#[test]
fn streamed_png_samples_are_the_image_crates_for_every_kind_of_png() {
    use png::{BitDepth as B, ColorType as C};
    let dir = tempfile::tempdir().unwrap();
    let (w, h) = (13u32, 9u32);
    let palette: Vec<u8> = (0..16 * 3).map(|i| (i * 37 % 256) as u8).collect();
    /// Colour type, bit depth, palette, `tRNS`.
    type Kind<'a> = (C, B, Option<&'a [u8]>, Option<&'a [u8]>);
    let kinds: [Kind; 14] = [
        (C::Grayscale, B::One, None, None),
        (C::Grayscale, B::Two, None, None),
        (C::Grayscale, B::Four, None, None),
        (C::Grayscale, B::Eight, None, None),
        (C::Grayscale, B::Eight, None, Some(&[0, 7])),
        (C::Grayscale, B::Sixteen, None, None),
        (C::GrayscaleAlpha, B::Eight, None, None),
        (C::GrayscaleAlpha, B::Sixteen, None, None),
        (C::Rgb, B::Eight, None, None),
        (C::Rgb, B::Sixteen, None, Some(&[0, 1, 0, 2, 0, 3])),
        (C::Rgba, B::Eight, None, None),
        (C::Rgba, B::Sixteen, None, None),
        (C::Indexed, B::Four, Some(&palette), None),
        (C::Indexed, B::Eight, Some(&palette), Some(&[0, 128, 255])),
    ];
    for (i, (color, depth, palette, trns)) in kinds.into_iter().enumerate() {
        let bits_per_pixel = color.samples() * depth as usize;
        let row_bytes = (w as usize * bits_per_pixel).div_ceil(8);
        let mut raw: Vec<u8> =
            random_samples(row_bytes * h as usize, 255, 70 + i as u64).iter().map(|&s| s as u8).collect();
        if (color, depth) == (C::Indexed, B::Eight) {
            raw.iter_mut().for_each(|b| *b &= 0x0F); // indices into the 16 colours
        }
        let path = dir.path().join(format!("kind{i}.png"));
        fixtures::png_file(&path, (w, h), (color, depth), palette, trns, &raw);
        let want = image_crate_samples(&path);
        assert!(decoded_samples(&path) == want, "{color:?} {depth:?}: decoded whole");
        let samples = want.2.len();
        let row = samples / h as usize;
        for band in [1, 7, row - 1, row, row + 1, samples, 1 << 20] {
            for chunk in [1, 5, row, band.min(samples), samples] {
                let got = streamed_samples(&path, band, chunk);
                assert!(
                    got == want,
                    "{color:?} {depth:?} (trns {}): bands of {band}, chunks of {chunk}",
                    trns.is_some()
                );
            }
        }
    }
}

#[test]
fn streamed_png_samples_are_read_once_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("grey.png");
    let raw: Vec<u8> = (0..=255).collect();
    ImageBuffer::<Luma<u8>, _>::from_raw(16, 16, raw).unwrap().save(&path).unwrap();
    let PngOpen::Rows(rows) = PngRows::open(&path, 10).unwrap() else { panic!("not streamed") };
    let ignore = |_: usize, _: SampleRun<'_>| Ok::<(), PngRowsError>(());
    rows.read(0, 25, ignore).unwrap();
    // 20..30 lies in the band being read; 0.. and 15.. lie in bands already spent.
    rows.read(25, 5, ignore).unwrap();
    assert!(matches!(rows.read(15, 5, ignore), Err(PngRowsError::Unordered { start: 15 })));
    assert!(matches!(rows.read(250, 7, ignore), Err(PngRowsError::OutOfRange { start: 250 })));
    rows.read(250, 6, ignore).unwrap();
    // A CHW chunk of a streamed image is refused, not made up.
    let image = Image::open(&path, ChannelLayout::Hwc, ImageLimits::default()).unwrap();
    let mut out = vec![0.0f32; 4];
    let chw = image.normalized(ChannelLayout::Chw, &CpuBackend);
    assert!(write::TensorSource::fill(&chw, 0, &mut out).is_err());
}

#[test]
fn a_streamed_png_dropped_half_read_stops_its_decoder() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rgb.png");
    let (w, h) = (64u32, 64u32);
    let raw: Vec<u8> = random_samples((w * h * 3) as usize, 255, 3).iter().map(|&s| s as u8).collect();
    ImageBuffer::<Rgb<u8>, _>::from_raw(w, h, raw).unwrap().save(&path).unwrap();
    // Bands of 16 samples: the decoder is blocked on a full queue when the reader goes.
    let PngOpen::Rows(rows) = PngRows::open(&path, 16).unwrap() else { panic!("not streamed") };
    rows.read(0, 20, |_, _| Ok::<(), PngRowsError>(())).unwrap();
    drop(rows); // joins the decoder: returning at all is the test
    let PngOpen::Rows(rows) = PngRows::open(&path, 16).unwrap() else { panic!("not streamed") };
    drop(rows);
}

#[test]
fn an_interlaced_png_is_decoded_whole_with_the_same_samples() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("adam7.png");
    let (w, h) = (21u32, 11u32);
    let samples = random_samples((w * h * 3) as usize, 255, 17);
    let raw: Vec<u8> = samples.iter().map(|&s| s as u8).collect();
    fixtures::adam7_rgb_png(&path, w, h, &raw);
    assert!(matches!(PngRows::open(&path, 100).unwrap(), PngOpen::Interlaced));
    // The image crate decodes it to the pixels written: the file is made right.
    assert_eq!(image_crate_samples(&path), (3, 8, samples.clone()));
    assert_eq!(decoded_samples(&path), (3, 8, samples.clone()));
    check_image(&path, &samples, 3, w, h, 255);
}
