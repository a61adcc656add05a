//! Small building blocks every product uses, and nothing else: the integer element
//! types of inputs and outputs ([`element`]), data-parallel loops on rayon
//! (`parallel`), timing against a same-run baseline ([`best_of_pair`]), progress bars
//! (`progress`), visible skips of tests that need a missing tool or GPU ([`skip`]), and
//! output formats and tables (`output`).
//!
//! Owns no domain knowledge. Uses no other wing of the library.
#![deny(unsafe_code)]

#[doc(hidden)]
pub mod chain;
pub mod element;
#[doc(hidden)]
pub mod output;
#[doc(hidden)]
pub mod parallel;
#[doc(hidden)]
pub mod progress;
pub mod skip;

/// Times a piece of work against a baseline in the same run, in turn, and keeps each
/// side's best time (at least one run each), for the benches' measure: the ratio of the
/// two, never a bare time.
pub use parallel::best_of_pair;
