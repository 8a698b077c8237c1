#!/usr/bin/env bash
#
# ckpt_bench.sh -- what fastckpt's checkpoints cost and what they buy, each
# against a baseline measured in the same run:
#
#   overhead  TPC-B with a checkpoint every second vs checkpoints off
#   latency   mean latency per 100 ms window, fastckpt vs heap across
#             PostgreSQL's own checkpoints
#   recovery  restart after kill -9 with the page cache dropped: 1 and 2
#             loader workers on 2 MB huge pages and on 4 kB pages, the
#             disk's rate on the same files, and PostgreSQL's crash
#             recovery of heap after the same load
#
#   bash test/bench/ckpt_bench.sh [--only overhead,latency,recovery]
#        [--seconds 60] [--rounds 2] [--scale 10] [--heap-seconds 90]
#        [--scales "10 50 100"] [--load-seconds 30] [--recovery-repeats 1]
#        [--pages "huge 4k"]
#        [--checkpoint-method merge] [--memory-mb N] [--port 55510]
#        [--base /tmp/pg_fastckpt_ckptbench] [--out-dir DIR]
#
# Results go to test/bench/results/ckpt_{overhead,latency,recovery}.* and
# the matching sections of test/bench/REPORT.md.  With --out-dir DIR they go
# to DIR instead, and the report updated is DIR/REPORT.md (a copy of the
# real one): a trial run leaves the repository alone.
#
# Must run as root: PostgreSQL runs as the user "fastckpt", but dropping
# the page cache before each restart and sizing the hugetlb pool need root
# (the pool is put back as it was), so the Python driver runs
# as root and starts every PostgreSQL program through runuser.

set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/test/scripts/common.sh"

out_dir=$here/test/bench/results
report=$here/test/bench/REPORT.md
base=/tmp/pg_fastckpt_ckptbench
args=()
while [ $# -gt 0 ]; do
	case $1 in
	--out-dir) out_dir=$(realpath -m "$2"); report=$out_dir/REPORT.md; shift 2 ;;
	--base) base=$(realpath -m "$2"); shift 2 ;;
	-h | --help) sed -n '2,30p' "$0"; exit 0 ;;
	*) args+=("$1"); shift ;;
	esac
done
[ "$(id -u)" = 0 ] || fc_die "run as root (the recovery phase drops the page cache)"

fc_install_packages
fc_ensure_user
# matplotlib for the plots, from Debian, for the system python
PY=/usr/bin/python3
if ! "$PY" -c 'import matplotlib' 2>/dev/null; then
	fc_say "installing python3-matplotlib"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-matplotlib >/dev/null ||
		{ DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null &&
		  DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-matplotlib >/dev/null; } ||
		fc_die "cannot install python3-matplotlib"
fi

mkdir -p "$base"; chown "$FC_USER" "$base"
fc_private_copy "$here" "$base/src"
fc_build_install "$base/src" "$FC_DEBIAN_PG_CONFIG"

"$PY" "$base/src/test/bench/ckpt_bench.py" --bindir "$($FC_DEBIAN_PG_CONFIG --bindir)" \
	--base "$base" --user "$FC_USER" "${args[@]}"

mkdir -p "$out_dir"
[ -f "$report" ] || cp "$here/test/bench/REPORT.md" "$report"
# the results' figures sit next to them; in the report the link is relative to it
rel=$("$PY" -c 'import os, sys; print(os.path.relpath(sys.argv[1], sys.argv[2]))' \
	"$out_dir" "$(dirname "$report")")
for section in ckpt_overhead ckpt_latency ckpt_recovery; do
	[ -f "$base/out/$section.md" ] || continue
	for ext in md csv png; do
		[ -f "$base/out/$section.$ext" ] && cp "$base/out/$section.$ext" "$out_dir/"
	done
	sed "s#](\(ckpt_[a-z_]*\.png\))#]($rel/\1)#" "$base/out/$section.md" >"$base/out/$section.report.md"
	"$PY" "$here/test/bench/update_report.py" "$report" "$section" "$base/out/$section.report.md"
	fc_say "$section: $out_dir/$section.md"
done
fc_say "report: $report"
