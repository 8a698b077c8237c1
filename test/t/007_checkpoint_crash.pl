# Crashes while checkpoints run (DESIGN.md sections 5 and 7): the workload
# and checks of 004_crash_durability.pl (test/perl/FastckptCrashLoop.pm),
# with a checkpoint every second under load.  Cycles rotate over five ways
# to crash: at a random moment, and inside the checkpoint writer at each of
# its test pause points (pg_fastckpt.test_checkpoint_pause):
#   swap      holding the commit install latch in the middle of the phase swap
#   chunk     after the first chunk file of a checkpoint is written
#   install   chunk files and manifest durable, control file not yet renamed
#   truncate  control file installed, old checkpoints and log not yet removed
# The writer logs when it reaches the point and sleeps there; the test waits
# for that line under load and kills every server process, so the kill
# lands at the point -- and the hit counter of fastckpt_stat_checkpointer
# proves it.  Every other cycle the log's unsynced bytes are thrown away
# (the power-loss model; checkpoint files are fsynced before the control
# file names them, so only the log can lose anything).  After each restart,
# besides 004's checks: recovery loaded the checkpoint it should have (the
# last installed one: never one whose control file was not renamed yet,
# always one that was), without falling back or failing.  At the end, 10 s
# of load with checkpoints every second must leave the log and the
# checkpoint directory small.  Every other round of the five ways runs with
# pg_fastckpt.backend_flush on.
#
# FASTCKPT_LONG_TESTS=1 runs 200 cycles instead of 20; FASTCKPT_CRASH_CYCLES
# and FASTCKPT_CRASH_TEST_SEED override the count and the random seed.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use FastckptTest;
use FastckptCrashLoop;

my ($cycles, $seed) = FastckptCrashLoop::cycles_and_seed();

# With five strategies and the power-loss model every other cycle, 20
# cycles kill at each point 4 times, twice of them followed by power loss.
my @points = qw(swap chunk install truncate);
my @strategies = ('random', @points);
# Long enough that the kill surely comes while the writer sleeps there.
my $pause_ms = 5000;
# A checkpoint starts a second after the last one; the slowest point
# (install) comes after every chunk file is written and fsynced.
my $point_timeout = 60;

diag("$cycles cycles, seed $seed (FASTCKPT_CRASH_TEST_SEED)");

# 150000 accounts make 3 chunk files (65536 slots each) of some 20 MB
# together, so that a checkpoint has several chunks to write and the chunk
# point comes with more to follow, while loading them and rewriting them
# every second stays within a few seconds per cycle on a small machine.
my $naccounts = 150_000;

# 004's settings (fsync = on so that the power-loss model has unsynced
# bytes to drop), and a checkpoint every second.
my $node = fastckpt_node('ckpt_crash', FastckptCrashLoop::node_conf() . q{
pg_fastckpt.checkpoint_timeout = '1s'
});

my $t_setup = time();
my $loop = FastckptCrashLoop->new(node => $node,
	clients => 4, branches => 3, tellers => 30, accounts => $naccounts);
$loop->create_schema;
diag(sprintf('schema with %d accounts loaded in %.1f s', $naccounts, time() - $t_setup));

# The checkpointer's figures since the server started (shared memory).
sub checkpointer_stats
{
	my ($checkpoints, $failures, $last_seq, $hits, $removed) = split /\|/,
	  $node->safe_psql('postgres', q{
		SELECT checkpoints, failures, last_seq, array_to_string(test_pause_hits, ','),
		       log_segments_removed
		  FROM fastckpt_stat_checkpointer});
	my %hits;
	@hits{@points} = split /,/, $hits;
	return { checkpoints => $checkpoints, failures => $failures, last_seq => $last_seq,
		hits => \%hits, segments_removed => $removed };
}

# What the last startup recovery did; seq 0 when it loaded no checkpoint.
sub recovery_stats
{
	my ($seq, $fallback, $error, $bytes, $workers, $seconds, $deltas) = split /\|/,
	  $node->safe_psql('postgres', q{
		SELECT coalesce(checkpoint_seq, 0), checkpoint_fallback, coalesce(error, ''),
		       coalesce(load_bytes, 0), coalesce(load_workers, 0),
		       round(coalesce(load_seconds, 0)::numeric, 3), coalesce(load_deltas, 0)
		  FROM fastckpt_stat_recovery});
	return { seq => $seq, fallback => $fallback, error => $error, bytes => $bytes,
		workers => $workers, seconds => $seconds, deltas => $deltas };
}

# The pause settings are PGC_SIGHUP: ALTER SYSTEM and a reload, which also
# means they survive a restart until reset.
sub set_pause
{
	my ($point, $ms) = @_;
	my $set = defined $point
	  ? "SET pg_fastckpt.test_checkpoint_pause = '$point'"
	  : 'RESET pg_fastckpt.test_checkpoint_pause';
	my $set_ms = defined $point
	  ? "SET pg_fastckpt.test_checkpoint_pause_ms = $ms"
	  : 'RESET pg_fastckpt.test_checkpoint_pause_ms';
	$node->safe_psql('postgres', qq{
		ALTER SYSTEM $set;
		ALTER SYSTEM $set_ms;
		SELECT pg_reload_conf();});
	return;
}

# Names in a directory of $PGDATA/pg_fastckpt: [16-hex-digit ones], [others].
sub dir_entries
{
	my ($sub) = @_;
	my $dir = $node->data_dir . "/pg_fastckpt/$sub";
	opendir(my $dh, $dir) or return ([], []);
	my @all = grep { !/^\.\.?$/ } readdir($dh);
	closedir($dh);
	return ([ sort grep { /^[0-9A-Fa-f]{16}$/ } @all ], [ sort grep { !/^[0-9A-Fa-f]{16}$/ } @all ]);
}

my (%scheduled, %landed, %hits_seen);
my ($cycles_loaded, $cycles_counted, $ckpt_before_kill, $cycles_deltas) = (0, 0, 0, 0);
for my $cycle (1 .. $cycles)
{
	my $strategy = $strategies[ ($cycle - 1) % @strategies ];

	# every other round of the five strategies, committing backends flush
	# the log themselves while the log writer is idle (backend_flush)
	my $backend_flush = (int(($cycle - 1) / @strategies) % 2 == 1) ? 'on' : 'off';
	my $name = "cycle $cycle, backend_flush $backend_flush";
	$node->safe_psql('postgres', qq{
		ALTER SYSTEM SET pg_fastckpt.backend_flush = $backend_flush;
		SELECT pg_reload_conf();});
	$scheduled{$strategy}++;
	$loop->start_cycle($name);

	my ($what, $t_seen);
	if ($strategy eq 'random')
	{
		# a little longer than 004's: more kills land inside a checkpoint
		my $run = 0.3 + rand(2.0);
		$loop->pump($run);
		$what = sprintf('random kill after %.2f s', $run);
	}
	else
	{
		# under load, pause the writer at the point, wait for the log line
		# that says it is there (pumping meanwhile: wait_for_log would let
		# the clients' input run dry), then kill
		my $warmup = 0.2 + rand(0.5);
		$loop->pump($warmup);
		my $offset = -s $node->logfile;
		my $t_set = time();
		set_pause($strategy, $pause_ms);
		my $re = qr/pg_fastckpt: test pause at checkpoint point "\Q$strategy\E" for $pause_ms ms/;
		my $seen = $loop->pump($point_timeout,
			sub { slurp_file($node->logfile, $offset) =~ $re });
		$t_seen = time();
		ok($seen, "$name: the checkpoint writer reached point $strategy")
		  or diag("no \"$strategy\" pause line within $point_timeout s");
		$what = sprintf('kill at %s %.2f s after the reload (%.2f s load before)',
			$strategy, $t_seen - $t_set, $warmup);
	}

	# the figures of the server about to die
	my $st = checkpointer_stats();
	$ckpt_before_kill++ if $st->{checkpoints} > 0;
	is($st->{failures}, 0, "$name: no checkpoint failed");
	my $landed;
	if ($strategy ne 'random')
	{
		$landed = $st->{hits}{$strategy} >= 1 && time() - $t_seen < $pause_ms / 1000 - 1;
		ok($landed, "$name: the kill lands while the writer pauses at $strategy "
			  . "(hits $st->{hits}{$strategy}, " . sprintf('%.2f', time() - $t_seen) . ' s after the log line)');
		$landed{$strategy}++ if $landed;
	}
	$hits_seen{$_} += $st->{hits}{$_} for @points;

	# At a pause point kill every server process: the postmaster alone
	# would leave the writer to sleep out its pause and finish the
	# checkpoint as an orphan, past the point.  Random kills do as in 004:
	# cycle % 4 = 1 alone, 2 all, 3 all, 0 alone.
	my $how = $loop->crash_and_restart(
		kill_all => ($strategy ne 'random' || $cycle % 4 == 2 || $cycle % 4 == 3),
		power_loss => $cycle % 2 == 0);
	# back to no pause before the first checkpoint of the new server
	set_pause(undef) if $strategy ne 'random';

	# Recovery starts from the last installed checkpoint: the one before
	# the paused one at swap, chunk and install (its control file was not
	# renamed yet), the paused one at truncate (it was); a random kill may
	# come just before or after an install.  last_seq is the last one this
	# server installed, or the one it recovered from if none yet.
	my $rec = recovery_stats();
	my $base = $st->{last_seq};
	my @expect = $strategy eq 'truncate' ? ($base + 1)
	  : $strategy eq 'random' ? ($base, $base + 1) : ($base);
	ok(scalar(grep { $_ == $rec->{seq} } @expect),
		"$name: recovery loaded checkpoint $rec->{seq} (expected " . join(' or ', @expect) . ')');
	is($rec->{fallback}, 'f', "$name: recovery did not fall back to an older checkpoint");
	is($rec->{error}, '', "$name: recovery reported no error");
	if ($cycle > 2)
	{
		$cycles_counted++;
		$cycles_loaded++ if $rec->{seq} > 0;
	}
	$cycles_deltas++ if $rec->{deltas} > 0;

	$what .= sprintf('; before the kill %d checkpoints (last %d), hits %s; recovered checkpoint %s '
		  . '(%.1f MB, %d deltas, %d workers, %.3f s)',
		$st->{checkpoints}, $st->{last_seq}, join(',', map { $st->{hits}{$_} } @points),
		$rec->{seq} || 'none', $rec->{bytes} / 1e6, $rec->{deltas}, $rec->{workers}, $rec->{seconds});
	last unless $loop->verify($what, $how);
}

diag('kills per strategy: ' . join(', ', map { "$_ " . ($scheduled{$_} // 0) } @strategies)
	  . '; landed at the point: ' . join(', ', map { "$_ " . ($landed{$_} // 0) } @points)
	  . '; pause hits counted before the kills: ' . join(', ', map { "$_ " . ($hits_seen{$_} // 0) } @points));
diag("cycles with a completed checkpoint before the kill: $ckpt_before_kill of " . $loop->cycles
	  . "; recovered from a checkpoint: $cycles_loaded of $cycles_counted after cycle 2");
for my $p (@points)
{
  SKIP:
	{
		skip "no cycle killed at $p (too few cycles)", 1 unless $scheduled{$p};
		ok(($landed{$p} // 0) >= 1, "kills landed at point $p: " . ($landed{$p} // 0));
	}
}
ok($ckpt_before_kill > 0, "checkpoints completed before some kills ($ckpt_before_kill)");
# the chunks' delta files carry over restarts (the writer reads which
# slots hold rows back from the files): recoveries apply deltas too
ok($cycles_deltas * 4 >= $cycles_counted,
	"recovery applied chunk deltas in at least a quarter of the cycles after the second "
	  . "($cycles_deltas of $cycles_counted)");
ok($cycles_loaded * 2 >= $cycles_counted,
	"recovery loaded a checkpoint in at least half the cycles after the second "
	  . "($cycles_loaded of $cycles_counted)");

# The log stays bounded: segments are kept from the older of the two kept
# checkpoints on, so with a checkpoint every second a few 16 MB segments
# (one or two in use, the next zero-filled ahead) are all there is.  Sample
# the directories while the load runs for 10 s.
if (!$loop->failed)
{
	my ($max_segs, $max_files, $max_dirs, $samples, $next_sample) = (0, 0, 0, 0, 0);
	my $st0 = checkpointer_stats();
	$loop->start_cycle('final load');
	$loop->pump(10, sub {
		return 0 if time() < $next_sample;
		$next_sample = time() + 0.25;
		my ($segs, $other) = dir_entries('log');
		my ($dirs) = dir_entries('ckpt');
		$max_segs = @$segs if @$segs > $max_segs;
		$max_files = @$segs + @$other if @$segs + @$other > $max_files;
		$max_dirs = @$dirs if @$dirs > $max_dirs;
		$samples++;
		return 0;
	});
	$loop->stop_clients;
	my $st1 = checkpointer_stats();
	diag(sprintf('final load: %d checkpoints in 10 s, %d log segments removed; at most %d log segments '
		  . '(%d files) and %d checkpoint directories in %d samples',
		$st1->{checkpoints} - $st0->{checkpoints}, $st1->{segments_removed} - $st0->{segments_removed},
		$max_segs, $max_files, $max_dirs, $samples));
	ok($st1->{checkpoints} - $st0->{checkpoints} >= 5, 'checkpoints ran every second or so under load');
	ok($max_segs <= 6, "the log stayed at most 6 segments under load ($max_segs)");
	# the two kept checkpoints and the one being written
	ok($max_dirs <= 3, "at most 3 checkpoint directories under load ($max_dirs)");

	# once the last checkpoint is installed and the old one removed:
	# the two kept ones and the control file
	$node->safe_psql('postgres', 'SELECT fastckpt_checkpoint(true)');
	my ($dirs, $other) = dir_entries('ckpt');
	my ($segs) = dir_entries('log');
	my $insert = $node->safe_psql('postgres', 'SELECT insert_lsn FROM fastckpt_stat_log');
	my $oldest = @$segs ? do { no warnings 'portable'; hex($segs->[0]) } : 0;
	diag(sprintf('after a checkpoint: pg_fastckpt/ckpt has %s; pg_fastckpt/log has %d segments '
		  . 'from %X on, the log is at %X (%.0f MB written in all)',
		"@$dirs @$other", scalar(@$segs), $oldest, $insert, $insert / 2**20));
	ok(@$dirs <= 2 && "@$other" eq 'control',
		'pg_fastckpt/ckpt holds at most 2 checkpoint directories and the control file');
	ok(@$segs <= 6, 'pg_fastckpt/log holds at most 6 segments (' . scalar(@$segs) . ')');
	# once more than two segments' worth is written (20 cycles write some
	# 40 MB), the first segments are gone: the count is small because the
	# log is truncated, not merely because little was written
  SKIP:
	{
		skip 'less than 32 MB of log written', 1 if $insert < 2 * 16 * 2**20;
		ok($oldest > 0, sprintf('the oldest log segments were removed (oldest kept starts at %X)', $oldest));
	}
	$loop->verify('clean stop after 10 s of load', '');
}

$loop->finish;
$node->stop;
done_testing();
