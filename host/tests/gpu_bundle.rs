//! `scripts/build-gpu-bundle.sh --pack`: the GPU check bundle travels as one xz archive,
//! and packing fails, with one line, when the archive would be over the limit a device
//! call carries (64 MiB; the test sets a small one on a small fake bundle).

use std::path::Path;
use std::process::{Command, Output};

fn pack(bundle: &Path, limit: u64) -> Output {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/build-gpu-bundle.sh");
    Command::new("bash")
        .arg(script)
        .arg("--pack")
        .env("GPU_BUNDLE_DIR", bundle)
        .env("GPU_BUNDLE_LIMIT_BYTES", limit.to_string())
        .output()
        .expect("bash runs")
}

/// `len` bytes that xz cannot shrink (xorshift64*).
fn incompressible(len: usize) -> Vec<u8> {
    let mut state = 0x9E37_79B9_7F4A_7C15_u64;
    (0..len)
        .map(|_| {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            (state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8
        })
        .collect()
}

#[test]
fn the_bundle_is_packed_and_refused_over_the_limit() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let bundle = dir.path().join("gpu-bundle");
    std::fs::create_dir_all(bundle.join("bin")).expect("bundle folder");
    std::fs::write(bundle.join("bin/payload"), incompressible(1 << 20)).expect("payload");
    std::fs::write(bundle.join("COMMIT"), "abc\n").expect("commit");
    let archive = dir.path().join("gpu-bundle.tar.xz");

    let fits = pack(&bundle, 4 << 20);
    assert!(fits.status.success(), "{}", String::from_utf8_lossy(&fits.stderr));
    let listed = Command::new("tar").arg("-tJf").arg(&archive).output().expect("tar runs");
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(listed.contains("gpu-bundle/bin/payload") && listed.contains("gpu-bundle/COMMIT"), "{listed}");

    let over = pack(&bundle, 512 << 10);
    let stderr = String::from_utf8_lossy(&over.stderr);
    assert_eq!(over.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("over the 524288 a device call carries"), "{stderr}");
}
