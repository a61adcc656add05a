#!/usr/bin/env python3
"""`bitexact cast` value by value against its peers, on the same generated tensors.

    cast_peers.py --bitexact PATH [--dir DIR] [--examples 3] [--markdown]
    cast_peers.py --bitexact PATH --load-check [--dir DIR]

Writes one small f32 checkpoint per target (the same four weight tensors each time:
N(0, 0.02) matrices of several shapes, odd ones included, and a heavy-tailed one drawn
from Student's t with 2 degrees of freedom; plus one edge tensor for that target: values
at and near its saturation bound, ties of its rounding, subnormals), casts it with
`bitexact cast`, and computes the same conversion with each peer that imports:

- bf16: PyTorch `.to(torch.bfloat16)`, ml_dtypes `astype(bfloat16)`;
- f16: PyTorch `.to(torch.float16)`, NumPy `astype(float16)`;
- e4m3 / e5m2 per-tensor (`--rounding once` and `--rounding two-step`): the recipe
  `s = max / amax`, `(x * s)` then FP8, in PyTorch with and without `clamp(-max, max)`
  (s from `amax.item()`, as `cast_python_route.py` has it, and s from the amax tensor,
  which PyTorch computes as `amax.reciprocal() * max`), and in ml_dtypes with and
  without `np.clip`; torchao's float8 training recipe
  (`tensor_to_scale`, its scale computed in f64 then rounded to f32, `x * s`,
  `to_fp8_saturated`) and its inference recipe (`_choose_scale_float8` /
  `_quantize_affine_float8`: `d = amax / max`, `x / d`); compressed-tensors' (the
  library llm-compressor quantises with: `calculate_qparams`, `d = amax / 448`,
  `quantize`: `clamp(x / d)` then FP8), E4M3 only;
- e4m3 `--scale none` (saturating) and `--scale none --no-saturate`: PyTorch
  `.to(torch.float8_e4m3fn)` with and without `clamp`, ml_dtypes `astype` with and
  without `np.clip`.

For each target and peer it prints how many output values differ from ours, and
classifies every difference with exact rational arithmetic (`fractions`): "NaN on
overflow" (theirs NaN, ours finite), "saturated by the peer" (ours non-finite under
`--no-saturate`), "scale computed differently" (the peer's s is not ours), "x / d, not
x * s" (theirs is RNE(fl32(x / d)) for the peer's dequantisation scale d), "double
rounding" (theirs is RNE(fl32(x*s)), ours the exact x*s rounded once), and "other"
(listed: none is expected). Our own values are checked against the exact rounding on
every edge and tie value, every 61st other value and every value where a peer differs,
and our
stored scales against fl32(1 / fl32(max / amax)) (computed here with NumPy). A library
that does not import prints `skipped: <reason>`; only NumPy is required. `--markdown`
prints the counts as a table at the end. Exit 1 if one of our values or scales is not
the documented one, or a cast fails.

`--load-check` loads our FP8 output the way a user of compressed-tensors does: a tiny
Llama (transformers' `LlamaForCausalLM`, random N(0, 0.02) weights, one layer's
`down_proj` heavy-tailed) saved with `save_pretrained` (f32 safetensors + config.json),
`bitexact cast DIR -o OUT --to e4m3` (which writes `quantization_config` into
OUT/config.json), then `AutoModelForCausalLM.from_pretrained(OUT)`: transformers hands
the config to compressed-tensors (`CompressedTensorsHfQuantizer`, `ModelCompressor`),
which builds FP8 `weight` + `weight_scale` parameters and loads ours into them. It checks
that nothing is missing, unexpected or mismatched, that every FP8 weight and scale loaded
is the one in our file bit for bit, and that the embedding, head and norms are the f32
inputs; runs a forward pass (which makes compressed-tensors decompress the weights) and
checks each dequantised weight against the f32 input: equal to fl32(q * d) (its
dequantisation) and within the FP8 bound |w' - w| <= (max(2^-4 |w s|, 2^-10) + 2^-22
|q|) / s. Prints `compressed-tensors load: ok` (exit 0), or what failed (exit 1), or
`skipped: <reason>` (exit 0) where transformers or compressed-tensors does not import.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from fractions import Fraction

try:
    import numpy as np
except ImportError as numpy_error:
    print(f"skipped: cast_peers.py needs numpy ({numpy_error})")
    sys.exit(0)


# --- formats: exact decoding and rounding ------------------------------------------------

class Format:
    """A binary floating-point format: `mbits` stored mantissa bits, `ebits` exponent
    bits, `width` bits in all; `fn` for E4M3's finite-only layout (no infinity, NaN at
    S.1111.111)."""

    def __init__(self, name, width, ebits, mbits, fn=False):
        self.name, self.width, self.ebits, self.mbits, self.fn = name, width, ebits, mbits, fn
        self.bias = (1 << (ebits - 1)) - 1
        self.emin = 1 - self.bias
        top = (1 << ebits) - 1
        if fn:
            self.max = Fraction(2 ** (top - self.bias)) * (2 - Fraction(2, 1 << mbits))
        else:
            self.max = Fraction(2) ** (top - 1 - self.bias) * (2 - Fraction(1, 1 << mbits))
        self.nan = ((1 << (width - 1)) - 1) if fn else (((top << mbits) | (1 << (mbits - 1))))
        self.inf = None if fn else top << mbits
        self.table = {}
        for bits in range(1 << width):
            value = self.decode(bits)
            if isinstance(value, tuple) and value[0] == "finite":
                self.table.setdefault((value[1], value[2]), bits)

    def decode(self, bits):
        """("nan",), ("inf", sign) or ("finite", sign, |value| as a Fraction)."""
        sign = (bits >> (self.width - 1)) & 1
        e = (bits >> self.mbits) & ((1 << self.ebits) - 1)
        m = bits & ((1 << self.mbits) - 1)
        top = (1 << self.ebits) - 1
        if self.fn and e == top and m == (1 << self.mbits) - 1:
            return ("nan",)
        if not self.fn and e == top:
            return ("nan",) if m else ("inf", sign)
        if e == 0:
            mag = Fraction(m, 1 << self.mbits) * Fraction(2) ** self.emin
        else:
            mag = (1 + Fraction(m, 1 << self.mbits)) * Fraction(2) ** (e - self.bias)
        return ("finite", sign, mag)

    def to_float(self, bits):
        d = self.decode(int(bits))
        if d[0] == "nan":
            return float("nan")
        if d[0] == "inf":
            return -float("inf") if d[1] else float("inf")
        return -float(d[2]) if d[1] else float(d[2])

    def is_nan(self, bits):
        return self.decode(int(bits))[0] == "nan"

    def is_finite(self, bits):
        return self.decode(int(bits))[0] == "finite"

    def round(self, value, sign, saturate):
        """The encoding of the exact magnitude `value` (a Fraction) with `sign`, rounded
        to nearest, ties to even; past the largest finite: the largest finite if
        `saturate`, else infinity (NaN for E4M3)."""
        if value == 0:
            return self.table[(sign, Fraction(0))]
        e = value.numerator.bit_length() - value.denominator.bit_length()
        if Fraction(2) ** e > value:
            e -= 1
        e = max(e, self.emin)
        quantum = Fraction(2) ** (e - self.mbits)
        n = value / quantum
        r = n.numerator // n.denominator
        rest = n - r
        if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and r % 2 == 1):
            r += 1
        mag = r * quantum
        if mag > self.max:
            if saturate:
                mag = self.max
            else:
                return (self.nan if self.fn else self.inf) | (sign << (self.width - 1))
        return self.table[(sign, mag)]


BF16 = Format("bf16", 16, 8, 7)
F16 = Format("f16", 16, 5, 10)
E4M3 = Format("e4m3", 8, 4, 3, fn=True)
E5M2 = Format("e5m2", 8, 5, 2)


def exact_f32(x):
    """The f32 `x` (a NumPy scalar) as (sign, |x| as a Fraction)."""
    x = np.float32(x)
    return (1 if np.signbit(x) else 0), Fraction(abs(float(x)))


# --- the tensors ---------------------------------------------------------------------------

def common_tensors(rng):
    """The weights every target casts: N(0, 0.02) of several shapes, one heavy-tailed."""
    return {
        "model.layers.0.mlp.up_proj.weight": (rng.standard_normal((384, 256)) * 0.02).astype("<f4"),
        "model.layers.0.self_attn.o_proj.weight": (rng.standard_normal((129, 67)) * 0.02).astype("<f4"),
        "model.layers.1.mlp.down_proj.weight": (rng.standard_normal((96, 257)) * 0.02).astype("<f4"),
        "model.layers.1.mlp.gate_proj.weight": (rng.standard_t(2, (256, 300)) * 0.02).astype("<f4"),
    }


def around(values):
    """Each value, and the f32s just below and above it."""
    out = []
    for v in values:
        v = np.float32(v)
        out += [v, np.nextafter(v, np.float32(-np.inf)), np.nextafter(v, np.float32(np.inf))]
    return out


def edge_tensor(kind):
    """Values at and near the saturation bound of the target, its ties and subnormals,
    each with its f32 neighbours, both signs, as a 2-D tensor. For the scaled targets the
    largest magnitude is the format's maximum, so that s = 1 exactly and x * s = x: the
    ties stay ties in both roundings."""
    p = lambda e: 2.0**e  # noqa: E731
    if kind == "bf16":
        values = around([1 + p(-8), 1 + 3 * p(-8), 3 + p(-7), p(-133), p(-134), 3 * p(-134), p(-126), p(-149),
                         65504, 65520, 3.0e38, 1e-40])
        values.append(np.uint32(0x7F7F7FFF).view(np.float32))  # the largest f32 that rounds to bf16's max
    elif kind == "f16":
        values = around([65504, 65519, 65519.99, 1 + p(-11), 1 + 3 * p(-11), p(-24), p(-25), 3 * p(-25),
                         p(-14), 1e-10, 2049, 2051])
    elif kind == "e4m3-scaled":
        values = around([448, 440, 432, 424, 416, 1.0625, 1.1875, 2.125, p(-9), p(-10), 3 * p(-10), p(-6),
                         p(-6) + p(-10)])
        values = [v for v in values if abs(float(v)) <= 448]
    elif kind == "e5m2-scaled":
        values = around([57344, 53248, 49152, 1.125, 1.375, p(-16), p(-17), 3 * p(-17), p(-14), p(-14) + p(-17)])
        values = [v for v in values if abs(float(v)) <= 57344]
    elif kind == "e4m3-none":
        values = around([448, 449, 463.99, 464, 465, 480, 500, 1000, 1e10, 3e38, 1.0625, 1.1875, p(-9), p(-10),
                         3 * p(-10), p(-11), p(-6) + p(-10), 1e-30])
    else:
        raise ValueError(kind)
    return signed_rows(values)


def ties_tensor(fmt):
    """For the scaled targets: amax 3 (so s = fl32(max / 3) is not a power of two), and
    for midpoints m between neighbouring FP8 values (normal and subnormal), the f32s
    nearest m / s and their neighbours up to 4 ulps away: x * s lands within an f32 ulp
    or so of m, where fl32(x * s) can be m itself though x * s is not (double rounding)."""
    s = np.float32(fmax_f32(fmt) / np.float32(3))
    if fmt is E4M3:
        mids = [1.0625, 1.1875, 1.4375, 2.125, 17.0, 19.0, 136.0, 432.0, 3 * 2.0**-10, 5 * 2.0**-10, 2.0**-10,
                2.0**-6 + 2.0**-10]
    else:
        mids = [1.125, 1.375, 1.625, 2.25, 18.0, 20480.0, 53248.0, 3 * 2.0**-17, 2.0**-17, 2.0**-14 + 2.0**-17]
    values = [np.float32(3.0)]
    for m in mids:
        x = np.float32(np.float64(m) / np.float64(s))
        for _ in range(4):
            x = np.nextafter(x, np.float32(-np.inf))
        for _ in range(9):
            values.append(x)
            x = np.nextafter(x, np.float32(np.inf))
    return signed_rows([v for v in values if abs(float(v)) <= 3.0])


def signed_rows(values):
    """The values and their negatives, and a zero, padded with zeros to rows of 8."""
    values = [np.float32(v) for v in values]
    values += [-v for v in values]
    values.append(np.float32(0.0))
    array = np.array(values, dtype="<f4")
    pad = -len(array) % 8
    array = np.concatenate([array, np.zeros(pad, dtype="<f4")])
    return array.reshape(-1, 8)


# --- safetensors, with NumPy only ------------------------------------------------------------

NUMPY_OF = {"F32": "<f4", "BF16": "<u2", "F16": "<u2", "F8_E4M3": "u1", "F8_E5M2": "u1"}


def write_safetensors(path, tensors):
    """cast_python_route.py's writer (the same generated-checkpoint format)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from cast_python_route import write_safetensors as write

    write(path, {name: np.ascontiguousarray(array) for name, array in tensors.items()})


def read_safetensors(path):
    """{name: (dtype, raw array of its bits)}; F32 as `<f4`, the others as unsigned bits."""
    with open(path, "rb") as f:
        data = f.read()
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        raw = np.frombuffer(data[8 + n + start:8 + n + end], dtype=NUMPY_OF[info["dtype"]])
        out[name] = (info["dtype"], raw.reshape(info["shape"]))
    return out


# --- the peers ---------------------------------------------------------------------------------

class Skipped(Exception):
    pass


def load_libraries():
    libs = {"numpy": np}
    try:
        import torch
        libs["torch"] = torch
    except ImportError as error:
        libs["torch"] = Skipped(f"torch does not import ({error})")
    try:
        import ml_dtypes
        libs["ml_dtypes"] = ml_dtypes
    except ImportError as error:
        libs["ml_dtypes"] = Skipped(f"ml_dtypes does not import ({error})")
    try:
        from torchao.float8 import float8_utils
        from torchao.quantization import quant_primitives
        import torchao
        libs["torchao"] = (torchao, float8_utils, quant_primitives)
    except Exception as error:  # noqa: BLE001: any import failure is a skip
        libs["torchao"] = Skipped(f"torchao does not import ({type(error).__name__}: {error})")
    try:
        import compressed_tensors
        from compressed_tensors.quantization import QuantizationArgs
        from compressed_tensors.quantization.lifecycle.forward import quantize
        from compressed_tensors.quantization.utils.helpers import calculate_qparams
        libs["compressed_tensors"] = (compressed_tensors, QuantizationArgs, quantize, calculate_qparams)
    except Exception as error:  # noqa: BLE001
        libs["compressed_tensors"] = Skipped(f"compressed-tensors does not import ({type(error).__name__}: {error})")
    try:
        import llmcompressor  # noqa: F401
        libs["llmcompressor"] = llmcompressor
    except Exception as error:  # noqa: BLE001
        libs["llmcompressor"] = Skipped(
            f"llm-compressor does not import ({type(error).__name__}: {error}); its FP8 weights are "
            "compressed-tensors' calculate_qparams + quantize, compared above")
    return libs


def need(libs, name):
    lib = libs[name]
    if isinstance(lib, Skipped):
        raise lib
    return lib


def torch_bits(t):
    torch = sys.modules["torch"]
    if t.element_size() == 1:
        return t.view(torch.uint8).numpy().copy()
    return t.view(torch.int16).numpy().view(np.uint16).copy()


def torch_f8(libs, fmt):
    torch = need(libs, "torch")
    return torch.float8_e4m3fn if fmt is E4M3 else torch.float8_e5m2


def ml_f8(libs, fmt):
    ml = need(libs, "ml_dtypes")
    return ml.float8_e4m3fn if fmt is E4M3 else ml.float8_e5m2


def fmax_f32(fmt):
    return np.float32(float(fmt.max))


def our_s(x, fmt):
    """s = fl32(max / amax), 1 for amax 0 (NumPy f32 arithmetic: IEEE division)."""
    amax = np.float32(np.max(np.abs(x)))
    if amax == 0:
        return np.float32(1)
    with np.errstate(over="ignore"):
        s = np.float32(fmax_f32(fmt) / amax)
    return s if np.isfinite(s) else np.float32(np.finfo(np.float32).max)


# Each peer: (label, applies(target), run(libs, x, fmt) -> (bits, scale info)). Scale info
# is None (unscaled), ("s", s) for a peer multiplying by s, or ("d", d) for a peer
# dividing by a dequantisation scale d.

def p_torch_bf16(libs, x, fmt):
    torch = need(libs, "torch")
    return torch_bits(torch.from_numpy(x).to(torch.bfloat16)), None


def p_ml_bf16(libs, x, fmt):
    return x.astype(need(libs, "ml_dtypes").bfloat16).view(np.uint16), None


def p_torch_f16(libs, x, fmt):
    torch = need(libs, "torch")
    return torch_bits(torch.from_numpy(x).to(torch.float16)), None


def p_numpy_f16(libs, x, fmt):
    return x.astype(np.float16).view(np.uint16), None


def p_torch_scaled(clamp, rdiv):
    """`rdiv`: s = max / amax with amax a tensor, which PyTorch computes as
    `amax.reciprocal() * max` (`Tensor.__rdiv__`): two roundings. Else s =
    fl32(max / amax.item()) (an f64 quotient rounded to f32: the same as fl32(max / amax),
    as `cast_python_route.py` computes it)."""
    def run(libs, x, fmt):
        torch = need(libs, "torch")
        t = torch.from_numpy(x)
        fmax = torch.finfo(torch_f8(libs, fmt)).max
        if rdiv:
            s = fmax / t.abs().max()
        else:
            s = torch.tensor(fmax / t.abs().max().item(), dtype=torch.float32)
        y = t * s
        if clamp:
            y = y.clamp(-fmax, fmax)
        return torch_bits(y.to(torch_f8(libs, fmt))), ("s", np.float32(s.item()))
    return run


def p_ml_scaled(clip):
    def run(libs, x, fmt):
        f8 = ml_f8(libs, fmt)
        s = np.float32(fmax_f32(fmt) / np.float32(np.max(np.abs(x))))
        y = (x * s).astype(np.float32)
        if clip:
            y = np.clip(y, -fmax_f32(fmt), fmax_f32(fmt))
        return y.astype(f8).view(np.uint8), ("s", s)
    return run


def p_torchao_training(libs, x, fmt):
    torch = need(libs, "torch")
    _, float8_utils, _ = need(libs, "torchao")
    f8 = torch_f8(libs, fmt)
    t = torch.from_numpy(x)
    s = float8_utils.tensor_to_scale(t, f8)
    q = float8_utils.to_fp8_saturated(t.to(torch.float32) * s, f8)
    return torch_bits(q), ("s", np.float32(s.item()))


def p_torchao_inference(libs, x, fmt):
    torch = need(libs, "torch")
    _, _, qp = need(libs, "torchao")
    f8 = torch_f8(libs, fmt)
    t = torch.from_numpy(x)
    d = qp._choose_scale_float8(t, list(t.shape), f8)
    q = qp._quantize_affine_float8(t, d, f8)
    return torch_bits(q), ("d", np.float32(d.reshape(-1)[0].item()))


def p_compressed_tensors(libs, x, fmt):
    if fmt is not E4M3:
        raise Skipped("compressed-tensors' 8-bit float is E4M3 only")
    torch = need(libs, "torch")
    _, QuantizationArgs, quantize, calculate_qparams = need(libs, "compressed_tensors")
    args = QuantizationArgs(num_bits=8, type="float", strategy="tensor", symmetric=True, dynamic=False)
    t = torch.from_numpy(x)
    d, zp = calculate_qparams(t.min().reshape(1), t.max().reshape(1), args)
    q = quantize(t, d, zp, args, dtype=torch.float8_e4m3fn)
    return torch_bits(q), ("d", np.float32(d.reshape(-1)[0].item()))


def p_torch_none(clamp):
    def run(libs, x, fmt):
        torch = need(libs, "torch")
        t = torch.from_numpy(x)
        if clamp:
            t = t.clamp(-448.0, 448.0)
        return torch_bits(t.to(torch.float8_e4m3fn)), None
    return run


def p_ml_none(clip):
    def run(libs, x, fmt):
        y = np.clip(x, -448.0, 448.0).astype(np.float32) if clip else x
        return y.astype(need(libs, "ml_dtypes").float8_e4m3fn).view(np.uint8), None
    return run


PEERS = {
    "bf16": [("torch .to(bfloat16)", p_torch_bf16), ("ml_dtypes astype(bfloat16)", p_ml_bf16)],
    "f16": [("torch .to(float16)", p_torch_f16), ("numpy astype(float16)", p_numpy_f16)],
    "scaled": [
        ("torch (x*s).clamp(±max).to(f8), s = max / amax.item()", p_torch_scaled(True, False)),
        ("torch (x*s).to(f8), no clamp, s = max / amax.item()", p_torch_scaled(False, False)),
        ("torch (x*s).clamp(±max).to(f8), s = max / amax (a tensor)", p_torch_scaled(True, True)),
        ("ml_dtypes clip(x*s).astype(f8)", p_ml_scaled(True)),
        ("ml_dtypes (x*s).astype(f8), no clip", p_ml_scaled(False)),
        ("torchao float8 training (tensor_to_scale, x*s)", p_torchao_training),
        ("torchao float8 inference (x / (amax/max))", p_torchao_inference),
        ("compressed-tensors / llm-compressor (x / (amax/448))", p_compressed_tensors),
    ],
    "none": [
        ("torch .to(float8_e4m3fn), no clamp", p_torch_none(False)),
        ("torch clamp(±448).to(float8_e4m3fn)", p_torch_none(True)),
        ("ml_dtypes astype(float8_e4m3fn), no clip", p_ml_none(False)),
        ("ml_dtypes clip(±448).astype(float8_e4m3fn)", p_ml_none(True)),
    ],
}

# (label, bitexact flags, format, family, edge kind, rounding, saturate)
TARGETS = [
    ("bf16", ["--to", "bf16"], BF16, "bf16", "bf16", None, False),
    ("f16", ["--to", "f16"], F16, "f16", "f16", None, False),
    ("e4m3 per-tensor, once", ["--to", "e4m3", "--rounding", "once"], E4M3, "scaled", "e4m3-scaled", "once", True),
    ("e4m3 per-tensor, two-step", ["--to", "e4m3", "--rounding", "two-step"], E4M3, "scaled", "e4m3-scaled",
     "two-step", True),
    ("e5m2 per-tensor, once", ["--to", "e5m2", "--rounding", "once"], E5M2, "scaled", "e5m2-scaled", "once", True),
    ("e5m2 per-tensor, two-step", ["--to", "e5m2", "--rounding", "two-step"], E5M2, "scaled", "e5m2-scaled",
     "two-step", True),
    ("e4m3 --scale none", ["--to", "e4m3", "--scale", "none"], E4M3, "none", "e4m3-none", None, True),
    ("e4m3 --scale none --no-saturate", ["--to", "e4m3", "--scale", "none", "--no-saturate", "--nonfinite", "keep"],
     E4M3, "none",
     "e4m3-none", None, False),
]


# --- the comparison ------------------------------------------------------------------------------

def exact_ours(x, fmt, s, rounding, saturate):
    """The encoding our definition gives for the f32 `x`: RNE of x (unscaled; bf16/f16
    overflow to infinity), of the exact x*s (`once`), or of fl32(x*s) (`two-step`)."""
    sign, mag = exact_f32(x)
    if s is None:
        return fmt.round(mag, sign, saturate)
    if rounding == "once":
        return fmt.round(mag * Fraction(float(s)), sign, True)
    sign2, mag2 = exact_f32(np.float32(x) * np.float32(s))
    return fmt.round(mag2, sign2, True)


def classify(x, ours, theirs, fmt, s, rounding, scale, scale_differs):
    """Why the peer's `theirs` is not our `ours` for the f32 `x` (see the module doc)."""
    if fmt.is_nan(theirs) and not fmt.is_nan(ours):
        return "NaN on overflow"
    if not fmt.is_finite(ours) and fmt.is_finite(theirs):
        return "saturated by the peer"
    if scale is not None and scale[0] == "d":
        sign, mag = exact_f32(np.float32(x) / scale[1])
        if theirs == fmt.round(mag, sign, True):
            return "x / d, not x * s" + (" (d computed differently too)" if scale_differs else "")
        return "other"
    if scale_differs:
        return "scale computed differently"
    if s is not None and rounding == "once" and theirs == exact_ours(x, fmt, s, "two-step", True):
        return "double rounding"
    return "other"


def compare(target, libs, tensors, ours_file, examples):
    label, flags, fmt, family, edge_kind, rounding, saturate = target
    result = {"label": label, "peers": {}, "ours_wrong": 0, "ours_checked": 0, "scales_wrong": 0, "scaled": 0}
    ours_s = {}
    for name, x in tensors.items():
        dtype, bits = ours_file[name]
        s = our_s(x, fmt) if family == "scaled" else None
        ours_s[name] = s
        if s is not None:
            result["scaled"] += 1
            stored = ours_file[name + "_scale"][1].view(np.float32)
            if stored.shape != (1,) or stored[0] != np.float32(np.float32(1) / s):
                result["scales_wrong"] += 1
        every = 1 if name.endswith(("edge.weight", "ties.weight")) else 61
        flat, flat_bits = x.reshape(-1), bits.reshape(-1)
        for i in range(0, x.size, every):
            result["ours_checked"] += 1
            if int(flat_bits[i]) != exact_ours(flat[i], fmt, s, rounding, saturate):
                result["ours_wrong"] += 1
    total = sum(x.size for x in tensors.values())
    result["values"] = total
    for peer_label, run in PEERS[family]:
        entry = {"differ": 0, "in_weights": 0, "classes": {}, "examples": [], "scale_differs": []}
        try:
            for name, x in tensors.items():
                theirs, scale = run(libs, x, fmt)
                ours = ours_file[name][1].reshape(-1)
                theirs = np.asarray(theirs).reshape(-1)
                s = ours_s[name]
                scale_differs = False
                if scale is not None:
                    kind, value = scale
                    mine = s if kind == "s" else np.float32(np.float32(1) / s)
                    scale_differs = value.view(np.uint32) != mine.view(np.uint32)
                    if scale_differs:
                        entry["scale_differs"].append((name, kind, float(mine), float(value)))
                where = np.flatnonzero(ours.astype(np.int64) != theirs.astype(np.int64))
                entry["differ"] += len(where)
                if not name.endswith(("edge.weight", "ties.weight")):
                    entry["in_weights"] += len(where)
                flat = x.reshape(-1)
                for i in where:
                    xv, o, t = flat[i], int(ours[i]), int(theirs[i])
                    result["ours_checked"] += 1
                    if o != exact_ours(xv, fmt, s, rounding, saturate):
                        result["ours_wrong"] += 1
                    c = classify(xv, o, t, fmt, s, rounding, scale, scale_differs)
                    entry["classes"][c] = entry["classes"].get(c, 0) + 1
                    if sum(1 for e in entry["examples"] if e[0] == c) < examples:
                        entry["examples"].append((c, name, int(i), float(xv), fmt.to_float(o), fmt.to_float(t)))
        except Skipped as why:
            entry = {"skipped": str(why)}
        result["peers"][peer_label] = entry
    return result


def print_result(result, flags, examples):
    print(f"== {result['label']}: bitexact cast {' '.join(flags)} ==")
    line = f"ours: {result['values']} values"
    if result["scaled"]:
        line += (f"; stored scale = fl32(1/fl32(max/amax)) on {result['scaled'] - result['scales_wrong']} of "
                 f"{result['scaled']} tensors")
    line += (f"; checked against the exact rational rounding on {result['ours_checked']} values "
             f"(every edge and tie value, every 61st other value, every value a peer differs on): {result['ours_wrong']} wrong")
    print(line)
    for peer, entry in result["peers"].items():
        if "skipped" in entry:
            print(f"  {peer}: skipped: {entry['skipped']}")
            continue
        classes = ", ".join(f"{k} {v}" for k, v in sorted(entry["classes"].items())) or "-"
        print(f"  {peer}: {entry['differ']} of {result['values']} differ, {entry['in_weights']} of them in the "
              f"random weights [{classes}]")
        if entry["scale_differs"]:
            kind = entry["scale_differs"][0][1]
            what = "s" if kind == "s" else "dequantisation scale"
            print(f"      its {what} differs from ours on {len(entry['scale_differs'])} of {result['scaled']} tensors, "
                  f"e.g.:")
            for name, kind, mine, theirs in entry["scale_differs"][:examples]:
                print(f"      {name}: ours {mine!r}, theirs {theirs!r}")
        for c, name, i, xv, o, t in entry["examples"]:
            print(f"      {c}: {name}[{i}] x={xv!r} ours={o!r} theirs={t!r}")


def load_check(bitexact, folder):
    """The `--load-check` above: 0 if every check passes (or skipped), 1 if one fails."""
    try:
        import torch
        import compressed_tensors
        import transformers
        from transformers import AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM
    except Exception as error:  # noqa: BLE001: any import failure is a skip
        print(f"skipped: the load check needs torch, transformers and compressed-tensors "
              f"({type(error).__name__}: {error})")
        return 0
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, "
          f"compressed-tensors {compressed_tensors.__version__}")
    torch.manual_seed(31)
    config = LlamaConfig(hidden_size=64, intermediate_size=160, num_hidden_layers=2, num_attention_heads=4,
                         num_key_value_heads=2, vocab_size=256, tie_word_embeddings=False)
    model = LlamaForCausalLM(config)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() >= 2:
                p.copy_(torch.randn(p.shape) * 0.02)
        heavy = model.model.layers[1].mlp.down_proj.weight
        heavy.copy_(torch.distributions.StudentT(2.0).sample(heavy.shape) * 0.02)
    src, dst = os.path.join(folder, "tiny-llama"), os.path.join(folder, "tiny-llama-e4m3")
    model.save_pretrained(src)
    inputs = {name: (dtype, bits) for name, (dtype, bits) in read_safetensors(os.path.join(src, "model.safetensors"))
              .items()}
    run = subprocess.run([bitexact, "cast", src, "-o", dst, "--to", "e4m3"], capture_output=True, text=True)
    if run.returncode != 0:
        print(f"FAILED: bitexact cast exit {run.returncode}: {run.stderr.strip()}")
        return 1
    ours = read_safetensors(os.path.join(dst, "model.safetensors"))
    failures = []
    loaded, info = AutoModelForCausalLM.from_pretrained(dst, output_loading_info=True)
    for key in ["missing_keys", "unexpected_keys", "mismatched_keys", "error_msgs"]:
        if info.get(key):
            failures.append(f"{key}: {sorted(info[key])[:5]}")
    quantizer = type(getattr(loaded, "hf_quantizer", None)).__name__
    state = {k: v.detach().clone() for k, v in loaded.state_dict().items()}
    fp8 = [name for name, (dtype, _) in ours.items() if dtype == "F8_E4M3"]
    for name, (dtype, bits) in ours.items():
        if name not in state:
            failures.append(f"{name}: in our file, not in the loaded model")
            continue
        got = state[name]
        mine = bits if dtype != "F32" else bits.view(np.uint32)
        theirs = torch_bits(got) if got.element_size() < 4 else got.contiguous().view(torch.int32).numpy().view(
            np.uint32)
        if theirs.shape != mine.shape or not np.array_equal(theirs, mine):
            failures.append(f"{name}: loaded as {got.dtype} {list(got.shape)}, not our {dtype} bits")
    print(f"loaded through {quantizer}: {len(fp8)} FP8 weights with their weight_scale, "
          f"{len(ours) - 2 * len(fp8)} other tensors; every one bit for bit ours: "
          f"{'yes' if not failures else 'no'}")
    with torch.no_grad():
        ids = torch.arange(16).reshape(1, 16)
        logits = loaded(ids).logits
        reference = model(ids).logits
    decompressed = dict(loaded.named_parameters())
    worst, checked = 0.0, 0
    for name in fp8:
        w = inputs[name][1].astype(np.float64)
        got = decompressed.get(name)
        if got is None or got.dtype != torch.float32:
            failures.append(f"{name}: not decompressed to f32 after a forward pass "
                            f"({None if got is None else got.dtype})")
            continue
        got = got.detach().numpy()
        q = E4M3_VALUES[ours[name][1]].astype(np.float32)
        d = ours[name + "_scale"][1].view(np.float32)[0]
        s = our_s(inputs[name][1], E4M3)
        if not np.array_equal(got.view(np.uint32), (q * d).astype(np.float32).view(np.uint32)):
            failures.append(f"{name}: dequantised weights are not fl32(q * weight_scale)")
        ws = np.abs(w * np.float64(s))
        bound = (np.maximum(ws * 2.0**-4, 2.0**-10) + np.abs(q.astype(np.float64)) * 2.0**-22) / np.float64(s)
        err = np.abs(got.astype(np.float64) - w)
        if np.any(err > bound):
            i = int(np.argmax(err - bound))
            failures.append(f"{name}: |w' - w| past the FP8 bound at {i}: w {w.flat[i]!r}, w' {got.flat[i]!r}")
        worst = max(worst, float(np.max(err / np.maximum(np.abs(w), 1e-30) * (np.abs(w) * s >= 2.0**-6))))
        checked += w.size
    print(f"after a forward pass: {checked} dequantised weights = fl32(q * weight_scale), within the FP8 bound; "
          f"largest relative error of a normal one {worst:.4f} (2^-4 = 0.0625); logits of the FP8 model vs the "
          f"f32 one: max |diff| {float((logits - reference).abs().max()):.3g} (of max |logit| "
          f"{float(reference.abs().max()):.3g})")
    if failures:
        for f in failures:
            print(f"FAILED: {f}")
        return 1
    print("compressed-tensors load: ok")
    return 0


E4M3_VALUES = np.array([E4M3.to_float(b) for b in range(256)], dtype=np.float64)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bitexact", required=True, help="the bitexact binary")
    parser.add_argument("--dir", default=None, help="where to write the checkpoints (default: a temporary folder)")
    parser.add_argument("--examples", type=int, default=2, help="examples printed per class of difference")
    parser.add_argument("--markdown", action="store_true", help="print the counts as a Markdown table too")
    parser.add_argument("--load-check", action="store_true", help="load our FP8 output through compressed-tensors")
    args = parser.parse_args()
    if args.load_check:
        folder = tempfile.mkdtemp(dir=args.dir, prefix="cast-load-")
        try:
            return load_check(args.bitexact, folder)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    libs = load_libraries()
    versions = [f"numpy {np.__version__}"]
    for name in ["torch", "ml_dtypes", "torchao", "compressed_tensors", "llmcompressor"]:
        lib = libs[name]
        if isinstance(lib, Skipped):
            print(f"{name}: skipped: {lib}")
        else:
            module = lib[0] if isinstance(lib, tuple) else lib
            versions.append(f"{name} {getattr(module, '__version__', '?')}")
    version = subprocess.run([args.bitexact, "--version"], capture_output=True, text=True).stdout.strip()
    print(f"{version}; {', '.join(versions)}")
    folder = tempfile.mkdtemp(dir=args.dir, prefix="cast-peers-")
    results = []
    failures = 0
    try:
        for target in TARGETS:
            label, flags, fmt, family, edge_kind, rounding, saturate = target
            tensors = common_tensors(np.random.default_rng(31))
            tensors["model.layers.2.edge.weight"] = edge_tensor(edge_kind)
            if family == "scaled":
                tensors["model.layers.3.ties.weight"] = ties_tensor(fmt)
            slug = label.replace(" ", "_").replace(",", "").replace("-", "")
            src = os.path.join(folder, f"in-{slug}.safetensors")
            dst = os.path.join(folder, f"out-{slug}.safetensors")
            write_safetensors(src, tensors)
            run = subprocess.run([args.bitexact, "cast", src, "-o", dst, *flags], capture_output=True, text=True)
            if run.returncode != 0:
                print(f"== {label}: bitexact cast failed (exit {run.returncode}): {run.stderr.strip()}")
                failures += 1
                continue
            result = compare(target, libs, tensors, read_safetensors(dst), args.examples)
            print_result(result, flags, args.examples)
            failures += result["ours_wrong"] + result["scales_wrong"]
            results.append(result)
        two_step = [r for r in results if r["label"].endswith("two-step")]
        for r in two_step:
            entry = r["peers"]["torch (x*s).clamp(±max).to(f8), s = max / amax.item()"]
            if "skipped" not in entry:
                verdict = "matches" if entry["differ"] == 0 else "DOES NOT match"
                print(f"{r['label']}: {verdict} the torch recipe bit for bit ({entry['differ']} values differ)")
        if args.markdown:
            peers = []
            for r in results:
                for p in r["peers"]:
                    if p not in peers:
                        peers.append(p)
            print()
            print("| peer | " + " | ".join(r["label"] for r in results) + " |")
            print("|---|" + "---|" * len(results))
            for p in peers:
                cells = []
                for r in results:
                    e = r["peers"].get(p)
                    if e is None:
                        cells.append("")
                    elif "skipped" in e:
                        cells.append("skipped")
                    elif e["scale_differs"]:
                        cells.append(f"{e['differ']} (scale ≠ on {len(e['scale_differs'])}/{r['scaled']})")
                    else:
                        cells.append(str(e["differ"]))
                print(f"| {p} | " + " | ".join(cells) + " |")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if failures:
        print(f"FAILED: {failures} of our values or scales are not the documented ones")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
