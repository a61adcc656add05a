//! PNG decode alone, best of REPS, one thread: the `image` crate's whole-image decode
//! (what `normalize` does for formats it does not stream) against the `png` crate driven
//! as `files::normalize::png_rows` drives it (row by row into a reused band) and other settings.
//! Compare with Pillow's `np.asarray(Image.open(p))` on the same files.
//!
//!   cargo run --release -p host --example decode_bench -- REPS A.png [B.png ...]
//!   cargo run --release -p host --example decode_bench -- --write IN OUT.png
//!
//! `--write` re-encodes IN as `bench-files` writes its PNG (zlib level 1, adaptive
//! filters), for the same pixels in both encoders' files.
use std::io::{BufReader, Cursor};
use std::time::Instant;

fn best(reps: usize, mut f: impl FnMut() -> usize) -> (f64, usize) {
    let mut b = f64::INFINITY;
    let mut n = 0;
    for _ in 0..reps {
        let t = Instant::now();
        n = f();
        b = b.min(t.elapsed().as_secs_f64());
    }
    (b * 1e3, n)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args[1] == "--write" {
        // args: --write in.ppm out.png  (image crate, level 1, adaptive filters)
        use image::ImageEncoder;
        use image::codecs::png::{CompressionType, FilterType, PngEncoder};
        let img = image::open(&args[2]).unwrap();
        let file = std::io::BufWriter::new(std::fs::File::create(&args[3]).unwrap());
        PngEncoder::new_with_quality(file, CompressionType::Level(1), FilterType::Adaptive)
            .write_image(img.as_bytes(), img.width(), img.height(), img.color().into())
            .unwrap();
        return;
    }
    let reps: usize = args[1].parse().unwrap();
    for path in &args[2..] {
        let (t, n) = best(reps, || {
            let img = image::ImageReader::open(path).unwrap().with_guessed_format().unwrap().decode().unwrap();
            img.as_bytes().len()
        });
        println!("{path}: image crate decode        {t:7.1} ms ({n} bytes)");
        let (t, n) = best(reps, || {
            let mut d = png::Decoder::new(BufReader::new(std::fs::File::open(path).unwrap()));
            d.set_transformations(png::Transformations::EXPAND);
            let mut r = d.read_info().unwrap();
            let mut buf = vec![0u8; r.output_buffer_size().unwrap()];
            r.next_frame(&mut buf).unwrap();
            buf.len()
        });
        println!("{path}: png next_frame BufReader   {t:7.1} ms ({n} bytes)");
        let (t, n) = best(reps, || {
            let bytes = std::fs::read(path).unwrap();
            let mut d = png::Decoder::new(Cursor::new(&bytes[..]));
            d.set_transformations(png::Transformations::EXPAND);
            let mut r = d.read_info().unwrap();
            let mut buf = vec![0u8; r.output_buffer_size().unwrap()];
            r.next_frame(&mut buf).unwrap();
            buf.len()
        });
        println!("{path}: png next_frame from memory {t:7.1} ms ({n} bytes)");
        let (t, n) = best(reps, || {
            let mut d = png::Decoder::new(BufReader::new(std::fs::File::open(path).unwrap()));
            d.set_transformations(png::Transformations::EXPAND);
            d.ignore_checksums(true);
            let mut r = d.read_info().unwrap();
            let mut buf = vec![0u8; r.output_buffer_size().unwrap()];
            r.next_frame(&mut buf).unwrap();
            buf.len()
        });
        println!("{path}: png no checksums (info)    {t:7.1} ms ({n} bytes)");
        let (t, n) = best(reps, || {
            let mut d = png::Decoder::new(BufReader::new(std::fs::File::open(path).unwrap()));
            d.set_transformations(png::Transformations::EXPAND);
            let mut r = d.read_info().unwrap();
            let line = r.output_line_size(r.info().width).unwrap();
            let mut buf = vec![0u8; line * 64];
            let mut rows = 0;
            'outer: loop {
                for row in buf.chunks_exact_mut(line) {
                    if r.read_row(row).unwrap().is_none() {
                        break 'outer;
                    }
                    rows += 1;
                }
            }
            rows * line
        });
        println!("{path}: png read_row 64-row band   {t:7.1} ms ({n} bytes)");
    }
}
