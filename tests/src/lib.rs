//! Cross-crate conformance tests live in `tests/`; this library is empty.
