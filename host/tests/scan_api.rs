//! The file tools as a library: one `files::scan` call over a sharded checkpoint.

use crate::common;

/// A sharded checkpoint: an index and two shards, a NaN in the second; one shard also
/// holds a tensor the index does not list there (a warning, scanned all the same).
#[test]
fn a_sharded_checkpoint_is_scanned_through_the_library_alone() {
    use bitexact::files::{ScanOptions, scan};
    let dir = tempfile::tempdir().unwrap();
    let f32s = |values: &[f32]| values.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>();
    let first = dir.path().join("model-00001-of-00002.safetensors");
    let second = dir.path().join("model-00002-of-00002.safetensors");
    common::write_safetensors(
        &first,
        &[
            ("a", safetensors::Dtype::F32, vec![4], f32s(&[0.0, 1.0, 2.0, 3.0])),
            ("extra", safetensors::Dtype::F32, vec![1], f32s(&[f32::NEG_INFINITY])),
        ],
    );
    common::write_safetensors(
        &second,
        &[("b", safetensors::Dtype::F32, vec![2, 3], f32s(&[1.0, 2.0, 3.0, 4.0, f32::NAN, 6.0]))],
    );
    let index = dir.path().join("model.safetensors.index.json");
    let map = r#"{"metadata": {}, "weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}}"#;
    std::fs::write(&index, map).unwrap();

    let scanned = scan(std::slice::from_ref(&index), &ScanOptions::default()).expect("scanned");
    let report = &scanned.report;
    assert_eq!(report.files.len(), 2, "both shards, in name order");
    assert_eq!(report.files[0].file, first.display().to_string());
    assert_eq!(report.files[1].file, second.display().to_string());
    let total = &report.total;
    assert_eq!((total.files, total.tensors, total.elements), (2, 3, 11));
    assert_eq!((total.nan, total.pos_inf, total.neg_inf), (1, 0, 1));
    let at = total.first_non_finite.as_ref().expect("a non-finite value");
    assert_eq!((at.file.as_str(), at.tensor.as_str(), at.index), (first.to_str().unwrap(), "extra", 0));
    let b = &report.files[1].tensors[0];
    assert_eq!((b.name.as_ref(), b.counts.nan, b.counts.first_non_finite), ("b", 1, Some(4)));
    assert!(!report.all_finite);
    assert_eq!(scanned.warnings.len(), 1, "{:?}", scanned.warnings);
    assert_eq!((scanned.warnings[0].shard.as_path(), scanned.warnings[0].first.as_str()), (first.as_path(), "extra"));
    assert!(report.device.starts_with("cpu"), "a small job runs on the CPU: {}", report.device);

    // A tensor the index lists but no shard holds is an error, naming the index.
    let map = map.replace(r#""b": "#, r#""c": "#);
    std::fs::write(&index, map).unwrap();
    let error = scan(std::slice::from_ref(&index), &ScanOptions::default()).expect_err("c is missing");
    assert!(error.to_string().starts_with(&format!("{}: ", index.display())), "{error}");
}
