#!/usr/bin/env bash
# Builds the L3 decoder's fuzz target (ops/tests/l3_fuzz.cc) under ASan/UBSan and runs its mutation loop for
# SECONDS on seed L3 files, after replaying the saved crashes of ops/tests/l3_crashes (regressions). Two builds
# share the time, side by side: the decoder as it runs here (SIMD row loops on x86; two thirds) and its scalar
# loops alone (-DTFLIQUID_L3_SCALAR, the code other CPUs run; one third).
# A new finding is saved in ops/tests/l3_crashes as crash-HASH and fails the run.
#
# Usage: ops/tests/l3_fuzz.sh SECONDS [SEED_DIR]
#   SEED_DIR: *.l3 seeds already written by tests/l3_fuzz_seeds.py (default: written now, which imports tfliquid)
#   L3_FUZZ_SEED: the random seed, to repeat a run (default: the clock; printed either way)
#   PYTHON overrides the venv's python.
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
python="${PYTHON:-$root/.venv/bin/python}"
seconds="${1:?usage: l3_fuzz.sh SECONDS [SEED_DIR]}"
seed_dir="${2:-}"
crash_dir="$root/ops/tests/l3_crashes"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Writing the seeds (a TensorFlow import) overlaps the build.
if [[ -z "$seed_dir" ]]; then
  seed_dir="$work/seeds"
  "$python" "$root/tests/l3_fuzz_seeds.py" "$seed_dir" > /dev/null 2> "$work/seeds.log" &
  seeds_pid=$!
fi
# The codec core: every ops/l3 source that includes neither TensorFlow nor ops/common but its CRC32C (the op
# registrations and kernels, the GPU program), and that CRC32C, the checksum of format version 2.
codec=("$root/ops/common/crc32c.cc")
for source in "$root"/ops/l3/*.cc; do
  grep -qP '#include "(tensorflow/|common/(?!crc32c\.h))' "$source" || codec+=("$source")
done
flags=(-std=c++17 -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
  -Wall -Wextra -Werror -I"$root/ops")
source "$root/ops/tests/compiler.sh"
compiles=()
for variant in simd scalar; do
  mkdir -p "$work/$variant"
  defines=()
  [[ "$variant" == scalar ]] && defines=(-DTFLIQUID_L3_SCALAR)
  for source in "${codec[@]}" "$root/ops/tests/l3_fuzz.cc"; do  # one compiler per file, as setup.py does
    "${cxx[@]}" "${flags[@]}" "${defines[@]}" -c "$source" -o "$work/$variant/$(basename "$source").o" &
    compiles+=($!)
  done
done
for pid in "${compiles[@]}"; do wait "$pid"; done
for variant in simd scalar; do
  g++ "${flags[@]}" "$work/$variant"/*.o -o "$work/l3_fuzz_$variant"
done
if [[ -n "${seeds_pid:-}" ]] && ! wait "$seeds_pid"; then
  cat "$work/seeds.log" >&2
  exit 2
fi

shopt -s nullglob
crashes=("$crash_dir"/crash-*)
if (( ${#crashes[@]} )); then
  "$work/l3_fuzz_simd" --replay "${crashes[@]}"
  "$work/l3_fuzz_scalar" --replay "${crashes[@]}"
fi
mkdir -p "$crash_dir"
seed_args=()
[[ -n "${L3_FUZZ_SEED:-}" ]] && seed_args=(--seed "$L3_FUZZ_SEED")
# The two side by side (a core each), their reports printed in turn.
"$work/l3_fuzz_simd" --seconds $(( seconds * 2 / 3 )) "${seed_args[@]}" --crash-dir "$crash_dir" "$seed_dir"/*.l3 \
  > "$work/simd.out" 2> "$work/simd.err" &
simd=$!
"$work/l3_fuzz_scalar" --seconds $(( (seconds + 2) / 3 )) "${seed_args[@]}" --crash-dir "$crash_dir" \
  "$seed_dir"/*.l3 > "$work/scalar.out" 2> "$work/scalar.err" &
scalar=$!
status=0
wait "$simd" || status=$?
wait "$scalar" || status=$?
for variant in simd scalar; do
  [[ "$variant" == simd ]] && echo "SIMD row loops:" || echo "scalar row loops:"
  cat "$work/$variant.out"
  cat "$work/$variant.err" >&2
done
rmdir "$crash_dir" 2> /dev/null || true  # left only when it holds a crash
exit "$status"
