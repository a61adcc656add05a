//! Scanning tensor files through the wing's own layers: an `.npz` that shrinks while it
//! is scanned, and the typed errors of every layer (moved from `host/tests/scan_files.rs`,
//! whose other tests run the command line).

use test_fixtures as fixtures;
use test_fixtures::{DTYPES, ZipMethod, f32_npy};

/// An `.npz` archive that shrinks after its central directory was read (another program
/// truncating it while `scan` runs) is a one-line error naming the file and the member:
/// for a stored member, read in place, as for a deflated one, inflated from reads of the
/// archive. Through a memory map it was death by SIGBUS.
#[test]
fn an_npz_truncated_during_a_scan_is_an_error_naming_it() {
    use crate::backend::CpuBackend;
    use crate::read::TensorFile;
    use crate::scan::report::Report;
    use bitexact_support::progress::Progress;
    let dir = tempfile::tempdir().unwrap();
    // Random values, so that the compressed data is long too.
    let values = fixtures::elements(&DTYPES[2], 1 << 16, &[], 5);
    let values: Vec<f32> = values.iter().map(|&b| f32::from_bits(b as u32)).collect();
    for method in [ZipMethod::Stored, ZipMethod::Deflated] {
        let path = dir.path().join(format!("{method:?}.npz"));
        fixtures::write_npz(&path, &[("a.npy", f32_npy(&[1 << 16], &values))], method);
        let files = [TensorFile::open(&path).unwrap()];
        let tensor = &files[0].tensors[0];
        // The bytes read from the archive: the data itself, or the compressed stream.
        let read = tensor.deflated.as_ref().map_or(tensor.data.clone(), |d| d.compressed.clone());
        assert_eq!(tensor.deflated.is_some(), method == ZipMethod::Deflated);
        let new_len = ((read.start + read.end) / 2) as u64;
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(new_len).unwrap();
        let error = Report::scan(&files, &CpuBackend, &Progress::new(0, "test")).map(|_| ()).unwrap_err().to_string();
        let expected = format!(
            "{}: tensor 'a': file shrank while being read (now {new_len} bytes, {} needed): truncated by another program?",
            path.display(),
            read.end
        );
        assert_eq!(error, expected, "{method:?}");
    }
}

/// Errors are typed: a caller tells what went wrong by matching, not by reading the
/// message, through every layer (tensor file → container → archive → member → `.npy`
/// → header → syntax), the I/O error underneath included. The message holds every cause
/// once, so `source()` gives none that a chain printer would print again.
#[test]
fn errors_are_typed_through_every_layer_and_say_each_cause_once() {
    use crate::containers::ContainerError;
    use crate::containers::npy::NpyError;
    use crate::containers::npy_header::{NpyHeaderError, NpyHeaderKey, NpySyntaxError};
    use crate::containers::npz::{NpzError, NpzMemberError};
    use crate::read::{TensorFile, TensorFileErrorKind};
    use crate::regular_file::RegularFileError;
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.npy");
    let Err(error) = TensorFile::open(&missing) else { panic!("a missing file opened") };
    assert!(
        matches!(&error.kind, TensorFileErrorKind::NotRegular(RegularFileError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound),
        "{error:?}"
    );
    assert!(std::error::Error::source(&error).is_none(), "{error:?}");
    assert_eq!(error.to_string(), format!("{}: no such file or directory", missing.display()));
    for method in [ZipMethod::Stored, ZipMethod::Deflated] {
        let path = dir.path().join(format!("{method:?}.npz"));
        let member = fixtures::npy_bytes(1, "{'descr': '<f4', 'shape': (1,)}", 4);
        fixtures::write_npz(&path, &[("a.npy", member)], method);
        let Err(error) = TensorFile::open(&path) else { panic!("{method:?}: a header without 'fortran_order' opened") };
        match &error.kind {
            TensorFileErrorKind::Container(ContainerError::Npz(NpzError::Member {
                name,
                error:
                    NpzMemberError::Npy(NpyError::Header(NpyHeaderError::Invalid(NpySyntaxError::MissingKey(
                        NpyHeaderKey::FortranOrder,
                    )))),
            })) => assert_eq!(name, "a.npy"),
            _ => panic!("{method:?}: {error:?}"),
        }
        assert_eq!(
            error.to_string(),
            format!("{}: member 'a.npy': invalid header: no 'fortran_order' key", path.display()),
            "{method:?}"
        );
    }
}
