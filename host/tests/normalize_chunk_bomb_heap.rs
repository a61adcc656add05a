//! A 2 × 2 PNG whose compressed ancillary chunk (`iCCP`, `zTXt`, `iTXt`) inflates to
//! 128 MiB is normalized without inflating it, in every path (streamed HWC, interlaced
//! HWC and CHW, both decoded whole): a counting global allocator bounds the heap at
//! 16 MiB, the bound docs/files.md gives beyond the decoded samples. The library's
//! `normalize` job runs it, on the CPU, as the command does. Through the `image` crate, a
//! 3 MB `iCCP` chunk inflating to 3 GiB peaked at 516 MB RSS.
//!
//! One test function only: the counters are process-wide.

mod common;

use bitexact::files::backend::Device;
use bitexact::files::normalize::ChannelLayout;
use bitexact::files::{NormalizeOptions, normalize};
use common::alloc_counter::{Counting, peak_growth};
use std::path::Path;

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// What the ancillary chunk inflates to.
const INFLATED: usize = 128 << 20;

/// `INFLATED` zero bytes, zlib-compressed (about 128 KiB).
fn zlib_bomb() -> Vec<u8> {
    let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..INFLATED >> 20 {
        std::io::Write::write_all(&mut zlib, &zeros).unwrap();
    }
    zlib.finish().unwrap()
}

/// `png` with `chunk` (type, data) inserted right after its IHDR (which every PNG has
/// first, at bytes 8..33), its length and CRC made.
fn with_chunk_after_ihdr(png: &Path, kind: &[u8; 4], data: &[u8], out: &Path) {
    let bytes = std::fs::read(png).unwrap();
    let mut chunk = (data.len() as u32).to_be_bytes().to_vec();
    chunk.extend_from_slice(kind);
    chunk.extend_from_slice(data);
    chunk.extend_from_slice(&crc32fast::hash(&chunk[4..]).to_be_bytes());
    std::fs::write(out, [&bytes[..33], &chunk[..], &bytes[33..]].concat()).unwrap();
}

#[test]
fn a_compressed_ancillary_chunk_is_never_inflated() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let bomb = zlib_bomb();
    let (plain, adam7) = (d.join("plain.png"), d.join("adam7.png"));
    let rgb: Vec<u8> = (0..12).collect();
    image::RgbImage::from_raw(2, 2, rgb.clone()).unwrap().save(&plain).unwrap();
    common::adam7_rgb_png(&adam7, 2, 2, &rgb);
    // iCCP: name, NUL, method 0, the profile; zTXt: keyword, NUL, method 0, the text;
    // iTXt: keyword, NUL, compressed, method 0, language, NUL, translated keyword, NUL.
    let chunks: [(&[u8; 4], Vec<u8>); 3] = [
        (b"iCCP", [&b"bomb\0\0"[..], &bomb].concat()),
        (b"zTXt", [&b"Comment\0\0"[..], &bomb].concat()),
        (b"iTXt", [&b"Comment\0\x01\0en\0\0"[..], &bomb].concat()),
    ];
    for (kind, data) in &chunks {
        let name = String::from_utf8_lossy(&kind[..]).into_owned();
        for (base, layout) in [(&plain, ChannelLayout::Hwc), (&plain, ChannelLayout::Chw), (&adam7, ChannelLayout::Hwc)]
        {
            let png = d.join(format!("{name}.png"));
            with_chunk_after_ihdr(base, kind, data, &png);
            let out = d.join("out.npy");
            let options = NormalizeOptions { layout, force: true, device: Device::Cpu, ..NormalizeOptions::default() };
            let peak = peak_growth(|| {
                normalize(&png, &out, &options).unwrap().commit().unwrap();
            });
            let what = format!("{name} in {} ({layout:?})", base.file_name().unwrap().to_string_lossy());
            eprintln!("{what}: peak heap growth {:.1} MiB", peak as f64 / (1 << 20) as f64);
            assert!(peak < 16 << 20, "{what}: normalize grew the heap by {peak} bytes");
            let bytes = std::fs::read(&out).unwrap();
            let values: Vec<f32> = npyz::NpyFile::new(&bytes[..]).unwrap().into_vec().unwrap();
            let at = |i: usize| if layout == ChannelLayout::Hwc { i } else { (i % 4) * 3 + i / 4 };
            let want: Vec<f32> = (0..12).map(|i| f32::from(rgb[at(i)]) / 255.0).collect();
            assert_eq!(values, want, "{what}: the pixels");
        }
    }
}
