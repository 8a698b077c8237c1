# A synchronous standby that is not there holds every commit that wrote WAL
# after its commit record is on local disk, as PostgreSQL does.  For
# fastckpt that must not also hold up checkpoints (they wait for commits in
# doubt, and this one is decided), nor keep the tables closed after a
# restart (recovery rebuilds indexes, which writes WAL and commits).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use FastckptTest;

my $node = fastckpt_node('sync_standby', q{
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
$node->reload;

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

$node->stop;
done_testing();
