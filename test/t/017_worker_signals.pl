# pg_fastckpt's own background workers under a SIGTERM that is not a
# shutdown: pg_terminate_backend() of the recovery leader (it is listed in
# pg_stat_activity), or a kill of the log writer or the checkpointer.  The
# postmaster must start each again: commits must not wait forever for a
# log writer that never comes back, checkpoints must go on, and a later
# crash-restart, or a recovery the SIGTERM stopped midway, must recover.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use FastckptTest;

my $node = fastckpt_node('worker_signals');
wait_for_tables_open($node);
$node->safe_psql('postgres', q{
CREATE TABLE t (id int PRIMARY KEY, v text) USING fastckpt;
INSERT INTO t SELECT g, 'before' FROM generate_series(1, 100) g;
});
my $rows = 100;

# Wait up to 60 s for a worker of this title other than $old; its pid.
sub restarted_worker
{
	my ($pattern, $old) = @_;
	for (1 .. 600)
	{
		my $pid = server_child_pid($node, $pattern);
		return $pid if defined $pid && (!defined $old || $pid != $old);
		select(undef, undef, undef, 0.1);
	}
	return undef;
}

sub insert_row
{
	my ($what) = @_;
	$rows++;
	my ($ret, $out, $err) = $node->psql('postgres',
		"INSERT INTO t VALUES ($rows, '$what')", timeout => 60);
	return $ret == 0;
}

# the log writer
my $writer = server_child_pid($node, qr/pg_fastckpt log writer/);
ok(defined $writer, 'the log writer runs');
kill 'TERM', $writer;
my $new_writer = restarted_worker(qr/pg_fastckpt log writer/, $writer);
ok(defined $new_writer, 'a log writer sent SIGTERM is started again');
ok(insert_row('after log writer'), '... and a commit goes through');

# the checkpointer
my $checkpointer = server_child_pid($node, qr/pg_fastckpt checkpointer/);
ok(defined $checkpointer, 'the checkpointer runs');
kill 'TERM', $checkpointer;
ok(defined restarted_worker(qr/pg_fastckpt checkpointer/, $checkpointer),
	'a checkpointer sent SIGTERM is started again');
insert_row('after checkpointer');
my ($ckpt_ret) = $node->psql('postgres', 'SELECT fastckpt_checkpoint(true)', timeout => 60);
is($ckpt_ret, 0, '... and takes the checkpoint asked for');

# the recovery leader, idle after recovery, then a backend crash
my $leader = $node->safe_psql('postgres',
	q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_fastckpt recovery leader'});
ok($leader, 'the recovery leader is in pg_stat_activity');
$node->safe_psql('postgres', "SELECT pg_terminate_backend($leader)");
ok(defined restarted_worker(qr/pg_fastckpt recovery leader/, $leader),
	'a recovery leader terminated after recovery is started again');
my $victim = $node->background_psql('postgres');
my $victim_pid = $victim->query_safe('SELECT pg_backend_pid()');
kill 'KILL', $victim_pid;
eval { $victim->quit };
$node->poll_query_until('postgres', 'SELECT true') or die 'server did not come back';
wait_for_tables_open($node);
is($node->safe_psql('postgres', 'SELECT count(*) FROM t'), $rows,
	'... and the crash-restart after a backend\'s kill -9 recovers every row');

# the recovery leader, terminated while it recovers
$node->append_conf('postgresql.conf', "pg_fastckpt.test_recovery_delay = '5s'\n");
$node->restart;
my $recovering = $node->safe_psql('postgres',
	q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_fastckpt recovery leader'});
is($node->safe_psql('postgres', 'SELECT tables_open FROM fastckpt_stat_recovery'), 'f',
	'recovery is still running');
$node->safe_psql('postgres', "SELECT pg_terminate_backend($recovering)");
$node->append_conf('postgresql.conf', "pg_fastckpt.test_recovery_delay = 0\n");
$node->reload;
$node->poll_query_until('postgres', 'SELECT tables_open FROM fastckpt_stat_recovery')
  or diag('tables did not open');
is($node->safe_psql('postgres', 'SELECT count(*) FROM t'), $rows,
	'a recovery stopped by pg_terminate_backend runs again and opens every row');
ok($node->log_contains('run the interrupted startup recovery again'),
	'... after restarting the server\'s processes, as logged');
ok(insert_row('at the end'), '... and commits go through');

# the same with restart_after_crash = off: no restart of every process
# (which would shut the server down), the tables stay closed with the reason
$node->append_conf('postgresql.conf',
	"restart_after_crash = off\npg_fastckpt.test_recovery_delay = '5s'\n");
$node->restart;
$recovering = $node->safe_psql('postgres',
	q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_fastckpt recovery leader'});
$node->safe_psql('postgres', "SELECT pg_terminate_backend($recovering)");
$node->poll_query_until('postgres',
	q{SELECT error LIKE '%stopped by a termination request%' FROM fastckpt_stat_recovery})
  or diag('no error in fastckpt_stat_recovery');
is($node->safe_psql('postgres', 'SELECT 1'), '1',
	'with restart_after_crash off, the server stays up when recovery is terminated');
my ($closed_ret, $closed_out, $closed_err) = $node->psql('postgres', 'SELECT count(*) FROM t');
like($closed_err, qr/restart the server/, '... the tables stay closed, saying to restart the server');
$node->append_conf('postgresql.conf', "pg_fastckpt.test_recovery_delay = 0\n");
$node->restart;
wait_for_tables_open($node);
is($node->safe_psql('postgres', 'SELECT count(*) FROM t'), $rows, '... and a restart opens every row');

# a checkpoint loader terminated while it loads (an OS kill: loaders are
# not in pg_stat_activity) says nothing about the checkpoint's files: it is
# loaded again, not taken for a damaged one
$node->safe_psql('postgres', 'SELECT fastckpt_checkpoint(true)');
$node->append_conf('postgresql.conf',
	"pg_fastckpt.test_checkpoint_pause = 'load'\npg_fastckpt.test_checkpoint_pause_ms = '120s'\n");
my $log_at = -s $node->logfile;
$node->restart;
my $loader = restarted_worker(qr/pg_fastckpt checkpoint loader/);
ok(defined $loader, 'a checkpoint loader runs at startup');
# loaders started from now on do not pause
$node->append_conf('postgresql.conf', "pg_fastckpt.test_checkpoint_pause = none\n");
$node->reload;
kill 'TERM', $loader;
$node->poll_query_until('postgres', 'SELECT tables_open FROM fastckpt_stat_recovery')
  or diag('tables did not open');
is($node->safe_psql('postgres', 'SELECT count(*) FROM t'), $rows,
	'a checkpoint loader sent SIGTERM: the checkpoint is loaded again, every row is there');
ok($node->log_contains('a loader worker exited before it finished loading checkpoint \d+; loading it again', $log_at),
	'... as logged');
is($node->safe_psql('postgres', 'SELECT checkpoint_fallback FROM fastckpt_stat_recovery'), 'f',
	'... from the newest checkpoint, not the older one');

# the postmaster killed while a call replay worker replays: the worker
# leaves at its next call, as PostgreSQL's startup process does, instead of
# replaying on with the shared memory attached (the next start waits for
# that).  Calls go on for 6 s, so that their replay takes about as long.
$node->safe_psql('postgres', q{
CREATE TABLE c (id int PRIMARY KEY, n bigint) USING fastckpt;
INSERT INTO c VALUES (1, 0);
CREATE FUNCTION slow_bump() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	PERFORM sum(g) FROM generate_series(1, 200000) g;
	UPDATE c SET n = n + 1 WHERE id = 1;
END $$;
SELECT fastckpt_register_procedure('slow_bump()');
});
$node->safe_psql('postgres', 'SELECT fastckpt_checkpoint(true)');
my $calls = 0;
my $calls_start = time();
while (time() - $calls_start < 6)
{
	$node->safe_psql('postgres', "SELECT slow_bump();\n" x 25);
	$calls += 25;
}
my $calls_took = time() - $calls_start;
is($node->safe_psql('postgres', 'SELECT call_records FROM fastckpt_stat_log'), $calls,
	"$calls calls logged as CALL records in ${calls_took} s");
ok(crash_postmaster($node), 'kill -9 with the calls in the log');
my $start_offset = -s $node->logfile;
$node->start;
my $replayer = restarted_worker(qr/pg_fastckpt call replay/);
ok(defined $replayer, 'a call replay worker runs at the next start');
# an exited process stays a zombie until its new parent reaps it (this
# test, as the subreaper FastckptTest makes it, or PID 1): look at its state
sub exited
{
	my ($pid) = @_;
	open(my $fh, '<', "/proc/$pid/stat") or return 1;
	my $stat = <$fh> // '';
	close $fh;
	return $stat =~ /\)\s+[ZX]\s/;
}
# kill -9 the postmaster: seconds until worker $pid exited (undef: not in 30 s)
sub kill_postmaster_until_exited
{
	my ($pid) = @_;
	my $kill_at = time();
	kill 'KILL', $node->{_pid};
	for (1 .. 3000)
	{
		return time() - $kill_at if exited($pid);
		usleep(10_000);
	}
	return undef;
}
my $left_after = kill_postmaster_until_exited($replayer);
ok(!$node->log_contains('pg_fastckpt: startup recovery finished', $start_offset),
	'the replay was still running at the kill');
ok(defined $left_after && $left_after < 2,
	'kill -9 of the postmaster while the calls replay: the worker left at once ('
	  . ($left_after // 'not within 30') . " s), not after replaying the rest (the calls took ${calls_took} s)");
ok(crash_postmaster($node), '... and nothing is attached to the shared memory');
$node->start;
wait_for_tables_open($node);
is($node->safe_psql('postgres', 'SELECT n FROM c') . '|' .
	$node->safe_psql('postgres', 'SELECT calls_replayed FROM fastckpt_stat_recovery'),
	"$calls|$calls", 'the next start replays every call');
is($node->safe_psql('postgres', 'SELECT count(*) FROM t'), $rows, '... and keeps every row');

# pg_terminate_backend() of the call replay worker (another process's
# SIGTERM, not the replayed routine's own): recovery runs again from the
# start, every call is replayed, and no database stays closed (h44 F5)
$node->append_conf('postgresql.conf', 'restart_after_crash = on');
ok(crash_postmaster($node), 'kill -9 with the calls still in the log');
$start_offset = -s $node->logfile;
$node->start;
$replayer = restarted_worker(qr/pg_fastckpt call replay/);
ok(defined $replayer, 'a call replay worker runs');
is($node->safe_psql('template1', "SELECT pg_terminate_backend($replayer)"), 't',
	'pg_terminate_backend() of the call replay worker');
wait_for_tables_open($node);
ok($node->log_contains('the worker replaying the calls of database \d+ was terminated; it runs again from the start', $start_offset),
	'the leader runs recovery again');
is($node->safe_psql('postgres', 'SELECT n FROM c') . '|' .
	$node->safe_psql('postgres', q{SELECT calls_replayed || ' ' || (error IS NULL) FROM fastckpt_stat_recovery}),
	"$calls|$calls true", '... which replays every call, and no database is closed');

# pg_terminate_backend() of the recovery leader while the calls replay: the
# replay stops at once, not after every call (h44 F9), and recovery runs
# again from the start
ok(crash_postmaster($node), 'kill -9 with the calls in the log, once more');
$node->start;
$replayer = restarted_worker(qr/pg_fastckpt call replay/);
ok(defined $replayer, 'a call replay worker runs');
my $replay_leader = server_child_pid($node, qr/pg_fastckpt recovery leader/);
my $term_at = time();
$node->safe_psql('template1', "SELECT pg_terminate_backend($replay_leader)");
for (1 .. 3000)
{
	last if exited($replayer);
	usleep(10_000);
}
my $stopped_after = time() - $term_at;
ok($stopped_after < $calls_took / 2,
	sprintf('the replay stopped %.2f s after the leader was terminated (the calls took %.1f s)', $stopped_after, $calls_took));
wait_for_tables_open($node);
is($node->safe_psql('postgres', 'SELECT n FROM c') . '|' .
	$node->safe_psql('postgres', 'SELECT calls_replayed FROM fastckpt_stat_recovery'),
	"$calls|$calls", '... and recovery, run again, replays every call');

# the same during the index rebuild: the worker starts no index once the
# postmaster is gone, and leaves one it is scanning, instead of building
# every index left with the shared memory attached (h30: 20 s of a
# refused restart).  One worker builds nine indexes of 300,000 rows.
$node->safe_psql('postgres', q{
CREATE TABLE ix (id int PRIMARY KEY, a int, b int, c text, d text, e int) USING fastckpt;
INSERT INTO ix SELECT g, g % 1000, g % 777, md5(g::text), md5((g * 7)::text), -g
  FROM generate_series(1, 300000) g;
CREATE INDEX ix_a ON ix (a);
CREATE INDEX ix_b ON ix (b, a);
CREATE INDEX ix_c ON ix (c);
CREATE INDEX ix_d ON ix (d);
CREATE INDEX ix_e ON ix (e);
CREATE INDEX ix_dc ON ix (d, c);
CREATE INDEX ix_eb ON ix (e, b);
CREATE INDEX ix_ce ON ix (c, e);
SELECT fastckpt_checkpoint(true);
});
# (parallel builds wait for their workers, which ends at the death)
$node->append_conf('postgresql.conf',
	"pg_fastckpt.recovery_workers = 1\nmax_parallel_maintenance_workers = 0\n");
ok(crash_postmaster($node), 'kill -9 with nine indexes to rebuild');
$node->start;
wait_for_tables_open($node);
my $rebuild_took = $node->safe_psql('postgres', 'SELECT index_rebuild_seconds FROM fastckpt_stat_recovery');
ok(crash_postmaster($node), 'kill -9 again');
$start_offset = -s $node->logfile;
$node->start;
my $rebuilder = restarted_worker(qr/pg_fastckpt recovery worker \d+ for database \d+/);
ok(defined $rebuilder, 'an index rebuild worker runs at the next start');
$left_after = kill_postmaster_until_exited($rebuilder);
ok(!$node->log_contains('pg_fastckpt: startup recovery finished', $start_offset),
	'the rebuild was still running at the kill');
ok(defined $left_after && $left_after < $rebuild_took / 2,
	'kill -9 of the postmaster while the indexes are rebuilt: the worker left at once ('
	  . ($left_after // 'not within 30') . " s), not after the rebuild (which took ${rebuild_took} s)");
ok(crash_postmaster($node), '... and nothing is attached to the shared memory');
$node->start;
wait_for_tables_open($node);
is($node->safe_psql('postgres', q{SET enable_seqscan = off; SET enable_bitmapscan = off;
	SELECT count(*) FROM ix WHERE c > '' AND id > 0}),
	'300000', 'the next start rebuilds the indexes whole');

$node->stop;
ok(!$node->log_contains('TRAP:|terminated by signal 11|PANIC'),
	'no assertion failure, segfault or PANIC in the log');
done_testing();
