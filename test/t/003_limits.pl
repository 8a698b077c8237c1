# Limits and setup errors: CREATE EXTENSION without the library preloaded,
# a server start with no background worker slot left for recovery, and a
# full arena -- a clear error naming the table, the limit and the
# setting; the server stays up, committed rows are untouched, and memory
# freed by DELETE + VACUUM is used again; pg_fastckpt.max_tables holds.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use FastckptTest;

# 1. not preloaded
my $plain = PostgreSQL::Test::Cluster->new('not_preloaded');
$plain->init;
$plain->start;
my ($rc, $out, $err) = $plain->psql('postgres', 'CREATE EXTENSION pg_fastckpt');
isnt($rc, 0, 'CREATE EXTENSION fails without shared_preload_libraries');
like($err, qr/must be loaded via shared_preload_libraries/, 'the error says why');
like($err, qr/shared_preload_libraries = 'pg_fastckpt'/, 'the hint says exactly what to add');
$plain->stop;

# A memory_limit past the machine's memory: PostgreSQL's error names other
# settings, so the log names this one first
{
	my $huge = fastckpt_init_node('huge_limit', "pg_fastckpt.memory_limit = '1TB'\n");
	# (it fails here; a kernel that overcommits without limit would map it)
	$huge->stop if $huge->start(fail_ok => 1);
	like(slurp_file($huge->logfile),
		qr/WARNING:  pg_fastckpt.memory_limit \(1048576 MB\) asks for more than half of this machine's memory.*\n(.*\n)*.*HINT:  If the server fails to start for want of shared memory, lower pg_fastckpt.memory_limit/,
		'memory_limit = 1TB: the log names the setting to lower');
}

# ... nor with no background worker slot left for startup recovery (it
# would wait for one forever, the tables closed); one slot is enough
for my $slots (4, 5)
{
	my $few = fastckpt_init_node("workers_$slots", "max_worker_processes = $slots\n");
	my $started = $few->start(fail_ok => 1);
	if ($slots == 4)
	{
		ok(!$started, 'the server refuses to start with max_worker_processes = 4');
		like(slurp_file($few->logfile),
			qr/max_worker_processes \(4\) leaves no background worker slot for pg_fastckpt's startup recovery.*\n.*DETAIL:  4 slots are taken.*\n.*HINT:  Set max_worker_processes to at least 5 and restart the server/,
			'the log says why, and the setting that fixes it');
		next;
	}
	ok($started, 'with max_worker_processes = 5 the server starts');
	$few->safe_psql('postgres', q{
		CREATE EXTENSION pg_fastckpt;
		CREATE TABLE one (id int PRIMARY KEY) USING fastckpt;
		INSERT INTO one SELECT generate_series(1, 10)});
	for my $db (qw(more1 more2))
	{
		$few->safe_psql('postgres', "CREATE DATABASE $db");
		$few->safe_psql($db, q{
			CREATE EXTENSION pg_fastckpt;
			CREATE TABLE one (id int PRIMARY KEY) USING fastckpt;
			INSERT INTO one SELECT generate_series(1, 10)});
	}
	my $log_at = -s $few->logfile;
	crash_postmaster($few);
	$few->start;
	wait_for_tables_open($few);
	is($few->safe_psql('postgres', 'SELECT count(*) FROM one WHERE id > 0'), '10',
		'recovery with the one free slot rebuilt the index and opened the table');
	is($few->safe_psql('more2', 'SELECT count(*) FROM one WHERE id > 0'), '10',
		'... in every database');
	my $log = slurp_file($few->logfile, $log_at);
	my @short = $log =~ /with 1 workers instead of 2: no free background worker slot/g;
	is(scalar(@short), 1, '... and says once that it used fewer workers');
	# (every database is rebuilt, the templates too)
	my ($rebuilds) = $log =~ /(\d+) index rebuilds of databases ran with fewer workers than pg_fastckpt.recovery_workers/;
	cmp_ok($rebuilds // 0, '>=', 3, '... then how many rebuilds it concerned');
	$few->stop;
}

# 2. a full arena (the smallest allowed: 16 MB)
my $node = fastckpt_node('memory_full', "pg_fastckpt.memory_limit = '16MB'\n");
$node->safe_psql('postgres',
	'CREATE TABLE wide (id int PRIMARY KEY, pad char(2000)) USING fastckpt');
$node->safe_psql('postgres', q{
	CREATE TABLE spare (id int PRIMARY KEY, n int) USING fastckpt;
	INSERT INTO spare VALUES (1, 0)});

# a template database with a fastckpt table, copied once the memory is full
$node->safe_psql('postgres', 'CREATE DATABASE tpl_full');
$node->safe_psql('tpl_full', q{
	CREATE EXTENSION pg_fastckpt;
	CREATE TABLE small (id int PRIMARY KEY) USING fastckpt;
	INSERT INTO small SELECT generate_series(1, 10)});

# commit in batches until the arena refuses one
my $committed = 0;
my $error = '';
for my $batch (0 .. 200)
{
	my $from = $batch * 100 + 1;
	my $to = $from + 99;
	($rc, $out, $err) = $node->psql('postgres',
		"INSERT INTO wide SELECT g, 'x' FROM generate_series($from, $to) g");
	if ($rc != 0)
	{
		$error = $err;
		last;
	}
	$committed = $to;
}
ok($committed > 0, "rows committed before the arena filled up ($committed)");
like($error, qr/pg_fastckpt memory is full while writing table "wide"/,
	'full arena: the error names the table');
like($error, qr/All 16 MB of pg_fastckpt.memory_limit are in use/,
	'full arena: the error gives the limit');
like($error, qr/Raise pg_fastckpt.memory_limit/, 'full arena: the hint names the setting');

is($node->safe_psql('postgres', 'SELECT count(*), min(id), max(id) FROM wide'),
	"$committed|1|$committed", 'committed rows are all there, the failed batch left nothing');
is($node->safe_psql('postgres', 'SELECT 1'), '1', 'the server is still up');

# free half the rows, vacuum, and the memory serves new rows again
$node->safe_psql('postgres', 'DELETE FROM wide WHERE id % 2 = 0');
$node->safe_psql('postgres', 'VACUUM wide');
my $half = int($committed / 2) - 100;
$node->safe_psql('postgres',
	"INSERT INTO wide SELECT g, 'y' FROM generate_series(1000001, 1000000 + $half) g");
is($node->safe_psql('postgres', "SELECT count(*) FROM wide WHERE pad LIKE 'y%'"),
	$half, 'slots freed by VACUUM are reused');

# Fill the memory with rows again: in-place UPDATEs still find room for
# the old versions (a part of the memory is kept for them), and a rewrite
# that finds no room names the table rewritten
$error = '';
for my $batch (0 .. 200)
{
	my $from = 2000001 + $batch * 20;
	($rc, $out, $err) = $node->psql('postgres',
		"INSERT INTO wide SELECT g, 'z' FROM generate_series($from, $from + 19) g");
	if ($rc != 0)
	{
		$error = $err;
		last;
	}
}
like($error, qr/memory is full while writing table "wide"/, 'rows fill the memory again');
($rc, $out, $err) = $node->psql('postgres',
	"UPDATE wide SET pad = 'updated' WHERE id IN (1, 3, 5, 7, 9) RETURNING id");
is($rc, 0, 'with the memory full of rows, an UPDATE still succeeds') or diag($err);
is($node->safe_psql('postgres', "SELECT count(*) FROM wide WHERE pad LIKE 'updated%'"),
	'5', 'the updated rows read back');
($rc, $out, $err) = $node->psql('postgres', "UPDATE wide SET pad = 'all'");
like($err, qr/memory is full while keeping an old row version of table "wide"/,
	'an UPDATE of every row runs out of room for old versions: the error says so');
like($err, qr/end long-running transactions/, 'its hint says what frees that room');
# nothing holds the failed UPDATE's old versions: the next update reclaims
# them before asking for memory, without waiting for a VACUUM
($rc, $out, $err) = $node->psql('postgres', "UPDATE wide SET pad = 'again' WHERE id = 1");
is($rc, 0, 'after the failed UPDATE, an UPDATE of the same table finds room at once') or diag($err);
# and once VACUUM has reclaimed them, their memory serves other tables'
# updates too
$node->safe_psql('postgres', 'VACUUM wide');
($rc, $out, $err) = $node->psql('postgres', "UPDATE spare SET n = n + 1");
is($rc, 0, 'after VACUUM of the table that held them, another table\'s UPDATE finds room') or diag($err);
($rc, $out, $err) = $node->psql('postgres', 'VACUUM FULL wide');
like($err, qr/memory is full while writing table "wide"/,
	'VACUUM FULL without room for its copy names the table, not its transient copy');
like($err, qr/HINT:  VACUUM FULL and CLUSTER need room for a copy of the table's \d+ rows, about \d+ kB/,
	'... and says how much room the copy needs');
($rc, $out, $err) = $node->psql('postgres', 'CREATE DATABASE copy_full TEMPLATE tpl_full');
like($err, qr/memory is full while writing the fastckpt table with OID \d+.*\n.*CREATE DATABASE copies/,
	'CREATE DATABASE without room for the template\'s rows says so, not that it is recovering');

# A row updated many times while versions cannot be reclaimed grows a long
# undo chain; reclaiming it must take linear time (each version is unlinked
# in O(1)), not a walk of the chain per version.
$node->safe_psql('postgres', q{
	DROP TABLE wide;
	CREATE TABLE hot (id int PRIMARY KEY, n int) USING fastckpt;
	INSERT INTO hot VALUES (1, 0);
	DO $$ BEGIN FOR i IN 1 .. 100000 LOOP UPDATE hot SET n = n + 1 WHERE id = 1; END LOOP; END $$;
});
is($node->safe_psql('postgres',
		q{SELECT undo_records > 90000 FROM fastckpt_stat_tables WHERE relation = 'hot'::regclass}),
	't', 'a long chain of old versions built up');
($rc, $out, $err) = $node->psql('postgres', q{
	SET statement_timeout = '20s';
	VACUUM hot;
	SELECT undo_records, n_rows FROM fastckpt_stat_tables WHERE relation = 'hot'::regclass;
	SELECT n FROM hot;});
is($rc, 0, 'VACUUM reclaims a 100000-version chain within 20 s') or diag($err);
is($out, "0|1
100000", 'all old versions reclaimed, the row intact');

ok(!$node->log_contains('TRAP:|terminated by signal|PANIC'),
	'no assertion failure, crash or PANIC in the log');
$node->stop;

# 3. pg_fastckpt.max_tables holds: the directory of storages would
# otherwise grow into the shared memory PostgreSQL's lock table needs
my $few = fastckpt_node('few_tables', "pg_fastckpt.max_tables = 16\n");
my $created = 0;
$error = '';
for my $i (1 .. 40)
{
	($rc, $out, $err) = $few->psql('postgres',
		"CREATE TABLE t$i (id int PRIMARY KEY) USING fastckpt; INSERT INTO t$i VALUES ($i)");
	if ($rc != 0)
	{
		$error = $err;
		last;
	}
	$created++;
}
is($created, 16, 'as many tables as pg_fastckpt.max_tables, no more');
like($error, qr/too many fastckpt table storages/, 'the next one is refused');
like($error, qr/pg_fastckpt\.max_tables is 16/, 'the error names the setting and its value');
($rc, $out, $err) = $few->psql('postgres', 'TRUNCATE t1');
like($err, qr/too many fastckpt table storages/,
	'TRUNCATE, which needs a second storage until it commits, is refused too');
is($few->safe_psql('postgres',
	'SELECT (SELECT count(*) FROM t1) + (SELECT count(*) FROM t16)'), 2,
	'the tables keep their rows');
$few->safe_psql('postgres', 'DROP TABLE t2, t3');
$few->safe_psql('postgres', 'CREATE TABLE t2 (id int) USING fastckpt; TRUNCATE t1');
pass('dropped tables free their places');
$few->stop;

# 4. a memory limit too small for the tables at startup: recovery stops
# once with the arena's error, keeps the tables closed (never partial), and
# does not run again over the half-built store; with the limit back, the
# rows are back
my $small = fastckpt_node('too_small', "pg_fastckpt.memory_limit = '64MB'\n");
$small->safe_psql('postgres', q{
	CREATE TABLE big (id int PRIMARY KEY, pad char(200)) USING fastckpt;
	INSERT INTO big SELECT g, 'x' FROM generate_series(1, 9000) g;
	SELECT fastckpt_checkpoint(true)});
my $big_sum = $small->safe_psql('postgres', 'SELECT count(*), sum(id) FROM big');
$small->stop;
$small->append_conf('postgresql.conf', "pg_fastckpt.memory_limit = '16MB'\n");
my $log_offset = -s $small->logfile;
$small->start;
$small->poll_query_until('postgres',
	'SELECT error IS NOT NULL FROM fastckpt_stat_recovery')
  or die 'recovery did not give up';
sleep 3;	# time for a leader restarted after an exit to run recovery again
is($small->safe_psql('postgres', 'SELECT tables_open FROM fastckpt_stat_recovery'), 'f',
	'too small: the tables stay closed');
like($small->safe_psql('postgres', 'SELECT error FROM fastckpt_stat_recovery'),
	qr/pg_fastckpt memory is full while recovering the table with OID \d+: All 16 MB/,
	'too small: the recovery error is the arena\'s, with the limit');
($rc, $out, $err) = $small->psql('postgres', 'SELECT count(*) FROM big');
like($err, qr/memory is full/, 'too small: a query on the table fails with the reason');
# changes that would be logged fail at once too, not after a wait that
# says recovery is in progress
for my $change ('TRUNCATE big', 'DROP TABLE big', 'CREATE TABLE other (id int) USING fastckpt')
{
	($rc, $out, $err) = $small->psql('postgres',
		"SET pg_fastckpt.recovery_wait_timeout = '60s'; $change");
	like($err, qr/startup recovery could not restore.*\n.*memory is full/,
		"too small: $change fails at once with the reason");
}
my $log = slurp_file($small->logfile, $log_offset);
my $starts = () = $log =~ /pg_fastckpt: startup recovery started/g;
is($starts, 1, 'too small: recovery ran once, not again over the half-built store');
like($log, qr/startup recovery failed; fastckpt tables stay closed.*\n.*DETAIL:  pg_fastckpt memory is full/,
	'too small: the log says why the tables stay closed');
unlike($log, qr/cannot read pg_class|already held|TRAP:|terminated by signal/,
	'too small: no other error on the way');
$small->stop;
$small->append_conf('postgresql.conf', "pg_fastckpt.memory_limit = '64MB'\n");
$small->start;
wait_for_tables_open($small);
is($small->safe_psql('postgres', 'SELECT count(*), sum(id) FROM big'), $big_sum,
	'with the limit raised again, every row is back');
$small->stop;

# 5. rows that take more of the memory than new rows may (the part kept for
# old row versions), as rows written under a larger limit, or by a build
# without that part, do: startup recovery may use it, and they come back
my $tight = fastckpt_node('tight', "pg_fastckpt.memory_limit = '256MB'\n");
$tight->safe_psql('postgres', q{
	CREATE TABLE fill (id int PRIMARY KEY, v text) USING fastckpt;
	INSERT INTO fill SELECT g, 'row ' || g FROM generate_series(1, 235000) g;
	SELECT fastckpt_checkpoint(true)});
my $used = $tight->safe_psql('postgres', 'SELECT used_bytes FROM fastckpt_stat_memory');
my $fill_sum = $tight->safe_psql('postgres', 'SELECT count(*), sum(id) FROM fill');
my $tight_mb = int(($used + 1048575) / 1048576) + 1;
cmp_ok($used, '>', $tight_mb * 1048576 * 63 / 64,
	sprintf('tight: the rows (%.1f MB) take more than new rows may of %d MB',
		$used / 1048576, $tight_mb));
$tight->stop;
$tight->append_conf('postgresql.conf', "pg_fastckpt.memory_limit = '${tight_mb}MB'\n");
$tight->start;
wait_for_tables_open($tight);
is($tight->safe_psql('postgres', 'SELECT count(*), sum(id) FROM fill'), $fill_sum,
	'tight: startup recovery brings every row back');

# 6. the counters of registered routines (fastckpt_procedures) are kept in
# a table of 1,024 entries: those of dropped routines go with them, so
# routines created, called and dropped in turn never fill it, and a new
# routine is still counted after more than a thousand came and went
$tight->safe_psql('postgres', q{DROP TABLE fill; CREATE TABLE hits (n int) USING fastckpt});
my $free_shmem = q{SELECT allocated_size FROM pg_shmem_allocations WHERE name IS NULL};
my $free_before = $tight->safe_psql('postgres', $free_shmem);
$tight->safe_psql('postgres', join('', map { qq{
CREATE FUNCTION churn_$_() RETURNS int LANGUAGE sql
  AS 'INSERT INTO hits VALUES (random()::int) RETURNING 1';
SELECT fastckpt_register_procedure('churn_$_()');
SELECT churn_$_();
DROP FUNCTION churn_$_();} } 1 .. 1100));
$tight->safe_psql('postgres', q{
CREATE FUNCTION survivor() RETURNS int LANGUAGE sql
  AS 'INSERT INTO hits VALUES (random()::int) RETURNING 1';
SELECT fastckpt_register_procedure('survivor()');
SELECT survivor();
SELECT survivor();});
is($tight->safe_psql('postgres', q{
SELECT count(*) || ' ' || (SELECT calls FROM fastckpt_procedures WHERE routine = 'survivor()'::regprocedure)
  FROM hits}), '1102 2',
	'after 1,100 routines were called and dropped, a new one is still counted');
is($tight->safe_psql('postgres', $free_shmem), $free_before,
	'... and the shared memory PostgreSQL\'s lock table may grow into is untouched');
$tight->stop;
done_testing();
