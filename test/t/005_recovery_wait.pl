# Queries racing startup recovery (DESIGN.md section 8): until recovery
# opens the tables, a query on a fastckpt table waits up to
# pg_fastckpt.recovery_wait_timeout and then fails with a clear "recovery in
# progress" error; one that waits long enough sees every row, never an
# empty or partial table, nor builds an index of one.
# pg_fastckpt.test_recovery_delay holds recovery open for a known time so
# that the race is certain, not likely.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use IPC::Run;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use FastckptTest;

my $node = fastckpt_node('recovery_wait', q{
pg_fastckpt.test_recovery_delay = '6s'
});
wait_for_tables_open($node);
$node->safe_psql('postgres', q{
CREATE TABLE t (id int PRIMARY KEY, v int) USING fastckpt;
INSERT INTO t SELECT g, g FROM generate_series(1, 1000) g;
CREATE FUNCTION touch(p int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	UPDATE t SET v = v WHERE id = p;
END $$;
SELECT fastckpt_register_procedure('touch(int)');
});

# kill -9, and start with recovery pausing at test pause point $point
sub crash_and_pause
{
	my ($point, $ms) = @_;
	$node->append_conf('postgresql.conf', qq{
pg_fastckpt.test_checkpoint_pause = '$point'
pg_fastckpt.test_checkpoint_pause_ms = $ms
});
	my $offset = -s $node->logfile;
	crash_postmaster($node);
	$node->start;
	$node->wait_for_log(qr/test pause at checkpoint point "$point"/, $offset);
}

for my $how ('clean restart', 'crash')
{
	if ($how eq 'crash')
	{
		# a logged call for recovery to replay (a clean restart's
		# checkpoint leaves none)
		$node->safe_psql('postgres', 'SELECT touch(1)');
		crash_postmaster($node);
		$node->start;
	}
	else
	{
		$node->restart;
	}
	my $t0 = time();
	my ($ret, $out, $err) = $node->psql('postgres',
		q{SET pg_fastckpt.recovery_wait_timeout = '500ms'; SELECT count(*) FROM t});
	my $waited = time() - $t0;
	isnt($ret, 0, "$how: a read during recovery fails after its timeout");
	like($err, qr/fastckpt table "t" is not available yet: recovery in progress/,
		"$how: with the recovery-in-progress error");
	ok($waited >= 0.5, "$how: after waiting the timeout (" . sprintf('%.2f', $waited) . ' s)');
	($ret, $out, $err) = $node->psql('postgres',
		q{SET pg_fastckpt.recovery_wait_timeout = '500ms'; INSERT INTO t VALUES (0, 0)});
	like($err, qr/recovery in progress/, "$how: so does a write");
	# replication settings need not wait: no replayed call can see them (an
	# operator may have to stop a subscription's worker for recovery)
	my $n = $how eq 'crash' ? 2 : 1;
	my $t1 = time();
	($ret, $out, $err) = $node->psql('postgres', qq{
		SET pg_fastckpt.recovery_wait_timeout = '500ms';
		CREATE PUBLICATION pub_$n;
		ALTER PUBLICATION pub_$n SET (publish = 'insert');
		DROP PUBLICATION pub_$n;
		CREATE SUBSCRIPTION sub_$n CONNECTION 'dbname=nosuch' PUBLICATION p WITH (connect = false);
		ALTER SUBSCRIPTION sub_$n DISABLE;
		ALTER SUBSCRIPTION sub_$n SET (slot_name = NONE);
		DROP SUBSCRIPTION sub_$n;
	});
	is($ret, 0, "$how: publications and subscriptions change without waiting for recovery");
	unlike($err, qr/ERROR/, "$how: ... with no error");
	my $took = time() - $t1;
	ok($took < 2, "$how: ... and none waits (8 statements in " . sprintf('%.2f', $took) . ' s)');
	# with calls to replay, a statement waits the timeout once in all, not
	# once for each statement it runs (an extension's script, a DO block)
	# and again at its commit; with none, it does not wait (h49)
	my $t2 = time();
	($ret, $out, $err) = $node->psql('postgres', qq{
		SET pg_fastckpt.recovery_wait_timeout = '500ms';
		DO \$\$BEGIN
		  FOR i IN 1..6 LOOP
		    EXECUTE format('CREATE TABLE nested_${n}_%s (id int)', i);
		  END LOOP;
		END\$\$});
	$took = time() - $t2;
	if ($how eq 'crash')
	{
		like($err, qr/recovery in progress/,
			"$how, a call logged: DDL run by a DO block fails with the recovery-in-progress error");
		ok($took >= 0.5 && $took < 1.5,
			"$how: ... after waiting the timeout once (" . sprintf('%.2f', $took) . ' s), not once per statement');
	}
	else
	{
		is($ret . $err, '0', "$how, no call logged: DDL run by a DO block goes through");
		# (a DO block may lock strongly: it waits once, quietly, for the
		# rebuild's locks, fc_gate_wait_quietly)
		ok($took < 1.5, "$how: ... without failing at its commit (" . sprintf('%.2f', $took) . ' s)');
	}
	is($node->safe_psql('postgres', 'SELECT tables_open FROM fastckpt_stat_recovery'),
		'f', "$how: the view says the tables are not open yet");

	# a patient query waits for recovery and sees everything
	is($node->safe_psql('postgres',
			q{SET pg_fastckpt.recovery_wait_timeout = '60s'; SELECT count(*) || '/' || sum(v) FROM t}),
		'1000/500500', "$how: a query that waits sees every row");
	is($node->safe_psql('postgres', 'SELECT tables_open FROM fastckpt_stat_recovery'),
		't', "$how: then the tables are open");
}

# A shutdown while recovery runs: the workers it stops leave their work
# undone, which must not be taken for a damaged checkpoint (falling back to
# an older one, or giving up and keeping the tables closed), and the
# recovery leader must leave so that the shutdown completes.  A checkpoint
# loader pauses (test pause point "load") so that the shutdown surely
# comes while it is loading.
$node->safe_psql('postgres', 'SELECT fastckpt_checkpoint(true)');
$node->append_conf('postgresql.conf', q{
pg_fastckpt.test_checkpoint_pause = 'load'
pg_fastckpt.test_checkpoint_pause_ms = 30000
});
my $log_offset = -s $node->logfile;
$node->restart;
$node->wait_for_log(qr/test pause at checkpoint point "load"/, $log_offset);
my $t0 = time();
$node->stop('fast');
my $took = time() - $t0;
ok($took < 15, sprintf('a fast shutdown during checkpoint loading completes (%.1f s)', $took));
my $log = slurp_file($node->logfile, $log_offset);
like($log, qr/startup recovery stopped by a shutdown or termination request/,
	'the recovery leader says it stopped for the shutdown');
unlike($log, qr/cannot be used|startup recovery failed/,
	'the stopped loader is not taken for a damaged checkpoint');

$node->append_conf('postgresql.conf', q{
pg_fastckpt.test_checkpoint_pause = 'none'
});
$node->start;
is($node->safe_psql('postgres',
		q{SET pg_fastckpt.recovery_wait_timeout = '60s'; SELECT count(*) || '/' || sum(v) FROM t}),
	'1000/500500', 'the next start recovers every row');
is($node->safe_psql('postgres',
		'SELECT checkpoint_seq IS NOT NULL AND NOT checkpoint_fallback FROM fastckpt_stat_recovery'),
	't', 'from the newest checkpoint, with no fallback');

# Sessions that lock fastckpt tables while recovery has not opened them:
# a writer (its table locked before it waits at the gate), DROP TABLE,
# LOCK TABLE, and a prepared transaction holding a writer's lock across
# the restart.  The index rebuild must not wait for their locks while
# they wait for it: each completes once recovery opens the tables, well
# before its wait would time out.  Recovery pauses before the rebuild, so
# the sessions surely lock first.
$node->append_conf('postgresql.conf', q{
pg_fastckpt.test_recovery_delay = 0
max_prepared_transactions = 2
});
$node->restart;
$node->safe_psql('postgres', q{
CREATE TABLE late (id int PRIMARY KEY, v int) USING fastckpt;
INSERT INTO late VALUES (1, 1);
CREATE TABLE doomed (id int PRIMARY KEY) USING fastckpt;
CREATE TABLE locked (id int PRIMARY KEY) USING fastckpt;
CREATE TABLE plain (id int);
BEGIN;
UPDATE late SET v = v WHERE id = 99;
INSERT INTO plain VALUES (1);
PREPARE TRANSACTION 'holds_late';
});
$node->append_conf('postgresql.conf', q{
pg_fastckpt.test_checkpoint_pause = 'rebuild'
pg_fastckpt.test_checkpoint_pause_ms = 3000
});
$log_offset = -s $node->logfile;
$node->restart;
$node->wait_for_log(qr/test pause at checkpoint point "rebuild"/, $log_offset);
my %stmt = (
	'an UPDATE' => 'UPDATE late SET v = v + 1',
	'DROP TABLE' => 'DROP TABLE doomed',
	'LOCK TABLE, then a read' =>
	  'BEGIN; LOCK TABLE locked IN ACCESS EXCLUSIVE MODE; SELECT count(*) FROM locked; COMMIT');
# a psql session running $sql in the background: { h, out, err }
sub start_session
{
	my ($sql, $timeout, @opts) = @_;
	my ($out, $err) = ('', '');
	return {
		out => \$out,
		err => \$err,
		h => IPC::Run::start(
			[ 'psql', '-X', '-d', $node->connstr('postgres'), @opts,
			  '-c', "SET pg_fastckpt.recovery_wait_timeout = '$timeout'", '-c', $sql ],
			'>', \$out, '2>', \$err) };
}
my %run;
$run{$_} = start_session($stmt{$_}, '30s', '-v', 'ON_ERROR_STOP=1') for sort keys %stmt;
$t0 = time();
for my $what (sort keys %stmt)
{
	my $ok = $run{$what}{h}->finish;
	ok($ok && ${ $run{$what}{err} } !~ /ERROR/, "$what issued during recovery succeeds")
	  or diag(${ $run{$what}{err} });
}
$took = time() - $t0;
ok($took < 25, sprintf('... without waiting out its timeout (%.1f s)', $took));
is($node->safe_psql('postgres', q{SELECT v FROM late WHERE id = 1}), '2',
	'the UPDATE is there');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_class WHERE relname = 'doomed'}),
	'0', 'the table is dropped');
$node->safe_psql('postgres', q{ROLLBACK PREPARED 'holds_late'});
$node->append_conf('postgresql.conf', q{
pg_fastckpt.test_checkpoint_pause = 'none'
});

# CREATE INDEX while recovery is still loading the table: its wait before
# it takes its lock ends quietly at the timeout, and the build must not
# then read the table half loaded (the index would miss rows for good,
# recovery's rebuild never seeing it): it fails, saying why.  So does
# LOCK TABLE.
$node->safe_psql('postgres', q{
CREATE TABLE ci (id int PRIMARY KEY, v int) USING fastckpt;
INSERT INTO ci SELECT g, g FROM generate_series(1, 1000) g;
SELECT fastckpt_checkpoint();
INSERT INTO ci SELECT g, g FROM generate_series(1001, 2000) g;
CREATE TABLE ci_gone (id int) USING fastckpt;
CREATE TABLE ci_parent (id int) PARTITION BY RANGE (id);
CREATE TABLE ci_part PARTITION OF ci_parent FOR VALUES FROM (0) TO (100) USING fastckpt;
CREATE TABLE ci_heap (id int);
CREATE FUNCTION ci_trigger() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RETURN NEW; END';
});
crash_and_pause('load', 8000);
my ($ret, $out, $err) = $node->psql('postgres',
	q{SET pg_fastckpt.recovery_wait_timeout = '1s'; CREATE INDEX ci_v ON ci (v)});
isnt($ret, 0, 'CREATE INDEX while recovery loads the table fails once its wait times out');
like($err, qr/fastckpt table "ci" is not available yet: recovery in progress/,
	'... saying that recovery is in progress');
# nor may a LOCK TABLE hold the table (and recovery's index rebuild, which
# locks it) for as long as its transaction lasts
($ret, $out, $err) = $node->psql('postgres',
	q{SET pg_fastckpt.recovery_wait_timeout = '1s'; BEGIN; LOCK TABLE ci IN ACCESS EXCLUSIVE MODE; SELECT 'locked'});
unlike($out, qr/locked/, 'LOCK TABLE while recovery loads the table fails once its wait times out');
like($err, qr/fastckpt table "ci" is not available yet: recovery in progress/,
	'... saying that recovery is in progress');
# so may no other statement that leaves its transaction holding a lock
# recovery needs; DDL of heap tables goes ahead
my %held = (
	'ALTER TABLE ... ADD COLUMN' => [ 'ALTER TABLE ci ADD COLUMN w int', qr/fastckpt table "ci"/ ],
	'CREATE TRIGGER' => [ 'CREATE TRIGGER ci_t BEFORE INSERT ON ci FOR EACH ROW EXECUTE FUNCTION ci_trigger()',
		qr/fastckpt table "ci"/ ],
	'DROP TABLE' => [ 'DROP TABLE ci_gone', qr/fastckpt table dropped in this transaction/ ],
	'LOCK TABLE of a partitioned table' => [ 'LOCK TABLE ci_parent', qr/fastckpt table "ci_part"/ ]);
for my $what (sort keys %held)
{
	($ret, $out, $err) = $node->psql('postgres',
		qq{SET pg_fastckpt.recovery_wait_timeout = '200ms'; BEGIN; $held{$what}[0]; SELECT 'went ahead'});
	unlike($out, qr/went ahead/, "$what in a transaction while recovery loads the table fails");
	like($err, qr/$held{$what}[1].* not available yet: recovery in progress/,
		'... saying that recovery is in progress');
}
($ret, $out, $err) = $node->psql('postgres',
	q{SET pg_fastckpt.recovery_wait_timeout = '200ms'; BEGIN; ALTER TABLE ci_heap ADD COLUMN w int; SELECT 'went ahead'; COMMIT});
like($out, qr/went ahead/, 'ALTER TABLE of a heap table meanwhile goes ahead');
is($node->safe_psql('postgres', q{SELECT tables_open FROM fastckpt_stat_recovery}), 'f',
	'... and recovery was still running');
wait_for_tables_open($node);
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_attribute WHERE attrelid = 'ci'::regclass AND attname = 'w'}),
	'0', 'the refused ALTER TABLE left no column');
is($node->safe_psql('postgres', q{SELECT count(*) FROM ci_gone}), '0', 'nor dropped the table');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_class WHERE relname = 'ci_v'}),
	'0', 'no index is left of it');
$node->safe_psql('postgres', 'CREATE INDEX ci_v ON ci (v)');
is($node->safe_psql('postgres', q{SET enable_seqscan = off; SET enable_bitmapscan = off;
	SELECT count(*) FROM ci WHERE v BETWEEN 1 AND 2000}),
	'2000', 'built once the table is open, the index has every row');
$node->append_conf('postgresql.conf', q{
pg_fastckpt.test_checkpoint_pause = 'none'
});

# Snapshots taken while recovery replays calls.  Each replayed call commits
# as a transaction of its own, so a snapshot taken before the last of them
# would read the tables half replayed once the gate opens: a REPEATABLE
# READ transaction's, taken at its first statement before it waits at the
# gate, or taken by a read of a heap table before it reads a fastckpt one
# without waiting.  Both must fail as serialization failures; a READ
# COMMITTED query that waited sees every call.  The waiters' snapshots
# must not keep the old versions that replay's in-place updates leave
# either: with the arena nearly full, recovery ran out of memory.
my $ncalls = 2000;
$node->safe_psql('postgres', q{
CREATE TABLE acct (id int PRIMARY KEY, n int) USING fastckpt;
INSERT INTO acct SELECT g, 0 FROM generate_series(1, 10) g;
CREATE TABLE seen (id int);
INSERT INTO seen VALUES (1);
CREATE FUNCTION bump(k int) RETURNS void LANGUAGE sql
  AS 'UPDATE acct SET n = n + 1 WHERE id = k % 10 + 1';
CREATE VIEW acct_v AS SELECT * FROM acct;
CREATE MATERIALIZED VIEW acct_mv USING heap AS SELECT sum(n) AS s FROM acct;
SELECT fastckpt_register_procedure('bump(int)');
});
# what a statement reads besides the tables it names: a row-level security
# policy (for a role it applies to), a view found through a search_path
# that changed since PREPARE
$node->safe_psql('postgres', qq{
CREATE ROLE alice;
CREATE TABLE pub (id int);
INSERT INTO pub VALUES (1);
ALTER TABLE pub ENABLE ROW LEVEL SECURITY;
CREATE POLICY pub_sum ON pub USING ((SELECT sum(n) FROM acct) = $ncalls);
GRANT SELECT ON pub, acct, acct_mv TO alice;
GRANT CREATE ON SCHEMA public TO alice;
SET ROLE alice;
CREATE MATERIALIZED VIEW pub_mv USING heap AS SELECT * FROM pub;
RESET ROLE;
CREATE SCHEMA s_heap;
CREATE TABLE s_heap.t (n int);
INSERT INTO s_heap.t VALUES (-1);
CREATE SCHEMA s_fc;
CREATE VIEW s_fc.t AS SELECT n FROM acct;
SELECT fastckpt_checkpoint();
});
# a database where recovery replays no call: its tables are whole for any
# snapshot, even one taken while another database's calls were replayed
$node->safe_psql('postgres', q{CREATE DATABASE other});
$node->safe_psql('other', q{
CREATE EXTENSION pg_fastckpt;
CREATE TABLE other_fc (id int PRIMARY KEY) USING fastckpt;
INSERT INTO other_fc SELECT generate_series(1, 7);
CREATE TABLE other_heap (id int);
INSERT INTO other_heap VALUES (1);
});
$node->safe_psql('postgres', join('', map { "SELECT bump($_);\n" } 1 .. $ncalls));
is($node->safe_psql('postgres', q{SELECT sum(n) FROM acct}), $ncalls, "$ncalls calls");
crash_and_pause('rebuild', 3000);
my %snap = (
	'a REPEATABLE READ transaction that waited' => q{
		BEGIN ISOLATION LEVEL REPEATABLE READ;
		SELECT count(*) FROM seen;
		SELECT 'sum=' || sum(n) FROM acct;
		COMMIT},
	'a REPEATABLE READ transaction that read only heap during recovery' => q{
		BEGIN ISOLATION LEVEL REPEATABLE READ;
		SELECT count(*) FROM seen;
		DO $$BEGIN
		  WHILE NOT (SELECT tables_open FROM fastckpt_stat_recovery) LOOP
		    PERFORM pg_sleep(0.05);
		  END LOOP;
		END$$;
		SELECT 'sum=' || sum(n) FROM acct;
		COMMIT},
	'a READ COMMITTED query that waited' => q{SELECT 'sum=' || sum(n) FROM acct});
# READ COMMITTED statements that take their snapshot before they plan, or
# never plan: they wait at parse analysis instead, and see every call
my $per_row = $ncalls / 10;
my %rc = (
	'EXECUTE' => [ q{PREPARE q AS SELECT 'sum=' || sum(n) FROM acct; EXECUTE q}, qr/sum=$ncalls\b/ ],
	'DECLARE CURSOR over a view' => [
		q{BEGIN; DECLARE c CURSOR FOR SELECT 'sum=' || sum(n) FROM acct_v; FETCH c; COMMIT},
		qr/sum=$ncalls\b/ ],
	'CREATE TABLE AS' => [
		q{CREATE TEMP TABLE tmp_sum AS SELECT sum(n) AS s FROM acct; SELECT 'sum=' || s FROM tmp_sum},
		qr/sum=$ncalls\b/ ],
	'COPY ... TO' => [ q{COPY acct (n) TO STDOUT}, qr/\A(?:$per_row\n){10}\z/ ],
	'COPY (query) TO' => [ q{COPY (SELECT 'sum=' || sum(n) FROM acct) TO STDOUT}, qr/sum=$ncalls\b/ ],
	'REFRESH MATERIALIZED VIEW' => [
		q{REFRESH MATERIALIZED VIEW acct_mv; SELECT 'sum=' || s FROM acct_mv}, qr/sum=$ncalls\b/ ],
	'EXPLAIN ANALYZE' => [
		q{EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT sum(n) FROM acct},
		qr/actual rows=1 loops=1/ ],
	'DECLARE CURSOR over a table whose policy reads a fastckpt table' => [
		q{SET ROLE alice; BEGIN; DECLARE c CURSOR FOR SELECT 'rows=' || count(*) FROM pub; FETCH c; COMMIT},
		qr/rows=1\b/ ],
	'REFRESH MATERIALIZED VIEW over a table whose policy reads a fastckpt table' => [
		q{SET ROLE alice; REFRESH MATERIALIZED VIEW pub_mv; SELECT 'rows=' || count(*) FROM pub_mv},
		qr/rows=1\b/ ],
	'COPY ... TO of a table whose policy reads a fastckpt table' => [
		q{SET ROLE alice; COPY pub TO STDOUT}, qr/^1$/m ],
	'EXECUTE of a statement prepared under another search_path' => [
		q{SET search_path = s_heap; PREPARE q2 AS SELECT 'sum=' || sum(n) FROM t;
		  SET search_path = s_fc, public; EXECUTE q2}, qr/sum=$ncalls\b/ ],
	# no fastckpt table read, so no wait for recovery
	'COPY (query) TO of no fastckpt table' => [
		q{COPY (SELECT 'open=' || tables_open FROM fastckpt_stat_recovery) TO STDOUT},
		qr/open=false\b/ ],
	# refused at once, as without recovery, and not blocking readers
	'REFRESH MATERIALIZED VIEW by a role that does not own it' => [
		q{DO $$BEGIN
		    SET ROLE alice;
		    BEGIN
		      REFRESH MATERIALIZED VIEW acct_mv;
		    EXCEPTION WHEN insufficient_privilege THEN
		      RESET ROLE;
		      RAISE NOTICE 'refused: %, open=%', SQLERRM,
		        (SELECT tables_open FROM fastckpt_stat_recovery);
		    END;
		  END$$;
		  SELECT 'locks=' || count(*) FROM pg_locks
		   WHERE relation = 'acct_mv'::regclass AND pid = pg_backend_pid()},
		qr/locks=0\b/ ]);
$snap{"READ COMMITTED $_"} = $rc{$_}[0] for keys %rc;
$run{$_} = start_session($snap{$_}, '60s', '-At') for sort keys %snap;
my $other_rr = q{
		BEGIN ISOLATION LEVEL REPEATABLE READ;
		SELECT count(*) FROM other_heap;
		DO $$BEGIN
		  WHILE NOT (SELECT tables_open FROM fastckpt_stat_recovery) LOOP
		    PERFORM pg_sleep(0.05);
		  END LOOP;
		END$$;
		SELECT 'rows=' || count(*) FROM other_fc;
		COMMIT};
$run{other} = start_session($other_rr, '60s', '-At', '-d', $node->connstr('other'));
# all but three wait at the gate (two read no fastckpt table, one loops on
# a heap table): seen waiting before the tables open, or nothing was tested
my $gate_waiters = scalar(keys %snap) - 3;
ok( $node->poll_query_until('postgres', qq{
SELECT count(*) >= $gate_waiters FROM pg_stat_activity
 WHERE backend_type = 'client backend' AND wait_event_type = 'Extension'}),
	"$gate_waiters sessions wait at the gate");
is($node->safe_psql('postgres', q{SELECT tables_open FROM fastckpt_stat_recovery}),
	'f', '... while recovery still runs');
$run{$_}{h}->finish for keys %snap;
$run{other}{h}->finish;
is($node->safe_psql('postgres', q{SELECT calls_replayed FROM fastckpt_stat_recovery}),
	$ncalls, 'recovery replayed every call');
like(${ $run{other}{out} }, qr/^rows=7$/m,
	'a REPEATABLE READ transaction of another database, whose snapshot predates the calls replayed, reads its own tables')
  or diag(${ $run{other}{err} });
for my $what (grep { /REPEATABLE READ/ } sort keys %snap)
{
	unlike(${ $run{$what}{out} }, qr/sum=/, "$what reads nothing half replayed")
	  or diag(${ $run{$what}{out} });
	like(${ $run{$what}{err} },
		qr/could not serialize access to fastckpt table "acct": startup recovery restored it after this transaction's snapshot was taken/,
		'... it fails as a serialization failure');
}
like(${ $run{'a READ COMMITTED query that waited'}{out} }, qr/sum=$ncalls\b/,
	'a READ COMMITTED query that waited sees every replayed call');
like(${ $run{'READ COMMITTED REFRESH MATERIALIZED VIEW by a role that does not own it'}{err} },
	qr/refused: must be owner of materialized view acct_mv, open=f/,
	'a REFRESH by a role that does not own the matview fails at once, with PostgreSQL\'s error');
for my $what (sort keys %rc)
{
	(my $out = ${ $run{"READ COMMITTED $what"}{out} }) =~ s/\ASET\n//;
	like($out, $rc{$what}[1], "READ COMMITTED $what issued during recovery answers as it should")
	  or diag(${ $run{"READ COMMITTED $what"}{err} });
}
cmp_ok($node->safe_psql('postgres', q{SELECT undo_records FROM fastckpt_stat_tables WHERE relation = 'acct'::regclass}),
	'<', $ncalls / 10, 'the waiters did not keep the old versions that replay left behind');
is($node->safe_psql('postgres', q{
	BEGIN ISOLATION LEVEL REPEATABLE READ;
	SELECT sum(n) FROM acct;
	COMMIT}), $ncalls, 'a REPEATABLE READ transaction begun after recovery sees every call');
$node->append_conf('postgresql.conf', q{
pg_fastckpt.test_checkpoint_pause = 'none'
});

$node->stop;
done_testing();
