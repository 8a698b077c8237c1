# Helpers shared by pg_fastckpt's TAP tests.
package FastckptTest;

use strict;
use warnings;
use Exporter 'import';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use IPC::Run;
use Test::More ();
use POSIX qw(WNOHANG);
use Time::HiRes qw(usleep);

our @EXPORT = qw(fastckpt_node fastckpt_init_node crash_postmaster
  wait_for_tables_open poll_until_true simulate_log_power_loss server_child_pid
  verify_files);

# A postmaster outlives the pg_ctl that started it, so the kernel hands it
# to the nearest "child subreaper" ancestor, else to PID 1.  After a kill -9
# it stays a zombie until that parent reaps it, and the next start refuses
# to run while the pid in postmaster.pid exists.  PID 1 of these VMs reaps
# only every second or two, which cost 1.5 s per crash; as the subreaper
# (prctl PR_SET_CHILD_SUBREAPER = 36), crash_postmaster reaps it at once.
# Where that fails, the wait below just takes longer.
BEGIN
{
	eval {
		require 'syscall.ph';
		syscall(&SYS_prctl, 36, 1, 0, 0, 0);
	};
}

# A new cluster with the extension preloaded, not started.
sub fastckpt_init_node
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
	return $node;
}

# The same, started, with the extension created in "postgres".
sub fastckpt_node
{
	my ($name, $extra_conf) = @_;
	my $node = fastckpt_init_node($name, $extra_conf);
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION pg_fastckpt');
	return $node;
}

# kill -9 the postmaster, then wait until it and its children are gone, so
# that the next start finds neither a live lock file owner nor attached
# shared memory.  Returns true once no process is attached to the
# postmaster's shared memory any more: backends and workers outlive the
# postmaster until their next wait, and may still write files until then.
# With $all true, every child is killed with it, wherever it is (closer to
# a machine crash: a backend mid-commit, the log writer mid-write).
sub crash_postmaster
{
	my ($node, $all) = @_;
	my $pidfile = $node->data_dir . '/postmaster.pid';
	my @pidlines = split /\n/, slurp_file($pidfile);
	my $pid = $pidlines[0];
	# line 7 of the lock file: key and id of the SysV segment every child
	# inherits (see PostgreSQL's pidfile.h)
	my ($shmid) = ($pidlines[6] // '') =~ /^\s*\d+\s+(\d+)\s*$/;
	my @children = _child_pids($pid);

	$node->kill9;
	kill('KILL', @children) if $all && @children;
	for (my $i = 0; $i < 3000; $i++)
	{
		last if waitpid($pid, WNOHANG) == $pid || !kill(0, $pid);
		usleep(10_000);
	}
	# children notice the postmaster's death at their next wait.  The "[/]"
	# keeps pgrep from finding the shell that runs it, whose command line
	# holds the path too (the loop then waited out its 30 s).
	(my $pattern = $node->{_basedir}) =~ s{^/}{[/]};
	for (my $i = 0; $i < 3000; $i++)
	{
		my $left = `pgrep -f -- '$pattern' 2>/dev/null`;
		last if $left eq '';
		usleep(10_000);
	}
	# the orphaned children came to this process too: reap them
	waitpid($_, WNOHANG) for @children;
	return _wait_for_shmem_detach($shmid);
}

# Processes whose parent is $ppid, from /proc/<pid>/stat (the field after
# the parenthesized command name, which may itself hold spaces or parens).
sub _child_pids
{
	my ($ppid) = @_;
	my @pids;
	opendir(my $dh, '/proc') or return ();
	for my $p (grep { /^\d+$/ } readdir($dh))
	{
		open(my $fh, '<', "/proc/$p/stat") or next;
		my $stat = <$fh> // '';
		close $fh;
		push @pids, $p if $stat =~ /\)\s+\S+\s+(\d+)/ && $1 == $ppid;
	}
	closedir($dh);
	return @pids;
}

# The pid of the postmaster's child whose command line matches $pattern
# (process titles: "postgres: <cluster>: pg_fastckpt log writer"), or undef.
sub server_child_pid
{
	my ($node, $pattern) = @_;
	for my $pid (_child_pids($node->{_pid}))
	{
		open(my $fh, '<', "/proc/$pid/cmdline") or next;
		my $cmdline = <$fh> // '';
		close $fh;
		return $pid if $cmdline =~ $pattern;
	}
	return undef;
}

# Wait until nothing is attached to SysV segment $shmid (or it is gone).
# True on success, false after 30 s or if the kernel does not tell.
sub _wait_for_shmem_detach
{
	my ($shmid) = @_;
	return 0 unless defined $shmid && -r '/proc/sysvipc/shm';
	for (my $i = 0; $i < 3000; $i++)
	{
		my $nattch;
		open(my $fh, '<', '/proc/sysvipc/shm') or return 0;
		while (my $line = <$fh>)
		{
			# columns: key shmid perms size cpid lpid nattch ...
			my @f = split ' ', $line;
			$nattch = $f[6] if @f > 6 && $f[1] eq $shmid;
		}
		close $fh;
		return 1 if !defined $nattch || $nattch == 0;
		usleep(10_000);
	}
	return 0;
}

# The power-loss model of pg_fastckpt's logical log: after a kill -9 (with
# nothing running any more), lose every byte of the log that was not
# fdatasynced.  L, the durable position, is what the log writer last wrote
# to pg_fastckpt/sync_trace (needs pg_fastckpt.test_sync_trace = on; a
# missing file means L = 0).  A segment file is named by the log position it
# starts at: segments starting at or after L are deleted, the one holding L
# is truncated there.  Returns a hash: synced (L), segments, deleted,
# truncated, bytes (dropped).
sub simulate_log_power_loss
{
	my ($node) = @_;
	my $dir = $node->data_dir . '/pg_fastckpt';
	my %r = (synced => 0, segments => 0, deleted => 0, truncated => 0, bytes => 0);

	if (-e "$dir/sync_trace")
	{
		my $trace = slurp_file("$dir/sync_trace");
		$trace =~ /^([0-9A-F]{16})\n\z/
		  or die "malformed $dir/sync_trace: '$trace'";
		no warnings 'portable';    # 64-bit positions
		$r{synced} = hex($1);
	}

	opendir(my $dh, "$dir/log") or return \%r;    # nothing logged yet
	my @segs = sort grep { /^[0-9A-F]{16}\z/ } readdir($dh);
	closedir($dh);
	for my $seg (@segs)
	{
		my $path = "$dir/log/$seg";
		my $start = do { no warnings 'portable'; hex($seg) };
		my $size = -s $path // 0;
		$r{segments}++;
		if ($start >= $r{synced})
		{
			unlink($path) or die "could not remove $path: $!";
			$r{deleted}++;
			$r{bytes} += $size;
		}
		elsif ($start + $size > $r{synced})
		{
			truncate($path, $r{synced} - $start)
			  or die "could not truncate $path: $!";
			$r{truncated}++;
			$r{bytes} += $start + $size - $r{synced};
		}
	}
	return \%r;
}

# Run pg_fastckpt_verify (the offline check of the checkpoints and log) on
# a data directory of a stopped server: returns exit status, stdout, stderr.
sub verify_files
{
	my ($datadir) = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run([ 'pg_fastckpt_verify', '-D', $datadir ], '>', \$out, '2>', \$err);
	my $rc = $? >> 8;
	Test::More::note("pg_fastckpt_verify -D $datadir: exit $rc\n$out$err");
	return ($rc, $out, $err);
}

# Poll until $query in $dbname returns "t"; false after the default
# timeout.  The query goes on psql's command line, not to its stdin, as
# PostgreSQL::Test::Cluster::poll_query_until sends it: a server that is
# crash-restarting refuses the connection at once, and IPC::Run then dies
# of a broken pipe writing to a psql that has exited.
sub poll_until_true
{
	my ($node, $dbname, $query) = @_;
	my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;

	while (time() < $deadline)
	{
		my ($out, $err) = ('', '');
		IPC::Run::run([ 'psql', '-XAt', '-d', $node->connstr($dbname), '-c', $query ],
			'>', \$out, '2>', \$err);
		chomp $out;
		return 1 if $out eq 't';
		usleep(100_000);
	}
	return 0;
}

sub wait_for_tables_open
{
	my ($node) = @_;
	poll_until_true($node, 'postgres', 'SELECT tables_open FROM fastckpt_stat_recovery')
	  or die "fastckpt recovery did not open the tables";
	return;
}

1;
