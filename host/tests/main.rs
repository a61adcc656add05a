//! `host`'s integration tests in one binary (issue 46): each file of this folder is a
//! module of it, so an edit of the library relinks one test executable, not one per
//! file. Run one file's tests with a filter: `cargo test -p host --test main gpu::`.
//!
//! The tests that bound the heap with a counting global allocator (`heap_bound`,
//! `normalize_heap_bound`, `normalize_chunk_bomb_heap`, `npz_vs_zip`) stay binaries of
//! their own: the allocator and its counters are process-wide (host/Cargo.toml lists
//! them).

mod common;

mod architecture;
mod cast_peers;
mod cast_scan;
mod cli_cast;
mod cli_cpu_level;
mod cli_files;
mod cli_search;
mod cuda_baseline;
mod gpu;
mod gpu_bundle;
mod gpu_cxx;
mod normalize_dtypes;
mod normalize_images;
mod ptx_tools;
mod scan_api;
mod scan_files;
mod scan_hostile;
mod scan_red_team;
