//! `open_regular_file` opens first and checks the open file: a regular file comes back
//! open for ordinary (blocking) reads, with the bytes of the file checked even once its
//! path names another; a directory, a dangling link, a missing path and a FIFO are
//! refused with their messages, the FIFO at once, without a writer.

use crate::common;

use bitexact::files::regular_file::{RegularFileError, open_regular_file};
use std::io::Read;
use std::time::Duration;

#[test]
fn a_regular_file_is_returned_open_for_blocking_reads_and_is_the_file_checked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.npy");
    std::fs::write(&path, b"checked").unwrap();
    let mut file = open_regular_file(&path).unwrap();
    let flags = rustix::fs::fcntl_getfl(&file).unwrap();
    assert!(!flags.contains(rustix::fs::OFlags::NONBLOCK), "{flags:?}");
    // The path now names a directory: what was checked is what is read.
    std::fs::remove_file(&path).unwrap();
    std::fs::create_dir(&path).unwrap();
    let mut read = String::new();
    file.read_to_string(&mut read).unwrap();
    assert_eq!(read, "checked");
}

#[test]
fn a_directory_a_dangling_link_and_a_missing_path_are_refused_with_their_messages() {
    let dir = tempfile::tempdir().unwrap();
    let error = open_regular_file(dir.path()).unwrap_err();
    assert!(matches!(error, RegularFileError::IsDirectory), "{error:?}");
    assert_eq!(error.to_string(), "is a directory");
    let link = dir.path().join("gone.npy");
    std::os::unix::fs::symlink(dir.path().join("nothing"), &link).unwrap();
    let error = open_regular_file(&link).unwrap_err();
    assert!(matches!(error, RegularFileError::DanglingLink), "{error:?}");
    assert_eq!(error.to_string(), "broken symbolic link: its target does not exist");
    let error = open_regular_file(&dir.path().join("missing")).unwrap_err();
    assert!(matches!(error, RegularFileError::Io(_)), "{error:?}");
    assert_eq!(error.to_string(), "no such file or directory");
}

#[test]
fn a_fifo_without_a_writer_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.npy");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|status| status.success()) {
        common::skip("mkfifo failed: no FIFO case");
        return;
    }
    let (sender, answer) = std::sync::mpsc::channel();
    let opened = fifo.clone();
    std::thread::spawn(move || sender.send(open_regular_file(&opened).map(drop)));
    // A blocked open is the bug this tests: a generous limit, never met by a busy machine.
    let result = answer.recv_timeout(Duration::from_secs(60));
    if result.is_err() {
        // Release the blocked open, so that the test ends.
        let _writer = std::fs::OpenOptions::new().write(true).open(&fifo);
    }
    let error = result.expect("the open of a FIFO answers within 60 s").unwrap_err();
    assert!(matches!(error, RegularFileError::NotRegular), "{error:?}");
    assert_eq!(error.to_string(), "not a regular file");
}
