//! The CPU levels a test runs at: every one this machine has. Shared by the test files
//! that check a loop at every level (`#[path]`-included: not a test target of its own).

use bitexact::cpu::{Level, LevelError};
use bitexact::support::skip::skip;

/// Makes a missing level fail when set to that level or a higher one.
pub const REQUIRE: &str = "REQUIRE_CPU_LEVEL";

/// Every level this machine has. Each other one prints `skipped: <reason>` once (through
/// the workspace's one skip helper, `bitexact::support::skip`), or fails the test when
/// [`REQUIRE`] names it or a higher level: the switch names a level, so it is read here
/// rather than as the helper's set-or-unset switch.
pub fn levels() -> Vec<Level> {
    let required = std::env::var(REQUIRE).ok().map(|name| Level::parse(&name, REQUIRE).expect("a level name"));
    Level::each()
        .filter_map(|level: Result<Level, LevelError>| match level {
            Ok(level) => Some(level),
            Err(error @ LevelError::Missing { level, .. }) => {
                assert!(required.is_none_or(|r| r < level), "{error} (required because {REQUIRE} is set)");
                skip(&format!("{error} ({REQUIRE}={level} makes this a failure)"));
                None
            }
            Err(error) => panic!("{error}"),
        })
        .collect()
}
