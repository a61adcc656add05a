#!/usr/bin/env bash
# Measures the development loop on this machine (issue 46), on a fresh clone of HEAD
# with its own target folder, as a new developer or CI meets it:
#
#   1. clean `cargo test --workspace`, its build included (no CUDA tools in the clone,
#      so the tool tests print `skipped: <reason>`, as on a fresh machine);
#   2. a one-line change's rebuild: one public function appended to a file of the file
#      tools, of the GPU layer and of the CLI in turn, each followed by
#      `cargo test -p host -p <its wing> --no-run` (the edited wing with its unit tests,
#      the wings above it, the binary and host's test binaries);
#   3. the `--ignored` proofs: `cargo test --workspace -- --ignored`.
#
# Prints each figure with the machine's core count and CPU. Run it with nothing else
# running: a second build beside it measures the sharing, not the loop.
#
#   scripts/loop-time.sh               # all three
#   scripts/loop-time.sh --no-proofs   # 1 and 2 only (the proofs take the longest)
#   LOOP_TIME_DIR=DIR scripts/loop-time.sh   # clone into DIR (default: a temporary folder)
set -euo pipefail
cd "$(dirname "$0")/.."

proofs=1
case "${1:-}" in
  "") ;;
  --no-proofs) proofs= ;;
  -h | --help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "loop-time: unknown argument '$1' (see --help)" >&2; exit 2 ;;
esac

if ! git diff --quiet HEAD --; then
  echo "loop-time: note: uncommitted changes are not measured (the clone is of HEAD $(git rev-parse --short HEAD))" >&2
fi
dir="${LOOP_TIME_DIR:-$(mktemp -d -t loop-time.XXXXXX)}"
git clone --quiet --no-hardlinks . "$dir/repo"
cd "$dir/repo"
export CARGO_TARGET_DIR="$dir/target"
unset BITEXACT_CUDA_TOOLS CUDA_HOME REQUIRE_CUDA_TOOLS REQUIRE_GPU

results=()
step=0
# Runs "$@" quietly (its output in $dir/step-N.log), records and prints its seconds.
timed() { # LABEL COMMAND...
  step=$((step + 1))
  local label=$1 log="$dir/step-$step.log" start=$SECONDS
  shift
  echo "loop-time: $label: $* (log: $log)" >&2
  if ! "$@" >"$log" 2>&1; then
    echo "loop-time: $label failed; the end of its log:" >&2
    tail -n 20 "$log" >&2
    exit 1
  fi
  results+=("$(printf '%6d s  %s' $((SECONDS - start)) "$label")")
  echo "${results[-1]}" >&2
}

timed "clean cargo test --workspace (build included)" cargo test --workspace

# One line per file: a public function, so that the library's interface changes and
# everything that depends on it is rebuilt (a change inside a function body costs no more).
for file in host/wings/files/src/cast/select.rs host/wings/gpu/src/lib.rs host/src/cli/mod.rs; do
  packages=(-p host)
  case "$file" in host/wings/*) wing=${file#host/wings/}; packages+=(-p "bitexact-$(echo "${wing%%/*}" | tr _ -)") ;; esac
  echo "#[doc(hidden)] pub fn loop_time_probe_$RANDOM() -> u64 { $RANDOM }" >>"$file"
  timed "one line in $file: cargo test ${packages[*]} --no-run" cargo test "${packages[@]}" --no-run
  git checkout --quiet -- "$file"
done

if [ -n "$proofs" ]; then
  timed "cargo test --workspace -- --ignored (the proofs)" cargo test --workspace -- --ignored
fi

echo
echo "loop-time at $(git rev-parse --short HEAD), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')):"
printf '%s\n' "${results[@]}"
echo "(the clone and its target folder: $dir)"
