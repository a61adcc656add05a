#!/usr/bin/env python3
"""Same-run PyTorch baseline for the f32 -> binary16 / bfloat16 / FP8 stream kernels.

Times PyTorch's `x.to(dtype)` (float16, bfloat16, float8_e4m3fn, float8_e5m2) on the
GPU, on the same input bits `bitexact bench` converts (`scramble(i)`, every exponent)
and on `torch.randn` (what a model's activations look like), next to a device copy of
the same bytes, all in this run. With `--bench-json FILE` (from `bitexact bench
--json-out FILE`, run just before on the same device) it also prints our `_stream`
and `_hw_stream` rows over PyTorch's on the same input bits. PyTorch's float8 casts do
not saturate (E4M3: NaN past 464; E5M2: inf from 61440), so they are set against our
non-saturating `f32_to_e4m3` and `f32_to_e5m2` rows.

    torch_baseline.py [--mib 1024] [--reps 10] [--warmup 2] [--bench-json FILE]
                      [--json-out FILE]
    torch_baseline.py --scramble-sample N [--scramble-from I]   # input bits I..I+N, one per line

Prints a Markdown report; its last line starts with `summary:`. Without PyTorch or a
CUDA device it prints `summary: skipped: <reason>` and exits 0. Needs nothing but the
standard library for `--scramble-sample` (a test compares it with the Rust bench's
input, so both convert the same bits).
"""

import argparse
import json
import statistics
import sys

MIX = 0x9E37_79B9_7F4A_7C15
MASK32 = 0xFFFF_FFFF

# PyTorch dtype name, our variants' output name, bytes per output element.
TARGETS = [
    ("float16", "f16", 2),
    ("bfloat16", "bf16", 2),
    ("float8_e4m3fn", "e4m3", 1),
    ("float8_e5m2", "e5m2", 1),
]


def scramble(i):
    """The bench's input bits for element i: bits 24..55 of i * MIX mod 2^64
    (`bitexact::bench::scramble`, masked to 32 bits)."""
    return ((i * MIX) % (1 << 64)) >> 24 & MASK32


def scramble_split(i):
    """`scramble(i)` without a product over 2^63, for int64 tensors and ints alike: with
    i * MIX = A + B * 2^32 (mod 2^64), A = i * (MIX mod 2^32) and B the low 32 bits of
    i * (MIX >> 32), bits 24..55 are ((A >> 24) + (B << 8)) mod 2^32; for i < 2^31
    every intermediate is under 2^63."""
    a = i * (MIX & MASK32)
    b = (i * (MIX >> 32)) & MASK32
    return ((a >> 24) + (b << 8)) & MASK32


def scrambled_tensor(torch, n, device):
    """[`scramble_split`] of 0..n as float32 bits, on the device."""
    if n > 1 << 31:
        raise ValueError(f"{n} elements: the exact int64 form needs n <= 2^31")
    bits = scramble_split(torch.arange(n, device=device, dtype=torch.int64))
    bits = torch.where(bits >= 1 << 31, bits - (1 << 32), bits)  # as int32
    return bits.to(torch.int32).view(torch.float32)


def median_ms(torch, fn, warmup, reps):
    """Median of `reps` event-timed runs of fn(), after `warmup` untimed ones."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def our_rows(path):
    """kernel name -> GB/s of the bandwidth rows of a `bitexact bench --json-out` file,
    and its input bytes."""
    with open(path) as f:
        report = json.load(f)
    return {row["kernel"]: row["gb_per_s"] for row in report.get("bandwidth", [])}, report.get("bytes")


def measure(torch, args):
    n = args.mib * (1 << 20) // 4
    device = "cuda"
    inputs = {"scrambled bits": scrambled_tensor(torch, n, device)}
    generator = torch.Generator(device=device).manual_seed(2026)
    inputs["randn"] = torch.randn(n, device=device, generator=generator)
    rows = []
    copies = {}
    for dtype_name, short, size in TARGETS:
        dtype = getattr(torch, dtype_name, None)
        if dtype is None:
            rows.append({"dtype": dtype_name, "status": f"skipped: this PyTorch has no torch.{dtype_name}"})
            continue
        moved = n * (4 + size)
        if moved not in copies:
            # A device copy that moves the same bytes: half read, half written.
            src = torch.randint(0, 256, (moved // 2,), dtype=torch.uint8, device=device)
            dst = torch.empty_like(src)
            copies[moved] = moved / (median_ms(torch, lambda: dst.copy_(src), args.warmup, args.reps) * 1e6)
            del src, dst
        for input_name, x in inputs.items():
            out = x.to(dtype)
            if out.numel() != n:
                raise RuntimeError(f"x.to({dtype_name}) gave {out.numel()} elements for {n}")
            del out
            ms = median_ms(torch, lambda: x.to(dtype), args.warmup, args.reps)
            gb_per_s = moved / (ms * 1e6)
            rows.append(
                {
                    "dtype": dtype_name,
                    "ours": short,
                    "input": input_name,
                    "median_ms": ms,
                    "gb_per_s": gb_per_s,
                    "copy_gb_per_s": copies[moved],
                    "percent_of_copy": 100 * gb_per_s / copies[moved],
                }
            )
    return n, rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mib", type=int, default=1024, help="input MiB of f32 (default 1024)")
    parser.add_argument("--reps", type=int, default=10, help="timed runs, median reported (default 10)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed runs first (default 2)")
    parser.add_argument("--bench-json", help="`bitexact bench --json-out` file of the same device and run")
    parser.add_argument("--json-out", help="also write the figures here as JSON")
    parser.add_argument("--scramble-sample", type=int, metavar="N", help="print N input bits and exit")
    parser.add_argument("--scramble-from", type=int, default=0, metavar="I", help="first index of that sample")
    args = parser.parse_args()
    if args.scramble_sample is not None:
        for i in range(args.scramble_from, args.scramble_from + args.scramble_sample):
            if scramble_split(i) != scramble(i) or i >= 1 << 31:
                print(f"torch_baseline: the split form is wrong or out of range at {i}", file=sys.stderr)
                return 1
            print(f"{scramble_split(i):#010x}")
        return 0
    if args.mib <= 0 or args.reps <= 0 or args.warmup < 0:
        print("torch_baseline: --mib and --reps must be positive, --warmup not negative", file=sys.stderr)
        return 2
    try:
        import torch
    except ImportError:
        print("summary: skipped: python3 has no torch")
        return 0
    if not torch.cuda.is_available():
        print("summary: skipped: torch sees no CUDA device")
        return 0
    n, rows = measure(torch, args)
    ours, our_bytes, missing = {}, None, None
    if args.bench_json:
        try:
            ours, our_bytes = our_rows(args.bench_json)
        except (OSError, ValueError) as e:  # no bench run before this one, or a cut file
            missing = f"note: no rows of ours ({args.bench_json}: {e})"
    print(f"# PyTorch {torch.__version__} on {torch.cuda.get_device_name()}: x.to(dtype), {n} f32 ({args.mib} MiB), "
          f"median of {args.reps}")
    print()
    print("| dtype | input | ms | GB/s | copy GB/s | % of copy | ours: `_stream` / `_hw_stream` GB/s | ours / PyTorch |")
    print("|---|---|---|---|---|---|---|---|")
    summary = []
    for row in rows:
        if "status" in row:
            print(f"| {row['dtype']} | {row['status']} | | | | | | |")
            continue
        mine = ""
        if row["input"] == "scrambled bits" and ours:
            software = ours.get(f"f32_to_{row['ours']}_stream")
            hardware = ours.get(f"f32_to_{row['ours']}_hw_stream")
            found = [f"{v:.0f}" if v is not None else "-" for v in (software, hardware)]
            ratios = [f"{v / row['gb_per_s']:.2f}" if v is not None else "-" for v in (software, hardware)]
            mine = f"| {' / '.join(found)} | {' / '.join(ratios)} "
            row["ours_stream_gb_per_s"], row["ours_hw_stream_gb_per_s"] = software, hardware
        else:
            mine = "| | "
        print(f"| {row['dtype']} | {row['input']} | {row['median_ms']:.3f} | {row['gb_per_s']:.0f} | "
              f"{row['copy_gb_per_s']:.0f} | {row['percent_of_copy']:.1f}% {mine}|")
        if row["input"] == "scrambled bits":
            summary.append(f"{row['dtype']} {row['percent_of_copy']:.0f}%")
    if missing:
        print(f"\n{missing}")
    if ours and our_bytes is not None and our_bytes != n * 4:
        print(f"\nnote: the bench converted {our_bytes} input bytes, this run {n * 4}: the ratios compare sizes that differ")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"torch": torch.__version__, "elements": n, "reps": args.reps, "rows": rows}, f, indent=2)
    print()
    print(f"summary: PyTorch x.to() of copy on scrambled bits: {', '.join(summary) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
