#!/usr/bin/env bash
# Builds everything a GPU machine with CUDA but no Rust needs into target/gpu-bundle/:
# the release `bitexact` binary, the `host` test binaries (bin/test-*), COMMIT (the
# commit it was built from), gpu-check.sh and torch_baseline.py. Copy that folder to the GPU machine and
# run there:
#     target/gpu-bundle/gpu-check.sh OUTDIR
set -euo pipefail
cd "$(dirname "$0")/.."
bundle=target/gpu-bundle
rm -rf "$bundle"
mkdir -p "$bundle/bin"

cargo build --release -p host
cp target/release/bitexact "$bundle/bin/bitexact"

# `cargo test --no-run` names each test executable as "Executable <what> (<path>)".
cargo test --release -p host --no-run 2>&1 | tee "$bundle/build.log" |
  sed -n 's/^ *Executable \(.*\) (\(.*\))$/\1|\2/p' |
  while IFS='|' read -r what path; do
    name=$(echo "$what" | sed 's#^unittests src/##; s#^tests/##; s#\.rs$##; s#[^A-Za-z0-9_]#_#g')
    cp "$path" "$bundle/bin/test-$name"
  done
# The gpu check runs the GPU tests and the CUDA-tool tests first, by these names.
for name in gpu ptx_tools; do
  [ -x "$bundle/bin/test-$name" ] || { echo "build-gpu-bundle: no test binary $name" >&2; exit 1; }
done
echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . 2>/dev/null || echo '+changes')" > "$bundle/COMMIT"
cp scripts/gpu-check.sh "$bundle/gpu-check.sh"
cp scripts/torch_baseline.py "$bundle/torch_baseline.py"
chmod +x "$bundle"/bin/* "$bundle/gpu-check.sh"
ls -la "$bundle" "$bundle/bin"
du -sh "$bundle"
echo "bundle ready: $bundle (run: $bundle/gpu-check.sh OUTDIR on a GPU machine)"
