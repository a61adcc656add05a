#!/usr/bin/env bash
# CPU throughput of `scan` and `normalize` against memcpy and NumPy, in one run.
#
#   scripts/bench-cpu.sh            # 256 MiB buffers, best of 5
#   BENCH_MIB=512 BENCH_REPS=3 scripts/bench-cpu.sh
#
# Runs the Rust benchmark (host/benches/cpu_throughput.rs), then times NumPy on buffers
# of the same size and content class: `np.isfinite(a).all()` on float16 for scan and
# `a.astype(np.float32) / np.float32(255)` on uint8 for normalize. Prints bytes/s and
# the ratios ours/memcpy and ours/numpy (single-threaded, and all cores for ours).
# NumPy and Pillow are pip-installed into target/bench-venv if the system python3 lacks
# them.
# Then the f32 <-> binary16 / bfloat16 / FP8 conversions next to the `half` and `float8`
# crates (tests/benches/narrow_vs_crates.rs): ns/element, one thread, 16 Mi inputs, best
# of BENCH_REPS, and the outputs compared bit for bit.
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

if python3 -c 'import numpy, PIL' 2>/dev/null; then
    PYTHON=python3
else
    if ! target/bench-venv/bin/python -c 'import numpy, PIL' 2>/dev/null; then
        echo "== installing numpy and pillow into target/bench-venv"
        python3 -m venv target/bench-venv
        target/bench-venv/bin/pip install --quiet numpy pillow
    fi
    PYTHON=$PWD/target/bench-venv/bin/python
fi

echo "== ours (cargo bench -p host --bench cpu_throughput)"
cargo bench --quiet -p host --bench cpu_throughput -- --mib "$MIB" --reps "$REPS" --json "$RESULTS"

echo
echo "== numpy, and ratios"
"$PYTHON" - "$RESULTS" "$MIB" "$REPS" <<'EOF'
import json, sys, time
import numpy as np

results_path, mib, reps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ours = {r["op"]: r for r in json.load(open(results_path))["results"]}
n_bytes = mib << 20

def best_of(work):
    best = float("inf")
    for _ in range(reps):
        start = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - start)
    return best

rng = np.random.default_rng(0)
# Same content class as the Rust benchmark: random finite values.
bits = rng.integers(0, 1 << 16, size=n_bytes // 2, dtype=np.uint16) & np.uint16(0xBFBF)
half = bits.view(np.float16)
assert np.isfinite(half).all()
numpy_scan = best_of(lambda: np.isfinite(half).all())
del bits, half

pixels = rng.integers(0, 256, size=n_bytes, dtype=np.uint8)
numpy_normalize = best_of(lambda: pixels.astype(np.float32) / np.float32(255))
del pixels

def gbps(seconds):
    return n_bytes / seconds / 1e9

print(f"numpy {np.__version__}: isfinite(float16).all() {gbps(numpy_scan):.2f} GB/s, "
      f"astype(float32)/255 on uint8 {gbps(numpy_normalize):.2f} GB/s ({mib} MiB, best of {reps})")
print()
header = f"{'operation':<24} {'1 thread GB/s':>13} {'vs memcpy':>9} {'vs numpy':>9} {'all cores GB/s':>14} {'vs memcpy':>9} {'vs numpy':>9}"
print(header)
print("-" * len(header))
for op, numpy_s in [("scan binary16", numpy_scan), ("normalize unorm8→f32", numpy_normalize)]:
    r = ours[op]
    print(f"{op:<24} {gbps(r['one_thread_s']):>13.2f} {r['memcpy_one_thread_s'] / r['one_thread_s']:>8.2f}x "
          f"{numpy_s / r['one_thread_s']:>8.2f}x {gbps(r['all_cores_s']):>14.2f} "
          f"{r['memcpy_all_cores_s'] / r['all_cores_s']:>8.2f}x {numpy_s / r['all_cores_s']:>8.2f}x")
print()
print("memcpy copies the bytes the operation touches at its wider end: N for scan (reads N),")
print("4N for normalize (writes 4N bytes of f32). numpy runs on one thread.")
EOF

echo
echo "== conversions next to half and float8 (cargo bench -p conformance --bench narrow_vs_crates)"
cargo bench --quiet -p conformance --bench narrow_vs_crates -- --reps "$REPS"

echo
echo "== scan and normalize end to end (bitexact bench-files)"
cargo run --quiet --release -p host -- bench-files --mib "$MIB" --reps "$REPS" --python "$PYTHON"
