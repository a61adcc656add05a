//! `bitexact normalize` on images that once came out wrong with exit 0: PNMs whose
//! `maxval` is not 255 or 65535, truncated JPEGs (baseline, with restart markers,
//! progressive), images over the pixel limit (decompression bombs) in both layouts, and
//! the text of a PNG CRC error.

use crate::common;

use bitexact::verify::reference::{BFLOAT16, BINARY16, NarrowFormat, Rounded, div_to_f32, div_to_narrow};
use common::{bitexact, path_arg};
use std::path::{Path, PathBuf};
use std::process::Output;

/// Asserts exit 2, nothing on stdout, one stderr line naming `path` and saying `problem`.
fn assert_fails(output: &Output, path: &Path, problem: &str) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{}: stderr: {stderr}", path.display());
    assert!(output.stdout.is_empty(), "stdout: {}", String::from_utf8_lossy(&output.stdout));
    assert_eq!(stderr.lines().count(), 1, "one line expected: {stderr}");
    assert!(stderr.starts_with(&format!("bitexact: {}: ", path.display())), "{stderr}");
    assert!(stderr.contains(problem), "{stderr:?} should mention {problem:?}");
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();
    names
}

/// A PNM: `magic` (P2, P3, P5, P6), `width × height`, `samples` (plain decimal or
/// binary: bytes below maxval 256, big-endian words from 256).
fn pnm(path: &Path, magic: &str, (width, height): (u32, u32), maxval: u32, samples: &[u32]) {
    let mut file = format!("{magic}\n# a comment\n{width} {height}\n{maxval}\n").into_bytes();
    match magic {
        "P2" | "P3" => {
            let text: Vec<String> = samples.iter().map(u32::to_string).collect();
            file.extend(text.join(" ").into_bytes());
            file.push(b'\n');
        }
        _ if maxval < 256 => file.extend(samples.iter().map(|&s| s as u8)),
        _ => file.extend(samples.iter().flat_map(|&s| (s as u16).to_be_bytes())),
    }
    std::fs::write(path, file).unwrap();
}

/// A PAM (P7) of `depth` samples per pixel, binary.
fn pam(path: &Path, (width, height): (u32, u32), depth: u32, maxval: u32, tupltype: &str, samples: &[u32]) {
    let header =
        format!("P7\nWIDTH {width}\nHEIGHT {height}\nDEPTH {depth}\nMAXVAL {maxval}\nTUPLTYPE {tupltype}\nENDHDR\n");
    let mut file = header.into_bytes();
    if maxval < 256 {
        file.extend(samples.iter().map(|&s| s as u8));
    } else {
        file.extend(samples.iter().flat_map(|&s| (s as u16).to_be_bytes()));
    }
    std::fs::write(path, file).unwrap();
}

/// The reference encoding of `v / m` in `format`.
fn narrow(format: NarrowFormat, v: u32, m: u32) -> u16 {
    match div_to_narrow(format, u64::from(v), u64::from(m)) {
        Rounded::Finite(encoding) => encoding as u16,
        Rounded::Overflow => unreachable!("a quotient at most 1"),
    }
}

/// The values of the one tensor in a `.npy` (f32) or `.safetensors` (16-bit) output, as
/// bits, with its shape.
fn output_bits(path: &Path) -> (Vec<u64>, Vec<u64>) {
    let bytes = std::fs::read(path).unwrap();
    if path.extension().is_some_and(|e| e == "npy") {
        let file = npyz::NpyFile::new(&bytes[..]).unwrap();
        let shape = file.shape().to_vec();
        let values: Vec<f32> = file.into_vec().unwrap();
        (shape, values.iter().map(|v| u64::from(v.to_bits())).collect())
    } else {
        let tensors = safetensors::SafeTensors::deserialize(&bytes).unwrap();
        let tensor = tensors.tensor("image").unwrap();
        let shape = tensor.shape().iter().map(|&d| d as u64).collect();
        (shape, tensor.data().as_chunks::<2>().0.iter().map(|&b| u64::from(u16::from_le_bytes(b))).collect())
    }
}

#[test]
fn a_pnm_of_any_maxval_gives_every_code_over_its_maxval_correctly_rounded() {
    let dir = tempfile::tempdir().unwrap();
    // (magic, maxval, channels): the red team's greymaps, pixmaps, plain and binary,
    // PAM with 2 and 4 channels, 8- and 16-bit storage, and the table's 255 and 65535.
    let cases: [(&str, u32, u32); 13] = [
        ("P5", 100, 1),
        ("P5", 1000, 1),
        ("P5", 1023, 1),
        ("P5", 4095, 1),
        ("P5", 1, 1),
        ("P2", 100, 1),
        ("P3", 1023, 3),
        ("P6", 7, 3),
        ("P6", 4095, 3),
        ("P7", 300, 2),
        ("P7", 200, 4),
        ("P5", 255, 1),
        ("P5", 65535, 1),
    ];
    for (magic, maxval, channels) in cases {
        // Every code once (then again from 0), over whole pixels of an 8-wide image.
        let pixels = (maxval + 1).div_ceil(channels).div_ceil(8) * 8;
        let samples: Vec<u32> = (0..pixels * channels).map(|i| i % (maxval + 1)).collect();
        let (width, height) = (8, pixels / 8);
        let name = format!("{magic}_{maxval}_{channels}");
        let path = dir.path().join(format!("{name}.pnm"));
        match (magic, channels) {
            ("P7", 2) => pam(&path, (width, height), 2, maxval, "GRAYSCALE_ALPHA", &samples),
            ("P7", _) => pam(&path, (width, height), 4, maxval, "RGB_ALPHA", &samples),
            _ => pnm(&path, magic, (width, height), maxval, &samples),
        }
        for (dtype, extension) in [("f32", "npy"), ("f16", "safetensors"), ("bf16", "safetensors")] {
            let out = dir.path().join(format!("{name}_{dtype}.{extension}"));
            let output = bitexact(&["normalize", path_arg(&path), "-o", path_arg(&out), "--dtype", dtype]);
            let stdout = String::from_utf8_lossy(&output.stdout);
            assert_eq!(output.status.code(), Some(0), "{name} {dtype}: {output:?}");
            assert!(stdout.contains(&format!(": exact x/{maxval}, on ")), "{name} {dtype}: {stdout}");
            let (shape, got) = output_bits(&out);
            assert_eq!(shape, [u64::from(height), u64::from(width), u64::from(channels)], "{name} {dtype}");
            let want = |v: u32| -> u64 {
                match dtype {
                    "f32" if v == 0 => 0,
                    "f32" => u64::from(div_to_f32(u64::from(v), u64::from(maxval)).unwrap().to_bits()),
                    "f16" => u64::from(narrow(BINARY16, v, maxval)),
                    _ => u64::from(narrow(BFLOAT16, v, maxval)),
                }
            };
            let wrong = samples.iter().zip(&got).position(|(&v, &g)| g != want(v));
            assert_eq!(wrong.map(|i| (samples[i], got[i], want(samples[i]))), None, "{name} {dtype}: (v, got, want)");
        }
    }
}

#[test]
fn a_pnm_sample_above_its_maxval_missing_or_malformed_is_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cases: [(&str, &str, u32, Vec<u32>, &str); 6] = [
        ("over8.pgm", "P5", 100, vec![0, 50, 101, 7], "sample 2 is 101, above the header's maxval 100"),
        ("over16.pgm", "P5", 1000, vec![1000, 1001, 0, 0], "sample 1 is 1001, above the header's maxval 1000"),
        ("overplain.ppm", "P3", 4095, vec![0; 11].into_iter().chain([4096]).collect(), "sample 11 is 4096"),
        ("short.pgm", "P5", 100, vec![1, 2, 3], "ends after 3 of its 4 samples"),
        ("short16.pgm", "P5", 1023, vec![1, 2, 3], "ends after 3 of its 4 samples"),
        ("shortplain.pgm", "P2", 100, vec![1, 2], "ends after 2 of its 4 samples"),
    ];
    for (name, magic, maxval, samples, problem) in &cases {
        let path = d.join(name);
        let channels = if *magic == "P3" { 3 } else { 1 };
        let (width, height) = (2, (samples.len().max(4) / 2 / channels) as u32);
        pnm(&path, magic, (width, height), *maxval, samples);
        let out = d.join("out.npy");
        for layout in ["hwc", "chw"] {
            let output = bitexact(&["normalize", path_arg(&path), "-o", path_arg(&out), "--layout", layout]);
            assert_fails(&output, &path, problem);
        }
    }
    let letters = d.join("letters.pgm");
    std::fs::write(&letters, b"P2\n2 2\n100\n1 2 x3 4\n").unwrap();
    assert_fails(
        &bitexact(&["normalize", path_arg(&letters), "-o", path_arg(&d.join("out.npy"))]),
        &letters,
        "sample 2 is not a decimal",
    );
    let mut expected: Vec<String> = cases.iter().map(|c| c.0.to_string()).chain(["letters.pgm".into()]).collect();
    expected.sort();
    assert_eq!(names(d), expected, "no output and no temporary file");
}

/// A 300 × 300 RGB JPEG from the `image` crate's (baseline) encoder.
fn baseline_jpeg(path: &Path) {
    let image = image::RgbImage::from_fn(300, 300, |x, y| {
        image::Rgb([(x % 256) as u8, (y % 256) as u8, ((x * y) % 251) as u8])
    });
    image.save(path).unwrap();
}

/// Where the first scan's entropy-coded data starts: after the SOS marker and its header.
fn first_scan_data(bytes: &[u8]) -> usize {
    let sos = bytes.windows(2).position(|w| w == [0xFF, 0xDA]).expect("an SOS marker");
    sos + 2 + usize::from(u16::from_be_bytes([bytes[sos + 2], bytes[sos + 3]]))
}

#[test]
fn a_truncated_jpeg_is_refused_in_one_line_baseline_restarts_and_progressive() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let baseline = d.join("baseline.jpg");
    baseline_jpeg(&baseline);
    let whole: Vec<PathBuf> = vec![
        baseline,
        fixtures.join("restarts.jpg"),
        fixtures.join("progressive.jpg"),
        fixtures.join("progressive_grey.jpg"),
    ];
    let mut made = Vec::new();
    for (i, path) in whole.iter().enumerate() {
        let bytes = std::fs::read(path).unwrap();
        let scan = first_scan_data(&bytes);
        // The whole file, and one with bytes after its EOI, convert.
        let trailing = d.join(format!("{i}_trailing.jpg"));
        std::fs::write(&trailing, [&bytes[..], b"trailing bytes"].concat()).unwrap();
        made.push(trailing.clone());
        for good in [path, &trailing] {
            let out = d.join("good.npy");
            let output = bitexact(&["normalize", path_arg(good), "-o", path_arg(&out), "--force"]);
            assert_eq!(output.status.code(), Some(0), "{}: {output:?}", good.display());
            std::fs::remove_file(&out).unwrap();
        }
        // Cut: in the headers, 20 bytes after the first SOS, half way, before the last
        // scan ends, between EOI's two bytes.
        for cut in [scan / 2, scan + 20, bytes.len() / 2, bytes.len() - 10, bytes.len() - 1] {
            let cut_path = d.join(format!("{i}_cut{cut}.jpg"));
            std::fs::write(&cut_path, &bytes[..cut]).unwrap();
            made.push(cut_path.clone());
            for layout in ["hwc", "chw"] {
                let out = d.join("cut.npy");
                let output = bitexact(&["normalize", path_arg(&cut_path), "-o", path_arg(&out), "--layout", layout]);
                assert_fails(&output, &cut_path, "truncated");
            }
        }
    }
    let mut expected: Vec<String> = made.iter().map(|p| p.file_name().unwrap().to_string_lossy().into()).collect();
    expected.push("baseline.jpg".into());
    expected.sort();
    assert_eq!(names(d), expected, "no output and no temporary file");
}

/// A PNG of `width × height` grey pixels with nothing but a header and a few bytes of
/// image data: what a decompression bomb looks like before its data is inflated.
fn png_header_only(path: &Path, (width, height): (u32, u32), interlaced: bool) {
    let mut ihdr = Vec::new();
    ihdr.extend_from_slice(&width.to_be_bytes());
    ihdr.extend_from_slice(&height.to_be_bytes());
    ihdr.extend_from_slice(&[8, 0, 0, 0, u8::from(interlaced)]);
    let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    std::io::Write::write_all(&mut zlib, &[0u8; 4096]).unwrap();
    let idat = zlib.finish().unwrap();
    common::png_from_chunks(path, &[(b"IHDR", &ihdr), (b"IDAT", &idat), (b"IEND", &[])]);
}

/// A BMP of `width × height` made by the `image` crate, then its header's size changed
/// to `claimed` (no pixel data added).
fn bmp_claiming(path: &Path, claimed: (u32, u32)) {
    image::GrayImage::from_pixel(4, 4, image::Luma([9])).save(path).unwrap();
    let mut bytes = std::fs::read(path).unwrap();
    bytes[18..22].copy_from_slice(&(claimed.0 as i32).to_le_bytes());
    bytes[22..26].copy_from_slice(&(claimed.1 as i32).to_le_bytes());
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn an_image_over_the_pixel_limit_is_refused_from_its_header_in_both_layouts() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // 20 × 20 images of every kind of path: streamed PNG, interlaced PNG, PNM, JPEG, BMP.
    let (w, h) = (20u32, 20u32);
    let pixels: Vec<u8> = (0..w * h).map(|i| i as u8).collect();
    let small = |name: &str| d.join(name);
    image::GrayImage::from_raw(w, h, pixels.clone()).unwrap().save(small("small.png")).unwrap();
    let rgb: Vec<u8> = pixels.iter().flat_map(|&p| [p, p, p]).collect();
    common::adam7_rgb_png(&small("adam7.png"), w, h, &rgb);
    pnm(&small("small.pgm"), "P5", (w, h), 100, &vec![7; (w * h) as usize]);
    image::GrayImage::from_raw(w, h, pixels.clone()).unwrap().save(small("small.jpg")).unwrap();
    image::GrayImage::from_raw(w, h, pixels).unwrap().save(small("small.bmp")).unwrap();
    let out = d.join("out.npy");
    for name in ["small.png", "adam7.png", "small.pgm", "small.jpg", "small.bmp"] {
        let path = small(name);
        for layout in ["hwc", "chw"] {
            let args = ["normalize", path_arg(&path), "-o", path_arg(&out), "--layout", layout, "--force"];
            let output = bitexact(&[&args[..], &["--max-pixels", "399"]].concat());
            assert_fails(
                &output,
                &path,
                "image is 20×20 = 400 pixels, over the limit of 399 (--max-pixels N raises it)",
            );
            let output = bitexact(&[&args[..], &["--max-pixels", "400"]].concat());
            assert_eq!(output.status.code(), Some(0), "{name} {layout}: {output:?}");
            std::fs::remove_file(&out).unwrap();
        }
    }
    // Bombs: 30000 × 30000 (the red team's), 16385 × 16385 (just over the default),
    // claimed by headers with almost no data behind them.
    let mut bombs = Vec::new();
    for (width, height) in [(30000u32, 30000u32), (16385, 16385), (1 << 20, 257)] {
        let png = d.join(format!("bomb_{width}x{height}.png"));
        png_header_only(&png, (width, height), false);
        let adam7 = d.join(format!("bomb_{width}x{height}_adam7.png"));
        png_header_only(&adam7, (width, height), true);
        let pgm = d.join(format!("bomb_{width}x{height}.pgm"));
        pnm(&pgm, "P5", (width, height), 1000, &[1, 2, 3]);
        bombs.extend([png, adam7, pgm]);
        // The BMP decoder refuses a side over 65535 itself.
        if width <= 65535 {
            let bmp = d.join(format!("bomb_{width}x{height}.bmp"));
            bmp_claiming(&bmp, (width, height));
            bombs.push(bmp);
        }
    }
    for bomb in &bombs {
        for layout in ["hwc", "chw"] {
            let output = bitexact(&["normalize", path_arg(bomb), "-o", path_arg(&out), "--layout", layout]);
            assert_fails(&output, bomb, "over the limit of 268435456 (--max-pixels N raises it)");
        }
    }
    assert!(!out.exists() && names(d).iter().all(|n| !n.starts_with('.')), "no output and no temporary file");
}

#[test]
fn a_png_crc_error_names_the_chunk_in_letters() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crc.png");
    image::GrayImage::from_pixel(8, 8, image::Luma([3])).save(&path).unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    let idat = bytes.windows(4).position(|w| w == b"IDAT").unwrap();
    let length = u32::from_be_bytes(bytes[idat - 4..idat].try_into().unwrap()) as usize;
    bytes[idat + 4 + length] ^= 0x01; // its CRC no longer matches its data
    std::fs::write(&path, bytes).unwrap();
    let out = dir.path().join("out.npy");
    for layout in ["hwc", "chw"] {
        let output = bitexact(&["normalize", path_arg(&path), "-o", path_arg(&out), "--layout", layout]);
        assert_fails(&output, &path, "while decoding IDAT chunk");
        assert!(!String::from_utf8_lossy(&output.stderr).contains("ChunkType"), "{output:?}");
    }
}
