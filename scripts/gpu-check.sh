#!/usr/bin/env bash
# Runs the GPU checks from a bundle made by scripts/build-gpu-bundle.sh, on a machine
# with CUDA and no Rust:
#
#   gpu-check.sh OUTDIR
#
# Every check runs on its own, under its own timeout, in this order: the quick tests of
# the GPU test modules (gpu::, gpu_cxx:: of host's one test binary, test-main), then GPU == CPU: the exhaustive GPU test (every
# variant on every input), the three-way test (every hardware conversion on every
# input) and the C++ baseline's check (every CUDA C++ form on every input under each
# NVRTC flag set, its PTX from the bundle's cxx-ptx/), then
# `bitexact bench` and the same-run PyTorch baseline (scripts/torch_baseline.py), the
# CUDA-tool tests (which CI runs without a GPU too) and the other
# test binaries (one process per test: `--exact NAME --test-threads=1`, REQUIRE_GPU=1,
# so a missing GPU fails), `bitexact sass --arch sm_90`, `bitexact bench-files` (scan
# and normalize with --device cpu, gpu and auto on the same files), and last
# `bitexact verify` (CPU only). A check starts only if the overall deadline
# (GPU_CHECK_DEADLINE_S, default 450 s from the start) leaves it the time it needs, and
# never runs past the deadline; otherwise it is NOT RUN. GPU_CHECK_ONLY, an extended
# regular expression, runs only the checks whose name it matches (e.g. 'bench' for the
# two benchmarks in a run of their own); the others are not listed.
#
# Prints one line per check,  STATUS  CHECK  SECONDSs  REASON  (STATUS: PASS, FAIL,
# SKIP, TIMEOUT or NOT RUN), then one VERDICT line. Writes into OUTDIR: machine.txt,
# logs/<check>.log for each check, the reports verify.json, sass-sm_90.md,
# bench-files.txt, bench.md, bench.json, torch-baseline.md and torch-baseline.json,
# cxx-gpu-check.md (the C++ forms' mismatches per flag set), and
# summary.tsv (status, check, seconds,
# reason, log; one row per check).
# Exits 0 only when the verdict is PASS: every check passed or was skipped by its test.
set -u -o pipefail
out=${1:?usage: gpu-check.sh OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
bin="$here/bin"
mkdir -p "$out/logs"
out=$(cd "$out" && pwd)
summary="$out/summary.tsv"
printf 'status\tcheck\tseconds\treason\tlog\n' > "$summary"

now_ms() { echo $(($(date +%s%N) / 1000000)); }
start_ms=$(now_ms)
deadline_ms=$((start_ms + ${GPU_CHECK_DEADLINE_S:-450} * 1000))

# The seconds a check needs (it starts only if that much is left before the deadline)
# and its timeout. Measured on an H200 (16 cores) at commit 846e06b: the exhaustive GPU
# test 207 s, bench about 30 s, sass a few seconds; every other test a few seconds.
# Bench has twice the bandwidth kernels since issue 10 (13 count, 13 stream, each input
# made and each output checked on the CPU): not yet timed, so 60 s to start and 200 s.
# bench-files (issue 10) is not yet timed either: writing a 1 GiB .npy and a 4096² PNG,
# then 18 runs of bitexact (scan about 0.03 s on the cpu, 0.6 s on the gpu; normalize
# about 1 s), and the Python route if python3 has NumPy and Pillow: about 20 s.
# The exhaustive test has 29 variants of 2^32 inputs since issue 13 (15 at 846e06b, at
# 10-20 s each there): about 400 s expected, so it gets up to 420 s and runs first. The
# three-way test (issue 13, not yet timed) runs 8 conversions of 2^32 inputs through two
# kernels each (6 of them through a third, the `_hw_stream` kernel) and compares them
# with the CPU: 140-250 s expected, so up to 300 s. Bench has 6 more stream rows (the
# `_hw_stream` kernels, f32 inputs, each output checked on the CPU).
# The C++ baseline's check (issue 21, not yet timed): 23 forms, 6 of them of 2^32 f32
# inputs, each chunk of inputs through 5 kernels (one per flag set) and compared with
# the reference computed once: about 100 s expected, so it needs 60 s and gets up to
# 300 s. The bench's C++ rows (23 forms, two Map kernels each over the 1 GiB inputs) add
# about 20 s.
need_and_limit() {
  case "$1" in
    "bitexact bench-files") echo "30 120" ;;
    gpu::every_variant_matches_the_cpu_on_every_input_of_its_domain) echo "240 420" ;;
    gpu::software_hardware_and_cpu_agree_on_every_input_of_each_conversion) echo "60 300" ;;
    gpu_cxx::every_cxx_form_holds_its_claim_on_every_input_and_fast_math_mismatches_are_counted) echo "60 300" ;;
    "bitexact bench") echo "60 240" ;;
    "bench: pytorch baseline") echo "20 120" ;;
    "fp8-scale: gpu bench") echo "20 120" ;;
    "fp8-scale: pytorch") echo "15 90" ;;
    "bitexact verify") echo "40 150" ;;
    "bitexact sass --arch sm_90") echo "10 60" ;;
    *) echo "5 90" ;;
  esac
}

# One line of at most 150 characters: no tabs or newlines, for the report and the TSV.
one_line() { tr '\t\r\n' '   ' | sed 's/  */ /g; s/^ //; s/ $//' | cut -c1-150; }

checks=0
failed=()
declare -A count=([PASS]=0 [SKIP]=0 [FAIL]=0 [TIMEOUT]=0 ["NOT RUN"]=0)
record() { # STATUS CHECK MILLISECONDS REASON LOG
  local seconds
  seconds=$(awk -v ms="$3" 'BEGIN { printf "%.1f", ms / 1000 }')
  printf '%-8s %-70s %6ss  %s\n' "$1" "$2" "$seconds" "$4"
  printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$seconds" "$4" "${5#"$out"/}" >> "$summary"
  checks=$((checks + 1))
  count[$1]=$((count[$1] + 1))
  case "$1" in PASS | SKIP) ;; *) failed+=("$2") ;; esac
}

# Why a test binary's run of one test failed: the panic message, else the harness's
# last words.
test_failure() {
  local message
  message=$(grep -m1 -A1 ' panicked at ' "$1" | tail -n 1)
  [ -n "$message" ] || message=$(grep -v '^$' "$1" | tail -n 1)
  echo "$message" | one_line
}

# Why a passing test skipped its check, if it did: its `skipped: <reason>`. (The
# skip helper's own unit test prints such a line on purpose and checks nothing else.)
skip_reason() {
  grep -o 'skipped: .*' "$1" | grep -v "skip helper's own test" | head -n 1 |
    sed 's/^skipped: //; s/ \[[^]]*\]$//' | one_line | grep .
}

# What a report holds, in a few words.
report_summary() {
  case "$1" in
    *.json) echo "$(grep -c '"claim_holds": true' "$1") variants, every claim holds (${1#"$out"/})" ;;
    *torch-baseline.md | *fp8-torch.md) sed -n 's/^summary: //p' "$1" | tail -n 1 | one_line ;;
    *bench-files.txt) awk '/^(scan|normalize) / { printf "%s%s/%s %ss", sep, $1, $2, $3; sep = ", " }' "$1" ;;
    *) echo "$(grep -c '^|' "$1") table lines in ${1#"$out"/}" ;;
  esac
}

# run_check KIND CHECK LOG STDOUT COMMAND...: runs COMMAND (stdout to STDOUT, stderr to
# LOG; the same file is fine) if the deadline allows, and records the outcome. KIND
# says how to read it: `test` (a test harness run) or `report` (a bitexact command
# whose stdout is a report).
run_check() {
  local kind=$1 check=$2 log=$3 stdout=$4
  shift 4
  local need limit left_ms begin_ms rc elapsed_ms reason skip
  if [ -n "${GPU_CHECK_ONLY:-}" ] && ! [[ $check =~ $GPU_CHECK_ONLY ]]; then
    return
  fi
  read -r need limit <<<"$(need_and_limit "$check")"
  left_ms=$((deadline_ms - $(now_ms)))
  if ((left_ms < need * 1000)); then
    record "NOT RUN" "$check" 0 "deadline: $((left_ms / 1000)) s left, needs about $need s" ""
    return
  fi
  ((limit * 1000 <= left_ms)) || limit=$((left_ms / 1000))
  begin_ms=$(now_ms)
  if [ "$stdout" = "$log" ]; then
    timeout -k 10 "$limit" "$@" > "$log" 2>&1
  else
    timeout -k 10 "$limit" "$@" > "$stdout" 2> "$log"
  fi
  rc=$?
  elapsed_ms=$(($(now_ms) - begin_ms))
  if ((rc == 124 || (rc == 137 && elapsed_ms >= limit * 1000))); then
    record TIMEOUT "$check" "$elapsed_ms" "killed after $limit s" "$log"
  elif ((rc > 128)); then
    reason=$(grep -v '^$' "$log" | tail -n 1 | one_line)
    record FAIL "$check" "$elapsed_ms" "killed by signal $((rc - 128)): ${reason:-no message}" "$log"
  elif ((rc != 0)) && [ "$kind" = test ]; then
    record FAIL "$check" "$elapsed_ms" "$(test_failure "$log")" "$log"
  elif ((rc != 0)); then
    reason=$(grep -v '^$' "$log" | tail -n 1 | one_line)
    record FAIL "$check" "$elapsed_ms" "exit $rc: ${reason:-no message}" "$log"
  elif [ "$kind" = test ] && grep -q '^test result: ok\. 0 passed; 0 failed; 1 ignored' "$log"; then
    record SKIP "$check" "$elapsed_ms" "ignored" "$log"
  elif [ "$kind" = test ] && ! grep -q '^test result: ok\. 1 passed' "$log"; then
    record FAIL "$check" "$elapsed_ms" "no test of that name ran" "$log"
  elif [ "$kind" = test ] && skip=$(skip_reason "$log"); then
    record SKIP "$check" "$elapsed_ms" "$skip" "$log"
  elif [ "$kind" = report ] && skip=$(sed -n 's/^summary: skipped: //p' "$stdout" | one_line | grep .); then
    record SKIP "$check" "$elapsed_ms" "$skip" "$log"
  elif [ "$kind" = report ]; then
    record PASS "$check" "$elapsed_ms" "$(report_summary "$stdout")" "$log"
  else
    record PASS "$check" "$elapsed_ms" "ok" "$log"
  fi
}

# One test of a bundled test binary, by its name in the list.
run_test() { # BINARY TEST
  local check="${1#"$bin"/test-}::$2"
  local log="$out/logs/${check//::/.}.log"
  run_check test "$check" "$log" "$log" "$1" --exact "$2" --test-threads=1 --nocapture
}

# A missing GPU fails the GPU tests; the command-line tests run the bundle's bitexact;
# the C++ baseline's GPU check and the bench read its PTX from the bundle, and the check
# writes its table into OUTDIR.
export REQUIRE_GPU=1 BITEXACT_EXE="$bin/bitexact" BITEXACT_CXX_PTX_DIR="$here/cxx-ptx" BITEXACT_REPORT_DIR="$out"

{
  date -u
  uname -a
  echo "--- bundle"; cat "$here/COMMIT" 2>/dev/null || echo "no COMMIT file"
  if command -v nvidia-smi > /dev/null; then nvidia-smi; else echo "nvidia-smi: not found"; fi
  echo "--- ldd bitexact"; ldd "$bin/bitexact"
  echo "--- ptxas"; if command -v ptxas > /dev/null; then ptxas --version; else echo "ptxas: not found on PATH"; fi
} > "$out/machine.txt" 2>&1
gpu_name=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2> /dev/null | head -n 1)
echo "# gpu-check: bundle $(cat "$here/COMMIT" 2> /dev/null || echo '?'), GPU: ${gpu_name:-none found}," \
  "deadline ${GPU_CHECK_DEADLINE_S:-450} s${GPU_CHECK_ONLY:+, only checks matching ${GPU_CHECK_ONLY}}; logs in $out"

# The tests of one bundled binary, listed; each test whose name starts with PREFIX
# ("" for all; host's tests are one binary, test-main, whose tests are named
# `<file>::<test>`) and is not in SKIP (names or prefixes ending in `::`) runs as its own
# check.
run_binary() { # BINARY PREFIX [SKIP...]
  local t=$1 prefix=$2 name list_log test skip skipped
  shift 2
  name=${t#"$bin"/test-}
  list_log="$out/logs/$name${prefix:+.${prefix%::}}.list.log"
  if [ ! -x "$t" ] || ! "$t" --list --format terse > "$list_log" 2>&1; then
    record FAIL "$name::(list)" 0 "cannot list the tests of $t" "$list_log"
    return
  fi
  while read -r test; do
    [[ "$test" == "$prefix"* ]] || continue
    skipped=
    for skip in "$@"; do
      if [ "$test" = "$skip" ] || { [[ "$skip" == *:: ]] && [[ "$test" == "$skip"* ]]; }; then skipped=1; fi
    done
    [ -n "$skipped" ] || run_test "$t" "$test"
  done < <(sed -n 's/: test$//p' "$list_log")
}

# First the quick GPU tests (lengths, the 2^31-byte buffer, the bandwidth kernels from
# every offset, the GPU backends, every kernel loads: about half a minute, and they
# catch a broken kernel or launch at once), then GPU == CPU on every input, every
# variant and every hardware conversion (their per-variant lines in the logs show how
# far they got if the deadline stops them), then the benchmark (bandwidth against a
# same-run copy, every output checked).
main="$bin/test-main"
exhaustive="gpu::every_variant_matches_the_cpu_on_every_input_of_its_domain"
three_way="gpu::software_hardware_and_cpu_agree_on_every_input_of_each_conversion"
cxx="gpu_cxx::every_cxx_form_holds_its_claim_on_every_input_and_fast_math_mismatches_are_counted"
run_binary "$main" "gpu::" "$exhaustive" "$three_way"
run_binary "$main" "gpu_cxx::" "$cxx"
run_test "$main" "$exhaustive"
run_test "$main" "$three_way"
run_test "$main" "$cxx"
run_check report "bitexact bench" "$out/logs/bench.log" "$out/bench.md" \
  "$bin/bitexact" bench --format markdown --json-out "$out/bench.json"
# PyTorch's x.to(dtype) on the same input bits, same device, same run, set against the
# bench's f32 -> binary16 / bfloat16 / FP8 rows (skips itself without torch or CUDA).
run_check report "bench: pytorch baseline" "$out/logs/torch-baseline.log" "$out/torch-baseline.md" \
  python3 "$here/torch_baseline.py" --bench-json "$out/bench.json" --json-out "$out/torch-baseline.json"
# The block-level example (examples/fp8-scale, issue 30): both passes against a same-run
# device copy, codes checked against the CPU twin; then PyTorch's per-tensor E4M3 on the
# same tensor, against its own device copy, its codes compared with two_step (not yet
# timed: 2^28 elements, about 20 s with the CPU twin's check).
mkdir -p "$out/fp8"
run_check report "fp8-scale: gpu bench" "$out/logs/fp8-scale-bench.log" "$out/fp8-scale-bench.md" \
  "$bin/fp8-scale-gpu-bench" --dump "$out/fp8"
run_check report "fp8-scale: pytorch" "$out/logs/fp8-torch.log" "$out/fp8-torch.md" \
  python3 "$here/fp8_torch.py" "$out/fp8"
# The CUDA-tool tests with the machine's ptxas (CI runs them too, without a GPU): the
# ptx and sass commands and the cuda_tools wing's unit tests; then the other test
# binaries (CPU only).
run_binary "$main" "ptx_tools::"
run_binary "$bin/test-cuda_tools_unit_lib" ""
run_binary "$main" "" "gpu::" "gpu_cxx::" "ptx_tools::"
for t in "$bin"/test-*; do
  case "$t" in "$main" | */test-cuda_tools_unit_lib) ;; *) run_binary "$t" "" ;; esac
done

run_check report "bitexact sass --arch sm_90" "$out/logs/sass.log" "$out/sass-sm_90.md" \
  "$bin/bitexact" sass --arch sm_90 --format markdown
run_check report "bitexact bench-files" "$out/logs/bench-files.log" "$out/bench-files.txt" \
  "$bin/bitexact" bench-files --dir "$out"
# CPU work only (the same check as `cargo test` here, on more cores): the first to go
# if the deadline is near.
run_check report "bitexact verify" "$out/logs/verify.log" "$out/verify.json" \
  "$bin/bitexact" verify --format json

total_s=$((($(now_ms) - start_ms) / 1000))
if ((${#failed[@]} == 0)); then
  echo "VERDICT: PASS ($checks checks, ${count[SKIP]} skipped, $total_s s)"
  exit 0
fi
names=$(printf '%s, ' "${failed[@]:0:8}")
names=${names%, }
((${#failed[@]} <= 8)) || names+=" and $((${#failed[@]} - 8)) more (summary.tsv)"
echo "VERDICT: FAIL (${#failed[@]} of $checks failed: ${count[FAIL]} FAIL, ${count[TIMEOUT]} TIMEOUT," \
  "${count["NOT RUN"]} NOT RUN: $names; $total_s s)"
exit 1
