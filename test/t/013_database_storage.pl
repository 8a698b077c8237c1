# fastckpt tables and whole databases: CREATE DATABASE from a template
# copies the template's rows (into the new default tablespace too), and
# they survive a crash; ALTER DATABASE ... SET TABLESPACE is refused while
# fastckpt tables of the database hold rows; a table whose rows did not
# come back at startup (pg_fastckpt/ moved aside) starts empty, and what is
# committed to it afterwards survives a crash.
use strict;
use warnings;
use File::Path qw(make_path);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use FastckptTest;

my $node = fastckpt_node('dbstorage');
my $tsdir = $node->basedir . '/ts';
make_path($tsdir);

$node->safe_psql('postgres', qq{CREATE TABLESPACE ts LOCATION '$tsdir'});
$node->safe_psql('postgres', 'CREATE DATABASE tpl');
$node->safe_psql('tpl', q{
CREATE EXTENSION pg_fastckpt;
CREATE TABLE t (id int PRIMARY KEY, v text) USING fastckpt;
CREATE INDEX t_v ON t USING hash (v);
INSERT INTO t SELECT g, 'v' || g FROM generate_series(1, 300) g;
UPDATE t SET v = v || '+' WHERE id % 7 = 0;
DELETE FROM t WHERE id % 11 = 0;
-- every row deleted: its index still has entries for the dead slots
CREATE TABLE d (id int PRIMARY KEY) USING fastckpt;
INSERT INTO d SELECT generate_series(1, 50);
DELETE FROM d;
CREATE TABLE e (id int PRIMARY KEY) USING fastckpt;
});

# The whole table by a sequential scan, and by both indexes.
my $fingerprint = q{
SET enable_seqscan = on;
SELECT md5(string_agg(id || ':' || v, ',' ORDER BY id)) FROM t;
SET enable_seqscan = off; SET enable_bitmapscan = off;
SELECT md5(string_agg(id || ':' || v, ',' ORDER BY id)) FROM t WHERE id > 0;
SELECT string_agg(id::text, ',' ORDER BY id) FROM t WHERE v IN ('v5', 'v14+', 'v22', 'v300');
SELECT count(*) FROM d WHERE id BETWEEN 1 AND 1000;
SELECT count(*) FROM e;
};
my $tpl_before = $node->safe_psql('tpl', $fingerprint);
like($tpl_before, qr/^5,14,300$/m, 'template: index lookups find the live rows only');

$node->safe_psql('postgres', 'CREATE DATABASE cp TEMPLATE tpl');
$node->safe_psql('postgres', 'CREATE DATABASE cp_ts TEMPLATE tpl TABLESPACE ts');
is($node->safe_psql('cp', $fingerprint), $tpl_before,
	'CREATE DATABASE copies the template\'s fastckpt rows, and its indexes find them');
is($node->safe_psql('cp_ts', $fingerprint), $tpl_before,
	'the same with the new database in another default tablespace');
$node->safe_psql('postgres', 'CREATE DATABASE cp_file TEMPLATE tpl STRATEGY file_copy');
is($node->safe_psql('cp_file', $fingerprint), $tpl_before,
	'the same when PostgreSQL copies the template file by file');

# The copies are tables of their own.
$node->safe_psql('cp', q{
INSERT INTO t VALUES (1000, 'only in cp');
UPDATE t SET v = 'changed in cp' WHERE id = 5;
INSERT INTO d SELECT generate_series(1, 10);
INSERT INTO e VALUES (1);
});
$node->safe_psql('cp_ts', q{
DELETE FROM t WHERE id = 14;
INSERT INTO d VALUES (60);
});
is($node->safe_psql('tpl', $fingerprint), $tpl_before,
	'writes to the copies leave the template as it was');
is( $node->safe_psql('cp', q{
SET enable_seqscan = off; SET enable_bitmapscan = off;
SELECT string_agg(id::text, ',' ORDER BY id) FROM d WHERE id > 0;
SELECT v FROM t WHERE id = 5;
SELECT count(*) FROM t WHERE v = 'v5'}),
	"1,2,3,4,5,6,7,8,9,10\nchanged in cp\n0",
	'rows inserted into a copied table get slots its copied index does not confuse');
my $cp_before = $node->safe_psql('cp', $fingerprint);
my $cp_ts_before = $node->safe_psql('cp_ts', $fingerprint);

# Moving a database with fastckpt rows would detach them from their tables.
my ($rc, $out, $err) = $node->psql('postgres', 'ALTER DATABASE cp SET TABLESPACE ts');
isnt($rc, 0, 'ALTER DATABASE ... SET TABLESPACE is refused while fastckpt tables hold rows');
like($err, qr/cannot move database "cp" to tablespace "ts": it has fastckpt tables/,
	'the error names the database and the tablespace');
like($err, qr/HINT:.*SET ACCESS METHOD heap/, 'the hint says how to move it');
is($node->safe_psql('cp', $fingerprint), $cp_before, 'the refused move changed nothing');

# A database whose fastckpt tables never had a row moves as usual.
$node->safe_psql('postgres', 'CREATE DATABASE empty_fc');
$node->safe_psql('empty_fc', q{
CREATE EXTENSION pg_fastckpt;
CREATE TABLE n (id int PRIMARY KEY) USING fastckpt;
});
$node->safe_psql('postgres', 'ALTER DATABASE empty_fc SET TABLESPACE ts');
$node->safe_psql('empty_fc', 'INSERT INTO n SELECT generate_series(1, 5)');
is($node->safe_psql('empty_fc', 'SELECT count(*) FROM n'), '5',
	'a database with empty fastckpt tables moves, and its tables take rows');
is( $node->safe_psql('empty_fc',
		q{SELECT count(*) FROM fastckpt_stat_tables WHERE database = current_database()}),
	'1', 'the move took the storage under the old tablespace along with it');

# A database that refuses connections keeps its rows across restarts.
$node->safe_psql('postgres', 'CREATE DATABASE closed TEMPLATE tpl');
$node->safe_psql('closed', q{INSERT INTO t VALUES (2000, 'in closed')});
my $closed_before = $node->safe_psql('closed', $fingerprint);
$node->safe_psql('postgres', 'ALTER DATABASE closed ALLOW_CONNECTIONS false');

# A temporary fastckpt table with an index, alive at the crash: its
# session and files are gone afterwards, and it must not keep the other
# tables closed.
my $temp_session = $node->background_psql('cp');
$temp_session->query_safe(q{
CREATE TEMP TABLE scratch (id int PRIMARY KEY, v text) USING fastckpt;
INSERT INTO scratch SELECT g, 'tmp' FROM generate_series(1, 100) g});

crash_postmaster($node, 1);
eval { $temp_session->quit; };
$node->start;
wait_for_tables_open($node);
is($node->safe_psql('tpl', $fingerprint), $tpl_before, 'after kill -9: the template as it was');
is($node->safe_psql('cp', $fingerprint), $cp_before, 'after kill -9: the copy with its own writes');
is($node->safe_psql('cp_ts', $fingerprint), $cp_ts_before,
	'after kill -9: the copy in the other tablespace with its own writes');
is($node->safe_psql('empty_fc', 'SELECT count(*) FROM n'), '5',
	'after kill -9: the moved database\'s rows');
is($node->safe_psql('cp_file', $fingerprint), $tpl_before, 'after kill -9: the file-copied database');
$node->safe_psql('postgres', 'ALTER DATABASE closed ALLOW_CONNECTIONS true');
is($node->safe_psql('closed', $fingerprint), $closed_before,
	'after kill -9: the rows of a database that refused connections, and its indexes');

# Until recovery has loaded the rows, CREATE DATABASE waits, then fails
# clearly: it must not copy a template that is half loaded.
$node->append_conf('postgresql.conf', "pg_fastckpt.test_recovery_delay = '4s'");
$node->restart;
($rc, $out, $err) = $node->psql('postgres',
	q{SET pg_fastckpt.recovery_wait_timeout = '200ms'; CREATE DATABASE early TEMPLATE tpl});
isnt($rc, 0, 'CREATE DATABASE during startup recovery fails after the wait');
like($err, qr/fastckpt data of database "tpl" is not available yet: recovery in progress/,
	'the error says recovery is in progress');
($rc, $out, $err) = $node->psql('postgres',
	q{SET pg_fastckpt.recovery_wait_timeout = '200ms'; ALTER DATABASE cp SET TABLESPACE pg_default});
like($err, qr/fastckpt data of database "cp" is not available yet/,
	'so does ALTER DATABASE ... SET TABLESPACE');
$node->safe_psql('postgres',
	q{SET pg_fastckpt.recovery_wait_timeout = '60s'; CREATE DATABASE early TEMPLATE tpl});
is($node->safe_psql('early', $fingerprint), $tpl_before,
	'with a longer wait it copies the whole template once recovery is done');
$node->append_conf('postgresql.conf', "pg_fastckpt.test_recovery_delay = 0");
$node->reload;

# Rows that did not come back: the operator moved pg_fastckpt/ aside.
$node->safe_psql('postgres', q{
CREATE TABLE lost (id int PRIMARY KEY, v text) USING fastckpt;
INSERT INTO lost SELECT g, 'old' FROM generate_series(1, 20) g;
});
$node->stop;
my $datadir = $node->data_dir;
rename("$datadir/pg_fastckpt", $node->basedir . '/pg_fastckpt.aside')
  or die "could not move pg_fastckpt aside: $!";
my $log_offset = -s $node->logfile;
$node->start;
wait_for_tables_open($node);
ok($node->log_contains('table "lost" has no rows in the fastckpt log; it opens empty', $log_offset),
	'startup warns that the table opens empty');
is($node->safe_psql('postgres', 'SELECT count(*) FROM lost'), '0', 'the table opens empty');
$node->safe_psql('postgres', q{
INSERT INTO lost SELECT g, 'new' FROM generate_series(1, 30) g;
UPDATE lost SET v = 'updated' WHERE id <= 3;
});
my $lost_sql = q{SELECT count(*) || ' ' || count(*) FILTER (WHERE v = 'updated') FROM lost};
is($node->safe_psql('postgres', $lost_sql), '30 3', 'the empty table takes new rows');

crash_postmaster($node, 1);
my ($vrc, $vout) = verify_files($datadir);
is($vrc, 0, 'pg_fastckpt_verify finds nothing wrong with the new storage\'s record');
$node->start;
wait_for_tables_open($node);
is($node->safe_psql('postgres', $lost_sql), '30 3',
	'after kill -9: every row committed to the table since it opened empty');

$node->stop;
done_testing();
