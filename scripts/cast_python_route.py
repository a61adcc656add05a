#!/usr/bin/env python3
"""`bitexact cast` file to file against the Python route, same tensors, same run.

The Python route is what a user would write with safetensors + PyTorch on the CPU:
`load_file`, `.to(torch.bfloat16)` for each floating tensor (or, for FP8, the per-tensor
recipe amax -> s = 448 / amax -> (x * s).clamp(-448, 448).to(float8_e4m3fn), with
1 / s stored beside it), `save_file`. Both read the same generated checkpoint (f32
matrices of random normal values) from the same folder and write a new file there. A
plain copy of the input file (`shutil.copyfile`) is timed in the same run, as the
baseline of the bytes touched.

    cast_python_route.py --bitexact PATH [--mib 256] [--reps 3] [--dir DIR] [--blocks] [--deepgemm DIR]

With `--blocks`, the block-scaled casts too, each against its producer's own code where
it imports (the Python route then calls that code on each loaded tensor and saves what
it returns): compressed-tensors' `calculate_qparams` and `quantize` (FP8 128 x 128 blocks,
`--recipe compressed-tensors`; its MXFP8A16 and NVFP4A16 presets, with `generate_gparam`,
against `--scale mx --recipe compressed-tensors` and `--to nvfp4 --layout
compressed-tensors`; it returns NVFP4's codes unpacked, as E2M1 values in f32), torchao's `to_mx` in RCEIL (MXFP8, `--recipe rceil`),
ModelOpt's `NVFP4QTensor.quantize` (`--to nvfp4 --recipe modelopt`), and with `--deepgemm
DIR` DeepGEMM's `per_block_cast_to_fp8` with UE8M0 scales (`--recipe deepgemm
--scale-format ue8m0`). These run bitexact with `--no-sync` only (`save_file` does not
sync) and count no values: `scripts/block_peers.py` compares them.

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


def block_routes(torch, deepgemm_dir):
    """(label, bitexact's flags, the producer's function of one f32 tensor to the tensors it
    stores) for each block-scaled route whose producer imports; prints a skip for the rest."""
    routes = []
    try:
        from compressed_tensors.quantization import QuantizationArgs
        from compressed_tensors.quantization.lifecycle.forward import quantize
        from compressed_tensors.quantization.utils import calculate_qparams

        args = QuantizationArgs(num_bits=8, type="float", symmetric=True, strategy="block", block_structure=[128, 128])

        def ct_block(w):
            rows, cols = w.shape
            blocks = w.reshape(rows // 128, 128, cols // 128, 128).transpose(1, 2).reshape(rows // 128, cols // 128, -1)
            scale, zp = calculate_qparams(blocks.amin(-1), blocks.amax(-1), args)
            return {"": quantize(w, scale, zp, args, dtype=torch.float8_e4m3fn), "_scale": scale}

        routes.append(("block compressed-tensors", ["--to", "e4m3", "--scale", "block", "--recipe",
                                                    "compressed-tensors"], ct_block))
        from compressed_tensors.quantization.quant_scheme import PRESET_SCHEMES
        from compressed_tensors.quantization.utils import generate_gparam

        def ct_groups(preset, size, global_scale):
            group_args = PRESET_SCHEMES[preset]["weights"]

            def produce(w):
                rows, cols = w.shape
                groups = w.reshape(rows, cols // size, size)
                gs = generate_gparam(w.min(), w.max()) if global_scale else None
                scale, zp = calculate_qparams(groups.amin(-1), groups.amax(-1), group_args, global_scale=gs)
                # MXFP8: the E4M3 codes (`dtype`), as the FP8 block route asks; NVFP4's
                # come back as E2M1 values in f32.
                kwargs = {"global_scale": gs} if global_scale else {"dtype": torch.float8_e4m3fn}
                q = quantize(w, scale, zp, group_args, **kwargs)
                out = {"": q, "_scale": scale}
                return {**out, "_global_scale": gs} if global_scale else out

            return produce

        routes.append(("mx compressed-tensors", ["--to", "e4m3", "--scale", "mx", "--recipe", "compressed-tensors"],
                       ct_groups("MXFP8A16", 32, False)))
        routes.append(("nvfp4 compressed-tensors", ["--to", "nvfp4", "--layout", "compressed-tensors"],
                       ct_groups("NVFP4A16", 16, True)))
    except Exception as error:  # noqa: BLE001: any import failure is a skip
        print(f"block compressed-tensors: skipped: compressed-tensors does not import ({error})")
    try:
        from torchao.prototype.mx_formats.config import ScaleCalculationMode
        from torchao.prototype.mx_formats.mx_tensor import to_mx

        def ao_mx(w):
            scale, q = to_mx(w, torch.float8_e4m3fn, 32, ScaleCalculationMode.RCEIL)
            return {"": q, "_scale": scale.view(torch.uint8)}

        routes.append(("mx torchao rceil", ["--to", "e4m3", "--scale", "mx", "--recipe", "rceil"], ao_mx))
    except Exception as error:  # noqa: BLE001
        print(f"mx torchao rceil: skipped: torchao does not import ({error})")
    try:
        from modelopt.torch.quantization.qtensor.nvfp4_tensor import NVFP4QTensor

        def mo_nvfp4(w):
            packed, scale, scale_2 = NVFP4QTensor.quantize(w, 16)
            return {"": packed._quantized_data, "_scale": scale, "_scale_2": scale_2}

        routes.append(("nvfp4 modelopt", ["--to", "nvfp4", "--layout", "modelopt", "--recipe", "modelopt"], mo_nvfp4))
    except Exception as error:  # noqa: BLE001
        print(f"nvfp4 modelopt: skipped: ModelOpt does not import ({error})")
    from producer_code import deepgemm_per_block_cast

    cast_fp8 = deepgemm_per_block_cast(deepgemm_dir) if deepgemm_dir else "no DeepGEMM checkout given (--deepgemm DIR)"
    if isinstance(cast_fp8, str):
        print(f"block deepgemm ue8m0: skipped: {cast_fp8}")
    else:

        def dg_ue8m0(w):
            q, sf = cast_fp8(w, use_ue8m0=True)
            return {"": q, "_scale_inv": sf}

        routes.append(("block deepgemm ue8m0", ["--to", "e4m3", "--scale", "block", "--layout", "deepseek",
                                                "--recipe", "deepgemm", "--scale-format", "ue8m0"], dg_ue8m0))
    return routes


def producer_route(load_file, save_file, src, dst, produce):
    out = {}
    for name, x in load_file(src).items():
        for suffix, t in produce(x).items():
            out[name + suffix] = t.contiguous()
    save_file(out, dst, metadata={"format": "pt"})


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bitexact", required=True, help="the bitexact binary (a release build)")
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--dir", default=None, help="where to write the checkpoint (default: a temporary folder)")
    parser.add_argument("--blocks", action="store_true", help="the block-scaled casts against their producers' code")
    parser.add_argument("--deepgemm", default=None, help="a DeepGEMM checkout, for its per_block_cast_to_fp8")
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
        for label, flags, produce in block_routes(torch, args.deepgemm) if args.blocks else []:
            ours = os.path.join(folder, "ours-block.safetensors")
            theirs = os.path.join(folder, "producer-block.safetensors")

            def run_ours():
                remove(ours)
                # --no-sync: save_file does not sync either.
                cmd = [args.bitexact, "cast", src, "-o", ours, *flags, "--no-sync"]
                subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)

            def run_theirs():
                remove(theirs)
                producer_route(load_file, save_file, src, theirs, produce)

            t_ours, t_theirs = best(args.reps, run_ours), best(args.reps, run_theirs)
            print(
                f"{label} --no-sync: bitexact {t_ours * 1e3:.1f} ms, its producer's code {t_theirs * 1e3:.1f} ms, "
                f"producer/bitexact {t_theirs / t_ours:.2f}x, copy/bitexact {t_copy / t_ours:.2f}x"
            )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
