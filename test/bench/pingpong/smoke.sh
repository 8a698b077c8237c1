#!/bin/bash
# Smoke test of the synthetic checkpointing microbenchmark: builds ppbench
# if needed, runs its self-tests, checks every algorithm's checkpoints with
# a concurrent writer, and runs the quick experiment checking that every
# algorithm produced a number at every rate.  A few seconds.  Prints
# "N passed, N failed" last; exits non-zero if any check failed.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=$HERE/ppbench
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
pass=0
fail=0
start=$(date +%s.%N)

check() {						# check NAME COMMAND...
	local name=$1
	shift
	if "$@" >"$TMP/check.out" 2>&1; then
		pass=$((pass + 1))
		echo "ok   $name"
	else
		fail=$((fail + 1))
		echo "FAIL $name"
		sed 's/^/     /' "$TMP/check.out" | tail -20
	fi
}

check "build" make -s -C "$HERE"
if [ ! -x "$BIN" ]; then
	echo "$pass passed, $((fail + 1)) failed"
	exit 1
fi

ALGS="RAW NS BACOU BAZZ NPP IPP IPPSLOT"
VERIFY_ALGS="NS BACOU BAZZ NPP IPP IPPSLOT IPPW"
RATES="10000 320000 1280000"

check "selftest (bitarray, zipf, pingpong layout)" "$BIN" --selftest

"$BIN" --quick --verify --objects 100 --algs NS,BACOU,BAZZ,NPP,IPP,IPPSLOT,IPPW >"$TMP/verify.txt" 2>"$TMP/verify.err"
verify_rc=$?
check "verify exits 0" test "$verify_rc" -eq 0
for a in $VERIFY_ALGS; do
	check "verify $a checkpoints equal the state at their point of consistency" \
		grep -Eq "^verify $a +checkpoints=[0-9]+ ckpt_mismatch=0 read_mismatch=0 ok$" "$TMP/verify.txt"
done

"$BIN" --quick --out "$TMP/q" --label quick >"$TMP/quick.md" 2>"$TMP/quick.err"
quick_rc=$?
check "quick run exits 0" test "$quick_rc" -eq 0
check "summary CSV has the expected header" \
	grep -q '^label,alg,rate,periods,period_ms_median,' "$TMP/q.summary.csv"

# every algorithm, every rate: one row, positive mutator time, numeric overhead
for a in $ALGS; do
	for r in $RATES; do
		check "$a at $r/s produced a number" awk -F, -v a="$a" -v r="$r" '
			$2 == a && $3 == r {
				n++
				if ($4 < 1 || !($5 + 0 > 0) || $9 !~ /^-?[0-9]+(\.[0-9]+)?$/) bad++
			}
			END { exit !(n == 1 && bad == 0) }' "$TMP/q.summary.csv"
	done
done

# 7 algorithms x 3 rates x 2 measured periods x 40 intervals
check "intervals CSV is complete and well-formed" awk -F, '
	NR == 1 { next }
	NF != 13 || $9 !~ /^[0-9]+$/ || $10 !~ /^[0-9]+$/ { bad++ }
	{ n++ }
	END { exit !(n == 7 * 3 * 2 * 40 && bad == 0) }' "$TMP/q.intervals.csv"
check "markdown table printed for every algorithm and rate" \
	test "$(grep -c '^| [A-Z]* | [0-9]* |' "$TMP/quick.md")" -eq 21

end=$(date +%s.%N)
echo "smoke runtime: $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f s", b - a }')"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
