#!/usr/bin/env bash
# Builds and runs ops/tests/l3_row_kernels_test.cc (the L3 decoder's SIMD row loops against the scalar ones),
# optimised and under ASan/UBSan.
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

flags=(-std=c++17 -Wall -Wextra -Werror -I"$root/ops")
sanitize=(-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
source "$root/ops/tests/compiler.sh"
"${cxx[@]}" -O2 "${flags[@]}" -c "$root/ops/tests/l3_row_kernels_test.cc" -o "$work/test.o" &
optimised=$!
"${cxx[@]}" "${sanitize[@]}" "${flags[@]}" -c "$root/ops/tests/l3_row_kernels_test.cc" -o "$work/test_asan.o"
wait "$optimised"
g++ -O2 "$work/test.o" -o "$work/test"
g++ "${sanitize[@]}" "$work/test_asan.o" -o "$work/test_asan"
"$work/test"
echo "under ASan/UBSan:"
"$work/test_asan"
