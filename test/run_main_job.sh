#!/usr/bin/env bash
#
# run_main_job.sh -- the main job on a fresh machine: a throwaway cluster
# with pg_fastckpt preloaded, pgbench tables created as fastckpt tables, a
# TPC-B run, the stats views, a crash (kill -9 of the postmaster), recovery,
# and the stats again.
#
#   bash test/run_main_job.sh [--scale N] [--seconds N] [--clients N] [--keep]
#
# The cluster lives in /tmp/pg_fastckpt_main and is removed at the end
# unless --keep is given.

set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/test/scripts/common.sh"

scale=10
seconds=30
clients=8
keep=0
while [ $# -gt 0 ]; do
	case $1 in
		--scale) shift; scale=$1 ;;
		--seconds) shift; seconds=$1 ;;
		--clients) shift; clients=$1 ;;
		--keep) keep=1 ;;
		-h|--help) sed -n '2,12p' "$0"; exit 0 ;;
		*) fc_die "unknown option $1" ;;
	esac
	shift
done

fc_install_packages
fc_ensure_user
base=/tmp/pg_fastckpt_main
bindir=$($FC_DEBIAN_PG_CONFIG --bindir)
port=55499

if [ -f "$base/data/postmaster.pid" ]; then
	fc_as_user "$bindir/pg_ctl -D $base/data -m immediate stop" >/dev/null 2>&1 || true
fi
mkdir -p "$base"; [ "$(id -u)" = 0 ] && chown "$FC_USER" "$base"
fc_private_copy "$here" "$base/src"
fc_say "building and installing pg_fastckpt"
fc_build_install "$base/src" "$FC_DEBIAN_PG_CONFIG"

# about 1.2 kB of arena per pgbench account row (see README, memory sizing)
mem_mb=$((scale * 150 + 256))
fc_say "creating a throwaway cluster in $base/data (pg_fastckpt.memory_limit = ${mem_mb}MB)"
fc_as_user "rm -rf $base/data && $bindir/initdb -D $base/data -A trust --no-sync >/dev/null"
fc_as_user "cat >> $base/data/postgresql.conf" <<CONF
shared_preload_libraries = 'pg_fastckpt'
pg_fastckpt.memory_limit = '${mem_mb}MB'
port = $port
unix_socket_directories = '$base'
listen_addresses = ''
max_connections = 50
max_worker_processes = 16
# every fastckpt commit writes an asynchronous PostgreSQL commit record;
# flushing them as written keeps the WAL writer from waking at each (README)
wal_writer_flush_after = 0
CONF
fc_as_user "$bindir/pg_ctl -D $base/data -l $base/server.log -w start >/dev/null"

psql_main() { fc_as_user "$bindir/psql -X -h $base -p $port -d postgres $*"; }
stats() {
	psql_main "-c 'SELECT * FROM fastckpt_stat_memory' \
		-c 'SELECT * FROM fastckpt_stat_log' \
		-c 'SELECT relation, n_rows, n_dead_rows, slot_bytes, row_image_bytes, memory_bytes, memory_bytes_per_row, undo_records, dirty_rows FROM fastckpt_stat_tables ORDER BY relation::text' \
		-c 'SELECT * FROM fastckpt_stat_recovery'"
}

psql_main "-q -c 'CREATE EXTENSION pg_fastckpt'"
fc_say "pgbench -i -s $scale (default_table_access_method = fastckpt)"
fc_as_user "PGOPTIONS='-c default_table_access_method=fastckpt' $bindir/pgbench -h $base -p $port -i -s $scale -q postgres" 2>&1 | tail -2
psql_main "-c '\\d pgbench_accounts'"

fc_say "TPC-B: pgbench -c $clients -j 2 -T $seconds"
fc_as_user "$bindir/pgbench -h $base -p $port -c $clients -j 2 -T $seconds -P 5 postgres" 2>&1 |
	grep -E "progress|tps|latency|processed|failed"
balances() {
	psql_main "-Atc 'SELECT (SELECT sum(abalance) FROM pgbench_accounts), (SELECT sum(tbalance) FROM pgbench_tellers), (SELECT sum(bbalance) FROM pgbench_branches), (SELECT coalesce(sum(delta), 0) FROM pgbench_history), (SELECT count(*) FROM pgbench_history), (SELECT count(*) FROM pgbench_accounts)'"
}
echo "accounts|tellers|branches|history|history rows|account rows"
before=$(balances)
echo "$before"

fc_say "stats after the run"
stats

fc_say "crash: kill -9 of the postmaster"
pm=$(head -1 "$base/data/postmaster.pid")
kill -9 "$pm"
for _ in $(seq 1 200); do kill -0 "$pm" 2>/dev/null || break; sleep 0.05; done
for _ in $(seq 1 200); do pgrep -f -- "-D $base/data" >/dev/null || pgrep -u "$FC_USER" -f "postgres: " >/dev/null || break; sleep 0.05; done
sleep 0.5

fc_say "the files the crash left, checked offline (pg_fastckpt_verify)"
fc_as_user "$bindir/pg_fastckpt_verify -D $base/data" ||
	fc_die "pg_fastckpt_verify found damage in the crashed data directory"

fc_say "restart and recovery"
start=$(date +%s.%N)
fc_as_user "$bindir/pg_ctl -D $base/data -l $base/server.log -w start >/dev/null"
until [ "$(psql_main "-Atc 'SELECT tables_open FROM fastckpt_stat_recovery'" 2>/dev/null)" = t ]; do sleep 0.1; done
end=$(date +%s.%N)
printf 'postmaster start to tables open: %.2f s\n' "$(echo "$end - $start" | bc -l 2>/dev/null || python3 -c "print($end - $start)")"
grep "pg_fastckpt" "$base/server.log" | tail -4

fc_say "stats after recovery"
stats
psql_main "-c 'SELECT * FROM fastckpt_stat_log'"
fc_say "balances after recovery (must equal those before the crash)"
after=$(balances)
echo "$after"
if [ "$before" = "$after" ]; then
	echo "recovered state matches the state before the crash"
else
	fc_as_user "$bindir/pg_ctl -D $base/data -m fast stop >/dev/null"
	fc_die "recovered state differs: before $before, after $after"
fi

fc_as_user "$bindir/pg_ctl -D $base/data -m fast stop >/dev/null"
if [ $keep = 0 ]; then
	rm -rf "$base"
else
	fc_say "cluster kept in $base"
fi
fc_say "main job done"
