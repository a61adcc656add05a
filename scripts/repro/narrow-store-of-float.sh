#!/usr/bin/env bash
# Assembles narrow-store-of-float.ptx for every architecture with the ptxas on PATH (or
# in .cuda-tools/, see scripts/install-cuda-tools.sh) and prints the SASS between the
# parameter loads and the store. A line with F2I means the ptxas still has the behaviour
# the README's toolchain section describes.
#   scripts/repro/narrow-store-of-float.sh [ARCH ...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tools="$root/.cuda-tools/nvidia"
ptxas=$(command -v ptxas || echo "$tools/cuda_nvcc/bin/ptxas")
cuobjdump=$(command -v cuobjdump || echo "$tools/cu13/bin/cuobjdump")
for tool in "$ptxas" "$cuobjdump"; do
  [ -x "$tool" ] || { echo "not found: $tool (run scripts/install-cuda-tools.sh)" >&2; exit 2; }
done
archs=("$@")
[ ${#archs[@]} -gt 0 ] || archs=(sm_75 sm_80 sm_86 sm_89 sm_90 sm_100 sm_120)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$ptxas" --version | tail -1
for arch in "${archs[@]}"; do
  "$ptxas" -arch="$arch" "$here/narrow-store-of-float.ptx" -o "$work/$arch.cubin"
  sass=$("$cuobjdump" -sass "$work/$arch.cubin" 2>/dev/null | grep -E '^ +/\*[0-9a-f]{4}\*/' |
    sed -E 's#^ +/\*[0-9a-f]{4}\*/ +##; s# *;.*##' | grep -E 'FADD|F2I|I2F|STG|ST\.' | paste -sd '|' | sed 's/|/ ; /g')
  if grep -q F2I <<<"$sass"; then verdict="converts (out[0] = 255)"; else verdict="stores the bits (out[0] = 0x05)"; fi
  printf '%-7s %-32s %s\n' "$arch" "$verdict" "$sass"
done
