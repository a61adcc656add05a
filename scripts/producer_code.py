"""The producers' code that does not install from PyPI, loaded for the peer scripts
(`block_peers.py`, `cast_python_route.py`)."""

import importlib.util
from pathlib import Path


def deepgemm_per_block_cast(checkout):
    """DeepGEMM's `per_block_cast_to_fp8`, from `deep_gemm/utils/math.py` of a checkout of
    deepseek-ai/DeepGEMM, loaded on its own (the package itself needs CUDA; this file needs
    torch only), or the reason it does not load (a string)."""
    path = Path(checkout) / "deep_gemm" / "utils" / "math.py"
    try:
        spec = importlib.util.spec_from_file_location("deepgemm_math", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.per_block_cast_to_fp8
    except Exception as error:  # noqa: BLE001: any load failure is a skip
        return f"{path} does not load ({type(error).__name__}: {error})"
