# Registered-procedure calls logged as CALL records and replayed at startup
# (DESIGN.md sections 6 and 8):
#  - under a mixed workload (calls of a function and of a procedure, with
#    fastckpt_random() and fastckpt_txn_time(), multi-row inserts and
#    deletes, a non-default search_path, a non-superuser caller, plain SQL
#    transactions between the calls) that stops writing before a kill -9,
#    a full-content checksum taken before the kill equals the one after
#    recovery, and recovery says it replayed the calls;
#  - every fallback reason: the transaction is logged as row images (the
#    counters say so) and comes back after a crash;
#  - dropping, truncating or altering a table, or redefining a registered
#    routine, after logged calls takes a checkpoint first, so replay never
#    runs a call against tables or routines that changed after it;
#  - a privilege revoked after logged calls takes a checkpoint first, and
#    a call that overlaps a catalog change is logged as row images;
#  - a call that cannot be repeated at replay (its role lost a privilege
#    by an edit of the catalog) keeps the tables closed with the reason,
#    and they open once the privilege is back;
#  - registrations restored from pg_dump hold for the recreated routines:
#    their calls are CALL records and replay;
#  - a call's DateStyle, IntervalStyle and TimeZone come back at replay,
#    for literals and for the transaction time printed, cast and shifted;
#  - an aggregate whose result depends on the order of its rows falls back,
#    since replay may plan otherwise;
#  - a call that writes back a value it read before another session's
#    update of the row (a lost update) falls back; the same update done in
#    place stays a CALL record, under contention;
#  - a call re-evaluated on a row changed while it waited, through a join,
#    or that read a row FOR KEY SHARE which others then changed, falls
#    back, and recovery opens the tables with what it wrote.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use FastckptTest;

my $node = fastckpt_node('calls', q{
fsync = on
max_prepared_transactions = 2
pg_fastckpt.memory_limit = '512MB'
});

# Every fastckpt table's rows, in a canonical order, hashed.
my $checksum_sql = q{
SELECT string_agg(t || ':' || n || ':' || h, ' ' ORDER BY t) FROM (
  SELECT 'acc' t, count(*) n, md5(string_agg(aid || '/' || abalance, ',' ORDER BY aid)) h FROM app.accounts
  UNION ALL SELECT 'tel', count(*), md5(string_agg(tid || '/' || tbalance, ',' ORDER BY tid)) FROM app.tellers
  UNION ALL SELECT 'hist', count(*), md5(string_agg(id || '/' || aid || '/' || delta || '/' || mtime || '/' || r,
	',' ORDER BY id)) FROM app.history
  UNION ALL SELECT 'queue', count(*), md5(string_agg(id || '/' || k || '/' || v, ',' ORDER BY id)) FROM app.queue
  UNION ALL SELECT 'plain', count(*), md5(string_agg(id || '/' || v, ',' ORDER BY id)) FROM app.plain) s};

$node->safe_psql('postgres', q{
CREATE ROLE teller LOGIN;
CREATE SCHEMA app;
GRANT USAGE ON SCHEMA app TO teller;
CREATE TABLE app.accounts (aid int PRIMARY KEY, abalance int NOT NULL) USING fastckpt;
CREATE TABLE app.tellers (tid int PRIMARY KEY, tbalance int NOT NULL) USING fastckpt;
CREATE TABLE app.history (id bigint PRIMARY KEY, aid int NOT NULL, delta int NOT NULL,
	mtime timestamptz NOT NULL, r float8 NOT NULL) USING fastckpt;
CREATE TABLE app.queue (id bigint PRIMARY KEY, k int NOT NULL, v text) USING fastckpt;
CREATE INDEX ON app.queue (k);
CREATE TABLE app.plain (id int PRIMARY KEY, v int NOT NULL) USING fastckpt;
CREATE TABLE app.seq (id int PRIMARY KEY, next bigint NOT NULL) USING fastckpt;
INSERT INTO app.accounts SELECT g, 0 FROM generate_series(1, 2000) g;
INSERT INTO app.tellers SELECT g, 0 FROM generate_series(1, 20) g;
INSERT INTO app.plain SELECT g, 0 FROM generate_series(1, 100) g;
INSERT INTO app.seq VALUES (1, 1);
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA app TO teller;

-- unqualified names: found through the caller's search_path (app)
CREATE FUNCTION app.transfer(p_aid int, p_tid int, p_delta int) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
	v_id bigint;
BEGIN
	UPDATE seq SET next = next + 1 WHERE id = 1 RETURNING next INTO v_id;
	UPDATE accounts SET abalance = abalance + p_delta WHERE aid = p_aid;
	UPDATE tellers SET tbalance = tbalance + p_delta WHERE tid = p_tid;
	INSERT INTO history VALUES (v_id, p_aid, p_delta, fastckpt_txn_time(), fastckpt_random());
	RETURN v_id;
END;
$$;

-- a procedure that inserts several rows (one per statement) and consumes
-- the oldest ones: deleted slots are used again by later inserts
CREATE PROCEDURE app.churn(p_k int, p_n int)
LANGUAGE plpgsql AS $$
DECLARE
	v_id bigint;
BEGIN
	FOR i IN 1 .. p_n LOOP
		UPDATE seq SET next = next + 1 WHERE id = 1 RETURNING next INTO v_id;
		INSERT INTO queue VALUES (v_id, p_k, md5(v_id::text || fastckpt_random()::text));
	END LOOP;
	-- min(id + 0): an aggregate, where min(id) would be planned as LIMIT 1
	DELETE FROM queue WHERE id = (SELECT min(id + 0) FROM queue WHERE k = p_k);
END;
$$;

-- a SQL function
CREATE FUNCTION app.bump(p_id int, p_by int) RETURNS void
LANGUAGE sql AS $$ UPDATE app.plain SET v = v + p_by WHERE id = p_id $$;

ALTER FUNCTION app.transfer(int, int, int) SET enable_seqscan = off;
ALTER PROCEDURE app.churn(int, int) SET enable_seqscan = off;
SELECT fastckpt_register_procedure('app.transfer(int,int,int)');
SELECT fastckpt_register_procedure('app.churn(int,int)');
SELECT fastckpt_register_procedure('app.bump(int,int)');
ALTER ROLE teller SET search_path = app, public;
});

# pgbench scripts: calls, and plain transactions on the same tables
my $dir = PostgreSQL::Test::Utils::tempdir;
my %scripts = (
	'transfer.sql' => "\\set aid random(1, 2000)\n\\set tid random(1, 20)\n\\set d random(-500, 500)\n"
	  . "SELECT transfer(:aid, :tid, :d);\n",
	'churn.sql' => "\\set k random(1, 5)\n\\set n random(1, 3)\nCALL churn(:k, :n);\n",
	'bump.sql' => "\\set id random(1, 100)\nSELECT bump(:id, 1);\n",
	'plain.sql' => "\\set aid random(1, 2000)\n\\set id random(1, 100)\nBEGIN;\n"
	  . "UPDATE accounts SET abalance = abalance + 1 WHERE aid = :aid;\n"
	  . "UPDATE plain SET v = v - 1 WHERE id = :id;\nCOMMIT;\n");
for my $f (keys %scripts)
{
	open(my $fh, '>', "$dir/$f") or die;
	print $fh $scripts{$f};
	close $fh;
}

sub run_workload
{
	my ($secs, $label) = @_;
	$node->command_ok(
		[ 'pgbench', '-n', '-c', '4', '-j', '2', '-T', $secs, '-M', 'prepared',
		  '-f', "$dir/transfer.sql\@6", '-f', "$dir/churn.sql\@2", '-f', "$dir/bump.sql\@1",
		  '-f', "$dir/plain.sql\@1", '-h', $node->host, '-p', $node->port, '-U', 'teller', 'postgres' ],
		"pgbench: $label");
	return;
}

# fastckpt checkpoints taken so far
sub checkpoints
{
	return $node->safe_psql('postgres', 'SELECT checkpoints FROM fastckpt_stat_checkpointer');
}

# Checkpoints taken before and after running sql.
sub checkpoints_across
{
	my ($sql) = @_;
	my $before = checkpoints();
	$node->safe_psql('postgres', $sql);
	return ($before, checkpoints());
}

# kill -9, restart, wait for the tables; the checksum must not move
sub crash_and_compare
{
	my ($label, $db) = @_;
	$db //= 'postgres';
	my $before = $node->safe_psql($db, $checksum_sql);
	ok(crash_postmaster($node, 1), "$label: all server processes gone after kill -9");
	$node->start;
	wait_for_tables_open($node);
	my $after = $node->safe_psql($db, $checksum_sql);
	is($after, $before, "$label: every table's content after recovery equals the content before the kill");
	return $node->safe_psql($db, 'SELECT calls_replayed FROM fastckpt_stat_recovery');
}

# 1. calls and plain transactions, crash, identical content
run_workload(4, 'mixed calls and plain transactions');
my ($call_records, $validated) = split /\|/, $node->safe_psql('postgres', q{
	SELECT (SELECT call_records FROM fastckpt_stat_log),
	       (SELECT sum(call_records) FROM fastckpt_procedures)});
ok($call_records > 100, "calls were logged as CALL records ($call_records)");
is($validated, $call_records, 'fastckpt_procedures counts the same CALL records');
note($node->safe_psql('postgres', 'SELECT routine, calls, call_records, value_records, fallbacks FROM fastckpt_procedures'));
my $replayed = crash_and_compare('crash after the workload');
ok($replayed > 100, "recovery replayed the logged calls ($replayed)");
# the recovered indexes agree with the tables (slots used again by churn)
is($node->safe_psql('postgres', q{
	SET enable_seqscan = off; SET enable_bitmapscan = off;
	SELECT count(*) FROM app.queue q WHERE q.k BETWEEN 1 AND 5}),
	$node->safe_psql('postgres', q{
	SET enable_indexscan = off; SET enable_bitmapscan = off; SET enable_indexonlyscan = off;
	SELECT count(*) FROM app.queue}), 'queue: its k index and a sequential scan agree');

# a second cycle on top of the replayed one: the log now holds both
run_workload(3, 'a second round');
crash_and_compare('second crash');

# 2. every fallback reason, logged as row images and recovered
$node->safe_psql('postgres', q{
CREATE TABLE app.notes (id int PRIMARY KEY, v text) USING fastckpt;
CREATE TABLE app.heap_notes (id int PRIMARY KEY, v text);
GRANT ALL ON app.notes, app.heap_notes TO teller;
CREATE FUNCTION app.note_heap(p int) RETURNS void LANGUAGE sql
	AS $$ INSERT INTO app.notes VALUES (p, 'h'); INSERT INTO app.heap_notes VALUES (p, 'h') $$;
CREATE FUNCTION app.note_now(p int) RETURNS void LANGUAGE sql
	AS $$ INSERT INTO app.notes VALUES (p, now()::text) $$;
CREATE FUNCTION app.note(p int) RETURNS void LANGUAGE sql
	AS $$ INSERT INTO app.notes VALUES (p, 'n') $$;
CREATE PROCEDURE app.note_commit(p int) LANGUAGE plpgsql
	AS $$ BEGIN INSERT INTO app.notes VALUES (p, 'c'); COMMIT; END $$;
CREATE FUNCTION app.note_redef(p int) RETURNS void LANGUAGE sql
	AS $$ INSERT INTO app.notes VALUES (p, 'r') $$;
SELECT fastckpt_register_procedure(f) FROM unnest(ARRAY['app.note_heap(int)', 'app.note_now(int)',
	'app.note(int)', 'app.note_commit(int)', 'app.note_redef(int)']::regprocedure[]) f;
});
# redefined after registration (forces a checkpoint: calls were logged)
$node->safe_psql('postgres', q{
CREATE OR REPLACE FUNCTION app.note_redef(p int) RETURNS void LANGUAGE sql
	AS $$ INSERT INTO app.notes VALUES (p, 'R') $$;
});
$node->safe_psql('postgres', 'SELECT fastckpt_stat_reset()');
for my $sql (
	'SELECT app.note_heap(1)',                                      # non_fastckpt_relation
	'SELECT app.note_now(2)',                                       # nondeterministic
	"BEGIN; INSERT INTO app.notes VALUES (30, 'x'); SELECT app.note(3); COMMIT;",  # writes_outside_call
	'CALL app.note_commit(4)',                                      # transaction_control
	'SELECT app.note_redef(5)',                                     # redefined
	'SELECT app.note((random() * 0)::int + 6)',                     # arguments
	'SELECT app.note(7)')                                           # a CALL record
{
	$node->safe_psql('postgres', $sql);
}
is($node->safe_psql('postgres', q{SELECT call_fallbacks = '{"redefined": 1, "arguments": 1, "nondeterministic": 1,
	"transaction_control": 1, "writes_outside_call": 1, "non_fastckpt_relation": 1}' FROM fastckpt_stat_log}),
	't', 'each fallback reason counted once')
  or diag($node->safe_psql('postgres', 'SELECT call_fallbacks FROM fastckpt_stat_log'));
is($node->safe_psql('postgres', q{SELECT sum(call_records) FROM fastckpt_procedures}), '1',
	'the clean call is the one CALL record');
crash_and_compare('crash after one transaction per fallback reason');
is($node->safe_psql('postgres', q{SELECT string_agg(id || v, ',' ORDER BY id) FROM app.notes WHERE id <> 2}),
	'1h,3n,4c,5R,6n,7n,30x', 'the fallen-back transactions and the call are all there');
is($node->safe_psql('postgres', q{SELECT count(*) FROM app.notes WHERE id = 2}), '1',
	'the nondeterministic call is there with the value it had');

# 3. storages dropped and routines redefined after calls: a checkpoint first
run_workload(2, 'calls before DDL');
my $ckpts = checkpoints();
$node->safe_psql('postgres', 'TRUNCATE app.queue');
my $ckpts2 = checkpoints();
ok($ckpts2 > $ckpts, "TRUNCATE after logged calls took a checkpoint ($ckpts -> $ckpts2)");
run_workload(2, 'calls after TRUNCATE');
$node->safe_psql('postgres', 'ALTER TABLE app.notes ALTER COLUMN v TYPE varchar(40)');
my $ckpts3 = checkpoints();
ok($ckpts3 > $ckpts2, "a table rewrite after logged calls took a checkpoint ($ckpts2 -> $ckpts3)");
run_workload(2, 'calls after the rewrite');
$node->safe_psql('postgres', q{
CREATE OR REPLACE FUNCTION app.bump(p_id int, p_by int) RETURNS void
LANGUAGE sql AS $$ UPDATE app.plain SET v = v + p_by * 2 WHERE id = p_id $$;
SELECT fastckpt_register_procedure('app.bump(int,int)');
});
my $ckpts4 = checkpoints();
ok($ckpts4 > $ckpts3, "redefining a registered routine after its calls took a checkpoint ($ckpts3 -> $ckpts4)");
run_workload(2, 'calls of the new definition');
crash_and_compare('crash after DDL between calls');

# 4. privileges: the caller's UPDATE privilege on tellers comes through a
# group role.  Leaving the group after logged calls takes a checkpoint
# first, so replay never runs those calls without the privilege.
$node->safe_psql('postgres', q{
CREATE ROLE clerks;
GRANT UPDATE ON app.tellers TO clerks;
REVOKE UPDATE ON app.tellers FROM teller;
GRANT clerks TO teller;
});
run_workload(2, 'calls before a privilege is revoked');
($ckpts, $ckpts2) = checkpoints_across('REVOKE clerks FROM teller');
ok($ckpts2 > $ckpts, "REVOKE after logged calls took a checkpoint ($ckpts -> $ckpts2)");
crash_and_compare('crash after a privilege was revoked');
$node->safe_psql('postgres', 'GRANT clerks TO teller');

# A prepared REVOKE shows at COMMIT PREPARED: the checkpoint comes before
# it, and covers the calls made while it was prepared.
$node->safe_psql('postgres', "BEGIN; REVOKE clerks FROM teller; PREPARE TRANSACTION 'rv'");
run_workload(1, 'calls while a REVOKE is prepared');
($ckpts, $ckpts2) = checkpoints_across("COMMIT PREPARED 'rv'");
ok($ckpts2 > $ckpts, "COMMIT PREPARED of a REVOKE took a checkpoint first ($ckpts -> $ckpts2)");
crash_and_compare('crash after a prepared REVOKE was committed');
$node->safe_psql('postgres', 'GRANT clerks TO teller');
# ... while a prepared transaction that changed no catalog commits without
$node->safe_psql('postgres',
	"BEGIN; INSERT INTO app.heap_notes VALUES (900, 'x'); PREPARE TRANSACTION 'plain'");
$node->safe_psql('postgres', 'SELECT bump(1, 1)', extra_params => [ '-U', 'teller' ]);
($ckpts, $ckpts2) = checkpoints_across("COMMIT PREPARED 'plain'");
is($ckpts2, $ckpts, 'COMMIT PREPARED of a transaction that changed no catalog took no checkpoint');

# A statement that commits inside itself checkpoints before it runs, and
# leaves nothing counted behind (the next call is a CALL record again).
$node->safe_psql('postgres', 'SELECT bump(1, 1)', extra_params => [ '-U', 'teller' ]);
($ckpts, $ckpts2) = checkpoints_across('CREATE INDEX CONCURRENTLY heap_notes_v ON app.heap_notes (v)');
ok($ckpts2 > $ckpts, "CREATE INDEX CONCURRENTLY after logged calls took a checkpoint ($ckpts -> $ckpts2)");
$node->safe_psql('postgres', 'SELECT fastckpt_stat_reset()');
$node->safe_psql('postgres', 'SELECT bump(1, 1)', extra_params => [ '-U', 'teller' ]);
is( $node->safe_psql('postgres', q{
SELECT call_records FROM fastckpt_procedures WHERE routine = 'app.bump(int,int)'::regprocedure}),
	'1', 'after it, a call is a CALL record again');

# A call that overlaps a catalog change in progress, or one that ended
# while the call ran, is logged as row images.
$node->safe_psql('postgres', 'SELECT fastckpt_stat_reset()');
my $ddl_session = $node->background_psql('postgres');
$ddl_session->query_safe('BEGIN');
$ddl_session->query_safe('GRANT SELECT ON app.notes TO clerks');
$node->safe_psql('postgres', 'SELECT transfer(1, 1, 1)', extra_params => [ '-U', 'teller' ]);
$ddl_session->query_safe('COMMIT');
$ddl_session->quit;
$node->safe_psql('postgres', 'SELECT transfer(2, 2, 1)', extra_params => [ '-U', 'teller' ]);
is( $node->safe_psql('postgres', q{
SELECT (SELECT call_fallbacks FROM fastckpt_stat_log)::text || ' ' || call_records
  FROM fastckpt_procedures WHERE routine = 'app.transfer(int,int,int)'::regprocedure}),
	'{"catalog_changed": 1} 1',
	'the call during an uncommitted GRANT fell back to row images; the next one is a CALL record');
crash_and_compare('crash after a call that overlapped a GRANT');

# A call that cannot be repeated keeps the tables closed, with the reason:
# membership removed by editing the catalog, which pg_fastckpt does not
# watch.  The log after this checkpoint starts with a call that replays
# (bump needs no tellers privilege), then plain rows of a table the calls
# write, then a call that cannot: the serial replayer has a batch of those
# rows open when the call fails, and the failure's message must survive
# the abort.
$node->safe_psql('postgres', 'SELECT fastckpt_checkpoint()');
$node->safe_psql('postgres', 'SELECT bump(1, 1)', extra_params => [ '-U', 'teller' ]);
$node->safe_psql('postgres', 'UPDATE app.accounts SET abalance = abalance + 1 WHERE aid <= 3');
$node->safe_psql('postgres', 'SELECT transfer(1, 1, 5)', extra_params => [ '-U', 'teller' ]);
run_workload(2, 'calls before the catalog is edited');
$node->safe_psql('postgres', q{
DELETE FROM pg_auth_members
 WHERE roleid = 'clerks'::regrole AND member = 'teller'::regrole});
ok(crash_postmaster($node, 1), 'kill -9 with calls that need the removed membership in the log');
$node->start;
$node->poll_query_until('postgres', q{SELECT error IS NOT NULL FROM fastckpt_stat_recovery})
  or die 'recovery neither failed nor finished';
my $error = $node->safe_psql('postgres', 'SELECT error FROM fastckpt_stat_recovery');
like($error, qr/routine app\.(transfer|bump|churn)\([a-z, ]*\) \(OID \d+\) logged at \d+ \(CSN \d+\) failed: permission denied for table tellers/,
	'recovery names the call it could not repeat and why');
my ($ret, $out, $err) = $node->psql('postgres', 'SELECT count(*) FROM app.accounts');
like($err, qr/not available: startup recovery could not restore the fastckpt tables/,
	'the tables stay closed');
# giving the privilege back does not wait for a checkpoint of closed tables
$node->safe_psql('postgres', 'GRANT clerks TO teller');
$node->restart;
wait_for_tables_open($node);
ok($node->safe_psql('postgres', 'SELECT calls_replayed FROM fastckpt_stat_recovery') > 0,
	'with the privilege back, the calls replay and the tables open');
# 6. pg_dump restored into another database: the routines come back
# unchanged under new pg_proc row versions, and stay registered; tables
# sized under other settings than the restoring session's keep their
# slot sizes (storage parameters), so their rows restore
$node->safe_psql('postgres', q{
SET pg_fastckpt.default_row_size = 2048;
CREATE TABLE app.wide_rows (id int PRIMARY KEY, doc text) USING fastckpt;
RESET pg_fastckpt.default_row_size;
INSERT INTO app.wide_rows SELECT g, string_agg(md5(g::text || x::text), '')
  FROM generate_series(1, 20) g, generate_series(1, 40) x GROUP BY g;
CREATE TABLE app.narrow_codes (id int PRIMARY KEY, code varchar(40)) USING fastckpt
  WITH (fastckpt_bytes_per_char = 1);
INSERT INTO app.narrow_codes SELECT g, repeat('c', 40) FROM generate_series(1, 20) g;
});
my $sized_sql = q{SELECT string_agg(c.relname || ':' || s.row_image_bytes || ':' || array_to_string(c.reloptions, ','), ' ' ORDER BY c.relname)
	FROM fastckpt_stat_tables s JOIN pg_class c ON c.oid = s.relation
	WHERE c.relname IN ('wide_rows', 'narrow_codes')};
my $sized_rows = q{SELECT (SELECT count(*) || '/' || sum(length(doc)) FROM app.wide_rows) || ' '
	|| (SELECT count(*) FROM app.narrow_codes)};
$node->command_ok([ 'pg_dump', '-f', "$dir/calls.sql", '-h', $node->host, '-p', $node->port, 'postgres' ],
	'pg_dump of the database with registered routines');
$node->safe_psql('postgres', 'CREATE DATABASE restored');
$node->command_ok(
	[ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-f', "$dir/calls.sql", '-h', $node->host,
	  '-p', $node->port, 'restored' ],
	'the dump restored into another database');
my $registrations = q{SELECT string_agg(routine || ':' || redefined, ' ' ORDER BY routine::text)
	FROM fastckpt_procedures};
like($node->safe_psql('postgres', $registrations),
	qr/app\.bump\(integer,integer\):false .*app\.note_redef\(integer\):true/,
	'before the dump: the routines are registered, one of them since redefined');
is($node->safe_psql('restored', $registrations), $node->safe_psql('postgres', $registrations),
	'the restored registrations hold for the recreated routines, and only for them');
is($node->safe_psql('restored', $checksum_sql), $node->safe_psql('postgres', $checksum_sql),
	'the restored tables hold the same rows');
like($node->safe_psql('postgres', $sized_sql),
	qr/^narrow_codes:\d+:fastckpt_bytes_per_char=1 wide_rows:2048:fastckpt_row_size=2048$/,
	'tables sized under other settings keep them as storage parameters');
is($node->safe_psql('restored', $sized_sql), $node->safe_psql('postgres', $sized_sql),
	'restored, they have the same slot sizes, whatever the restoring session\'s settings');
is($node->safe_psql('restored', $sized_rows), '20/25600 20', 'and all their rows');
for my $sql ('SELECT transfer(7, 2, 9)', 'SELECT transfer(8, 3, -4)', 'SELECT bump(8, 4)')
{
	$node->safe_psql('restored', $sql, extra_params => [ '-U', 'teller' ]);
}
is($node->safe_psql('restored', q{SELECT sum(call_records) || ' ' || sum(value_records) FROM fastckpt_procedures}),
	'3 0', 'calls of the restored routines are CALL records');
$replayed = crash_and_compare('crash after calls in the restored database', 'restored');
ok($replayed >= 3, "recovery replayed the restored database's calls ($replayed)");

# 7. date and time literals in a routine read with the caller's DateStyle,
# IntervalStyle and TimeZone (a new session each, so each plans afresh):
# the CALL record carries them, and replay reads the literals the same way
$node->safe_psql('postgres', q{
CREATE TABLE app.events (id int PRIMARY KEY, d date, t timestamptz, i interval) USING fastckpt;
CREATE FUNCTION app.event(p_id int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO app.events VALUES (p_id, '01/02/2024', '2024-01-01 10:00', '-1 2:00:00');
END $$;
SELECT fastckpt_register_procedure('app.event(int)');
});
$node->safe_psql('postgres', "SET DateStyle = 'ISO, DMY'; SELECT app.event(1)");
$node->safe_psql('postgres', "SET TimeZone = 'Asia/Tokyo'; SELECT app.event(2)");
$node->safe_psql('postgres', "SET IntervalStyle = sql_standard; SELECT app.event(3)");
$node->safe_psql('postgres', "SELECT app.event(4)");
# a session that changes them plans afresh: its cached plans read the
# literals with the settings of their time
$node->safe_psql('postgres', "SELECT app.event(5); SET DateStyle = 'ISO, DMY'; SELECT app.event(6);
	RESET DateStyle; SELECT app.event(7)");
my $events_sql = q{SET TimeZone = 'UTC'; SET DateStyle = 'ISO, YMD'; SET IntervalStyle = postgres;
	SELECT string_agg(id || ' ' || d || ' ' || t || ' ' || i, ', ' ORDER BY id) FROM app.events};
my $events = $node->safe_psql('postgres', $events_sql);
is($events, '1 2024-02-01 2024-01-01 10:00:00+00 -1 days +02:00:00, '
	. '2 2024-01-02 2024-01-01 01:00:00+00 -1 days +02:00:00, '
	. '3 2024-01-02 2024-01-01 10:00:00+00 -1 days -02:00:00, '
	. '4 2024-01-02 2024-01-01 10:00:00+00 -1 days +02:00:00, '
	. '5 2024-01-02 2024-01-01 10:00:00+00 -1 days +02:00:00, '
	. '6 2024-02-01 2024-01-01 10:00:00+00 -1 days +02:00:00, '
	. '7 2024-01-02 2024-01-01 10:00:00+00 -1 days +02:00:00',
	'each call read the literals with its session settings, also after they changed');
is($node->safe_psql('postgres', q{SELECT call_records || ' ' || value_records FROM fastckpt_procedures
	WHERE routine = 'app.event(int)'::regprocedure}), '7 0', 'the seven calls are CALL records');
crash_and_compare('crash after calls under other date and time settings');
is($node->safe_psql('postgres', $events_sql), $events,
	'replay read the literals with the settings of each call');

# ... and the transaction time printed, cast and shifted in the caller's
# time zone and styles: the same text at replay
$node->safe_psql('postgres', q{
CREATE TABLE app.stamps (id int PRIMARY KEY, s text) USING fastckpt;
CREATE FUNCTION app.stamp(p_id int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	t timestamptz := fastckpt_txn_time();
BEGIN
	INSERT INTO app.stamps VALUES (p_id, t || ' ' || t::date || ' ' || t::timestamp || ' '
		|| (t + interval '1 month') || ' ' || date_trunc('day', t) || ' ' || extract(hour FROM t)
		|| ' ' || (t - interval '36 hours' - t));
END $$;
SELECT fastckpt_register_procedure('app.stamp(int)');
});
$node->safe_psql('postgres', "SET TimeZone = 'Asia/Tokyo'; SET DateStyle = 'SQL, DMY'; SELECT app.stamp(1)");
$node->safe_psql('postgres', "SET TimeZone = 'America/Los_Angeles'; SET IntervalStyle = iso_8601; SELECT app.stamp(2)");
$node->safe_psql('postgres', "SELECT app.stamp(3)");
is($node->safe_psql('postgres', q{SELECT call_records || ' ' || value_records FROM fastckpt_procedures
	WHERE routine = 'app.stamp(int)'::regprocedure}), '3 0',
	'calls that print and cast the transaction time are CALL records');
my $stamps_sql = q{SELECT string_agg(id || ': ' || s, ' | ' ORDER BY id) FROM app.stamps};
my $stamps = $node->safe_psql('postgres', $stamps_sql);
note($stamps);
crash_and_compare('crash after calls that print the transaction time');
is($node->safe_psql('postgres', $stamps_sql), $stamps,
	'replay printed the transaction time in each call\'s zone and styles');

# 8. an aggregate fed in the plan's order: the session's planner settings
# pick an index scan, replay would pick a sequential scan over the rows in
# the reverse order, and string_agg would join them the other way round.
# Such a call falls back to row images, so the crash brings back what it
# wrote; an order-free aggregate (sum of integers) stays a CALL record.
$node->safe_psql('postgres', q{
CREATE TABLE app.parts (id int PRIMARY KEY, v text) USING fastckpt;
INSERT INTO app.parts SELECT g, 'p' || g FROM generate_series(20, 1, -1) g;
CREATE TABLE app.joined (id int PRIMARY KEY, s text, n bigint) USING fastckpt;
INSERT INTO app.joined VALUES (1, '', 0);
CREATE FUNCTION app.join_parts() RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	agg text;
BEGIN
	SELECT string_agg(v, ',') INTO STRICT agg FROM app.parts WHERE id > 0;
	UPDATE app.joined SET s = agg WHERE id = 1;
END $$;
CREATE FUNCTION app.sum_parts() RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	total bigint;
BEGIN
	SELECT sum(id) INTO STRICT total FROM app.parts WHERE id > 0;
	UPDATE app.joined SET n = total WHERE id = 1;
END $$;
SELECT fastckpt_register_procedure('app.join_parts()');
SELECT fastckpt_register_procedure('app.sum_parts()');
});
$node->safe_psql('postgres', q{SET enable_seqscan = off; SET enable_bitmapscan = off;
	SELECT app.join_parts(); SELECT app.sum_parts()});
is($node->safe_psql('postgres', q{SELECT call_records || ' ' || value_records FROM fastckpt_procedures
	WHERE routine IN ('app.join_parts()'::regprocedure, 'app.sum_parts()'::regprocedure)
	ORDER BY routine::text}), "0 1
1 0",
	'string_agg in the plan\'s order falls back to row images; a sum stays a CALL record');
crash_and_compare('crash after aggregates under other planner settings');
is($node->safe_psql('postgres', 'SELECT s, n FROM app.joined'),
	join(',', map { "p$_" } 1 .. 20) . '|210', 'the aggregates\' results came back as written');

# 9. read a balance, then write back the balance read minus one: another
# session's update in between is lost (on heap too), while replay, which
# runs the calls one after another in commit order, would not lose it.
# Such calls fall back to row images, and the crash brings back exactly
# what was written.  The in-place form (bal = bal - 1), re-evaluated on the
# other session's version, stays a CALL record under the same contention.
$node->safe_psql('postgres', q{
CREATE TABLE app.wallets (id int PRIMARY KEY, bal int NOT NULL) USING fastckpt;
INSERT INTO app.wallets SELECT g, 1000000 FROM generate_series(1, 3) g;
CREATE FUNCTION app.withdraw_read(p int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	b int;
BEGIN
	SELECT bal INTO STRICT b FROM app.wallets WHERE id = p;
	UPDATE app.wallets SET bal = b - 1 WHERE id = p;
END $$;
CREATE FUNCTION app.withdraw(p int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	UPDATE app.wallets SET bal = bal - 1 WHERE id = p;
END $$;
ALTER FUNCTION app.withdraw_read(int) SET enable_seqscan = off;
ALTER FUNCTION app.withdraw(int) SET enable_seqscan = off;
SELECT fastckpt_register_procedure('app.withdraw_read(int)');
SELECT fastckpt_register_procedure('app.withdraw(int)');
SELECT fastckpt_stat_reset();
});
for my $f ('withdraw_read', 'withdraw')
{
	open(my $fh, '>', "$dir/$f.sql") or die;
	print $fh "\\set id random(1, 3)\nSELECT app.$f(:id);\n";
	close $fh;
}
$node->command_ok(
	[ 'pgbench', '-n', '-c', '4', '-j', '2', '-T', '3', '-M', 'prepared',
	  '-f', "$dir/withdraw_read.sql", '-f', "$dir/withdraw.sql",
	  '-h', $node->host, '-p', $node->port, 'postgres' ],
	'pgbench: withdrawals from three rows, read-then-write and in place');
my $wallets_sql = q{SELECT string_agg(id || '/' || bal, ',' ORDER BY id) FROM app.wallets};
my ($read_calls, $read_conflicts, $inplace_calls, $inplace_records) = split /\|/,
  $node->safe_psql('postgres', q{
	SELECT r.calls, coalesce((r.fallbacks->>'read_conflict')::bigint, 0), i.calls, i.call_records
	  FROM fastckpt_procedures r, fastckpt_procedures i
	 WHERE r.routine = 'app.withdraw_read(int)'::regprocedure
	   AND i.routine = 'app.withdraw(int)'::regprocedure});
note("withdraw_read: $read_calls calls, $read_conflicts read conflicts; withdraw: $inplace_calls calls, $inplace_records CALL records");
ok($read_conflicts > 0, "read-then-write calls that lost an update fell back to row images ($read_conflicts)");
is($inplace_records, $inplace_calls, 'every in-place withdrawal stayed a CALL record');
my $wallets = $node->safe_psql('postgres', $wallets_sql);
ok(crash_postmaster($node, 1), 'withdrawals: all server processes gone after kill -9');
$node->start;
wait_for_tables_open($node);
is($node->safe_psql('postgres', $wallets_sql), $wallets,
	'the balances after recovery are the balances written, lost updates included');

# 10. settings that change what a call writes, which replay would run with
# its own values: a CALL record carries the caller's, whether the session,
# the database or the server's configuration set them.  A session that
# changes one plans afresh (its cached plans folded the old value in).
# standard_conforming_strings is not carried: PL/pgSQL keeps a routine's
# text as first scanned, so the call falls back.  (xmlbinary needs a server
# built with libxml.)
my $has_xml = $node->psql('postgres', 'SELECT xmlelement(name b)') == 0;
my $xml_expr = $has_xml ? q{xmlelement(name b, 'ab'::bytea)::text} : 'NULL';
$node->safe_psql('postgres', q{
CREATE TABLE app.shown (id int PRIMARY KEY, b text, f text, a text, q text, x text, n bigint) USING fastckpt;
CREATE TABLE app.parent (id int PRIMARY KEY) USING fastckpt;
CREATE TABLE app.child (id int PRIMARY KEY, parent int REFERENCES app.parent) USING fastckpt;
INSERT INTO app.parent SELECT g FROM generate_series(1, 20) g UNION ALL SELECT 60;
CREATE FUNCTION app.show(p_id int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	ASSERT p_id <> 60, 'no call with id 60';
	INSERT INTO app.shown VALUES (p_id, 'ab'::bytea::text, (0.1::float8 + 0.2::float8)::text,
		('{a,NULL}'::text[])[2], quote_ident('ab'), } . $xml_expr . q{,
		(SELECT count(*) FROM app.parent WHERE NULL::int = NULL));
	INSERT INTO app.child VALUES (p_id, p_id);
END $$;
SELECT fastckpt_register_procedure('app.show(int)');
});
my @setting_calls = (
	[ '', 1 ],
	[ 'SET bytea_output = escape', 2 ],
	[ 'SET extra_float_digits = 0', 3 ],
	[ 'SET array_nulls = off', 4 ],
	[ 'SET quote_all_identifiers = on', 5 ],
	[ 'SET xmlbinary = hex', 6 ],
	[ 'SET transform_null_equals = on', 7 ],
	[ 'SET session_replication_role = replica', 50 ],
	[ 'SET plpgsql.check_asserts = off', 60 ],
	[ 'SET standard_conforming_strings = off', 8 ]);
for my $call (@setting_calls)
{
	$node->safe_psql('postgres', "$call->[0]; SELECT app.show($call->[1])");
}
$node->safe_psql('postgres', 'ALTER DATABASE postgres SET bytea_output = escape');
$node->safe_psql('postgres', 'SELECT app.show(9)');
$node->safe_psql('postgres', 'ALTER DATABASE postgres RESET bytea_output');
# literals are read when a query is first analysed, the rest is folded in
# when planned: a generic plan keeps both
$node->safe_psql('postgres', 'SET plan_cache_mode = force_generic_plan; SELECT app.show(10);
	SET bytea_output = escape; SET array_nulls = off; SELECT app.show(11);
	RESET bytea_output; RESET array_nulls; SELECT app.show(12)');
my $shown_sql = q{SELECT string_agg(concat_ws(' ', id, b, f, coalesce(a, '-'), q, coalesce(x, '-'), n,
	(SELECT parent FROM app.child c WHERE c.id = s.id)), ', ' ORDER BY id) FROM app.shown s};
my $shown = $node->safe_psql('postgres', $shown_sql);
my $shown_expected = '1 \x6162 0.30000000000000004 - ab <b>YWI=</b> 0 1, '
	. '2 ab 0.30000000000000004 - ab <b>YWI=</b> 0 2, '
	. '3 \x6162 0.3 - ab <b>YWI=</b> 0 3, '
	. '4 \x6162 0.30000000000000004 NULL ab <b>YWI=</b> 0 4, '
	. '5 \x6162 0.30000000000000004 - "ab" <b>YWI=</b> 0 5, '
	. '6 \x6162 0.30000000000000004 - ab <b>6162</b> 0 6, '
	. '7 \x6162 0.30000000000000004 - ab <b>YWI=</b> 21 7, '
	. '8 \x6162 0.30000000000000004 - ab <b>YWI=</b> 0 8, '
	. '9 ab 0.30000000000000004 - ab <b>YWI=</b> 0 9, '
	. '10 \x6162 0.30000000000000004 - ab <b>YWI=</b> 0 10, '
	. '11 ab 0.30000000000000004 NULL ab <b>YWI=</b> 0 11, '
	. '12 \x6162 0.30000000000000004 - ab <b>YWI=</b> 0 12, '
	. '50 \x6162 0.30000000000000004 - ab <b>YWI=</b> 0 50, '
	. '60 \x6162 0.30000000000000004 - ab <b>YWI=</b> 0 60';
$shown_expected =~ s{<b>\w+=?</b>}{-}g unless $has_xml;
is($shown, $shown_expected, 'each call wrote what its settings make of the same expressions');
is($node->safe_psql('postgres', q{SELECT call_records || ' ' || value_records FROM fastckpt_procedures
	WHERE routine = 'app.show(int)'::regprocedure}), '13 1',
	'calls under carried settings are CALL records; under standard_conforming_strings = off, row images');
crash_and_compare('crash after calls under other settings');
is($node->safe_psql('postgres', $shown_sql), $shown,
	'replay ran each call with its own settings: an assertion skipped, a missing parent let through');

# 11. a queue taken by its smallest key, min() over an index as TPC-C's
# delivery does, by concurrent calls: CALL records, and replay takes the
# same rows
$node->safe_psql('postgres', q{
CREATE TABLE app.new_orders (w int, d int, o int, PRIMARY KEY (w, d, o)) USING fastckpt;
CREATE TABLE app.delivered (w int, d int, o int, PRIMARY KEY (w, d, o)) USING fastckpt;
INSERT INTO app.new_orders SELECT 1, d, o FROM generate_series(1, 4) d, generate_series(1, 25000) o;
ANALYZE app.new_orders;
CREATE FUNCTION app.deliver(p_d int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	v int;
	n int;
BEGIN
	SELECT min(o) INTO v FROM app.new_orders WHERE w = 1 AND d = p_d;
	DELETE FROM app.new_orders WHERE w = 1 AND d = p_d AND o = v;
	GET DIAGNOSTICS n = ROW_COUNT;
	IF n = 0 THEN
		RETURN 0;				-- another call took it
	END IF;
	INSERT INTO app.delivered VALUES (1, p_d, v);
	RETURN v;
END $$;
SELECT fastckpt_register_procedure('app.deliver(int)');
});
{
	open(my $fh, '>', "$dir/deliver.sql") or die;
	print $fh "\\set d random(1, 4)\nSELECT app.deliver(:d);\n";
	close $fh;
}
$node->command_ok(
	[ 'pgbench', '-n', '-c', '4', '-j', '2', '-T', '3', '-M', 'prepared',
	  '-f', "$dir/deliver.sql", '-h', $node->host, '-p', $node->port, 'postgres' ],
	'pgbench: deliveries, four clients on four districts');
$node->safe_psql('postgres', 'PREPARE d(int) AS SELECT app.deliver($1); EXECUTE d(1); EXECUTE d(2)');
my ($deliver_calls, $deliver_records) = split /\|/, $node->safe_psql('postgres', q{
	SELECT calls, call_records FROM fastckpt_procedures
	 WHERE routine = 'app.deliver(int)'::regprocedure});
note("deliver: $deliver_calls calls, $deliver_records CALL records");
ok($deliver_records > $deliver_calls / 2,
	"most deliveries are CALL records ($deliver_records of $deliver_calls)");
my $orders_sql = q{SELECT (SELECT count(*) FROM app.delivered) || ' '
	|| (SELECT count(*) FROM app.new_orders) || ' '
	|| (SELECT count(*) FROM app.delivered JOIN app.new_orders USING (w, d, o)) || ' '
	|| (SELECT bool_and(m) FROM (SELECT max(o) < coalesce((SELECT min(o) FROM app.new_orders n
	     WHERE n.d = x.d), 25001) AS m FROM app.delivered x GROUP BY d) q)};
my $orders = $node->safe_psql('postgres', $orders_sql);
my ($delivered, $left, $both, $in_order) = split / /, $orders;
is($delivered + $left, 100000, 'every order is delivered or waiting');
is("$both $in_order", '0 true', 'none twice; each district delivered from its smallest order up');
crash_and_compare('crash after deliveries');
is($node->safe_psql('postgres', $orders_sql), $orders, 'replay delivered the same orders');

# 12. routines whose result type is polymorphic: replay resolves it from
# the logged arguments' types, as the parser did for the call; and an
# array argument stored under a generic plan (an expanded object, which
# PostgreSQL flattens with a longer header) writes the bytes a constant
# does, so replay's custom plan writes what the call wrote
$node->safe_psql('postgres', q{
CREATE TABLE app.tagged (k int PRIMARY KEY, tags int[]) USING fastckpt;
INSERT INTO app.tagged VALUES (1, '{}'), (2, '{}');
CREATE FUNCTION app.set_tags(p_k int, p_tags int[]) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
	UPDATE app.tagged SET tags = p_tags WHERE k = p_k;
	RETURN 1;
END $$;
SELECT fastckpt_register_procedure('app.set_tags(int, int[])');
CREATE TYPE app.tag_pair AS (n int, tags int[]);
CREATE TABLE app.paired (k int PRIMARY KEY, p app.tag_pair) USING fastckpt;
CREATE FUNCTION app.set_pair(p_k int, p_tags int[]) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO app.paired VALUES (p_k, ROW(p_k, p_tags)::app.tag_pair)
	  ON CONFLICT (k) DO UPDATE SET p = EXCLUDED.p;
	RETURN 1;
END $$;
CREATE FUNCTION app.count_tag(p_k int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO app.tagged VALUES (p_k, '{1}')
	  ON CONFLICT (k) DO UPDATE SET tags = app.tagged.tags || 1;
	RETURN 1;
END $$;
SELECT fastckpt_register_procedure('app.set_pair(int, int[])');
SELECT fastckpt_register_procedure('app.count_tag(int)');
CREATE TABLE app.poly (k int PRIMARY KEY, v text) USING fastckpt;
INSERT INTO app.poly VALUES (1, ''), (2, ''), (3, '');
CREATE FUNCTION app.set_poly(p_k int, p_v anyelement) RETURNS anyelement LANGUAGE plpgsql AS $$
BEGIN
	UPDATE app.poly SET v = v || p_v::text || ';' WHERE k = p_k;
	RETURN p_v;
END $$;
CREATE FUNCTION app.pair_poly(a anycompatible, b anycompatible) RETURNS anycompatiblearray
LANGUAGE plpgsql AS $$
BEGIN
	UPDATE app.poly SET v = v || 'pair ' || array_length(ARRAY[a, b], 1) || ';' WHERE k = 3;
	RETURN ARRAY[a, b];
END $$;
SELECT fastckpt_register_procedure('app.set_poly(int, anyelement)');
SELECT fastckpt_register_procedure('app.pair_poly(anycompatible, anycompatible)');
SELECT fastckpt_checkpoint(true);
SELECT app.set_poly(1, 42);
SELECT app.set_poly(2, 'text'::text);
SELECT app.set_poly(1, 3.5);
SELECT app.pair_poly(1, 2.5);
SET plan_cache_mode = force_generic_plan;
SELECT app.set_tags(1, ARRAY[3, 9]);
SELECT app.set_tags(2, ARRAY[4]);
SELECT app.set_pair(1, ARRAY[5, 6]);
RESET plan_cache_mode;
SELECT app.count_tag(2);
SELECT app.count_tag(3);
});
is($node->safe_psql('postgres', q{
	SELECT sum(call_records) FROM fastckpt_procedures
	 WHERE routine IN ('app.set_poly(int, anyelement)'::regprocedure,
	                   'app.pair_poly(anycompatible, anycompatible)'::regprocedure,
	                   'app.set_tags(int, int[])'::regprocedure)}),
	'6', 'calls of polymorphic routines, and with arrays under a generic plan, are CALL records');
is($node->safe_psql('postgres', q{
	SELECT string_agg(routine || ':' || call_records || '/' || value_records, ' ' ORDER BY routine::text)
	  FROM fastckpt_procedures
	 WHERE routine IN ('app.set_pair(int, int[])'::regprocedure, 'app.count_tag(int)'::regprocedure)}),
	'app.count_tag(integer):2/0 app.set_pair(integer,integer[]):0/1',
	'INSERT ... ON CONFLICT DO UPDATE calls are CALL records; a call that writes a composite value logs row images');
my $poly = $node->safe_psql('postgres', q{SELECT string_agg(k || '=' || v, ' ' ORDER BY k) FROM app.poly});
crash_and_compare('crash after polymorphic calls');
is($node->safe_psql('postgres', 'SELECT tables_open FROM fastckpt_stat_recovery'), 't',
	'polymorphic and generic-plan calls replayed: the tables are open');
is($node->safe_psql('postgres', q{SELECT string_agg(k || '=' || tags::text, ' ' ORDER BY k) FROM app.tagged}),
	'1={3,9} 2={4,1} 3={1}', 'the arrays written under a generic plan and by ON CONFLICT DO UPDATE are back');
is($node->safe_psql('postgres', q{SELECT string_agg(k || '=' || p::text, ' ' ORDER BY k) FROM app.paired}),
	'1=(1,"{5,6}")', 'the composite value is back');
is($node->safe_psql('postgres', q{SELECT string_agg(k || '=' || v, ' ' ORDER BY k) FROM app.poly}),
	$poly, 'replay of polymorphic calls wrote what the calls wrote');

# 13. a call that waited for another session's update of a row it was
# about to change re-evaluates its statement on the new version
# (EvalPlanQual).  With a join, that recheck pairs the new version with the
# other table's row as first read, which a fresh run at replay would not:
# the UPDATE ... FROM and DELETE ... USING below change nothing (they count
# themselves in another row), and their replay would change the order.  A
# row read FOR KEY SHARE may be updated by others before the call commits.
# All three fall back to row images; before, their CALL records failed the
# recovery.
$node->safe_psql('postgres', q{
CREATE TABLE app.orders (k int PRIMARY KEY, rid int NOT NULL, v int NOT NULL) USING fastckpt;
CREATE TABLE app.rates (id int PRIMARY KEY, x int NOT NULL) USING fastckpt;
CREATE TABLE app.copied (id int PRIMARY KEY, x int NOT NULL) USING fastckpt;
INSERT INTO app.orders VALUES (1, 1, 0), (2, 1, 0);
INSERT INTO app.rates VALUES (1, 10), (2, 20);
INSERT INTO app.copied VALUES (1, 0), (2, 0);
CREATE FUNCTION app.apply_rate(p int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	UPDATE app.orders o SET v = o.v + r.x FROM app.rates r WHERE o.k = p AND r.id = o.rid;
	UPDATE app.copied SET x = x + 1 WHERE id = 2;
END $$;
CREATE FUNCTION app.drop_order(p int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	DELETE FROM app.orders o USING app.rates r WHERE o.k = p AND r.id = o.rid AND r.x > 5;
	UPDATE app.copied SET x = x + 1 WHERE id = 2;
END $$;
CREATE FUNCTION app.copy_rate(p int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	r int;
BEGIN
	SELECT x INTO STRICT r FROM app.rates WHERE id = p FOR KEY SHARE;
	UPDATE app.copied SET x = r WHERE id = 1;
END $$;
ALTER FUNCTION app.apply_rate(int) SET enable_seqscan = off;
ALTER FUNCTION app.drop_order(int) SET enable_seqscan = off;
ALTER FUNCTION app.copy_rate(int) SET enable_seqscan = off;
SELECT fastckpt_register_procedure('app.apply_rate(int)');
SELECT fastckpt_register_procedure('app.drop_order(int)');
SELECT fastckpt_register_procedure('app.copy_rate(int)');
SELECT fastckpt_checkpoint();
});

# Run $call while $blocker holds a row it needs; once the call waits, run
# $meanwhile (if any), then commit the blocker and let the call finish.
sub call_after_wait
{
	my ($blocker, $call, $meanwhile) = @_;
	my $holder = $node->background_psql('postgres');
	$holder->query_safe('BEGIN');
	$holder->query_safe($blocker);
	my $caller = $node->background_psql('postgres', on_error_stop => 0);
	my $pid = $caller->query_safe('SELECT pg_backend_pid()');
	$caller->{stdin} .= "SELECT $call;\n\\echo called\n";
	$caller->{run}->pump_nb;
	$node->poll_query_until('postgres', qq{
		SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = $pid})
	  or die "$call never waited for the row";
	$node->safe_psql('postgres', $meanwhile) if defined $meanwhile;
	$holder->query_safe('COMMIT');
	$caller->{run}->pump until $caller->{stdout} =~ /called/;
	unlike($caller->{stderr}, qr/ERROR/, "$call ran");
	$caller->quit;
	$holder->quit;
	return;
}

call_after_wait('UPDATE app.orders SET rid = 2 WHERE k = 1', 'app.apply_rate(1)');
call_after_wait('UPDATE app.orders SET rid = 2 WHERE k = 2', 'app.drop_order(2)');
call_after_wait('UPDATE app.copied SET x = x WHERE id = 1', 'app.copy_rate(1)',
	'UPDATE app.rates SET x = 30 WHERE id = 1');
my $rechecked_sql = q{SELECT string_agg(k || ':' || rid || ':' || v, ' ' ORDER BY k) FROM app.orders};
my $copied_sql = q{SELECT string_agg(id || ':' || x, ' ' ORDER BY id) FROM app.copied};
is($node->safe_psql('postgres', $rechecked_sql), '1:2:0 2:2:0',
	'the rechecks of the join changed nothing, as on heap');
is($node->safe_psql('postgres', $copied_sql), '1:10 2:2',
	'the call copied the rate it read; the other two counted themselves');
is($node->safe_psql('postgres', q{
	SELECT string_agg(routine || ':' || call_records || '/' || value_records, ' ' ORDER BY routine::text)
	  FROM fastckpt_procedures
	 WHERE routine IN ('app.apply_rate(int)'::regprocedure, 'app.drop_order(int)'::regprocedure,
	                   'app.copy_rate(int)'::regprocedure)}),
	'app.apply_rate(integer):0/1 app.copy_rate(integer):0/1 app.drop_order(integer):0/1',
	'calls rechecked through a join, or that read a row others changed, log row images');
crash_and_compare('crash after rechecked calls');
is($node->safe_psql('postgres', 'SELECT tables_open FROM fastckpt_stat_recovery'), 't',
	'after rechecked calls the tables are open');
is($node->safe_psql('postgres', $rechecked_sql), '1:2:0 2:2:0', 'the orders are as the calls left them');
is($node->safe_psql('postgres', $copied_sql), '1:10 2:2', 'the copied rate is the one the call read');

# The same copy, under load: others bump the rates in place while calls
# copy them.  KEY SHARE does not wait for such an update, which may commit
# between the lock's look at the row and its return: the call then goes on
# with the version its scan read, and that read is the one to validate.
$node->safe_psql('postgres', q{
CREATE FUNCTION app.bump_rate(p int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	UPDATE app.rates SET x = x + 1 WHERE id = p;
END $$;
ALTER FUNCTION app.bump_rate(int) SET enable_seqscan = off;
SELECT fastckpt_register_procedure('app.bump_rate(int)');
});
for my $f ('copy_rate', 'bump_rate')
{
	open(my $fh, '>', "$dir/$f.sql") or die;
	print $fh "\\set id random(1, 2)\nSELECT app.$f(:id);\n";
	close $fh;
}
$node->command_ok(
	[ 'pgbench', '-n', '-c', '4', '-j', '2', '-T', '4',
	  '-f', "$dir/copy_rate.sql", '-f', "$dir/bump_rate.sql",
	  '-h', $node->host, '-p', $node->port, 'postgres' ],
	'pgbench: rates copied under KEY SHARE while others bump them');
crash_and_compare('crash after copies of rates bumped meanwhile');
is($node->safe_psql('postgres', 'SELECT tables_open FROM fastckpt_stat_recovery'), 't',
	'after copies of rates bumped meanwhile the tables are open');

# 14. calls that insert into slots VACUUM freed: at replay those slots
# still hold the dead rows, and their index entries must go before the
# slot is used again.  One index rebuild clears the dead slots that the
# calls ahead were given, not one rebuild per call.
$node->safe_psql('postgres', q{
CREATE TABLE app.churned (k int PRIMARY KEY, grp int NOT NULL, v int NOT NULL) USING fastckpt;
CREATE INDEX churned_grp ON app.churned (grp);
INSERT INTO app.churned SELECT g, g % 10, 0 FROM generate_series(1, 2000) g;
CREATE FUNCTION app.drop_key(p int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	DELETE FROM app.churned WHERE k = p;
END $$;
CREATE FUNCTION app.add_key(p int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO app.churned VALUES (p, p % 10, 1);
END $$;
ALTER FUNCTION app.drop_key(int) SET enable_seqscan = off;
SELECT fastckpt_register_procedure('app.drop_key(int)');
SELECT fastckpt_register_procedure('app.add_key(int)');
SELECT fastckpt_checkpoint();
});
$node->safe_psql('postgres', join('', map { "SELECT app.drop_key($_);\n" } 1 .. 300));
$node->safe_psql('postgres', 'VACUUM app.churned');
$node->safe_psql('postgres', join('', map { "SELECT app.add_key($_);\n" } 5001 .. 5300));
is($node->safe_psql('postgres', q{
	SELECT sum(call_records) FROM fastckpt_procedures
	 WHERE routine IN ('app.drop_key(int)'::regprocedure, 'app.add_key(int)'::regprocedure)}),
	'600', 'the deletes and the inserts into freed slots are CALL records');
my $churn_sql = q{SET enable_seqscan = off; SELECT count(*), sum(k) FROM app.churned WHERE grp BETWEEN 0 AND 9};
my $churned = $node->safe_psql('postgres', $churn_sql);
is($churned, '2000|' . (2001 * 1000 - 300 * 301 / 2 + (5001 + 5300) * 150),
	'before the crash, the index on grp finds every row');
my $log_offset = -s $node->logfile;
crash_and_compare('crash after inserts into freed slots');
is($node->safe_psql('postgres', $churn_sql), $churned, 'after recovery too');
my ($rebuilds) = slurp_file($node->logfile, $log_offset) =~
  /replayed in commit order in [\d.]+ s \(\d+ rows, (\d+) index rebuilds\)/;
ok(defined $rebuilds && $rebuilds <= 2,
	'300 calls given freed slots were replayed with ' . ($rebuilds // 'no') . ' index rebuilds');

# 15. The way out when a call cannot be repeated: an edit of pg_proc,
# which pg_fastckpt does not watch, changes what one call writes and makes
# another fail.  Recovery keeps the tables closed; with
# recovery_accept_call_mismatch it goes on, keeps the first call's new
# writes, skips the second, and a checkpoint makes that final.
$node->safe_psql('postgres', q{
CREATE TABLE app.mm (id int PRIMARY KEY, v int NOT NULL) USING fastckpt;
INSERT INTO app.mm VALUES (1, 0), (2, 0);
CREATE FUNCTION app.step() RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT 1';
CREATE FUNCTION app.divisor() RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT 1';
CREATE FUNCTION app.add_step(p int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	UPDATE app.mm SET v = v + app.step() WHERE id = p;
END $$;
CREATE FUNCTION app.add_ratio(p int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	UPDATE app.mm SET v = v + 10 / app.divisor() WHERE id = p;
END $$;
SELECT fastckpt_register_procedure('app.add_step(int)');
SELECT fastckpt_register_procedure('app.add_ratio(int)');
SELECT fastckpt_checkpoint();
});
$node->safe_psql('postgres', "SELECT app.add_step(1);\nSELECT app.add_ratio(2);\nSELECT app.add_step(1);");
is($node->safe_psql('postgres', q{
	SELECT sum(call_records) FROM fastckpt_procedures
	 WHERE routine IN ('app.add_step(int)'::regprocedure, 'app.add_ratio(int)'::regprocedure)}),
	'3', 'the three calls are CALL records');
is($node->safe_psql('postgres', 'SELECT string_agg(v::text, \',\' ORDER BY id) FROM app.mm'),
	'2,10', 'before the crash');
$node->safe_psql('postgres', q{
UPDATE pg_proc SET prosrc = 'SELECT 5' WHERE oid = 'app.step()'::regprocedure;
UPDATE pg_proc SET prosrc = 'SELECT 0' WHERE oid = 'app.divisor()'::regprocedure;
});
ok(crash_postmaster($node, 1), 'kill -9 with calls that replay otherwise in the log');
$node->start;
$node->poll_query_until('postgres', q{SELECT error IS NOT NULL FROM fastckpt_stat_recovery})
  or die 'recovery neither failed nor finished';
like($node->safe_psql('postgres', 'SELECT error FROM fastckpt_stat_recovery'),
	qr/routine app\.add_step\(integer\) .* wrote something else at replay/,
	'without the setting, recovery stops at the first call that writes otherwise');
$node->append_conf('postgresql.conf', "pg_fastckpt.recovery_accept_call_mismatch = on\n");
$log_offset = -s $node->logfile;
$node->restart;
wait_for_tables_open($node);
my $log = slurp_file($node->logfile, $log_offset);
like($log, qr/WARNING:  pg_fastckpt: the call of routine app\.add_step\(integer\) .* wrote something else at replay.*\n.*DETAIL:  The replayed call's writes stand\./,
	'with it, a warning names the call that wrote otherwise');
like($log, qr/WARNING:  pg_fastckpt: replaying the call of routine app\.add_ratio\(integer\) .* failed: division by zero\n.*DETAIL:  The call is skipped/,
	'... and the call that failed');
is($node->safe_psql('postgres', 'SELECT calls_mismatched FROM fastckpt_stat_recovery'), '3',
	'fastckpt_stat_recovery counts the three');
is($node->safe_psql('postgres', 'SELECT string_agg(v::text, \',\' ORDER BY id) FROM app.mm'),
	'10,0', 'the tables open with what replay wrote');
$node->poll_query_until('postgres', 'SELECT checkpoints > 0 FROM fastckpt_stat_checkpointer')
  or die 'no checkpoint after the accepted calls';
$node->append_conf('postgresql.conf', "pg_fastckpt.recovery_accept_call_mismatch = off\n");
$node->reload;
crash_and_compare('crash once that checkpoint is taken, the setting off again');
is($node->safe_psql('postgres', 'SELECT string_agg(v::text, \',\' ORDER BY id) FROM app.mm'),
	'10,0', 'the accepted result stays');

# 16. Recovery's processes do not take the database's settings that would
# make its writes or lock waits fail: a read-only default that writers
# turn off for themselves, a lock_timeout.  Among the calls, some that
# move a row to another slot (an indexed column changes) and then update
# it again: reading the slot they left is their own doing, no read
# conflict.
$node->safe_psql('postgres', q{
CREATE TABLE app.moves (id int PRIMARY KEY, grp int NOT NULL, n int NOT NULL) USING fastckpt;
CREATE INDEX moves_grp ON app.moves (grp);
INSERT INTO app.moves SELECT g, g % 10, 0 FROM generate_series(1, 100) g;
CREATE FUNCTION app.move_and_bump(p int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	UPDATE app.moves SET grp = grp + 100 WHERE id = p;
	UPDATE app.moves SET n = n + 1 WHERE id = p;
	UPDATE app.moves SET grp = grp - 100 WHERE id = p;
END $$;
ALTER FUNCTION app.move_and_bump(int) SET enable_seqscan = off;
SELECT fastckpt_register_procedure('app.move_and_bump(int)');
});
$node->safe_psql('postgres', q{
ALTER DATABASE postgres SET default_transaction_read_only = on;
ALTER DATABASE postgres SET lock_timeout = '1ms';
});
$node->safe_psql('postgres', 'SET default_transaction_read_only = off; SELECT app.add_step(2)');
$node->safe_psql('postgres', 'SET default_transaction_read_only = off;
	SELECT app.move_and_bump(5); SELECT app.move_and_bump(5); SELECT app.move_and_bump(6)');
is($node->safe_psql('postgres', q{
	SELECT string_agg(call_records::text, ',' ORDER BY routine::text) FROM fastckpt_procedures
	 WHERE routine IN ('app.add_step(int)'::regprocedure, 'app.move_and_bump(int)'::regprocedure)}),
	'1,3', 'a call made with default_transaction_read_only set off for the session, and calls that move a row and update it again, are CALL records');
cmp_ok(crash_and_compare('crash with a read-only default on the database'), '>=', 1,
	'... replays, as a write');
is($node->safe_psql('postgres', q{
	SELECT string_agg(id || '/' || grp || '/' || n, ',' ORDER BY id) FROM app.moves WHERE n > 0}),
	'5/5/2,6/6/1', 'the calls that moved rows replayed as they ran');
is($node->safe_psql('postgres', q{
	SET enable_seqscan = off; SET enable_bitmapscan = off;
	SELECT count(*) FROM app.moves WHERE grp BETWEEN 0 AND 9}),
	'100', '... and the index on the moved column finds every row once');
$node->safe_psql('postgres', q{
SET default_transaction_read_only = off;
ALTER DATABASE postgres RESET default_transaction_read_only;
ALTER DATABASE postgres RESET lock_timeout;
});

# 17. A money literal in a routine's query reads with the session's
# lc_monetary ('1' is a hundred cents, or one yen): a CALL record carries
# it, a session that changes it plans afresh, and replay reads the literal
# alike whatever the server's lc_monetary is when it restarts.  Needs a
# locale with other monetary rules than C's (test/run_tests.sh makes
# ja_JP.UTF-8).
SKIP:
{
	skip 'no ja_JP.UTF-8 locale here: lc_monetary is not tested', 6
	  if $node->psql('postgres', q{SET lc_monetary = 'ja_JP.UTF-8'}) != 0;
	$node->safe_psql('postgres', q{
CREATE TABLE app.wallet (id int PRIMARY KEY, m money NOT NULL) USING fastckpt;
INSERT INTO app.wallet VALUES (1, 0);
CREATE FUNCTION app.pay() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	UPDATE app.wallet SET m = m + '1'::money WHERE id = 1;
END $$;
SELECT fastckpt_register_procedure('app.pay()');
});
	$node->safe_psql('postgres', q{SET lc_monetary = 'C'; SELECT app.pay();
		SET lc_monetary = 'ja_JP.UTF-8'; SELECT app.pay();
		SET lc_monetary = 'C.UTF-8'; SELECT app.pay()});
	my $cents_sql = q{SET lc_monetary = 'C'; SELECT (m::numeric * 100)::int FROM app.wallet};
	is($node->safe_psql('postgres', $cents_sql), '201',
		'a hundred cents, one yen, a hundred cents: the literal read with each call\'s lc_monetary');
	is($node->safe_psql('postgres', q{SELECT call_records FROM fastckpt_procedures
		WHERE routine = 'app.pay()'::regprocedure}), '3', '... each call a CALL record');
	$node->safe_psql('postgres', q{ALTER SYSTEM SET lc_monetary = 'ja_JP.UTF-8'; SELECT pg_reload_conf()});
	cmp_ok(crash_and_compare('crash after calls under several lc_monetary, the server\'s changed'),
		'>=', 3, '... replayed');
	is($node->safe_psql('postgres', $cents_sql), '201', '... each with the lc_monetary it ran with');
	$node->safe_psql('postgres', q{ALTER SYSTEM RESET lc_monetary; SELECT pg_reload_conf()});
}

# Index expressions of rows that the serial replay puts back run as the
# table's owner in a security-restricted operation, as index_build and
# REINDEX run them (h36 A: they ran as the bootstrap superuser, so any role
# with an expression index became superuser at the next crash).
$node->safe_psql('postgres', q{
CREATE ROLE mal LOGIN;
CREATE SCHEMA mal AUTHORIZATION mal;
SET ROLE mal;
CREATE TABLE mal.seen (v int, cu name, restricted bool);
CREATE TABLE mal.c (id int PRIMARY KEY, n int) USING fastckpt;
INSERT INTO mal.c VALUES (1, 0);
CREATE TABLE mal.t (id int PRIMARY KEY, v int) USING fastckpt;
CREATE FUNCTION mal.note(v int) RETURNS int LANGUAGE plpgsql VOLATILE AS $$
DECLARE
	restricted bool := false;
BEGIN
	BEGIN
		CREATE TEMP TABLE mal_probe (x int);
		DROP TABLE mal_probe;
	EXCEPTION WHEN insufficient_privilege THEN
		restricted := true;
	END;
	INSERT INTO mal.seen VALUES (v, current_user, restricted);
	RETURN 0;
END $$;
CREATE FUNCTION mal.f(int) RETURNS int LANGUAGE plpgsql IMMUTABLE
	AS $$BEGIN PERFORM mal.note($1); RETURN $1; END$$;
CREATE INDEX t_f ON mal.t (mal.f(v));
CREATE FUNCTION mal.bump(k int) RETURNS void LANGUAGE sql
	AS 'UPDATE mal.c SET n = n + 1 WHERE id = k';
SELECT fastckpt_register_procedure('mal.bump(int)');
RESET ROLE;
SELECT fastckpt_checkpoint();
});
$node->safe_psql('postgres', q{SET ROLE mal; SELECT mal.bump(1); INSERT INTO mal.t VALUES (2, 2); TRUNCATE mal.seen});
ok(crash_and_compare('crash after a call and a row of a table with an expression index') >= 1,
	'... the call was replayed, and the row after it serially');
is($node->safe_psql('postgres', q{SELECT string_agg(DISTINCT cu || ':' || restricted, ',') FROM mal.seen WHERE v = 2}),
	'mal:true', 'replay indexed the row as the table owner, in a security-restricted operation');
is($node->safe_psql('postgres', q{SET enable_seqscan = off; SELECT id FROM mal.t WHERE mal.f(v) = 2}),
	'2', '... and the index finds it');

ok(!$node->log_contains('TRAP:|terminated by signal 11|PANIC'),
	'no assertion failure, segfault or PANIC in the log');

$node->stop;
done_testing();
