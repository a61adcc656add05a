#!/usr/bin/env python3
"""PyTorch's per-tensor FP8 E4M3 quantisation on the tensor `fp8-scale-gpu-bench --dump DIR`
wrote: `(x * s).clamp(-448, 448).to(torch.float8_e4m3fn)` on the GPU, timed (CUDA
events, median of 10 after 3 warm-ups) against a device copy of the same tensor in the
same run, and its codes compared with the example's `two_step` codes (the CPU twin's,
which the GPU kernel equals). Prints a markdown table; `skipped: <reason>` without torch
or CUDA.

    python3 scripts/fp8_torch.py DIR
"""
import sys
from pathlib import Path

# The same event timing as the bench's PyTorch baseline (beside this file here and in the
# GPU bundle).
sys.path.insert(0, str(Path(__file__).resolve().parent))
from torch_baseline import median_ms  # noqa: E402


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: fp8_torch.py DIR (written by fp8-scale-gpu-bench --dump DIR)")
    folder = Path(sys.argv[1])
    try:
        import numpy as np
        import torch
    except ImportError as error:
        print(f"summary: skipped: {error}")
        return
    if not torch.cuda.is_available() or not hasattr(torch, "float8_e4m3fn"):
        print("summary: skipped: no CUDA device or no float8_e4m3fn in this torch")
        return
    x_host = np.fromfile(folder / "x.f32", dtype=np.float32)
    ours = np.fromfile(folder / "two_step_e4m3.u8", dtype=np.uint8)
    s = float(np.float32((folder / "scale.txt").read_text().strip()))
    x = torch.from_numpy(x_host).cuda()
    scale = torch.tensor(s, dtype=torch.float32, device="cuda")
    copy = torch.empty_like(x)
    t_copy = median_ms(torch, lambda: copy.copy_(x), 3, 10)
    quantise = lambda: (x * scale).clamp(-448, 448).to(torch.float8_e4m3fn)
    t_torch = median_ms(torch, quantise, 3, 10)
    codes = quantise().view(torch.uint8).cpu().numpy()
    differ = int(np.count_nonzero(codes != ours))
    n = x.numel()
    copy_rate = 8 * n / (t_copy * 1e-3)
    torch_rate = 5 * n / (t_torch * 1e-3)
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, {n} elements, s = {s:e}")
    print("| what | median ms | GB/s touched | vs device copy | codes differing from two_step |")
    print("|---|---|---|---|---|")
    print(f"| torch device copy | {t_copy:.3f} | {copy_rate / 1e9:.0f} | 1.00 | |")
    print(f"| torch (x * s).clamp(-448, 448).to(float8_e4m3fn) | {t_torch:.3f} | {torch_rate / 1e9:.0f} | {torch_rate / copy_rate:.2f} | {differ} |")
    print(f"summary: torch fp8 quantise {torch_rate / copy_rate:.2f}x copy, {differ} codes differ from two_step")


if __name__ == "__main__":
    main()
