//! Small building blocks every product uses, and nothing else: the integer element
//! types of inputs and outputs ([`element`]), data-parallel loops on rayon
//! ([`parallel`]), progress bars ([`progress`]), visible skips of tests that need a
//! missing tool or GPU ([`skip`]), and output formats and tables ([`output`]).
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
