# pg_rewind of an old primary from its promoted standby copies the
# standby's pg_fastckpt/ files, taken while it runs, and writes a
# backup_label whose start location can be the very one of the standby's
# own base backup (no checkpoint on the old primary in between).  Started
# as a primary, the old primary must see a restored data directory whose
# fastckpt files need not match its heap tables, and keep them closed, not
# take the label for the backup the files already belong to.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use FastckptTest;

my $conf = q{
shared_preload_libraries = 'pg_fastckpt'
pg_fastckpt.memory_limit = '128MB'
max_worker_processes = 16
wal_log_hints = on
wal_keep_size = '256MB'
};
my $old = PostgreSQL::Test::Cluster->new('old_primary');
$old->init(allows_streaming => 1);
$old->append_conf('postgresql.conf', $conf);
$old->start;
$old->safe_psql('postgres', q{
CREATE EXTENSION pg_fastckpt;
CREATE TABLE f (id int PRIMARY KEY) USING fastckpt;
CREATE TABLE h (id int PRIMARY KEY);
});
$old->backup('bk');
my $new = PostgreSQL::Test::Cluster->new('new_primary');
$new->init_from_backup($old, 'bk', has_streaming => 1);
$new->start;
$old->safe_psql('postgres', q{
INSERT INTO f SELECT generate_series(1, 100);
INSERT INTO h SELECT generate_series(1, 100);
});
$old->wait_for_catchup($new);

# failover; the operator opens the promoted server's tables as its base
# backup left them (README: remove pg_fastckpt/timeline)
$new->promote;
$new->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
  or die 'not promoted';
$new->stop;
unlink($new->data_dir . '/pg_fastckpt/timeline') or die "unlink: $!";
$new->start;
wait_for_tables_open($new);
like(slurp_file($new->data_dir . '/pg_fastckpt/timeline'), qr{^timeline 2\nbackup \S+\@\S+\n\z},
	'the promoted server notes its timeline and the backup it was restored from, with its start time');
$new->safe_psql('postgres', 'TRUNCATE f, h; INSERT INTO f VALUES (1); INSERT INTO h VALUES (1)');

# the old primary is rewound from the running new one and started as a primary
$old->stop;
command_ok(
	[ 'pg_rewind', '-D', $old->data_dir,
	  '--source-server', $new->connstr('postgres') ],
	'pg_rewind of the old primary');
like(slurp_file($old->data_dir . '/backup_label'), qr/START TIME: /, 'pg_rewind wrote a backup label');
# pg_rewind copied the new primary's configuration: take back the port
$old->append_conf('postgresql.conf', 'port = ' . $old->port . "\n");
$new->stop;
$old->start;
ok($old->poll_query_until('postgres', q{SELECT error <> '' FROM fastckpt_stat_recovery}),
	'startup recovery of the rewound server gives up');
my ($rc, $out, $err) = $old->psql('postgres', 'SELECT count(*) FROM f');
isnt($rc, 0, 'its fastckpt tables stay closed');
like($err, qr/restored from a base backup/, 'the error says the data directory was restored');
is($old->safe_psql('postgres', 'SELECT count(*) FROM h'), '1', 'its heap tables are the new primary\'s');
$old->stop;
done_testing();
