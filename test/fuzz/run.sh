#!/bin/bash
# Build test/fuzz/fuzz_formats.c with AddressSanitizer and
# UndefinedBehaviorSanitizer against the pure-C core and run it.
#
#   bash test/fuzz/run.sh [CASES [SEED]]     (default 20000 cases, a few seconds)
#
# Exits non-zero on a failed property or a sanitizer report.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../../src" && pwd)
bin=${TMPDIR:-/tmp}/pg_fastckpt_fuzz_formats.$$
trap 'rm -f "$bin"' EXIT
gcc -O1 -g -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter \
	-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer \
	-I"$src" -o "$bin" "$here/fuzz_formats.c" \
	"$src/core/crc32c.c" "$src/core/log_format.c" "$src/core/log_stream.c" \
	"$src/core/ckpt_format.c" "$src/core/ckpt_scan.c" "$src/core/prepared_format.c"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 "$bin" "$@"
