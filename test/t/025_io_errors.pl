# A failing device under pg_fastckpt's own files: a sync that fails is an
# error that leaves the server up, never PostgreSQL's PANIC (which would
# end every session, heap users' too), and nothing acknowledged is lost.
# The failures come from an LD_PRELOAD library (test/fault/io_fault.c)
# that fails the chosen calls with EIO while a file names them.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use FastckptTest;

my $faults = PostgreSQL::Test::Utils::tempdir;
my $shim = "$faults/io_fault.so";
system('cc', '-shared', '-fPIC', '-O1', '-o', $shim,
	"$FindBin::RealBin/../fault/io_fault.c", '-ldl') == 0
  or BAIL_OUT('could not build test/fault/io_fault.c');

# no checkpoint but those the test asks for; syncs on (the test clusters
# run with fsync = off, which skips them)
my $node = fastckpt_init_node('io_errors', qq{
fsync = on
pg_fastckpt.checkpoint_timeout = 0
pg_fastckpt.max_log_size = 0
});

sub start_with_faults
{
	local $ENV{LD_PRELOAD} = $shim;
	local $ENV{FC_IO_FAULT_DIR} = $faults;
	$node->start;
	return;
}

sub fault
{
	my ($name, $on) = @_;
	if ($on)
	{
		open(my $fh, '>', "$faults/$name") or die "$faults/$name: $!";
		close($fh);
	}
	else
	{
		unlink("$faults/$name");
	}
	return;
}

# How often the library failed a call for the fault.
sub hits
{
	my ($name) = @_;
	return 0 unless -e "$faults/hits";
	return scalar(grep { $_ eq $name } split(/\n/, slurp_file("$faults/hits")));
}

sub postmaster_pid
{
	return (split(/\n/, slurp_file($node->data_dir . '/postmaster.pid')))[0];
}

start_with_faults();
$node->safe_psql('postgres', 'CREATE EXTENSION pg_fastckpt');
$node->safe_psql('postgres', q{
CREATE TABLE t (id int PRIMARY KEY, v text) USING fastckpt;
INSERT INTO t SELECT g, repeat('x', 100) FROM generate_series(1, 1000) g;
});
my $pm = postmaster_pid();
my $log_start = -s $node->logfile;

# ---- write-back of a checkpoint chunk fails ----
# Only asking the kernel to start write-back: the error stays recorded on
# the file for the fdatasync that follows, which reports it (here the
# device is fine by then), so the checkpoint goes on.
$node->safe_psql('postgres', q{UPDATE t SET v = 'a' || v});
fault('ckpt_writeback', 1);
my ($rc, $out, $err) = $node->psql('postgres', 'SELECT fastckpt_checkpoint(true)');
fault('ckpt_writeback', 0);
cmp_ok(hits('ckpt_writeback'), '>', 0, 'write-back error: the library failed a write-back request');
is($rc, 0, 'write-back error: the checkpoint completes') or diag($err);
is(postmaster_pid(), $pm, 'write-back error: the server did not restart');

# ---- a checkpoint directory cannot be synced ----
$node->safe_psql('postgres', q{UPDATE t SET v = 'b' || v WHERE id <= 500});
fault('ckpt_dir_fsync', 1);
($rc, $out, $err) = $node->psql('postgres', 'SELECT fastckpt_checkpoint(true)');
fault('ckpt_dir_fsync', 0);
cmp_ok(hits('ckpt_dir_fsync'), '>', 0, 'directory sync error: the library failed a directory sync');
isnt($rc, 0, 'directory sync error: the checkpoint fails');
like($err, qr/could not fsync .*Input\/output error/,
	'directory sync error: the error says which sync failed');
is(postmaster_pid(), $pm, 'directory sync error: the server did not restart');
is($node->safe_psql('postgres', 'SELECT count(*) FROM t'), '1000',
	'directory sync error: sessions go on');
($rc, $out, $err) = $node->psql('postgres', 'SELECT fastckpt_checkpoint(true)');
is($rc, 0, 'directory sync error: the next checkpoint succeeds') or diag($err);

# ---- the log directory cannot be synced when a new segment is made ----
# The writer makes each 16 MB segment before the log reaches it.  Once the
# log is in the second segment, the third cannot be made: the log has to
# end within the segments there are, which it says, until the device
# heals; nothing written meanwhile is lost.
$node->safe_psql('postgres', q{
CREATE TABLE big (id int PRIMARY KEY, v text) USING fastckpt WITH (fastckpt_row_size = 1200)});
my $logdir = $node->data_dir . '/pg_fastckpt/log';
ok(poll_until_true($node, 'postgres',
		"SELECT count(*) = 1 FROM pg_ls_dir('pg_fastckpt/log') f WHERE f = '0000000001000000'"),
	'log directory: the second segment is made in advance');
fault('log_dir_fsync', 1);
my $log_offset = -s $node->logfile;
my $rows = 0;
sub insert_until
{
	my ($lsn) = @_;
	# rows of about 1 kB that do not compress: 2 MB of log a statement
	while ($node->safe_psql('postgres', 'SELECT insert_lsn FROM fastckpt_stat_log') < $lsn)
	{
		die "the log did not reach $lsn" if $rows > 100_000;
		$node->safe_psql('postgres', qq{
INSERT INTO big SELECT g, (SELECT string_agg(md5(g || '.' || i), '') FROM generate_series(1, 30) i)
FROM generate_series($rows + 1, $rows + 2000) g});
		$rows += 2000;
	}
	return;
}
insert_until(17 * 1024 * 1024);
$node->wait_for_log(
	qr/the next log segment cannot be created: could not fsync directory "pg_fastckpt\/log": Input\/output error/,
	$log_offset);
cmp_ok(hits('log_dir_fsync'), '>', 0, 'log directory: the library failed a directory sync');
pass('log directory: the writer says why the next segment cannot be made');
is(postmaster_pid(), $pm, 'log directory: the server did not restart');
fault('log_dir_fsync', 0);
$node->wait_for_log(qr/the next log segment could be created; commits to fastckpt tables are accepted again/,
	$log_offset);
insert_until(34 * 1024 * 1024);
is($node->safe_psql('postgres', 'SELECT count(*) FROM big'), $rows,
	'log directory: every insert went through once the device healed');

unlike(substr(slurp_file($node->logfile), $log_start), qr/PANIC/, 'no PANIC in the server log');

# every acknowledged row survives a crash
crash_postmaster($node);
start_with_faults();
wait_for_tables_open($node);
is($node->safe_psql('postgres', 'SELECT count(*) FROM big'), $rows,
	'after a crash: every row written across the failures is there');
is($node->safe_psql('postgres', q{SELECT count(*) FILTER (WHERE v LIKE 'ax%'), count(*) FILTER (WHERE v LIKE 'bax%') FROM t}),
	'500|500', 'after a crash: the updates made between the failed checkpoints are there');

$node->stop;
done_testing();
