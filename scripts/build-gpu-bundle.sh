#!/usr/bin/env bash
# Builds everything a GPU machine with CUDA but no Rust needs into target/gpu-bundle/:
# the release `bitexact` binary, the `host` test binaries (bin/test-*), and
# gpu-check.sh. Copy that folder to the GPU machine and run:
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
cp scripts/gpu-check.sh "$bundle/gpu-check.sh"
chmod +x "$bundle"/bin/* "$bundle/gpu-check.sh"
ls -la "$bundle" "$bundle/bin"
echo "bundle ready: $bundle (run: $bundle/gpu-check.sh OUTDIR on a GPU machine)"
