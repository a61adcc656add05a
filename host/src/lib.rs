//! Host side of bitexact: the runtime variant table, each family's checked inputs
//! ([`domain`]), the independent exact reference, CPU verification and timing, the
//! UNORM/SNORM scheme finder ([`search`]), and the `bitexact` command-line tool.
//!
//! Everything is driven by `shared::for_each_variant!` through [`table::VARIANTS`].
#![deny(unsafe_code)]

pub mod cpu;
pub mod domain;
pub mod ptx;
pub mod reference;
pub mod report;
pub mod search;
pub mod table;
