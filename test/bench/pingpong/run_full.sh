#!/bin/bash
# Full synthetic experiment of Cao et al. 2011 (section 5) with the
# project's checkpoint core: CSV data in data/, figures and REPORT.md
# next to this script.  About 10-15 minutes on a 2-core machine.
#
# Knobs (environment), for quicker trial runs; REPORT.md records the
# commands actually run:
#   ROUNDS (5), PERIODS (6)        main sweeps: repetitions, measured periods
#   PACED_PERIODS (2)              writer on/off runs: measured periods
#   PPB_EXTRA, PACED_EXTRA         extra ppbench arguments
#   SINK_DIR (/dev/shm)            where the writer's checkpoint files go
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
RES=$HERE/data
ROUNDS=${ROUNDS:-5}
PERIODS=${PERIODS:-6}
PACED_PERIODS=${PACED_PERIODS:-2}
PPB_EXTRA=${PPB_EXTRA:-}
PACED_EXTRA=${PACED_EXTRA:-}
SINK_DIR=${SINK_DIR:-/dev/shm}
[ -d "$SINK_DIR" ] || SINK_DIR=/tmp

make -s -C "$HERE"

# a python with matplotlib (install it if none)
PY=
for p in python3 /usr/bin/python3; do
	if command -v "$p" >/dev/null && "$p" -c 'import matplotlib' 2>/dev/null; then
		PY=$p
		break
	fi
done
if [ -z "$PY" ]; then
	echo "run_full: installing matplotlib" >&2
	if python3 -m pip install --quiet matplotlib 2>/dev/null; then
		PY=python3
	elif command -v apt-get >/dev/null && apt-get install -y -q python3-matplotlib >/dev/null; then
		PY=/usr/bin/python3
	else
		echo "run_full: cannot get matplotlib (pip install matplotlib)" >&2
		exit 1
	fi
fi

mkdir -p "$RES"
rm -f "$RES"/*.csv "$RES"/*.csv.gz "$RES"/*.meta.txt "$RES"/*.table.md
: >"$RES/commands.txt"

{
	echo "date:      $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "kernel:    $(uname -r)"
	lscpu | grep -E '^(Model name|CPU\(s\)|Thread|Core|L1d|L2|L3|Hypervisor)' | sed 's/  */ /g'
	echo "memory:    $(free -g | awk '/^Mem:/ { print $2 " GiB total, " $7 " GiB available" }')"
	echo "THP:       enabled $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo n/a)," \
		"defrag $(cat /sys/kernel/mm/transparent_hugepage/defrag 2>/dev/null || echo n/a)"
	echo "hugetlb:   $(grep -E 'HugePages_Total' /proc/meminfo | sed 's/  */ /g') (no hugetlbfs pages reserved: THP via madvise is used)"
	echo "compiler:  $(${PPB_CC:-gcc} --version | head -1), -O2"
	echo "load avg before the run: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$RES/machine.txt"

run() {							# run LABEL ARGS...: one ppbench invocation
	local label=$1
	shift
	echo "test/bench/pingpong/ppbench $* --out test/bench/pingpong/data/$label --label $label" >>"$RES/commands.txt"
	echo "== $label: ppbench $*" >&2
	(cd "$ROOT" && "$HERE/ppbench" "$@" --out "$RES/$label" --label "$label" >"$RES/$label.table.md")
	echo "   load avg after $label: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$RES/machine.txt"
}

start=$(date +%s)
# 1. paper Figures 5, 8, 9: writer off, simulated time, 4 KB pages
# shellcheck disable=SC2086
run main4k --pages 4k --algs RAW,NS,BACOU,BAZZ,NPP,IPP,IPPSLOT,IPPW --rounds "$ROUNDS" --warmup 1 --periods "$PERIODS" $PPB_EXTRA
# 2. paper section 5.6: large pages, where the kernel offers THP
if ! grep -q '\[never\]' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null; then
	# shellcheck disable=SC2086
	run thp --pages thp --algs RAW,NS,BACOU,BAZZ,NPP,IPP,IPPSLOT,IPPW --rounds "$ROUNDS" --warmup 1 --periods "$PERIODS" $PPB_EXTRA
fi
# 3. what IPP's per-update cost is made of (diagnostic)
# shellcheck disable=SC2086
run ablation --pages 4k --algs RAW,RAW16,IPP,IPPW --rates 80000,320000,1280000 --rounds "$ROUNDS" --warmup 1 --periods "$PERIODS" $PPB_EXTRA
# 4. the asynchronous writer off and on, in real time; alternated twice so
#    that a slow spell of the (shared) machine cannot pose as the writer
PACED="--paced --pin 0,1 --rates 320000,1280000 --algs RAW,NS,BACOU,BAZZ,IPP --rounds 1 --warmup 1 --periods $PACED_PERIODS"
for k in 1 2; do
	# shellcheck disable=SC2086
	run paced_off$k $PACED $PPB_EXTRA $PACED_EXTRA
	# shellcheck disable=SC2086
	run paced_on$k $PACED --writer --sink "$SINK_DIR" $PPB_EXTRA $PACED_EXTRA
done
echo "total wall time of the runs: $(($(date +%s) - start)) s" >>"$RES/machine.txt"
echo "(commands run from the repository root; driver: test/bench/pingpong/run_full.sh)" >>"$RES/commands.txt"

gzip -f "$RES"/*.intervals.csv
"$PY" "$HERE/analyze.py" "$RES" "$HERE"
