# Temporary fastckpt tables end with their session, so nothing of them is
# logged or recovered.  A registered call that reads one is logged by its
# row images (replay could not read the table), and survives a crash that
# finds the temporary table's session still open.  A relfilenode that
# PostgreSQL hands to a temporary table while a lasting fastckpt table has
# it (possible once the OID counter has wrapped around: their files are
# named apart) is refused, and the lasting table keeps its rows.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use FastckptTest;

my $node = fastckpt_node('temptables');

$node->safe_psql('postgres', q{
CREATE TABLE acct (id int PRIMARY KEY, bal int NOT NULL) USING fastckpt;
INSERT INTO acct SELECT g, 0 FROM generate_series(1, 10) g;
CREATE FUNCTION add_rate(p_id int) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	UPDATE acct SET bal = bal + (SELECT rate FROM pg_temp.rates WHERE id = p_id)
	 WHERE id = p_id;
END $$;
SELECT fastckpt_register_procedure('add_rate(int)');
SELECT fastckpt_checkpoint(true);
});

# The session keeps its temporary table until the crash: had the calls
# been logged as CALL records, replay would find no table to read.
my $temp_session = $node->background_psql('postgres');
$temp_session->query_safe(q{
CREATE TEMP TABLE rates (id int PRIMARY KEY, rate int) USING fastckpt;
INSERT INTO rates VALUES (1, 5), (2, 7)});
$temp_session->query_safe('SELECT add_rate(1)') for 1 .. 3;
$temp_session->query_safe('SELECT add_rate(2)');
is( $temp_session->query_safe(q{
SELECT calls || ' ' || call_records || ' ' || value_records || ' ' || last_fallback
  FROM fastckpt_procedures WHERE routine = 'add_rate(int)'::regprocedure}),
	'4 0 4 non_fastckpt_relation',
	'calls reading a temporary fastckpt table are logged by their row images');

crash_postmaster($node, 1);
eval { $temp_session->quit; };
$node->start;
wait_for_tables_open($node);
is($node->safe_psql('postgres', q{SELECT id || ':' || bal FROM acct WHERE bal <> 0 ORDER BY id}),
	"1:15\n2:7", 'after kill -9: the calls\' writes are there');
is( $node->safe_psql('postgres', q{
SELECT count(*) FROM fastckpt_stat_tables
 WHERE database = current_database() AND relation IS NULL}),
	'0', 'after kill -9: no storage of the temporary table came back');

# A lasting table whose relfilenode is no table's OID (TRUNCATE gave it a
# new one), as it is after most TRUNCATEs and rewrites.
$node->safe_psql('postgres', q{
CREATE TABLE keep (id int PRIMARY KEY, v text) USING fastckpt;
TRUNCATE keep;
INSERT INTO keep SELECT g, 'v' || g FROM generate_series(1, 100) g;
});
my $keep_node = $node->safe_psql('postgres',
	q{SELECT relfilenode FROM pg_class WHERE relname = 'keep'});
my $keep_query = q{
SELECT count(*) || ' ' || sum(id) || ' ' || max(v) FROM keep;
SET enable_seqscan = off; SET enable_bitmapscan = off;
SELECT v FROM keep WHERE id = 42};
my $keep_before = $node->safe_psql('postgres', $keep_query);

# Wind the OID counter back to just before that number, as a wraparound
# would.  Each TRUNCATE of a temporary table takes the next OID as its new
# relfilenode, checked only against files named like its own.
$node->stop;
my $next_oid = $keep_node - 40;
$next_oid = 16384 if $next_oid < 16384;
command_ok([ 'pg_resetwal', '-o', $next_oid, $node->data_dir ],
	'pg_resetwal sets the next OID back');
$node->start;
wait_for_tables_open($node);

my $script = "CREATE TEMP TABLE tt (a int) USING fastckpt;\n"
  . "INSERT INTO tt VALUES (1);\n"
  . ("TRUNCATE tt;\nINSERT INTO tt VALUES (2);\n" x 80)
  . "SELECT relfilenode > $keep_node FROM pg_class WHERE oid = 'tt'::regclass;\n"
  . "SELECT count(*) FROM tt;\n";
my ($out, $err) = ('', '');
$node->psql('postgres', $script, stdout => \$out, stderr => \$err, on_error_stop => 0);
note("temporary table session:\n$out\n$err");
my @refused = $err =~ /relfilenode $keep_node is in use/g;
is(scalar(@refused), 1, 'the temporary table\'s TRUNCATE that drew the lasting table\'s number was refused');
like($err, qr/HINT:  Run the command again/, 'the error says what to do');
is($out, "t\n1", 'the temporary table went on past that number, with its rows');
is($node->safe_psql('postgres', $keep_query), $keep_before,
	'the lasting table keeps its rows and its index finds them');

crash_postmaster($node, 1);
$node->start;
wait_for_tables_open($node);
is($node->safe_psql('postgres', $keep_query), $keep_before,
	'after kill -9: the lasting table\'s rows');

$node->stop;

# One session's temporary fastckpt tables take memory and table storages
# every session shares: each session may use pg_fastckpt.temp_share (25%)
# of both, so an unprivileged role cannot make other sessions' writes fail.
my $small = fastckpt_node('temp_share',
	"pg_fastckpt.memory_limit = '64MB'\npg_fastckpt.max_tables = 16\n");
wait_for_tables_open($small);
$small->safe_psql('postgres', q{
	CREATE ROLE u LOGIN;
	GRANT CREATE ON SCHEMA public TO u;
	CREATE TABLE perm (id int PRIMARY KEY, pad text) USING fastckpt});
my $u = $small->background_psql('postgres', on_error_stop => 0,
	extra_params => ['-U', 'u']);
$u->query_safe("CREATE TEMP TABLE tt$_ (id int) USING fastckpt") for 1 .. 4;
$u->query(q{CREATE TEMP TABLE tt5 (id int) USING fastckpt});
like($u->{stderr},
	qr/cannot create the storage of temporary fastckpt table "tt5": this session's temporary fastckpt tables are at their limit\n.*DETAIL:  This session holds 4 temporary fastckpt storages.*pg_fastckpt.temp_share \(25%\) of pg_fastckpt.memory_limit \(64 MB\) and of pg_fastckpt.max_tables \(16\)/,
	'a session\'s fifth temporary fastckpt table of 16 storages is refused, naming the limit');
$u->{stderr} = '';
is($small->safe_psql('postgres', q{CREATE TABLE perm2 (id int) USING fastckpt; SELECT 'created'}),
	'created', '... while other sessions can still create fastckpt tables');
# a superuser drops one of them: the session gets its storage back
$small->safe_psql('postgres', q{
	DO $$ BEGIN
		EXECUTE format('DROP TABLE %s', (SELECT c.oid::regclass FROM pg_class c
			WHERE c.relname = 'tt4' AND c.relpersistence = 't'));
	END $$});
$u->query(q{CREATE TEMP TABLE tt5 (id int) USING fastckpt});
is($u->{stderr}, '', '... and when another session drops one of its tables, it may create one again');
$u->{stderr} = '';
$u->query_safe('DROP TABLE tt5');

# its rows: at most a quarter of the arena (16 MB)
$u->query(q{INSERT INTO tt1 SELECT g FROM generate_series(1, 2000000) g});
like($u->{stderr},
	qr/cannot write to temporary fastckpt table "tt1": this session's temporary fastckpt tables are at their limit\n.*DETAIL:  This session's temporary fastckpt tables hold 16\d{3} kB of pg_fastckpt memory/,
	'a session\'s temporary rows stop at its share of the arena, naming the limit');
$u->{stderr} = '';
is($small->safe_psql('postgres',
		q{INSERT INTO perm SELECT g, repeat('x', 100) FROM generate_series(1, 20000) g; SELECT count(*) FROM perm}),
	'20000', '... while other sessions\' writes go on');

# what the session drops it gets back
$u->query_safe('DROP TABLE tt1, tt2');
$u->query_safe('CREATE TEMP TABLE tt6 (id int) USING fastckpt');
is($u->query_safe(q{INSERT INTO tt6 SELECT g FROM generate_series(1, 100000) g; SELECT count(*) FROM tt6}),
	'100000', 'dropped temporary tables give their storages and memory back to the session');

# the old versions of its rows count too: one transaction updating them
# over and over cannot take the whole arena
$u->query(q{BEGIN; DO $$ BEGIN FOR i IN 1 .. 100 LOOP UPDATE tt6 SET id = id + 1; END LOOP; END $$});
like($u->{stderr},
	qr/cannot write to temporary fastckpt table "tt6": this session's temporary fastckpt tables are at their limit/,
	'old versions of a session\'s temporary rows stop at its share of the arena');
$u->query('ROLLBACK');
$u->{stderr} = '';
is($small->safe_psql('postgres',
		q{UPDATE perm SET pad = 'u' || pad; SELECT count(*) FROM perm WHERE pad LIKE 'u%'}),
	'20000', '... while other sessions\' updates go on');

# the share is the superuser's to set
$u->query(q{SET pg_fastckpt.temp_share = 100});
like($u->{stderr}, qr/permission denied to set parameter "pg_fastckpt.temp_share"/,
	'an unprivileged role cannot raise its share');
$u->quit;

# a temporary table created and dropped in one transaction gives its
# storage back at once: a routine using a scratch table may run many times
$small->safe_psql('postgres', q{
	CREATE FUNCTION scratch(n int) RETURNS int LANGUAGE plpgsql AS $$
	DECLARE total int := 0; c int;
	BEGIN
		FOR i IN 1 .. n LOOP
			CREATE TEMP TABLE scratch_t (id int) USING fastckpt;
			INSERT INTO scratch_t SELECT generate_series(1, i);
			SELECT count(*) INTO c FROM scratch_t;
			total := total + c;
			DROP TABLE scratch_t;
		END LOOP;
		RETURN total;
	END $$});
my $u2 = $small->background_psql('postgres', on_error_stop => 0,
	extra_params => ['-U', 'u']);
is($u2->query_safe('BEGIN; SELECT scratch(20); COMMIT;'), '210',
	'a transaction creates and drops a temporary fastckpt table 20 times (4 may exist at once)');
# ... but not one whose DROP a savepoint can still undo
is($u2->query_safe(q{
	BEGIN;
	CREATE TEMP TABLE keep1 (id int) USING fastckpt;
	INSERT INTO keep1 VALUES (1), (2), (3);
	SAVEPOINT s;
	DROP TABLE keep1;
	ROLLBACK TO SAVEPOINT s;
	SELECT count(*) FROM keep1;
	COMMIT;
	SELECT count(*) FROM keep1}), "3\n3",
	'a DROP rolled back to a savepoint leaves the table and its rows');
is($u2->query_safe(q{
	BEGIN;
	CREATE TEMP TABLE gone1 (id int) USING fastckpt;
	INSERT INTO gone1 VALUES (1);
	DROP TABLE gone1;
	CREATE TEMP TABLE gone1 (id int) USING fastckpt;
	INSERT INTO gone1 VALUES (7);
	ROLLBACK;
	SELECT count(*) FROM pg_class WHERE relname = 'gone1'}), '0',
	'created, dropped, created again and rolled back: nothing left');
$u2->quit;
my $su = $small->background_psql('postgres');
$su->query_safe('SET pg_fastckpt.temp_share = 50');
$su->query_safe("CREATE TEMP TABLE st$_ (id int) USING fastckpt") for 1 .. 7;
is($su->query_safe(q{SELECT count(*) FROM pg_class WHERE relname LIKE 'st_' AND relpersistence = 't'}),
	'7', 'with pg_fastckpt.temp_share = 50 a session holds more');
$su->quit;
$small->stop;
done_testing();
