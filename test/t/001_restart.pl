# Restart behaviour before durability lands: after a clean restart, a crash
# of the postmaster (kill -9) or a crash-restart cycle after a backend is
# killed, fastckpt tables still exist, are empty, accept writes, and their
# indexes never return rows of the previous run.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use FastckptTest;

my $node = fastckpt_node('restart');

$node->safe_psql('postgres', q{
CREATE TABLE kv (id int PRIMARY KEY, v text) USING fastckpt;
CREATE INDEX kv_v ON kv USING hash (v);
});

# Fill the table so that slot 0 holds id=1 and slot 1 holds id=2.
sub fill
{
	$node->safe_psql('postgres',
		q{INSERT INTO kv VALUES (1, 'one'), (2, 'two'), (3, 'three')});
}

# After a restart: the table is there, empty, writable, and a stale index
# entry (id=1 -> slot 0) must not find the new row in slot 0.
sub check_after_restart
{
	my ($how) = @_;

	is($node->safe_psql('postgres', 'SELECT count(*) FROM kv'),
		'0', "$how: table exists and is empty");
	$node->safe_psql('postgres', q{INSERT INTO kv VALUES (20, 'twenty')});
	my $res = $node->safe_psql('postgres', q{
		SET enable_seqscan = off; SET enable_bitmapscan = off;
		SELECT count(*) FROM kv WHERE id = 1;});
	is($res, '0', "$how: btree entry of the previous run finds nothing");
	$res = $node->safe_psql('postgres', q{
		SET enable_seqscan = off; SET enable_bitmapscan = off;
		SELECT count(*) FROM kv WHERE v = 'one';});
	is($res, '0', "$how: hash entry of the previous run finds nothing");
	$res = $node->safe_psql('postgres', q{
		SET enable_seqscan = off; SET enable_bitmapscan = off;
		SELECT v FROM kv WHERE id = 20;});
	is($res, 'twenty', "$how: new row found through the index");
	is($node->safe_psql('postgres',
			q{SELECT tables_open FROM fastckpt_stat_recovery}),
		't', "$how: recovery finished and opened the tables");
	$node->safe_psql('postgres', 'TRUNCATE kv');
}

fill();
$node->restart;
wait_for_tables_open($node);
check_after_restart('clean restart');

fill();
crash_postmaster($node);
$node->start;
wait_for_tables_open($node);
check_after_restart('postmaster killed');

# A backend killed with SIGKILL makes the postmaster reinitialize shared
# memory; recovery must run again in the same postmaster.
fill();
my $bg = $node->background_psql('postgres');
my $victim = $bg->query_safe('SELECT pg_backend_pid()');
kill 'KILL', $victim;
$bg->quit;
wait_for_tables_open($node);
check_after_restart('backend killed');

ok($node->log_contains('pg_fastckpt: startup recovery finished'),
	'recovery logged its end');
ok(!$node->log_contains('TRAP:|terminated by signal 11|PANIC'),
	'no assertion failure, segfault or PANIC in the log');

$node->stop;
done_testing();
