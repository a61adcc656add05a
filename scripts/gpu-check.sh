#!/usr/bin/env bash
# Runs the GPU checks from a bundle made by scripts/build-gpu-bundle.sh, on a machine
# with CUDA and no Rust. Writes every log and JSON into OUTDIR; prints a summary.
#   gpu-check.sh OUTDIR
# Exits non-zero if any test fails (REQUIRE_GPU=1 is set, so a missing GPU fails too)
# or a report could not be made.
set -u -o pipefail
out=${1:?usage: gpu-check.sh OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
bin="$here/bin"
mkdir -p "$out"
status=0
step() { echo "== $*"; }

step "machine"
{
  date -u; uname -a
  if command -v nvidia-smi >/dev/null; then nvidia-smi; else echo "nvidia-smi: not found"; fi
  echo "--- ldd bitexact"; ldd "$bin/bitexact"
  echo "--- ptxas"; if command -v ptxas >/dev/null; then ptxas --version; else echo "ptxas: not found on PATH"; fi
} > "$out/machine.txt" 2>&1
grep -E "Driver Version|NVIDIA H|not found|ptxas:" "$out/machine.txt" | head -5

step "tests (REQUIRE_GPU=1)"
for t in "$bin"/test-*; do
  name=$(basename "$t")
  if REQUIRE_GPU=1 timeout 420 "$t" > "$out/$name.log" 2>&1; then
    echo "ok      $name: $(grep -E '^test result' "$out/$name.log" | tail -1)"
  else
    status=1
    echo "FAILED  $name (see $name.log):"
    grep -E "panicked|FAILED|skipped|error" "$out/$name.log" | head -10
  fi
done

step "bitexact verify"
"$bin/bitexact" verify --format json > "$out/verify.json" 2> "$out/verify.err" || status=1

step "bitexact sass --arch sm_90"
if "$bin/bitexact" sass --arch sm_90 --format markdown > "$out/sass-sm_90.md" 2> "$out/sass.err"; then
  cat "$out/sass-sm_90.md"
else
  status=1; cat "$out/sass.err"
fi

step "bitexact bench"
# Exit 1 means it printed everything but some timing rows are invalid: show them too.
if timeout 300 "$bin/bitexact" bench --format markdown --json-out "$out/bench.json" > "$out/bench.md" 2> "$out/bench.err"; then
  cat "$out/bench.md"
else
  status=1; cat "$out/bench.md"; tail -5 "$out/bench.err"
fi

step "done: status $status, files in $out"
exit $status
