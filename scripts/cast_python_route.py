#!/usr/bin/env python3
"""`bitexact cast` file to file against the Python route, same tensors, same run.

The Python route is what a user would write with safetensors + PyTorch on the CPU:
`load_file`, `.to(torch.bfloat16)` for each floating tensor (or, for FP8, the per-tensor
recipe amax -> s = 448 / amax -> (x * s).clamp(-448, 448).to(float8_e4m3fn), with
1 / s stored beside it), `save_file`. Both read the same generated checkpoint (f32
matrices of random normal values) from the same folder and write a new file there. A
plain copy of the input file (`shutil.copyfile`) is timed in the same run, as the
baseline of the bytes touched.

    cast_python_route.py --bitexact PATH [--mib 256] [--reps 3] [--dir DIR]

Prints one line per route and target (bitexact with and without `--no-sync`: `save_file`
does not sync) with the best wall time of `--reps`, then the
ratios (`python / bitexact`: above 1 means bitexact is faster), and how many output
values of the Python route differ from ours. Without PyTorch or safetensors it prints
`skipped: <reason>` and exits 0. The checkpoint is written by this script's own
safetensors writer (numpy only), so that the input is the same whichever route runs.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time


def write_checkpoint(path, mib, np):
    """f32 matrices (4096 x 1024, 16 MiB each) of N(0, 0.02) values, `mib` MiB in all."""
    rng = np.random.default_rng(31)
    tensors = {}
    count = max(1, mib // 16)
    for i in range(count):
        tensors[f"model.layers.{i}.mlp.up_proj.weight"] = (rng.standard_normal((4096, 1024)) * 0.02).astype("<f4")
    return write_safetensors(path, tensors)


def write_safetensors(path, tensors):
    """Writes `tensors` (name -> little-endian f32 NumPy array) as a safetensors file with
    `__metadata__` {"format": "pt"}, the header padded to 8 bytes; returns the data bytes."""
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, array in tensors.items():
        header[name] = {"dtype": "F32", "shape": list(array.shape), "data_offsets": [offset, offset + array.nbytes]}
        offset += array.nbytes
    text = json.dumps(header).encode()
    text += b" " * (-(8 + len(text)) % 8)
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        for array in tensors.values():
            f.write(array.tobytes(order="C"))
    return offset


def best(reps, run):
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def remove(path):
    if os.path.isdir(path):
        shutil.rmtree(path)
    elif os.path.exists(path):
        os.remove(path)


def python_route(torch, load_file, save_file, src, dst, target):
    out = {}
    for name, x in load_file(src).items():
        if target == "bf16":
            out[name] = x.to(torch.bfloat16)
        else:
            amax = x.abs().max().item()
            s = torch.tensor(448.0 / amax if amax > 0 else 1.0, dtype=torch.float32)
            out[name] = (x * s).clamp(-448.0, 448.0).to(torch.float8_e4m3fn)
            out[name + "_scale"] = (1.0 / s).reshape(1)
    save_file(out, dst, metadata={"format": "pt"})


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bitexact", required=True, help="the bitexact binary (a release build)")
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--dir", default=None, help="where to write the checkpoint (default: a temporary folder)")
    args = parser.parse_args()
    try:
        import numpy as np
        import torch
        from safetensors.torch import load_file, save_file
    except ImportError as error:
        print(f"skipped: the Python route needs numpy, torch and safetensors ({error})")
        return 0
    torch.set_num_threads(os.cpu_count() or 1)
    folder = tempfile.mkdtemp(dir=args.dir, prefix="cast-bench-")
    try:
        src = os.path.join(folder, "model.safetensors")
        data_bytes = write_checkpoint(src, args.mib, np)
        print(f"checkpoint: {data_bytes / 2**20:.0f} MiB of f32 in {src}; {os.cpu_count()} CPUs; torch {torch.__version__}")
        copy = os.path.join(folder, "copy.safetensors")
        t_copy = best(args.reps, lambda: (remove(copy), shutil.copyfile(src, copy)))
        print(f"copy of the input file: {t_copy * 1e3:.1f} ms")
        routes = [
            ("bf16", "bf16", ["--to", "bf16"]),
            ("bf16 --no-sync", "bf16", ["--to", "bf16", "--no-sync"]),
            ("e4m3", "e4m3", ["--to", "e4m3", "--rounding", "two-step"]),
            ("e4m3 --no-sync", "e4m3", ["--to", "e4m3", "--rounding", "two-step", "--no-sync"]),
        ]
        for label, target, flag in routes:
            ours = os.path.join(folder, f"ours-{target}.safetensors")
            theirs = os.path.join(folder, f"torch-{target}.safetensors")

            def run_ours():
                remove(ours)
                subprocess.run([args.bitexact, "cast", src, "-o", ours, *flag], check=True, stdout=subprocess.DEVNULL)

            def run_theirs():
                remove(theirs)
                python_route(torch, load_file, save_file, src, theirs, target)

            t_ours, t_theirs = best(args.reps, run_ours), best(args.reps, run_theirs)
            a, b = load_file(ours), load_file(theirs)
            differ = sum(
                int((a[k].view(torch.uint8 if a[k].element_size() == 1 else torch.int16)
                     != b[k].view(torch.uint8 if b[k].element_size() == 1 else torch.int16)).sum())
                for k in a
            )
            values = sum(a[k].numel() for k in a)
            print(
                f"{label}: bitexact {t_ours * 1e3:.1f} ms, python {t_theirs * 1e3:.1f} ms, "
                f"python/bitexact {t_theirs / t_ours:.2f}x, copy/bitexact {t_copy / t_ours:.2f}x; "
                f"{differ} of {values} output values differ"
            )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
