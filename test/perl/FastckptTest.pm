# Helpers shared by pg_fastckpt's TAP tests.
package FastckptTest;

use strict;
use warnings;
use Exporter 'import';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Time::HiRes qw(usleep);

our @EXPORT = qw(fastckpt_node crash_postmaster wait_for_tables_open);

# A cluster with the extension preloaded and created in "postgres".
sub fastckpt_node
{
	my ($name, $extra_conf) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
	$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'pg_fastckpt'
pg_fastckpt.memory_limit = '256MB'
restart_after_crash = on
max_worker_processes = 16
} . ($extra_conf // ''));
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION pg_fastckpt');
	return $node;
}

# kill -9 the postmaster, then wait until it and its children are gone, so
# that the next start finds neither a live lock file owner nor attached
# shared memory.
sub crash_postmaster
{
	my ($node) = @_;
	my $pidfile = $node->data_dir . '/postmaster.pid';
	my $pid = (split /\n/, slurp_file($pidfile))[0];

	$node->kill9;
	for (my $i = 0; $i < 600; $i++)
	{
		last unless kill(0, $pid);
		usleep(50_000);
	}
	# children notice the postmaster's death at their next wait
	for (my $i = 0; $i < 600; $i++)
	{
		my $left = `pgrep -f -- '$node->{_basedir}' 2>/dev/null`;
		last if $left eq '';
		usleep(50_000);
	}
	return;
}

sub wait_for_tables_open
{
	my ($node) = @_;
	$node->poll_query_until('postgres',
		'SELECT tables_open FROM fastckpt_stat_recovery')
	  or die "fastckpt recovery did not open the tables";
	return;
}

1;
