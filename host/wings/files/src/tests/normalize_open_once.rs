//! An image is opened once on `normalize`'s path: [`Image::from_file`] reads only
//! through the open file it is given (what [`Image::open`] does after its one open), so
//! an image whose path is removed once it is open still decodes, to the same samples as
//! from the path, in every format reader: PNG streamed (HWC) and whole (CHW, interlaced,
//! 16-bit), PNM with its `maxval`, JPEG (checked whole first), BMP, and TGA (told by its
//! extension alone). A reader that opened the file again by name would find nothing.

use test_fixtures as fixtures;

use crate::backend::CpuBackend;
use crate::normalize::image::{ChannelLayout, Image, ImageLimits, Samples};
use std::path::{Path, PathBuf};

/// `count` bytes of a fixed pseudo-random sequence.
fn noise(count: usize, seed: u64) -> Vec<u8> {
    let mut rng = fixtures::Rng::new(seed);
    (0..count).map(|_| rng.next() as u8).collect()
}

/// One file per reader, each with the layouts it is read in.
fn images(dir: &Path) -> Vec<(PathBuf, ChannelLayout)> {
    let (w, h) = (37, 23);
    let mut made = Vec::new();
    let rgb = dir.join("rgb.png");
    image::RgbImage::from_raw(w, h, noise((w * h * 3) as usize, 1)).unwrap().save(&rgb).unwrap();
    made.push((rgb.clone(), ChannelLayout::Hwc));
    made.push((rgb, ChannelLayout::Chw));
    let grey16 = dir.join("grey16.png");
    let words: Vec<u16> = noise((w * h * 2) as usize, 2).chunks(2).map(|b| u16::from_le_bytes([b[0], b[1]])).collect();
    image::ImageBuffer::<image::Luma<u16>, _>::from_raw(w, h, words).unwrap().save(&grey16).unwrap();
    made.push((grey16, ChannelLayout::Hwc));
    let adam7 = dir.join("adam7.png");
    fixtures::adam7_rgb_png(&adam7, w, h, &noise((w * h * 3) as usize, 3));
    made.push((adam7, ChannelLayout::Hwc));
    let pgm = dir.join("grey.pgm");
    let mut bytes = format!("P5\n{w} {h}\n100\n").into_bytes();
    bytes.extend(noise((w * h) as usize, 4).iter().map(|b| b % 101));
    std::fs::write(&pgm, bytes).unwrap();
    made.push((pgm, ChannelLayout::Hwc));
    let pixels = image::RgbImage::from_raw(w, h, noise((w * h * 3) as usize, 5)).unwrap();
    for name in ["photo.jpg", "picture.bmp", "picture.tga"] {
        let path = dir.join(name);
        pixels.save(&path).unwrap();
        made.push((path, ChannelLayout::Chw));
    }
    made
}

/// The image's values as f32 bits, on the CPU.
fn values(image: &Image, layout: ChannelLayout) -> Vec<u32> {
    image.to_f32(layout, &CpuBackend).unwrap().iter().map(|v| v.to_bits()).collect()
}

#[test]
fn an_open_image_decodes_through_its_file_alone_after_its_path_is_removed() {
    let dir = tempfile::tempdir().unwrap();
    let mut streamed = 0;
    for (path, layout) in images(dir.path()) {
        let by_path = Image::open(&path, layout, ImageLimits::default()).unwrap();
        let want = (by_path.shape(layout), values(&by_path, layout));
        let file = std::fs::File::open(&path).unwrap();
        let kept = dir.path().join("kept");
        // Moved away, not deleted: the next case may read the same file again.
        std::fs::rename(&path, &kept).unwrap();
        let image = Image::from_file(file, &path, layout, ImageLimits::default())
            .unwrap_or_else(|e| panic!("{} ({layout:?}) opened again by name: {e}", path.display()));
        streamed += usize::from(matches!(image.samples, Samples::PngRows(_)));
        assert_eq!((image.shape(layout), values(&image, layout)), want, "{} ({layout:?})", path.display());
        std::fs::rename(&kept, &path).unwrap();
    }
    assert_eq!(streamed, 2, "the HWC non-interlaced PNGs are streamed");
}
