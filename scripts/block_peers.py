#!/usr/bin/env python3
"""`bitexact cast`'s block-scaled casts against the producers' own code (compressed-tensors,
torchao, ModelOpt, DeepGEMM), value by value.

    block_peers.py --bitexact PATH [--dir DIR] [--deepgemm DIR] [--markdown]

Writes weight-like tensors (N(0, 0.02), and Student's t with 2 degrees of freedom times
0.02, heavy-tailed; 1536 x 1024 and a 300 x 260 one with partial tiles; each as bf16 and
as f32) to a safetensors checkpoint, casts it with `bitexact cast --to e4m3 --scale block`
and `--scale per-channel`, by the exact recipe and by `--recipe compressed-tensors`, and
quantises the same weights with compressed-tensors' own functions on CPU torch:
`calculate_qparams` on the block's (or row's) minimum and maximum (as llm-compressor's
min-max observer takes them: `amin`/`amax` over the zero-padded 128 x 128 block, or the
row), then `quantize(x, scale, zero_point, args, dtype=float8_e4m3fn)` (its
`_process_block` pads, divides by the scale, clamps and converts). compressed-tensors'
per-channel and block arithmetic is the same on a CPU as on a CUDA device from its
0.19.0 on (a tensor divided by a tensor), so this run checks the recipe as vLLM users
run it. The same for MXFP8 (its `MXFP8A16` preset: E8M0 scales per 32 values) and NVFP4
(`NVFP4A16`: `generate_gparam` for the tensor's global scale, then E4M3 scales per 16
values and E2M1 codes) on the tensors whose rows are a multiple of 32 long, against
`--scale mx --recipe compressed-tensors` and `--to nvfp4 --layout compressed-tensors`.

Where torchao imports, its own `to_mx` (`prototype/mx_formats/mx_tensor.py`) runs on CPU
torch in `ScaleCalculationMode.FLOOR` and `RCEIL`, E4M3 in blocks of 32, on the same
tensors, against `--scale mx --recipe ocp` and `--recipe rceil`: every E8M0 scale and
code compared (exit 1 on a difference). Then a small f32 tensor of planted blocks, where
torchao's releases up to 0.18 and its code from 2026-08-12 on (#4725, what the recipes
model) part: a tiny block (FLOOR: the divisor clamped to 2^-126 while 2^-127 is stored;
RCEIL: a code-0 block multiplied by 1), and an amax whose `descale` lies just above a
power of two (RCEIL's `ceil(log2(...))` stays a power low). Each block's scales and
codes are printed; with torchao's newer code (it has `_f32_to_e8m0_rceil`) any
difference fails, with an older release the named ones are expected and counted. To run
torchao's newer code, put a source checkout's `torchao` on `PYTHONPATH`.

Where NVIDIA ModelOpt imports, its `NVFP4QTensor.quantize` (the export's dynamic path)
runs on CPU torch on the same tensors with `weights_scaling_factor_2` given as our
`--recipe modelopt` file's `weight_scale_2`: on CUDA ModelOpt computes that factor as
`amax * fl32(1/2688)` (PyTorch's CUDA kernel multiplies by a Python float divisor's
reciprocal), on a CPU as `amax / 2688`, so the run checks the factor on its own (the
CPU's must be our exact recipe's) and every later step of ModelOpt's code (block
scales, E2M1 codes, packing) against ours, every byte (exit 1 on a difference).

With `--deepgemm DIR` (a checkout of deepseek-ai/DeepGEMM; its `deep_gemm/utils/math.py`
needs torch only and is loaded on its own), DeepGEMM's `per_block_cast_to_fp8` runs on CPU
torch on the same tensors, with `use_ue8m0=True` against `--layout deepseek --recipe
deepgemm --scale-format ue8m0`, and with `use_ue8m0=False` against `--recipe deepgemm`.
On CUDA, `x_amax / 448.0` is `amax · fl32(1/448)`; on a CPU it divides. Rounded up to a
power of two the two agree unless a power of two lies between them, which the run counts
(such a block is left out); with f32 scales a block is compared where the two `sf` are
equal, and the others are counted. Every compared scale and code must equal ours. Then a
planted f32 tensor of three 128 x 128 blocks: amax `0.4375` one ulp up (`sf = 2^-10 (1 +
2^-23)`, which DeepGEMM's `ceil_to_ue8m0` before 7f2a703, `2^ceil(log2(sf))` in f32, left
at `2^-10`), every value below `1e-4` (its clamp), and all zeros.

Then, where transformers imports, a tiny bf16 Llama is cast each block-scaled way (FP8 block
by both recipes and with `--scale-format bf16`, per channel, MXFP8, NVFP4) and loaded with `from_pretrained` through
compressed-tensors' quantizer: no key missing or unexpected, every stored tensor loaded
as ours (F32 scales aside: compressed-tensors allocates them in the model's bf16, which
rounds them; the run says how many weights that moves), and after a forward pass every
weight decompressed to `bf16(fl32(q · d))` of our file, bit for bit.

For each tensor it prints how many scales and codes differ from ours: our
compressed-tensors recipe must differ on none (exit 1 otherwise). Against our exact
recipe, each differing code is classified exactly (the f64 quotient of two f32 values is on the
same side of every E4M3 midpoint as the exact one): "scale" (the producer's scale is not
our d, bfloat16 scales, and its code is x/s rounded once for its own scale), "double
rounding" (the same scale; x/s rounded once is ours: the producer rounded the quotient to
f32 or bf16 first), "scale and double rounding", or "other" (none is expected; exit 1). A library that does not import
prints `skipped: <reason>` and exits 0.
"""

import argparse
import json
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

try:
    import numpy as np
except ImportError as e:  # pragma: no cover
    print(f"skipped: numpy does not import ({e})")
    sys.exit(0)
try:
    import torch
    from compressed_tensors import __version__ as ct_version
    from compressed_tensors.quantization import QuantizationArgs
    from compressed_tensors.quantization.lifecycle.forward import quantize
    from compressed_tensors.quantization.utils import calculate_qparams
except ImportError as e:
    print(f"skipped: torch or compressed-tensors does not import ({e})")
    sys.exit(0)

DTYPES = {"BF16": (torch.bfloat16, 2), "F32": (torch.float32, 4)}


def weights(seed):
    """name -> float32 numpy array, the weight-like tensors."""
    rng = np.random.default_rng(seed)
    out = {}
    for kind in ("normal", "t2"):
        for shape in ((1536, 1024), (300, 260)):
            if kind == "normal":
                w = rng.normal(0.0, 0.02, size=shape)
            else:
                w = rng.standard_t(2, size=shape) * 0.02
            out[f"model.layers.0.{kind}_{shape[0]}x{shape[1]}.weight"] = w.astype(np.float32)
    return out


def write_safetensors(path, tensors):
    """tensors: name -> (dtype name, torch tensor)."""
    header, blobs, offset = {}, [], 0
    for name, (dtype, t) in tensors.items():
        raw = t.contiguous().view(torch.uint8).numpy().tobytes()
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    """name -> (dtype name, shape, bytes)."""
    data = Path(path).read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    base = 8 + n
    return {
        k: (v["dtype"], v["shape"], data[base + v["data_offsets"][0] : base + v["data_offsets"][1]])
        for k, v in header.items()
        if k != "__metadata__"
    }


def as_f32(dtype, raw):
    """A stored scale tensor's values as f32 bits (uint32)."""
    if dtype == "F32":
        return np.frombuffer(raw, dtype="<u4").astype(np.uint32)
    if dtype == "BF16":
        return np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
    raise ValueError(dtype)


def producer(w, strategy):
    """compressed-tensors' scale (f32 bits, row-major) and codes (uint8) of the torch tensor w."""
    rows, cols = w.shape
    if strategy == "block":
        args = QuantizationArgs(num_bits=8, type="float", symmetric=True, strategy="block", block_structure=[128, 128])
        pr, pc = -rows % 128, -cols % 128
        padded = torch.nn.functional.pad(w, (0, pc, 0, pr))
        br, bc = padded.shape[0] // 128, padded.shape[1] // 128
        blocks = padded.reshape(br, 128, bc, 128).transpose(1, 2).reshape(br, bc, -1)
        mins, maxs = torch.amin(blocks, dim=-1), torch.amax(blocks, dim=-1)
    else:
        args = QuantizationArgs(num_bits=8, type="float", symmetric=True, strategy="channel")
        mins, maxs = torch.amin(w, dim=1, keepdim=True), torch.amax(w, dim=1, keepdim=True)
    scale, zp = calculate_qparams(mins, maxs, args)
    q = quantize(w, scale, zp, args, dtype=torch.float8_e4m3fn)
    scale_bits = scale.to(torch.float32).contiguous().view(torch.int32).numpy().astype(np.uint32).reshape(-1)
    return scale_bits, q.view(torch.uint8).numpy().reshape(-1), str(scale.dtype)


# The E4M3 magnitudes by code (0 … 126), increasing.
E4M3 = np.array(
    [(m / 8) / 64 if e == 0 else (1 + m / 8) * 2.0 ** (e - 7) for code in range(127) for e, m in [(code >> 3, code & 7)]]
)


def rne_e4m3(v):
    """The E4M3 codes of the f64 values v, rounded to nearest even, saturated at 448. Exact
    for v = fl64(x / s) with x and s f32 values: such a quotient is on the same side of
    every E4M3 midpoint as x / s, and on one only when x / s is (shared::fp8_block's
    argument), and the midpoints are f64 values."""
    a = np.abs(v)
    lo = np.clip(np.searchsorted(E4M3, a, side="right") - 1, 0, 126)
    hi = np.minimum(lo + 1, 126)
    d_lo, d_hi = a - E4M3[lo], E4M3[hi] - a
    up = (hi > lo) & ((d_hi < d_lo) | ((d_hi == d_lo) & (lo % 2 == 1)))
    code = np.where(a >= 448.0, 126, np.where(up, hi, lo))
    return (code | np.where(np.signbit(v), 0x80, 0)).astype(np.uint8)


def f32(bits):
    return bits.astype(np.uint32).view(np.float32).astype(np.float64)


def classify(x_bits, ours_scale, theirs_scale, ours_code, theirs_code):
    """Why each differing code differs (arrays of the differing elements): "scale" (theirs
    is x / s rounded once for their own scale s, which is not our d), "double rounding"
    (the same scale; x / s rounded once is ours, theirs was rounded to f32 or bf16
    first), "scale and double rounding" (the scales differ and theirs is not x / s rounded
    once either), or "other"."""
    once = rne_e4m3(f32(x_bits) / f32(theirs_scale))
    same_scale = ours_scale == theirs_scale
    kinds = np.where(
        once == theirs_code,
        np.where(same_scale, "other", "scale"),
        np.where(same_scale, np.where(once == ours_code, "double rounding", "other"), "scale and double rounding"),
    )
    names, counts = np.unique(kinds, return_counts=True)
    return dict(zip(names.tolist(), counts.tolist()))


def block_index(rows, cols, strategy):
    """Per element (row-major), the index of its scale."""
    r, c = np.divmod(np.arange(rows * cols), cols)
    if strategy == "block":
        return (r // 128) * (-(-cols // 128)) + c // 128
    return r


E2M1 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])


def e2m1_codes(values):
    """E2M1 codes of values on its grid (the sign bit from the value's sign bit)."""
    v = values.to(torch.float32).numpy().reshape(-1)
    code = np.searchsorted(E2M1, np.abs(v))
    assert np.all(E2M1[code] == np.abs(v)), "values on the E2M1 grid"
    return (code | np.where(np.signbit(v), 8, 0)).astype(np.uint8)


def unpack_e2m1(raw):
    b = np.frombuffer(raw, dtype=np.uint8)
    return np.stack([b & 0xF, b >> 4], axis=1).reshape(-1)


def producer_nvfp4(w):
    """compressed-tensors' NVFP4A16 (its global scale, E4M3 group scales as codes, E2M1 codes)."""
    from compressed_tensors.quantization.quant_scheme import PRESET_SCHEMES
    from compressed_tensors.quantization.utils import generate_gparam

    args = PRESET_SCHEMES["NVFP4A16"]["weights"]
    rows, cols = w.shape
    gs = generate_gparam(w.min(), w.max())
    groups = w.reshape(rows, cols // 16, 16)
    scale, zp = calculate_qparams(groups.amin(-1), groups.amax(-1), args, global_scale=gs)
    q = quantize(w, scale, zp, args, global_scale=gs)
    scale_codes = scale.to(torch.float8_e4m3fn).view(torch.uint8).numpy().reshape(-1)
    return gs.to(torch.float32).view(torch.int32).numpy().astype(np.uint32), scale_codes, e2m1_codes(q)


def producer_mx(w):
    """compressed-tensors' MXFP8A16 (E8M0 codes of its power-of-two scales, E4M3 codes)."""
    from compressed_tensors.quantization.quant_scheme import PRESET_SCHEMES

    args = PRESET_SCHEMES["MXFP8A16"]["weights"]
    rows, cols = w.shape
    groups = w.reshape(rows, cols // 32, 32)
    scale, zp = calculate_qparams(groups.amin(-1), groups.amax(-1), args)
    q = quantize(w, scale, zp, args, dtype=torch.float8_e4m3fn)
    exponent = torch.log2(scale.to(torch.float32)).numpy().reshape(-1)
    assert np.all(exponent == np.round(exponent)), "powers of two"
    return (exponent + 127).astype(np.uint8), q.view(torch.uint8).numpy().reshape(-1)


def compare_scaled_groups(work, folder, tensors, dtype_name, bitexact, table):
    """NVFP4 and MXFP8 by compressed-tensors' recipe against its own code; the exact
    recipe's codes counted beside (its scales differ by design). Returns the mismatches."""
    failures = 0
    runs = {
        ("nvfp4", "compressed-tensors"): ["--to", "nvfp4", "--layout", "compressed-tensors"],
        ("nvfp4", "exact"): ["--to", "nvfp4", "--layout", "modelopt"],
        ("mx", "compressed-tensors"): ["--to", "e4m3", "--scale", "mx", "--recipe", "compressed-tensors"],
        ("mx", "exact"): ["--to", "e4m3", "--scale", "mx"],
    }
    outs = {}
    for key, args in runs.items():
        out = work / f"out-{dtype_name}-{key[0]}-{key[1]}"
        shutil.rmtree(out, ignore_errors=True)
        # The 300 x 260 tensors' rows are not a multiple of 16 or 32 long: kept as they are.
        skip = ["--skip", "300x260"]
        subprocess.run([bitexact, "cast", str(folder), "-o", str(out), *args, *skip], check=True, capture_output=True)
        outs[key] = read_safetensors(out / "model.safetensors")
    for name, t in tensors.items():
        if t.shape[1] % 32:
            continue
        values = t.numel()
        gs, scales, codes = producer_nvfp4(t)
        ours = outs[("nvfp4", "compressed-tensors")]
        ours_gs = as_f32(*[ours[name + "_global_scale"][i] for i in (0, 2)])
        ours_scales = np.frombuffer(ours[name + "_scale"][2], dtype=np.uint8)
        ours_codes = unpack_e2m1(ours[name + "_packed"][2])
        diff = (int(np.count_nonzero(ours_gs != gs)), int(np.count_nonzero(ours_scales != scales)),
                int(np.count_nonzero(ours_codes != codes)))
        exact_codes = unpack_e2m1(outs[("nvfp4", "exact")][name][2])
        exact_diff = int(np.count_nonzero(exact_codes != codes))
        failures += sum(diff) > 0
        print(f"{dtype_name:4} nvfp4       {name.split('.')[-2]:20} {values:8}: ours (compressed-tensors) "
              f"{diff[0]} tensor scales, {diff[1]} block scales, {diff[2]} codes differ; exact recipe "
              f"{exact_diff} codes ({exact_diff / values:.3%})")
        table.append({"dtype": dtype_name, "strategy": "nvfp4", "tensor": name.split(".")[-2], "values": values,
                      "compressed-tensors": (diff[0] + diff[1], diff[2]), "exact": ("-", exact_diff), "kinds": {}})
        scales, codes = producer_mx(t)
        ours = outs[("mx", "compressed-tensors")]
        ours_scales = np.frombuffer(ours[name + "_scale"][2], dtype=np.uint8)
        ours_codes = np.frombuffer(ours[name][2], dtype=np.uint8)
        diff = (int(np.count_nonzero(ours_scales != scales)), int(np.count_nonzero(ours_codes != codes)))
        exact = outs[("mx", "exact")]
        exact_scale_diff = int(np.count_nonzero(np.frombuffer(exact[name + "_scale"][2], dtype=np.uint8) != scales))
        exact_diff = int(np.count_nonzero(np.frombuffer(exact[name][2], dtype=np.uint8) != codes))
        failures += sum(diff) > 0
        print(f"{dtype_name:4} mx          {name.split('.')[-2]:20} {values:8}: ours (compressed-tensors) "
              f"{diff[0]} scales, {diff[1]} codes differ; exact recipe {exact_scale_diff} scales, {exact_diff} codes")
        table.append({"dtype": dtype_name, "strategy": "mx", "tensor": name.split(".")[-2], "values": values,
                      "compressed-tensors": diff, "exact": (exact_scale_diff, exact_diff), "kinds": {}})
    return failures


def torchao_mx():
    """torchao's `to_mx`, its `ScaleCalculationMode`, its version and whether it is the
    code from 2026-08-12 on (`_f32_to_e8m0_rceil`, what `--recipe ocp`/`rceil` model), or
    the reason it does not import."""
    try:
        import torchao
        from torchao.prototype.mx_formats import mx_tensor
        from torchao.prototype.mx_formats.config import ScaleCalculationMode
    except Exception as error:  # noqa: BLE001: any import failure is a skip
        return f"torchao does not import ({type(error).__name__}: {error})"
    where = f"{getattr(torchao, '__version__', '?')} from {Path(torchao.__file__).parent}"
    return mx_tensor.to_mx, ScaleCalculationMode, where, hasattr(mx_tensor, "_f32_to_e8m0_rceil")


TORCHAO_MODES = {"ocp": "FLOOR", "rceil": "RCEIL"}


def torchao_codes(to_mx, mode, t):
    """torchao's E8M0 scale codes and E4M3 codes of the 2-D tensor t, blocks of 32."""
    scale, q = to_mx(t, torch.float8_e4m3fn, 32, mode)
    return scale.view(torch.uint8).numpy().reshape(-1), q.view(torch.uint8).numpy().reshape(-1)


def cast_mx(bitexact, folder, out, recipe):
    shutil.rmtree(out, ignore_errors=True)
    cmd = [bitexact, "cast", str(folder), "-o", str(out), "--to", "e4m3", "--scale", "mx", "--recipe", recipe,
           "--skip", "300x260"]
    subprocess.run(cmd, check=True, capture_output=True)
    return read_safetensors(out / "model.safetensors")


def compare_torchao(work, folder, tensors, dtype_name, bitexact, table):
    """torchao's `to_mx` (FLOOR, RCEIL) against `--scale mx --recipe ocp`/`rceil`, every scale
    and code. Returns the mismatches (0 where torchao does not import: it says skipped)."""
    found = torchao_mx()
    if isinstance(found, str):
        print(f"torchao: skipped: {found}")
        return 0
    to_mx, modes, _, _ = found
    failures = 0
    for recipe, mode in TORCHAO_MODES.items():
        ours = cast_mx(bitexact, folder, work / f"out-{dtype_name}-mx-{recipe}", recipe)
        for name, t in tensors.items():
            if t.shape[1] % 32:
                continue
            scales, codes = torchao_codes(to_mx, getattr(modes, mode), t)
            ours_scales = np.frombuffer(ours[name + "_scale"][2], dtype=np.uint8)
            ours_codes = np.frombuffer(ours[name][2], dtype=np.uint8)
            diff = (int(np.count_nonzero(ours_scales != scales)), int(np.count_nonzero(ours_codes != codes)))
            failures += sum(diff) > 0
            tensor = name.split(".")[-2]
            print(f"{dtype_name:4} mx {mode:8} {tensor:20} {t.numel():8}: ours (--recipe {recipe}) against torchao's "
                  f"to_mx: {diff[0]} scales, {diff[1]} codes differ")
            table.append({"dtype": dtype_name, "strategy": f"mx {mode} (torchao)", "tensor": tensor,
                          "values": t.numel(), "peer": diff})
    return failures


def planted_blocks():
    """(what, 32 f32 values, the modes in which torchao's releases up to 0.18 differ from
    its code from 2026-08-12 on) for each planted block, a normal block among them. Before:
    FLOOR divides a code-0 block by 2^-126 (stored: 2^-127), RCEIL multiplies it by 1, and
    RCEIL's `ceil(log2(amax / 448))` stays at 2^-10 where `amax / 448` is 2^-10 (1 + 2^-22)."""
    ramp = np.arange(1, 33, dtype=np.float64) / 32

    def top(amax):
        """31 smaller values, then amax."""
        return np.append((ramp[:31] * 0.9 * amax).astype(np.float32), np.float32(amax))

    rceil_edge = np.float32(0.4375) * np.float32(1 + 2.0**-22)
    rceil_subnormal = np.frombuffer(np.uint32(0x04600001).tobytes(), dtype=np.float32)[0]  # 448·2^-127, one ulp up
    both, rceil = {"FLOOR", "RCEIL"}, {"RCEIL"}
    return [
        ("amax 1.5·2^-120 (FLOOR k = -128, clamped)", top(1.5 * 2.0**-120), both),
        ("amax 2^-127, subnormal", top(2.0**-127), both),
        ("amax 2^-120 (RCEIL descale subnormal)", top(2.0**-120), both),
        ("amax 448·2^-127 one ulp up (0x04600001)", top(rceil_subnormal), both),
        ("amax/448 = 2^-10·(1 + 2^-22)", top(rceil_edge), rceil),
        ("amax 448·2^-10 exactly", top(0.4375), set()),
        ("N(0, 0.02)", np.random.default_rng(5).normal(0.0, 0.02, 32).astype(np.float32), set()),
    ]


def torchao_planted(work, bitexact):
    """The planted blocks through torchao's `to_mx` and ours, block by block. Returns the
    failures: a difference where torchao is the code the recipes model; with an older
    release, a block that differs or not other than `planted_blocks` says."""
    found = torchao_mx()
    if isinstance(found, str):
        return 0
    to_mx, modes, version, newer = found
    blocks = planted_blocks()
    t = torch.from_numpy(np.stack([b for _, b, _ in blocks]))
    folder = work / "in-planted"
    folder.mkdir(exist_ok=True)
    name = "model.layers.0.planted.weight"
    write_safetensors(folder / "model.safetensors", {name: ("F32", t)})
    print(f"torchao {version} ({'its code from 2026-08-12 on' if newer else 'a release before 2026-08-12'}), "
          "planted f32 blocks:")
    failures = 0
    for recipe, mode in TORCHAO_MODES.items():
        ours = cast_mx(bitexact, folder, work / f"out-planted-{recipe}", recipe)
        scales, codes = torchao_codes(to_mx, getattr(modes, mode), t)
        ours_scales = np.frombuffer(ours[name + "_scale"][2], dtype=np.uint8)
        ours_codes = np.frombuffer(ours[name][2], dtype=np.uint8).reshape(len(blocks), 32)
        for i, (what, _, before) in enumerate(blocks):
            differ = int(np.count_nonzero(ours_codes[i] != codes.reshape(len(blocks), 32)[i]))
            same = differ == 0 and ours_scales[i] == scales[i]
            expected = newer or mode not in before
            failures += same != expected
            print(f"  {mode:5} {what:42}: scale code ours {ours_scales[i]}, torchao {scales[i]}; "
                  f"{differ} of 32 codes differ{'' if expected else ' (expected of this release)'}"
                  f"{'' if same == expected else ' UNEXPECTED'}")
    return failures


def compare_modelopt(work, folder, tensors, dtype_name, bitexact, table):
    """ModelOpt's own NVFP4 quantisation against `--to nvfp4 --layout modelopt --recipe
    modelopt`, every block scale and packed byte, given our factor; its CPU factor against
    the exact recipe's. Returns the mismatches (0 where ModelOpt does not import: it says
    skipped)."""
    try:
        import modelopt
        from modelopt.torch.quantization.qtensor.nvfp4_tensor import NVFP4QTensor
    except Exception as error:  # noqa: BLE001: any import failure is a skip
        print(f"modelopt: skipped: ModelOpt does not import ({type(error).__name__}: {error})")
        return 0
    outs = {}
    for recipe in ("modelopt", "exact"):
        out = work / f"out-{dtype_name}-nvfp4-modelopt-{recipe}"
        shutil.rmtree(out, ignore_errors=True)
        cmd = [bitexact, "cast", str(folder), "-o", str(out), "--to", "nvfp4", "--layout", "modelopt", "--recipe",
               recipe, "--skip", "300x260"]
        subprocess.run(cmd, check=True, capture_output=True)
        outs[recipe] = read_safetensors(out / "model.safetensors")
    failures = 0
    for name, t in tensors.items():
        if t.shape[1] % 16:
            continue
        ours = outs["modelopt"]
        g = np.frombuffer(ours[name + "_scale_2"][2], dtype="<f4")[0]
        packed, scales, _ = NVFP4QTensor.quantize(t, 16, weights_scaling_factor_2=torch.tensor(g))
        theirs_scales = scales.view(torch.uint8).numpy().reshape(-1)
        theirs_packed = packed._quantized_data.numpy().reshape(-1)
        diff = (int(np.count_nonzero(np.frombuffer(ours[name + "_scale"][2], dtype=np.uint8) != theirs_scales)),
                int(np.count_nonzero(np.frombuffer(ours[name][2], dtype=np.uint8) != theirs_packed)))
        cpu_g = NVFP4QTensor.get_weights_scaling_factor_2(t).numpy()
        exact_g = np.frombuffer(outs["exact"][name + "_scale_2"][2], dtype="<f4")[0]
        cpu_is_exact = bool(cpu_g == exact_g)
        failures += sum(diff) > 0 or not cpu_is_exact
        tensor = name.split(".")[-2]
        print(f"{dtype_name:4} nvfp4 ModelOpt {tensor:20} {t.numel():8}: ours (--recipe modelopt) against ModelOpt "
              f"{modelopt.__version__}'s quantize at our factor: {diff[0]} block scales, {diff[1]} packed bytes differ; "
              f"its CPU factor {'is' if cpu_is_exact else 'is NOT'} the exact recipe's"
              f"{'' if cpu_g == g else ' (and not the CUDA one modelled)'}")
        table.append({"dtype": dtype_name, "strategy": "nvfp4 (ModelOpt)", "tensor": tensor, "values": t.numel(),
                      "peer": diff})
    return failures


def compare_deepgemm(work, folder, tensors, dtype_name, bitexact, checkout):
    """DeepGEMM's own `per_block_cast_to_fp8` (UE8M0 and f32 scales) against `--recipe
    deepgemm`, block by block, on the blocks where its CPU arithmetic is its CUDA
    arithmetic. Returns the mismatches (0 where no checkout is given: it says skipped)."""
    if checkout is None:
        print("deepgemm: skipped: no DeepGEMM checkout given (--deepgemm DIR)")
        return 0
    from producer_code import deepgemm_per_block_cast

    cast_fp8 = deepgemm_per_block_cast(checkout)
    if isinstance(cast_fp8, str):
        print(f"deepgemm: skipped: {cast_fp8}")
        return 0
    failures = 0
    r = np.float32(1.0) / np.float32(448.0)
    for scale_format in ("ue8m0", "f32"):
        out = work / f"out-{dtype_name}-deepgemm-{scale_format}"
        shutil.rmtree(out, ignore_errors=True)
        cmd = [bitexact, "cast", str(folder), "-o", str(out), "--to", "e4m3", "--scale", "block", "--layout",
               "deepseek", "--recipe", "deepgemm", "--scale-format", scale_format]
        subprocess.run(cmd, check=True, capture_output=True)
        ours = read_safetensors(out / "model.safetensors")
        for name, t in tensors.items():
            rows, cols = t.shape
            q, sf = cast_fp8(t, use_ue8m0=scale_format == "ue8m0")
            theirs_sf = sf.contiguous().view(torch.int32).numpy().astype(np.uint32).reshape(-1)
            theirs_q = q.view(torch.uint8).numpy().reshape(-1)
            ours_sf = np.frombuffer(ours[name + "_scale_inv"][2], dtype="<u4")
            ours_q = np.frombuffer(ours[name][2], dtype=np.uint8)
            # Each block's amax as DeepGEMM takes it, and its sf on a CPU and on CUDA.
            which = block_index(rows, cols, "block")
            magnitude = np.abs(t.to(torch.float32).numpy().reshape(-1))
            amax = np.zeros(len(ours_sf), dtype=np.float32)
            np.maximum.at(amax, which, magnitude)
            amax = np.maximum(amax, np.float32(1e-4))
            cpu, cuda = amax / np.float32(448.0), amax * r
            if scale_format == "ue8m0":
                up = lambda v: np.exp2(np.ceil(np.log2(v.astype(np.float64))))  # exact for f32 v: no rounding there
                same = up(cpu) == up(cuda)
            else:
                same = cpu == cuda
            compared = same[which]
            diff = (int(np.count_nonzero((ours_sf != theirs_sf) & same)),
                    int(np.count_nonzero((ours_q != theirs_q) & compared)))
            failures += sum(diff) > 0
            tensor = name.split(".")[-2]
            print(f"{dtype_name:4} deepgemm {scale_format:5} {tensor:20} {t.numel():8}: ours (--recipe deepgemm) against "
                  f"DeepGEMM's per_block_cast_to_fp8 on {int(same.sum())} of {len(same)} blocks "
                  f"(its CPU sf is its CUDA one there): {diff[0]} scales, {diff[1]} codes differ")
            if scale_format == "ue8m0":
                # The rule before 7f2a703: 2^ceil(log2(sf)) in f32.
                log2_rule = torch.exp2(torch.ceil(torch.log2(torch.from_numpy(cuda)))).numpy().view(np.uint32)
                below = int(np.count_nonzero(log2_rule < ours_sf))
                print(f"     ({below} of its blocks a power of two lower by 2^ceil(log2(sf)) in f32)")
    return failures


def deepgemm_planted(work):
    """The planted f32 tensor for DeepGEMM's recipe (128 x 384: three blocks), in its folder."""
    x = np.random.default_rng(11).uniform(-0.4, 0.4, size=(128, 384)).astype(np.float32)
    x[5, 7] = np.frombuffer(np.uint32(np.float32(0.4375).view(np.uint32) + 1).tobytes(), dtype=np.float32)[0]
    x[:, 128:256] *= np.float32(2e-4)  # every value below 1e-4
    x[:, 256:] = 0.0
    folder = work / "in-deepgemm-planted"
    folder.mkdir(exist_ok=True)
    name = "model.layers.0.planted.weight"
    t = torch.from_numpy(x)
    write_safetensors(folder / "model.safetensors", {name: ("F32", t)})
    return folder, {name: t}


E4M3_SIGNED = np.concatenate([np.append(E4M3, np.nan), -np.append(E4M3, np.nan)])
E2M1_SIGNED = np.concatenate([E2M1, -E2M1])


def to_bf16(values_f32):
    """float32 numpy values rounded to bfloat16 (nearest even), as float32."""
    return torch.from_numpy(values_f32).to(torch.bfloat16).to(torch.float32).numpy()


def our_dequantisation(ours, name, mode, shape, scale_to_bf16=False):
    """What a reader computes from our file for weight `name` (as compressed-tensors'
    `_dequantize` does: the code's value times the scale, `fl32`, then the model's bf16);
    with `scale_to_bf16`, from our F32 scales rounded to bf16 first."""
    rows, cols = shape
    r, c = np.divmod(np.arange(rows * cols), cols)
    if mode == "nvfp4":
        q = E2M1_SIGNED[unpack_e2m1(ours[name + "_packed"][2])]
        s = torch.from_numpy(E4M3[np.frombuffer(ours[name + "_scale"][2], dtype=np.uint8)].astype(np.float32))
        gs = torch.from_numpy(as_f32(*[ours[name + "_global_scale"][i] for i in (0, 2)]).view(np.float32))
        d = (s / gs).numpy()[r * (cols // 16) + c // 16]
    else:
        q = E4M3_SIGNED[np.frombuffer(ours[name][2], dtype=np.uint8)]
        dtype, _, raw = ours[name + "_scale"]
        if mode == "mx":
            d = 2.0 ** (np.frombuffer(raw, dtype=np.uint8).astype(np.float64) - 127)
            d = d[r * (cols // 32) + c // 32]
        else:
            d = as_f32(dtype, raw).view(np.float32)
            d = (to_bf16(d) if scale_to_bf16 else d).astype(np.float64)
            d = d[(r // 128) * -(-cols // 128) + c // 128] if mode.startswith("block") else d[r]
    return to_bf16((q * d).astype(np.float32))


def load_check(bitexact, work):
    """A tiny bf16 Llama cast each block-scaled way and loaded with transformers' from_pretrained
    (compressed-tensors' quantizer): no key missing or unexpected, and every decompressed
    weight equal to our file's dequantisation. Returns the failures."""
    try:
        import transformers
        from transformers import AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM
    except Exception as error:  # noqa: BLE001: any import failure is a skip
        print(f"load check: skipped: transformers does not import ({type(error).__name__}: {error})")
        return 0
    torch.manual_seed(31)
    config = LlamaConfig(hidden_size=64, intermediate_size=160, num_hidden_layers=2, num_attention_heads=4,
                         num_key_value_heads=2, vocab_size=256, tie_word_embeddings=False)
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() >= 2:
                p.copy_(torch.randn(p.shape) * 0.02)
    src = work / "tiny-llama"
    shutil.rmtree(src, ignore_errors=True)
    model.save_pretrained(src)
    modes = {
        "block": ["--to", "e4m3", "--scale", "block"],
        "block-compressed-tensors": ["--to", "e4m3", "--scale", "block", "--recipe", "compressed-tensors"],
        "block-bf16-scales": ["--to", "e4m3", "--scale", "block", "--scale-format", "bf16"],
        "per-channel": ["--to", "e4m3", "--scale", "per-channel"],
        "mx": ["--to", "e4m3", "--scale", "mx"],
        "nvfp4": ["--to", "nvfp4", "--layout", "compressed-tensors"],
    }
    failures = 0
    print(f"load check: transformers {transformers.__version__}, a bf16 Llama (hidden 64, intermediate 160)")
    for mode, args in modes.items():
        dst = work / f"tiny-llama-{mode}"
        shutil.rmtree(dst, ignore_errors=True)
        subprocess.run([bitexact, "cast", str(src), "-o", str(dst), *args], check=True, capture_output=True)
        ours = read_safetensors(dst / "model.safetensors")
        loaded, info = AutoModelForCausalLM.from_pretrained(dst, output_loading_info=True)
        problems = [f"{k}: {sorted(v)[:3]}" for k, v in info.items() if v]
        # Loaded, every stored tensor is ours bit for bit (the weights still compressed), but
        # F32 scales, which compressed-tensors allocates in the model's bf16 and rounds.
        state = loaded.state_dict()
        rounded = changed = 0
        for stored, (dtype, shape, raw) in ours.items():
            got = state.get(stored)
            if got is None:
                problems.append(f"{stored}: not in the loaded model")
            elif got.contiguous().view(torch.uint8).numpy().tobytes() == raw:
                continue
            elif dtype == "F32" and stored.endswith("_scale") and got.dtype == torch.bfloat16:
                mine = as_f32(dtype, raw).view(np.float32)
                theirs = got.to(torch.float32).numpy().reshape(-1)
                if not np.array_equal(theirs.view(np.uint32), to_bf16(mine).view(np.uint32)):
                    problems.append(f"{stored}: loaded as bf16, but not our scales rounded to bf16")
                rounded += 1
                changed += int(np.count_nonzero(theirs != mine))
            else:
                problems.append(f"{stored}: loaded as {got.dtype} {list(got.shape)}, not our {dtype} bytes")
        # A forward pass decompresses the weights to the model's bf16.
        with torch.no_grad():
            logits = loaded(torch.arange(16).reshape(1, 16)).logits
        if not bool(torch.isfinite(logits).all()):
            problems.append("the logits are not finite")
        params = dict(loaded.named_parameters())
        weights = [n for n in ours if n.endswith("_proj.weight") or n.endswith("_proj.weight_packed")]
        moved = total = 0
        for stored in weights:
            name = stored.removesuffix("_packed")
            got = params.get(name)
            shape = tuple(model.get_parameter(name).shape)
            if got is None or got.dtype != torch.bfloat16 or tuple(got.shape) != shape:
                problems.append(f"{name}: loaded as {None if got is None else (got.dtype, tuple(got.shape))}")
                continue
            want = our_dequantisation(ours, name, mode, shape, scale_to_bf16=rounded > 0)
            decompressed = got.detach().to(torch.float32).numpy().reshape(-1)
            same = decompressed.view(np.uint32) == want.view(np.uint32)
            if not same.all():
                problems.append(f"{name}: {int((~same).sum())} of {same.size} decompressed weights differ")
            if rounded:
                exact = our_dequantisation(ours, name, mode, shape)
                moved += int(np.count_nonzero(decompressed != exact))
                total += decompressed.size
        quantizer = type(getattr(loaded, "hf_quantizer", None)).__name__
        failures += bool(problems)
        if rounded:
            print(f"load check: {mode}: transformers loads our F32 scales into bf16 parameters: {changed} scales "
                  f"of {rounded} tensors rounded, and {moved} of {total} decompressed weights "
                  f"({moved / total:.2%}) differ from q · d for our F32 d")
        print(f"load check: {mode}: loaded through {quantizer}, {len(ours)} tensors ours bit for bit"
              f"{' (F32 scales rounded to bf16)' if rounded else ''}, "
              f"{len(weights)} weights decompressed (after a forward pass) to our dequantisation bit for bit: "
              f"{'yes' if not problems else 'no: ' + '; '.join(problems[:3])}")
    return failures


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bitexact", required=True)
    parser.add_argument("--dir")
    parser.add_argument("--deepgemm", help="a checkout of deepseek-ai/DeepGEMM, to run its per_block_cast_to_fp8")
    parser.add_argument("--markdown", action="store_true")
    a = parser.parse_args()
    work = Path(a.dir or tempfile.mkdtemp(prefix="block_peers."))
    work.mkdir(parents=True, exist_ok=True)
    print(f"compressed-tensors {ct_version}, torch {torch.__version__} (CPU)")
    table, failures = [], 0
    for dtype_name, (torch_dtype, _) in DTYPES.items():
        tensors = {name: torch.from_numpy(w).to(torch_dtype) for name, w in weights(7).items()}
        folder = work / f"in-{dtype_name}"
        folder.mkdir(exist_ok=True)
        write_safetensors(folder / "model.safetensors", {n: (dtype_name, t) for n, t in tensors.items()})
        for strategy in ("block", "per-channel"):
            outs = {}
            for recipe in ("compressed-tensors", "exact"):
                out = work / f"out-{dtype_name}-{strategy}-{recipe}"
                shutil.rmtree(out, ignore_errors=True)
                cmd = [a.bitexact, "cast", str(folder), "-o", str(out), "--to", "e4m3", "--scale", strategy,
                       "--recipe", recipe]
                subprocess.run(cmd, check=True, capture_output=True)
                outs[recipe] = read_safetensors(out / "model.safetensors")
            for name, t in tensors.items():
                rows, cols = t.shape
                theirs_scale, theirs_q, scale_dtype = producer(t, "block" if strategy == "block" else "channel")
                x_bits = t.to(torch.float32).view(torch.int32).numpy().astype(np.uint32).reshape(-1)
                which = block_index(rows, cols, strategy)
                row = {"dtype": dtype_name, "strategy": strategy, "tensor": name.split(".")[-2], "values": t.numel()}
                for recipe, out in outs.items():
                    q = np.frombuffer(out[name][2], dtype=np.uint8)
                    sdtype, _, sraw = out[name + "_scale"]
                    ours_scale = as_f32(sdtype, sraw)
                    scale_diff = int(np.count_nonzero(ours_scale != theirs_scale))
                    diff = np.nonzero(q != theirs_q)[0]
                    row[recipe] = (scale_diff, len(diff))
                    if recipe == "compressed-tensors":
                        if scale_diff or len(diff) or sdtype != ("BF16" if dtype_name == "BF16" else "F32"):
                            failures += 1
                            print(f"MISMATCH {dtype_name} {strategy} {name}: {scale_diff} scales, {len(diff)} codes, "
                                  f"scale dtype {sdtype} (theirs {scale_dtype})")
                    else:
                        kinds = classify(x_bits[diff], ours_scale[which[diff]], theirs_scale[which[diff]], q[diff],
                                         theirs_q[diff])
                        failures += kinds.get("other", 0) > 0
                        row["kinds"] = kinds
                table.append(row)
                ct, ex = row["compressed-tensors"], row["exact"]
                print(f"{dtype_name:4} {strategy:11} {row['tensor']:20} {row['values']:8}: ours (compressed-tensors) "
                      f"{ct[0]} scales, {ct[1]} codes differ; exact recipe {ex[0]} scales, {ex[1]} codes "
                      f"({ex[1] / row['values']:.3%}) {row['kinds']}")
        failures += compare_scaled_groups(work, folder, tensors, dtype_name, a.bitexact, table)
        failures += compare_torchao(work, folder, tensors, dtype_name, a.bitexact, table)
        failures += compare_modelopt(work, folder, tensors, dtype_name, a.bitexact, table)
        failures += compare_deepgemm(work, folder, tensors, dtype_name, a.bitexact, a.deepgemm)
    failures += torchao_planted(work, a.bitexact)
    if a.deepgemm is not None:
        folder, planted = deepgemm_planted(work)
        failures += compare_deepgemm(work, folder, planted, "F32", a.bitexact, a.deepgemm)
    failures += load_check(a.bitexact, work)
    if a.markdown:
        print("\n| weights | strategy | tensor | values | ours (compressed-tensors): scales, codes differing | "
              "exact recipe: scales differing | codes differing | of which scale / double rounding |")
        print("|---|---|---|---|---|---|---|---|")
        for r in table:
            if "peer" in r:
                continue
            ct, ex, k = r["compressed-tensors"], r["exact"], r["kinds"]
            kinds = (f"{k.get('scale', 0):,} / {k.get('double rounding', 0):,}" if r["strategy"] in ("block", "per-channel")
                     else "not classified")
            print(f"| {r['dtype']} | {r['strategy']} | {r['tensor']} | {r['values']:,} | {ct[0]}, {ct[1]} | {ex[0]} | "
                  f"{ex[1]:,} ({ex[1] / r['values']:.2%}) | {kinds}"
                  f"{' / both ' + format(k['scale and double rounding'], ',') if 'scale and double rounding' in k else ''}"
                  f"{' / other ' + str(k['other']) if 'other' in k else ''} |")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
