# pg_fastckpt looks at the body of each LANGUAGE sql function PostgreSQL
# inlines inside a routine (does it read the clock?), and looks its
# identifiers up as type names.  Such a lookup may wait for a lock on the
# catalog; a statement_timeout or a cancel that ends that wait must end the
# statement, as it would without the extension, not be swallowed.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use FastckptTest;

my $node = fastckpt_node('catalog_waits');
wait_for_tables_open($node);
# identifiers no cache has seen yet: their lookups go to pg_type
$node->safe_psql('postgres', q{
	CREATE FUNCTION body_with_names() RETURNS int LANGUAGE sql
		AS $$ SELECT never_seen_a + never_seen_b FROM (SELECT 1 AS never_seen_a, 2 AS never_seen_b) s $$;
	CREATE FUNCTION warm() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$;
});

# the caller's session has what it needs cached before pg_type is locked
my $caller = $node->background_psql('postgres', on_error_stop => 0);
$caller->query_safe(q{DO $$ BEGIN PERFORM warm(); END $$});
$caller->query_safe(q{SET statement_timeout = '1s'});

my $locker = $node->background_psql('postgres');
$locker->query_safe('BEGIN');
$locker->query_safe('LOCK TABLE pg_type IN ACCESS EXCLUSIVE MODE');

# the lock goes after 6 s
$locker->{stdin} .= "SELECT pg_sleep(6);\nROLLBACK;\n";
$locker->{run}->pump_nb;

my $start = time();
$caller->query(q{DO $$ BEGIN PERFORM body_with_names(); END $$});
my $took = time() - $start;
my $err = $caller->{stderr};
$locker->quit;
$caller->quit;

like($err, qr/canceling statement due to statement timeout/,
	'a catalog wait inside an inlined body ends at statement_timeout');
cmp_ok($took, '<', 5, "... at once, not when the lock is released (took ${took} s)");
is($node->safe_psql('postgres', 'SELECT body_with_names()'), '3',
	'the function works once the catalog is free');

$node->stop;
done_testing();
