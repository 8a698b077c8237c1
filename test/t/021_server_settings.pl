# Server settings that must not hold up checkpoints or keep fastckpt tables
# closed after a crash.
#
# A synchronous standby that is not there holds every commit that wrote WAL
# after its commit record is on local disk, as PostgreSQL does.  For
# fastckpt that must not also hold up checkpoints (they wait for commits in
# doubt, and this one is decided), nor keep the tables closed after a
# restart (recovery rebuilds indexes, which writes WAL and commits).
#
# A temp_file_limit must not fail recovery's index rebuilds (their sorts
# spill what no statement did: indexes grow row by row).
#
# default_table_access_method = fastckpt must not make the extension's own
# registry a fastckpt table, and a materialized view refused for it says
# why.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use FastckptTest;

my $node = fastckpt_node('server_settings', q{
pg_fastckpt.checkpoint_timeout = '1h'
wal_level = replica
max_wal_senders = 2
});
wait_for_tables_open($node);
$node->safe_psql('postgres', q{
	CREATE TABLE h (a int PRIMARY KEY);
	CREATE TABLE f (a int PRIMARY KEY) USING fastckpt;
	INSERT INTO f VALUES (1);
});
$node->safe_psql('postgres', "ALTER SYSTEM SET synchronous_standby_names = 'nosuch'");
# a restart, not a reload: the checkpointer applies a reloaded setting a
# moment later, and a loaded machine once ran the commit below before that
$node->restart;
wait_for_tables_open($node);

# a mixed commit, committed locally, waiting for the standby
my $held = $node->background_psql('postgres', on_error_stop => 0);
$held->query_until(qr/started/, q{\echo started
BEGIN; INSERT INTO h VALUES (2); INSERT INTO f VALUES (2); COMMIT;
});
ok( $node->poll_query_until('postgres',
		q{SELECT count(*) = 1 FROM pg_stat_activity WHERE wait_event = 'SyncRep'}),
	'a mixed heap + fastckpt commit waits for the synchronous standby');
# fastckpt-only commits write no WAL and do not wait
$node->safe_psql('postgres', 'INSERT INTO f VALUES (3)');

my $seq_before = $node->safe_psql('postgres', 'SELECT last_seq FROM fastckpt_stat_checkpointer');
my ($rc, $out, $err) = $node->psql('postgres',
	q{SET statement_timeout = '20s'; SELECT fastckpt_checkpoint(true)});
is($rc, 0, 'a checkpoint completes while that commit waits for the standby')
  or diag($err);
my ($seq, $csn) = split /\|/, $node->safe_psql('postgres',
	'SELECT last_seq, last_csn FROM fastckpt_stat_checkpointer');
cmp_ok($seq, '>', $seq_before, '... and is installed');

# kill -9: the commit is on local disk, so both rows come back, the
# fastckpt one from the checkpoint (nothing after it in the log)
$held->{run}->kill_kill;
ok(crash_postmaster($node), 'postmaster killed with SIGKILL');
$node->start;
my $open = 0;
for (my $i = 0; $i < 600 && !$open; $i++)
{
	$open = $node->safe_psql('postgres', 'SELECT tables_open FROM fastckpt_stat_recovery') eq 't';
	usleep(100_000) unless $open;
}
ok($open, 'recovery opens the tables although its commits cannot reach the standby');
is($node->safe_psql('postgres', 'SELECT string_agg(a::text, \',\' ORDER BY a) FROM f'),
	'1,2,3', 'the fastckpt rows are back, the held commit\'s among them');
is($node->safe_psql('postgres', 'SELECT string_agg(a::text, \',\' ORDER BY a) FROM h'),
	'2', 'so is its heap row');
is($node->safe_psql('postgres',
		'SELECT checkpoint_seq || \'|\' || checkpoint_csn || \'|\' || records_applied FROM fastckpt_stat_recovery'),
	"$seq|$csn|0", 'they came from the checkpoint taken while the commit waited');
is($node->safe_psql('postgres', 'SET enable_seqscan = off; SELECT a FROM f WHERE a = 2'),
	'2', 'the rebuilt index finds the row');

# temp_file_limit: binding for a session's index build, not for recovery's
$node->safe_psql('postgres', "ALTER SYSTEM RESET synchronous_standby_names");
$node->reload;
$node->safe_psql('postgres', q{
	CREATE TABLE notes (id int PRIMARY KEY, note text) USING fastckpt;
	CREATE INDEX notes_note ON notes (note);
	INSERT INTO notes SELECT g, md5(g::text) FROM generate_series(1, 100000) g;
});
$node->safe_psql('postgres', "ALTER SYSTEM SET temp_file_limit = '1MB'");
$node->safe_psql('postgres', "ALTER SYSTEM SET maintenance_work_mem = '1MB'");
$node->safe_psql('postgres', "ALTER SYSTEM SET max_parallel_maintenance_workers = 0");
$node->reload;
($rc, $out, $err) = $node->psql('postgres', 'REINDEX INDEX notes_note');
like($err, qr/temp_file_limit/, 'temp_file_limit stops a session\'s build of the index');
ok(crash_postmaster($node), 'postmaster killed with SIGKILL');
$node->start;
$open = 0;
for (my $i = 0; $i < 600 && !$open; $i++)
{
	$open = $node->safe_psql('postgres', 'SELECT tables_open FROM fastckpt_stat_recovery') eq 't';
	usleep(100_000) unless $open;
}
ok($open, 'recovery rebuilds it under the same temp_file_limit and opens the tables')
  or diag($node->safe_psql('postgres', 'SELECT error FROM fastckpt_stat_recovery'));
is($node->safe_psql('postgres',
		q{SET enable_seqscan = off; SELECT count(*) || '|' || min(id) FROM notes WHERE note = md5('77')}),
	'1|77', '... and the rebuilt index finds a row');

# default_table_access_method = fastckpt at CREATE EXTENSION
$node->safe_psql('postgres', 'CREATE DATABASE fc_default');
$node->safe_psql('postgres', 'ALTER DATABASE fc_default SET default_table_access_method = fastckpt');
$node->safe_psql('fc_default', 'CREATE EXTENSION pg_fastckpt');
is($node->safe_psql('fc_default', q{
	SELECT a.amname || '|' || c.relpersistence::text FROM pg_class c JOIN pg_am a ON a.oid = c.relam
	WHERE c.oid = 'fastckpt_procedure_registry'::regclass}),
	'heap|p', 'the registry is a heap table whatever the default access method');
is($node->safe_psql('fc_default', q{
	CREATE TABLE dflt (id int); SELECT a.amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam
	WHERE c.oid = 'dflt'::regclass}),
	'fastckpt', '... while the database\'s own tables take it');
($rc, $out, $err) = $node->psql('fc_default', 'CREATE MATERIALIZED VIEW mv AS SELECT 1 AS one');
like($err, qr/HINT:  default_table_access_method is fastckpt here: add USING heap/,
	'a materialized view without USING says where fastckpt came from');

$node->stop;
done_testing();
