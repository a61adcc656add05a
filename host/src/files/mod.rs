//! The file tools: `scan` (count NaN and ±inf in tensor files) and `normalize` (image →
//! correctly rounded f32, binary16 or bfloat16 tensor).
//!
//! One call per job ([`jobs`]): [`scan()`] and [`normalize()`], with [`ScanOptions`] and
//! [`NormalizeOptions`]; the modules below are their parts. One `scan` call passes
//! through, in order:
//!
//! 1. [`backend::select`]: the device (`Device::Gpu` opens the GPU now);
//! 2. [`scan_inputs`]: paths expanded into files (directories walked, indexes read);
//! 3. [`tensor_io`] (with [`tensor`], [`npy_header`], [`npz`]): each file's header read
//!    into its tensor list, before anything is scanned;
//! 4. [`scan_inputs::check_index`]: each index checked against its shards (warnings);
//! 5. [`backend::DeviceChoice::for_job`] and [`auto`]: the backend for the job's bytes;
//! 6. [`scan_report`]: every tensor read a chunk at a time ([`tensor_io::TensorReader`],
//!    inflated by [`npz`] when deflated) and counted by the backend, [`backend`]'s
//!    [`Backend::count`](backend::Backend::count), which runs [`scan`](mod@scan)'s loop on the CPU
//!    or the format's count kernel on the GPU; then the totals.
//!
//! - Containers: [`tensor`] (one tensor's entry, the `.npy` header), [`npy_header`],
//!   [`npz`] and the `.safetensors` header (`safetensors_header`: its entries and
//!   repeated keys), read through [`tensor_io`], which also writes f32 tensors
//!   atomically.
//! - Scanning: [`scan`](mod@scan) (the counting loops), [`scan_inputs`] (directories and sharded
//!   checkpoints), [`scan_report`] (per-file results and their rendering).
//! - Normalizing: [`normalize`](mod@normalize) (decode and convert a chunk at a time), [`png_rows`] (a
//!   PNG decoded a band at a time on its own thread, overlapping the rest).
//! - [`backend`]: where the work runs, the CPU or the GPU; [`auto`]: the rule that picks
//!   one for `--device auto`.
//! - Errors: each module's own `#[non_exhaustive]` types, rendered as one line through
//!   [`message`]; each layer's wraps the one below (`From`), with the path where there
//!   is one.
//!
//! Owns: bytes on disk and what they mean. Uses: [`crate::support`] and
//! [`crate::gpu`] (through [`backend`], and in [`scan`](mod@scan) the element bound of
//! the count variants the GPU runs).

pub mod auto;
pub mod backend;
pub mod jobs;
pub mod message;
pub mod normalize;
pub mod npy_header;
pub mod npz;
pub mod png_rows;
mod safetensors_header;
pub mod scan;
pub mod scan_inputs;
pub mod scan_report;
pub mod tensor;
pub mod tensor_io;

pub use jobs::{
    NormalizeJobError, NormalizeOptions, NormalizeReport, NormalizeStaged, ScanJobError, ScanOptions, ScanReport,
    normalize, scan,
};
