# Logical replication into fastckpt tables: the apply worker's commits
# carry the subscription's progress in PostgreSQL's commit record, which
# must be as durable as the rows.  Were it not, a subscriber crash right
# after an apply would bring the rows back but not the progress, and the
# publisher would send the same transactions again: every row twice, or a
# subscription stuck on "duplicate key".
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use FastckptTest;

my $pub = PostgreSQL::Test::Cluster->new('publisher');
$pub->init(allows_streaming => 'logical');
$pub->start;
$pub->safe_psql('postgres', q{
CREATE TABLE t (id int PRIMARY KEY, v int);
CREATE TABLE nopk (id int, v int);
ALTER TABLE nopk REPLICA IDENTITY FULL;
CREATE PUBLICATION p FOR TABLE t, nopk;
});

# the WAL writer's delay widens the window in which an asynchronous commit
# record is not yet on disk (apply workers commit asynchronously)
my $sub = fastckpt_node('subscriber', "wal_writer_delay = '10s'\nwal_level = logical\n");
wait_for_tables_open($sub);
$sub->safe_psql('postgres', q{
CREATE TABLE t (id int PRIMARY KEY, v int) USING fastckpt;
CREATE TABLE nopk (id int, v int) USING fastckpt;
});
my $connstr = $pub->connstr . ' dbname=postgres';
$sub->safe_psql('postgres', "CREATE SUBSCRIPTION s CONNECTION '$connstr' PUBLICATION p");
$sub->poll_query_until('postgres',
	q{SELECT count(*) = 0 FROM pg_subscription_rel WHERE srsubstate <> 'r'})
  or die 'the tables were not synchronized';

for my $round (1 .. 3)
{
	my $lo = ($round - 1) * 100 + 1;
	my $hi = $round * 100;
	$pub->safe_psql('postgres', "INSERT INTO t SELECT g, g FROM generate_series($lo, $hi) g;
		INSERT INTO nopk SELECT g, g FROM generate_series($lo, $hi) g");
	$sub->poll_query_until('postgres', "SELECT count(*) = $hi FROM nopk")
	  or die "round $round was not applied";
	my $offset = -s $sub->logfile;
	crash_postmaster($sub, 1);
	$sub->start;
	wait_for_tables_open($sub);
	# whatever was lost comes again; nothing comes twice
	$sub->poll_query_until('postgres', "SELECT count(*) >= $hi FROM t")
	  or diag('the subscriber did not catch up');
	$pub->wait_for_catchup('s');
	is($sub->safe_psql('postgres', 'SELECT count(*), count(DISTINCT id) FROM nopk'), "$hi|$hi",
		"round $round: after kill -9 of the subscriber every row is there once (no primary key)");
	is($sub->safe_psql('postgres', 'SELECT count(*) FROM t'), $hi,
		"round $round: ... and with a primary key");
	ok(!$sub->log_contains('duplicate key value', $offset),
		"round $round: ... and the apply worker met no duplicate key");
}

# Logical decoding of a node with fastckpt tables: the WAL record that puts
# a commit's xid on disk (a transaction that also wrote WAL, or too large
# for one log record) reaches no consumer of the changes.
$sub->safe_psql('postgres', q{
CREATE TABLE h (id int PRIMARY KEY, v int);
CREATE PUBLICATION hp FOR TABLE h;
SELECT pg_create_logical_replication_slot('decode', 'pgoutput');
BEGIN;
INSERT INTO t VALUES (-1, -1);
INSERT INTO h VALUES (1, 1);
COMMIT;
INSERT INTO nopk SELECT g, g FROM generate_series(1, 20000) g;
});
is($sub->safe_psql('postgres', q{
	SELECT count(*) FILTER (WHERE get_byte(data, 0) = ascii('I')) || ' inserts, ' ||
		count(*) FILTER (WHERE get_byte(data, 0) = ascii('M')) || ' messages'
	FROM pg_logical_slot_get_binary_changes('decode', NULL, NULL,
		'proto_version', '1', 'publication_names', 'hp', 'messages', 'true')}),
	'1 inserts, 0 messages',
	'logical decoding: the heap insert is decoded, and no message of pg_fastckpt');
$sub->safe_psql('postgres', q{SELECT pg_drop_replication_slot('decode')});

# Subscriptions' apply workers hold every free worker slot when recovery
# needs one (a database's index rebuild): recovery frees one, whose
# subscription resumes, rather than keep the tables closed for ever.  The
# pause before the rebuild lets the launcher start its workers first.
$pub->safe_psql('postgres', q{
CREATE TABLE h1 (id int PRIMARY KEY);
CREATE TABLE h2 (id int PRIMARY KEY);
CREATE PUBLICATION p1 FOR TABLE h1;
CREATE PUBLICATION p2 FOR TABLE h2;
});
$sub->safe_psql('postgres', 'CREATE TABLE h1 (id int PRIMARY KEY); CREATE TABLE h2 (id int PRIMARY KEY)');
$sub->safe_psql('postgres', "CREATE SUBSCRIPTION s1 CONNECTION '$connstr' PUBLICATION p1");
$sub->safe_psql('postgres', "CREATE SUBSCRIPTION s2 CONNECTION '$connstr' PUBLICATION p2");
$sub->poll_query_until('postgres',
	q{SELECT count(*) = 0 FROM pg_subscription_rel WHERE srsubstate <> 'r'})
  or die 'the new tables were not synchronized';
# apply workers commit asynchronously: make the synchronized state durable,
# or the crash brings back a table synchronization, which needs a slot more
$sub->safe_psql('postgres', 'CHECKPOINT');
# workers registered at start: pg_fastckpt's three (its log writer and
# checkpointer are not in pg_stat_activity) and the replication launcher
my $static = 4;
# room for exactly the three apply workers
$sub->append_conf('postgresql.conf', 'max_worker_processes = ' . ($static + 3) . "
pg_fastckpt.test_checkpoint_pause = 'rebuild'
pg_fastckpt.test_checkpoint_pause_ms = '3s'
");
my $offset = -s $sub->logfile;
crash_postmaster($sub, 1);
$sub->start;
my $open = 0;
for (my $i = 0; $i < 300 && !$open; $i++)
{
	$open = $sub->safe_psql('postgres', 'SELECT tables_open FROM fastckpt_stat_recovery') eq 't';
	select(undef, undef, undef, 0.1) unless $open;
}
ok($open, 'apply workers holding every free worker slot do not keep the tables closed');
ok($sub->log_contains('terminating logical replication worker \(process \d+\) to free a background worker slot for startup recovery', $offset),
	'... recovery freed a slot, as logged');
$pub->safe_psql('postgres', 'INSERT INTO h1 VALUES (1); INSERT INTO h2 VALUES (2); INSERT INTO t VALUES (1000, 1000)');
ok($sub->poll_query_until('postgres',
		'SELECT (SELECT count(*) FROM h1) + (SELECT count(*) FROM h2) + (SELECT count(*) FROM t WHERE id = 1000) = 3'),
	'... and every subscription goes on');
is($sub->safe_psql('postgres',
		q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'logical replication worker'}),
	'3', '... each with its apply worker');

# A two_phase subscription's apply worker prepares transactions without
# PREPARE TRANSACTION, so pg_fastckpt could not finish them: it refuses
# the PREPARE, applies nothing half, and the hint names the way out.
$pub->append_conf('postgresql.conf', "max_prepared_transactions = 2\n");
$pub->restart;
$pub->safe_psql('postgres', 'CREATE TABLE tp (id int PRIMARY KEY); CREATE PUBLICATION ptp FOR TABLE tp');
# (a fourth apply worker, and a table synchronization worker)
$sub->append_conf('postgresql.conf', 'max_worker_processes = ' . ($static + 6) . "
max_logical_replication_workers = 6
max_prepared_transactions = 2
pg_fastckpt.test_checkpoint_pause = ''
");
$sub->restart;
wait_for_tables_open($sub);
$sub->safe_psql('postgres', 'CREATE TABLE tp (id int PRIMARY KEY) USING fastckpt');
$sub->safe_psql('postgres',
	"CREATE SUBSCRIPTION s3 CONNECTION '$connstr' PUBLICATION ptp WITH (two_phase = true)");
$sub->poll_query_until('postgres',
	q{SELECT count(*) = 0 FROM pg_subscription_rel WHERE srsubstate <> 'r'})
  or die 'tp was not synchronized';
$sub->poll_query_until('postgres', q{SELECT subtwophasestate = 'e' FROM pg_subscription WHERE subname = 's3'})
  or die 'two_phase was not enabled';
$offset = -s $sub->logfile;
$pub->safe_psql('postgres', "BEGIN; INSERT INTO tp VALUES (1); PREPARE TRANSACTION 'remote'");
ok($sub->wait_for_log(
		qr/ERROR:  cannot PREPARE a transaction that has written to fastckpt tables other than with PREPARE TRANSACTION\n.*\n.*HINT:  For a logical replication subscription that writes fastckpt tables, set two_phase = false\./,
		$offset),
	'a two_phase subscription\'s PREPARE into a fastckpt table is refused, with the way out');
is($sub->safe_psql('postgres', 'SELECT (SELECT count(*) FROM tp) || \'/\' || (SELECT count(*) FROM pg_prepared_xacts)'),
	'0/0', '... and nothing of it is applied or prepared');
$pub->safe_psql('postgres', "COMMIT PREPARED 'remote'");
$sub->safe_psql('postgres', 'DROP SUBSCRIPTION s3');
$sub->safe_psql('postgres',
	"CREATE SUBSCRIPTION s3 CONNECTION '$connstr' PUBLICATION ptp WITH (two_phase = false, copy_data = true)");
ok($sub->poll_query_until('postgres', 'SELECT count(*) = 1 FROM tp'),
	'without two_phase, the transaction arrives');

$sub->stop;
$pub->stop;
done_testing();
