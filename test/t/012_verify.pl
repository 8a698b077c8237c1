# pg_fastckpt_verify, the offline check of a data directory's checkpoints
# and log: it finds nothing wrong in what a crash or a clean shutdown
# leaves, counts exactly the records the workload committed, and names
# each kind of damage (a checkpoint block, a record inside the log, bytes
# past its end, a missing segment) with the right verdict and exit status.
# Damage is made in copies of the data directory; the server itself is
# never started on them.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use File::Find;
use Time::HiRes qw(usleep);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use FastckptTest;

use constant SEGMENT_SIZE => 16 * 1024 * 1024;

my $node = fastckpt_node('verify', qq{
pg_fastckpt.checkpoint_timeout = 0
pg_fastckpt.max_log_size = 0
max_prepared_transactions = 2
});
my $copy = PostgreSQL::Test::Utils::tempdir();
my $copies = 0;

# --help and --version, as every PostgreSQL program has them
program_help_ok('pg_fastckpt_verify');
program_version_ok('pg_fastckpt_verify');

# CRC-32C (Castagnoli), as the files carry it.
my @crc_table = map {
	my $c = $_;
	$c = ($c & 1) ? (($c >> 1) ^ 0x82F63B78) : ($c >> 1) for 1 .. 8;
	$c
} 0 .. 255;

sub crc32c
{
	my ($data) = @_;
	my $crc = 0xFFFFFFFF;
	$crc = $crc_table[ ($crc ^ $_) & 0xFF ] ^ ($crc >> 8) for unpack('C*', $data);
	return $crc ^ 0xFFFFFFFF;
}

sub write_file
{
	my ($path, $data) = @_;
	open(my $fh, '>', $path) or die "open $path: $!";
	binmode $fh;
	print $fh $data;
	close($fh) or die "close $path: $!";
	return;
}

# A fresh copy of the (stopped) node's data directory.
sub fresh_copy
{
	my $dir = "$copy/data" . ++$copies;
	system('cp', '-a', $node->data_dir, $dir) == 0 or die "cp failed: $?";
	return $dir;
}

# Overwrite bytes of a file at an offset.
sub overwrite
{
	my ($path, $offset, $bytes) = @_;
	open(my $fh, '+<', $path) or die "open $path: $!";
	binmode $fh;
	seek($fh, $offset, 0) or die "seek $path: $!";
	print $fh $bytes;
	close($fh) or die "close $path: $!";
	return;
}

# The log segment file holding a position, and the offset in it.
sub log_place
{
	my ($datadir, $lsn) = @_;
	my $start = $lsn - $lsn % SEGMENT_SIZE;
	return (sprintf('%s/pg_fastckpt/log/%016X', $datadir, $start), $lsn - $start);
}

# From a report: each checkpoint's log start, the log's end, VALUES records.
sub parse_report
{
	my ($out) = @_;
	my %r;
	($r{installed_seq}, $r{installed}) = $out =~ /checkpoint (\d+) \(installed\): CSN \d+, log from (\d+)/;
	($r{previous_seq}, $r{previous}) = $out =~ /checkpoint (\d+) \(previous\): CSN \d+, log from (\d+)/;
	($r{end}) = $out =~ /log: ends at position (\d+)/;
	($r{values}) = $out =~ /records \((\d+) VALUES/;
	return \%r;
}

# ---------------------------------------------------------------------------
# A crashed server: two checkpoints, then 20 commits, then kill -9.

$node->safe_psql('postgres', q{
	CREATE TABLE t (id int PRIMARY KEY, v text) USING fastckpt;
	INSERT INTO t SELECT g, 'row ' || g FROM generate_series(1, 5000) g;
	SELECT fastckpt_checkpoint(true);
	UPDATE t SET v = v || ' again' WHERE id <= 100;
	SELECT fastckpt_checkpoint(true);
});
$node->safe_psql('postgres', "UPDATE t SET v = 'after $_' WHERE id = $_") for 1 .. 20;
ok(crash_postmaster($node), 'server gone after kill -9');

my ($rc, $out, $err) = verify_files($node->data_dir);
is($rc, 0, 'crashed server: exit 0');
like($out, qr/^checkpoint \d+: .*: ok$/m, 'crashed server: the installed checkpoint is ok');
is(() = $out =~ /^checkpoint \d+: .*: ok$/mg, 2, 'crashed server: both checkpoints checked and ok');
like($out, qr/zeros after it/, 'crashed server: the log ends cleanly');
unlike($err, qr/error:/, 'crashed server: no error');
my $r = parse_report($out);
# from the previous checkpoint on: the 100-row update, then the 20 commits
is($r->{values}, 21, 'the log holds exactly the 21 VALUES records committed since the previous checkpoint');
ok($r->{installed} > $r->{previous} && $r->{end} > $r->{installed},
	'the installed checkpoint replays from after the previous one, and the log goes on after it');

# A damaged block of the installed checkpoint: a file only it has (the
# unchanged ones are linked from the previous checkpoint).
{
	my $dir = fresh_copy();
	my @own;
	find(sub {
		push @own, $File::Find::name
		  if -f $_ && $_ ne 'manifest' && (stat(_))[3] == 1;
	}, sprintf('%s/pg_fastckpt/ckpt/%016X', $dir, $r->{installed_seq}));
	ok(@own > 0, 'the installed checkpoint has a file of its own: ' . join(' ', @own));
	overwrite($own[0], 100, "\xAA\xBB\xCC\xDD");
	my ($rc2, $out2, $err2) = verify_files($dir);
	is($rc2, 1, 'damaged checkpoint block: exit 1');
	like($err2, qr/error: checkpoint $r->{installed_seq}: "\Q$own[0]\E": block 0 \(byte 0\): block CRC mismatch/,
		'damaged checkpoint block: the file, block and fault named');
	like($out2, qr/^checkpoint $r->{installed_seq}: .*: DAMAGED \(1 of its chunks\)$/m,
		'damaged checkpoint block: one damaged chunk counted');
	like($out2, qr/recovery would fall back to checkpoint $r->{previous_seq}/,
		'damaged checkpoint block: the fallback named');
}

# The first record after the installed checkpoint's position damaged, in a
# crashed server: the 19 valid records behind it are reported, as a
# warning (a crash that lost unsynced writes leaves the same).
{
	my $dir = fresh_copy();
	my ($seg, $off) = log_place($dir, $r->{installed});
	overwrite($seg, $off + 8, "\xFF");
	my ($rc2, $out2, $err2) = verify_files($dir);
	is($rc2, 0, 'record damaged after a crash: exit 0 (a warning)');
	like($err2, qr/warning: log: 19 valid records lie past the end of the log at position $r->{installed}/,
		'record damaged after a crash: the 19 records behind it reported');
	like($out2, qr/log: ends at position $r->{installed};/, 'the valid log ends at the damaged record');
}

# A control file and manifest that agree, but put the installed
# checkpoint's log position inside a record (both resealed, as a buggy
# writer would leave them): its replay would stop at once.
{
	my $dir = fresh_copy();
	my $ckdir = sprintf('%s/pg_fastckpt/ckpt', $dir);
	my $mpath = sprintf('%s/%016X/manifest', $ckdir, $r->{installed_seq});
	my $manifest = slurp_file($mpath);
	my $control = slurp_file("$ckdir/control");
	my $moved = $r->{installed} + 8;
	substr($manifest, 40, 8) = pack('Q', $moved);    # fc_ckpt_manifest.start_lsn
	substr($manifest, 4, 4) = pack('L', crc32c(substr($manifest, 8)));
	substr($control, 32, 8) = pack('Q', $moved);     # refs[0].start_lsn
	substr($control, 48, 4) = substr($manifest, 4, 4);    # refs[0].manifest_crc
	substr($control, 4, 4) = pack('L', crc32c(substr($control, 8)));
	write_file($mpath, $manifest);
	write_file("$ckdir/control", $control);
	my ($rc2, $out2, $err2) = verify_files($dir);
	is($rc2, 1, 'checkpoint position inside a record: exit 1');
	like($out2, qr/checkpoint $r->{installed_seq} \(installed\): CSN \d+, log from $moved,/,
		'the resealed files pass their own checks');
	like($err2, qr/error: log: the installed checkpoint's position $moved falls inside a record/,
		'checkpoint position inside a record: found');
}

# Bytes past the end after a crash: a record cut short, not damage.
{
	my $dir = fresh_copy();
	my ($seg, $off) = log_place($dir, $r->{end});
	overwrite($seg, $off, "\xAB" x 100);
	my ($rc2, $out2, $err2) = verify_files($dir);
	is($rc2, 0, 'torn tail after a crash: exit 0');
	like($out2, qr/100 bytes after it are a record cut short by a crash/,
		'torn tail after a crash: reported as a record cut short');
}

# The log segment holding the installed checkpoint's position removed.
{
	my $dir = fresh_copy();
	my ($seg) = log_place($dir, $r->{installed});
	unlink($seg) or die "unlink $seg: $!";
	my ($rc2, $out2, $err2) = verify_files($dir);
	is($rc2, 1, 'segment removed: exit 1');
	like($err2, qr/error: .*(has been removed|no log segment holds position $r->{installed}|is missing)/,
		'segment removed: the missing log named');
}

# ---------------------------------------------------------------------------
# A clean shutdown: it writes a final checkpoint, and nothing may follow
# the end of the log.

$node->start;
wait_for_tables_open($node);
$node->safe_psql('postgres', "UPDATE t SET v = 'clean $_' WHERE id = $_") for 1 .. 10;
$node->stop('fast');

($rc, $out, $err) = verify_files($node->data_dir);
is($rc, 0, 'clean shutdown: exit 0');
unlike($err, qr/warning|error/, 'clean shutdown: no warning, no error');
my $c = parse_report($out);
ok($c->{installed} > $c->{previous}, 'clean shutdown: a new checkpoint after the restart\'s commits');

# Damage between the two checkpoints: the installed one is fine, but
# falling back to the previous one would lose commits.
{
	my $dir = fresh_copy();
	my ($seg, $off) = log_place($dir, $c->{previous});
	overwrite($seg, $off + 8, "\xFF");
	my ($rc2, $out2, $err2) = verify_files($dir);
	is($rc2, 1, 'record damaged between the checkpoints: exit 1');
	like($err2, qr/error: log: damaged at position $c->{previous}, before position $c->{installed}/,
		'record damaged between the checkpoints: position and consequence named');
}

# Bytes past the end after a clean shutdown are damage.
{
	my $dir = fresh_copy();
	my ($seg, $off) = log_place($dir, $c->{end});
	overwrite($seg, $off, "\xAB" x 64);
	my ($rc2, $out2, $err2) = verify_files($dir);
	is($rc2, 1, 'bytes past the end after a clean shutdown: exit 1');
	like($err2, qr/the server shut down cleanly: the last record is damaged/,
		'bytes past the end after a clean shutdown: reported as damage');
}

# Not a data directory of this kind.
($rc, $out, $err) = verify_files($copy);
is($rc, 2, 'no pg_fastckpt directory: exit 2');
like($err, qr/could not use ".*pg_fastckpt"/, 'no pg_fastckpt directory: said so');

$node->start;
wait_for_tables_open($node);
is($node->safe_psql('postgres', "SELECT count(*), sum(length(v)) > 0 FROM t"), '5000|t',
	'the original data directory still opens with every row');

# A table truncated while a checkpoint writes it (after its first chunk,
# before its second) is left out of that checkpoint, and so are the bytes
# of the chunk already written from the manifest's totals.  It is the only
# fastckpt table, so its first chunk is the one the pause follows.
$node->safe_psql('postgres', q{
	DROP TABLE t;
	CREATE TABLE big (id int PRIMARY KEY, v text) USING fastckpt;
	INSERT INTO big SELECT g, repeat('x', 20) FROM generate_series(1, 70000) g;
	SELECT fastckpt_checkpoint(true);
	UPDATE big SET v = 'y' WHERE id % 1000 = 0;
	ALTER SYSTEM SET pg_fastckpt.test_checkpoint_pause = 'chunk';
	ALTER SYSTEM SET pg_fastckpt.test_checkpoint_pause_ms = 3000;
	SELECT pg_reload_conf();
});
my $hits = $node->safe_psql('postgres', 'SELECT test_pause_hits[2] FROM fastckpt_stat_checkpointer');
usleep(500_000);    # the checkpointer reads the settings within 100 ms
$node->safe_psql('postgres', 'SELECT fastckpt_checkpoint(false)');
$node->poll_query_until('postgres',
	"SELECT test_pause_hits[2] > $hits FROM fastckpt_stat_checkpointer")
  or die 'the checkpoint did not pause after its first chunk';
$node->safe_psql('postgres', 'TRUNCATE big');
$node->poll_query_until('postgres', q{SELECT NOT in_progress FROM fastckpt_stat_checkpointer})
  or die 'the checkpoint did not finish';
$node->safe_psql('postgres', q{
	ALTER SYSTEM RESET pg_fastckpt.test_checkpoint_pause;
	ALTER SYSTEM RESET pg_fastckpt.test_checkpoint_pause_ms;
	SELECT pg_reload_conf();
});
$node->stop('immediate');
($rc, $out, $err) = verify_files($node->data_dir);
is($rc, 0, 'tables truncated during a checkpoint: exit 0');
like($out, qr/^checkpoint \d+ \(installed\): CSN \d+, log from \d+, 0 tables$/m,
	'the table truncated while the checkpoint wrote it is left out');
unlike($err, qr/does not use these totals/, 'and the manifest\'s totals are those of the tables it holds');

# A prepared transaction's file, with a row it changed and one it locked: listed; damaged, it is a problem (recovery
# would keep the tables closed); a file a PREPARE left half written, which
# recovery removes, only a warning.
$node->start;
wait_for_tables_open($node);
$node->safe_psql('postgres', q{
	CREATE TABLE p (id int PRIMARY KEY, v text) USING fastckpt;
	INSERT INTO p VALUES (1, 'one'), (2, 'two'), (4, 'four');
	BEGIN;
	SELECT v FROM p WHERE id = 4 FOR SHARE;
	INSERT INTO p VALUES (3, 'three');
	UPDATE p SET v = 'uno' WHERE id = 1;
	DELETE FROM p WHERE id = 2;
	PREPARE TRANSACTION 'in doubt';
});
$node->stop('immediate');
($rc, $out, $err) = verify_files($node->data_dir);
is($rc, 0, 'a prepared transaction\'s file: exit 0');
like($out, qr/^1 prepared transaction with fastckpt rows: 3 changed rows and 1 locked rows in all$/m,
	'the prepared transaction\'s file is checked and counted');
my ($vout, $verr) = ('', '');
IPC::Run::run([ 'pg_fastckpt_verify', '-v', '-D', $node->data_dir ], '>', \$vout, '2>', \$verr);
like($vout, qr/^  prepared transaction \d+ \("in doubt"\) of database \d+: 3 changed rows, 1 locked rows$/m,
	'... and listed with -v');
{
	my $dir = fresh_copy();
	my @files = glob("$dir/pg_fastckpt/prepared/*");
	is(scalar(@files), 1, 'one prepared transaction file');
	overwrite($files[0], (-s $files[0]) - 4, "\x01\x02\x03\x04");
	write_file("$dir/pg_fastckpt/prepared/half_written", 'x');
	my ($rc2, $out2, $err2) = verify_files($dir);
	is($rc2, 1, 'damaged prepared transaction file: exit 1');
	like($err2, qr/error: file ".*prepared\/[0-9A-F]{16}" of a prepared transaction is damaged: .*recovery would keep the tables closed/,
		'damaged prepared transaction file: reported as damage');
	like($err2, qr/warning: file ".*half_written" is not a prepared transaction's/,
		'a file that is not a prepared transaction\'s: a warning');
}
$node->start;
wait_for_tables_open($node);
$node->safe_psql('postgres', "COMMIT PREPARED 'in doubt'");
is($node->safe_psql('postgres', "SELECT string_agg(id || v, ',' ORDER BY id) FROM p"), '1uno,3three,4four',
	'the original data directory still commits the prepared transaction');

done_testing();
