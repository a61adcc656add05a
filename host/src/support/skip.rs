//! Skip-or-fail for tests whose prerequisite (CUDA tools, a GPU) may be missing.
//!
//! On a machine without the prerequisite such a test prints `skipped: <reason>` and
//! passes; with its switch set in the environment (e.g. `REQUIRE_CUDA_TOOLS=1`, as CI
//! does) it fails instead, so a missing install cannot turn a suite green unnoticed.

use std::fmt::Display;
use std::io::Write;

/// Whether the environment variable `switch` is set to something other than empty or
/// `0`, i.e. whether a missing prerequisite must fail the test.
pub fn required(switch: &str) -> bool {
    std::env::var_os(switch).is_some_and(|v| !v.is_empty() && v != "0")
}

/// The prerequisite if it is there. If `prerequisite` is an error: panics with the error
/// when [`required`]`(switch)`, otherwise prints `skipped: <error>` and returns `None`,
/// for the test to return early and pass.
///
/// The line is written in one piece straight to the process's stderr, which the test
/// harness does not capture, so a skip is visible in a plain `cargo test` run and lines
/// of tests running in parallel do not mix.
///
/// For tests only: the panic is how a required prerequisite fails its test.
#[track_caller]
pub fn require_or_skip<T, E: Display>(switch: &str, prerequisite: Result<T, E>) -> Option<T> {
    match prerequisite {
        Ok(value) => Some(value),
        Err(reason) if required(switch) => panic!("{reason} (required because {switch} is set)"),
        Err(reason) => {
            let test = std::thread::current().name().unwrap_or("this test").to_string();
            let line = format!("skipped: {reason} [{test}; {switch}=1 makes this a failure]\n");
            let _ = std::io::stderr().lock().write_all(line.as_bytes());
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A switch no environment sets.
    const UNSET: &str = "BITEXACT_TEST_SWITCH_THAT_IS_NEVER_SET";

    #[test]
    fn a_present_prerequisite_is_returned() {
        assert_eq!(require_or_skip::<_, String>(UNSET, Ok(7)), Some(7));
    }

    #[test]
    fn a_missing_prerequisite_skips_unless_required() {
        assert!(!required(UNSET));
        assert_eq!(require_or_skip::<u8, _>(UNSET, Err("(the skip helper's own test)")), None);
    }
}
