//! The file tools: `scan` (count NaN and ±inf in tensor files) and `normalize` (image →
//! correctly rounded f32, binary16 or bfloat16 tensor).
//!
//! One call per job: [`scan()`] ([`scan`](mod@scan)) and [`normalize()`]
//! ([`normalize`](mod@normalize)), with [`ScanOptions`] and [`NormalizeOptions`]; the
//! rooms below are their parts:
//!
//! - [`containers`]: what a tensor file's bytes mean: `.npy` ([`containers::npy`],
//!   [`containers::npy_header`]), `.npz` ([`containers::npz`]), `.safetensors`
//!   ([`containers::safetensors`]) and the sharded index ([`containers::index`]).
//! - Reading: [`source`] (positioned reads of a file), [`read`] (a file opened, its
//!   header parsed, its tensors read a chunk at a time).
//! - Writing: [`write`](mod@write) (tensors staged and renamed into place; the temporary
//!   files the Ctrl-C handler removes, [`write::temporaries`]).
//! - [`scan`](mod@scan): the job, its inputs ([`scan::inputs`]: directories and sharded
//!   checkpoints) and its report ([`scan::report`]).
//! - [`normalize`](mod@normalize): the job, the image decoded and converted a chunk at a
//!   time ([`normalize::image`]), a PNG decoded a band at a time on its own thread
//!   ([`normalize::png_rows`]).
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
//! 4. [`containers::index::check_index`]: each index checked against its shards
//!    (warnings);
//! 5. [`backend::DeviceChoice::for_job`] and [`backend::auto`]: the backend for the
//!    job's bytes;
//! 6. [`scan::report`]: every tensor read a chunk at a time ([`read::TensorReader`],
//!    inflated by [`containers::npz`] when deflated) and counted by the backend,
//!    [`Backend::count`](backend::Backend::count), which runs [`backend::count`]'s loop
//!    on the CPU or the format's count kernel on the GPU; then the totals.
//!
//! Owns: bytes on disk and what they mean. Uses: [`crate::support`],
//! [`crate::gpu`] (through [`backend`], and in [`backend::count`] the element bound of
//! the count variants the GPU runs) and [`crate::cpu`] (the CPU loops, compiled for the
//! level chosen at run time).

pub mod backend;
pub mod containers;
pub mod message;
pub mod normalize;
pub mod read;
pub mod scan;
pub mod source;
pub mod write;

pub use normalize::{NormalizeJobError, NormalizeOptions, NormalizeReport, NormalizeStaged, normalize};
pub use scan::{ScanJobError, ScanOptions, ScanReport, scan};
