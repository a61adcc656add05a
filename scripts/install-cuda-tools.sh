#!/usr/bin/env bash
# Installs ptxas, nvdisasm and cuobjdump, and NVRTC (libnvrtc) with the CUDA headers
# (cuda_fp16.h, cuda_bf16.h, cuda_fp8.h) for the CUDA C++ baseline, from pinned PyPI
# wheels into .cuda-tools/ at the workspace root (git-ignored), without a CUDA install.
# host/wings/cuda_tools/src/tools.rs finds them there. Idempotent: when they are already
# installed it only lists them.
#
#   scripts/install-cuda-tools.sh                    # install (or list) in .cuda-tools/
#   BITEXACT_CUDA_TOOLS=DIR scripts/install-cuda-tools.sh  # in DIR, where bitexact
#                                                    # then looks (and only there)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dest="${BITEXACT_CUDA_TOOLS:-$root/.cuda-tools}"

# Keep these pins in one place; the stamp file records what was installed.
wheels=(
  "nvidia-cuda-nvcc-cu12==12.9.86"  # bin/ptxas 12.9: sm_75 .. sm_120
  "nvidia-cuda-nvdisasm==13.5.37"   # bin/nvdisasm
  "nvidia-cuda-cuobjdump==13.5.37"  # bin/cuobjdump
  "nvidia-cuda-nvrtc-cu12==12.9.86"     # lib/libnvrtc.so.12: NVRTC 12.9, the C++ baseline
  "nvidia-cuda-runtime-cu12==12.9.79"   # include/cuda_fp16.h, cuda_bf16.h, cuda_fp8.h
)
stamp="$dest/.installed"
want="${wheels[*]}"

# Prints the path of each tool under $dest, one per line, then of libnvrtc and of the
# folder holding cuda_fp16.h; fails if one is missing.
locate() {
  local tool path
  for tool in ptxas nvdisasm cuobjdump; do
    path="$(find "$dest" -type f -path "*/bin/$tool" 2>/dev/null | sort | head -n 1)"
    [[ -n "$path" ]] || return 1
    echo "$path"
  done
  path="$(find "$dest" -path "*/lib/libnvrtc.so*" ! -name "*builtins*" 2>/dev/null | sort | head -n 1)"
  [[ -n "$path" ]] || return 1
  echo "$path"
  path="$(find "$dest" -type f -path "*/include/cuda_fp16.h" 2>/dev/null | sort | head -n 1)"
  [[ -n "$path" ]] || return 1
  dirname "$path"
}

if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]] && paths="$(locate)"; then
  echo "CUDA tools already installed in $dest:"
else
  python="${PYTHON:-python3}"
  command -v "$python" >/dev/null || { echo "install-cuda-tools: $python not found (needed for pip)" >&2; exit 1; }
  echo "Installing ${wheels[*]} into $dest ..."
  mkdir -p "$dest"
  # --no-deps: the wheels are self-contained binaries; --target keeps them project-local;
  # --upgrade replaces what an earlier (other or broken) install left there.
  PIP_ROOT_USER_ACTION=ignore "$python" -m pip install --quiet --disable-pip-version-check --no-deps --no-compile \
    --upgrade --target "$dest" "${wheels[@]}"
  paths="$(locate)" || { echo "install-cuda-tools: a tool is missing from the wheels in $dest" >&2; exit 1; }
  # Wheels do not keep the run bit.
  while read -r path; do [[ "$path" == */bin/* ]] && chmod +x "$path"; done <<<"$paths"
  echo "$want" >"$stamp"
  echo "CUDA tools installed in $dest:"
fi

while read -r path; do
  version=""
  [[ "$path" == */bin/* ]] && version="$("$path" --version 2>/dev/null | grep -m1 -o 'release [0-9.]*' || true)"
  echo "  $path${version:+ ($version)}"
done <<<"$paths"
