//! The file tools: `scan` (count NaN and ±inf in tensor files), `normalize` (image →
//! correctly rounded f32, binary16 or bfloat16 tensor) and `cast` (tensor files →
//! bfloat16, binary16, FP8 or NVFP4, every value correctly rounded from its own source value).
//!
//! One call per job: [`scan()`] ([`scan`](mod@scan)), [`normalize()`]
//! ([`normalize`](mod@normalize)) and [`cast()`] ([`cast`](mod@cast)), with
//! [`ScanOptions`], [`NormalizeOptions`] and [`CastOptions`]; the rooms below are their
//! parts. The API is the jobs with their options, reports and errors, [`backend::Device`],
//! `cast`'s element types ([`cast::convert`]) and [`scan::report`]; the other rooms are
//! the wing's plumbing, `#[doc(hidden)]`: public for the binary and the tests, not API:
//!
//! - [`dtype`]: the element types `normalize` writes and `cast` reads and writes, in one
//!   table (names, bytes, `.safetensors`, NumPy and PyTorch names), and the roles made
//!   from it: what `normalize`
//!   writes ([`write::Dtype`]), what `cast` reads and writes ([`cast::convert::SourceDtype`],
//!   [`cast::convert::Target`]).
//! - [`containers`]: what a tensor file's bytes mean: `.npy` ([`containers::npy`],
//!   [`containers::npy_header`]), `.npz` ([`containers::npz`]), `.safetensors`
//!   ([`containers::safetensors`]) and the sharded index ([`containers::index`]).
//! - Reading: [`regular_file`] (an input checked to be a regular file), [`source`]
//!   (positioned reads of a file), [`read`] (a file opened, its header parsed, its
//!   tensors read a chunk at a time).
//! - Writing: [`output`] (the one path of every output file: its temporary, listed for
//!   the Ctrl-C handler in [`output::temporaries`], its writeback and its commit) and
//!   `write` (tensors staged and renamed into place on it).
//! - [`scan`](mod@scan): the job, its inputs ([`scan::inputs`]: directories and sharded
//!   checkpoints) and its report ([`scan::report`]).
//! - [`normalize`](mod@normalize): the job, the image decoded and converted a chunk at a
//!   time ([`normalize::image`]), a PNG decoded a band at a time on its own thread
//!   ([`normalize::png_rows`]).
//! - [`cast`](mod@cast): the job, on the CPU alone: the per-element conversions
//!   ([`cast::convert`]) and their loops over blocks on all cores ([`cast::chunks`]),
//!   which tensors are cast ([`cast::select`]), what NumPy inputs become
//!   ([`cast::numpy`]), the output files and per-tensor FP8 scales ([`cast::output`]).
//! - [`backend`]: where the work runs, the CPU ([`backend::count`]: the counting loops)
//!   or the GPU; [`backend::auto`]: the rule that picks one for `--device auto`.
//! - Errors: each module's own `#[non_exhaustive]` types, rendered as one line through
//!   [`message`]; each layer's wraps the one below (`From`), with the path where there
//!   is one.
//!
//! One `scan` call passes through, in order:
//!
//! 1. [`backend::select`]: the device (`Device::Gpu` opens the GPU now);
//! 2. [`scan::inputs`]: paths expanded into files (directories walked, indexes read by
//!    [`containers::index`]);
//! 3. [`read`] (with [`containers`] and [`source`]): each file's header read into its
//!    tensor list, before anything is scanned;
//! 4. `scan::inputs::check_index`: each index checked against its shards
//!    (warnings);
//! 5. `backend::DeviceChoice::for_job` and [`backend::auto`]: the backend for the
//!    job's bytes;
//! 6. [`scan::report`]: every tensor read a chunk at a time ([`read::TensorReader`],
//!    inflated by [`containers::npz`] when deflated) and counted by the backend,
//!    `Backend::count`, which runs [`backend::count`]'s loop
//!    on the CPU or the format's count kernel on the GPU; then the totals.
//!
//! Owns: bytes on disk and what they mean. Uses: [`bitexact_support`],
//! [`bitexact_gpu`] (through [`backend`], and in [`backend::count`] the element bound of
//! the count variants the GPU runs) and [`bitexact_cpu`] (the CPU loops, compiled for the
//! level chosen at run time).
#![deny(unsafe_code)]

pub mod backend;
pub mod cast;
#[doc(hidden)]
pub mod containers;
#[doc(hidden)]
pub mod dtype;
pub mod message;
pub mod normalize;
#[doc(hidden)]
pub mod output;
#[doc(hidden)]
pub mod read;
#[doc(hidden)]
pub mod regular_file;
pub mod scan;
#[doc(hidden)]
pub mod source;
#[doc(hidden)]
pub mod write;

pub use cast::{CastError, CastOptions, CastReport, cast};
pub use normalize::{NormalizeJobError, NormalizeOptions, NormalizeReport, NormalizeStaged, normalize};
pub use scan::{ScanJobError, ScanOptions, ScanReport, scan};

#[cfg(test)]
mod tests;
