#!/usr/bin/env bash
# Builds ops/jpeg with its standalone test (no TensorFlow) twice, optimised and under ASan/UBSan, and runs both
# on the JPEG fixtures of tests/jpeg_samples.py, with jpegtran's output as the expected transcodes.
#
# Usage: ops/tests/build_and_run.sh [FUZZ_ITERATIONS]   (default 3000; PYTHON overrides the venv's python)
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
python="${PYTHON:-$root/.venv/bin/python}"
iterations="${1:-3000}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

"$python" - "$root/tests" "$work/zoo" > "$work/jpegs.txt" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
from jpeg_samples import make_jpeg_zoo
print("\n".join(str(path) for path in make_jpeg_zoo(sys.argv[2]).values()))
PY
mapfile -t jpegs < "$work/jpegs.txt"
for jpeg in "${jpegs[@]}"; do
  jpegtran -progressive -optimize -copy none -outfile "$jpeg.none" "$jpeg"
  jpegtran -progressive -optimize -copy all -outfile "$jpeg.all" "$jpeg"
done

sources=("$root/ops/jpeg/scan_split.cc" "$root/ops/jpeg/scan_script.cc" "$root/ops/jpeg/transcode.cc"
  "$root/ops/jpeg/progressive_writer.cc" "$root/ops/jpeg/strict_libjpeg.cc" "$root/ops/jpeg/scaled_decode.cc"
  "$root/ops/jpeg/spectral_decode.cc" "$root/ops/jpeg/dc_decode.cc"
  "$root/ops/tests/jpeg_test.cc")
flags=(-std=c++17 -Wall -Wextra -Werror -pthread -I"$root/ops")
sanitize=(-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
source "$root/ops/tests/compiler.sh"
# Both builds side by side, one compiler per source; `wait PID` keeps each one's exit status.
compiles=() plain_objects=() sanitized_objects=()
for source in "${sources[@]}"; do
  plain_objects+=("$work/$(basename "$source").o")
  "${cxx[@]}" -O2 "${flags[@]}" -c "$source" -o "${plain_objects[-1]}" &
  compiles+=($!)
  sanitized_objects+=("$work/$(basename "$source").asan.o")
  "${cxx[@]}" "${sanitize[@]}" "${flags[@]}" -c "$source" -o "${sanitized_objects[-1]}" &
  compiles+=($!)
done
for pid in "${compiles[@]}"; do wait "$pid"; done
g++ -O2 "${flags[@]}" "${plain_objects[@]}" -ljpeg -o "$work/jpeg_test"
g++ "${sanitize[@]}" "${flags[@]}" "${sanitized_objects[@]}" -ljpeg -o "$work/jpeg_test_asan"

"$work/jpeg_test" "$iterations" "${jpegs[@]}"
echo "under ASan/UBSan:"
"$work/jpeg_test_asan" "$iterations" "${jpegs[@]}"
