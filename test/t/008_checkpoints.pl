# Checkpoints (DESIGN.md section 7): what a Wait-Free Ping-Pong checkpoint
# holds comes back after a crash, with both the merge and the copy method;
# an unchanged chunk is linked, not rewritten; a damaged newest checkpoint
# falls back to the older one with a longer replay; with no usable
# checkpoint the tables stay closed with an explicit error while the server
# runs, and restoring the files brings everything back; the adaptive policy
# moves its threshold with the load; max_log_size bounds the log; a clean
# shutdown writes a final checkpoint; only superusers and pg_checkpoint
# members may ask for one.
#
# Every comparison is between real contents (an md5 of every row of every
# fastckpt table, in key order) before and after a restart, or between
# figures the server reports and what the files and the data say.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use File::Path qw(rmtree);
use Time::HiRes qw(time usleep);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use FastckptTest;

# Only the checkpoints a test asks for, unless a case sets a trigger.
my $quiet_conf = qq{
pg_fastckpt.checkpoint_timeout = 0
pg_fastckpt.max_log_size = 0
};

# ---------------------------------------------------------------------------
# helpers

# Fingerprint of every fastckpt table of "postgres": name, row count and the
# md5 of all rows in key order (every table here has an "id" key).  A table
# that is missing or appears shows too.
sub fingerprint
{
	my ($node) = @_;
	my @tables = split /\n/, $node->safe_psql('postgres', q{
		SELECT c.relname FROM pg_class c JOIN pg_am a ON a.oid = c.relam
		 WHERE a.amname = 'fastckpt' AND c.relkind = 'r'
		   AND c.relnamespace = 'public'::regnamespace
		 ORDER BY c.relname});
	return '(no tables)' unless @tables;
	my $sql = join(" UNION ALL\n", map {
		qq{SELECT '$_=' || count(*) || ':' || md5(coalesce(string_agg(t::text, ',' ORDER BY t.id), '')) FROM "$_" t}
	} @tables);
	return join(' ', split /\n/, $node->safe_psql('postgres', $sql));
}

# Live rows of every fastckpt table (what a checkpoint holds).
sub total_rows
{
	my ($node) = @_;
	my @tables = split /\n/, $node->safe_psql('postgres', q{
		SELECT c.relname FROM pg_class c JOIN pg_am a ON a.oid = c.relam
		 WHERE a.amname = 'fastckpt' AND c.relkind = 'r' ORDER BY 1});
	return 0 unless @tables;
	return $node->safe_psql('postgres',
		'SELECT ' . join(' + ', map { qq{(SELECT count(*) FROM "$_")} } @tables));
}

# One row of a view as a hash (columns as named).
sub view_row
{
	my ($node, $view, @cols) = @_;
	my $out = $node->safe_psql('postgres',
		'SELECT ' . join(', ', map { "coalesce(${_}::text, '')" } @cols) . " FROM $view");
	my @vals = split /\|/, $out, -1;
	my %h;
	@h{@cols} = @vals;
	return \%h;
}

sub ckpt_stat
{
	my ($node) = @_;
	return view_row($node, 'fastckpt_stat_checkpointer',
		qw(checkpoints checkpoints_timed checkpoints_size checkpoints_requested checkpoints_shutdown
		  failures last_seq last_seconds last_rows last_dirty_rows last_bytes_written
		  last_bytes_reused last_deltas_written deltas_written log_segments_removed log_bytes_since_checkpoint
		  policy method threshold_bytes load
		  commit_rate last_error));
}

sub recovery_stat
{
	my ($node) = @_;
	return view_row($node, 'fastckpt_stat_recovery',
		qw(tables_open checkpoint_seq checkpoint_fallback load_workers load_rows load_deltas
		  load_bytes log_bytes rows_applied replay_workers databases workers
		  indexes error));
}

sub ckpt_dir { return $_[0]->data_dir . '/pg_fastckpt/ckpt'; }

sub seq_dir { return ckpt_dir($_[0]) . sprintf('/%016X', $_[1]); }

# The control file: the installed checkpoint's number, then the older one's
# (struct fc_ckpt_control: magic, crc, version, nrefs, then 40-byte refs
# starting with their sequence number; machine byte order).
sub read_control
{
	my ($node) = @_;
	my $raw = slurp_file(ckpt_dir($node) . '/control');
	my ($magic, $crc, $version, $nrefs) = unpack('L4', $raw);
	die sprintf('bad control file magic %08X', $magic) unless $magic == 0x43434346;
	return map { unpack('Q', substr($raw, 16 + 40 * $_, 8)) } 0 .. $nrefs - 1;
}

# Chunk files of one checkpoint, whole files and deltas ("<chunk>.d<k>"):
# name => [size, links, inode].
sub chunk_files
{
	my ($node, $seq) = @_;
	my $dir = seq_dir($node, $seq);
	opendir(my $dh, $dir) or die "could not open $dir: $!";
	my %files;
	for my $f (grep { /^\d+_\d+_\d+_\d+(\.d\d+)?\z/ } readdir($dh))
	{
		my @st = stat("$dir/$f");
		$files{$f} = [ $st[7], $st[3], $st[1] ];
	}
	closedir($dh);
	return \%files;
}

# The whole chunk files of table $rel (dboid_spcoid_relfilenode_chunkno),
# by chunk; with $all, every file of the table (deltas too), by name.
sub table_chunks
{
	my ($node, $seq, $rel, $all) = @_;
	my ($db, $node_) = split /\|/, $node->safe_psql('postgres',
		qq{SELECT (SELECT oid FROM pg_database WHERE datname = 'postgres'),
				  pg_relation_filenode('$rel')});
	my $files = chunk_files($node, $seq);
	my %by_chunk;
	for my $f (keys %$files)
	{
		if ($all)
		{
			$by_chunk{$f} = $f if $f =~ /^${db}_\d+_${node_}_\d+(\.d\d+)?\z/;
		}
		else
		{
			$by_chunk{$1} = $f if $f =~ /^${db}_\d+_${node_}_(\d+)\z/;
		}
	}
	return \%by_chunk;
}

# Damage a file: flip every bit of the byte in its middle.  By default the
# file is written anew and renamed over the old name, so another
# checkpoint's hard link to the same chunk keeps the intact bytes; with
# in_place every hard link to it sees the damage (a bad block on disk).
sub corrupt_file
{
	my ($path, %opt) = @_;
	my $data = slurp_file($path);
	my $pos = int(length($data) / 2);
	die "$path is empty" unless length($data) > 0;
	my $byte = chr(ord(substr($data, $pos, 1)) ^ 0xFF);
	if ($opt{in_place})
	{
		open(my $fh, '+<', $path) or die "could not open $path: $!";
		binmode $fh;
		sysseek($fh, $pos, 0) or die "could not seek in $path: $!";
		syswrite($fh, $byte) == 1 or die "could not write $path: $!";
		close $fh or die "could not close $path: $!";
		return $pos;
	}
	substr($data, $pos, 1) = $byte;
	open(my $fh, '>', "$path.damaged") or die "could not write $path.damaged: $!";
	binmode $fh;
	print $fh $data;
	close $fh or die "could not close $path.damaged: $!";
	rename("$path.damaged", $path) or die "could not rename over $path: $!";
	return $pos;
}

sub checkpoint
{
	my ($node) = @_;
	$node->safe_psql('postgres', 'SELECT fastckpt_checkpoint()');
	return ckpt_stat($node)->{last_seq};
}

# Wait until startup recovery has either opened the tables or given up
# (then the tables stay closed for good: no point waiting the default 180 s
# of wait_for_tables_open); true if they are open.
sub tables_opened
{
	my ($node) = @_;
	$node->poll_query_until('postgres',
		'SELECT tables_open OR error IS NOT NULL FROM fastckpt_stat_recovery')
	  or die 'fastckpt startup recovery neither finished nor failed';
	return $node->safe_psql('postgres', 'SELECT tables_open FROM fastckpt_stat_recovery') eq 't';
}

# Start and wait for recovery; a failed test (with the reason) if the
# tables stay closed.
sub start_and_open
{
	my ($node, $label) = @_;
	$node->start;
	return ok(tables_opened($node), "$label: startup recovery opened the tables")
	  || diag('fastckpt_stat_recovery.error: ' . recovery_stat($node)->{error});
}

sub crash_and_start
{
	my ($node, $label) = @_;
	ok(crash_postmaster($node), "$label: every process detached from shared memory after kill -9");
	return start_and_open($node, $label);
}

sub log_segments
{
	my ($node) = @_;
	my $dir = $node->data_dir . '/pg_fastckpt/log';
	opendir(my $dh, $dir) or return 0;
	my $n = grep { /^[0-9A-F]{16}\z/ } readdir($dh);
	closedir($dh);
	return $n;
}

sub set_conf
{
	my ($node, $conf) = @_;
	$node->append_conf('postgresql.conf', $conf);
	$node->reload;
	return;
}

# Poll $fn until it returns true or $secs pass; the last value it returned.
sub wait_until
{
	my ($secs, $fn) = @_;
	my $deadline = time() + $secs;
	my $v;
	while (1)
	{
		$v = $fn->();
		return $v if $v || time() >= $deadline;
		usleep(200_000);
	}
}

sub start_pgbench
{
	my ($node, @args) = @_;
	my %run = (out => '', err => '');
	$run{h} = IPC::Run::start(
		[ 'pgbench', '-n', @args, '-h', $node->host, '-p', $node->port, 'postgres' ],
		'>', \$run{out}, '2>', \$run{err});
	return \%run;
}

sub finish_pgbench
{
	my ($run, $label) = @_;
	$run->{h}->finish;
	my ($n) = $run->{out} =~ /number of transactions actually processed: (\d+)/;
	my ($tps) = $run->{out} =~ /tps = ([\d.]+)/;
	ok(defined $n && $n > 0 && $run->{err} !~ /ERROR|FATAL/,
		"$label: pgbench ran without errors") or diag($run->{out} . $run->{err});
	return $tps // 0;
}

# ---------------------------------------------------------------------------
# 1. merge and copy: checkpoints between batches of every kind of change,
#    then kill -9 and a clean restart

for my $method (qw(merge copy))
{
	subtest "checkpoint_method = $method: crash and clean restart" => sub {
		my $node = fastckpt_node("ckpt_$method", $quiet_conf . qq{
pg_fastckpt.checkpoint_method = '$method'
pg_fastckpt.recovery_workers = 3
pg_fastckpt.min_parallel_replay_size = 0
# a parallel B-tree build for any table, and a trace of its workers' sorts;
# with wal_level = replica its workers' index lock is WAL-logged
wal_level = replica
min_parallel_table_scan_size = 0
maintenance_work_mem = '128MB'
trace_sort = on
});
		is(ckpt_stat($node)->{method}, $method, "method is $method");

		# batch 1: a table of two chunks (70000 slots > 65536), small ones
		$node->safe_psql('postgres', q{
CREATE TABLE big (id int PRIMARY KEY, v text, n int) USING fastckpt;
CREATE INDEX big_n ON big (n);
CREATE TABLE small (id int PRIMARY KEY, v text) USING fastckpt;
CREATE TABLE trunc (id int PRIMARY KEY, x int) USING fastckpt;
CREATE TABLE gone (id int PRIMARY KEY) USING fastckpt;
CREATE TABLE heap_t (id int PRIMARY KEY, x int);
INSERT INTO big SELECT g, md5(g::text), g % 100 FROM generate_series(1, 70000) g;
INSERT INTO small SELECT g, 's' || g FROM generate_series(1, 100) g;
INSERT INTO trunc SELECT g, g FROM generate_series(1, 500) g;
INSERT INTO gone SELECT generate_series(1, 50);
INSERT INTO heap_t SELECT g, g FROM generate_series(1, 10) g;
});
		my $seq1 = checkpoint($node);
		my $big_chunks = table_chunks($node, $seq1, 'big');
		is(join(',', sort keys %$big_chunks), '0,1',
			'the 70000-row table is checkpointed as two chunk files');

		# batch 2: updates across both chunks, a growing update, deletes,
		# inserts, TRUNCATE, DROP, and rolled-back work
		$node->safe_psql('postgres', q{
UPDATE big SET n = n + 1000 WHERE id % 7 = 0;
UPDATE big SET v = v || repeat('x', 40) WHERE id % 501 = 0;
DELETE FROM big WHERE id % 11 = 0;
INSERT INTO big SELECT g, 'new' || g, 1 FROM generate_series(70001, 70500) g;
TRUNCATE trunc;
INSERT INTO trunc SELECT g, -g FROM generate_series(1, 30) g;
DROP TABLE gone;
UPDATE small SET v = v || '!' WHERE id <= 10;
BEGIN; DELETE FROM big WHERE id < 1000; ROLLBACK;
});
		my $seq2 = checkpoint($node);
		is($seq2, $seq1 + 1, 'the second checkpoint has the next number');

		# batch 3: only the small table changes; the big table's chunks are
		# the last checkpoint's files, linked
		$node->safe_psql('postgres', q{UPDATE small SET v = v || '?' WHERE id > 90});
		my $rows_at_seq3 = total_rows($node);
		my $seq3 = checkpoint($node);
		is(join(',', read_control($node)), "$seq3,$seq2", 'the control file names the last two checkpoints');
		ok(-d seq_dir($node, $seq2) && -d seq_dir($node, $seq3) && !-e seq_dir($node, $seq1),
			'only their directories are kept');
		my $st = ckpt_stat($node);
		ok($st->{last_bytes_reused} > 0,
			"only a small table changed: bytes reused ($st->{last_bytes_reused}) > 0");
		ok($st->{last_bytes_written} > 0 && $st->{last_bytes_written} < $st->{last_bytes_reused},
			"only the small table's chunk was written ($st->{last_bytes_written} bytes)");
		is($st->{last_rows}, $rows_at_seq3, 'the checkpoint holds every live row');
		my $old = chunk_files($node, $seq2);
		my $new = chunk_files($node, $seq3);
		my $big3 = table_chunks($node, $seq3, 'big', 1);
		my $small3 = table_chunks($node, $seq3, 'small', 1);
		my %old_inodes = map { $_->[2] => 1 } values %$old;
		ok(keys %$big3 >= 2 && !grep({ !$old_inodes{ $new->{$_}[2] } } keys %$big3),
			'every file of the unchanged big table is a hard link to the previous checkpoint\'s');
		is(scalar(grep { !$old_inodes{ $new->{$_}[2] } } keys %$small3), 1,
			'the changed small table\'s chunk has one new file (written whole, or a delta)');
		my $big_bytes = 0;
		$big_bytes += $new->{$_}[0] for keys %$big3;
		is($node->safe_psql('postgres',
				q{SELECT last_checkpoint_bytes FROM fastckpt_stat_tables WHERE relation = 'big'::regclass}),
			$big_bytes, 'fastckpt_stat_tables.last_checkpoint_bytes is the size of the table\'s files');

		# batch 4, only in the log: a table created after the checkpoint,
		# and more changes of every kind
		$node->safe_psql('postgres', q{
CREATE TABLE late (id int PRIMARY KEY, v text) USING fastckpt;
INSERT INTO late SELECT g, 'late' || g FROM generate_series(1, 2000) g;
DELETE FROM late WHERE id % 3 = 0;
UPDATE big SET v = 'after ' || id WHERE id BETWEEN 65000 AND 67000;
DELETE FROM big WHERE id % 13 = 0;
TRUNCATE trunc;
INSERT INTO trunc SELECT g, g * 2 FROM generate_series(1, 40) g;
CREATE TABLE brief (id int PRIMARY KEY) USING fastckpt;
INSERT INTO brief VALUES (1);
DROP TABLE brief;
});
		my $expected = fingerprint($node);
		my $before = ckpt_stat($node);
		is($before->{last_seq}, $seq3, 'no checkpoint ran behind the test\'s back');

		my $log_offset = -s $node->logfile;
		crash_and_start($node, 'kill -9') or return;
		is(fingerprint($node), $expected, 'after kill -9: every table is as before the crash');
		ok($node->log_contains(qr/performsort of worker \d+ starting/, $log_offset),
			'startup recovery rebuilt an index with parallel workers (they passed the closed gate)');
		ok(!$node->log_contains(qr/stopped before they finished|ERROR/, $log_offset),
			'no recovery worker failed');
		my $rec = recovery_stat($node);
		is($rec->{checkpoint_seq}, $seq3, 'recovery loaded the last checkpoint');
		is($rec->{checkpoint_fallback}, 'false', 'no fallback');
		is($rec->{load_rows}, $before->{last_rows}, 'it loaded as many rows as the checkpoint wrote');
		is($rec->{load_workers}, 3, 'recovery_workers loaders took part');
		ok($rec->{rows_applied} > 0, 'the log after the checkpoint was replayed');
		is($rec->{replay_workers}, 3, 'recovery_workers processes replayed the log\'s rows');
		is($rec->{workers}, 3 * $rec->{databases},
			'recovery_workers workers rebuilt the indexes of each database');
		# big: pkey and big_n; small, trunc, late: pkey
		is($rec->{indexes}, 5, 'every index was rebuilt once');
		ok($node->log_contains("pg_fastckpt: loading checkpoint $seq3 "), 'the server log names the loaded checkpoint');
		is($node->safe_psql('postgres', q{SET enable_seqscan = off; SELECT count(*) FROM big WHERE n >= 1000}),
			$node->safe_psql('postgres', q{SET enable_indexscan = off; SET enable_bitmapscan = off;
				SELECT count(*) FROM big WHERE n >= 1000}),
			'the rebuilt index agrees with the loaded rows');

		# Second round, in the recovered server: the first checkpoint after
		# a restart (its base is on disk only), then one more in the same run
		$node->safe_psql('postgres', q{
UPDATE big SET n = -n WHERE id > 66000;
INSERT INTO late SELECT g, 'more' || g FROM generate_series(3000, 3100) g;
});
		my $seq4 = checkpoint($node);
		$node->safe_psql('postgres', q{
UPDATE big SET v = 'r2 ' || id WHERE id % 1000 = 1;
DELETE FROM small WHERE id BETWEEN 20 AND 30;
UPDATE late SET v = upper(v) WHERE id < 100;
});
		my $seq5 = checkpoint($node);
		is($seq5, $seq4 + 1, 'two more checkpoints after recovery');
		$node->safe_psql('postgres', q{INSERT INTO small VALUES (1000, 'after the last checkpoint')});
		$expected = fingerprint($node);
		my $rows5 = ckpt_stat($node)->{last_rows};
		crash_and_start($node, 'second kill -9') or return;
		is(fingerprint($node), $expected, 'second kill -9: every table is as before the crash');
		$rec = recovery_stat($node);
		is($rec->{checkpoint_seq}, $seq5, 'recovery loaded the newest checkpoint');
		is($rec->{load_rows}, $rows5, 'with all of its rows');

		# clean restart: a shutdown checkpoint, then the same contents
		$node->safe_psql('postgres', q{UPDATE trunc SET x = x + 1});
		$expected = fingerprint($node);
		$node->stop;
		start_and_open($node, 'clean restart') or return;
		is(fingerprint($node), $expected, 'after a clean restart: the same contents');
		is(recovery_stat($node)->{checkpoint_seq}, $seq5 + 1,
			'the clean restart loaded the shutdown checkpoint');
		is($node->safe_psql('postgres', 'SELECT sum(x) FROM heap_t'), '55', 'the heap table is intact');

		# Rows changed in one checkpoint phase and again in the next, at
		# staggered checkpoints, then left alone while more checkpoints run
		# with nothing to do: every checkpoint must keep each row's latest
		# value, whichever shadow image and writer pass last saw it.
		for my $id (1 .. 4)
		{
			$node->safe_psql('postgres', qq{UPDATE small SET v = 'first' WHERE id = $id});
			checkpoint($node);
			$node->safe_psql('postgres', qq{UPDATE small SET v = 'second' WHERE id = $id});
		}
		my $seq_q = checkpoint($node);
		checkpoint($node) for 1 .. 2;
		$st = ckpt_stat($node);
		is($st->{last_seq}, $seq_q + 2, 'two more checkpoints with nothing changed');
		is($st->{last_dirty_rows}, 0, 'the last one found no changed row');
		$expected = fingerprint($node);
		crash_and_start($node, 'kill -9 after quiet checkpoints') or return;
		is($node->safe_psql('postgres', 'SELECT string_agg(v, \',\' ORDER BY id) FROM small WHERE id <= 4'),
			'second,second,second,second', 'each of those rows has its latest committed value');
		is(fingerprint($node), $expected, 'every table is as before the crash');

		ok(!$node->log_contains('TRAP:|terminated by signal 11|PANIC|checkpoint failed|cannot be used'),
			'no assertion failure, crash, PANIC or checkpoint failure in the log');
		$node->stop;
	};
}

# ---------------------------------------------------------------------------
# 2. a damaged chunk of the newest checkpoint: fall back to the older one

subtest 'damaged newest checkpoint falls back to the older one' => sub {
	my $node = fastckpt_node('fallback', $quiet_conf);
	$node->safe_psql('postgres', q{
CREATE TABLE big (id int PRIMARY KEY, v text, n int) USING fastckpt;
CREATE TABLE small (id int PRIMARY KEY, v text) USING fastckpt;
INSERT INTO big SELECT g, md5(g::text), 0 FROM generate_series(1, 70000) g;
INSERT INTO small SELECT g, 'a' || g FROM generate_series(1, 100) g;
});
	my $seq_a = checkpoint($node);
	$node->safe_psql('postgres', q{
UPDATE big SET n = 1 WHERE id % 3 = 0;
DELETE FROM big WHERE id % 17 = 0;
INSERT INTO small SELECT g, 'b' || g FROM generate_series(101, 200) g;
CREATE TABLE after_a (id int PRIMARY KEY, v text) USING fastckpt;
INSERT INTO after_a SELECT g, 'x' || g FROM generate_series(1, 300) g;
});
	my $seq_b = checkpoint($node);
	$node->safe_psql('postgres', q{
UPDATE big SET n = 2 WHERE id % 5 = 0;
INSERT INTO big SELECT g, 'c' || g, 3 FROM generate_series(70001, 70100) g;
DELETE FROM small WHERE id < 50;
UPDATE after_a SET v = 'y' || id WHERE id > 250;
});
	my $expected = fingerprint($node);
	ok(crash_postmaster($node), 'postmaster killed');

	is(join(',', read_control($node)), "$seq_b,$seq_a",
		'the control file names checkpoint B, then A');
	# a chunk B wrote itself (not a link to one of A's files)
	my $files = chunk_files($node, $seq_b);
	my ($victim) = sort { $files->{$b}[0] <=> $files->{$a}[0] }
	  grep { $files->{$_}[1] == 1 } keys %$files;
	ok(defined $victim, 'B has a chunk file of its own (written, not linked)')
	  or return;
	my $pos = corrupt_file(seq_dir($node, $seq_b) . "/$victim");
	note("damaged byte $pos of checkpoint $seq_b chunk $victim");
	my ($vrc, $vout, $verr) = verify_files($node->data_dir);
	is($vrc, 1, 'pg_fastckpt_verify finds the damage too');
	like($verr, qr/error: checkpoint $seq_b: "[^"]*\Q$victim\E": /, '... in the same chunk');
	like($vout, qr/recovery would fall back to checkpoint $seq_a/, '... and foresees the fallback to A');

	my $offset = -s $node->logfile;
	start_and_open($node, 'start with damaged B') or return;
	ok($node->log_contains(
			qr/WARNING:  pg_fastckpt: checkpoint $seq_b cannot be used: chunk "[^"]*\Q$victim\E"/, $offset),
		'WARNING: the damaged checkpoint cannot be used, naming the chunk');
	ok($node->log_contains(qr/pg_fastckpt: loading checkpoint $seq_a /, $offset),
		'then the older checkpoint is loaded');
	my $rec = recovery_stat($node);
	is($rec->{checkpoint_fallback}, 'true', 'checkpoint_fallback is set');
	is($rec->{checkpoint_seq}, $seq_a, 'checkpoint_seq is the older checkpoint A');
	is($rec->{tables_open}, 'true', 'tables are open');
	is(fingerprint($node), $expected,
		'the longer replay from A gives back every table as before the crash');

	# The server goes on: new writes, a new checkpoint, a crash.
	$node->safe_psql('postgres', q{
UPDATE big SET v = 'after fallback' WHERE id % 100 = 0;
INSERT INTO small VALUES (500, 'after fallback');
});
	# (bounded: a waiter that is never answered would hang the test)
	my ($ret, $out, $err) = $node->psql('postgres',
		"SET statement_timeout = '15s'; SELECT fastckpt_checkpoint()");
	unlike($err, qr/statement timeout/,
		'fastckpt_checkpoint() after the fallback returns instead of waiting forever');
	is($ret, 0, 'a checkpoint after the fallback succeeds')
	  or diag($err . 'fastckpt_stat_checkpointer: ' . explain(ckpt_stat($node)));
	my $st = ckpt_stat($node);
	$expected = fingerprint($node);
	crash_and_start($node, 'crash after the fallback') or return;
	is(fingerprint($node), $expected, 'after the fallback and another crash: same contents');
	$rec = recovery_stat($node);
	is($rec->{checkpoint_fallback}, 'false', 'the next start needs no fallback');
	is($rec->{checkpoint_seq}, $st->{last_seq}, 'it loads the checkpoint taken after the fallback');
	ok(!$node->log_contains('TRAP:|terminated by signal 11|PANIC'), 'no crash or PANIC in the log');
	$node->stop;
};

# ---------------------------------------------------------------------------
# 3. no usable checkpoint: tables stay closed, explicitly; restoring the
#    files brings them back

subtest 'no usable checkpoint: tables closed, then restored' => sub {
	my $node = fastckpt_node('nockpt', $quiet_conf);
	$node->safe_psql('postgres', q{
CREATE TABLE big (id int PRIMARY KEY, v text) USING fastckpt;
CREATE TABLE small (id int PRIMARY KEY, v text) USING fastckpt;
CREATE TABLE heap_t (id int PRIMARY KEY, x int);
INSERT INTO big SELECT g, md5(g::text) FROM generate_series(1, 70000) g;
INSERT INTO small SELECT g, 's' || g FROM generate_series(1, 10) g;
INSERT INTO heap_t SELECT g, g FROM generate_series(1, 100) g;
});
	my $seq_a = checkpoint($node);
	$node->safe_psql('postgres', q{
UPDATE big SET v = 'b' || id WHERE id % 2 = 0;
INSERT INTO small SELECT g, 't' || g FROM generate_series(11, 20) g;
});
	my $seq_b = checkpoint($node);
	$node->safe_psql('postgres', q{DELETE FROM big WHERE id % 9 = 0; UPDATE small SET v = 'c'});
	my $expected = fingerprint($node);
	ok(crash_postmaster($node), 'postmaster killed');

	my $dir = ckpt_dir($node);
	my $backup = $node->basedir . '/ckpt_backup';
	rmtree($backup);
	system('cp', '-a', $dir, $backup) == 0 or die "could not copy $dir: $?";
	is(join(',', read_control($node)), "$seq_b,$seq_a", 'the control file names B, then A');

	# B: a chunk it wrote; A: its manifest
	my $files = chunk_files($node, $seq_b);
	my ($victim) = sort { $files->{$b}[0] <=> $files->{$a}[0] }
	  grep { $files->{$_}[1] == 1 } keys %$files;
	ok(defined $victim, 'B has a chunk file of its own') or return;
	corrupt_file(seq_dir($node, $seq_b) . "/$victim");
	corrupt_file(seq_dir($node, $seq_a) . '/manifest');
	my $control_before = slurp_file("$dir/control");
	my ($vrc, $vout, $verr) = verify_files($node->data_dir);
	is($vrc, 1, 'pg_fastckpt_verify finds both checkpoints damaged');
	like($vout, qr/none usable: recovery would refuse to open the tables/,
		'... and foresees the tables staying closed');

	my $offset = -s $node->logfile;
	$node->start;
	$node->poll_query_until('postgres',
		q{SELECT error IS NOT NULL FROM fastckpt_stat_recovery})
	  or die 'recovery did not report its failure';
	my $rec = recovery_stat($node);
	is($rec->{tables_open}, 'false', 'the tables stay closed');
	like($rec->{error}, qr/no usable checkpoint/, 'fastckpt_stat_recovery.error says no checkpoint is usable');
	like($rec->{error}, qr/checkpoint $seq_b: chunk .*\Q$victim\E/, '... naming the damaged chunk of B');
	like($rec->{error}, qr/checkpoint $seq_a: manifest/, '... and the damaged manifest of A');
	my ($ret, $out, $err) = $node->psql('postgres', 'SELECT count(*) FROM small');
	isnt($ret, 0, 'a query on a fastckpt table fails');
	like($err,
		qr/ERROR:  fastckpt table "small" is not available: startup recovery could not restore the fastckpt tables/,
		'with the explicit error');
	like($err, qr/DETAIL:  no usable checkpoint/, 'whose detail gives the reason');
	($ret, $out, $err) = $node->psql('postgres', 'SELECT count(*) FROM big');
	isnt($ret, 0, 'the big table is closed too');
	is($node->safe_psql('postgres', 'SELECT sum(x) FROM heap_t'), '5050',
		'the server is up and heap tables work');
	($ret, $out, $err) = $node->psql('postgres', 'SELECT fastckpt_checkpoint()',
		timeout => 30);
	like($err, qr/ERROR:  no fastckpt checkpoint can be taken: startup recovery could not restore/,
		'fastckpt_checkpoint() fails at once with the reason instead of waiting for a writer that never starts');
	ok($node->log_contains(qr/WARNING:  pg_fastckpt: checkpoint $seq_b cannot be used/, $offset)
		  && $node->log_contains(qr/WARNING:  pg_fastckpt: checkpoint $seq_a cannot be used/, $offset)
		  && $node->log_contains(qr/pg_fastckpt: startup recovery failed; fastckpt tables stay closed/, $offset),
		'the server log explains both checkpoints and the failure');

	# the way out the server log's HINT gives (restore, or move pg_fastckpt/ aside) needs
	# a restart: a fast shutdown must work with the tables closed
	my $stopped;
	{
		local $ENV{PGCTLTIMEOUT} = 20;
		$stopped = $node->stop('fast', fail_ok => 1);
	}
	ok($stopped, 'a fast shutdown completes while the tables are closed');
	$node->stop('immediate') unless $stopped;
	is(slurp_file("$dir/control"), $control_before,
		'stopping with closed tables left the control file as it was');
	ok(-d seq_dir($node, $seq_a) && -d seq_dir($node, $seq_b), 'and both checkpoints');

	# a damaged control file: nobody can tell which checkpoint the log
	# continues, so the tables stay closed too, saying so
	rmtree($dir);
	system('cp', '-a', $backup, $dir) == 0 or die "could not restore $dir: $?";
	corrupt_file("$dir/control");
	($vrc, $vout, $verr) = verify_files($node->data_dir);
	is($vrc, 1, 'damaged control file: pg_fastckpt_verify finds it');
	like($verr, qr/control file ".*": control file CRC mismatch; the server will not open fastckpt tables/,
		'... with the same reason');
	$node->start;
	ok(!tables_opened($node), 'damaged control file: the tables stay closed');
	($ret, $out, $err) = $node->psql('postgres', 'SELECT count(*) FROM small');
	like($err, qr/DETAIL:  the checkpoint control file cannot be used: control file CRC mismatch/,
		'with the reason in the error');
	$node->stop('immediate');

	rmtree($dir);
	system('cp', '-a', $backup, $dir) == 0 or die "could not restore $dir: $?";
	$offset = -s $node->logfile;
	start_and_open($node, 'restored files') or return;
	is(fingerprint($node), $expected, 'restored files: every table is back as before the crash');
	$rec = recovery_stat($node);
	is($rec->{checkpoint_seq}, $seq_b, 'from the newest checkpoint');
	is($rec->{checkpoint_fallback}, 'false', 'without a fallback');
	is($rec->{error}, '', 'and no error');
	ok(!$node->log_contains('cannot be used', $offset), 'no checkpoint rejected this time');
	$node->stop;
};

# ---------------------------------------------------------------------------
# 6. a clean shutdown writes a final checkpoint; the next start replays
#    (almost) nothing.  7. who may ask for a checkpoint.

subtest 'shutdown checkpoint' => sub {
	my $node = fastckpt_node('shutdown', $quiet_conf);
	$node->safe_psql('postgres', q{
CREATE TABLE t (id int PRIMARY KEY, v text, n int) USING fastckpt;
INSERT INTO t SELECT g, md5(g::text), 0 FROM generate_series(1, 20000) g;
});
	my $seq = checkpoint($node);
	$node->safe_psql('postgres', q{
UPDATE t SET n = n + 1, v = v || 'u';
DELETE FROM t WHERE id % 10 = 0;
CREATE TABLE t2 (id int PRIMARY KEY) USING fastckpt;
INSERT INTO t2 SELECT generate_series(1, 1000);
});
	my $since = ckpt_stat($node)->{log_bytes_since_checkpoint};
	ok($since > 65536, "the log since the checkpoint holds $since bytes");
	my $expected = fingerprint($node);

	my $offset = -s $node->logfile;
	$node->stop('fast');
	my $next = $seq + 1;
	ok($node->log_contains(qr/LOG:  pg_fastckpt: checkpoint $next at CSN \d+ written in /, $offset),
		"the clean shutdown wrote checkpoint $next");
	start_and_open($node, 'start after a clean stop') or return;
	my $rec = recovery_stat($node);
	is($rec->{checkpoint_seq}, $next, 'the start loaded the shutdown checkpoint');
	ok($rec->{log_bytes} < 65536, "and replayed almost no log ($rec->{log_bytes} bytes)");
	is(fingerprint($node), $expected, 'with the same contents');

	# nothing committed since: no further checkpoint at the next stop
	$offset = -s $node->logfile;
	$node->stop;
	start_and_open($node, 'restart with nothing new') or return;
	ok(!$node->log_contains(qr/pg_fastckpt: checkpoint \d+ at CSN/, $offset),
		'a shutdown with nothing new committed writes no checkpoint');
	is(recovery_stat($node)->{checkpoint_seq}, $next, 'and the same checkpoint is loaded again');
	is(fingerprint($node), $expected, 'with the same contents');

	# a fast stop right after recovery opened the tables: the checkpoint
	# worker, still waiting for them, must take the shutdown checkpoint
	# rather than exit (else every start replays that log again)
	$node->safe_psql('postgres', 'UPDATE t SET n = n + 1 WHERE id = 1');
	$expected = fingerprint($node);
	ok(crash_postmaster($node), 'postmaster killed after an update');
	$node->start;
	my $open = '';
	for (my $i = 0; $i < 3000 && $open ne 't'; $i++)
	{
		$open = $node->safe_psql('postgres',
			'SELECT tables_open FROM fastckpt_stat_recovery');
	}
	is($open, 't', 'startup recovery opened the tables');
	$offset = -s $node->logfile;
	$node->stop('fast');
	ok($node->log_contains(qr/pg_fastckpt: checkpoint \d+ at CSN \d+ written in /, $offset),
		'a fast stop as the tables opened wrote a checkpoint');
	start_and_open($node, 'start after that stop') or return;
	is(recovery_stat($node)->{log_bytes}, 0, 'which left no log to replay');
	is(fingerprint($node), $expected, 'with the same contents');

	subtest 'permissions' => sub {
		$node->safe_psql('postgres', q{
CREATE ROLE plain LOGIN;
CREATE ROLE ckpter LOGIN;
GRANT pg_checkpoint TO ckpter;
});
		my $before = ckpt_stat($node);
		my ($ret, $out, $err) = $node->psql('postgres', 'SELECT fastckpt_checkpoint()',
			extra_params => [ '-U', 'plain' ]);
		isnt($ret, 0, 'a plain role cannot call fastckpt_checkpoint()');
		like($err, qr/permission denied/, 'permission denied');
		($ret, $out, $err) = $node->psql('postgres', 'SELECT fastckpt_checkpoint(false)',
			extra_params => [ '-U', 'plain' ]);
		isnt($ret, 0, 'nor without waiting');
		is(ckpt_stat($node)->{checkpoints_requested}, $before->{checkpoints_requested},
			'no checkpoint was requested');
		($ret, $out, $err) = $node->psql('postgres', 'SELECT fastckpt_checkpoint()',
			extra_params => [ '-U', 'ckpter' ]);
		is($ret, 0, 'a member of pg_checkpoint can') or diag($err);
		my $after = ckpt_stat($node);
		is($after->{checkpoints_requested}, $before->{checkpoints_requested} + 1,
			'one checkpoint was requested');
		is($after->{last_seq}, $before->{last_seq} + 1, 'and written');
	};
	$node->stop;
};

# ---------------------------------------------------------------------------
# 4. the adaptive policy and 5. max_log_size, under pgbench

my $node = fastckpt_node('load', $quiet_conf . qq{
pg_fastckpt.memory_limit = '512MB'
log_statement = none
});
{
	local $ENV{PGOPTIONS} = '-c default_table_access_method=fastckpt';
	$node->command_ok([ 'pgbench', '-i', '-q', '-s', '1', '-h', $node->host, '-p', $node->port, 'postgres' ],
		'pgbench -i on fastckpt tables');
}
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_class c JOIN pg_am a ON a.oid = c.relam
	WHERE c.relname LIKE 'pgbench%' AND a.amname = 'fastckpt'}), '4', 'the pgbench tables are fastckpt tables');

subtest 'adaptive policy moves its threshold with the load' => sub {
	# how fast this machine commits, right now
	my $run = start_pgbench($node, '-c', '4', '-j', '2', '-T', '3');
	my $tps = finish_pgbench($run, 'measurement');
	my $peak = int($tps / 2) || 1;
	note("pgbench -c 4: $tps tps; adaptive_peak_rate = $peak");

	set_conf($node, qq{
pg_fastckpt.checkpoint_policy = 'adaptive'
pg_fastckpt.adaptive_window = 1
pg_fastckpt.adaptive_lower_bound = 1
pg_fastckpt.adaptive_upper_bound = 256
pg_fastckpt.adaptive_alpha = 0.5
pg_fastckpt.adaptive_peak_rate = $peak
});
	my $lb = 1024 * 1024;
	my $ub = 256 * 1024 * 1024;

	# idle: the lower bound
	wait_until(20, sub { ckpt_stat($node)->{threshold_bytes} == $lb });
	my $st = ckpt_stat($node);
	is($st->{policy}, 'adaptive', 'policy is adaptive');
	is($st->{threshold_bytes}, $lb, 'idle: the threshold is the lower bound (1 MB)');

	# the low threshold is in force: 1 commit of several MB of log
	# triggers a size checkpoint
	my $size_before = $st->{checkpoints_size};
	$node->safe_psql('postgres', q{UPDATE pgbench_accounts SET filler = md5(aid::text)});
	ok(wait_until(10, sub { ckpt_stat($node)->{checkpoints_size} > $size_before }),
		'idle, after a few MB of log: a size-triggered checkpoint');

	# busy: the threshold rises
	$run = start_pgbench($node, '-c', '4', '-j', '2', '-T', '10');
	my ($max_threshold, $max_load) = (0, 0);
	while ($run->{h}->pumpable)
	{
		$run->{h}->pump_nb;
		$st = ckpt_stat($node);
		$max_threshold = $st->{threshold_bytes} if $st->{threshold_bytes} > $max_threshold;
		$max_load = $st->{load} if $st->{load} > $max_load;
		usleep(250_000);
	}
	finish_pgbench($run, 'load');
	note("under load: highest threshold $max_threshold bytes, highest load $max_load");
	ok($max_threshold >= 64 * 1024 * 1024,
		"under load the threshold rises well above the lower bound ($max_threshold bytes)");
	ok($max_threshold <= $ub, 'and stays within the upper bound');
	ok($max_load > 0.2, "the load rose above the low watermark ($max_load)");

	# idle again: back down
	my $back = wait_until(20, sub { ckpt_stat($node)->{threshold_bytes} == $lb });
	ok($back, 'after the load stops the threshold falls back to the lower bound')
	  or diag(explain(ckpt_stat($node)));
};

subtest 'max_log_size bounds the log' => sub {
	set_conf($node, q{
pg_fastckpt.checkpoint_policy = 'fixed'
pg_fastckpt.checkpoint_timeout = 0
pg_fastckpt.max_log_size = 32
});
	my $limit = 32 * 1024 * 1024;
	ok(wait_until(10, sub { ckpt_stat($node)->{threshold_bytes} == $limit }),
		'fixed policy: the threshold is max_log_size');

	# 200 accounts per transaction, each client in its own range
	my $script = $node->basedir . '/heavy.sql';
	open(my $fh, '>', $script) or die "could not write $script: $!";
	print $fh "\\set a (:client_id * 24000) + random(1, 23700)\n"
	  . "UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid BETWEEN :a AND :a + 199;\n";
	close $fh;

	my $before = ckpt_stat($node);
	my $lsn_before = $node->safe_psql('postgres', 'SELECT insert_lsn FROM fastckpt_stat_log');
	# A steady ~9 MB/s of log (300 transactions of 200 rows a second) for
	# 25 s: over 200 MB, 13 segments' worth.  Bounded, the log holds what
	# lies after the older kept checkpoint's start: two max_log_size
	# intervals (64 MB, 4 segments), the log written while the newest
	# checkpoint was being written (under a second here, < 1 segment), and
	# a partly used segment at each end: at most 7 segment files.
	my $bound = 7;
	my $run = start_pgbench($node, '-c', '4', '-j', '2', '-T', '25', '-R', '300', '-f', $script);
	my $max_segs = 0;
	while ($run->{h}->pumpable)
	{
		$run->{h}->pump_nb;
		my $n = log_segments($node);
		$max_segs = $n if $n > $max_segs;
		usleep(200_000);
	}
	finish_pgbench($run, 'max_log_size = 32MB');
	my $after = ckpt_stat($node);
	my $logged = $node->safe_psql('postgres', 'SELECT insert_lsn FROM fastckpt_stat_log') - $lsn_before;
	note(sprintf('%.0f MB logged, %d size checkpoints, at most %d segments',
		$logged / 1048576, $after->{checkpoints_size} - $before->{checkpoints_size}, $max_segs));
	ok($logged > 12 * 16 * 1024 * 1024,
		sprintf('the run logged more than 12 segments\' worth (%.0f MB)', $logged / 1048576));
	ok($after->{checkpoints_size} > $before->{checkpoints_size}, 'size-triggered checkpoints ran');
	ok($max_segs <= $bound, "the log never held more than $bound segment files ($max_segs)");
	ok($after->{log_segments_removed} > $before->{log_segments_removed}, 'old segments were removed');
	is($after->{failures}, $before->{failures}, 'no checkpoint failed');

	# max_log_size = 0 (and no timer): no size-triggered checkpoint at all
	set_conf($node, q{pg_fastckpt.max_log_size = 0});
	ok(wait_until(10, sub { ckpt_stat($node)->{threshold_bytes} == 0 }), 'threshold off');
	$before = ckpt_stat($node);
	$run = start_pgbench($node, '-c', '4', '-j', '2', '-T', '5', '-R', '600', '-f', $script);
	finish_pgbench($run, 'max_log_size = 0');
	usleep(500_000);
	$after = ckpt_stat($node);
	ok($after->{log_bytes_since_checkpoint} > $limit,
		"more than 32 MB logged since the last checkpoint ($after->{log_bytes_since_checkpoint} bytes)");
	is($after->{checkpoints}, $before->{checkpoints}, 'and still no checkpoint');

	# what was written survives a crash
	my $sums = q{SELECT (SELECT sum(abalance) FROM pgbench_accounts) || '/' ||
		(SELECT md5(string_agg(aid || ':' || abalance || ':' || filler, ',' ORDER BY aid)) FROM pgbench_accounts)};
	my $expected = $node->safe_psql('postgres', $sums);
	crash_and_start($node, 'kill -9 after pgbench') or return;
	is($node->safe_psql('postgres', $sums), $expected, 'pgbench_accounts after kill -9: the same');
};

# ---------------------------------------------------------------------------
# 6b. max_replay_calls bounds the calls recovery runs again: their few bytes
#     of log would not reach any max_log_size worth having

subtest 'max_replay_calls bounds the calls recovery runs again' => sub {
	$node->safe_psql('postgres', q{
CREATE FUNCTION bump_teller(p_tid int, p_by int) RETURNS void
LANGUAGE sql AS $$ UPDATE pgbench_tellers SET tbalance = tbalance + p_by WHERE tid = p_tid $$;
ALTER FUNCTION bump_teller(int, int) SET enable_seqscan = off;
SELECT fastckpt_register_procedure('bump_teller(int,int)');
});
	set_conf($node, q{
pg_fastckpt.checkpoint_policy = 'fixed'
pg_fastckpt.checkpoint_timeout = 0
pg_fastckpt.max_log_size = 0
pg_fastckpt.max_replay_calls = 2000
});
	ok(wait_until(10, sub { ckpt_stat($node)->{threshold_bytes} == 0 }), 'size threshold off');
	checkpoint($node);
	my $calls_since = sub {
		$node->safe_psql('postgres', 'SELECT calls_since_checkpoint FROM fastckpt_stat_checkpointer');
	};
	my $calls_logged = sub {
		$node->safe_psql('postgres', 'SELECT call_records FROM fastckpt_stat_log');
	};
	is($calls_since->(), 0, 'no call since a checkpoint');

	my $script = $node->basedir . '/calls.sql';
	open(my $fh, '>', $script) or die "could not write $script: $!";
	print $fh "\\set t random(1, 10)\nSELECT bump_teller(:t, 1);\n";
	close $fh;

	# 10,000 calls against max_replay_calls = 2000: checkpoints keep the
	# calls a crash would replay near 2000
	my $before = ckpt_stat($node);
	my $logged_before = $calls_logged->();
	my $run = start_pgbench($node, '-c', '1', '-t', '10000', '-f', $script);
	my $max_since = 0;
	while ($run->{h}->pumpable)
	{
		$run->{h}->pump_nb;
		my $n = $calls_since->();
		$max_since = $n if $n > $max_since;
		usleep(50_000);
	}
	finish_pgbench($run, 'max_replay_calls = 2000');
	my $after = ckpt_stat($node);
	is($calls_logged->() - $logged_before, 10000, 'every call was logged as a CALL record');
	my $size_ckpts = $after->{checkpoints_size} - $before->{checkpoints_size};
	note("$size_ckpts checkpoints triggered by calls; at most $max_since calls since a checkpoint seen");
	ok($size_ckpts >= 3, "the calls triggered checkpoints ($size_ckpts), with no log size or timer set");
	# the trigger is checked every 100 ms, and calls go on while a
	# checkpoint runs: at a few thousand calls a second they pass the limit
	# by several hundred (10,000 without the trigger)
	ok($max_since < 6000, "the calls since a checkpoint stayed near the limit ($max_since)");

	# max_replay_calls = 0: calls trigger nothing (the checkpointer reads
	# the file within its 100 ms poll; nothing shows when it has)
	set_conf($node, q{pg_fastckpt.max_replay_calls = 0});
	usleep(1_000_000);

	# exactly the calls since the last checkpoint run again after a crash
	# (700 more, which no checkpoint takes now, so there are some)
	$run = start_pgbench($node, '-c', '1', '-t', '700', '-f', $script);
	finish_pgbench($run, '700 calls');
	my $pending = $calls_since->();
	ok($pending >= 700, "at least the last 700 calls are not checkpointed ($pending)");
	my $sum = q{SELECT sum(tbalance) || '/' || md5(string_agg(tid || ':' || tbalance, ',' ORDER BY tid)) FROM pgbench_tellers};
	my $expected = $node->safe_psql('postgres', $sum);
	crash_and_start($node, 'kill -9 after the calls') or return;
	is(view_row($node, 'fastckpt_stat_recovery', 'calls_replayed')->{calls_replayed}, $pending,
		"recovery ran again exactly the $pending calls logged since the last checkpoint");
	is($node->safe_psql('postgres', $sum), $expected, 'pgbench_tellers after recovery: the same');
	is($calls_since->(), $pending, 'after recovery, the calls it ran count as not yet checkpointed');

	$before = ckpt_stat($node);
	$run = start_pgbench($node, '-c', '1', '-t', '3000', '-f', $script);
	finish_pgbench($run, 'max_replay_calls = 0');
	usleep(500_000);
	$after = ckpt_stat($node);
	is($after->{checkpoints}, $before->{checkpoints}, 'max_replay_calls = 0: no checkpoint');
	is($calls_since->(), $pending + 3000, 'and the calls since the last checkpoint add up');
};

# ---------------------------------------------------------------------------
# 6a. a timed checkpoint spreads its writing over checkpoint_completion_target
#     of the interval; at 0 it writes at full speed

subtest 'checkpoint_completion_target paces timed checkpoints' => sub {
	my $n = fastckpt_node('pacing', q{
pg_fastckpt.max_log_size = 0
pg_fastckpt.checkpoint_timeout = 3
pg_fastckpt.checkpoint_completion_target = 0.9
});
	# four chunks: the writer is ahead of schedule after each of the first three
	$n->safe_psql('postgres', q{
CREATE TABLE p (id int PRIMARY KEY, v text) USING fastckpt;
INSERT INTO p SELECT g, md5(g::text) FROM generate_series(1, 250000) g;
});
	my $timed_checkpoint = sub {
		my $before = ckpt_stat($n)->{checkpoints_timed};
		$n->safe_psql('postgres', q{UPDATE p SET v = v || '.' WHERE id % 1000 = 0});
		wait_until(30, sub { ckpt_stat($n)->{checkpoints_timed} > $before })
		  or return undef;
		return $n->safe_psql('postgres', 'SELECT last_seconds FROM fastckpt_stat_checkpointer');
	};
	my $paced = $timed_checkpoint->();
	ok(defined $paced && $paced >= 1.5,
		sprintf('paced over 0.9 x 3 s: the timed checkpoint took %.2f s', $paced // -1));
	ok(defined $paced && $paced < 3.0, 'and finished within the interval');

	set_conf($n, q{pg_fastckpt.checkpoint_completion_target = 0});
	my $fast = $timed_checkpoint->();
	ok(defined $fast && $fast < 1.0,
		sprintf('checkpoint_completion_target = 0: full speed (%.2f s)', $fast // -1));

	# a requested checkpoint is never paced
	set_conf($n, q{pg_fastckpt.checkpoint_completion_target = 0.9});
	$n->safe_psql('postgres', q{UPDATE p SET v = v || '!' WHERE id % 1000 = 0});
	checkpoint($n);
	my $requested = ckpt_stat($n)->{last_seconds};
	ok($requested < 1.0, sprintf('fastckpt_checkpoint() runs at full speed (%.2f s)', $requested));
	$n->stop;
};

# ---------------------------------------------------------------------------
# 6b. an index that cannot be rebuilt (its function fails, or waits): the
#     index is left empty and marked not valid, with a warning naming it,
#     and every table opens -- one table owner's index must not keep
#     everyone's tables closed (h36 B); REINDEX makes it valid again

subtest 'index rebuild fails or hangs: the index is marked not valid, the tables open' => sub {
	my $n = fastckpt_node('bad_index', $quiet_conf . q{
pg_fastckpt.recovery_workers = 2
pg_fastckpt.recovery_index_timeout = '2s'
});
	$n->safe_psql('postgres', q{
CREATE FUNCTION fragile(int) RETURNS int IMMUTABLE LANGUAGE plpgsql AS $$
BEGIN
	IF current_setting('fastckpt_test.break_index', true) = 'on' THEN
		RAISE EXCEPTION 'fragile() refuses to index %', $1;
	ELSIF current_setting('fastckpt_test.break_index', true) = 'sleep' THEN
		PERFORM pg_sleep(3600);
	END IF;
	RETURN $1;
END $$;
CREATE TABLE t (id int PRIMARY KEY, v int) USING fastckpt;
CREATE INDEX t_fragile ON t (fragile(v));
INSERT INTO t SELECT g, g FROM generate_series(1, 1000) g;
CREATE DATABASE other;
});
	$n->safe_psql('other', q{
CREATE EXTENSION pg_fastckpt;
CREATE TABLE o (id int PRIMARY KEY) USING fastckpt;
INSERT INTO o SELECT generate_series(1, 10);
});
	my $expected = fingerprint($n);
	for my $how ('on', 'sleep')
	{
		$n->append_conf('postgresql.conf', "fastckpt_test.break_index = $how\n");
		my $offset = -s $n->logfile;
		ok(crash_postmaster($n), "$how: postmaster killed");
		$n->start;
		ok(tables_opened($n), "$how: the tables open although an index cannot be rebuilt");
		ok($n->log_contains(qr/index "t_fragile" of fastckpt table "t" could not be rebuilt at startup; it is marked not valid and left empty/, $offset),
			"$how: a warning names the index");
		ok($n->log_contains($how eq 'on' ? qr/fragile\(\) refuses to index/ : qr/canceling statement due to statement timeout/, $offset),
			"$how: ... and why");
		ok($n->log_contains(qr/rebuilding index "public\.t_fragile" of fastckpt table "public\.t" at startup \(search_path: /, $offset),
			"$how: ... its table and the search_path");
		is($n->safe_psql('postgres', q{SELECT indisvalid FROM pg_index WHERE indexrelid = 't_fragile'::regclass}),
			'f', "$how: the index is marked not valid");
		is(fingerprint($n), $expected, "$how: every row is there");
		is($n->safe_psql('other', 'SELECT count(*) FROM o'), '10', "$how: another database's table is open");
		$n->adjust_conf('postgresql.conf', 'fastckpt_test.break_index', 'off');
		$n->reload;
		$n->safe_psql('postgres', 'REINDEX INDEX t_fragile');
		is($n->safe_psql('postgres', q{SET enable_seqscan = off; SELECT count(*) FROM t WHERE fragile(v) > 500}),
			'500', "$how: after REINDEX the expression index is valid and answers");
	}
	$n->stop;
};

# ---------------------------------------------------------------------------
# 7. too few background worker slots: recovery runs with fewer processes,
#    says so, and loses nothing (the recovery leader, the checkpointer, the
#    log writer and the logical replication launcher leave one slot free).
#    The two replay processes grow the table at once (the updated and new rows
#    land past the checkpoint's slots, in several partitions); each pauses
#    before it grows by a page, so that the other grows meanwhile.  A
#    process that then set the slot count to what it needed lowered it
#    below the other's slots, whose rows were lost (the last 40 here).
subtest 'too few worker slots: fewer recovery workers, nothing lost' => sub {
	my $small = fastckpt_node('few_slots', $quiet_conf . q{
max_worker_processes = 5
pg_fastckpt.recovery_workers = 4
pg_fastckpt.min_parallel_replay_size = 0
pg_fastckpt.test_replay_claim_pause = 20ms
});
	$small->safe_psql('postgres', q{
CREATE TABLE w (id int PRIMARY KEY, v text, n int) USING fastckpt;
CREATE INDEX w_n ON w (n);
INSERT INTO w SELECT g, md5(g::text), g % 50 FROM generate_series(1, 30000) g;
});
	checkpoint($small);
	$small->safe_psql('postgres', q{
UPDATE w SET n = n + 100 WHERE id % 3 = 0;
DELETE FROM w WHERE id % 17 = 0;
INSERT INTO w SELECT g, 'late', 7 FROM generate_series(30001, 31000) g;
});
	my $expected = fingerprint($small);
	crash_and_start($small, 'kill -9 with one free worker slot') or return;
	is(fingerprint($small), $expected, 'every row is as before the crash');
	my $rec = recovery_stat($small);
	ok($rec->{load_workers} >= 1 && $rec->{load_workers} < 4,
		"fewer loaders than recovery_workers ($rec->{load_workers})");
	ok($rec->{replay_workers} >= 1 && $rec->{replay_workers} < 4,
		"fewer replay processes than recovery_workers ($rec->{replay_workers})");
	ok($rec->{workers} >= $rec->{databases} && $rec->{workers} < 4 * $rec->{databases},
		"fewer index rebuild workers than recovery_workers per database ($rec->{workers})");
	ok($small->log_contains('loading the checkpoint with \d+ workers instead of 4'),
		'the server log says the checkpoint was loaded with fewer workers');
	ok($small->log_contains('replaying the log with \d+ processes instead of 4'),
		'the server log says the log was replayed with fewer processes');
	is($small->safe_psql('postgres', q{SET enable_seqscan = off; SELECT count(*) FROM w WHERE n >= 100}),
		$small->safe_psql('postgres', q{SET enable_indexscan = off; SET enable_bitmapscan = off;
			SELECT count(*) FROM w WHERE n >= 100}),
		'the rebuilt index agrees with the recovered rows');
	$small->stop;
};

# A chunk with no change is reused (hard-linked) without taking its images.
# The marks of its slots must still be settled then: a "taken" tag left on
# an image carries a one-bit epoch, and four phases later it read as the
# current pass's own retry, which took the two-updates-old image again and
# put it into the checkpoint over the row's newer value.
subtest 'an image taken four phases ago is not taken again' => sub {
	my $st = fastckpt_node('stale_tag', $quiet_conf);
	$st->safe_psql('postgres', 'CREATE TABLE t (id int PRIMARY KEY, v int) USING fastckpt');
	for my $idle (1 .. 4)
	{
		$st->safe_psql('postgres', "INSERT INTO t VALUES ($idle, 0)");
		checkpoint($st);
		$st->safe_psql('postgres', "UPDATE t SET v = 1 WHERE id = $idle");
		checkpoint($st);	# takes the image holding 1
		$st->safe_psql('postgres', "UPDATE t SET v = 2 WHERE id = $idle");
		checkpoint($st);	# takes the image holding 2
		checkpoint($st) for 1 .. $idle;    # nothing changed: chunk reused
		crash_and_start($st, "kill -9 after $idle idle checkpoints") or return;
		is($st->safe_psql('postgres', "SELECT v FROM t WHERE id = $idle"), '2',
			"after $idle idle checkpoints the row has its last committed value");
	}
	$st->stop;
};

# A chunk with few changes gets a delta file (its rows that changed, a
# tombstone for each deleted row) on top of its linked files; recovery
# applies them in order; a chunk whose deltas grew past
# checkpoint_delta_ratio of its whole file is written whole again, as is a
# changed chunk after a restart (the writer no longer knows which of its
# slots hold rows); ratio 0 writes every changed chunk whole; a damaged
# delta makes recovery fall back to the older checkpoint.
for my $method (qw(merge copy))
{
	subtest "checkpoint deltas ($method)" => sub {
		my $d = fastckpt_node("deltas_$method", $quiet_conf . qq{
pg_fastckpt.checkpoint_method = '$method'
pg_fastckpt.checkpoint_delta_ratio = 0.5
});
		$d->safe_psql('postgres', q{
CREATE TABLE d (id int PRIMARY KEY, v text, n int) USING fastckpt;
INSERT INTO d SELECT g, md5(g::text), 0 FROM generate_series(1, 70000) g;
});
		# files of chunk 0 of d in checkpoint $seq: whole file, then deltas
		my $files_of = sub {
			my ($seq) = @_;
			my $all = table_chunks($d, $seq, 'd', 1);
			my $files = chunk_files($d, $seq);
			my ($whole) = grep { /_0\z/ } keys %$all;
			my @deltas = sort { ($a =~ /\.d(\d+)\z/)[0] <=> ($b =~ /\.d(\d+)\z/)[0] }
			  grep { /_0\.d\d+\z/ } keys %$all;
			return { whole => $whole, deltas => \@deltas, files => $files };
		};
		my $seq1 = checkpoint($d);
		my $f1 = $files_of->($seq1);
		is(scalar @{ $f1->{deltas} }, 0, 'a new table is written whole');

		$d->safe_psql('postgres', q{
UPDATE d SET n = 1 WHERE id <= 300;
DELETE FROM d WHERE id BETWEEN 301 AND 350;
});
		my $seq2 = checkpoint($d);
		my $st = ckpt_stat($d);
		my $f2 = $files_of->($seq2);
		is(scalar @{ $f2->{deltas} }, 1, 'a few changed rows: one delta for the chunk');
		is($f2->{files}{ $f2->{whole} }[2], $f1->{files}{ $f1->{whole} }[2],
			'its whole file is a link to the last checkpoint\'s');
		ok($st->{last_bytes_written} > 0 && $st->{last_bytes_written} * 20 < $st->{last_bytes_reused},
			"bytes written ($st->{last_bytes_written}) are a small part of bytes linked ($st->{last_bytes_reused})");
		is($st->{last_deltas_written}, 1, 'fastckpt_stat_checkpointer counts the delta');
		is($st->{last_rows}, $d->safe_psql('postgres', 'SELECT count(*) FROM d'),
			'the checkpoint counts the live rows once its deltas apply');

		$d->safe_psql('postgres', q{
UPDATE d SET v = 'second' WHERE id BETWEEN 1000 AND 1100;
DELETE FROM d WHERE id BETWEEN 1 AND 10;
INSERT INTO d VALUES (100001, 'new', 7);
});
		my $seq3 = checkpoint($d);
		my $f3 = $files_of->($seq3);
		is(scalar @{ $f3->{deltas} }, 2, 'the next checkpoint adds a second delta');
		is($f3->{files}{ $f3->{deltas}[0] }[2], $f2->{files}{ $f2->{deltas}[0] }[2],
			'the first delta is linked, not rewritten');
		$d->safe_psql('postgres', q{UPDATE d SET n = 5 WHERE id BETWEEN 2000 AND 2010});
		my $expected = fingerprint($d);
		my $rows3 = ckpt_stat($d)->{last_rows};
		crash_and_start($d, 'kill -9 with deltas') or return;
		is(fingerprint($d), $expected, 'after kill -9: whole file, deltas and log give every row back');
		my $rec = recovery_stat($d);
		is($rec->{checkpoint_seq}, $seq3, 'the checkpoint with two deltas was loaded');
		is($rec->{load_rows}, $rows3, 'with as many live rows as it counted');
		is($rec->{load_deltas}, scalar(grep { /\.d\d+\z/ } keys %{ $f3->{files} }),
			'fastckpt_stat_recovery counts the delta files applied');
		is($d->safe_psql('postgres', 'SELECT count(*) FROM d WHERE id BETWEEN 1 AND 10 OR id BETWEEN 301 AND 350'),
			'0', 'rows deleted in a delta stay deleted');

		# after the restart the writer learns from the files which slots
		# hold rows: still a delta
		$d->safe_psql('postgres', q{UPDATE d SET n = 6 WHERE id BETWEEN 3000 AND 3010; DELETE FROM d WHERE id = 3011});
		my $seq4 = checkpoint($d);
		my $f4 = $files_of->($seq4);
		is(scalar @{ $f4->{deltas} }, 3, 'the first change after a restart adds a third delta');
		is(ckpt_stat($d)->{last_rows}, $d->safe_psql('postgres', 'SELECT count(*) FROM d'),
			'with the live rows counted right from the files');
		# then whole, on demand (ratio 0), so the next steps start afresh
		set_conf($d, q{pg_fastckpt.checkpoint_delta_ratio = 0});
		$d->safe_psql('postgres', q{UPDATE d SET n = 7 WHERE id = 3012});
		my $seq4b = checkpoint($d);
		my $f4b = $files_of->($seq4b);
		is(scalar @{ $f4b->{deltas} }, 0, 'checkpoint_delta_ratio = 0: written whole');
		isnt($f4b->{files}{ $f4b->{whole} }[2], $f4->{files}{ $f4->{whole} }[2], 'as a new file');
		set_conf($d, q{pg_fastckpt.checkpoint_delta_ratio = 0.5});

		# one delta past the ratio, then the next change writes it whole
		$d->safe_psql('postgres', q{UPDATE d SET v = v || v WHERE id % 10 < 8 AND id < 65536});
		my $seq5 = checkpoint($d);
		my $f5 = $files_of->($seq5);
		is(scalar @{ $f5->{deltas} }, 1, 'a large change is still a delta');
		ok($f5->{files}{ $f5->{deltas}[0] }[0] > 0.5 * $f5->{files}{ $f5->{whole} }[0],
			'larger than half the whole file');
		$d->safe_psql('postgres', q{UPDATE d SET n = 8 WHERE id = 5000});
		my $seq6 = checkpoint($d);
		my $f6 = $files_of->($seq6);
		is(scalar @{ $f6->{deltas} }, 0, 'past checkpoint_delta_ratio the chunk is written whole again');
		isnt($f6->{files}{ $f6->{whole} }[2], $f5->{files}{ $f5->{whole} }[2], 'as a new file');

		# a damaged delta of the newest checkpoint: fall back to the older one
		$d->safe_psql('postgres', q{UPDATE d SET n = 9 WHERE id BETWEEN 4000 AND 4100});
		my $seq7 = checkpoint($d);
		my $f7 = $files_of->($seq7);
		is(scalar @{ $f7->{deltas} }, 1, 'a delta again after the whole write');
		$d->safe_psql('postgres', q{DELETE FROM d WHERE id BETWEEN 4050 AND 4060});
		$expected = fingerprint($d);
		ok(crash_postmaster($d), 'postmaster killed');
		corrupt_file(seq_dir($d, $seq7) . "/$f7->{deltas}[0]");
		my $offset = -s $d->logfile;
		start_and_open($d, 'start with a damaged delta') or return;
		ok($d->log_contains(
				qr/WARNING:  pg_fastckpt: checkpoint $seq7 cannot be used: chunk "[^"]*\Q$f7->{deltas}[0]\E"/, $offset),
			'WARNING names the damaged delta file');
		$rec = recovery_stat($d);
		is($rec->{checkpoint_seq}, $seq6, 'the older checkpoint was loaded');
		is(fingerprint($d), $expected, 'and the longer replay gives every row back');

		ok(!$d->log_contains('TRAP:|terminated by signal 11|PANIC|checkpoint failed'),
			'no crash, PANIC or checkpoint failure in the log');
		if ($method ne 'merge')
		{
			$d->stop;
			return;
		}

		# merge: a file damaged on disk later (a bad block, not a crash)
		# that both kept checkpoints share stops every checkpoint that must
		# read it back, and the error says that a restart now would find no
		# usable checkpoint, while the server is still up with every row
		$d->safe_psql('postgres', q{UPDATE d SET n = 10 WHERE id BETWEEN 6000 AND 6010});
		checkpoint($d);
		$d->safe_psql('postgres', q{UPDATE d SET n = 10 WHERE id BETWEEN 6100 AND 6110});
		my $seq9 = checkpoint($d);
		my $f9 = $files_of->($seq9);
		cmp_ok($f9->{files}{ $f9->{whole} }[1], '>=', 2,
			'the whole file of chunk 0 is shared by both kept checkpoints');
		corrupt_file(seq_dir($d, $seq9) . "/$f9->{whole}", in_place => 1);
		set_conf($d, q{pg_fastckpt.checkpoint_delta_ratio = 0});
		$d->safe_psql('postgres', q{UPDATE d SET n = 11 WHERE id = 6020});
		$expected = fingerprint($d);
		$offset = -s $d->logfile;
		my ($ret, $stdout, $stderr) = $d->psql('postgres', 'SELECT fastckpt_checkpoint()');
		isnt($ret, 0, 'a checkpoint that must read the damaged file fails');
		like($stderr, qr/\Q$f9->{whole}\E" is damaged at block/, '... naming the damaged file');
		ok($d->log_contains(qr/HINT:  The checkpoint kept before it shares this file, so a restart now would find no usable checkpoint/,
				$offset),
			'the server log says a restart now would find no usable checkpoint');
		is(fingerprint($d), $expected, 'the tables stay up with every row');
		$d->stop('immediate');
	};
}

ok(!$node->log_contains('TRAP:|terminated by signal 11|PANIC'), 'no crash or PANIC in the log');
$node->stop;
done_testing();
