//! `normalize` never holds the f32 tensor: a counting global allocator measures the peak
//! heap while a 2048 × 2048 RGBA image (16 MiB of samples, 64 MiB of f32) is decoded,
//! converted and written in each layout and container. Holding the tensor would take
//! four times the samples (five for CHW, which reorders them; nine when the
//! `.safetensors` file is built in memory, as `safetensors::serialize` does). In HWC
//! order a PNG is streamed (the report's `timing.streamed`): not even the samples are
//! held, only a few bands of them and the write chunks, however large the image. The
//! library's `normalize` job runs it, on the CPU, as the command does.
//!
//! One test function only: the counters are process-wide.

mod common;

use bitexact::files::backend::Device;
use bitexact::files::normalize::{ChannelLayout, WRITE_CHUNK_ELEMENTS};
use bitexact::files::{NormalizeOptions, normalize};
use common::alloc_counter::{Counting, peak_growth};
use image::{ImageBuffer, Rgba};

#[global_allocator]
static ALLOCATOR: Counting = Counting;

#[test]
fn normalize_heap_stays_near_the_decoded_image() {
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("big.png");
    let side = 2048u32;
    let image = ImageBuffer::from_fn(side, side, |x, y| Rgba([x as u8, y as u8, (x ^ y) as u8, 255]));
    image.save(&png).unwrap();
    drop(image);
    let samples = (side * side * 4) as usize;
    // Streamed: four bands of 8-bit samples (the reader's, two queued, the one being
    // decoded), two chunks of f32 (one converted, one written), the 1 MiB write buffer,
    // and 1 MiB for the decoder's own (a row, the inflate window and buffers).
    let streamed = 4 * WRITE_CHUNK_ELEMENTS + 2 * 4 * WRITE_CHUNK_ELEMENTS + (2 << 20);
    assert!(streamed < samples, "the image must be larger than the streamed bound to show anything");

    for (name, layout, streams) in [
        ("hwc.npy", ChannelLayout::Hwc, true),
        ("hwc.safetensors", ChannelLayout::Hwc, true),
        ("chw.npy", ChannelLayout::Chw, false),
        ("chw.safetensors", ChannelLayout::Chw, false),
    ] {
        let out = dir.path().join(name);
        let options = NormalizeOptions { layout, device: Device::Cpu, ..NormalizeOptions::default() };
        let mut streamed_here = None;
        let peak = peak_growth(|| {
            let done = normalize(&png, &out, &options).unwrap().commit().unwrap();
            streamed_here = Some(done.timing.streamed.is_some());
        });
        assert_eq!(streamed_here, Some(streams), "{name}: streamed");
        assert_eq!(std::fs::metadata(&out).unwrap().len() as usize / 4 / samples, 1, "{name}: a whole f32 tensor");
        eprintln!(
            "{name}: {} MiB of samples, peak heap growth {:.1} MiB",
            samples >> 20,
            peak as f64 / (1 << 20) as f64
        );
        if streams {
            assert!(peak < streamed, "{name}: streamed normalize grew the heap by {peak} bytes");
        } else {
            // The decoded samples, the decoder's buffers, and a few write chunks.
            assert!(peak < samples + (16 << 20), "{name}: normalize grew the heap by {peak} bytes");
        }
    }
}
