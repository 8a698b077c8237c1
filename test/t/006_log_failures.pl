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

# ---- a full log device ----
SKIP:
{
	my $fs = $ENV{FASTCKPT_SMALL_FS};
	skip 'FASTCKPT_SMALL_FS (a small tmpfs, mounted by test/run_tests.sh as root) not set', 9
	  unless $fs && -d $fs && -w $fs;

	# the device is this test's alone: clear what an interrupted run left
	system("rm -rf '$fs'/log_* '$fs'/filler") == 0 or die "could not clear $fs";

	# move the log onto the small device, filled up but for a little room
	$node->stop;
	my $target = "$fs/log_" . $$;
	system('cp', '-a', $logdir, $target) == 0 or die "cp: $?";
	system('rm', '-rf', $logdir) == 0 or die "rm: $?";
	symlink($target, $logdir) or die "symlink: $!";
	system("dd if=/dev/zero of=$fs/filler bs=1M count=1000 2>/dev/null");
	unlink("$fs/filler_small");
	# leave about 2 MB free
	truncate("$fs/filler", (-s "$fs/filler") - 2 * 1024 * 1024) or die "truncate filler: $!";
	$node->start;
	wait_for_tables_open($node);

	# write until the log cannot take more: that commit must not return
	my $writer = $node->background_psql('postgres', on_error_stop => 0);
	my $acked = 0;
	my $blocked = 0;
	# about 200 kB of incompressible rows per transaction
	for my $i (1 .. 400)
	{
		$writer->{stdin} .= qq{INSERT INTO t SELECT 1000 * $i + g, (SELECT string_agg(md5(random()::text || g || k), '') FROM generate_series(1, 6) k) FROM generate_series(1, 1000) g;\n\\echo done $i\n};
		my $waited = 0;
		while ($writer->{stdout} !~ /done $i\b/ && $waited < 40)
		{
			$writer->{run}->pump_nb;
			usleep(50_000);
			$waited++;
		}
		die "writer failed: $writer->{stderr}" if $writer->{stderr} =~ /ERROR/;
		if ($writer->{stdout} =~ /done $i\b/) { $acked = $i; next; }
		$blocked = $i;
		last;
	}
	ok($blocked > 0, "full device: commit $blocked is not acknowledged");
	is($node->safe_psql('postgres', 'SELECT failing FROM fastckpt_stat_log'),
		't', 'full device: the view says the log is failing');
	my ($ret, $stdout, $stderr) = $node->psql('postgres',
		q{INSERT INTO t VALUES (-1, 'refused')});
	like($stderr, qr/cannot write to fastckpt table "t": the fastckpt log cannot be written/,
		'full device: new writes are refused with a clear error');
	ok($node->safe_psql('postgres', 'SELECT 1') eq '1',
		'full device: the server is up and reads work');
	is($node->safe_psql('postgres', 'SELECT count(*) FROM t WHERE id = 1001'), '1',
		'full device: a read of rows committed before the failure works');
	# the blocked commit is visible (early lock release) but not durable:
	# a read that meets its rows may not return them, and fails rather
	# than wait for as long as the device stays full
	($ret, $stdout, $stderr) = $node->psql('postgres',
		"SET statement_timeout = '60s'; SELECT count(*) FROM t");
	like($stderr,
		qr/cannot return rows of fastckpt tables: a transaction that wrote them waits for the fastckpt log/,
		'full device: a read that meets the waiting commit\'s rows fails at once, with the reason');

	# space returns: the blocked commit completes by itself
	unlink("$fs/filler");
	my $waited = 0;
	while ($writer->{stdout} !~ /done $blocked\b/ && $waited < 200)
	{
		$writer->{run}->pump_nb;
		usleep(50_000);
		$waited++;
	}
	like($writer->{stdout}, qr/done $blocked\b/,
		'space returned: the waiting commit is acknowledged');
	$writer->quit;
	$node->safe_psql('postgres', q{INSERT INTO t VALUES (-2, 'accepted again')});
	my $rows = $node->safe_psql('postgres', 'SELECT count(*) FROM t');
	crash_postmaster($node);
	$node->start;
	wait_for_tables_open($node);
	is($node->safe_psql('postgres', 'SELECT count(*) FROM t'), $rows,
		'space returned: every acknowledged row survives a crash');
	is($node->safe_psql('postgres',
			"SELECT count(*) FROM t WHERE id > 1000 AND id <= 1000 * ($blocked + 1)"),
		1000 * $blocked, 'space returned: the blocked transaction and all before it are there');
	$node->stop;
	unlink($logdir);
	system('rm', '-rf', $target);
}

done_testing();
