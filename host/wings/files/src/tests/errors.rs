//! Every error of the file tools' layers, as the jobs return them: one line, each cause
//! reported once (moved from `lib.rs`).

use crate::backend::{BackendError, Device};
use crate::containers::npz::{InflateError, NpzError, NpzMemberError};
use crate::containers::{ContainerError, npy_header};
use crate::normalize::image::NormalizeError;
use crate::output::{Output, OutputErrorKind};
use crate::read::{TensorFileError, TensorFileErrorKind};
use crate::scan::report::{ScanError, TensorScanError};
use crate::source::SourceReadError;
use crate::write::{StageError, TensorWriteError};
use crate::*;
use bitexact_gpu::GpuError;
use bitexact_support::chain::repeated_causes;
use std::io;

fn io_error() -> io::Error {
    io::Error::from(io::ErrorKind::PermissionDenied)
}

/// Errors of each layer of the file tools, as the jobs return them and nested as
/// deep as they nest: the scan of a missing file and of a refused header, the
/// normalize of a file that is no image, writes refused and failed.
fn representative_errors(dir: &std::path::Path) -> Vec<Box<dyn std::error::Error>> {
    let cpu = ScanOptions { device: Device::Cpu, ..ScanOptions::default() };
    let missing = dir.join("missing.npy");
    let bad_header = dir.join("bad.npy");
    std::fs::write(&bad_header, b"\x93NUMPY\x01\x00\x04\x00{}  ").unwrap();
    let not_an_image = dir.join("photo.png");
    std::fs::write(&not_an_image, b"not an image").unwrap();
    let path = || dir.join("x.npz");
    let shrank = || SourceReadError::Shrank { now: Err(io_error()), needed: 8 };
    let member = NpzError::Member {
        name: "a.npy".into(),
        error: NpzMemberError::Inflate(InflateError::Corrupt(io::Error::other("bad code"))),
    };
    let no_gpu = NormalizeError::Backend(BackendError::NoGpu(GpuError::NoDevice { ordinal: 0, count: 0 }));
    vec![
        Box::new(scan(&[missing], &cpu).unwrap_err()),
        Box::new(scan(std::slice::from_ref(&bad_header), &cpu).unwrap_err()),
        Box::new(
            normalize(&not_an_image, &dir.join("out.npy"), &NormalizeOptions::default()).err().expect("not an image"),
        ),
        Box::new(write::write_f32(&dir.join("out.txt"), "t", &[1], &[0.5], false).unwrap_err()),
        Box::new(ScanJobError::File(TensorFileError {
            path: path(),
            kind: TensorFileErrorKind::Container(ContainerError::Npz(member)),
        })),
        Box::new(ScanJobError::File(TensorFileError {
            path: path(),
            kind: TensorFileErrorKind::Container(ContainerError::Npy(
                npy_header::read(b"\x93NUMPY\x01\x00\x04\x00{}  ").unwrap_err().into(),
            )),
        })),
        Box::new(ScanJobError::Scan(ScanError::Tensor {
            path: path(),
            tensor: "a".into(),
            error: TensorScanError::Inflate(InflateError::Read(shrank())),
        })),
        Box::new(ScanJobError::Scan(ScanError::Tensor {
            path: path(),
            tensor: "a".into(),
            error: TensorScanError::Backend(BackendError::Read(SourceReadError::Failed(io_error()))),
        })),
        Box::new(NormalizeJobError::from(TensorWriteError {
            path: path(),
            kind: OutputErrorKind::Rename(Output::File, io_error()).into(),
        })),
        Box::new(NormalizeJobError::from(StageError::Values { path: path(), error: no_gpu })),
    ]
}

#[test]
fn values_that_cannot_be_produced_are_a_write_failure_naming_the_output() {
    let gpu = || GpuError::NoDevice { ordinal: 0, count: 0 };
    let error = NormalizeError::Backend(BackendError::NoGpu(gpu()));
    let staged = NormalizeJobError::from(StageError::Values { path: "out.npy".into(), error });
    assert_eq!(staged.to_string(), format!("out.npy: write failed: --device gpu: {}", gpu()));
}

#[test]
fn each_file_error_is_one_line_that_reports_each_cause_once() {
    let dir = tempfile::tempdir().unwrap();
    for error in representative_errors(dir.path()) {
        let line = error.to_string();
        assert!(!line.contains('\n'), "{line}");
        assert_eq!(repeated_causes(error.as_ref()), Vec::<String>::new(), "{line}");
    }
}
