# Restart behaviour: after a clean restart, a kill -9 of the postmaster and
# the crash-restart cycle after a backend is killed, every committed row of
# every fastckpt table comes back from the log -- inserts, in-place and
# moving updates, deletes, TRUNCATE, DROP, table rewrites -- rolled-back
# work does not, and the rebuilt indexes (B-tree, hash, BRIN) find exactly
# the rows.  A table
# whose slots were sized with pg_fastckpt.bytes_per_char keeps that size.
# Serial and identity sequences of fastckpt tables are logged, so a crash
# does not make them hand out values the recovered rows hold, also when
# the WAL record covering a value came from a rolled-back transaction.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use FastckptTest;

my $node = fastckpt_node('restart');

$node->safe_psql('postgres', q{
CREATE TABLE kv (id int PRIMARY KEY, v text, n int) USING fastckpt;
CREATE INDEX kv_v ON kv USING hash (v);
CREATE INDEX kv_n ON kv (n);
CREATE INDEX kv_v_brin ON kv USING brin (v) WITH (pages_per_range = 1);
CREATE TABLE trunc (id int PRIMARY KEY) USING fastckpt;
CREATE TABLE gone (id int) USING fastckpt;
CREATE TABLE rewritten (id int PRIMARY KEY, x int) USING fastckpt;
});

# Content fingerprints: the whole table by seqscan, and by index lookups.
my $fingerprint = q{
SELECT (SELECT md5(coalesce(string_agg(id || ':' || v || ':' || n, ',' ORDER BY id), ''))
		  FROM kv) ||
	   (SELECT ' trunc=' || count(*) || '/' || coalesce(sum(id), 0) FROM trunc) ||
	   (SELECT ' rewritten=' || md5(coalesce(string_agg(id || ':' || x, ',' ORDER BY id), ''))
		  FROM rewritten)};

# A table sized for one byte per character in a UTF8 database, next to
# one of the default size: recovery must give it the size it was created
# with, not what the setting says at restart.
$node->safe_psql('postgres',
	q{CREATE DATABASE u8 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0});
$node->safe_psql('u8', q{
CREATE EXTENSION pg_fastckpt;
SET pg_fastckpt.bytes_per_char = 1;
CREATE TABLE narrow (id int PRIMARY KEY, code char(10)) USING fastckpt;
RESET pg_fastckpt.bytes_per_char;
CREATE TABLE wide (id int PRIMARY KEY, code char(10)) USING fastckpt;
});
my $sizes = q{
SELECT string_agg(relation || '=' || row_image_bytes, ' ' ORDER BY relation::text)
  FROM fastckpt_stat_tables};
my $created_sizes = $node->safe_psql('u8', $sizes);
is($created_sizes, 'narrow=48 wide=72',
	'bytes_per_char = 1 sized the narrow table for one byte a character');
my $narrow_fingerprint = q{
SELECT md5(coalesce(string_agg(id || ':' || code, ',' ORDER BY id), '')) FROM narrow};

my $round = 0;

# One round of work of every kind, some of it rolled back.
sub workload
{
	$round++;
	my $base = $round * 1000;
	$node->safe_psql('postgres', qq{
INSERT INTO kv SELECT g, 'v' || g, g % 7 FROM generate_series($base + 1, $base + 300) g;
UPDATE kv SET v = v || '+' WHERE id % 5 = 0 AND id > $base;
UPDATE kv SET n = n + 100 WHERE id % 11 = 0 AND id > $base;
DELETE FROM kv WHERE id % 13 = 0 AND id > $base;
BEGIN; INSERT INTO kv VALUES ($base + 999, 'rolled back', 0); ROLLBACK;
BEGIN;
UPDATE kv SET v = 'kept' WHERE id = $base + 1;
SAVEPOINT s; DELETE FROM kv WHERE id = $base + 2; ROLLBACK TO s;
COMMIT;
TRUNCATE trunc;
INSERT INTO trunc SELECT generate_series(1, $round * 10);
INSERT INTO rewritten SELECT g, g FROM generate_series($base + 1, $base + 50) g;
});
	$node->safe_psql('u8', qq{
INSERT INTO narrow SELECT g, 'c' || g FROM generate_series($base + 1, $base + 100) g;
UPDATE narrow SET code = 'u' || id WHERE id % 3 = 0 AND id > $base;
});
	# a table rewrite: the new storage is logged whole
	$node->safe_psql('postgres',
		$round % 2
		? 'ALTER TABLE rewritten ALTER COLUMN x TYPE bigint'
		: 'ALTER TABLE rewritten ALTER COLUMN x TYPE int');
	return $node->safe_psql('postgres', $fingerprint) . ' '
	  . $node->safe_psql('u8', $narrow_fingerprint);
}

# After a restart: same content, indexes agree with the table, writes work.
sub check_after_restart
{
	my ($how, $expected) = @_;

	is( $node->safe_psql('postgres', $fingerprint) . ' '
		  . $node->safe_psql('u8', $narrow_fingerprint),
		$expected, "$how: every committed change came back, nothing else");
	is($node->safe_psql('u8', $sizes), $created_sizes,
		"$how: tables keep the slot size they were created with");
	is( $node->safe_psql('postgres', q{
		SET enable_seqscan = off; SET enable_bitmapscan = off;
		SELECT count(*) FROM kv k WHERE EXISTS
		  (SELECT 1 FROM kv k2 WHERE k2.id = k.id AND k2.v = k.v)}),
		$node->safe_psql('postgres', 'SELECT count(*) FROM kv'),
		"$how: btree and hash indexes find every row");
	is( $node->safe_psql('postgres', q{
		SET enable_seqscan = off;
		SELECT count(*) FROM kv WHERE n >= 100}),
		$node->safe_psql('postgres', q{
		SET enable_indexscan = off; SET enable_bitmapscan = off;
		SELECT count(*) FROM kv WHERE n >= 100}),
		"$how: index on a moved column agrees with a seqscan");
	# no other index serves a range of v: the rebuilt BRIN index must
	my $v_range = q{SELECT count(*) || '/' || coalesce(sum(id), 0) FROM kv WHERE v BETWEEN 'v2' AND 'v4'};
	like($node->safe_psql('postgres', "SET enable_seqscan = off; EXPLAIN $v_range"),
		qr/Bitmap Index Scan on kv_v_brin/, "$how: the BRIN index serves ranges of v");
	is($node->safe_psql('postgres', "SET enable_seqscan = off; $v_range"),
		$node->safe_psql('postgres', "SET enable_bitmapscan = off; $v_range"),
		"$how: the rebuilt BRIN index finds every row a seqscan finds");
	is($node->safe_psql('postgres', q{SELECT count(*) FROM kv WHERE v = 'rolled back'}),
		'0', "$how: rolled-back insert stayed out");
	is($node->safe_psql('postgres', q{SELECT tables_open FROM fastckpt_stat_recovery}),
		't', "$how: recovery finished and opened the tables");
	# a clean stop writes a checkpoint, a crash leaves rows in the log
	ok($node->safe_psql('postgres', q{SELECT rows_applied + load_rows FROM fastckpt_stat_recovery}) > 0,
		"$how: recovery restored rows from the checkpoint or the log");
	return;
}

my $expected = workload();
$node->safe_psql('postgres', q{INSERT INTO gone VALUES (1); DROP TABLE gone});
$node->restart;
wait_for_tables_open($node);
check_after_restart('clean restart', $expected);

$expected = workload();
crash_postmaster($node);
$node->start;
wait_for_tables_open($node);
check_after_restart('postmaster killed', $expected);

# A backend killed with SIGKILL makes the postmaster reinitialize shared
# memory; recovery must run again in the same postmaster.  Wait for the
# reinitialization before polling: until the postmaster has reaped the
# backend, the old shared memory still says the tables are open.
$expected = workload();
my $bg = $node->background_psql('postgres');
my $victim = $bg->query_safe('SELECT pg_backend_pid()');
my $log_offset = -s $node->logfile;
kill 'KILL', $victim;
$node->wait_for_log(qr/all server processes terminated; reinitializing/,
	$log_offset);
$bg->quit;
wait_for_tables_open($node);
check_after_restart('backend killed', $expected);

# Twice more through the same log: replay is repeatable.
crash_postmaster($node);
$node->start;
wait_for_tables_open($node);
check_after_restart('second crash, nothing new', $expected);

# A slot freed by DELETE + VACUUM and reused survives too.
$node->safe_psql('postgres', q{
DELETE FROM kv WHERE id <= 1100;
VACUUM kv;
INSERT INTO kv SELECT g, 'reused' || g, 1 FROM generate_series(50001, 50100) g;
});
$expected = $node->safe_psql('postgres', $fingerprint) . ' '
  . $node->safe_psql('u8', $narrow_fingerprint);
crash_postmaster($node);
$node->start;
wait_for_tables_open($node);
check_after_restart('slots reused after VACUUM', $expected);

# serial and identity sequences of fastckpt tables survive a crash: the
# next value is past every recovered row, also for a table converted from
# heap and for a column added later
$node->safe_psql('postgres', q{
CREATE TABLE seq_serial (id serial PRIMARY KEY, v int) USING fastckpt;
CREATE TABLE seq_identity (id int GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, v int) USING fastckpt;
CREATE TABLE seq_converted (id serial PRIMARY KEY, v int) USING heap;
INSERT INTO seq_converted (v) VALUES (0), (0);
ALTER TABLE seq_converted SET ACCESS METHOD fastckpt;
CREATE TABLE seq_added (v int) USING fastckpt;
ALTER TABLE seq_added ADD COLUMN id bigserial;
INSERT INTO seq_serial (v) SELECT g FROM generate_series(1, 5) g;
INSERT INTO seq_identity (v) SELECT g FROM generate_series(1, 5) g;
INSERT INTO seq_converted (v) SELECT g FROM generate_series(1, 5) g;
INSERT INTO seq_added (v) SELECT g FROM generate_series(1, 5) g;
});
is($node->safe_psql('postgres', q{
	SELECT string_agg(c.relname || ':' || c.relpersistence::text, ' ' ORDER BY c.relname)
	  FROM pg_class c WHERE c.relkind = 'S' AND c.relname LIKE 'seq_%'}),
	'seq_added_id_seq:p seq_converted_id_seq:p seq_identity_id_seq:p seq_serial_id_seq:p',
	'the sequences of fastckpt tables are logged');
crash_postmaster($node);
$node->start;
wait_for_tables_open($node);
$node->safe_psql('postgres', q{
INSERT INTO seq_serial (v) VALUES (6);
INSERT INTO seq_identity (v) VALUES (6);
INSERT INTO seq_converted (v) VALUES (6);
INSERT INTO seq_added (v) VALUES (6);
});
is($node->safe_psql('postgres', q{
	SELECT (SELECT count(DISTINCT id) || '/' || count(*) FROM seq_serial) || ' ' ||
	       (SELECT count(DISTINCT id) || '/' || count(*) FROM seq_identity) || ' ' ||
	       (SELECT count(DISTINCT id) || '/' || count(*) FROM seq_converted) || ' ' ||
	       (SELECT count(DISTINCT id) || '/' || count(*) FROM seq_added)}),
	'6/6 6/6 8/8 6/6',
	'after a crash, new rows take sequence values no recovered row holds');

# ... also when the WAL record that covers a committed row's value came
# from a transaction that rolled back (nextval logs 32 values ahead), and
# the commit wrote no WAL itself: it flushes that record before it is
# acknowledged, as a heap commit's own commit record would.  That holds
# for every way of taking a value: a sequence a column default names but
# no table owns, the identity sequence of a partitioned table above a
# fastckpt partition, nextval() of an unrelated sequence in the statement
# or in a PL/pgSQL assignment, and a value fetched by an earlier
# transaction of the session, then inserted.
$node->safe_psql('postgres', q{
CREATE TABLE seq_after_abort (id serial PRIMARY KEY, v text) USING fastckpt;
CREATE SEQUENCE seq_shared;
CREATE TABLE seq_by_default (id bigint DEFAULT nextval('seq_shared') PRIMARY KEY, v text)
  USING fastckpt;
CREATE TABLE seq_partitioned (id int GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, v text)
  PARTITION BY RANGE (id);
CREATE TABLE seq_partition PARTITION OF seq_partitioned
  FOR VALUES FROM (MINVALUE) TO (MAXVALUE) USING fastckpt;
CREATE SEQUENCE seq_unowned;
CREATE TABLE seq_explicit (id bigint PRIMARY KEY, v text) USING fastckpt;
CREATE SEQUENCE seq_plpgsql;
CREATE TABLE seq_assigned (id bigint PRIMARY KEY, v text) USING fastckpt;
CREATE FUNCTION seq_assign_insert(v text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
	id bigint;
BEGIN
	id := nextval('seq_plpgsql');
	INSERT INTO seq_assigned VALUES (id, v);
	RETURN id;
END $$;
CREATE SEQUENCE seq_fetched;
CREATE TABLE seq_fetched_first (id bigint PRIMARY KEY, v text) USING fastckpt});
my %seq_insert = (
	seq_after_abort => "INSERT INTO seq_after_abort (v) VALUES ('%s') RETURNING id",
	seq_by_default => "INSERT INTO seq_by_default (v) VALUES ('%s') RETURNING id",
	seq_partitioned => "INSERT INTO seq_partitioned (v) VALUES ('%s') RETURNING id",
	seq_explicit =>
	  "INSERT INTO seq_explicit VALUES (nextval('seq_unowned'), '%s') RETURNING id",
	seq_assigned => "SELECT seq_assign_insert('%s')",
	seq_fetched_first => "SELECT nextval('seq_fetched') AS id \\gset\n"
	  . "INSERT INTO seq_fetched_first VALUES (:id, '%s') RETURNING id");
my @seq_cases = (
	[ 'seq_after_abort', 'seq_after_abort_id_seq' ], [ 'seq_by_default', 'seq_shared' ],
	[ 'seq_partitioned', 'seq_partitioned_id_seq' ], [ 'seq_explicit', 'seq_unowned' ],
	[ 'seq_assigned', 'seq_plpgsql' ], [ 'seq_fetched_first', 'seq_fetched' ]);
for my $round (1 .. 3)
{
	for my $t (@seq_cases)
	{
		my ($table, $seq) = @$t;
		$node->safe_psql('postgres', "BEGIN; SELECT nextval('$seq'); ROLLBACK");
		my $id = $node->safe_psql('postgres',
			sprintf($seq_insert{$table}, "committed $round"));
		crash_postmaster($node);
		$node->start;
		wait_for_tables_open($node);
		my ($ret, $out, $err) = $node->psql('postgres',
			sprintf($seq_insert{$table}, "after $round"));
		is($ret, 0, "$table, round $round: an insert after the crash succeeds") or diag($err);
		cmp_ok($out || 0, '>', $id,
			"$table, round $round: it takes a value past the committed row's ($id), which recovery kept");
	}
}
is($node->safe_psql('postgres',
	'SELECT ' . join(' AND ', map { "(SELECT count(*) = count(DISTINCT id) FROM $_->[0])" } @seq_cases)),
	't', 'no sequence value is held twice');

# ... and when a transaction of the session took the value and rolled back,
# and the next one stores it (a retry): the rolled-back one logged the
# sequence ahead (the first nextval() after a checkpoint does), and its
# abort record was not flushed.
$node->safe_psql('postgres', q{CREATE SEQUENCE seq_retry;
CREATE TABLE seq_retried (id bigint PRIMARY KEY, v text) USING fastckpt});
# round 4's rollback also held 70 other tables: past the number of
# relations a session keeps, all the WAL before the rollback is flushed
my $many = join(', ', map { "seq_many_$_" } 1 .. 70);
$node->safe_psql('postgres',
	join('', map { "CREATE TABLE seq_many_$_ (n int);" } 1 .. 70));
for my $round (1 .. 4)
{
	my $lock_many = $round == 4 ? "LOCK TABLE $many IN ROW EXCLUSIVE MODE;" : '';
	my $id = $node->safe_psql('postgres', "CHECKPOINT;
		BEGIN;
		SELECT nextval('seq_retry') AS id \\gset
		$lock_many
		ROLLBACK;
		INSERT INTO seq_retried VALUES (:id, 'retried $round') RETURNING id");
	crash_postmaster($node);
	$node->start;
	wait_for_tables_open($node);
	my ($ret, $out, $err) = $node->psql('postgres',
		"INSERT INTO seq_retried VALUES (nextval('seq_retry'), 'after $round') RETURNING id");
	is($ret, 0, "value of a rolled-back transaction stored by the next, round $round: an insert after the crash succeeds")
	  or diag($err);
	cmp_ok($out || 0, '>', $id, "... it takes a value past the stored one ($id)");
}

# The way back to an ordinary table: SET ACCESS METHOD heap, then SET
# LOGGED, which made the serial and identity sequences logged keeping
# their count of values logged ahead; values taken after it were handed
# out again after a crash.
$node->safe_psql('postgres', q{
CREATE TABLE seq_back (id serial PRIMARY KEY, n int GENERATED ALWAYS AS IDENTITY UNIQUE)
  USING fastckpt;
INSERT INTO seq_back SELECT FROM generate_series(1, 10);
ALTER TABLE seq_back SET ACCESS METHOD heap;
INSERT INTO seq_back SELECT FROM generate_series(1, 5);
ALTER TABLE seq_back SET LOGGED;
INSERT INTO seq_back DEFAULT VALUES;
});
crash_postmaster($node);
$node->start;
wait_for_tables_open($node);
my ($back_ret, $back_out, $back_err) = $node->psql('postgres',
	q{INSERT INTO seq_back DEFAULT VALUES RETURNING id || ' ' || n});
is($back_ret, 0, 'after SET ACCESS METHOD heap, SET LOGGED and a crash, an insert succeeds')
  or diag($back_err);
cmp_ok((split / /, $back_out // '0 0')[0], '>', 16, '... its serial value is past the committed rows\'');
cmp_ok((split / /, $back_out // '0 0')[1], '>', 16, '... and so is its identity value');

# Indexes built concurrently.  A valid one is rebuilt like any other.  A
# unique build that met duplicates, and one still waiting for a writer
# when the server is killed, leave invalid indexes behind, as on heap:
# recovery rebuilds those without their checks, so that neither keeps the
# tables closed.
$node->safe_psql('postgres', q{
CREATE TABLE conc (id int PRIMARY KEY, k int) USING fastckpt;
INSERT INTO conc SELECT g, g % 50 FROM generate_series(1, 2000) g;
CREATE INDEX CONCURRENTLY conc_k ON conc (k);
});
my ($conc_ret, $conc_out, $conc_err) = $node->psql('postgres',
	'CREATE UNIQUE INDEX CONCURRENTLY conc_k_unique ON conc (k)');
like($conc_err, qr/could not create unique index "conc_k_unique"/,
	'a concurrent unique build over duplicate keys fails');
my $conc_writer = $node->background_psql('postgres');
$conc_writer->query_safe('BEGIN');
$conc_writer->query_safe('INSERT INTO conc VALUES (5001, 7)');
my $conc_builder = $node->background_psql('postgres', on_error_stop => 0);
$conc_builder->query_until(qr/building/, q{\echo building
CREATE UNIQUE INDEX CONCURRENTLY conc_id_k ON conc (id, k);
});
$node->poll_query_until('postgres', q{
SELECT count(*) > 0 FROM pg_stat_activity
 WHERE query LIKE 'CREATE UNIQUE INDEX CONCURRENTLY conc_id_k%' AND wait_event_type = 'Lock'})
  or die 'the concurrent build did not wait for the writer';
crash_postmaster($node);
# the builder's psql has ended with its connection
eval { $_->quit } for ($conc_writer, $conc_builder);
$node->start;
wait_for_tables_open($node);
is( $node->safe_psql('postgres', q{
SELECT string_agg(indexrelid::regclass || '=' || indisvalid, ' ' ORDER BY indexrelid::regclass::text)
  FROM pg_index WHERE indrelid = 'conc'::regclass}),
	'conc_id_k=false conc_k=true conc_k_unique=false conc_pkey=true',
	'after a kill -9, the tables open beside two invalid indexes left by concurrent builds');
is( $node->safe_psql('postgres', q{
SET enable_seqscan = off; SET enable_bitmapscan = off;
SELECT count(*) || '/' || sum(id) FROM conc WHERE k = 7}),
	$node->safe_psql('postgres', q{
SET enable_indexscan = off; SET enable_bitmapscan = off;
SELECT count(*) || '/' || sum(id) FROM conc WHERE k = 7}),
	'the concurrently built index finds every row after the crash');
$node->safe_psql('postgres', q{
DROP INDEX CONCURRENTLY conc_id_k;
DROP INDEX CONCURRENTLY conc_k_unique;
CREATE UNIQUE INDEX CONCURRENTLY conc_id_k ON conc (id, k);
});
is($node->safe_psql('postgres',
	q{SELECT bool_and(indisvalid) FROM pg_index WHERE indrelid = 'conc'::regclass}),
	't', 'the invalid indexes drop, and the build succeeds once the writer is gone');

# A concurrent build whose expression fails on a row (a division by zero)
# leaves an invalid index, not ready for writers, that no rebuild can fill:
# startup leaves it empty and says so.  Rows logged after logged calls are
# replayed one by one into the table's indexes: not into that one, which
# writers skip as well.  Either way the tables open.
$node->safe_psql('postgres', q{
CREATE TABLE expr (id int PRIMARY KEY, k int) USING fastckpt;
INSERT INTO expr SELECT g, g FROM generate_series(1, 100) g;
INSERT INTO expr VALUES (0, 0);
CREATE FUNCTION expr_add(p_id int) RETURNS void
  LANGUAGE sql AS 'INSERT INTO expr VALUES (p_id, p_id)';
SELECT fastckpt_register_procedure('expr_add(int)');
});
($conc_ret, $conc_out, $conc_err) = $node->psql('postgres',
	'CREATE INDEX CONCURRENTLY expr_inv ON expr ((100 / k))');
like($conc_err, qr/division by zero/, 'a concurrent build whose expression fails on a row fails');
$node->safe_psql('postgres', q{
SELECT fastckpt_checkpoint(true);
SELECT expr_add(101);
SELECT expr_add(102);
INSERT INTO expr VALUES (-1, 0);
});
is($node->safe_psql('postgres', q{
SELECT call_records FROM fastckpt_procedures WHERE routine = 'expr_add(int)'::regprocedure}),
	'2', 'calls logged after the failed build');
my $expr_offset = -s $node->logfile;
crash_postmaster($node);
$node->start;
wait_for_tables_open($node);
is($node->safe_psql('postgres', q{SELECT count(*) || '/' || sum(id) FROM expr}),
	'104/5252', 'the tables open beside the invalid index, with every row');
ok($node->log_contains('invalid index "expr_inv" could not be rebuilt at startup, and is left empty',
	$expr_offset), 'the server log says the invalid index was left empty');
$node->safe_psql('postgres', 'DROP INDEX expr_inv');

ok($node->log_contains('pg_fastckpt: startup recovery finished'),
	'recovery logged its end');
ok(!$node->log_contains('TRAP:|terminated by signal 11|PANIC'),
	'no assertion failure, segfault or PANIC in the log');
$node->stop;

# A cluster with pg_fastckpt preloaded and nothing else, started, once the
# log writer has made the given segment.
sub started_bare_node
{
	my ($name, $segment) = @_;
	my $n = fastckpt_init_node($name);
	$n->start;
	my $path = $n->data_dir . "/pg_fastckpt/log/$segment";
	for (my $i = 0; $i < 100 && !-e $path; $i++)
	{
		sleep(0.1);
	}
	return $n;
}

# Rows committed to a new table, then a kill -9: how many come back?
sub rows_after_crash
{
	my ($n, $table, $rows) = @_;
	$n->safe_psql('postgres', "CREATE EXTENSION IF NOT EXISTS pg_fastckpt");
	wait_for_tables_open($n);
	$n->safe_psql('postgres', qq{
CREATE TABLE $table (id int PRIMARY KEY) USING fastckpt;
INSERT INTO $table SELECT generate_series(1, $rows);
});
	crash_postmaster($n, 1);
	$n->start;
	wait_for_tables_open($n);
	return $n->safe_psql('postgres', "SELECT count(*) FROM $table");
}

# A new cluster killed before anything was logged or checkpointed: the log
# writer has its first segment ready, not only the one after (which read
# as a log whose beginning was lost, and kept the tables closed).
my $fresh = started_bare_node('fresh', '0000000000000000');
ok(-e $fresh->data_dir . '/pg_fastckpt/log/0000000000000000',
	'the log writer made the first segment before anything was logged');
crash_postmaster($fresh, 1);
$fresh->start;
is(rows_after_crash($fresh, 'f', 5), '5',
	'after a kill -9 before anything was logged, the tables open and keep what came after');
$fresh->stop;

# What earlier builds left in that case: a blank second segment alone, no
# checkpoint.  It opens, and the log begins anew at 0, so the next crash
# before a first checkpoint finds its beginning too.
my $legacy = started_bare_node('legacy', '0000000001000000');
my $legacy_log = $legacy->data_dir . '/pg_fastckpt/log';
crash_postmaster($legacy, 1);
unlink("$legacy_log/0000000000000000") or die "could not remove the first segment: $!";
ok(-e "$legacy_log/0000000001000000", 'only the blank second segment is left');
$legacy->start;
is(rows_after_crash($legacy, 'g', 7), '7',
	'such a log opens, and a kill -9 before the first checkpoint keeps what came after');
ok($legacy->log_contains('the log holds no record and no checkpoint was ever taken: the log begins anew'),
	'the server log says the log began anew');
$legacy->stop;

# A fastckpt table created, its creation on disk in the WAL, then rolled
# back just before a kill -9.  Crash recovery recreates the files; only the
# abort record removes them again, and without it the end of recovery
# failed copying the init fork ("File exists"): the server did not start.
# The abort is made durable at once (the WAL writer here waits 10 s).
my $rb = fastckpt_node('rollback', "wal_writer_delay = '10s'\n");
$rb->safe_psql('postgres', q{
CREATE TABLE src (id int, v text) USING fastckpt;
INSERT INTO src SELECT g, md5(g::text) FROM generate_series(1, 100) g;
});
# Run the statements in a session, make their WAL durable from another
# (a commit flushes it all), roll back, kill -9 at once; then the server
# must start, with the rows of src and without the object named.
sub crash_after_rollback
{
	my ($what, $object, @statements) = @_;
	my $session = $rb->background_psql('postgres');
	$session->query_safe($_) for (@statements[0 .. $#statements - 1]);
	$rb->safe_psql('postgres', "CREATE TABLE flushed_before_$object (a int) USING heap");
	$session->query_safe($statements[-1]);
	crash_postmaster($rb, 1);
	$session->quit;
	ok($rb->start(fail_ok => 1), "the server starts after a kill -9 right after a rolled-back $what");
	wait_for_tables_open($rb);
	is($rb->safe_psql('postgres', "SELECT count(*) || ' ' || (to_regclass('$object') IS NULL) FROM src"),
		'100 true', "$what: the rows are there, the rolled-back $object is not");
	return;
}
crash_after_rollback('CREATE TABLE', 'rolled', 'BEGIN',
	'CREATE TABLE rolled USING fastckpt AS SELECT * FROM src', 'ROLLBACK');
# an index is unlogged too; here in a subtransaction
crash_after_rollback('CREATE INDEX', 'src_id', 'BEGIN', 'SAVEPOINT s',
	'CREATE INDEX src_id ON src (id)', 'ROLLBACK TO s');
$rb->stop;

# That abort record may end exactly on a WAL page boundary, where the
# insert position lies past the next page's header, which no record
# reached: flushing up to it failed the ROLLBACK ("xlog flush request ...
# is not satisfied") and left the abort unflushed.  Pad the WAL inside the
# transaction, learning the sizes as it goes, until the abort record ends
# on a boundary; then kill -9 at once.
my $wp = fastckpt_node('walpage',
	"full_page_writes = off\ncheckpoint_timeout = '1h'\nautovacuum = off\nwal_writer_delay = '10s'\n");

# In one session after another: BEGIN, the given work, WAL padding, ROLLBACK,
# until the abort record ends on a page boundary; then the given statement
# in that session.  Returns the try that hit, the ROLLBACK's error and that
# statement's.
sub rollback_at_page_boundary
{
	my ($node, $work, $after) = @_;
	my $insert_lsn = q{SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn};
	my ($abort_size, $pad_overhead) = (200, 60);

	for my $try (1 .. 40)
	{
		my $session = $node->background_psql('postgres');
		$session->query_safe('BEGIN');
		$session->query_safe($work);
		my $start = $session->query_safe($insert_lsn);
		my $pad = (int(($start + $abort_size + $pad_overhead + 64) / 8192) + 1) * 8192 -
		  $start - $abort_size - $pad_overhead;
		$session->query_safe("SELECT pg_logical_emit_message(false, 'pad', repeat('x', $pad))");
		my $padded = $session->query_safe($insert_lsn);
		# psql quits on an error: that ends the session
		if (!eval { my (undef, $error) = $session->query('ROLLBACK'); !$error })
		{
			my $error = $session->{stderr} || $@;
			eval { $session->quit };
			return ($try, $error, '');
		}
		my $end = $session->query_safe($insert_lsn);
		if ($end % 8192 == 24 || $end % (16 * 1024 * 1024) == 40)
		{
			my $after_error = '';
			if (defined $after && !eval { my (undef, $error) = $session->query($after); !$error })
			{
				$after_error = $session->{stderr} || $@;
			}
			eval { $session->quit };
			return ($try, '', $after_error);
		}
		eval { $session->quit };
		$pad_overhead = $padded - $start - $pad - (int($padded / 8192) != int($start / 8192) ? 24 : 0);
		$abort_size = $end - $padded - (int($end / 8192) != int($padded / 8192) ? 24 : 0);
	}
	return (0, '', '');
}

my ($boundary_hit, $rollback_errors) = rollback_at_page_boundary($wp,
	'CREATE TABLE padded (a int) USING fastckpt');
ok($boundary_hit, "an abort record ended on a WAL page boundary (try $boundary_hit)");
is($rollback_errors, '', '... and its ROLLBACK went through without an error');
crash_postmaster($wp, 1);
ok($wp->start(fail_ok => 1), '... made its abort durable: the server starts after a kill -9 right after it');
wait_for_tables_open($wp);
is($wp->safe_psql('postgres', q{SELECT to_regclass('padded') IS NULL}), 't',
	'... without the rolled-back table');

# The same boundary after a rollback (with a transaction id) that held
# more relations than a session keeps (sequence_flush.c): the session's
# next fastckpt commit flushes the WAL up to that rollback, and failed
# where it ended on a page boundary.
$wp->safe_psql('postgres', join('', map { "CREATE TABLE held_$_ (n int);" } 1 .. 70) .
	  'CREATE TABLE after_held (n int) USING fastckpt;');
my $held = join(', ', map { "held_$_" } 1 .. 70);
my ($held_hit, $held_rollback_error, $held_commit_error) = rollback_at_page_boundary($wp,
	"LOCK TABLE $held IN ROW EXCLUSIVE MODE; INSERT INTO held_1 VALUES (1)",
	'INSERT INTO after_held VALUES (1)');
ok($held_hit, "a rollback holding 70 relations ended on a WAL page boundary (try $held_hit)");
is($held_rollback_error . $held_commit_error, '',
	'... and the session\'s next fastckpt commit went through without an error');
is($wp->safe_psql('postgres', 'SELECT count(*) FROM after_held'), '1', '... its row is there');
$wp->stop;
done_testing();
