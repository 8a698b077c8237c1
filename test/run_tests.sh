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
# pg_regress suites, isolation specs, TAP tests (restart, crash, pgbench),
# and the Ping-Pong microbenchmark's smoke test.  The last line says
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
		-h|--help) sed -n '2,16p' "$0"; exit 0 ;;
		*) fc_die "unknown option $1" ;;
	esac
	shift
done
[ ${#targets[@]} -gt 0 ] || targets=(debian)

fc_install_packages
fc_ensure_user

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

run_suite() {
	local label=$1 pg_config=$2
	local dir=/tmp/pg_fastckpt_test_$label
	local log=/tmp/pg_fastckpt_test_$label.log

	fc_say "[$label] building and installing with $pg_config"
	fc_private_copy "$here" "$dir"
	fc_build_install "$dir" "$pg_config"

	fc_say "[$label] pg_regress"
	fc_as_user "cd '$dir' && make -s PG_CONFIG='$pg_config' installcheck REGRESS_OPTS_EXTRA= ISOLATION= PROVE_TESTS= TAP_TESTS=" >"$log.regress" 2>&1
	local rc=$?
	grep -E "^(ok|not ok|test |     |#|.*tests passed|.*failed)" "$log.regress" | tail -40
	[ $rc = 0 ] || cat "$dir/regression.diffs" 2>/dev/null | head -150
	record "[$label] pg_regress" $rc

	fc_say "[$label] isolation"
	fc_as_user "cd '$dir' && make -s PG_CONFIG='$pg_config' installcheck REGRESS= TAP_TESTS=" >"$log.iso" 2>&1
	rc=$?
	grep -E "^(ok|not ok|test |     |.*tests passed|.*failed)" "$log.iso" | tail -40
	[ $rc = 0 ] || cat "$dir/output_iso/regression.diffs" 2>/dev/null | head -150
	record "[$label] isolation" $rc

	fc_say "[$label] TAP"
	fc_as_user "cd '$dir' && make -s PG_CONFIG='$pg_config' installcheck REGRESS= ISOLATION= ${FASTCKPT_PROVE_FLAGS:+PROVE_FLAGS='$FASTCKPT_PROVE_FLAGS'}" >"$log.tap" 2>&1
	rc=$?
	grep -E "^(t/|test/|ok|not ok|All tests|Files=|Result|#   Failed)" "$log.tap" | tail -40
	if [ $rc != 0 ]; then
		tail -60 "$log.tap"
		for f in "$dir"/tmp_check/log/regress_log_*; do
			[ -f "$f" ] && { echo "--- $f"; tail -60 "$f"; }
		done
	fi
	record "[$label] TAP" $rc
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

echo
[ $failed = 0 ] || printf 'failed suites: %s\n' "${failures[*]}"
echo "$passed passed, $failed failed"
[ $failed = 0 ]
