# Two-phase commit of transactions that wrote fastckpt tables, across
# crashes: a prepared transaction's rows come back after kill -9 as its
# uncommitted versions (invisible, locked, indexed), however many restarts
# and checkpoints pass, until COMMIT PREPARED makes them visible and
# durable or ROLLBACK PREPARED puts the rows back as they were.  Kills land
# while PREPARE has written its file but PostgreSQL has not prepared yet,
# and while COMMIT PREPARED has logged the rows but PostgreSQL has not
# committed yet.  A damaged file keeps the tables closed, never opens them
# without the transaction's rows.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use FastckptTest;

my $node = fastckpt_node('two_phase', q{
max_prepared_transactions = 5
pg_fastckpt.checkpoint_timeout = '1h'
pg_fastckpt.max_log_size = 0
});
wait_for_tables_open($node);
$node->safe_psql('postgres', q{
CREATE TABLE acct (id int PRIMARY KEY, k int NOT NULL, v int NOT NULL) USING fastckpt;
CREATE INDEX acct_k ON acct (k);
INSERT INTO acct SELECT g, g, g FROM generate_series(1, 100) g;
CREATE FUNCTION prepared_files() RETURNS bigint LANGUAGE sql
  AS $$SELECT count(*) FROM pg_ls_dir('pg_fastckpt/prepared', true, false)$$;
});

# The committed content by a sequential scan, checked against both indexes.
sub content
{
	my $seq = $node->safe_psql('postgres', q{
		SET enable_indexscan = off; SET enable_bitmapscan = off; SET enable_indexonlyscan = off;
		SELECT string_agg(id || ':' || k || ':' || v, ' ' ORDER BY id) FROM acct});
	for my $index ('id', 'k')
	{
		my $by = $node->safe_psql('postgres', qq{
			SET enable_seqscan = off; SET enable_bitmapscan = off;
			SELECT string_agg(id || ':' || k || ':' || v, ' ' ORDER BY id) FROM acct
			 WHERE $index BETWEEN -100000 AND 100000});
		return "index on $index disagrees: $by" if $by ne $seq;
	}
	return $seq;
}

sub expect
{
	my (%rows) = @_;
	return join(' ', map { "$_:$rows{$_}[0]:$rows{$_}[1]" } sort { $a <=> $b } keys %rows);
}

sub restart_after_crash
{
	my ($label) = @_;
	ok(crash_postmaster($node, 1), "$label: all server processes gone after kill -9");
	$node->start;
	wait_for_tables_open($node);
}

sub prepared_gids
{
	return $node->safe_psql('postgres', 'SELECT string_agg(gid, \',\' ORDER BY gid) FROM pg_prepared_xacts');
}

# the model of the committed rows: id => [k, v]
my %rows = map { $_ => [ $_, $_ ] } 1 .. 100;

# a: inserts, updates in place, a move (indexed column), a delete, a
# released savepoint; then a checkpoint, which must keep the rows from
# before it
$node->safe_psql('postgres', q{
BEGIN;
INSERT INTO acct VALUES (101, 101, 101);
UPDATE acct SET v = v + 1000 WHERE id BETWEEN 1 AND 10;
UPDATE acct SET k = k + 1000 WHERE id = 11;
DELETE FROM acct WHERE id = 12;
SAVEPOINT s;
UPDATE acct SET v = -v WHERE id = 13;
RELEASE SAVEPOINT s;
PREPARE TRANSACTION 'a';
SELECT fastckpt_checkpoint(true);
});
# b, after the checkpoint: its rows are only in its file
$node->safe_psql('postgres', q{
BEGIN;
UPDATE acct SET v = v * 2 WHERE id BETWEEN 20 AND 29;
INSERT INTO acct VALUES (102, 102, 102);
DELETE FROM acct WHERE id = 30;
UPDATE acct SET k = -k WHERE id = 31;
PREPARE TRANSACTION 'b';
});
# committed around them, logged
$node->safe_psql('postgres', q{UPDATE acct SET v = -1 WHERE id = 50});
$rows{50}[1] = -1;
is(content(), expect(%rows), 'before the crash: the prepared rows are invisible');
is($node->safe_psql('postgres', 'SELECT prepared_files()'), '2', 'one file per prepared transaction');

my ($rc, $out, $err);
for my $round (1, 2)
{
	restart_after_crash("prepared, crash $round");
	is(prepared_gids(), 'a,b', "crash $round: both transactions are still prepared");
	is(content(), expect(%rows), "crash $round: only committed rows are visible, and the indexes agree");
	($rc, $out, $err) = $node->psql('postgres',
		q{SET lock_timeout = '200ms'; UPDATE acct SET v = 0 WHERE id = 1});
	like($err, qr/lock timeout/, "crash $round: a row of a prepared transaction is still locked by it");
	($rc, $out, $err) = $node->psql('postgres',
		q{SET lock_timeout = '200ms'; INSERT INTO acct VALUES (101, 0, 0)});
	like($err, qr/lock timeout/,
		"crash $round: its insert still holds the key (a second insert waits for it)");
	is($node->safe_psql('postgres', 'SELECT prepared_files()'), '2', "crash $round: the files are kept");
}
ok($node->log_contains('the rows of 2 prepared transactions were put back'),
	'recovery reports the prepared transactions it put back');

$node->safe_psql('postgres', q{COMMIT PREPARED 'a'});
$node->safe_psql('postgres', q{ROLLBACK PREPARED 'b'});
$rows{101} = [ 101, 101 ];
$rows{$_}[1] += 1000 for 1 .. 10;
$rows{11}[0] += 1000;
delete $rows{12};
$rows{13}[1] = -13;
is(content(), expect(%rows), 'COMMIT PREPARED a shows its rows, ROLLBACK PREPARED b leaves the rows as they were');
is($node->safe_psql('postgres', 'SELECT prepared_files()'), '0', 'both files removed');
$node->safe_psql('postgres', q{UPDATE acct SET v = v + 1 WHERE id IN (1, 20, 30)});
$rows{$_}[1] += 1 for 1, 20, 30;
is(content(), expect(%rows), 'the rows are free again');
restart_after_crash('after COMMIT and ROLLBACK PREPARED');
is(content(), expect(%rows), 'the committed transaction is durable, the rolled back one gone');

# A kill while PREPARE has written its file, before PostgreSQL's PREPARE
# record: the transaction never prepared, its file is discarded.
sub pause_at
{
	my ($point) = @_;
	$node->append_conf('postgresql.conf', qq{
pg_fastckpt.test_checkpoint_pause = '$point'
pg_fastckpt.test_checkpoint_pause_ms = 60000
});
	$node->reload;
}

sub unpause
{
	$node->append_conf('postgresql.conf', q{
pg_fastckpt.test_checkpoint_pause = 'none'
});
}

sub run_until_paused
{
	my ($point, $sql) = @_;
	my $offset = -s $node->logfile;
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start([ 'psql', '-X', '-d', $node->connstr('postgres'), '-c', $sql ],
		'>', \$out, '2>', \$err);
	$node->wait_for_log(qr/test pause at checkpoint point "$point"/, $offset);
	return $h;
}

pause_at('prepare');
my $h = run_until_paused('prepare', q{BEGIN; INSERT INTO acct VALUES (200, 200, 200);
	UPDATE acct SET v = 0 WHERE id = 40; PREPARE TRANSACTION 'c'});
is($node->safe_psql('postgres', 'SELECT prepared_files()'), '1', 'paused in PREPARE: its file is written');
unpause();
restart_after_crash('killed in PREPARE');
$h->kill_kill;
is(prepared_gids(), '', 'the transaction killed in PREPARE is not prepared');
is($node->safe_psql('postgres', 'SELECT prepared_files()'), '0', '... and recovery discarded its file');
is(content(), expect(%rows), '... and none of its rows is there');

# A kill while COMMIT PREPARED has logged the rows, before PostgreSQL's
# commit record: the transaction stays prepared, its record does not count.
$node->safe_psql('postgres', q{
BEGIN;
INSERT INTO acct VALUES (300, 300, 300);
UPDATE acct SET v = 7 WHERE id = 60;
UPDATE acct SET k = 7000 WHERE id = 61;
PREPARE TRANSACTION 'd';
});
pause_at('commit_prepared');
$h = run_until_paused('commit_prepared', q{COMMIT PREPARED 'd'});
unpause();
restart_after_crash('killed in COMMIT PREPARED');
$h->kill_kill;
is(prepared_gids(), 'd', 'the transaction killed in COMMIT PREPARED is still prepared');
is(content(), expect(%rows), '... its logged rows did not count');
$node->safe_psql('postgres', q{COMMIT PREPARED 'd'});
$rows{300} = [ 300, 300 ];
$rows{60}[1] = 7;
$rows{61}[0] = 7000;
is(content(), expect(%rows), 'committed again, its rows are there');
restart_after_crash('after the second COMMIT PREPARED');
is(content(), expect(%rows), '... and durable');

# A COMMIT PREPARED that PostgreSQL refuses after pg_fastckpt installed
# and logged the rows (inside a transaction block): the rows go back out
# of what the next checkpoint writes, and the record does not count.
$node->safe_psql('postgres', q{
BEGIN;
INSERT INTO acct VALUES (400, 400, 400);
UPDATE acct SET v = 9 WHERE id = 80;
DELETE FROM acct WHERE id = 81;
UPDATE acct SET k = 8200 WHERE id = 82;
PREPARE TRANSACTION 'f';
});
($rc, $out, $err) = $node->psql('postgres', q{BEGIN; COMMIT PREPARED 'f'});
like($err, qr/cannot run inside a transaction block/, 'COMMIT PREPARED refused inside a transaction block');
($rc, $out, $err) = $node->psql('postgres', q{BEGIN; ROLLBACK PREPARED 'f'});
like($err, qr/cannot run inside a transaction block/, '... and ROLLBACK PREPARED');
is(prepared_gids(), 'f', '... the transaction stays prepared');
is(content(), expect(%rows), '... its rows stay invisible');
$node->safe_psql('postgres', q{SELECT fastckpt_checkpoint(true)});
$node->safe_psql('postgres', q{ROLLBACK PREPARED 'f'});
restart_after_crash('after a refused COMMIT PREPARED, a checkpoint and ROLLBACK PREPARED');
is(content(), expect(%rows), '... the checkpoint did not take its rows');

# After a restart, COMMIT PREPARED is taken for a catalog change (what the
# transaction changed is not known any more), which needs a checkpoint
# first when calls were logged since the last one: that checkpoint must
# come before the commit holds its CSN, or each waits for the other (h38).
$node->safe_psql('postgres', q{
CREATE TABLE calls (id int PRIMARY KEY) USING fastckpt;
CREATE FUNCTION add_call(i int) RETURNS void LANGUAGE sql AS 'INSERT INTO calls VALUES (i)';
SELECT fastckpt_register_procedure('add_call(int)');
BEGIN;
UPDATE acct SET v = 11 WHERE id = 90;
PREPARE TRANSACTION 'g';
});
$node->stop;
$node->start;
wait_for_tables_open($node);
$node->safe_psql('postgres', q{SELECT add_call(1)});
is($node->safe_psql('postgres', q{SELECT call_records FROM fastckpt_stat_log}), '1', 'a call logged after the restart');
($rc, $out, $err) = $node->psql('postgres', q{SET statement_timeout = '60s'; COMMIT PREPARED 'g'});
is($rc, 0, 'COMMIT PREPARED after the restart, with a call in the log, completes')
  or diag($err);
$rows{90}[1] = 11;
is(content(), expect(%rows), '... with its rows');

# A damaged file: the tables stay closed, with the reason; put back, they
# open with the transaction still prepared.
$node->safe_psql('postgres', q{BEGIN; UPDATE acct SET v = 8 WHERE id = 70; PREPARE TRANSACTION 'e'});
$node->stop;
my $dir = $node->data_dir . '/pg_fastckpt/prepared';
opendir(my $dh, $dir) or die "no $dir: $!";
my ($file) = grep { /^[0-9A-F]{16}$/ } readdir($dh);
closedir($dh);
my $path = "$dir/$file";
my $good = slurp_file($path);
my $bad = $good;
substr($bad, length($bad) - 3, 1) = chr(ord(substr($bad, length($bad) - 3, 1)) ^ 0xff);
open(my $fh, '>', $path) or die $!;
binmode $fh;
print $fh $bad;
close $fh;
$node->start;
ok($node->poll_query_until('postgres', q{SELECT error ~ 'is damaged' FROM fastckpt_stat_recovery}),
	'a damaged file keeps the tables closed, and says so');
($rc, $out, $err) = $node->psql('postgres', 'SELECT count(*) FROM acct');
like($err, qr/not available/, '... a query is refused, not answered without the transaction');
$node->stop;
open($fh, '>', $path) or die $!;
binmode $fh;
print $fh $good;
close $fh;
$node->start;
wait_for_tables_open($node);
is(prepared_gids(), 'e', 'with the file put back, the transaction is still prepared');
$node->safe_psql('postgres', q{COMMIT PREPARED 'e'});
$rows{70}[1] = 8;
is(content(), expect(%rows), '... and commits');

# A damaged file that cannot be put back: the way out is ROLLBACK PREPARED
# (nothing of the transaction is in the log; COMMIT PREPARED stays refused),
# then a restart drops the file and opens the tables (h45).
$node->safe_psql('postgres', q{CREATE TABLE heap_side (i int)});
$node->safe_psql('postgres', q{BEGIN; UPDATE acct SET v = 9 WHERE id = 70; PREPARE TRANSACTION 'damaged'});
$node->safe_psql('postgres', q{BEGIN; INSERT INTO heap_side VALUES (1); PREPARE TRANSACTION 'heap_only'});
$node->stop;
opendir($dh, $dir) or die "no $dir: $!";
($file) = grep { /^[0-9A-F]{16}$/ } readdir($dh);
closedir($dh);
$path = "$dir/$file";
truncate($path, 100) or die "truncate $path: $!";
$node->start;
ok($node->poll_query_until('postgres', q{SELECT error ~ 'is damaged' FROM fastckpt_stat_recovery}),
	'a truncated file keeps the tables closed');
($rc, $out, $err) = $node->psql('postgres', q{COMMIT PREPARED 'damaged'});
like($err, qr/COMMIT PREPARED of a transaction that wrote fastckpt tables is not available/,
	'COMMIT PREPARED of its transaction is refused');
$node->safe_psql('postgres', q{COMMIT PREPARED 'heap_only'});
is($node->safe_psql('postgres', 'SELECT count(*) FROM heap_side'), '1',
	'a prepared transaction that wrote heap tables only commits meanwhile (the damaged file is not its)');
$node->safe_psql('postgres', q{ROLLBACK PREPARED 'damaged'});
is(prepared_gids(), '', 'ROLLBACK PREPARED of it goes through');
$node->restart;
wait_for_tables_open($node);
ok(!-e $path, 'the next start drops the damaged file of the rolled back transaction');
is(content(), expect(%rows), '... and opens the tables, without the transaction');

# Prepared changes of the table's and its index's pg_class rows (GRANT,
# ALTER INDEX ... SET) under no lock or a weak one: startup recovery does
# not wait for them where it would update those rows in place (statistics
# after an index rebuild), and the index comes back valid and whole (h49:
# the tables stayed closed, then the primary key was left empty).
$node->safe_psql('postgres', q{
	CREATE ROLE reader;
	CREATE TABLE granted (id int PRIMARY KEY, v int) USING fastckpt;
	INSERT INTO granted VALUES (1, 10), (2, 20);
	BEGIN; GRANT SELECT ON granted TO reader; PREPARE TRANSACTION 'grant';
	BEGIN; ALTER INDEX granted_pkey SET (fillfactor = 50); PREPARE TRANSACTION 'alter_index';
});
ok(crash_postmaster($node, 1), 'a prepared GRANT and ALTER INDEX: all server processes gone after kill -9');
$node->start;
wait_for_tables_open($node);
is($node->safe_psql('postgres', q{SELECT indisvalid FROM pg_index WHERE indexrelid = 'granted_pkey'::regclass}),
	't', '... the tables open, the index valid');
($rc, $out, $err) = $node->psql('postgres', q{INSERT INTO granted VALUES (1, 99)});
like($err, qr/duplicate key value violates unique constraint "granted_pkey"/, '... and whole: it refuses a duplicate');
is($node->safe_psql('postgres', q{SET enable_seqscan = off; SELECT v FROM granted WHERE id = 2}), '20',
	'... and finds the rows');
$node->safe_psql('postgres', q{COMMIT PREPARED 'grant'; COMMIT PREPARED 'alter_index'});
is($node->safe_psql('postgres', q{SELECT has_table_privilege('reader', 'granted', 'SELECT')::text || ' ' ||
		array_to_string(reloptions, ',') FROM pg_class WHERE oid = 'granted_pkey'::regclass}),
	'true fillfactor=50', '... both commit afterwards');
$node->safe_psql('postgres', q{DROP TABLE granted; DROP ROLE reader});

# ... nor one prepared while the rebuild runs (h51: the pg_class rows were
# checked before the build, and its statistics update waited after it).
# The index's expression sleeps, so the GRANT lands mid-build.
$node->safe_psql('postgres', q{
	CREATE ROLE late_reader;
	CREATE FUNCTION slow_id(int) RETURNS int IMMUTABLE LANGUAGE plpgsql AS $$
	BEGIN
		PERFORM pg_sleep(0.01);
		RETURN $1;
	END $$;
	CREATE TABLE slow (id int) USING fastckpt;
	INSERT INTO slow SELECT generate_series(1, 400);
	CREATE INDEX slow_ix ON slow (slow_id(id));
});
ok(crash_postmaster($node, 1), 'a slow index rebuild ahead: all server processes gone after kill -9');
$node->start;
ok(poll_until_true($node, 'postgres', q{SELECT count(*) > 0 FROM pg_stat_activity
	WHERE backend_type = 'pg_fastckpt recovery worker' AND wait_event = 'PgSleep'}),
	'... the rebuild runs the expression');
$node->safe_psql('postgres', q{
	SET pg_fastckpt.recovery_wait_timeout = '100ms';
	BEGIN; GRANT SELECT ON slow TO late_reader; PREPARE TRANSACTION 'late_grant';
});
wait_for_tables_open($node);
is($node->safe_psql('postgres', q{SELECT indisvalid FROM pg_index WHERE indexrelid = 'slow_ix'::regclass}),
	't', 'a GRANT prepared during the rebuild: the tables open, the index valid');
$node->safe_psql('postgres', q{COMMIT PREPARED 'late_grant'; DROP TABLE slow; DROP FUNCTION slow_id(int); DROP ROLE late_reader});

ok(!$node->log_contains('TRAP:|terminated by signal 11|PANIC'),
	'no assertion failure, segfault or PANIC in the log');
# assert-enabled builds check that pg_class rows are updated in place under
# the lock PostgreSQL requires (index rebuilds with prepared writers)
ok(!$node->log_contains('missing lock for relation'),
	'no catalog row updated in place without its lock');
$node->stop;
done_testing();
