# A logged call that startup recovery cannot repeat keeps the fastckpt
# tables of its own database closed, not every database's: one role's
# routine must not take the whole server's tables down at the next crash.
# While a database stays closed, the others read and write, no checkpoint
# is taken and the log is kept whole (their commits survive another
# crash), catalog changes that would need a checkpoint are refused with
# the reason, and the closed database's prepared transactions wait.  The
# ways out: put back what the call needs and restart, or drop the
# database.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use FastckptTest;

my $node = fastckpt_node('closed_db', q{
max_prepared_transactions = 5
pg_fastckpt.checkpoint_timeout = '1h'
pg_fastckpt.max_log_size = 0
pg_fastckpt.recovery_wait_timeout = '2s'
});
wait_for_tables_open($node);

sub setup_database
{
	my ($db) = @_;
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, q{
CREATE EXTENSION pg_fastckpt;
CREATE TABLE mm (id int PRIMARY KEY, v int NOT NULL) USING fastckpt;
CREATE TABLE side (id int PRIMARY KEY, w int) USING fastckpt;
CREATE INDEX side_w ON side (w);
INSERT INTO mm SELECT g, 0 FROM generate_series(1, 10) g;
CREATE FUNCTION divisor() RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT 1';
CREATE FUNCTION add_ratio(p int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	UPDATE mm SET v = v + 10 / divisor() WHERE id = p;
END $$;
SELECT fastckpt_register_procedure('add_ratio(int)');
});
	return;
}

sub content
{
	my ($db) = @_;
	return $node->safe_psql($db, q{SELECT string_agg(id || ':' || v, ' ' ORDER BY id) FROM mm});
}

# The calls of "bad" divide by zero at replay: a routine they use edited in
# pg_proc, which pg_fastckpt does not watch (as a routine that behaves
# otherwise at replay would).
sub break_database
{
	my ($db, $src) = @_;
	$node->safe_psql($db,
		"UPDATE pg_proc SET prosrc = '$src' WHERE oid = 'divisor()'::regprocedure");
	return;
}

# A function whose call ends its process as the OOM killer would.
sub create_end_server
{
	my ($db) = @_;
	$node->safe_psql($db, q{
CREATE FUNCTION end_server() RETURNS int LANGUAGE plpgsql AS $$
BEGIN
	COPY (SELECT 1) TO PROGRAM 'kill -9 $PPID';
	RETURN 1;
END $$});
	return;
}

sub break_bad
{
	break_database('bad', 'SELECT 0');
	return;
}

# Crash, start, and wait for recovery to be over (the tables of "postgres",
# which has no calls, open in any case).
sub crash_and_start
{
	my ($label) = @_;
	ok(crash_postmaster($node, 1), "$label: all server processes gone after kill -9");
	$node->start;
	wait_for_tables_open($node);
	return;
}

setup_database('good');
setup_database('bad');
$node->safe_psql('postgres', 'SELECT fastckpt_checkpoint()');
for my $db ('good', 'bad')
{
	$node->safe_psql($db, q{
SELECT add_ratio(1);
SELECT add_ratio(2);
UPDATE mm SET v = v + 1 WHERE id = 3;
});
	is($node->safe_psql($db, q{SELECT call_records FROM fastckpt_procedures}),
		'2', "$db: the two calls are CALL records");
}
$node->safe_psql('bad', q{
BEGIN;
UPDATE mm SET v = 100 WHERE id = 5;
PREPARE TRANSACTION 'in_bad';
BEGIN;
UPDATE mm SET v = 300 WHERE id = 6;
PREPARE TRANSACTION 'in_bad2';
});
$node->safe_psql('good', q{
BEGIN;
UPDATE mm SET v = 200 WHERE id = 10;
PREPARE TRANSACTION 'in_good';
});
my $good_before = content('good');
my $bad_before = content('bad');
is($good_before, '1:10 2:10 3:1 4:0 5:0 6:0 7:0 8:0 9:0 10:0', 'good before the crash');
break_bad();
my $log_offset = -s $node->logfile;
crash_and_start('calls of "bad" that cannot be repeated in the log');

# "good" opens whole; "bad" stays closed, saying why, to its own users only
is(content('good'), $good_before, 'good: its tables open, with every commit');
is($node->safe_psql('good', q{SELECT tables_open || ' ' || (error IS NULL) FROM fastckpt_stat_recovery}),
	'true true', 'good: fastckpt_stat_recovery shows its tables open, and no other database\'s error');
my ($ret, $out, $err) = $node->psql('bad', 'SELECT count(*) FROM mm');
like($err,
	qr/ERROR:  fastckpt table "mm" is not available: startup recovery could not restore the fastckpt tables of database "bad"\n.*DETAIL:  .*routine public\.add_ratio\(integer\) .* failed: division by zero/,
	'bad: its tables stay closed, with the call and the error');
like($node->safe_psql('bad', q{SELECT tables_open || ' ' || error FROM fastckpt_stat_recovery}),
	qr/^false database \d+: replaying the call of routine public\.add_ratio\(integer\) .* failed: division by zero$/,
	'bad: fastckpt_stat_recovery says why');
# the closed tables' row counts are unknown (replay stopped part way), the
# open ones' are known; every database's tables are listed from either
is($node->safe_psql('good', q{SELECT string_agg(database || ':' || coalesce(n_rows::text, 'null'), ' ' ORDER BY database, n_rows)
	FROM fastckpt_stat_tables WHERE database IN ('good', 'bad')}),
	'bad:null bad:null good:0 good:10', 'fastckpt_stat_tables: no row count for the closed database\'s table');
($ret, $out, $err) = $node->psql('bad', 'INSERT INTO mm VALUES (11, 0)');
like($err, qr/fastckpt table "mm" is not available/, 'bad: writes are refused too');
($ret, $out, $err) = $node->psql('postgres', 'CREATE DATABASE copy_of_bad TEMPLATE bad');
like($err, qr/ERROR:  the fastckpt tables of database "bad" are not available: startup recovery could not restore them/,
	'a copy of it (CREATE DATABASE ... TEMPLATE) is refused, not made of its tables part way');
like(slurp_file($node->logfile, $log_offset),
	qr/WARNING:  pg_fastckpt: startup recovery failed for database \d+; its fastckpt tables stay closed\n.*DETAIL:  A logged call of a registered routine could not be repeated: .*division by zero/,
	'the server log names the database and the call');

# "good" writes; no checkpoint is taken, and catalog changes that need one
# are refused, saying why
$node->safe_psql('good', 'UPDATE mm SET v = v + 1000 WHERE id = 4');
$node->safe_psql('good', 'SELECT add_ratio(6)');
my $good_after = content('good');
($ret, $out, $err) = $node->psql('good', 'SELECT fastckpt_checkpoint()');
like($err,
	qr/ERROR:  no fastckpt checkpoint can be taken while the fastckpt tables of database "bad" stay closed/,
	'good: fastckpt_checkpoint() is refused, naming the closed database');
unlike($err, qr/division by zero/, '... without the other database\'s error');
($ret, $out, $err) = $node->psql('good', 'CREATE TABLE plain_heap (i int)');
like($err,
	qr/ERROR:  cannot change the catalogs while the fastckpt tables of database "bad" stay closed/,
	'good: a catalog change that needs a checkpoint first is refused');
like($node->safe_psql('good', 'SELECT last_error FROM fastckpt_stat_checkpointer'),
	qr/no checkpoint is taken while the fastckpt tables of database \d+ stay closed/,
	'fastckpt_stat_checkpointer says why no checkpoint is taken');
is($node->safe_psql('good', 'SELECT checkpoints FROM fastckpt_stat_checkpointer'), '0',
	'no checkpoint was taken');
# the log grows meanwhile: past max_log_size, the server log warns
$node->append_conf('postgresql.conf', "pg_fastckpt.max_log_size = '1MB'");
$node->reload;
my $warn_offset = -s $node->logfile;
$node->safe_psql('good', 'INSERT INTO side SELECT g, g FROM generate_series(1, 30000) g');
$node->wait_for_log(
	qr/WARNING:  pg_fastckpt: the log holds \d+ MB since the last checkpoint, and grows while the fastckpt tables of database "bad" \(OID \d+\) stay closed/,
	$warn_offset);
pass('past max_log_size, the server log warns that the log grows while "bad" stays closed');
$node->append_conf('postgresql.conf', "pg_fastckpt.max_log_size = 0");
$node->reload;
# after a restart, a COMMIT PREPARED may finish a catalog change, as far as
# pg_fastckpt knows: it waits too
($ret, $out, $err) = $node->psql('good', "COMMIT PREPARED 'in_good'");
like($err, qr/ERROR:  cannot change the catalogs while the fastckpt tables of database "bad" stay closed/,
	'good: COMMIT PREPARED of a transaction prepared before the restart is refused meanwhile');

# the closed database's prepared transaction waits for its tables
($ret, $out, $err) = $node->psql('bad', "COMMIT PREPARED 'in_bad'");
like($err, qr/COMMIT PREPARED of a transaction that wrote fastckpt tables is not available/,
	'bad: COMMIT PREPARED of its transaction that wrote fastckpt tables is refused');
is($node->safe_psql('bad', q{SELECT count(*) FROM pg_prepared_xacts WHERE gid = 'in_bad'}), '1',
	'... and the transaction stays prepared');
$node->safe_psql('bad', "ROLLBACK PREPARED 'in_bad2'");
pass('bad: ROLLBACK PREPARED of another works (nothing of it was put back or logged)');

# catalogs all databases share: "good"'s logged calls would replay against
# the change at the next start, and no checkpoint can take them first
($ret, $out, $err) = $node->psql('bad', 'CREATE ROLE made_in_bad');
like($err,
	qr/ERROR:  cannot change catalogs shared by all databases while the fastckpt tables of database "bad" stay closed/,
	'bad: a change of the shared catalogs (a role) is refused while another database\'s calls are in the log');
($ret, $out, $err) = $node->psql('bad', q{UPDATE pg_authid SET rolcreatedb = true WHERE rolname = 'pg_monitor'});
like($err, qr/ERROR:  cannot change catalogs shared by all databases/,
	'bad: ... also by plain DML on a shared catalog');
# a concurrent index build would commit the index and then meet the gate
($ret, $out, $err) = $node->psql('bad', 'CREATE INDEX CONCURRENTLY mm_v ON mm (v)');
like($err, qr/ERROR:  fastckpt table "mm" is not available: startup recovery could not restore the fastckpt tables of database "bad"/,
	'bad: CREATE INDEX CONCURRENTLY is refused before it creates anything');
is($node->safe_psql('bad', q{SELECT string_agg(indexrelid::regclass::text, ',' ORDER BY 1) FROM pg_index WHERE indrelid = 'mm'::regclass}),
	'mm_pkey', '... no index left behind');
$node->safe_psql('bad', 'DROP INDEX side_w');
pass('bad: DROP INDEX of one of its tables\' indexes commits (no "recovery in progress")');

# in the closed database, catalog changes commit (what replay needs can be
# put back): here the routine as it was
$node->safe_psql('bad',
	q{CREATE OR REPLACE FUNCTION divisor() RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT 1'});
pass('bad: CREATE OR REPLACE FUNCTION commits');

# "good"'s commits since the restart live in the log only: another crash
crash_and_start('the routine put back');
is(content('good'), $good_after, 'good: the commits made while "bad" was closed are back');
is(content('bad'), $bad_before, 'bad: its tables open, with every commit');
is($node->safe_psql('bad', 'SELECT v FROM mm WHERE id = 5'), '0',
	'bad: its prepared transaction\'s row is back, uncommitted');
is($node->safe_psql('bad', q{SELECT string_agg(gid, ',') FROM pg_prepared_xacts WHERE database = current_database()}), 'in_bad',
	'bad: the transaction rolled back while it was closed is gone');
is($node->safe_psql('bad', q{SELECT count(*) FROM pg_ls_dir('pg_fastckpt/prepared')}), '2',
	'... and its file with it (the files left: "in_bad" and "in_good")');
$node->safe_psql('bad', "COMMIT PREPARED 'in_bad'");
is($node->safe_psql('bad', 'SELECT v FROM mm WHERE id = 5'), '100', 'bad: COMMIT PREPARED commits it');
$node->safe_psql('good', "COMMIT PREPARED 'in_good'");
is($node->safe_psql('good', 'SELECT v FROM mm WHERE id = 10'), '200', 'good: and so does its own');
$node->safe_psql('good', 'SELECT fastckpt_checkpoint()');
ok($node->safe_psql('good', 'SELECT checkpoints FROM fastckpt_stat_checkpointer') > 0,
	'checkpoints are taken again');
$node->safe_psql('good', 'CREATE TABLE plain_heap (i int)');
pass('good: catalog changes commit again');

# The other way out: drop the closed database.
$node->safe_psql('bad', 'SELECT add_ratio(7)');
break_bad();
crash_and_start('a call of "bad" that cannot be repeated, once more');
($ret, $out, $err) = $node->psql('bad', 'SELECT count(*) FROM mm');
like($err, qr/not available: startup recovery could not restore the fastckpt tables of database "bad"/,
	'bad: closed again');
($ret, $out, $err) = $node->psql('good', 'SELECT fastckpt_checkpoint()');
like($err, qr/no fastckpt checkpoint can be taken/, 'good: no checkpoint while it is');
$node->safe_psql('postgres', 'DROP DATABASE bad');
pass('DROP DATABASE of the closed database commits');
$node->safe_psql('good', 'SELECT add_ratio(8)');
$good_after = content('good');
crash_and_start('after the drop, before any checkpoint (the dropped database\'s calls in the log)');
is(content('good'), $good_after, 'good: every commit is back');
is($node->safe_psql('good', 'SELECT error IS NULL FROM fastckpt_stat_recovery'), 't',
	'no database is closed any more');
$node->safe_psql('good', 'SELECT fastckpt_checkpoint()');
ok($node->safe_psql('good', 'SELECT checkpoints FROM fastckpt_stat_checkpointer') > 0,
	'checkpoints are taken again');
$node->safe_psql('good', 'SELECT add_ratio(9)');
$good_after = content('good');
crash_and_start('after that checkpoint');
is(content('good'), $good_after, 'good: every commit is back, once more');

# --- What else can happen while a database stays closed ---
# Database "bad2": its calls fail at replay; "good" has no call in the log
# (a checkpoint took them), so the closed database may change the shared
# catalogs at first.
$node->safe_psql('postgres', 'CREATE ROLE grp5; CREATE ROLE r5 LOGIN IN ROLE grp5');
$node->safe_psql('postgres', 'CREATE DATABASE scratch');
setup_database('bad2');
$node->safe_psql('good', q{
GRANT SELECT, UPDATE ON mm TO grp5;
CREATE FUNCTION add_slow(p int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	x int := 0;
BEGIN
	UPDATE mm SET v = v + 10 WHERE id = p;
	FOR i IN 1..20000000 LOOP
		x := x + 1;
	END LOOP;
END $$;
SELECT fastckpt_register_procedure('add_slow(int)');
SELECT fastckpt_checkpoint();
});
$node->safe_psql('bad2', 'SELECT add_ratio(1)');
$node->safe_psql('bad2', 'SELECT add_ratio(2)');
my $bad2_before = content('bad2');
break_database('bad2', 'SELECT 0');
crash_and_start('calls of "bad2" that cannot be repeated');

# A membership removed by plain DML in "bad2" while a call of r5, who
# updates good's table through it, runs in "good": the call, begun before
# and committed after, falls back to row images, and its replay needs no
# membership (h42 F3).
my ($call_out, $call_err) = ('', '');
my $call = IPC::Run::start(
	[ 'psql', '-X', '-At', '-d', $node->connstr('good') . ' user=r5', '-c', 'SELECT add_slow(4)' ],
	'>', \$call_out, '2>', \$call_err);
$node->poll_query_until('good',
	q{SELECT count(*) > 0 FROM pg_stat_activity WHERE query = 'SELECT add_slow(4)' AND state = 'active'})
  or die 'the call did not start';
$node->safe_psql('bad2', q{DELETE FROM pg_auth_members WHERE member = 'r5'::regrole});
is($node->safe_psql('good', q{SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT add_slow(4)'}), '1',
	'the call still runs when the membership is gone');
$call->finish;
is($call_err, '', 'the call committed');
is($node->safe_psql('good', q{SELECT call_records || ' ' || last_fallback FROM fastckpt_procedures WHERE routine = 'add_slow(int)'::regprocedure}),
	'0 catalog_changed', '... as row images: a shared catalog changed while it ran');
$node->safe_psql('good', 'SELECT add_ratio(3)');
$good_after = content('good');

# "good"'s calls are in the log now.  In "bad2", changes of its own objects
# commit, though PostgreSQL notes their owners and comments in shared
# catalogs (the repairs a failed call may need, h42 F4), and so do its
# subscriptions' (h42 F5); roles, memberships and settings stay refused.
$node->safe_psql('bad2', 'GRANT SELECT ON mm TO r5');
pass('bad2: GRANT on one of its tables commits');
$node->safe_psql('bad2', 'ALTER FUNCTION divisor() OWNER TO r5');
$node->safe_psql('bad2', 'ALTER FUNCTION divisor() OWNER TO CURRENT_USER');
pass('bad2: ALTER FUNCTION ... OWNER commits');
$node->safe_psql('bad2', q{COMMENT ON ROLE r5 IS 'a role'});
pass('bad2: COMMENT ON ROLE commits');
$node->safe_psql('bad2', q{CREATE SUBSCRIPTION sub_bad2 CONNECTION 'dbname=nowhere' PUBLICATION p WITH (connect = false)});
$node->safe_psql('bad2', 'ALTER SUBSCRIPTION sub_bad2 DISABLE');
$node->safe_psql('bad2', 'ALTER SUBSCRIPTION sub_bad2 SET (slot_name = NONE)');
$node->safe_psql('bad2', 'DROP SUBSCRIPTION sub_bad2');
pass('bad2: a subscription is created, disabled and dropped');
for my $sql ('ALTER ROLE r5 SET work_mem = \'2MB\'', 'ALTER DATABASE good SET work_mem = \'2MB\'',
	'GRANT grp5 TO r5', 'ALTER ROLE r5 NOLOGIN')
{
	($ret, $out, $err) = $node->psql('bad2', $sql);
	like($err, qr/ERROR:  cannot change catalogs shared by all databases while the fastckpt tables of database "bad2" stay closed/,
		"bad2: refused: $sql");
}
# ... also when a prepared transaction would commit it later (h44 F2)
($ret, $out, $err) = $node->psql('bad2', q{BEGIN; UPDATE pg_authid SET rolcreatedb = true WHERE rolname = 'r5'; PREPARE TRANSACTION 'sneak'});
like($err, qr/ERROR:  cannot change catalogs shared by all databases while the fastckpt tables of database "bad2" stay closed/,
	'bad2: refused at PREPARE TRANSACTION too');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_prepared_xacts WHERE gid = 'sneak'}), '0',
	'... nothing prepared');
# Creating and dropping databases and tablespaces, which remove files before
# they commit, commit (none changes what a call sees) rather than fail at
# commit half done (h44 F3); from the closed database and from an open one
my $ts_dir = PostgreSQL::Test::Utils::tempdir();
for my $db ('bad2', 'good')
{
	$node->safe_psql($db, "CREATE TABLESPACE ts_$db LOCATION '$ts_dir/$db'") if mkdir("$ts_dir/$db");
	$node->safe_psql($db, "DROP TABLESPACE ts_$db");
	my @left = glob("$ts_dir/$db/*");
	is(scalar(@left) . ' ' . $node->safe_psql($db, "SELECT count(*) FROM pg_tablespace WHERE spcname = 'ts_$db'"),
		'0 0', "$db: CREATE and DROP TABLESPACE commit, files and catalog row gone");
}
$node->safe_psql('bad2', 'DROP DATABASE scratch');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_database WHERE datname = 'scratch'}), '0',
	'bad2: DROP DATABASE of another database commits');
$node->safe_psql('bad2', 'CREATE DATABASE made_in_bad2');
is($node->safe_psql('made_in_bad2', 'SELECT 1'), '1',
	'bad2: CREATE DATABASE from template1, which is open, commits (h44 F8)');
$node->safe_psql('bad2', 'DROP DATABASE made_in_bad2');

crash_and_start('the membership gone, "bad2" still closed');
is(content('good'), $good_after, 'good: opens with every commit, the call made without the membership too');
($ret, $out, $err) = $node->psql('bad2', 'SELECT count(*) FROM mm');
like($err, qr/not available/, 'bad2: still closed');

# A routine that ends its own process at replay closes its database only
# (h42 F1)...
break_database('bad2', 'SELECT 1 + 0 * pg_terminate_backend(pg_backend_pid())::int');
crash_and_start('a call of "bad2" whose replay terminates its own process');
is(content('good'), $good_after, 'good: opens, with every commit');
like($node->safe_psql('bad2', 'SELECT error FROM fastckpt_stat_recovery'),
	qr/the worker replaying its calls stopped before it finished/, 'bad2: stays closed, saying why');

# ... and one that takes the server down (as the OOM killer would) does so
# three times at most, not for ever (h42 F2)
create_end_server('bad2');
break_database('bad2', 'SELECT end_server()');
$log_offset = -s $node->logfile;
crash_and_start('a call of "bad2" whose replay kills its process');
is(content('good'), $good_after, 'good: opens, with every commit, after the crash-restarts');
like($node->safe_psql('bad2', 'SELECT error FROM fastckpt_stat_recovery'),
	qr/the server crashed 3 times in a row while its logged calls were replayed/,
	'bad2: stays closed after three crashes of the server, saying why');
my @kills = (slurp_file($node->logfile, $log_offset) =~ /call replay.* was terminated by signal 9/g);
is(scalar(@kills), 3, 'the server went through three crash-restarts, no more');

# ... and so does one that sends its own process the SIGQUIT the postmaster
# sends when another process crashed: only the postmaster's is taken so
$node->safe_psql('bad2', q{
CREATE FUNCTION quit_server() RETURNS int LANGUAGE plpgsql AS $$
BEGIN
	COPY (SELECT 1) TO PROGRAM 'kill -QUIT $PPID';
	RETURN 1;
END $$});
break_database('bad2', 'SELECT quit_server()');
$log_offset = -s $node->logfile;
# closed, "bad2" keeps its calls in the log: a restart replays them again
$node->restart;
wait_for_tables_open($node);
like($node->safe_psql('bad2', 'SELECT error FROM fastckpt_stat_recovery'),
	qr/the server crashed 3 times in a row while its logged calls were replayed/,
	'bad2: stays closed after three crashes of the server');
@kills = (slurp_file($node->logfile, $log_offset) =~ /call replay.* exited with exit code 2/g);
is(scalar(@kills), 3, '... three crash-restarts, none taken for another process\'s crash');

# put back, and a restart opens "bad2" whole
break_database('bad2', 'SELECT 1');
$node->restart;
wait_for_tables_open($node);
is(content('bad2'), $bad2_before, 'bad2: opens with every commit once the routine is put back');
is(content('good'), $good_after, 'good: unchanged');

# Two databases whose replay takes the server down, and one whose calls
# replay first and fine: each of the two is counted on its own (h44 F1),
# and once closed so, a later crash-restart of the same postmaster does not
# replay them again (h44 F6)
setup_database('bad3');
create_end_server('bad3');
$node->safe_psql('good', 'SELECT fastckpt_checkpoint()');
$node->safe_psql('good', 'SELECT add_ratio(5)');
$node->safe_psql($_, 'SELECT add_ratio(1)') for ('bad2', 'bad3');
$good_after = content('good');
$bad2_before = content('bad2');
my $bad3_before = content('bad3');
break_database($_, 'SELECT end_server()') for ('bad2', 'bad3');
$log_offset = -s $node->logfile;
crash_and_start('two databases whose calls take the server down at replay');
is(content('good'), $good_after, 'good: opens, with every commit');
for my $db ('bad2', 'bad3')
{
	like($node->safe_psql($db, 'SELECT error FROM fastckpt_stat_recovery'),
		qr/the server crashed 3 times in a row while its logged calls were replayed/,
		"$db: stays closed after three crashes of its own");
}
@kills = (slurp_file($node->logfile, $log_offset) =~ /call replay.* was terminated by signal 9/g);
is(scalar(@kills), 6, 'six crash-restarts in all, three for each');
# an unrelated crash-restart: recovery runs again, without those calls
$log_offset = -s $node->logfile;
my $victim = $node->safe_psql('postgres', 'SELECT pg_backend_pid()');
my $sleeper = IPC::Run::start(
	[ 'psql', '-X', '-At', '-d', $node->connstr('postgres'), '-c', 'SELECT pg_sleep(60)' ],
	'>', \$call_out, '2>', \$call_err);
$node->poll_query_until('postgres',
	q{SELECT count(*) > 0 FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(60)'})
  or die 'no sleeping backend';
$victim = $node->safe_psql('postgres', q{SELECT pid FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(60)'});
kill 'KILL', $victim;
$sleeper->finish;
poll_until_true($node, 'postgres', q{SELECT tables_open FROM fastckpt_stat_recovery})
  or die 'recovery did not end';
like(slurp_file($node->logfile, $log_offset), qr/server process \(PID $victim\) was terminated by signal 9/,
	'a backend killed: the server crash-restarts');
@kills = (slurp_file($node->logfile, $log_offset) =~ /call replay.* was terminated by signal 9/g);
is(scalar(@kills), 0, '... and the calls that took it down are not replayed again');
is(content('good'), $good_after, 'good: open, with every commit');
break_database($_, 'SELECT 1') for ('bad2', 'bad3');
$node->restart;
wait_for_tables_open($node);
is(content('bad2') . ' / ' . content('bad3'), "$bad2_before / $bad3_before",
	'bad2, bad3: open with every commit once the routine is put back and the server restarted');

# Kill a backend that sleeps (a crash of another process); its pid.
sub kill_other_backend
{
	my ($out, $err) = ('', '');
	my $other = IPC::Run::start(
		[ 'psql', '-X', '-At', '-d', $node->connstr('postgres'), '-c', 'SELECT pg_sleep(60)' ],
		'>', \$out, '2>', \$err);
	poll_until_true($node, 'postgres',
		q{SELECT count(*) > 0 FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(60)'})
	  or die 'no sleeping backend';
	my $pid = $node->safe_psql('postgres',
		q{SELECT pid FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(60)'});
	kill 'KILL', $pid;
	$other->finish;
	return $pid;
}

# Crashes of other processes while a database's calls replay are not its
# replay's (h44 F4): four in a row, one more than would close it, and it
# opens with every commit once its replay runs through.  Its replay worker,
# told to quit by the postmaster, marks its attempt so.
setup_database('slow');
$node->safe_psql('slow', q{
CREATE FUNCTION add_spin(p int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	x int := 0;
BEGIN
	FOR i IN 1..10000000 LOOP
		x := x + 1;
	END LOOP;
	UPDATE mm SET v = v + 1 WHERE id = p;
END $$;
SELECT fastckpt_register_procedure('add_spin(int)');
SELECT fastckpt_checkpoint();
});
$node->safe_psql('slow', "SELECT add_spin($_)") for (1 .. 8);
my $slow_before = content('slow');
$log_offset = -s $node->logfile;
ok(crash_postmaster($node, 1), 'calls of "slow" in the log: all server processes gone after kill -9');
$node->start;
for my $round (1 .. 4)
{
	poll_until_true($node, 'postgres', q{SELECT count(*) > 0 FROM pg_stat_activity
		WHERE backend_type = 'pg_fastckpt call replay' AND datname = 'slow'})
	  or die "round $round: no call replay of \"slow\"";
	my $pid = kill_other_backend();
	# the crash-restart is under way once the postmaster has said so
	my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
	usleep(100_000) until slurp_file($node->logfile, $log_offset) =~ /\(PID $pid\) was terminated by signal 9/
	  || time() > $deadline;
}
wait_for_tables_open($node);
is($node->safe_psql('slow', 'SELECT error IS NULL FROM fastckpt_stat_recovery'), 't',
	'slow: opens after four crashes of another process during its replay');
is(content('slow'), $slow_before, 'slow: with every call replayed');
my @not_counted = (slurp_file($node->logfile, $log_offset) =~ /ended in another process's crash; not counted/g);
is(scalar(@not_counted), 4, 'each of the four attempts is said not to count');

# Crashes after recovery finished count for nothing (h47): six backends
# killed in a row, one more than the limit of crashed recoveries, and every
# recovery opens the tables.
for my $round (1 .. 6)
{
	$log_offset = -s $node->logfile;
	my $pid = kill_other_backend();
	my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
	usleep(100_000) until slurp_file($node->logfile, $log_offset) =~ /startup recovery (finished|failed)/
	  || time() > $deadline;
	wait_for_tables_open($node);
}
is($node->safe_psql('slow', 'SELECT tables_open::text || coalesce(error, \'\') FROM fastckpt_stat_recovery'), 'true',
	'six backend crashes, each after recovery finished: the tables open every time');

# Crashes of other processes while the whole startup recovery runs are not
# its own: six in a row, one more than the limit, and it opens.  Each of its
# processes, told to quit by the postmaster, marks its entry.
$node->append_conf('postgresql.conf', "pg_fastckpt.test_recovery_delay = '3s'\n");
$log_offset = -s $node->logfile;
$node->restart;
my $round_offset = $log_offset;
for my $round (1 .. 6)
{
	# held before the gate opens, past the start of every step
	my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
	usleep(100_000) until slurp_file($node->logfile, $round_offset) =~ /log replayed in/
	  || time() > $deadline;
	sleep(1);
	$round_offset = -s $node->logfile;
	my $pid = kill_other_backend();
	usleep(100_000) until slurp_file($node->logfile, $round_offset) =~ /\(PID $pid\) was terminated by signal 9/
	  || time() > $deadline;
}
wait_for_tables_open($node);
is($node->safe_psql('postgres', 'SELECT tables_open::text || coalesce(error, \'\') FROM fastckpt_stat_recovery'), 'true',
	'six crashes of another backend while startup recovery ran: the tables open');
@not_counted = (slurp_file($node->logfile, $log_offset) =~ /\("[^"]*recovery_attempt"\) ended in another process's crash; not counted/g);
is(scalar(@not_counted), 6, '... each attempt said not to count');
is(content('good'), $good_after, 'good: with every commit');

# A parallel worker of an index rebuild at startup is one of recovery's
# processes: its crash counts (kill -9 of it mid-build; the table's one
# index is slow to build).
$node->append_conf('postgresql.conf', "pg_fastckpt.test_recovery_delay = 0\n");
$node->safe_psql('postgres', 'CREATE DATABASE par');
$node->safe_psql('par', q{
CREATE EXTENSION pg_fastckpt;
CREATE FUNCTION slow_val(int) RETURNS int IMMUTABLE PARALLEL SAFE LANGUAGE plpgsql AS $$
BEGIN
	IF $1 % 500 = 0 THEN
		PERFORM pg_sleep(0.02);
	END IF;
	RETURN $1;
END $$;
CREATE TABLE big (id int, v int) USING fastckpt WITH (parallel_workers = 2);
INSERT INTO big SELECT g, g FROM generate_series(1, 100000) g;
CREATE INDEX big_ix ON big (slow_val(v));
-- an expression run by the rebuild may not start a parallel query, even
-- if its routine asks for one (that query's workers would have no entry)
CREATE TABLE hb (x int) USING heap;
INSERT INTO hb SELECT generate_series(1, 1000);
CREATE FUNCTION par_probe() RETURNS int LANGUAGE plpgsql
	SET max_parallel_workers_per_gather = 4 SET parallel_setup_cost = 0
	SET parallel_tuple_cost = 0 SET min_parallel_table_scan_size = 0 AS $$
DECLARE
	line text;
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT count(*) FROM hb' LOOP
		IF line ~ 'Workers Launched: [1-9]' THEN
			RAISE EXCEPTION 'parallel query in startup recovery: %', line;
		END IF;
	END LOOP;
	RETURN 0;
END $$;
CREATE FUNCTION par_check(int) RETURNS int IMMUTABLE LANGUAGE plpgsql AS $$
BEGIN
	IF NOT (SELECT tables_open FROM fastckpt_stat_recovery) THEN
		PERFORM par_probe();
	END IF;
	RETURN $1;
END $$;
CREATE TABLE small (v int) USING fastckpt;
INSERT INTO small VALUES (1), (2);
CREATE INDEX small_ix ON small (par_check(v));
});
$log_offset = -s $node->logfile;
$node->restart;
my $par_pid;
{
	my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
	while (!$par_pid && time() < $deadline)
	{
		$par_pid = $node->safe_psql('postgres', q{SELECT pid FROM pg_stat_activity
			WHERE backend_type = 'parallel worker' AND datname = 'par' LIMIT 1});
		usleep(20_000) unless $par_pid;
	}
}
ok($par_pid, 'a parallel worker builds the index at startup');
is(kill('KILL', $par_pid), 1, '... killed mid-build');
wait_for_tables_open($node);
my $par_log = slurp_file($node->logfile, $log_offset);
like($par_log, qr/\(PID $par_pid\) was terminated by signal 9/, '... killed, the server crash-restarts');
like($par_log, qr/attempt 2 of this step \("[^"]*recovery_attempt"\): the last one crashed the server/,
	'... and that attempt counts');
unlike($par_log, qr/ended in another process's crash; not counted/, '... not taken for another process\'s crash');
is($node->safe_psql('par', q{SET enable_seqscan = off; SELECT count(*) FROM big WHERE slow_val(v) > 0}), '100000',
	'... the index is rebuilt whole at the next attempt');
is($node->safe_psql('par', q{SELECT indisvalid FROM pg_index WHERE indexrelid = 'small_ix'::regclass}), 't',
	'an index expression asking for parallel query gets none at startup');
$node->safe_psql('postgres', 'DROP DATABASE par');

# An index expression whose rebuild at startup takes the server down: after
# five crash-restarts in a row recovery gives up, every fastckpt table
# closed and the server up, rather than loop for ever
$node->safe_psql('good', q{
CREATE FUNCTION ix_val(int) RETURNS int IMMUTABLE LANGUAGE plpgsql AS $$
BEGIN
	RETURN $1;
END $$;
CREATE INDEX mm_ix ON mm (ix_val(v));
CREATE FUNCTION end_process() RETURNS int LANGUAGE plpgsql AS $$
BEGIN
	COPY (SELECT 1) TO PROGRAM 'kill -9 $PPID';
	RETURN 0;
END $$;
CREATE OR REPLACE FUNCTION ix_val(int) RETURNS int IMMUTABLE LANGUAGE plpgsql AS $$
BEGIN
	RETURN $1 + end_process();
END $$;
});
$log_offset = -s $node->logfile;
$node->restart;
poll_until_true($node, 'postgres', 'SELECT error IS NOT NULL FROM fastckpt_stat_recovery')
  or die 'recovery did not give up';
like($node->safe_psql('postgres', 'SELECT tables_open || \' \' || error FROM fastckpt_stat_recovery'),
	qr/^false the server crashed 5 times in a row while startup recovery ran$/,
	'recovery gives up after five crash-restarts, saying why');
@kills = (slurp_file($node->logfile, $log_offset) =~ /recovery worker.* was terminated by signal 9/g);
is(scalar(@kills), 5, 'five crash-restarts, no more');
is($node->safe_psql('good', 'SELECT 1'), '1', 'the server is up');
$node->safe_psql('good', q{
CREATE OR REPLACE FUNCTION ix_val(int) RETURNS int IMMUTABLE LANGUAGE plpgsql AS $$
BEGIN
	RETURN $1;
END $$});
$node->restart;
wait_for_tables_open($node);
is(content('good'), $good_after, 'good: opens with every commit once the function is put back');
is($node->safe_psql('good', q{SET enable_seqscan = off; SELECT count(*) FROM mm WHERE ix_val(v) >= 0}), '10',
	'... its expression index rebuilt');

$node->stop;
done_testing();
