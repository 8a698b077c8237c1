# The log writer and commits that do not wait for their records
# (pg_fastckpt.test_commit_no_wait, the benchmarks' "access method alone"):
# their records are written in batches, once a quarter of the ring waits
# or within the writer's 200 ms deferral, as PostgreSQL's WAL writer does
# for asynchronous commits, and never left unwritten.  A commit that does
# wait meanwhile is made durable at once, by its own wake-up, not on the
# deferral's timer.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use FastckptTest;

my $node = fastckpt_node('unwaited_log', '');
wait_for_tables_open($node);
$node->safe_psql('postgres', q{
CREATE TABLE t (id int PRIMARY KEY, v int) USING fastckpt;
CREATE TABLE d (id int PRIMARY KEY) USING fastckpt;
});

sub log_state
{
	my ($n) = @_;
	my ($ins, $flush, $flushes, $recs) = split /\|/, $n->safe_psql('postgres',
		q{SELECT insert_lsn, flush_lsn, flushes, values_records FROM fastckpt_stat_log});
	return ($ins, $flush, $flushes, $recs);
}

# Unwaited commits, one row each, for 1.5 seconds: longer than the
# writer's idle sleep, so a writer that flushed whatever it found as soon
# as it woke would flush about once per commit from then on.
my (undef, undef, $flushes0, $recs0) = log_state($node);
$node->safe_psql('postgres', q{
SET pg_fastckpt.test_commit_no_wait = on;
CREATE PROCEDURE fill(seconds float) LANGUAGE plpgsql AS $$
DECLARE
	stop timestamptz := clock_timestamp() + make_interval(secs => seconds);
	i int := 0;
BEGIN
	WHILE clock_timestamp() < stop LOOP
		i := i + 1;
		INSERT INTO t VALUES (i, i);
		COMMIT;
	END LOOP;
END $$;
CALL fill(1.5);
});
my ($commits, $sum) = split /\|/,
  $node->safe_psql('postgres', 'SELECT count(*), sum(v) FROM t');

# Everything is written without anyone waiting for it.
my ($ins, $flush) = log_state($node);
my $deadline = time() + 30;
while ($flush < $ins && time() < $deadline)
{
	usleep(20_000);
	(undef, $flush) = log_state($node);
}
cmp_ok($flush, '>=', $ins,
	'the records of unwaited commits are written without a waiter');
my (undef, undef, $flushes1, $recs1) = log_state($node);
cmp_ok($recs1 - $recs0, '>=', $commits, "$commits commits appended their records");
cmp_ok($flushes1 - $flushes0, '<=', 50,
	'in batches: ' . ($flushes1 - $flushes0) . " flushes for $commits commits in 1.5 s");

# A waiting commit among unwaited ones is durable when it returns, and
# wakes the writer itself instead of waiting out the deferral: each of 20
# such commits follows a burst of unwaited ones, which starts a 200 ms
# deferral.  A writer that let the waiter sit out that timer would make
# every one of them take about 200 ms; the bound is loose for slow
# machines.
my $nowait = $node->background_psql('postgres', on_error_stop => 1);
my $waiting = $node->background_psql('postgres', on_error_stop => 1);
$nowait->query_safe('SET pg_fastckpt.test_commit_no_wait = on');
my $fast = 0;
for my $i (1 .. 20)
{
	$nowait->query_safe('UPDATE t SET v = v + 1 WHERE id <= 5');
	my $t0 = time();
	$waiting->query_safe("INSERT INTO d VALUES ($i)");
	$fast++ if time() - $t0 < 0.1;
}
$nowait->quit;
$waiting->quit;
cmp_ok($fast, '>=', 10,
	"waiting commits are not held back by the deferral ($fast of 20 under 100 ms)");

# A clean shutdown writes what was left for later, and a crash after the
# deferral has run loses nothing of the unwaited commits either.
$node->safe_psql('postgres', "SET pg_fastckpt.test_commit_no_wait = on; UPDATE t SET v = -v");
usleep(1_000_000);
crash_postmaster($node);
$node->start;
wait_for_tables_open($node);
is($node->safe_psql('postgres', 'SELECT count(*), sum(v) FROM t'),
	"$commits|" . -($sum + 20 * 5),
	'after a crash that followed the deferral, every unwaited commit is there');
is($node->safe_psql('postgres', 'SELECT count(*) FROM d'), '20',
	'and every waiting one');

$node->safe_psql('postgres', "SET pg_fastckpt.test_commit_no_wait = on; UPDATE t SET v = -v");
$node->stop('fast');
$node->start;
wait_for_tables_open($node);
is($node->safe_psql('postgres', 'SELECT sum(v) FROM t'),
	($sum + 20 * 5),
	'a clean shutdown right after unwaited commits keeps them');

$node->stop;
done_testing();
