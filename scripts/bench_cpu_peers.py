"""The peers of scripts/bench-cpu.sh, timed in the same run as ours: NumPy and ml_dtypes.

    bench_cpu_peers.py normalize RESULTS_JSON MIB REPS   # after host/benches/cpu_throughput.rs
    bench_cpu_peers.py convert DUMP_DIR REPS              # after tests/benches/narrow_vs_crates.rs --dump

`normalize`: `np.isfinite(f16).all()` next to our scan, and for each sample width and
dtype NumPy's usual route (`astype(float32) / float32(2^n - 1)`, then `astype(dtype)`),
ns per sample on one thread, with how many of its values differ from the exact
`x / (2^n - 1)` on every code, and ours at every level against memcpy on all cores.

`convert`: NumPy / ml_dtypes `astype` on the very inputs narrow_vs_crates timed, their
outputs compared with our exact ones (which it wrote), and ours (the exact path at the best
level) next to the fastest peer of the whole run (half, float8, NumPy, ml_dtypes).
"""

import json
import sys
import time

import ml_dtypes
import numpy as np


def best_of(reps, work):
    best = float("inf")
    for _ in range(reps):
        start = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - start)
    return best


def exact_normalized(codes, denominator, dtype):
    """x / denominator correctly rounded to dtype: the quotient in float64 is far closer to
    it than to any half-way point of f32, binary16 or bfloat16 (a quotient by 2^n - 1 is
    never within 2^-40 relative of one), so one rounding from float64 is the correct one.
    bfloat16 is rounded here with frexp/rint, since ml_dtypes may go through float32."""
    q = codes.astype(np.float64) / denominator
    if dtype is ml_dtypes.bfloat16:
        m, e = np.frexp(q)
        return np.ldexp(np.rint(m * 256.0), e - 8).astype(np.float32).astype(ml_dtypes.bfloat16)
    return q.astype(dtype)


def normalize(results_path, mib, reps):
    results = json.load(open(results_path))["results"]
    ours = {r["op"]: r for r in results}
    n_bytes = mib << 20
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 1 << 16, size=n_bytes // 2, dtype=np.uint16) & np.uint16(0xBFBF)
    half = bits.view(np.float16)
    numpy_scan = best_of(reps, lambda: np.isfinite(half).all())
    del bits, half
    r = ours["scan binary16"]
    print(f"numpy {np.__version__}, ml_dtypes {ml_dtypes.__version__}; {mib} MiB, best of {reps}")
    print(f"scan binary16 at {r['level']}: ours {n_bytes / r['one_thread_s'] / 1e9:.2f} GB/s on one thread, numpy "
          f"isfinite(float16).all() {n_bytes / numpy_scan / 1e9:.2f} GB/s; ours on all cores "
          f"{n_bytes / r['all_cores_s'] / 1e9:.2f} GB/s = {r['memcpy_all_cores_s'] / r['all_cores_s']:.2f}x memcpy")
    print()
    targets = {"f32": (np.float32, np.uint32), "f16": (np.float16, np.uint16), "bf16": (ml_dtypes.bfloat16, np.uint16)}
    header = (f"{'normalize':<14} {'level':<9} {'ns/sample':>9} {'GB/s 1 thr':>10} {'GB/s all':>9} {'vs memcpy':>9} "
              f"{'numpy ns':>8} {'ours/numpy':>10} {'numpy inexact':>14}")
    print("normalize: ns per sample and GB/s of samples; all cores against memcpy of the bytes touched (the wider")
    print("of read and written); numpy: astype(float32) / float32(2^n - 1), then astype(dtype), one thread.")
    print(header)
    print("-" * len(header))
    for width in (8, 16):
        for dtype_name in ("f32", "f16", "bf16"):
            dtype, view = targets[dtype_name]
            denominator = (1 << width) - 1
            code_type = np.uint8 if width == 8 else np.uint16
            samples = n_bytes * 8 // width
            codes = rng.integers(0, 1 << width, size=samples, dtype=code_type)
            if dtype is np.float32:
                peer = lambda: codes.astype(np.float32) / np.float32(denominator)
            else:
                peer = lambda: (codes.astype(np.float32) / np.float32(denominator)).astype(dtype)
            peer_ns = best_of(reps, peer) / samples * 1e9
            del codes
            every = np.arange(1 << width, dtype=code_type)
            got = (every.astype(np.float32) / np.float32(denominator)).astype(dtype).view(view)
            inexact = int(np.count_nonzero(got != exact_normalized(every, denominator, dtype).view(view)))
            name = f"normalize unorm{width}→{dtype_name}"
            for r in [r for r in results if r["op"] == name or r["op"].startswith(name + " @")]:
                ns = r["one_thread_s"] / samples * 1e9
                print(f"unorm{width}→{dtype_name:<7} {r['level']:<9} {ns:>9.3f} {r['bytes'] / r['one_thread_s'] / 1e9:>10.2f} "
                      f"{r['bytes'] / r['all_cores_s'] / 1e9:>9.2f} {r['memcpy_all_cores_s'] / r['all_cores_s']:>8.2f}x "
                      f"{peer_ns:>8.3f} {ns / peer_ns:>9.2f}x {inexact:>7} of {1 << width}")
    print("ours/numpy below 1: ours faster. vs memcpy at least 0.9 is the target. Ours: exact on every code, every level.")


def convert(dump, reps):
    np.seterr(all="ignore")  # NaN and overflow casts are what is being compared
    f32s = np.fromfile(f"{dump}/f32_inputs.bin", dtype=np.uint32)
    u16s = np.fromfile(f"{dump}/u16_inputs.bin", dtype=np.uint16)
    u8s = np.fromfile(f"{dump}/u8_inputs.bin", dtype=np.uint8)
    run = json.load(open(f"{dump}/narrow_vs_crates.json"))
    e4m3, e5m2 = ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2
    # (our variant, the table label narrow_vs_crates gives it, input as the peer sees it,
    #  the peer's dtype, its name, the output's bits)
    conversions = [
        ("f32_to_f16", "f32 → binary16", f32s.view(np.float32), np.float16, "numpy astype(float16)", np.uint16),
        ("f32_to_bf16", "f32 → bfloat16", f32s.view(np.float32), ml_dtypes.bfloat16, "ml_dtypes astype(bfloat16)",
         np.uint16),
        ("f32_to_e4m3", "f32 → E4M3 standard", f32s.view(np.float32), e4m3, "ml_dtypes astype(float8_e4m3fn)", np.uint8),
        ("f32_to_e5m2", "f32 → E5M2 standard", f32s.view(np.float32), e5m2, "ml_dtypes astype(float8_e5m2)", np.uint8),
        ("f16_to_f32", "binary16 → f32", u16s.view(np.float16), np.float32, "numpy astype(float32)", np.uint32),
        ("bf16_to_f32", "bfloat16 → f32", u16s.view(ml_dtypes.bfloat16), np.float32, "ml_dtypes astype(float32)",
         np.uint32),
        ("e4m3_to_f32", "E4M3 → f32", u8s.view(e4m3), np.float32, "ml_dtypes astype(float32)", np.uint32),
        ("e5m2_to_f32", "E5M2 → f32", u8s.view(e5m2), np.float32, "ml_dtypes astype(float32)", np.uint32),
    ]
    level = run["cpu_level"]
    print(f"numpy {np.__version__}, ml_dtypes {ml_dtypes.__version__}: astype on the same {len(f32s)} inputs, one "
          f"thread, best of {reps}; ours: bitexact::cpu::convert's exact path at {level}")
    header = (f"{'conversion':<20} {'ours ns':>8} {'fastest peer':<32} {'peer ns':>8} {'ours/peer':>9}   "
              f"{'numpy/ml_dtypes':<32} {'ns':>7} {'differ':>8} {'NaN in':>8}")
    print(header)
    print("-" * len(header))
    for name, label, x, dtype, peer_name, view in conversions:
        ns = best_of(reps, lambda: x.astype(dtype)) / len(x) * 1e9
        exact = np.fromfile(f"{dump}/{name}.bin", dtype=view)
        differ = x.astype(dtype).view(view) != exact
        nan_in = np.isnan(x.astype(np.float32))
        ours = [r for r in run["slices"] if r["conversion"] == label and r["level"] == level and r["exact_path"]][0]
        crate_ns, crate_name = ours["fastest_crate_ns_per_element"], ours["fastest_crate"]
        peer_ns, peer = min((crate_ns, crate_name), (ns, peer_name))
        print(f"{label:<20} {ours['ns_per_element']:>8.3f} {peer:<32} {peer_ns:>8.3f} {ours['ns_per_element'] / peer_ns:>8.2f}x   "
              f"{peer_name:<32} {ns:>7.3f} {int(differ.sum()):>8} {int((differ & nan_in).sum()):>8}")
    print("ours/peer below 1: ours faster (the target: at most 1). differ: the peer's outputs unlike the exact ones;")
    print("NaN in: of those, the input was a NaN. FP8 is compared with our OCP non-saturating modes; half's and")
    print("float8's differences are in narrow_vs_crates' table above.")


if __name__ == "__main__":
    if sys.argv[1] == "normalize":
        normalize(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        convert(sys.argv[2], int(sys.argv[3]))
