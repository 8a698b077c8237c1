# Streaming replication does not carry fastckpt tables (they are not in
# PostgreSQL's WAL).  A standby says so at once when they are queried,
# instead of waiting for a recovery that never runs there; once promoted,
# it keeps them closed rather than open them as old as its base backup,
# until the operator says otherwise; so does a server restored from the
# base backup without archive recovery (same timeline); the primary goes
# on as before.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use FastckptTest;

my $conf = q{
shared_preload_libraries = 'pg_fastckpt'
pg_fastckpt.memory_limit = '128MB'
max_worker_processes = 16
};
my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
$primary->append_conf('postgresql.conf', $conf);
$primary->start;
$primary->safe_psql('postgres', q{
CREATE EXTENSION pg_fastckpt;
CREATE TABLE t (id int PRIMARY KEY, v text) USING fastckpt;
CREATE TABLE h (id int PRIMARY KEY);
CREATE MATERIALIZED VIEW h_mv AS SELECT count(*) FROM h;
INSERT INTO t SELECT g, 'before' FROM generate_series(1, 100) g;
SELECT fastckpt_checkpoint(true);
});
my $tl_file = 'pg_fastckpt/timeline';
is(slurp_file($primary->data_dir . "/$tl_file"), "timeline 1\nbackup none\n",
	'the primary notes the timeline its fastckpt files belong to, and no restored backup');

$primary->backup('bk');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'bk', has_streaming => 1);
$standby->start;

$primary->safe_psql('postgres', q{
INSERT INTO t SELECT g, 'after' FROM generate_series(101, 150) g;
INSERT INTO h VALUES (1);
});
$primary->wait_for_catchup($standby);
is($standby->safe_psql('postgres', 'SELECT count(*) FROM h'), '1',
	'the standby replays heap changes');

my $t0 = time();
my ($rc, $out, $err) = $standby->psql('postgres',
	q{SET pg_fastckpt.recovery_wait_timeout = '60s'; SELECT count(*) FROM t});
my $waited = time() - $t0;
isnt($rc, 0, 'a fastckpt table cannot be read on a standby');
like($err, qr/fastckpt table "t" is not available during recovery/, 'the error says why');
like($err, qr/HINT:  Query fastckpt tables on the primary/, 'and where to go');
ok($waited < 30, "it says so at once, not after the recovery wait ($waited s)");
($rc, $out, $err) = $standby->psql('postgres', 'SELECT fastckpt_checkpoint(true)');
like($err, qr/ERROR:  recovery is in progress/, 'a fastckpt checkpoint is refused on a standby');
($rc, $out, $err) = $standby->psql('postgres', 'CREATE DATABASE nope');
like($err, qr/read-only transaction/, 'CREATE DATABASE gets PostgreSQL\'s own error there');
($rc, $out, $err) = $standby->psql('postgres', 'REFRESH MATERIALIZED VIEW h_mv');
like($err, qr/cannot execute REFRESH MATERIALIZED VIEW in a read-only transaction/,
	'so does REFRESH MATERIALIZED VIEW');

# Promoted, the standby must not open its fastckpt files: they are as old
# as the base backup, and miss the 50 rows committed after it.
my $log_offset = -s $standby->logfile;
$standby->promote;
$standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
  or die 'the standby was not promoted';
ok( $standby->poll_query_until('postgres',
		q{SELECT error <> '' FROM fastckpt_stat_recovery}),
	'startup recovery of the promoted server gives up');
($rc, $out, $err) = $standby->psql('postgres', 'SELECT count(*) FROM t');
isnt($rc, 0, 'after promotion the fastckpt tables stay closed');
like($err, qr/files are of PostgreSQL timeline 1, the server runs on timeline 2/,
	'the error names both timelines');
ok($standby->log_contains('pg_fastckpt: startup recovery refused; fastckpt tables stay closed',
		$log_offset),
	'the server log says the tables stay closed, and why');
ok($standby->log_contains("remove the file \"$tl_file\" and restart", $log_offset),
	'the hint says how to open them anyway');

# The operator accepts the base backup's rows.
$standby->stop;
unlink($standby->data_dir . "/$tl_file") or die "could not remove the timeline file: $!";
$standby->start;
wait_for_tables_open($standby);
is($standby->safe_psql('postgres',
		q{SELECT count(*) || ' ' || count(*) FILTER (WHERE v = 'after') FROM t}),
	'100 0', 'with the file removed, the tables open as the base backup left them');
like(slurp_file($standby->data_dir . "/$tl_file"), qr{^timeline 2\nbackup [0-9A-F]+/[0-9A-F]+(?:\@\S+)?\n\z},
	'and belong to the new timeline and the restored backup from then on');
$standby->safe_psql('postgres', q{INSERT INTO t VALUES (1000, 'promoted')});
$standby->restart;
wait_for_tables_open($standby);
is($standby->safe_psql('postgres', 'SELECT count(*) FROM t'), '101',
	'the promoted server restarts with its own writes');

# The same base backup started without archive recovery: crash recovery
# to the backup's end, on the same timeline.
my $clone = PostgreSQL::Test::Cluster->new('clone');
$clone->init_from_backup($primary, 'bk');
$clone->start;
ok($clone->poll_query_until('postgres', q{SELECT error <> '' FROM fastckpt_stat_recovery}),
	'startup recovery of a server restored from a base backup gives up');
($rc, $out, $err) = $clone->psql('postgres', 'SELECT count(*) FROM t');
like($err, qr/restored from a base backup \(started at [0-9A-F]+\/[0-9A-F]+\)/,
	'the error says the data directory was restored from a base backup');
$clone->stop;

# The primary is not affected.
$primary->restart;
wait_for_tables_open($primary);
is($primary->safe_psql('postgres', 'SELECT count(*) FROM t'), '150',
	'the primary keeps every row across its restarts');

$standby->stop;
$primary->stop;

# With no fastckpt table in any database, nothing can be older than the
# rest: a promoted standby opens by itself.  One whose primary created a
# fastckpt table after the base backup does not: its files miss the
# table's rows, which its catalogs list.
my $p2 = PostgreSQL::Test::Cluster->new('primary2');
$p2->init(allows_streaming => 1);
$p2->append_conf('postgresql.conf', $conf);
$p2->start;
$p2->safe_psql('postgres', 'CREATE EXTENSION pg_fastckpt');
$p2->safe_psql('postgres', 'CREATE DATABASE other');
$p2->backup('bk2');
my @standbys;
for my $name ('quiet', 'late')
{
	my $s = PostgreSQL::Test::Cluster->new("standby_$name");
	$s->init_from_backup($p2, 'bk2', has_streaming => 1);
	$s->start;
	push @standbys, $s;
}
my ($quiet, $late) = @standbys;
$quiet->promote;
wait_for_tables_open($quiet);
ok($quiet->log_contains('no database has a fastckpt table: the stale files under pg_fastckpt/ were moved to'),
	'a promoted standby without fastckpt tables opens them, and says why');
my @aside = glob($quiet->data_dir . '/pg_fastckpt/set_aside_*/log');
is(scalar(@aside), 1, 'its stale files are kept aside, not read');
like(slurp_file($quiet->data_dir . "/$tl_file"), qr{^timeline 2
},
	'its files belong to the new timeline');
$quiet->safe_psql('postgres', q{
CREATE DATABASE made_after;
CREATE TABLE n (id int PRIMARY KEY) USING fastckpt;
INSERT INTO n SELECT generate_series(1, 10);
});
crash_postmaster($quiet, 1);
$quiet->start;
wait_for_tables_open($quiet);
is($quiet->safe_psql('postgres', 'SELECT count(*) FROM n'), '10',
	'it takes writes that survive a crash');

$p2->safe_psql('other', q{
CREATE EXTENSION pg_fastckpt;
CREATE TABLE late (id int PRIMARY KEY) USING fastckpt;
INSERT INTO late SELECT generate_series(1, 10);
});
$p2->wait_for_catchup($late);
$late->promote;
ok($late->poll_query_until('postgres', q{SELECT error <> '' FROM fastckpt_stat_recovery}),
	'a promoted standby whose primary created a fastckpt table after the backup gives up');
($rc, $out, $err) = $late->psql('other', 'SELECT count(*) FROM late');
like($err, qr/files are of PostgreSQL timeline 1, the server runs on timeline 2/,
	'and keeps that table closed');

$quiet->stop;
$late->stop;
$p2->stop;
done_testing();
