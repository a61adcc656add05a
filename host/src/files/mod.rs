//! The file tools: `scan` (count NaN and ±inf in tensor files) and `normalize` (image →
//! correctly rounded f32 tensor).
//!
//! - Containers: [`tensor`] (one tensor's entry, the `.npy` header), [`npy_header`],
//!   [`npz`] and the `.safetensors` header (`safetensors_header`: its entries and
//!   repeated keys), read through [`tensor_io`], which also writes f32 tensors
//!   atomically.
//! - Scanning: [`scan`] (the counting loops), [`scan_inputs`] (directories and sharded
//!   checkpoints), [`scan_report`] (per-file results and their rendering).
//! - Normalizing: [`normalize`] (decode and convert a chunk at a time), [`png_rows`] (a
//!   PNG decoded a band at a time on its own thread, overlapping the rest).
//! - [`backend`]: where the work runs, the CPU or the GPU; [`auto`]: the rule that picks
//!   one for `--device auto`.
//! - Errors: each module's own `#[non_exhaustive]` types, rendered as one line through
//!   [`message`]; each layer's wraps the one below (`From`), with the path where there
//!   is one.
//!
//! Owns: bytes on disk and what they mean. Uses: [`crate::support`] and
//! [`crate::gpu`] (through [`backend`] only).

pub mod auto;
pub mod backend;
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
