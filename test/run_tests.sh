#!/usr/bin/env bash
#
# run_tests.sh -- run every pg_fastckpt test suite on this machine.
#
#   bash test/run_tests.sh            # against Debian's PostgreSQL 15
#   bash test/run_tests.sh --cassert  # against an assert-enabled build
#   bash test/run_tests.sh --all      # both (what CI runs)
#   bash test/run_tests.sh --pg-config /path/to/pg_config
#
# Installs the Debian packages it needs, runs PostgreSQL as the unprivileged
# user "fastckpt" (created if missing), and runs, for each PostgreSQL:
# pg_regress suites, isolation specs, TAP tests (restart, crash, pgbench);
# then, once, the Ping-Pong microbenchmark's smoke test and the on-disk
# formats' property tests under sanitizers (test/fuzz).  The last line says
# "N passed, N failed" (suites); the exit status is non-zero on any failure.

set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/test/scripts/common.sh"

targets=()
while [ $# -gt 0 ]; do
	case $1 in
		--cassert) targets+=(cassert) ;;
		--all) targets+=(debian cassert) ;;
		--pg-config) shift; targets+=("$1") ;;
		-h|--help) sed -n '2,15p' "$0"; exit 0 ;;
		*) fc_die "unknown option $1" ;;
	esac
	shift
done
[ ${#targets[@]} -gt 0 ] || targets=(debian)

fc_install_packages
fc_ensure_user

# A small tmpfs for the full-log-device test (mounting needs root; without
# it that part of test/t/006_log_failures.pl is skipped, and says so).
FASTCKPT_SMALL_FS=${FASTCKPT_SMALL_FS:-}
if [ -z "$FASTCKPT_SMALL_FS" ] && [ "$(id -u)" = 0 ]; then
	FASTCKPT_SMALL_FS=/tmp/pg_fastckpt_smallfs
	mkdir -p "$FASTCKPT_SMALL_FS"
	mountpoint -q "$FASTCKPT_SMALL_FS" ||
		mount -t tmpfs -o size=48m tmpfs "$FASTCKPT_SMALL_FS" ||
		{ echo "could not mount a tmpfs; the full-device test will be skipped"; FASTCKPT_SMALL_FS=; }
	[ -n "$FASTCKPT_SMALL_FS" ] && chown "$FC_USER" "$FASTCKPT_SMALL_FS"
fi

# TAP test files run two at a time (each waits on its servers more than it
# computes: the suite takes two thirds of the time it takes one by one);
# FASTCKPT_PROVE_FLAGS=-j1 runs them one by one.
FASTCKPT_PROVE_FLAGS=${FASTCKPT_PROVE_FLAGS:--j2 --timer}

passed=0
failed=0
failures=()

record() {
	if [ "$2" = 0 ]; then
		passed=$((passed + 1)); echo "ok: $1"
	else
		failed=$((failed + 1)); failures+=("$1"); echo "FAILED: $1"
	fi
}

# Print what explains a failure: a diffs file whole (its end), but of the
# TAP logs only those of the tests the summary names as failed, each with
# the errors of its servers, so that a truncated CI report still shows the
# cause.
explain_failure() {
	local log=$1 f=$2 name s
	case $f in
		*/regress_log_*)
			name=${f##*/regress_log_}
			grep -qE "^test/t/${name}\.pl .*(Wstat|Failed)" "$log" || return 0
			echo "--- $f (end)"
			tail -80 "$f"
			for s in "${f%/*}/${name}"_*.log; do
				[ -f "$s" ] || continue
				echo "--- $s (errors, last 40)"
				grep -E "ERROR|FATAL|PANIC|TRAP|terminated by signal|reinitializing" "$s" | tail -40
			done ;;
		*)
			echo "--- $f"
			tail -150 "$f" ;;
	esac
}

# One `make installcheck` limited to one kind of suite; on failure, show the
# end of its output and of the files that explain it.  Uses run_suite's
# $dir and $pg_config.
run_part() {
	local label=$1 part=$2 vars=$3 explain=$4
	local log=/tmp/pg_fastckpt_test_${label}_$part.log
	local rc f

	fc_say "[$label] $part"
	fc_as_user "cd '$dir' && FASTCKPT_SMALL_FS='$FASTCKPT_SMALL_FS' make -s PG_CONFIG='$pg_config' installcheck $vars" >"$log" 2>&1
	rc=$?
	grep -E "^(ok|not ok|test |t/|test/|All tests|Files=|Result|#   Failed|.*tests passed|.*failed)" "$log" | tail -40
	if [ $rc != 0 ]; then
		tail -60 "$log"
		for f in $explain; do
			[ -f "$f" ] || continue
			explain_failure "$log" "$f"
		done
	fi
	record "[$label] $part" $rc
}

run_suite() {
	local label=$1 pg_config=$2
	local dir=/tmp/pg_fastckpt_test_$label

	fc_say "[$label] building and installing with $pg_config"
	fc_private_copy "$here" "$dir"
	fc_build_install "$dir" "$pg_config"

	run_part "$label" pg_regress "ISOLATION= TAP_TESTS=" "$dir/regression.diffs"
	run_part "$label" isolation "REGRESS= TAP_TESTS=" "$dir/output_iso/regression.diffs"
	run_part "$label" TAP \
		"REGRESS= ISOLATION= ${FASTCKPT_PROVE_FLAGS:+PROVE_FLAGS='$FASTCKPT_PROVE_FLAGS'}" \
		"$dir/tmp_check/log/regress_log_*"
}

for t in "${targets[@]}"; do
	case $t in
		debian) run_suite debian "$FC_DEBIAN_PG_CONFIG" ;;
		cassert)
			fc_say "building assert-enabled PostgreSQL (cached after the first time)"
			pgc=$(bash "$here/test/build_cassert_pg.sh" | tail -1) || fc_die "cassert build failed"
			run_suite cassert "$pgc" ;;
		*) run_suite custom "$t" ;;
	esac
done

fc_say "Ping-Pong microbenchmark smoke test"
bash "$here/test/bench/pingpong/smoke.sh" >/tmp/pg_fastckpt_smoke.log 2>&1
rc=$?
tail -5 /tmp/pg_fastckpt_smoke.log
record "pingpong smoke" $rc

fc_say "on-disk format codecs under sanitizers (test/fuzz)"
bash "$here/test/fuzz/run.sh" >/tmp/pg_fastckpt_fuzz.log 2>&1
rc=$?
tail -5 /tmp/pg_fastckpt_fuzz.log
record "format fuzz" $rc

echo
[ $failed = 0 ] || printf 'failed suites: %s\n' "${failures[*]}"
echo "$passed passed, $failed failed"
[ $failed = 0 ]
