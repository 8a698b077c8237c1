# Crash durability (DESIGN.md section 5): concurrent clients run TPC-B-like
# transactions -- plain SQL, a PL/pgSQL function (logged as CALL records once
# registered), and mixed ones that also write a heap table -- in both commit
# modes; the postmaster is killed with SIGKILL at a random moment, and in
# every other cycle everything the logical log had not fdatasynced is thrown
# away (the power-loss model); in half of each, every server process is
# killed at once instead of the postmaster alone; and half the cycles run
# with pg_fastckpt.backend_flush.  After each restart:
#  - every transaction whose COMMIT returned to its client is there;
#  - every transaction is all there or not at all: balances agree with
#    history row by row, and a mixed transaction is in both history and the
#    heap ledger or in neither;
#  - only issued, never rolled-back transactions are there, with their own
#    values, and what earlier cycles recovered is unchanged.
#
# FASTCKPT_CRASH_TEST_AM=heap runs the same workload on heap tables (without
# the power-loss model, which only concerns pg_fastckpt's log) to check the
# harness itself.  FASTCKPT_LONG_TESTS=1 runs 200 cycles instead of 20;
# FASTCKPT_CRASH_CYCLES and FASTCKPT_CRASH_TEST_SEED override the count and
# the random seed.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use FastckptTest;
use FastckptCrashLoop;

my $am = $ENV{FASTCKPT_CRASH_TEST_AM} // 'fastckpt';
die "bad FASTCKPT_CRASH_TEST_AM '$am'" unless $am =~ /^\w+$/;
my ($cycles, $seed) = FastckptCrashLoop::cycles_and_seed();
my $power_loss = $am ne 'heap';

diag("access method $am, $cycles cycles, seed $seed (FASTCKPT_CRASH_TEST_SEED)");

# fsync = on and the sync trace, for the power-loss model
my $node = fastckpt_node('crash', FastckptCrashLoop::node_conf());

# The workload and its checks: test/perl/FastckptCrashLoop.pm.
my $loop = FastckptCrashLoop->new(node => $node, am => $am,
	clients => 4, branches => 3, tellers => 30, accounts => 3000);
$loop->create_schema;

for my $cycle (1 .. $cycles)
{
	# cycles 5-8, 13-16, ...: committing backends flush the log themselves
	# while the log writer is idle (each crash kind of the 4-cycle pattern
	# below runs both ways)
	my $backend_flush = (int(($cycle - 1) / 4) % 2 == 1) ? 'on' : 'off';
	$node->append_conf('postgresql.conf', "pg_fastckpt.backend_flush = $backend_flush");
	$node->reload;

	# crash at a random moment under load
	$loop->start_cycle("cycle $cycle, backend_flush $backend_flush");
	my $run = 0.3 + rand(1.2);
	$loop->pump($run);

	# kill -9 the postmaster alone (its children, the log writer included,
	# go on until their next wait) or all server processes at once (a
	# write may not be synced yet), each with and without the power-loss
	# model afterwards: cycle % 4 = 1 alone, 2 all + loss, 3 all, 0 alone + loss
	my $how = $loop->crash_and_restart(
		kill_all => ($cycle % 4 == 2 || $cycle % 4 == 3),
		power_loss => ($power_loss && $cycle % 2 == 0));

	last unless $loop->verify(sprintf('%.2f s run', $run), $how);
}
$loop->finish;

# backend_flush does flush in the committing backend: serial commits find
# the log writer asleep, so each one flushes for itself
$node->append_conf('postgresql.conf', 'pg_fastckpt.backend_flush = on');
$node->reload;
$node->safe_psql('postgres', q{
	CREATE TABLE backend_flush_probe (id int) USING fastckpt;
	SELECT fastckpt_stat_reset();
});
$node->safe_psql('postgres', "INSERT INTO backend_flush_probe VALUES ($_)")
  for 1 .. 20;
my ($flushes, $by_backends) = split /\|/, $node->safe_psql('postgres',
	'SELECT flushes, backend_flushes FROM fastckpt_stat_log');
cmp_ok($by_backends, '>', 0,
	"with backend_flush, committing backends flushed ($by_backends of $flushes flushes)");
cmp_ok($by_backends, '<=', $flushes, 'backend flushes are counted among all flushes');
is($node->safe_psql('postgres', 'SELECT count(*) FROM backend_flush_probe'), '20',
	'the probe rows are there');

$node->stop;
done_testing();
