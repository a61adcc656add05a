//! Skip-or-fail for tests whose prerequisite (CUDA tools, a GPU, Python with NumPy) may
//! be missing: the one way the workspace's tests skip, and the one way they read a
//! `REQUIRE_*` switch ([`required`]).
//!
//! On a machine without the prerequisite such a test prints `skipped: <reason>` and
//! passes; with its switch set in the environment (e.g. `REQUIRE_CUDA_TOOLS=1`, as CI
//! does) it fails instead, so a missing install cannot turn a suite green unnoticed. A
//! skip that no switch turns into a failure (no `/dev/full` on this system) only prints:
//! [`skip()`].
//!
//! Each line is written in one piece straight to the process's stderr, which the test
//! harness does not capture (it captures `print!` and `eprint!`), so a skip is visible in
//! a plain `cargo test` run and lines of tests running in parallel do not mix. The line
//! names the test: the name of the thread it runs on, as the harness names it.
//!
//! For tests: the panic of [`require_or_skip`] and [`skip_or_fail`] is how a required
//! prerequisite fails its test. It lives in this crate, the lowest one of the workspace
//! with `std` that the crates with such tests already depend on.

use std::fmt::Display;
use std::io::Write;

/// Whether the environment variable `switch` is set to something other than empty or
/// `0`, i.e. whether a missing prerequisite must fail the test.
pub fn required(switch: &str) -> bool {
    std::env::var_os(switch).is_some_and(|v| !v.is_empty() && v != "0")
}

/// The prerequisite if it is there. If `prerequisite` is an error: [`skip_or_fail`] with
/// it, which panics when [`required`]`(switch)`, otherwise prints `skipped: <error>`; then
/// `None`, for the test to return early and pass.
#[track_caller]
pub fn require_or_skip<T, E: Display>(switch: &str, prerequisite: Result<T, E>) -> Option<T> {
    match prerequisite {
        Ok(value) => Some(value),
        Err(reason) => {
            skip_or_fail(switch, reason);
            None
        }
    }
}

/// Fails the test (panics with `reason`) when [`required`]`(switch)`, otherwise prints
/// `skipped: <reason> [<test>; <switch>=1 makes this a failure]` to stderr, uncaptured.
#[track_caller]
pub fn skip_or_fail(switch: &str, reason: impl Display) {
    if required(switch) {
        panic!("{reason} (required because {switch} is set)");
    }
    write_line(&format!("skipped: {reason} [{}; {switch}=1 makes this a failure]\n", current_test()));
}

/// Prints `skipped: <reason> [<test>]` to stderr, uncaptured, for a skip that no switch
/// turns into a failure.
pub fn skip(reason: &str) {
    write_line(&format!("skipped: {reason} [{}]\n", current_test()));
}

/// The running test's name: its thread's, as the test harness names it.
fn current_test() -> String {
    std::thread::current().name().unwrap_or("this test").to_string()
}

/// Writes `line` to the process's stderr (unbuffered, not captured by the test harness)
/// in one piece, under the lock, so lines of tests running in parallel do not mix.
fn write_line(line: &str) {
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
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

    #[test]
    fn a_skip_without_a_switch_only_prints() {
        skip("(the skip helper's own test, without a switch)");
    }
}
