//! Tests that need something this machine may lack (a GPU, the CUDA tools) skip
//! visibly, or fail when a switch says the thing must be there.

use std::io::Write;

/// Prints `skipped: <reason>` and returns, unless the environment variable `switch` is
/// `1`, in which case it panics with the reason (turning the skip into a test failure).
///
/// The line goes straight to the process's stderr, which the test harness does not
/// capture, so a skip is visible in a plain `cargo test` run.
pub fn skip_or_fail(switch: &str, reason: &str) {
    if std::env::var(switch).is_ok_and(|v| v == "1") {
        panic!("{switch}=1 but {reason}");
    }
    // One write of the whole line, so lines from tests running in parallel do not mix.
    let test = std::thread::current().name().unwrap_or("this test").to_string();
    let line = format!("skipped: {reason} [{test}; {switch}=1 makes this a failure]\n");
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}
