#!/usr/bin/env bash
#
# tpcb_compare.sh -- TPC-B side by side in one run on one machine: heap with
# synchronous_commit=on, heap with synchronous_commit=off, UNLOGGED heap and
# durable fastckpt (strict and early lock release), with pgbench's standard script and a PL/pgSQL procedure script.
#
#   bash test/bench/tpcb_compare.sh [--seconds 60] [--scale 10] [--clients 8]
#                                    [--rounds 1] [--configs a,b,...]
#                                    [--section tpcb_durable]
#
# Builds and installs the extension, runs a throwaway cluster as the user
# "fastckpt", and writes the results into the report's section of that name
# (tpcb_am: the access method alone against UNLOGGED heap, issue 2).

set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/test/scripts/common.sh"

args=()
section=tpcb_durable
while [ $# -gt 0 ]; do
	case "$1" in
		--section) section=$2; shift 2 ;;
		*) args+=("$1"); shift ;;
	esac
done
fc_install_packages
fc_ensure_user
base=/tmp/pg_fastckpt_bench
mkdir -p "$base"; [ "$(id -u)" = 0 ] && chown "$FC_USER" "$base"
fc_private_copy "$here" "$base/src"
fc_build_install "$base/src" "$FC_DEBIAN_PG_CONFIG"

report=$here/test/bench/REPORT.md
out=$base/out
fc_as_user "python3 $base/src/test/bench/tpcb_compare.py --bindir $($FC_DEBIAN_PG_CONFIG --bindir) --base $base --benchdir $base/src/test/bench ${args[*]:-}"
cp "$out/tpcb_results.md" "$here/test/bench/results/$section.md"
cp "$out/tpcb_results.csv" "$here/test/bench/results/$section.csv"
python3 "$here/test/bench/update_report.py" "$report" "$section" "$out/tpcb_results.md"
fc_say "results in test/bench/results/$section.md and $report"
