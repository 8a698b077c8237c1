#!/usr/bin/env bash
#
# tpcb_compare.sh -- TPC-B side by side in one run on one machine: heap with
# synchronous_commit=on, heap with synchronous_commit=off, UNLOGGED heap and
# durable fastckpt (strict and early lock release), with pgbench's standard script and a PL/pgSQL procedure script.
#
#   bash test/bench/tpcb_compare.sh [--seconds 60] [--scale 10] [--clients 8]
#                                    [--rounds 1] [--configs a,b,...] [--scripts standard,procedure]
#                                    [--section tpcb_durable] [--huge-pages]
#
# --huge-pages runs the cluster with huge_pages = on (shared buffers and
# the fastckpt arena on 2 MB pages) over a hugetlb pool this script sizes
# (needs root) and gives back afterwards.
#
# Builds and installs the extension, runs a throwaway cluster as the user
# "fastckpt", and writes the results into the report's section of that name
# (tpcb_am: the access method alone against UNLOGGED heap, issue 2).

set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/test/scripts/common.sh"

args=()
section=tpcb_durable
huge=0
scale=10
prev=
for a in "$@"; do [ "$prev" = --scale ] && scale=$a; prev=$a; done
while [ $# -gt 0 ]; do
	case "$1" in
		--section) section=$2; shift 2 ;;
		--huge-pages) huge=1; args+=("$1"); shift ;;
		*) args+=("$1"); shift ;;
	esac
done
fc_install_packages
fc_ensure_user
base=/tmp/pg_fastckpt_bench
mkdir -p "$base"; [ "$(id -u)" = 0 ] && chown "$FC_USER" "$base"
fc_private_copy "$here" "$base/src"
fc_build_install "$base/src" "$FC_DEBIAN_PG_CONFIG"

pool0=$(cat /proc/sys/vm/nr_hugepages)
if [ $huge = 1 ]; then
	[ "$(id -u)" = 0 ] || fc_die "--huge-pages sizes the hugetlb pool: run as root"
	# the arena (tpcb_compare.py: scale x 150 MB + 4 GB), shared_buffers and slack
	need=$(( (scale * 150 + 4096 + 1024 + 512) / 2 ))
	echo $need >/proc/sys/vm/nr_hugepages
	trap 'echo $pool0 >/proc/sys/vm/nr_hugepages' EXIT
	got=$(cat /proc/sys/vm/nr_hugepages)
	[ "$got" -ge "$need" ] || fc_die "asked the kernel for $need huge pages, got $got"
fi

report=$here/test/bench/REPORT.md
out=$base/out
fc_as_user "python3 $base/src/test/bench/tpcb_compare.py --bindir $($FC_DEBIAN_PG_CONFIG --bindir) --base $base --benchdir $base/src/test/bench ${args[*]:-}"
cp "$out/tpcb_results.md" "$here/test/bench/results/$section.md"
cp "$out/tpcb_results.csv" "$here/test/bench/results/$section.csv"
python3 "$here/test/bench/update_report.py" "$report" "$section" "$out/tpcb_results.md"
fc_say "results in test/bench/results/$section.md and $report"
