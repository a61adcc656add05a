//! The wing's own tests: the level names, and (`cpu_levels`) every CPU form at every
//! level this machine has, proven against the exact references of `bitexact_verify`
//! (a test-only dependency: host/tests/architecture.rs's `TEST_LAYERS`).
//!
//! Owns: nothing of the library (compiled only under `#[cfg(test)]`).

mod cpu_levels;

use crate::*;

#[test]
fn names_parse_back_and_unknown_names_are_refused() {
    for level in Level::ALL {
        assert_eq!(Level::parse(level.name(), "test"), Ok(level));
    }
    let error = Level::parse("sse9", LEVEL_VARIABLE).expect_err("not a level");
    assert_eq!(error.to_string(), "BITEXACT_CPU_LEVEL: \"sse9\" is not a CPU level (portable, avx2, avx512)");
}

#[test]
fn the_detected_level_runs_and_every_level_up_to_it_is_available() {
    let best = Level::detect();
    assert_eq!(best.check("test"), Ok(best));
    for level in Level::ALL {
        assert_eq!(level.check("test").is_ok(), level <= best, "{level}");
    }
    assert_eq!(Level::Portable.check("test"), Ok(Level::Portable));
}

#[test]
fn a_level_the_cpu_lacks_is_a_one_line_error() {
    let Some(missing) = Level::ALL.into_iter().find(|level| level.check("x").is_err()) else {
        return; // this CPU has every level
    };
    let message = missing.check("--cpu-level").expect_err("lacks it").to_string();
    assert!(message.starts_with(&format!("--cpu-level: this CPU cannot run level {missing}: it lacks ")), "{message}");
    assert!(!message.contains('\n'), "{message}");
}

/// Makes a missing level fail when set to that level or a higher one.
const REQUIRE: &str = "REQUIRE_CPU_LEVEL";

/// Every level this machine has, for the proofs; each level it lacks prints `skipped:
/// <reason>` through the workspace's skip helper, or fails when [`REQUIRE`] names it or
/// a level above it. (`test_fixtures::levels` does the same for the tests of the crates
/// above this one; it depends on this crate, so this crate's tests cannot use it.)
fn levels() -> Vec<Level> {
    let required = std::env::var(REQUIRE).ok().map(|name| Level::parse(&name, REQUIRE).expect("a level name"));
    let mut have = Vec::new();
    for (level, check) in Level::ALL.into_iter().zip(Level::each()) {
        match check {
            Ok(level) => have.push(level),
            Err(error) => {
                assert!(required.is_none_or(|r| r < level), "{error} (required because {REQUIRE} is set)");
                bitexact_support::skip::skip(&format!("{error} ({REQUIRE}={level} makes this a failure)"));
            }
        }
    }
    have
}
