# Failure behaviour of the log: a torn or corrupted tail ends replay at the
# last valid record without crashing; a commit whose session is terminated
# while it waits for the log stays void after recovery, even under later
# writes of its rows; a cancelled one reports its error only once its
# ABORT record is durable; a log device that fills up acknowledges no commit,
# refuses new writes with a clear error, and once space returns the waiting
# commit completes and nothing is lost.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use File::Copy qw(move);
use Time::HiRes qw(usleep);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use FastckptTest;

my $node = fastckpt_node('log_failures', "max_prepared_transactions = 2\n");
my $logdir = $node->data_dir . '/pg_fastckpt/log';

$node->safe_psql('postgres',
	'CREATE TABLE t (id int PRIMARY KEY, v text) USING fastckpt');

# The segment file holding a log position (16 MiB segments named by their
# start), and that start.
sub segment_of
{
	my ($lsn) = @_;
	my $start = $lsn - $lsn % (16 * 1024 * 1024);
	return (sprintf('%s/%016X', $logdir, $start), $start);
}

# ---- torn tail: the last record half written ----
$node->safe_psql('postgres',
	q{INSERT INTO t SELECT g, 'first' FROM generate_series(1, 100) g});
my $before_last = $node->safe_psql('postgres',
	'SELECT insert_lsn FROM fastckpt_stat_log');
$node->safe_psql('postgres',
	q{INSERT INTO t SELECT g, 'last' FROM generate_series(101, 200) g});
my $end = $node->safe_psql('postgres', 'SELECT insert_lsn FROM fastckpt_stat_log');
crash_postmaster($node);

# tear the last record in the middle, as a crash mid-write would (zeros
# past it, as in a preallocated segment)
my ($seg, $seg_start) = segment_of($before_last);
truncate($seg, $before_last - $seg_start + int(($end - $before_last) / 2))
  or die "truncate: $!";
$node->start;
wait_for_tables_open($node);
is($node->safe_psql('postgres', q{SELECT v, count(*) FROM t GROUP BY v ORDER BY v}),
	'first|100', 'torn tail: replay stopped at the last whole record');
$node->safe_psql('postgres',
	q{INSERT INTO t SELECT g, 'after torn' FROM generate_series(101, 150) g});
crash_postmaster($node);
$node->start;
wait_for_tables_open($node);
is($node->safe_psql('postgres', q{SELECT v, count(*) FROM t GROUP BY v ORDER BY v}),
	"after torn|50\nfirst|100",
	'torn tail: records written after it replay, no stale bytes in between');

# ---- corrupted record: a flipped byte in the newest record ----
$before_last = $node->safe_psql('postgres', 'SELECT insert_lsn FROM fastckpt_stat_log');
$node->safe_psql('postgres', q{UPDATE t SET v = 'corrupt me' WHERE id <= 10});
$end = $node->safe_psql('postgres', 'SELECT insert_lsn FROM fastckpt_stat_log');
crash_postmaster($node);
($seg, $seg_start) = segment_of($before_last);
open(my $fh, '+<', $seg) or die "open $seg: $!";
binmode($fh);
seek($fh, $before_last - $seg_start + int(($end - $before_last) * 3 / 4), 0);
my $byte;
read($fh, $byte, 1);
seek($fh, -1, 1);
print $fh chr(ord($byte) ^ 0xFF);
close($fh);
$node->start;
wait_for_tables_open($node);
is($node->safe_psql('postgres', q{SELECT count(*) FROM t WHERE v = 'corrupt me'}),
	'0', 'corrupted record: not replayed');
is($node->safe_psql('postgres', 'SELECT count(*) FROM t'),
	'150', 'corrupted record: everything before it replayed');
ok(!$node->log_contains('TRAP:|terminated by signal|PANIC'),
	'bad tails: no crash, assertion failure or PANIC');

# ---- a commit that ends while it waits for the log ----
# A committer whose record is in the log but whose process ends (FATAL:
# pg_terminate_backend, or the postmaster's death) before the record is
# durable rolls its rows back, and others then write on top of the old
# values.  Its record must be voided before they can: else recovery
# replays it under theirs, and an unacknowledged, rolled-back write comes
# back (or a logged call no longer repeats).
$node->safe_psql('postgres', q{
	CREATE TABLE pair (id int PRIMARY KEY, v int NOT NULL) USING fastckpt;
	INSERT INTO pair VALUES (1, 0), (2, 0);
	CREATE FUNCTION bump(p_id int, p_d int) RETURNS void LANGUAGE sql
		SET enable_seqscan = off
		AS 'UPDATE pair SET v = v + p_d WHERE id = p_id';
	SELECT fastckpt_register_procedure('bump(int,int)');
});

# Send $sql to a background psql, which then blocks in its commit wait
# (in commit mode $mode, strict by default).
sub start_waiting_commit
{
	my ($sql, $mode) = @_;
	my $s = $node->background_psql('postgres', on_error_stop => 0);
	my $pid = $s->query_safe('SELECT pg_backend_pid()');
	$mode //= 'strict';
	$s->{stdin} .= "SET pg_fastckpt.commit_mode = $mode;\n$sql\n\\echo committed\n";
	$s->{run}->pump_nb;
	$node->poll_query_until('postgres', qq{
		SELECT wait_event_type = 'Extension' FROM pg_stat_activity WHERE pid = $pid})
	  or die "session $pid never waited for the log";
	return ($s, $pid);
}

# One session per statement of %$readers, each followed by $tail, given a
# second to run; returns the sessions and their backends' pids by name.
sub start_readers
{
	my ($readers, $tail) = @_;
	my (%sessions, %pids);
	for my $name (sort keys %$readers)
	{
		my $s = $node->background_psql('postgres', on_error_stop => 0);
		$pids{$name} = $s->query_safe('SELECT pg_backend_pid()');
		$s->{stdin} .= "$readers->{$name}\n$tail";
		$s->{run}->pump_nb;
		$sessions{$name} = $s;
	}
	for (1 .. 10)
	{
		usleep(100_000);
		$_->{run}->pump_nb for values %sessions;
	}
	return (\%sessions, \%pids);
}

for my $round (['plain UPDATE', 'UPDATE pair SET v = v + 10 WHERE id = 1;', 10],
	['registered call', 'SELECT bump(1, 100);', 110])
{
	my ($what, $later_sql, $want1) = @$round;
	my $writer_pid = server_child_pid($node, qr/pg_fastckpt log writer/)
	  // die 'no log writer process';
	kill('STOP', $writer_pid) or die "could not stop the log writer: $!";

	# the first writer's record is in the buffer; it is terminated
	my ($first, $first_pid) = start_waiting_commit(
		'BEGIN; UPDATE pair SET v = v + 1; COMMIT;');
	$node->safe_psql('postgres', "SELECT pg_terminate_backend($first_pid, 60000)");
	$first->{run}->finish;
	unlike($first->{stdout}, qr/committed/,
		"$what: the terminated commit was not acknowledged");

	# a later transaction reads the rolled-back row and writes it
	my ($later) = start_waiting_commit($later_sql);
	kill('CONT', $writer_pid);
	$later->{run}->pump until $later->{stdout} =~ /committed/;
	like($later->{stdout}, qr/committed/, "$what: the later commit is acknowledged");
	$later->quit;
	is($node->safe_psql('postgres', 'SELECT string_agg(v::text, \',\' ORDER BY id) FROM pair'),
		"$want1,0", "$what: before the crash, only the later write is there");

	crash_postmaster($node);
	$node->start;
	wait_for_tables_open($node);
	is($node->safe_psql('postgres', 'SELECT string_agg(v::text, \',\' ORDER BY id) FROM pair'),
		"$want1,0", "$what: after recovery, the terminated commit is still void");
}
cmp_ok($node->safe_psql('postgres', 'SELECT calls_replayed FROM fastckpt_stat_recovery'),
	'>=', 1, 'the later call was logged as a call and replayed');

# ---- a commit cancelled while it waits for the log ----
# The cancel rolls the transaction back after its record is in the log; the
# client is told so only once the ABORT record that voids it is durable,
# or a crash right after the error could bring the transaction back.
{
	my $writer_pid = server_child_pid($node, qr/pg_fastckpt log writer/)
	  // die 'no log writer process';
	kill('STOP', $writer_pid) or die "could not stop the log writer: $!";
	my ($s, $pid) = start_waiting_commit('BEGIN; UPDATE pair SET v = v + 1000; COMMIT;');
	$node->safe_psql('postgres', "SELECT pg_cancel_backend($pid)");
	for (1 .. 10)
	{
		usleep(100_000);
		$s->{run}->pump_nb;
	}
	unlike($s->{stderr}, qr/canceling statement/,
		'cancelled commit: no error reported while its ABORT record is not durable');
	kill('CONT', $writer_pid);
	$s->{run}->pump until $s->{stderr} =~ /canceling statement/;
	like($s->{stderr}, qr/canceling statement due to user request/,
		'cancelled commit: the error comes once the log is written');
	$s->quit;
	my $now = $node->safe_psql('postgres', 'SELECT string_agg(v::text, \',\' ORDER BY id) FROM pair');
	crash_postmaster($node, 1);
	$node->start;
	wait_for_tables_open($node);
	is($node->safe_psql('postgres', 'SELECT string_agg(v::text, \',\' ORDER BY id) FROM pair'),
		$now, 'cancelled commit: still void after a crash right after the error');
}

# ---- no lost-then-seen: what others read waits for the log ----
# With early lock release a committed row is visible before its record is
# durable.  No session may hand it to its client (rows, RETURNING, an
# acknowledged COMMIT, PREPARE or ROLLBACK) before the record is durable,
# also when it has written fastckpt rows itself; a statement that returns
# nothing (INSERT ... SELECT) leaves the wait to the transaction's end.
{
	$node->safe_psql('postgres',
		'CREATE TABLE copy (v int); CREATE TABLE scratch (v int) USING fastckpt');
	my $writer_pid = server_child_pid($node, qr/pg_fastckpt log writer/)
	  // die 'no log writer process';
	kill('STOP', $writer_pid) or die "could not stop the log writer: $!";

	my ($w) = start_waiting_commit('UPDATE pair SET v = v + 5 WHERE id = 2;',
		'early_lock_release');

	# each reader ends with \echo done; none may print anything while the
	# log writer is stopped
	my %readers = (
		'SELECT' => 'SELECT v + 0 FROM pair WHERE id = 2;',
		'INSERT ... RETURNING' =>
		  'BEGIN; INSERT INTO copy SELECT v FROM pair WHERE id = 2 RETURNING v + 0; COMMIT;',
		'INSERT ... SELECT, COMMIT' =>
		  'INSERT INTO copy SELECT v FROM pair WHERE id = 2;',
		'wrote, then SELECT in a block' =>
		  'BEGIN; INSERT INTO scratch VALUES (0); SELECT v + 0 FROM pair WHERE id = 2; COMMIT;',
		'savepoint rolled back, COMMIT' =>
		  'BEGIN; SAVEPOINT s; INSERT INTO scratch SELECT v FROM pair WHERE id = 2; '
		  . 'ROLLBACK TO s; COMMIT;',
		'ROLLBACK' =>
		  'BEGIN; INSERT INTO scratch SELECT v FROM pair WHERE id = 2; ROLLBACK;',
		'PREPARE TRANSACTION' =>
		  q{BEGIN; INSERT INTO copy SELECT v FROM pair WHERE id = 2; PREPARE TRANSACTION 'p1';},
	);
	my ($readers_started) = start_readers(\%readers, "\\echo done\n");
	my %sessions = %$readers_started;
	for my $name (sort keys %sessions)
	{
		my $out = $sessions{$name}->{stdout};
		is($out, '', "not durable yet: $name does not return");
	}
	unlike($w->{stdout}, qr/committed/, 'not durable yet: the writer is not acknowledged');

	kill('CONT', $writer_pid);
	for my $name (sort keys %sessions)
	{
		my $s = $sessions{$name};
		$s->{run}->pump until $s->{stdout} =~ /done/;
		is($s->{stderr}, '', "$name: no error once the log is written");
		$s->quit;
	}
	$w->{run}->pump until $w->{stdout} =~ /committed/;
	$w->quit;
	$node->safe_psql('postgres', "COMMIT PREPARED 'p1'");
	is($node->safe_psql('postgres', 'SELECT string_agg(v::text, \',\') FROM copy'),
		join(',', ($node->safe_psql('postgres', 'SELECT v FROM pair WHERE id = 2')) x 3),
		'the readers copied the committed value');
}

# ---- no lost-then-seen: output that leaves before the commit ----
# A statement outside a transaction block that wrote fastckpt rows puts the
# wait for what it read off to its commit.  Whatever leaves for the client
# before that commit must wait too: a NOTICE (flushed as it is raised), an
# error (sent before the rollback) and rows past the 8 kB send buffer
# (COPY TO STDOUT, which psql prints as the data arrives).  So must a
# NOTICE of a statement in a block that returns no rows, which puts its
# wait off to the end of the transaction too.
{
	$node->safe_psql('postgres', q{
		CREATE FUNCTION write_then_read(n int) RETURNS SETOF text LANGUAGE sql AS $$
			INSERT INTO scratch VALUES (0);
			SELECT v || ' ' || repeat('x', 2000) FROM pair, generate_series(1, n) WHERE id = 2
		$$;
		CREATE TABLE noted (v int) USING fastckpt;
		INSERT INTO noted VALUES (0);
		CREATE FUNCTION note_v() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN RAISE NOTICE 'noted %', NEW.v; RETURN NEW; END $$;
		CREATE TRIGGER noted_v BEFORE UPDATE ON noted FOR EACH ROW EXECUTE FUNCTION note_v();});
	my $writer_pid = server_child_pid($node, qr/pg_fastckpt log writer/)
	  // die 'no log writer process';
	kill('STOP', $writer_pid) or die "could not stop the log writer: $!";

	my ($w) = start_waiting_commit('UPDATE pair SET v = v + 7 WHERE id = 2;',
		'early_lock_release');
	my %readers = (
		'NOTICE' => q{DO $$ BEGIN INSERT INTO scratch VALUES (0); }
		  . q{RAISE NOTICE 'read %', (SELECT v FROM pair WHERE id = 2); END $$;},
		'error' => q{DO $$ BEGIN INSERT INTO scratch VALUES (0); }
		  . q{RAISE EXCEPTION 'read %', (SELECT v FROM pair WHERE id = 2); END $$;},
		'COPY of 40 kB' => q{COPY (SELECT * FROM write_then_read(20)) TO STDOUT;},
		# in a block: the UPDATE returns no rows and puts its wait off
		'NOTICE of a trigger, in a block' =>
		  q{BEGIN; UPDATE noted SET v = (SELECT v FROM pair WHERE id = 2); COMMIT;},
	);
	my ($readers_started, $pids) = start_readers(\%readers, '');
	my %sessions = %$readers_started;
	for my $name (sort keys %sessions)
	{
		my $s = $sessions{$name};
		is($s->{stdout} . $s->{stderr}, '', "not durable yet: no $name reaches the client");
	}

	kill('CONT', $writer_pid);
	$w->{run}->pump until $w->{stdout} =~ /committed/;
	$w->quit;
	my $v = $node->safe_psql('postgres', 'SELECT v FROM pair WHERE id = 2');

	# psql buffers what it prints: let each statement end, then psql exit
	my $pidlist = join(',', values %$pids);
	$node->poll_query_until('postgres', qq{
		SELECT count(*) = 0 FROM pg_stat_activity
		WHERE pid IN ($pidlist) AND state <> 'idle'})
	  or die 'the statements did not end once the log was written';
	$_->quit for values %sessions;
	like($sessions{NOTICE}->{stderr}, qr/NOTICE:  read $v\b/,
		'the NOTICE comes once the log is written, with the committed value');
	like($sessions{'NOTICE of a trigger, in a block'}->{stderr}, qr/NOTICE:  noted $v\b/,
		'the trigger\'s NOTICE comes once the log is written, with the committed value');
	like($sessions{error}->{stderr}, qr/ERROR:  read $v\b/,
		'the error comes once the log is written, with the committed value');
	my @rows = split /\n/, $sessions{'COPY of 40 kB'}->{stdout};
	is(scalar(grep { /^$v x{2000}$/ } @rows) . ' of ' . scalar(@rows), '20 of 20',
		'the COPY data comes once the log is written, with the committed value');
}

# Write transactions of about 200 kB of incompressible rows (ids from
# $base + 1000 * i) in a background session, one at a time, until $n are
# done or one has not ended after $patience seconds.  With $keep, each also
# deletes the batch $keep before it (the table stays small).  Returns the
# session and the numbers of the transactions acknowledged, refused with
# an error (their messages), and left waiting (0 if none).
sub write_batches
{
	my ($base, $n, $patience, $keep) = @_;
	my $w = $node->background_psql('postgres', on_error_stop => 0);
	my (@acked, @refused, $blocked);
	for my $i (1 .. $n)
	{
		my $errors_before = () = $w->{stderr} =~ /ERROR:/g;
		my $delete = '';
		$delete = sprintf('WITH gone AS (DELETE FROM t WHERE id > %d AND id <= %d) ',
			$base + 1000 * ($i - $keep), $base + 1000 * ($i - $keep + 1))
		  if $keep;
		$w->{stdin} .= qq{${delete}INSERT INTO t SELECT $base + 1000 * $i + g, (SELECT string_agg(md5(random()::text || g || k), '') FROM generate_series(1, 6) k) FROM generate_series(1, 1000) g;\n\\echo done $i\n};
		my $waited = 0;
		while ($w->{stdout} !~ /done $i\b/ && $waited < 20 * $patience)
		{
			$w->{run}->pump_nb;
			usleep(50_000);
			$waited++;
		}
		if ($w->{stdout} !~ /done $i\b/) { $blocked = $i; last; }
		my $errors = () = $w->{stderr} =~ /ERROR:/g;
		if ($errors > $errors_before) { push @refused, $i; } else { push @acked, $i; }
	}
	return ($w, \@acked, \@refused, $blocked // 0);
}

# ---- a failing log device ----
# The next segment exists but cannot be opened for writing (a read-only
# file stands for a device failing its writes): no commit past the end of
# the current one is acknowledged, new writes are refused with a clear
# error, a checkpoint fails with a clear error rather than hang, and once
# the device works again the waiting commit completes and nothing is lost.
{
	my $lsn = $node->safe_psql('postgres', 'SELECT insert_lsn FROM fastckpt_stat_log');
	my ($cur, $cur_start) = segment_of($lsn);
	my ($next) = segment_of($cur_start + 16 * 1024 * 1024);
	# the writer prepares the next segment while idle
	my $waited = 0;
	while (!-f $next && $waited++ < 600) { usleep(50_000); }
	ok(-f $next, 'failing device: the next segment is prepared ahead');
	# a transaction that wrote before the failure commits in strict mode
	# once the log fails: it waits, in doubt for checkpoints
	my $strict = $node->background_psql('postgres', on_error_stop => 0);
	$strict->query_safe(q{SET pg_fastckpt.commit_mode = strict});
	$strict->query_safe(q{BEGIN});
	$strict->query_safe(q{INSERT INTO t VALUES (-5, 'strict, in doubt')});
	chmod(0444, $next) or die "chmod $next: $!";

	my ($writer, $acked, $refused, $blocked) = write_batches(1_000_000, 120, 2);
	ok($blocked > 0 && @$refused == 0,
		"failing device: commit $blocked is not acknowledged, none refused before it ("
		  . scalar(@$acked) . ' acknowledged)');
	is($node->safe_psql('postgres', 'SELECT failing FROM fastckpt_stat_log'),
		't', 'failing device: the view says the log is failing');
	my ($ret, $stdout, $stderr) = $node->psql('postgres',
		q{INSERT INTO t VALUES (-1, 'refused')});
	like($stderr, qr/cannot write to fastckpt table "t": the fastckpt log cannot be written/,
		'failing device: new writes are refused with a clear error');
	like($stderr, qr/DETAIL:  The log writer failed: could not open log segment/,
		'failing device: the error says what failed');
	ok($node->safe_psql('postgres', 'SELECT 1') eq '1',
		'failing device: the server is up and reads work');
	is($node->safe_psql('postgres', 'SELECT count(*) FROM t WHERE id = 1001001'), '1',
		'failing device: a read of rows committed before the failure works');
	# the blocked commit is visible (early lock release) but not durable:
	# a read that meets its rows may not return them, and fails rather
	# than wait for as long as the device fails
	($ret, $stdout, $stderr) = $node->psql('postgres',
		"SET statement_timeout = '60s'; SELECT count(*) FROM t");
	like($stderr,
		qr/cannot return rows of fastckpt tables: a transaction that wrote them waits for the fastckpt log/,
		'failing device: a read that meets the waiting commit\'s rows fails at once, with the reason');
	# a checkpoint waits for the commits before it, and one of them waits
	# for the log: it fails, bounded, with the reason, rather than hang
	$strict->{stdin} .= "COMMIT;\n\\echo strict committed\n";
	$strict->{run}->pump_nb;
	$node->poll_query_until('postgres', q{
		SELECT count(*) = 1 FROM pg_stat_activity
		 WHERE query = 'COMMIT;' AND wait_event_type = 'Extension'})
	  or diag('the strict commit did not wait for the log');
	($ret, $stdout, $stderr) = $node->psql('postgres',
		"SET statement_timeout = '120s'; SELECT fastckpt_checkpoint(true)");
	like($stderr,
		qr/fastckpt checkpoint failed: the fastckpt checkpoint at CSN \d+ cannot be taken: the commit with CSN \d+ \(process \d+\) waits for the fastckpt log, which cannot be written/,
		'failing device: a checkpoint fails with the reason instead of hanging');

	# the device works again: the blocked commit completes by itself
	chmod(0600, $next) or die "chmod $next: $!";
	$waited = 0;
	while ($writer->{stdout} !~ /done $blocked\b/ && $waited < 400)
	{
		$writer->{run}->pump_nb;
		usleep(50_000);
		$waited++;
	}
	like($writer->{stdout}, qr/done $blocked\b/,
		'device repaired: the waiting commit is acknowledged');
	$writer->quit;
	$strict->{run}->pump_nb until $strict->{stdout} =~ /strict committed/;
	$strict->quit;
	$node->safe_psql('postgres', q{INSERT INTO t VALUES (-2, 'accepted again')});
	$node->safe_psql('postgres', 'SELECT fastckpt_checkpoint(true)');
	my $rows = $node->safe_psql('postgres', 'SELECT count(*) FROM t');
	crash_postmaster($node);
	$node->start;
	wait_for_tables_open($node);
	is($node->safe_psql('postgres', 'SELECT count(*) FROM t'), $rows,
		'device repaired: every acknowledged row survives a crash');
	is($node->safe_psql('postgres',
			'SELECT count(*) FROM t WHERE id > 1000000 AND id < 2000000'),
		1000 * $blocked, 'device repaired: the blocked transaction and all before it are there');
	is($node->safe_psql('postgres', 'SELECT v FROM t WHERE id = -5'), 'strict, in doubt',
		'device repaired: ... and the strict one');
	$node->safe_psql('postgres', 'DELETE FROM t WHERE id > 1000000');
}

# ---- a log device filled by the log itself ----
# Only a checkpoint frees log space, and a checkpoint is installed only
# once the log is durable up to its start: the log must never run past the
# segments that can exist, or the device stays full until a restart.  When
# the next segment does not fit, commits that would pass the end are
# refused with a clear error before they log anything (none is left
# waiting), checkpoints are asked for, and once one removes older segments
# writes are accepted again, with no restart and nothing lost.
SKIP:
{
	my $fs = $ENV{FASTCKPT_SMALL_FS};
	skip 'FASTCKPT_SMALL_FS (a small tmpfs, mounted by test/run_tests.sh as root) not set', 14
	  unless $fs && -d $fs && -w $fs;

	# the device is this test's alone: clear what an interrupted run left
	system("rm -rf '$fs'/log_* '$fs'/filler") == 0 or die "could not clear $fs";

	# two checkpoints: the log keeps only the segment in use
	$node->safe_psql('postgres', 'SELECT fastckpt_checkpoint(true)') for 1 .. 2;
	$node->stop;
	my $target = "$fs/log_" . $$;
	system('cp', '-a', $logdir, $target) == 0 or die "cp: $?";
	system('rm', '-rf', $logdir) == 0 or die "rm: $?";
	symlink($target, $logdir) or die "symlink: $!";
	$node->start;
	wait_for_tables_open($node);
	# the next segment prepared, then the device filled up but for 2 MB
	my $waited = 0;
	while ($waited++ < 600)
	{
		my @segs = grep { !/\.tmp$/ } glob("$target/*");
		last if @segs >= 2;
		usleep(50_000);
	}
	system("dd if=/dev/zero of=$fs/filler bs=1M count=1000 2>/dev/null");
	truncate("$fs/filler", (-s "$fs/filler") - 2 * 1024 * 1024) or die "truncate filler: $!";

	# checkpoints pause before they remove segments, so only the log's end
	# can give way
	$node->safe_psql('postgres', q{
		ALTER SYSTEM SET pg_fastckpt.test_checkpoint_pause = 'truncate';
		ALTER SYSTEM SET pg_fastckpt.test_checkpoint_pause_ms = '10min';
		SELECT pg_reload_conf();
	});
	my $log_at = -s $node->logfile;
	my $removed_before = $node->safe_psql('postgres',
		'SELECT log_segments_removed FROM fastckpt_stat_checkpointer');
	my ($writer, $acked, $refused, $blocked) = write_batches(2_000_000, 250, 10);
	is($blocked, 0, 'full device: no commit is left waiting');
	ok(@$acked > 0 && @$refused > 0,
		'full device: commits go on until one would pass the end of the segments there are ('
		  . scalar(@$acked) . ' acknowledged, first refused: ' . ($refused->[0] // 'none') . ')');
	like($writer->{stderr},
		qr/ERROR:  cannot commit changes to fastckpt tables: the next fastckpt log segment cannot be created\nDETAIL:  \d+ kB are free on the device holding pg_fastckpt\/log, log segment [0-9A-F]{16} needs \d+ kB\./,
		'full device: the refused commit says why, with the device\'s free space');
	like($writer->{stderr}, qr/this commit's records take up to 2\d\d kB, \d+ kB are left beyond 2048 kB kept in reserve/,
		'... and what it needs (its rows at their largest), against what is left');
	$writer->quit;
	# a commit that logs little still fits: deleting 10 rows logs 10 tombstones
	is($node->safe_psql('postgres',
			'DELETE FROM t WHERE id > 2001000 AND id <= 2001010; SELECT count(*) FROM t WHERE id > 2001000 AND id <= 2001010'),
		'0', 'full device: a small commit (a DELETE, logged as tombstones) is still accepted');
	# (a smaller commit may still fit in what is left)
	my ($ret, $stdout, $stderr) = $node->psql('postgres',
		q{INSERT INTO t SELECT -10000 - g, (SELECT string_agg(md5(random()::text || g || k), '') FROM generate_series(1, 6) k) FROM generate_series(1, 1000) g});
	like($stderr, qr/ERROR:  cannot (write to fastckpt table "t"|commit changes to fastckpt tables): the next fastckpt log segment cannot be created/,
		'full device: another commit as large is refused with the same error');
	is($node->safe_psql('postgres', 'SELECT failing FROM fastckpt_stat_log'),
		'f', 'full device: the log itself never failed');
	like($node->safe_psql('postgres', 'SELECT last_error FROM fastckpt_stat_log'),
		qr/log segment [0-9A-F]{16} needs/, 'full device: the view says why');
	my @warnings = slurp_file($node->logfile, $log_at)
	  =~ /WARNING:  pg_fastckpt: the next log segment cannot be created: \d+ kB are free/g;
	is(scalar(@warnings), 1, 'full device: the server log says so, once');
	my $acked_rows = 1000 * scalar(@$acked);
	is($node->safe_psql('postgres',
			'SELECT count(*) FROM t WHERE id > 2000000 AND id < 3000000'),
		$acked_rows - 10, 'full device: acknowledged rows are there, refused ones are not');

	# the checkpoints go on: they remove the log's older segment.  The log
	# writer is stopped meanwhile and then replaced (a SIGTERM outside a
	# shutdown): the new one must lift the refusal its predecessor set.
	my $log_writer = server_child_pid($node, qr/pg_fastckpt log writer/);
	kill('STOP', $log_writer) or die "could not stop the log writer: $!";
	$node->safe_psql('postgres', q{
		ALTER SYSTEM RESET pg_fastckpt.test_checkpoint_pause;
		ALTER SYSTEM RESET pg_fastckpt.test_checkpoint_pause_ms;
		SELECT pg_reload_conf();
	});
	$node->safe_psql('postgres', 'SELECT fastckpt_checkpoint(true)') for 1 .. 2;
	kill('TERM', $log_writer);
	kill('CONT', $log_writer);
	my $accepted = 0;
	for (my $i = 0; $i < 600 && !$accepted; $i++)
	{
		($ret, $stdout, $stderr) = $node->psql('postgres',
			q{INSERT INTO t SELECT -20000 - g, (SELECT string_agg(md5(random()::text || g || k), '') FROM generate_series(1, 6) k) FROM generate_series(1, 1000) g});
		$accepted = ($ret == 0);
		usleep(100_000) unless $accepted;
	}
	ok($accepted,
		'full device: writes are accepted again once a checkpoint removed old segments, without a restart');
	cmp_ok($node->safe_psql('postgres',
			'SELECT log_segments_removed FROM fastckpt_stat_checkpointer'),
		'>', $removed_before, 'full device: the checkpoints removed log segments');
	ok($node->log_contains('pg_fastckpt: the next log segment could be created; commits to fastckpt tables are accepted again', $log_at),
		'full device: the server log says writes are accepted again');

	# more log than the device holds: checkpoints keep making room
	$node->safe_psql('postgres', 'DELETE FROM t WHERE id > 2000000 OR id < -10000');
	$node->safe_psql('postgres', 'VACUUM t');
	my ($w2, $acked2, $refused2, $blocked2) = write_batches(3_000_000, 150, 10, 10);
	my @other_errors = grep { !/the next fastckpt log segment cannot be created/ }
	  ($w2->{stderr} =~ /ERROR:  (.*)/g);
	is(join("\n", @other_errors), '', 'log larger than the device: any refusal is for the log\'s end');
	$w2->quit;
	is($blocked2, 0, 'log larger than the device: no commit is left waiting');
	cmp_ok(scalar(@$acked2), '>=', 100,
		'log larger than the device: the writes go on (' . scalar(@$acked2)
		  . ' of 150 acknowledged, ' . scalar(@$refused2) . ' refused)');

	my $rows = $node->safe_psql('postgres', 'SELECT count(*) FROM t');
	crash_postmaster($node);
	$node->start;
	wait_for_tables_open($node);
	is($node->safe_psql('postgres', 'SELECT count(*) FROM t'), $rows,
		'full device: every acknowledged row survives a crash');
	# batch i is there if acknowledged and the batch that deletes it is not
	my %ok2 = map { $_ => 1 } @$acked2;
	my @kept = grep { !$ok2{$_ + 10} } @$acked2;
	is($node->safe_psql('postgres',
			'SELECT count(DISTINCT (id - 3000001) / 1000) || \' batches, \' || count(*) FROM t WHERE id > 3000000'),
		scalar(@kept) . ' batches, ' . 1000 * scalar(@kept),
		'full device: after the crash, exactly the acknowledged batches are there');
	$node->stop;
	unlink($logdir);
	system('rm', '-rf', $target);
	unlink("$fs/filler");
}

ok(!$node->log_contains('TRAP:|terminated by signal|PANIC'),
	'log failures: no crash, assertion failure or PANIC');

done_testing();
