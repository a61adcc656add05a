//! `scan` reads a file one block at a time, into one buffer per thread: its heap use does
//! not grow with the file. A counting global allocator measures the peak while a file
//! larger than the 64 MiB budget is opened, scanned and reported, while the largest
//! accepted `.safetensors` header is parsed, and while a deflated `.npz` member larger
//! than the budget is inflated and scanned.
//!
//! One test function only: the counters are process-wide.

mod common;

use common::alloc_counter::{Counting, peak_growth};
use std::io::{Seek, SeekFrom, Write};
use std::path::Path;

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const BUDGET: usize = 64 << 20;

/// Opens and scans `path` and renders its report both ways, as `bitexact scan` does;
/// returns the total NaN count and first index.
fn scan_and_report(path: &Path) -> (u64, Option<u64>) {
    common::with_scan(path, |report| {
        report.write_json(std::io::sink()).unwrap();
        std::hint::black_box(report.render(false));
        (report.total.nan, report.total.first_non_finite.as_ref().map(|at| at.index))
    })
    .unwrap()
}

/// A `.safetensors` header: `header` padded with spaces to a multiple of 8.
fn header_bytes(header: &str) -> Vec<u8> {
    let mut bytes = header.as_bytes().to_vec();
    bytes.resize(bytes.len().next_multiple_of(8), b' ');
    let mut out = (bytes.len() as u64).to_le_bytes().to_vec();
    out.extend(bytes);
    out
}

#[test]
fn scan_heap_stays_bounded() {
    // Warm up the thread pool and lazy statics so that they do not count.
    let dir = tempfile::tempdir().unwrap();
    let small = dir.path().join("small.npy");
    common::write_npy(&small, &common::DTYPES[0], &[4], &[0, 1, 2, 3], false);
    scan_and_report(&small);

    // 96 MiB of binary64 zeros (a sparse file), with a NaN written at a known index.
    let elements: u64 = 12 << 20;
    let big = dir.path().join("big.safetensors");
    let header =
        header_bytes(&format!(r#"{{"x":{{"dtype":"F64","shape":[{elements}],"data_offsets":[0,{}]}}}}"#, elements * 8));
    let mut file = std::fs::File::create(&big).unwrap();
    file.write_all(&header).unwrap();
    file.set_len(header.len() as u64 + elements * 8).unwrap();
    let nan_at = elements - 12_345;
    file.seek(SeekFrom::Start(header.len() as u64 + nan_at * 8)).unwrap();
    file.write_all(&f64::NAN.to_le_bytes()).unwrap();
    drop(file);
    assert!(std::fs::metadata(&big).unwrap().len() as usize > BUDGET + (32 << 20));

    let mut result = (0, None);
    let peak = peak_growth(|| result = scan_and_report(&big));
    assert_eq!(result, (1, Some(nan_at)));
    eprintln!("96 MiB file: peak heap growth {} KiB", peak >> 10);
    // The header read at open (at most 2 MiB + 8), the report, and a block buffer for
    // each thread.
    let bound = (4 << 20) + rayon::current_num_threads() * bitexact::files::scan::BLOCK_BYTES;
    assert!(peak < bound, "scanning a 96 MiB file grew the heap by {peak} bytes (bound {bound})");

    // The largest header accepted: as many one-element tensors as fit.
    let entry =
        |i: usize| format!(r#""tensor.{i:07}":{{"dtype":"F16","shape":[1],"data_offsets":[{},{}]}}"#, 2 * i, 2 * i + 2);
    let per_entry = entry(999_999).len() + 1; // the longest entry here
    let count = (bitexact::files::scan::MAX_SAFETENSORS_HEADER as usize - 16) / per_entry;
    let header = format!("{{{}}}", (0..count).map(entry).collect::<Vec<_>>().join(","));
    let many = dir.path().join("many.safetensors");
    let mut bytes = header_bytes(&header);
    assert!(bytes.len() <= bitexact::files::scan::MAX_SAFETENSORS_HEADER as usize + 8);
    bytes.resize(bytes.len() + 2 * count, 0);
    std::fs::write(&many, bytes).unwrap();
    drop(header);

    let peak = peak_growth(|| result = scan_and_report(&many));
    assert_eq!(result, (0, None));
    eprintln!("{count} tensors in a maximal header: peak heap growth {} KiB", peak >> 10);
    assert!(peak < BUDGET, "the largest header grew the heap by {peak} bytes");

    // A deflated .npz member of 80 MiB of binary32 zeros, with a NaN near the end.
    let elements: usize = 20 << 20;
    let mut member =
        common::npy_bytes(1, &format!("{{'descr': '<f4', 'fortran_order': False, 'shape': ({elements},), }}"), 0);
    let data_start = member.len();
    member.resize(data_start + elements * 4, 0);
    let nan_at = elements - 4321;
    member[data_start + nan_at * 4..][..4].copy_from_slice(&f32::NAN.to_le_bytes());
    let npz = dir.path().join("big.npz");
    common::write_npz(&npz, &[("x.npy", member)], common::ZipMethod::Deflated);
    assert!(std::fs::metadata(&npz).unwrap().len() < 1 << 20, "zeros deflate well");

    let peak = peak_growth(|| result = scan_and_report(&npz));
    assert_eq!(result, (1, Some(nan_at as u64)));
    eprintln!("80 MiB deflated .npz member: peak heap growth {} KiB", peak >> 10);
    assert!(peak < bitexact::files::scan::INFLATE_CHUNK_BYTES + (1 << 20), "inflating grew the heap by {peak} bytes");
}
