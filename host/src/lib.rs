//! Host side of bitexact: the runtime variant table, each family's checked inputs
//! ([`domain`]), the independent exact reference, CPU verification and timing, the
//! UNORM/SNORM scheme finder ([`search`]), the GPU layer ([`gpu`]) and benchmarks, the
//! CUDA tools and the SASS cost report, tensor scanning and image normalising on real
//! files ([`scan`], [`scan_inputs`], [`tensor_io`], [`npz`], [`normalize`]), and the
//! `bitexact` command-line tool.
//!
//! Everything is driven by `shared::for_each_variant!` through [`table::VARIANTS`].
#![deny(unsafe_code)]

pub mod backend;
pub mod bench;
pub mod cpu;
pub mod domain;
pub mod gpu;
pub mod guards;
pub mod normalize;
pub mod npy_header;
pub mod npz;
pub mod parallel;
pub mod progress;
pub mod ptx;
pub mod reference;
pub mod report;
pub mod sass;
pub mod scan;
pub mod scan_inputs;
pub mod scan_report;
pub mod search;
pub mod skip;
pub mod table;
pub mod tensor_io;
pub mod tools;
