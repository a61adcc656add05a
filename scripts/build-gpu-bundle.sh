#!/usr/bin/env bash
# Builds everything a GPU machine with CUDA but no Rust needs into target/gpu-bundle/:
# the release `bitexact` binary, the `host` test binaries (bin/test-*), COMMIT (the
# commit it was built from), gpu-check.sh and torch_baseline.py, and cxx-ptx/: the CUDA
# C++ baseline's PTX for sm_90 under each NVRTC flag set, compiled here by
# `bitexact sass --cxx --emit-ptx` (the GPU machine has no NVRTC of ours; this one needs
# scripts/install-cuda-tools.sh); the binaries are stripped of debug information. Then packs that folder into target/gpu-bundle.tar.xz
# and fails if the archive is over the 64 MiB a device call carries. Copy either to the
# GPU machine and run there:
#     tar -xJf target/gpu-bundle.tar.xz -C target   # if the archive was carried
#     target/gpu-bundle/gpu-check.sh OUTDIR
#
#   scripts/build-gpu-bundle.sh           # build, strip, pack, check the size
#   scripts/build-gpu-bundle.sh --pack    # only pack and check an existing target/gpu-bundle
#   GPU_BUNDLE_LIMIT_BYTES=N ...          # another limit than 64 MiB (the tests' small one)
#   GPU_BUNDLE_DIR=DIR ...                # another folder than target/gpu-bundle (the tests')
set -euo pipefail
cd "$(dirname "$0")/.."
bundle="${GPU_BUNDLE_DIR:-target/gpu-bundle}"
archive="$bundle.tar.xz"
limit="${GPU_BUNDLE_LIMIT_BYTES:-$((64 * 1024 * 1024))}"

# Packs $bundle into $archive (xz: 88 MB of binaries become a few MB) and fails when the
# archive would not fit in one device call's carried files.
pack() {
  [ -d "$bundle" ] || { echo "build-gpu-bundle: no $bundle to pack" >&2; exit 1; }
  tar -C "$(dirname "$bundle")" -cf - "$(basename "$bundle")" | xz -T0 -6 >"$archive.partial"
  mv "$archive.partial" "$archive"
  local size
  size=$(stat -c %s "$archive")
  if [ "$size" -gt "$limit" ]; then
    echo "build-gpu-bundle: $archive is $size bytes, over the $limit a device call carries" >&2
    exit 1
  fi
  echo "bundle archive: $archive, $size bytes (limit $limit)"
}

if [ "${1:-}" = "--pack" ]; then
  pack
  exit 0
fi

rm -rf "$bundle"
mkdir -p "$bundle/bin"

cargo build --release -p host
cp "${CARGO_TARGET_DIR:-target}/release/bitexact" "$bundle/bin/bitexact"
# The C++ baseline's PTX, one file per flag set (GPU_BUNDLE_CXX_ARCHS: other architectures,
# comma-separated; the GPU check picks the newest one the device runs).
if ! "$bundle/bin/bitexact" sass --cxx --arch "${GPU_BUNDLE_CXX_ARCHS:-sm_90}" --emit-ptx "$bundle/cxx-ptx" >/dev/null; then
  echo "build-gpu-bundle: cannot compile the C++ baseline's PTX (scripts/install-cuda-tools.sh installs NVRTC)" >&2
  exit 1
fi

# Builds package $1's tests in release and copies each executable to bin/test-$2<name>
# (`cargo test --no-run` names each as "Executable <what> (<path>)"): `tests/main.rs` is
# `main` (host's integration tests), `unittests src/main.rs` is `unit_main`,
# `unittests src/lib.rs` is `unit_lib`. The library's unit tests are its wings'
# (host/wings/*), which need no GPU: only the cuda_tools wing's are bundled (below).
copy_tests() {
  local package="$1" prefix="$2"
  cargo test --release -p "$package" --no-run 2>&1 | tee -a "$bundle/build.log" |
    sed -n 's/^ *Executable \(.*\) (\(.*\))$/\1|\2/p' |
    while IFS='|' read -r what path; do
      name=$(echo "$what" | sed 's#^unittests src/#unit_#; s#^tests/##; s#/main\.rs$##; s#\.rs$##; s#[^A-Za-z0-9_]#_#g')
      cp "$path" "$bundle/bin/test-$prefix$name"
    done
}
copy_tests host ""
# The cuda_tools wing's unit tests: the CUDA-tool checks of the embedded PTX (each timing
# kernel's chain loop among them) and of the C++ baseline (they need no GPU; the gpu
# check runs them with that machine's tools).
copy_tests bitexact-cuda-tools cuda_tools_
# The block-level example (examples/fp8-scale): its tests (the GPU proof among them) as
# test-fp8_scale_*, and its GPU benchmark.
copy_tests fp8-scale fp8_scale_
# The block-scaled example (examples/block-scale): MXFP8, FP8 tiles and NVFP4 kernels,
# their GPU proof among its tests, as test-block_scale_*.
copy_tests block-scale block_scale_
# The block-level tour (device-support/tests/block-host): block-kernels on the GPU
# against the CPU emulator in 1-D, 2-D and 3-D shapes with dynamic shared memory, as
# test-block_host_*.
copy_tests block-host block_host_
cargo build --release -p fp8-scale --bin fp8-scale-gpu-bench
cp "${CARGO_TARGET_DIR:-target}/release/fp8-scale-gpu-bench" "$bundle/bin/fp8-scale-gpu-bench"
cp scripts/fp8_torch.py "$bundle/fp8_torch.py"
# The gpu check runs the GPU tests and the CUDA-tool tests first, from host's one test
# binary (tests/main.rs: modules gpu, gpu_cxx, ptx_tools), and the cuda_tools wing's unit
# tests (the PTX and its SASS, the timing chains, the C++ baseline) with the machine's
# ptxas and NVRTC.
for name in main cuda_tools_unit_lib; do
  [ -x "$bundle/bin/test-$name" ] || { echo "build-gpu-bundle: no test binary $name" >&2; exit 1; }
done
echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . 2>/dev/null || echo '+changes')" > "$bundle/COMMIT"
cp scripts/gpu-check.sh "$bundle/gpu-check.sh"
cp scripts/torch_baseline.py "$bundle/torch_baseline.py"
chmod +x "$bundle"/bin/* "$bundle/gpu-check.sh"
# Debug information is most of the binaries' size and of no use on the GPU machine.
strip --strip-debug "$bundle"/bin/*
ls -la "$bundle" "$bundle/bin"
du -sh "$bundle"
pack
echo "bundle ready: $bundle and $archive (run: $bundle/gpu-check.sh OUTDIR on a GPU machine)"
