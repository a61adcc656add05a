//! Every output dtype of `normalize` ([`Dtype::ALL`]) is offered by `--dtype` with its
//! `--help` line. (The files wing's `tests/normalize_dtypes.rs` checks that each is whole:
//! its conversions, its division by a PNM's `maxval` and its containers.)

use crate::common;

use bitexact::files::normalize::Dtype;

#[test]
fn dtype_offers_every_dtype_with_its_help_line() {
    let output = common::bitexact(&["normalize", "--help"]);
    assert!(output.status.success());
    let help = String::from_utf8_lossy(&output.stdout);
    for dtype in Dtype::ALL {
        // clap lists each possible value as `- name: help`.
        let line = help.lines().find(|line| line.trim_start().starts_with(&format!("- {}:", dtype.name())));
        let line = line.unwrap_or_else(|| panic!("--dtype {} is not listed: {help}", dtype.name()));
        // Its title and its containers' names (`Dtype::summary`, which the files wing's
        // tests check against the dtype table): a `.npy` type string, or why there is none.
        for part in [dtype.title(), ".safetensors "] {
            assert!(line.contains(part), "{line:?} lacks {part:?}");
        }
        assert!(line.contains(".npy <") != line.contains("NumPy has no such dtype"), "{line:?}");
    }
}
