# pgbench works unchanged on fastckpt tables: initialization with
# default_table_access_method = fastckpt, then TPC-B with the simple and
# prepared protocols and with a PL/pgSQL procedure; afterwards the balances
# agree and history holds one row per transaction pgbench reported.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use File::Basename qw(dirname);
use Cwd qw(abs_path);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use FastckptTest;

my $scale = $ENV{FASTCKPT_PGBENCH_SCALE} // 10;
my $secs = $ENV{FASTCKPT_PGBENCH_SECONDS} // 10;
my $bench_dir = abs_path(dirname(__FILE__) . '/../bench');

my $node = fastckpt_node('pgbench', qq{
pg_fastckpt.memory_limit = '2GB'
max_connections = 30
});

$ENV{PGOPTIONS} = '-c default_table_access_method=fastckpt';
$node->command_ok([ 'pgbench', '-i', '-s', $scale, '-p', $node->port, '-h', $node->host, 'postgres' ],
	'pgbench -i with default_table_access_method = fastckpt');
delete $ENV{PGOPTIONS};

is($node->safe_psql('postgres', q{
	SELECT string_agg(c.relname || ':' || a.amname || ':' || c.relpersistence::text, ',' ORDER BY c.relname)
	  FROM pg_class c JOIN pg_am a ON a.oid = c.relam
	 WHERE c.relname LIKE 'pgbench%' AND c.relkind = 'r'}),
	'pgbench_accounts:fastckpt:u,pgbench_branches:fastckpt:u,pgbench_history:fastckpt:u,pgbench_tellers:fastckpt:u',
	'all pgbench tables are unlogged fastckpt tables');

$node->safe_psql('postgres', slurp_file("$bench_dir/tpcb_proc_setup.sql"));
$node->safe_psql('postgres', slurp_file("$bench_dir/tpcb_proc_register.sql"));

# pgbench empties pgbench_history before each run unless told not to (-n):
# only the first run may, so that history covers every transaction.
my $total = 0;
my $first = 1;
for my $run (
	[ 'simple protocol', [] ],
	[ 'prepared protocol', [ '-M', 'prepared' ] ],
	[ 'PL/pgSQL TPC-B procedure', [ '-f', "$bench_dir/tpcb_proc.sql" ] ])
{
	my ($label, $extra) = @$run;
	my ($stdout, $stderr);
	my $ok = IPC::Run::run(
		[ 'pgbench', '-c', '8', '-j', '2', '-T', $secs, '-s', $scale, @$extra,
		  ($first ? () : ('-n')),
		  '-p', $node->port, '-h', $node->host, 'postgres' ],
		'>', \$stdout, '2>', \$stderr);
	$first = 0;
	ok($ok, "pgbench $label ran");
	like($stdout, qr/number of failed transactions: 0 /, "$label: no failed transactions");
	unlike($stderr, qr/ERROR|FATAL/, "$label: no errors");
	my ($n) = $stdout =~ /number of transactions actually processed: (\d+)/;
	ok(defined $n && $n > 0, "$label: transactions processed") or diag($stdout . $stderr);
	$total += $n // 0;
	my ($tps) = $stdout =~ /tps = ([\d.]+)/;
	note("$label: $n transactions, $tps tps");
}

my $sums = $node->safe_psql('postgres', q{
	SELECT (SELECT sum(abalance) FROM pgbench_accounts) = (SELECT sum(tbalance) FROM pgbench_tellers)
	   AND (SELECT sum(tbalance) FROM pgbench_tellers) = (SELECT sum(bbalance) FROM pgbench_branches)
	   AND (SELECT sum(bbalance) FROM pgbench_branches) = (SELECT sum(delta) FROM pgbench_history)});
is($sums, 't', 'sum(abalance) = sum(tbalance) = sum(bbalance) = sum(delta)');
is($node->safe_psql('postgres', 'SELECT count(*) FROM pgbench_history'),
	$total, 'one history row per transaction pgbench reported');
# the registered function's calls are logged as CALL records, not row images
my ($calls, $fallbacks) = split /\|/, $node->safe_psql('postgres', q{
	SELECT call_records, value_records FROM fastckpt_procedures
	 WHERE routine = 'tpcb(integer,integer,integer,integer)'::regprocedure});
ok($calls > 0, "the registered TPC-B function was logged as CALL records ($calls calls, $fallbacks as row images)");
is($node->safe_psql('postgres', "SELECT count(*) FROM pgbench_accounts"),
	100000 * $scale, 'no account lost or duplicated');

# The index must agree with the table after all those in-place updates.
my $by_seq = $node->safe_psql('postgres', q{
	SET enable_indexscan = off; SET enable_bitmapscan = off; SET enable_indexonlyscan = off;
	SELECT count(*) || '/' || sum(abalance) FROM pgbench_accounts WHERE aid >= 1});
my $by_index = $node->safe_psql('postgres', q{
	SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_indexonlyscan = off;
	SELECT count(*) || '/' || sum(abalance) FROM pgbench_accounts WHERE aid >= 1});
is($by_index, $by_seq, 'index scan and sequential scan see the same accounts');

ok(!$node->log_contains('TRAP:|terminated by signal|PANIC'),
	'no assertion failure, crash or PANIC in the log');
$node->stop;
done_testing();
