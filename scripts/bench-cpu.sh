#!/usr/bin/env bash
# CPU throughput of `scan`, `normalize` and the conversions against memcpy and the peers
# (NumPy, ml_dtypes, the half and float8 crates), in one run.
#
#   scripts/bench-cpu.sh            # 256 MiB buffers, best of 5
#   BENCH_MIB=512 BENCH_REPS=3 scripts/bench-cpu.sh
#
# Runs the Rust benchmark (host/benches/cpu_throughput.rs: scan, and every normalize
# conversion at every CPU level this machine has, one thread and all cores against
# memcpy), then NumPy on buffers of the same size (scripts/bench_cpu_peers.py normalize:
# ns per sample, and how many of NumPy's values are inexact). NumPy, Pillow and ml_dtypes
# are pip-installed into target/bench-venv if the system python3 lacks them.
# Then the f32 <-> binary16 / bfloat16 / FP8 conversions next to the `half` and `float8`
# crates (tests/benches/narrow_vs_crates.rs): ns/element, one thread, 16 Mi inputs, best
# of BENCH_REPS, the outputs compared bit for bit, and bitexact::cpu::convert's forms at every
# level; it writes its inputs and our exact outputs to target/bench-dump, on which
# scripts/bench_cpu_peers.py convert times NumPy and ml_dtypes `astype` and counts their
# inexact results, ours next to the fastest peer of the run.
# Last, `scan` and `normalize` end to end (`bitexact bench-files`): a BENCH_MIB binary16
# .npy and a 4096×4096 RGB PNG, --device cpu, gpu (skipped without one) and auto, the
# phases of normalize, and the Pillow + NumPy route on the same image (its time, and how
# many of its values differ from ours).
set -euo pipefail
cd "$(dirname "$0")/.."

MIB=${BENCH_MIB:-256}
REPS=${BENCH_REPS:-5}
RESULTS="$PWD/target/bench-cpu.json"  # absolute: cargo runs benches in host/
mkdir -p target  # for RESULTS, even when CARGO_TARGET_DIR puts the build elsewhere

if python3 -c 'import numpy, PIL, ml_dtypes' 2>/dev/null; then
    PYTHON=python3
else
    if ! target/bench-venv/bin/python -c 'import numpy, PIL, ml_dtypes' 2>/dev/null; then
        echo "== installing numpy, pillow and ml_dtypes into target/bench-venv"
        python3 -m venv target/bench-venv
        target/bench-venv/bin/pip install --quiet numpy pillow ml_dtypes
    fi
    PYTHON=$PWD/target/bench-venv/bin/python
fi

echo "== ours (cargo bench -p host --bench cpu_throughput)"
cargo bench --quiet -p host --bench cpu_throughput -- --mib "$MIB" --reps "$REPS" --json "$RESULTS"

echo
echo "== numpy, and ratios"
"$PYTHON" scripts/bench_cpu_peers.py normalize "$RESULTS" "$MIB" "$REPS"

echo
echo "== conversions next to half and float8 (cargo bench -p conformance --bench narrow_vs_crates), then NumPy and ml_dtypes"
DUMP="$PWD/target/bench-dump"
mkdir -p "$DUMP"
cargo bench --quiet -p conformance --bench narrow_vs_crates -- --reps "$REPS" --dump "$DUMP"
echo
"$PYTHON" scripts/bench_cpu_peers.py convert "$DUMP" "$REPS"

echo
echo "== scan and normalize end to end (bitexact bench-files)"
cargo run --quiet --release -p host -- bench-files --mib "$MIB" --reps "$REPS" --python "$PYTHON"
