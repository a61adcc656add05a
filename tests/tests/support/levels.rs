//! The CPU levels a test runs at: every one this machine has. Shared by the test files
//! that check a loop at every level (`#[path]`-included: not a test target of its own).

use bitexact::cpu::{Level, LevelError};
use std::io::Write as _;

/// Makes a missing level fail when set to that level or a higher one.
pub const REQUIRE: &str = "REQUIRE_CPU_LEVEL";

/// Every level this machine has. Each other one prints `skipped: <reason>` once, or
/// fails the test when [`REQUIRE`] names it or a higher level.
pub fn levels() -> Vec<Level> {
    let required = std::env::var(REQUIRE).ok().map(|name| Level::parse(&name, REQUIRE).expect("a level name"));
    let test = std::thread::current().name().unwrap_or("this test").to_string();
    Level::each()
        .filter_map(|level: Result<Level, LevelError>| match level {
            Ok(level) => Some(level),
            Err(error @ LevelError::Missing { level, .. }) => {
                assert!(required.is_none_or(|r| r < level), "{error} (required because {REQUIRE} is set)");
                say(&format!("skipped: {error} [{test}; {REQUIRE}={level} makes this a failure]\n"));
                None
            }
            Err(error) => panic!("{error}"),
        })
        .collect()
}

/// `text` on the process's stderr in one piece, past the test harness's capture.
pub fn say(text: &str) {
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}
