//! Why `.npz` archives are read by our own reader (`host/wings/files/src/containers/npz.rs`)
//! and not by the `zip` crate (a dev-dependency, which writes the tests' archives): the
//! numbers and behaviours quoted in that module's doc, measured here. Ignored, because it
//! measures rather than checks: `cargo test -p host --test npz_vs_zip -- --ignored
//! --nocapture` prints
//!
//! - time and peak heap growth of scanning one large deflated member through ours
//!   (`scan`'s own path, inflated a chunk at a time) and of reading it through `zip`,
//!   streamed in chunks and as a whole (`read_to_end`, what its examples do);
//! - what each does with hostile archives: a central directory that understates a
//!   member's inflated length, and two entries for one member's bytes (overlapping
//!   members, the "zip bomb" construction, here with the same name).
//!
//! One test function: the allocation counters are process-wide.

mod common;

use bitexact::files::scan::count_slice;
use bitexact::support::element::Endian;
use common::ZipMethod;
use common::alloc_counter::{Counting, peak_growth};
use shared::Format;
use std::io::Read;
use std::path::Path;
use std::time::Instant;

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// An `.npy` member of `values` binary32 values (a pattern deflate compresses about 4:1),
/// one of them a NaN.
fn npy_member(values: usize) -> Vec<u8> {
    let header = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': ({values},), }}");
    let mut bytes = common::npy_bytes(1, &format!("{header:<117}\n"), 0);
    bytes.reserve(values * 4);
    for i in 0..values {
        let value = if i == values / 2 { f32::NAN } else { (i % 4099) as f32 * 0.25 };
        bytes.extend_from_slice(&value.to_le_bytes());
    }
    bytes
}

/// Non-finite values of `path`'s first member, read through the `zip` crate a chunk at a
/// time (its `.npy` header skipped), or its error.
fn zip_streamed(path: &Path, header_len: usize) -> Result<u64, String> {
    let mut archive = zip::ZipArchive::new(std::fs::File::open(path).unwrap()).map_err(|e| e.to_string())?;
    let mut member = archive.by_index(0).map_err(|e| e.to_string())?;
    let mut skipped = vec![0; header_len];
    member.read_exact(&mut skipped).map_err(|e| e.to_string())?;
    let mut buf = vec![0u8; 4 << 20];
    let mut non_finite = 0;
    loop {
        // Whole 4 MiB chunks (a read may return less), so that no value is split.
        let mut n = 0;
        while n < buf.len() {
            match member.read(&mut buf[n..]).map_err(|e| e.to_string())? {
                0 => break,
                read => n += read,
            }
        }
        if n == 0 {
            return Ok(non_finite);
        }
        non_finite += count_slice(Format::Binary32, Endian::Little, &buf[..n], 0).non_finite();
    }
}

/// The members of `path` through the `zip` crate, each read whole: (name, length), or
/// the error.
fn zip_whole(path: &Path) -> Result<Vec<(String, usize)>, String> {
    let mut archive = zip::ZipArchive::new(std::fs::File::open(path).unwrap()).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for i in 0..archive.len() {
        let mut member = archive.by_index(i).map_err(|e| e.to_string())?;
        let mut bytes = Vec::new();
        member.read_to_end(&mut bytes).map_err(|e| e.to_string())?;
        let name = member.name().map_err(|e| e.to_string())?.into_owned();
        out.push((name, bytes.len()));
    }
    Ok(out)
}

/// Ours: `scan`'s path on the CPU backend, as `(tensor, non-finite)` or the error.
fn ours(path: &Path) -> Result<Vec<(String, u64)>, String> {
    common::scan(path).map(|tensors| tensors.into_iter().map(|t| (t.name, t.counts.non_finite())).collect())
}

/// `work`'s result, seconds and peak heap growth in MiB.
fn measured<R>(work: impl FnOnce() -> R) -> (R, f64, f64) {
    let mut result = None;
    let start = Instant::now();
    let peak = peak_growth(|| result = Some(work()));
    (result.expect("ran"), start.elapsed().as_secs_f64(), peak as f64 / f64::from(1u32 << 20))
}

/// `bytes` with the first central directory entry's 32-bit field at `field` (an offset in
/// the entry) set to `value`.
fn patch_central(mut bytes: Vec<u8>, field: usize, value: u32) -> Vec<u8> {
    let cd = central_directory(&bytes).0;
    bytes[cd + field..cd + field + 4].copy_from_slice(&value.to_le_bytes());
    bytes
}

/// Offset and length of the central directory of an archive without ZIP64 records or a
/// comment.
fn central_directory(bytes: &[u8]) -> (usize, usize) {
    let end = bytes.len() - 22;
    assert_eq!(&bytes[end..end + 4], b"PK\x05\x06");
    let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
    (u32_at(end + 16), u32_at(end + 12))
}

/// `bytes` (one member, no ZIP64) with its central directory entry listed twice: two
/// members over the same local header and data.
fn listed_twice(bytes: &[u8]) -> Vec<u8> {
    let (cd, len) = central_directory(bytes);
    let mut out = bytes[..cd + len].to_vec();
    out.extend_from_slice(&bytes[cd..cd + len]);
    let mut end = bytes[cd + len..].to_vec();
    for at in [8, 10] {
        let n = u16::from_le_bytes([end[at], end[at + 1]]) + 1;
        end[at..at + 2].copy_from_slice(&n.to_le_bytes());
    }
    end[12..16].copy_from_slice(&(2 * len as u32).to_le_bytes());
    out.extend(end);
    out
}

/// A one-member archive without ZIP64 records, deflated, written by the `zip` crate.
fn small_archive(member: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let options = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    let mut archive = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    archive.start_file("x.npy", options).unwrap();
    archive.write_all(member).unwrap();
    archive.finish().unwrap().into_inner()
}

#[test]
#[ignore = "a measurement: run with --ignored --nocapture"]
fn npz_reader_against_the_zip_crate() {
    let dir = tempfile::tempdir().unwrap();
    let values = 16 << 20;
    let path = dir.path().join("big.npz");
    let header_len = {
        let member = npy_member(values);
        common::write_npz(&path, &[("x.npy", member)], ZipMethod::Deflated);
        128
    };
    let on_disk = std::fs::metadata(&path).unwrap().len();
    println!("one deflated member: {} MiB of f32, {} MiB in the archive", (values * 4) >> 20, on_disk >> 20);
    // Warm up the thread pool and lazy statics.
    ours(&path).unwrap();
    let (found, s, mib) = measured(|| ours(&path));
    println!("ours (scan, inflated a chunk at a time): {found:?}, {s:.2} s, peak heap growth {mib:.1} MiB");
    let (found, s, mib) = measured(|| zip_streamed(&path, header_len));
    println!("zip crate, read in 4 MiB chunks:         {found:?}, {s:.2} s, peak heap growth {mib:.1} MiB");
    let (found, s, mib) = measured(|| zip_whole(&path));
    println!("zip crate, read_to_end:                  {found:?}, {s:.2} s, peak heap growth {mib:.1} MiB");

    let member = npy_member(1 << 16);
    let true_len = member.len() as u32;
    let archive = small_archive(&member);
    let cases = [
        ("as written", archive.clone()),
        ("central directory understates the length by 4096", patch_central(archive.clone(), 24, true_len - 4096)),
        ("central directory overstates the length by 4096", patch_central(archive.clone(), 24, true_len + 4096)),
        ("one member listed twice (overlapping members)", listed_twice(&archive)),
    ];
    for (what, bytes) in cases {
        let hostile = dir.path().join("hostile.npz");
        std::fs::write(&hostile, &bytes).unwrap();
        println!("{what}:\n  ours: {:?}\n  zip:  {:?}", ours(&hostile), zip_whole(&hostile));
    }
}
