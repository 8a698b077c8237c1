# Row locks of prepared transactions across crashes and restarts: FOR
# UPDATE, FOR SHARE and the KEY SHARE locks of foreign key checks (from a
# fastckpt and from a heap referencing table, two prepared transactions on
# one row) come back after kill -9 and after a clean restart as the
# prepared transactions' own, and keep conflicting writers and lockers out
# until COMMIT or ROLLBACK PREPARED, while what those locks let through
# still goes through.  A row another transaction moved to a new slot after
# it was locked, before the PREPARE, stays locked where it lives now,
# VACUUM between the two included; one moved by a transaction prepared
# itself, in whichever slot holds it once that one ends.  A move of a row a
# prepared transaction locks waits for that transaction.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use FastckptTest;

my $node = fastckpt_node('prepared_row_locks', q{
max_prepared_transactions = 5
pg_fastckpt.checkpoint_timeout = '1h'
pg_fastckpt.max_log_size = 0
});
wait_for_tables_open($node);
$node->safe_psql('postgres', q{
CREATE TABLE parent (id int PRIMARY KEY, k int NOT NULL, v int NOT NULL) USING fastckpt;
CREATE INDEX parent_k ON parent (k);
CREATE TABLE child (id int PRIMARY KEY, parent_id int REFERENCES parent) USING fastckpt;
CREATE UNLOGGED TABLE heap_child (id int PRIMARY KEY, parent_id int REFERENCES parent) USING heap;
INSERT INTO parent SELECT g, g, g FROM generate_series(1, 20) g;
CREATE FUNCTION prepared_files() RETURNS bigint LANGUAGE sql
  AS $$SELECT count(*) FROM pg_ls_dir('pg_fastckpt/prepared', true, false)$$;
});

# Run a statement in a transaction rolled back after it: 'blocked' if a
# row lock kept it out (lock_timeout, NOWAIT), 'passed' if it ran.
sub probe
{
	my ($sql) = @_;
	my ($rc, $out, $err) = $node->psql('postgres',
		"SET lock_timeout = '300ms'; BEGIN; $sql; ROLLBACK;");
	return 'blocked'
	  if $err =~ /canceling statement due to lock timeout|could not obtain lock on row/;
	return $rc == 0 && $err eq '' ? 'passed' : "failed: $err";
}

# What each prepared transaction's locks let through, and what not.
my @while_prepared = (
	[ 'DELETE FROM parent WHERE id = 1', 'blocked', 'a row two foreign key checks locked: DELETE' ],
	[ 'UPDATE parent SET v = v + 1 WHERE id = 1', 'passed', '... an update of no key, in place (KEY SHARE lets it through)' ],
	[ 'UPDATE parent SET k = k + 1000 WHERE id = 1', 'blocked', '... an update of an indexed column, which moves the row: waits' ],
	[ 'SELECT 1 FROM parent WHERE id = 1 FOR SHARE NOWAIT', 'passed', '... FOR SHARE' ],
	[ 'UPDATE parent SET v = 0 WHERE id = 2', 'blocked', 'a row locked FOR UPDATE: UPDATE' ],
	[ 'SELECT 1 FROM parent WHERE id = 2 FOR KEY SHARE NOWAIT', 'blocked', '... FOR KEY SHARE' ],
	[ 'DELETE FROM parent WHERE id = 3', 'blocked', 'a row moved after its lock, before the PREPARE: DELETE' ],
	[ 'SELECT 1 FROM parent WHERE k = 300 FOR UPDATE NOWAIT', 'blocked', '... FOR UPDATE' ],
	[ 'DELETE FROM parent WHERE id = 7', 'blocked', 'the same, VACUUM run between the move and the PREPARE: DELETE' ],
	[ 'UPDATE parent SET v = 0 WHERE id = 4', 'blocked', 'a row locked FOR SHARE by a transaction that only locked: UPDATE' ],
	[ 'SELECT 1 FROM parent WHERE id = 4 FOR SHARE NOWAIT', 'passed', '... FOR SHARE' ],
	[ 'DELETE FROM parent WHERE id = 5', 'passed', 'a row nobody locked: DELETE' ],
	[ 'SELECT 1 FROM parent WHERE id = 6 FOR UPDATE NOWAIT', 'passed', 'a row whose lock went with a rolled-back savepoint' ]);

sub check_probes
{
	my ($when, @cases) = @_;
	for my $c (@cases)
	{
		is(probe($c->[0]), $c->[1], "$when: $c->[2]");
	}
}

# vacuumed, first (prepared transactions hold VACUUM's horizon back): its
# KEY SHARE lock lets another transaction move the row to a new slot, the
# mover's xid older than the locker's, and VACUUM runs between the move and
# the PREPARE (the locker, idle in READ COMMITTED, holds back no snapshot):
# the row's old slot must stay for the PREPARE to find where the row went
my $older = $node->background_psql('postgres');
$older->query_safe(q{BEGIN});
$older->query_safe(q{SELECT txid_current()});
my $bg = $node->background_psql('postgres');
$bg->query_safe(q{BEGIN});
$bg->query_safe(q{SELECT 1 FROM parent WHERE id = 7 FOR KEY SHARE});
$older->query_safe(q{UPDATE parent SET k = 700 WHERE id = 7});
$older->query_safe(q{COMMIT});
$older->quit;
$node->safe_psql('postgres', q{VACUUM parent});
$bg->query_safe(q{PREPARE TRANSACTION 'vacuumed'});
$bg->quit;
# fk_a: a foreign key check from a fastckpt table
$node->safe_psql('postgres', q{
	BEGIN;
	INSERT INTO child VALUES (1, 1);
	PREPARE TRANSACTION 'fk_a';
});
# fk_b: one from a heap table on the same row, and FOR UPDATE on another;
# a lock of a rolled-back savepoint is not kept
$node->safe_psql('postgres', q{
	BEGIN;
	INSERT INTO heap_child VALUES (1, 1);
	SELECT 1 FROM parent WHERE id = 2 FOR UPDATE;
	SAVEPOINT s;
	SELECT 1 FROM parent WHERE id = 6 FOR UPDATE;
	ROLLBACK TO SAVEPOINT s;
	PREPARE TRANSACTION 'fk_b';
});
# moved: its KEY SHARE lock lets another transaction move the row to a new
# slot (an indexed column changes) before it prepares
$bg = $node->background_psql('postgres');
$bg->query_safe(q{BEGIN});
$bg->query_safe(q{SELECT 1 FROM parent WHERE id = 3 FOR KEY SHARE});
$node->safe_psql('postgres', q{UPDATE parent SET k = 300 WHERE id = 3});
$bg->query_safe(q{PREPARE TRANSACTION 'moved'});
$bg->quit;
# share: a transaction that only locked a row
$node->safe_psql('postgres', q{
	BEGIN;
	SELECT 1 FROM parent WHERE id = 4 FOR SHARE;
	PREPARE TRANSACTION 'share';
});
is($node->safe_psql('postgres', q{SELECT string_agg(gid, ',' ORDER BY gid) FROM pg_prepared_xacts}),
	'fk_a,fk_b,moved,share,vacuumed', 'five transactions prepared with row locks');
is($node->safe_psql('postgres', 'SELECT prepared_files()'), '5',
	'each has a file, the one that only locked rows too');

check_probes('prepared', @while_prepared);

ok(crash_postmaster($node, 1), 'all server processes gone after kill -9');
$node->start;
wait_for_tables_open($node);
ok($node->log_contains(qr/prepared transaction \d+ \("share"\): 0 changed rows and 1 row locks put back/),
	'the log counts the locks put back');
check_probes('after kill -9', @while_prepared);

$node->restart;
wait_for_tables_open($node);
check_probes('after a clean restart', @while_prepared);

# A move waiting for a prepared transaction goes ahead once it commits.
my $mover = $node->background_psql('postgres');
$mover->query_until(qr/started/, q{
	\echo started
	UPDATE parent SET k = 3000 WHERE id = 3;
	\echo moved
});
ok(poll_until_true($node, 'postgres', q{SELECT count(*) > 0 FROM pg_stat_activity
	WHERE wait_event_type = 'Lock' AND query LIKE 'UPDATE parent SET k = 3000%'}),
	'a move of a row the prepared transaction locks waits');
$node->safe_psql('postgres', q{ROLLBACK PREPARED 'moved'});
$mover->query_until(qr/moved/, '');
$mover->quit;
is($node->safe_psql('postgres', 'SELECT k FROM parent WHERE id = 3'), '3000',
	'... and moves the row after ROLLBACK PREPARED');

# Two transactions shared a lock: the row stays locked until both end.
$node->safe_psql('postgres', q{COMMIT PREPARED 'fk_a'});
is(probe('SELECT 1 FROM parent WHERE id = 1 FOR UPDATE NOWAIT'), 'blocked',
	'COMMIT PREPARED of one of two key-share lockers: the other still holds the row');
$node->safe_psql('postgres', q{COMMIT PREPARED 'fk_b'; COMMIT PREPARED 'share'; COMMIT PREPARED 'vacuumed'});
check_probes('all finished',
	[ 'SELECT 1 FROM parent WHERE id = 1 FOR UPDATE NOWAIT', 'passed', 'the shared row' ],
	[ 'UPDATE parent SET k = k + 1000 WHERE id = 1', 'passed', '... moves' ],
	[ 'UPDATE parent SET v = 0 WHERE id = 2', 'passed', 'the row locked FOR UPDATE' ],
	[ 'DELETE FROM parent WHERE id = 3', 'passed', 'the moved row' ],
	[ 'DELETE FROM parent WHERE id = 7', 'passed', 'the moved and vacuumed one' ],
	[ 'UPDATE parent SET v = 0 WHERE id = 4', 'passed', 'the row locked FOR SHARE' ]);
is($node->safe_psql('postgres', 'SELECT prepared_files()'), '0', 'their files are gone');
# (heap_child is UNLOGGED, as a heap table referencing a fastckpt one must
# be: the crash emptied it, as PostgreSQL does)
is($node->safe_psql('postgres', q{SELECT string_agg(id || ':' || parent_id, ',') FROM child}),
	'1:1', 'the child the first transaction inserted is committed');

# Rows the locker holds that other transactions moved and then prepared:
# its PREPARE does not wait for them (h46), its file locks each row in both
# slots, and after a restart the slot that holds the row keeps the lock,
# whichever way the mover ends.
$bg = $node->background_psql('postgres');
$bg->query_safe(q{BEGIN});
$bg->query_safe(q{SELECT 1 FROM parent WHERE id IN (8, 9) FOR KEY SHARE});
$node->safe_psql('postgres', q{
	BEGIN; UPDATE parent SET k = 800 WHERE id = 8; PREPARE TRANSACTION 'mover8';
	BEGIN; UPDATE parent SET k = 900 WHERE id = 9; PREPARE TRANSACTION 'mover9';
});
$bg->query_safe(q{SET statement_timeout = '20s'});
$bg->query_safe(q{PREPARE TRANSACTION 'locker'});
$bg->quit;
# self_moved: FOR UPDATE, then its own move of the row (an indexed column,
# not the key), which holds the row less strongly than the lock (h47)
$node->safe_psql('postgres', q{
	BEGIN;
	SELECT 1 FROM parent WHERE id = 12 FOR UPDATE;
	UPDATE parent SET k = 1200 WHERE id = 12;
	PREPARE TRANSACTION 'self_moved';
});
is(probe('SELECT 1 FROM parent WHERE id = 12 FOR KEY SHARE NOWAIT'), 'blocked',
	'a row locked FOR UPDATE, then moved by the same transaction: FOR KEY SHARE waits');
pass('PREPARE of rows that prepared transactions moved does not wait for them');
ok(crash_postmaster($node, 1), 'with movers and a locker prepared: all server processes gone after kill -9');
$node->start;
wait_for_tables_open($node);
ok($node->log_contains(qr/prepared transaction \d+ \("locker"\): 0 changed rows and 4 row locks put back/),
	'the locker\'s locks are put back in the old and the new slot of each row');
$node->safe_psql('postgres', q{ROLLBACK PREPARED 'mover8'; COMMIT PREPARED 'mover9'});
check_probes('mover of row 8 rolled back, of row 9 committed',
	[ 'DELETE FROM parent WHERE id = 8', 'blocked', 'row 8, back in its old slot: DELETE' ],
	[ 'DELETE FROM parent WHERE id = 9', 'blocked', 'row 9, in its new slot: DELETE' ],
	[ 'UPDATE parent SET v = v + 1 WHERE id IN (8, 9)', 'passed', '... updates in place' ],
	[ 'SELECT 1 FROM parent WHERE id = 12 FOR KEY SHARE NOWAIT', 'blocked', 'the row locked FOR UPDATE and moved by its locker: FOR KEY SHARE' ]);
$node->safe_psql('postgres', q{COMMIT PREPARED 'locker'; ROLLBACK PREPARED 'self_moved'});
check_probes('locker finished',
	[ 'DELETE FROM parent WHERE id IN (8, 9)', 'passed', 'rows 8 and 9: DELETE' ]);
is($node->safe_psql('postgres', 'SELECT prepared_files()'), '0', 'no file left');

# A prepared mover that moved the row twice: the slot in between holds the
# row in neither outcome, and once the mover rolled back and VACUUM freed
# it, rows inserted there must not come back locked (h48).
$bg = $node->background_psql('postgres');
$bg->query_safe(q{BEGIN});
$bg->query_safe(q{SELECT 1 FROM parent WHERE id = 13 FOR KEY SHARE});
$node->safe_psql('postgres', q{
	BEGIN;
	UPDATE parent SET k = 1300 WHERE id = 13;
	UPDATE parent SET k = 1301 WHERE id = 13;
	PREPARE TRANSACTION 'mover13';
});
$bg->query_safe(q{PREPARE TRANSACTION 'locker13'});
$bg->quit;
$node->restart;
wait_for_tables_open($node);
$node->safe_psql('postgres', q{ROLLBACK PREPARED 'mover13'});
$node->safe_psql('postgres', q{VACUUM parent});
$node->safe_psql('postgres', q{INSERT INTO parent SELECT g, g, g FROM generate_series(50, 59) g});
$node->restart;
wait_for_tables_open($node);
check_probes('a locker of a row moved twice by a prepared mover that rolled back',
	[ 'DELETE FROM parent WHERE id = 13', 'blocked', 'the row, in its old slot: DELETE' ],
	[ 'DELETE FROM parent WHERE id BETWEEN 50 AND 59', 'passed', 'rows inserted since: DELETE' ]);
$node->safe_psql('postgres', q{COMMIT PREPARED 'locker13'});

# A prepared transaction that read a large table through its index holds a
# lock on the index: recovery must not build it in parallel (its workers
# would wait for that lock for ever; h48).
$node->safe_psql('postgres', q{
	CREATE TABLE big (id int PRIMARY KEY, pad text) USING fastckpt;
	INSERT INTO big SELECT g, repeat('x', 100) FROM generate_series(1, 150000) g;
	BEGIN;
	SET LOCAL enable_seqscan = off;
	SELECT 1 FROM big WHERE id = 5 FOR KEY SHARE;
	PREPARE TRANSACTION 'reader';
});
ok(crash_postmaster($node, 1), 'a prepared reader of a large table: all server processes gone after kill -9');
$node->start;
wait_for_tables_open($node);
is($node->safe_psql('postgres',
		q{SELECT indisvalid FROM pg_index WHERE indexrelid = 'big_pkey'::regclass}),
	't', 'recovery rebuilds its index, valid');
is($node->safe_psql('postgres', q{SET enable_seqscan = off; SELECT count(*) FROM big WHERE id BETWEEN 1 AND 150000}),
	'150000', '... with every row');
is(probe('DELETE FROM big WHERE id = 5'), 'blocked', '... and the reader\'s lock holds');
$node->safe_psql('postgres', q{COMMIT PREPARED 'reader'; DROP TABLE big});

# A PREPARE landing in the middle of another transaction's move (the old
# row marked moved, the new one not yet there: held by a test pause) waits
# for the mover, then keeps its lock where the row went (h46, which found
# it returned at once and kept no lock).
$node->safe_psql('postgres', q{
	CREATE TABLE mid (id int PRIMARY KEY, k int NOT NULL) USING fastckpt;
	CREATE INDEX mid_k ON mid (k);
	INSERT INTO mid VALUES (1, 1), (2, 2);
});
$bg = $node->background_psql('postgres');
$bg->query_safe(q{BEGIN});
$bg->query_safe(q{SELECT 1 FROM mid WHERE id = 1 FOR KEY SHARE});
$mover = $node->background_psql('postgres');
$mover->query_safe(q{SET pg_fastckpt.test_move_pause = '4s'});
$mover->query_until(qr/started/, q{
	\echo started
	UPDATE mid SET k = 100 WHERE id = 1;
	\echo moved
});
ok(poll_until_true($node, 'postgres', q{SELECT count(*) > 0 FROM pg_stat_activity
	WHERE state = 'active' AND query LIKE 'UPDATE mid SET k = 100%'}),
	'a move held between marking the old row and inserting the new one');
usleep(300_000);
$bg->query_until(qr/sent/, q{
	\echo sent
	PREPARE TRANSACTION 'mid';
	\echo prepared
});
ok(poll_until_true($node, 'postgres', q{SELECT count(*) > 0 FROM pg_stat_activity
	WHERE wait_event_type = 'Lock' AND query LIKE 'PREPARE TRANSACTION ''mid''%'}),
	'... a PREPARE of a locker of that row then waits for the mover');
$mover->query_until(qr/moved/, '');
$mover->quit;
$bg->query_until(qr/prepared/, '');
$bg->quit;
ok(crash_postmaster($node, 1), 'all server processes gone after kill -9');
$node->start;
wait_for_tables_open($node);
is(probe('DELETE FROM mid WHERE id = 1'), 'blocked', '... and its lock holds the row in its new slot after the crash');
is(probe('DELETE FROM mid WHERE id = 2'), 'passed', '... and no other row');
$node->safe_psql('postgres', q{COMMIT PREPARED 'mid'; DROP TABLE mid});

# The tables closed (another prepared transaction's file damaged): a
# transaction that only locked rows commits meanwhile, its locks meaning
# nothing there; one that wrote rows does not (TAP 022).
my $dir = $node->data_dir . '/pg_fastckpt/prepared';
$node->safe_psql('postgres', q{BEGIN; UPDATE parent SET v = 99 WHERE id = 10; PREPARE TRANSACTION 'writer'});
my @writer_file = glob("$dir/*");
is(scalar(@writer_file), 1, 'the writer\'s file');
$node->safe_psql('postgres', q{
	BEGIN;
	SELECT 1 FROM parent WHERE id = 11 FOR SHARE;
	INSERT INTO heap_child VALUES (2, 11);
	PREPARE TRANSACTION 'locker';
});
$node->stop;
truncate($writer_file[0], 100) or die "truncate $writer_file[0]: $!";
$node->start;
ok($node->poll_query_until('postgres', q{SELECT error ~ 'is damaged' FROM fastckpt_stat_recovery}),
	'a damaged file keeps the tables closed');
my ($rc, $out, $err) = $node->psql('postgres', q{COMMIT PREPARED 'locker'});
is($rc, 0, 'COMMIT PREPARED of a transaction that only locked rows goes through') or diag($err);
is($node->safe_psql('postgres', q{SELECT string_agg(id || ':' || parent_id, ',') FROM heap_child}), '2:11',
	'... with its heap row');
($rc, $out, $err) = $node->psql('postgres', q{COMMIT PREPARED 'writer'});
like($err, qr/COMMIT PREPARED of a transaction that wrote fastckpt tables is not available/,
	'COMMIT PREPARED of the one that wrote is refused');
$node->safe_psql('postgres', q{ROLLBACK PREPARED 'writer'});
$node->restart;
wait_for_tables_open($node);
is($node->safe_psql('postgres', 'SELECT prepared_files()'), '0', 'the next start drops both files');
is($node->safe_psql('postgres', 'SELECT v FROM parent WHERE id = 10'), '10', '... and opens the tables, without the rolled back write');

ok(!$node->log_contains('TRAP:|terminated by signal 11|PANIC'),
	'no assertion failure, segfault or PANIC in the log');
$node->stop;
done_testing();
