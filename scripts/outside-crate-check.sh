#!/usr/bin/env bash
# A kernel crate of one's own outside this repository's workspace, built as a new user
# would (docs/own-kernel.md, "A kernel crate outside this workspace"): a temporary
# workspace with a copy of rust-toolchain.toml, a kernel crate, a path dependency of it,
# and a host crate whose build.rs calls ptx-builder; ptx-builder, device-support and
# shared come from this repository by absolute path.
#
# It runs the host crate's one test (the PTX holds the kernel, passes check_ptx, and
# embeds the path dependency's constant), then edits that constant and runs the test
# again: it passes only if the edit rebuilt the PTX. Where ptxas is found
# ($BITEXACT_CUDA_TOOLS, else this repository's .cuda-tools/), it also checks that the
# builder assembled the module. Exits non-zero on any failure; prints its time.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
start=$SECONDS

# ptxas: the variable, else this repository's install (a new user's would be a
# .cuda-tools/ folder above their kernel crate).
if [[ -z "${BITEXACT_CUDA_TOOLS:-}" && -d "$repo/.cuda-tools" ]]; then
    export BITEXACT_CUDA_TOOLS="$repo/.cuda-tools"
fi
# A fresh target directory, as a new user has.
unset CARGO_TARGET_DIR CARGO_BUILD_TARGET_DIR

cp "$repo/rust-toolchain.toml" "$work/"
cat > "$work/Cargo.toml" <<'EOF'
[workspace]
resolver = "3"
members = ["kernels", "tag", "app"]
EOF

mkdir -p "$work/tag/src"
cat > "$work/tag/Cargo.toml" <<'EOF'
[package]
name = "scale-tag"
version = "0.1.0"
edition = "2024"
EOF
printf '#![no_std]\npub const TAG: u32 = 19088743;\n' > "$work/tag/src/lib.rs"

mkdir -p "$work/kernels/src"
cat > "$work/kernels/Cargo.toml" <<EOF
[package]
name = "scale-kernels"
version = "0.1.0"
edition = "2024"

[lib]
crate-type = ["rlib"]

[dependencies]
scale-tag = { path = "../tag" }
shared = { path = "$repo/shared" }
device-support = { path = "$repo/device-support" }
EOF
cat > "$work/kernels/src/lib.rs" <<'EOF'
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]

device_support::trap_on_panic!();

/// binary16 bits widened to f32 (exact), times `scale` (rounded once): the CPU twin.
#[inline(always)]
pub fn scaled(bits: u16, scale: f32) -> f32 {
    f32::from_bits(shared::binary16::to_f32_bits(bits)) * scale
}

/// `output[i]` = the bits of `scaled(input[i], scale)` for `i < n`; lane 0 writes
/// `scale_tag::TAG` to `tag[0]`.
///
/// # Safety
/// `input` and `output` hold `n` elements, `tag` one.
#[cfg(target_arch = "nvptx64")]
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn scale_f16(input: *const u16, output: *mut u32, n: u64, scale: f32, tag: *mut u32) {
    let lane = device_support::this_lane();
    // SAFETY: forwarded from this kernel's contract.
    unsafe { device_support::map_with(lane, input, output, n, |b: u16| scaled(b, scale).to_bits()) };
    if lane.index == 0 {
        // SAFETY: `tag` holds one element.
        unsafe { tag.write(scale_tag::TAG) };
    }
}
EOF

mkdir -p "$work/app/src" "$work/app/tests"
cat > "$work/app/Cargo.toml" <<EOF
[package]
name = "scale-app"
version = "0.1.0"
edition = "2024"

[build-dependencies]
ptx-builder = { path = "$repo/ptx-builder" }

[dev-dependencies]
ptx-builder = { path = "$repo/ptx-builder" }
scale-kernels = { path = "../kernels" }
scale-tag = { path = "../tag" }
EOF
echo 'fn main() { ptx_builder::PtxBuilder::new("../kernels").build_or_exit(); }' > "$work/app/build.rs"
echo 'pub const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));' > "$work/app/src/lib.rs"
cat > "$work/app/tests/ptx.rs" <<'EOF'
#[test]
fn the_ptx_holds_the_kernel_with_the_current_tag_and_passes_the_checks() {
    let ptx = scale_app::PTX;
    assert!(ptx.contains(".visible .entry scale_f16("), "no kernel scale_f16");
    assert_eq!(ptx_builder::check_ptx(ptx, ptx_builder::Target::new(75)), []);
    assert!(ptx.contains(&scale_tag::TAG.to_string()), "the PTX does not embed TAG = {}: stale", scale_tag::TAG);
    assert_eq!(scale_kernels::scaled(0x3C00, 2.5), 2.5, "1.0 times 2.5");
}
EOF

echo "outside-crate-check: building a kernel crate outside the workspace in $work"
# Not quiet: the builder's warnings (a missing ptxas) show in the log.
cargo test --manifest-path "$work/Cargo.toml" -p scale-app
if [[ -n "${BITEXACT_CUDA_TOOLS:-}" ]]; then
    cubins=$(find "$work/target" -name 'kernels.sm_75.cubin' | wc -l)
    [[ $cubins -ge 1 ]] || { echo "outside-crate-check: ptxas is at $BITEXACT_CUDA_TOOLS but no cubin was assembled" >&2; exit 1; }
fi
# An edit to a path dependency of the kernel crate must rebuild the PTX.
printf '#![no_std]\npub const TAG: u32 = 1985229328;\n' > "$work/tag/src/lib.rs"
cargo test --manifest-path "$work/Cargo.toml" -p scale-app -q
echo "outside-crate-check: passed in $((SECONDS - start)) s"
