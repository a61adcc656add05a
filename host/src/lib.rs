//! Host side of bitexact: the runtime variant table, the independent exact reference,
//! CPU verification and timing, and the `bitexact` command-line tool.
//!
//! Everything is driven by `shared::for_each_variant!` through [`table::VARIANTS`].
#![deny(unsafe_code)]

pub mod backend;
pub mod cpu;
pub mod normalize;
pub mod progress;
pub mod ptx;
pub mod reference;
pub mod report;
pub mod scan;
pub mod scan_report;
pub mod table;
pub mod tensor_io;
