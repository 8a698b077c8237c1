# Crash durability (DESIGN.md section 5): concurrent clients run TPC-B-like
# transactions -- plain SQL, a PL/pgSQL function (logged as CALL records once
# registered), and mixed ones that also write a heap table -- in both commit
# modes; the postmaster is killed with SIGKILL at a random moment, and in
# every other cycle everything the logical log had not fdatasynced is thrown
# away (the power-loss model); in half of each, every server process is
# killed at once instead of the postmaster alone.  After each restart:
#  - every transaction whose COMMIT returned to its client is there;
#  - every transaction is all there or not at all: balances agree with
#    history row by row, and a mixed transaction is in both history and the
#    heap ledger or in neither;
#  - only issued, never rolled-back transactions are there, with their own
#    values, and what earlier cycles recovered is unchanged.
#
# FASTCKPT_CRASH_TEST_AM=heap runs the same workload on heap tables (without
# the power-loss model, which only concerns pg_fastckpt's log) to check the
# harness itself.  FASTCKPT_LONG_TESTS=1 runs 200 cycles instead of 20;
# FASTCKPT_CRASH_CYCLES and FASTCKPT_CRASH_TEST_SEED override the count and
# the random seed.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use IO::Handle;
use Symbol qw(gensym);
use Time::HiRes qw(time usleep);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use FastckptTest;

my $am = $ENV{FASTCKPT_CRASH_TEST_AM} // 'fastckpt';
die "bad FASTCKPT_CRASH_TEST_AM '$am'" unless $am =~ /^\w+$/;
my $cycles = $ENV{FASTCKPT_CRASH_CYCLES} // ($ENV{FASTCKPT_LONG_TESTS} ? 200 : 20);
my $seed = $ENV{FASTCKPT_CRASH_TEST_SEED} // (int(time() * 1000) ^ $$) % 1_000_000_000;
srand($seed);
my $power_loss = $am ne 'heap';
my $nclients = 4;
my ($nbranches, $ntellers, $naccounts) = (3, 30, 3000);

diag("access method $am, $cycles cycles, seed $seed (FASTCKPT_CRASH_TEST_SEED)");

# A client whose psql dies writes to a closed pipe: that must not kill us.
$SIG{PIPE} = 'IGNORE';

# fsync = on (the test framework turns it off): with it off the log writer's
# fdatasync returns at once, leaving the power-loss model next to nothing
# to drop, and commits would group unlike on a real disk.
my $node = fastckpt_node('crash', qq{
fsync = on
pg_fastckpt.test_sync_trace = on
pg_fastckpt.memory_limit = '1GB'
});

# History has the ids and the rows each transaction touched, so that every
# balance can be recomputed from it; only the clients' role writes.
$node->safe_psql('postgres', qq{
CREATE TABLE branches (bid int PRIMARY KEY, bbalance int NOT NULL) USING $am;
CREATE TABLE tellers (tid int PRIMARY KEY, bid int NOT NULL, tbalance int NOT NULL) USING $am;
CREATE TABLE accounts (aid int PRIMARY KEY, bid int NOT NULL, abalance int NOT NULL,
	filler char(84)) USING $am;
CREATE TABLE history (client int, seq int, kind char(1) NOT NULL, aid int NOT NULL,
	tid int NOT NULL, bid int NOT NULL, delta int NOT NULL,
	PRIMARY KEY (client, seq)) USING $am;
CREATE TABLE heap_ledger (client int, seq int, delta int NOT NULL,
	PRIMARY KEY (client, seq)) USING heap;
INSERT INTO branches SELECT g, 0 FROM generate_series(1, $nbranches) g;
INSERT INTO tellers SELECT g, (g - 1) % $nbranches + 1, 0 FROM generate_series(1, $ntellers) g;
INSERT INTO accounts SELECT g, (g - 1) % $nbranches + 1, 0, '' FROM generate_series(1, $naccounts) g;

CREATE FUNCTION tpcb_tx(p_client int, p_seq int, p_aid int, p_tid int, p_bid int, p_delta int)
RETURNS void LANGUAGE plpgsql AS \$\$
BEGIN
	UPDATE accounts SET abalance = abalance + p_delta WHERE aid = p_aid;
	UPDATE tellers SET tbalance = tbalance + p_delta WHERE tid = p_tid;
	UPDATE branches SET bbalance = bbalance + p_delta WHERE bid = p_bid;
	INSERT INTO history VALUES (p_client, p_seq, 'p', p_aid, p_tid, p_bid, p_delta);
END;
\$\$;

CREATE ROLE bank LOGIN;
GRANT SELECT, INSERT, UPDATE ON branches, tellers, accounts, history, heap_ledger TO bank;
});

# Call logging and commit modes land with the log; use them when they exist.
my $can_register = $node->safe_psql('postgres',
	q{SELECT count(*) FROM pg_proc WHERE proname = 'fastckpt_register_procedure'});
if ($can_register)
{
	$node->safe_psql('postgres',
		q{SELECT fastckpt_register_procedure('tpcb_tx(int,int,int,int,int,int)')});
}
my @modes = $node->safe_psql('postgres',
	q{SELECT current_setting('pg_fastckpt.commit_mode', true) IS NOT NULL}) eq 't'
  ? ('strict', 'early_lock_release') : ();
diag('procedure registered: ' . ($can_register ? 'yes' : 'no (no fastckpt_register_procedure)')
	  . '; commit modes: ' . (@modes ? "@modes" : 'none (no pg_fastckpt.commit_mode)'));

# One transaction of client $c as psql input, and what it does.  Kinds:
# s = plain SQL, p = the function, m = mixed with the heap ledger,
# r = rolled back (must never be seen).  Plain ones sometimes roll back a
# subtransaction that changed the same account.
sub gen_tx
{
	my ($c, $seq) = @_;
	my $aid = 1 + int(rand($naccounts));
	my $tid = 1 + int(rand($ntellers));
	my $bid = 1 + int(rand($nbranches));
	my $d = int(rand(10001)) - 5000 || 1;
	my $r = rand();
	my $kind = $r < 0.3 ? 's' : $r < 0.6 ? 'p' : $r < 0.95 ? 'm' : 'r';
	my %tx = (kind => $kind, aid => $aid, tid => $tid, bid => $bid, delta => $d);
	my $ack = "\\echo ack $c $seq\n";
	my $begin = "BEGIN;\n";
	$begin .= "SET LOCAL pg_fastckpt.commit_mode = $modes[int(rand(@modes))];\n"
	  if @modes && rand() < 0.25;

	if ($kind eq 'p')
	{
		my $call = "SELECT tpcb_tx($c, $seq, $aid, $tid, $bid, $d);\n";
		# autocommit or in an explicit transaction block
		$tx{sql} = rand() < 0.5 ? $call . $ack : $begin . $call . "COMMIT;\n" . $ack;
		return \%tx;
	}
	my $writes = "UPDATE accounts SET abalance = abalance + $d WHERE aid = $aid;\n";
	$writes .= "SAVEPOINT sp;\nUPDATE accounts SET abalance = abalance + 1000000 WHERE aid = $aid;\n"
	  . "ROLLBACK TO SAVEPOINT sp;\n"
	  if $kind eq 's' && rand() < 0.2;
	$writes .= "UPDATE tellers SET tbalance = tbalance + $d WHERE tid = $tid;\n"
	  . "UPDATE branches SET bbalance = bbalance + $d WHERE bid = $bid;\n"
	  . "INSERT INTO history VALUES ($c, $seq, '$kind', $aid, $tid, $bid, $d);\n";
	my $heap = "INSERT INTO heap_ledger VALUES ($c, $seq, $d);\n";
	if ($kind eq 'm' || ($kind eq 'r' && rand() < 0.5))
	{
		# heap write before or after the fastckpt ones
		$writes = rand() < 0.5 ? $heap . $writes : $writes . $heap;
	}
	$tx{sql} = $kind eq 'r'
	  ? $begin . $writes . "ROLLBACK;\n"
	  : $begin . $writes . "COMMIT;\n" . $ack;
	return \%tx;
}

# Per client: first seq of the current cycle, and the fingerprint (count,
# sum of deltas, sum of seqs) of everything recovered in earlier cycles.
my @next_seq = map { 1 } 0 .. $nclients;
my ($old_hist, $old_ledger);

sub fingerprint
{
	my ($table, $below) = @_;
	my $where = join(' OR ', map { "(client = $_ AND seq < $below->[$_])" } 1 .. $nclients);
	return $node->safe_psql('postgres', qq{
		SELECT string_agg(format('%s:%s/%s/%s', client, n, d, s), ' ' ORDER BY client)
		  FROM (SELECT client, count(*) n, sum(delta) d, sum(seq::bigint) s
		          FROM $table WHERE $where GROUP BY client) f});
}

my $failed_cycle;
my $t_start = time();
for my $cycle (1 .. $cycles)
{
	my @start_seq = @next_seq;
	my $log_offset = -s $node->logfile;
	my (%issued, %acked);
	my @clients;

	# start the clients, each in a commit mode of its own
	for my $c (1 .. $nclients)
	{
		my $cl = { c => $c, in => '', out => '', err => '', pipe => gensym };
		if (@modes)
		{
			$cl->{mode} = $modes[int(rand(@modes))];
			$cl->{in} = "SET pg_fastckpt.commit_mode = $cl->{mode};\n";
		}
		# we write stdin ourselves: IPC::Run would die writing input it
		# buffered to a psql that exited when the server went away
		$cl->{h} = IPC::Run::start(
			[ 'psql', '-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1',
			  '-d', $node->connstr('postgres') . ' user=bank' ],
			'<pipe', $cl->{pipe}, '>', \$cl->{out}, '2>', \$cl->{err},
			IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
		$cl->{pipe}->blocking(0);
		push @clients, $cl;
	}

	# keep their input topped up, then crash at a random moment
	my $run = 0.3 + rand(1.2);
	my $deadline = time() + $run;
	while (time() < $deadline)
	{
		for my $cl (@clients)
		{
			while (length($cl->{in}) < 16384)
			{
				my $seq = $next_seq[ $cl->{c} ]++;
				my $tx = gen_tx($cl->{c}, $seq);
				$issued{"$cl->{c}:$seq"} = $tx;
				$cl->{in} .= $tx->{sql};
			}
			my $n = syswrite($cl->{pipe}, $cl->{in});
			substr($cl->{in}, 0, $n, '') if $n;
			eval { $cl->{h}->pump_nb; };
		}
		usleep(2_000);
	}
	# kill -9 the postmaster alone (its children, the log writer included,
	# go on until their next wait) or all server processes at once (a
	# write may not be synced yet), each with and without the power-loss
	# model afterwards: cycle % 4 = 1 alone, 2 all + loss, 3 all, 0 alone + loss
	my $kill_all = $cycle % 4 == 2 || $cycle % 4 == 3;
	my $all_gone = crash_postmaster($node, $kill_all);
	close($_->{pipe}) for @clients;
	ok($all_gone, "cycle $cycle: all server processes exited after kill -9");

	# collect the acks: an ack line proves COMMIT returned
	my @client_errors;
	for my $cl (@clients)
	{
		eval { $cl->{h}->finish; 1 } or do {
			push @client_errors, "client $cl->{c}: psql did not exit: $@";
			eval { $cl->{h}->kill_kill };
		};
		$acked{"$cl->{c}:$1"} = 1 while $cl->{out} =~ /^ack $cl->{c} (\d+)$/mg;
		# errors other than the lost connection mean the workload broke
		for my $line (split /\n/, $cl->{err})
		{
			push @client_errors, "client $cl->{c}: $line"
			  if $line =~ /ERROR/ && $line !~ /postmaster|terminat|shut/i;
		}
	}
	ok(!@client_errors, "cycle $cycle: clients ran without SQL errors")
	  or diag(join("\n", @client_errors[ 0 .. ($#client_errors < 9 ? $#client_errors : 9) ]));

	my $loss = $kill_all ? ', all processes killed' : '';
	if ($power_loss && $cycle % 2 == 0)
	{
		my $r = simulate_log_power_loss($node);
		# bytes cut include whatever zeros a segment was preallocated with
		$loss .= sprintf(', power loss: durable up to %X, %d of %d segments deleted, %d truncated, %d bytes cut',
			$r->{synced}, $r->{deleted}, $r->{segments}, $r->{truncated}, $r->{bytes});
	}

	$node->start;
	wait_for_tables_open($node);

	# what this cycle left in history and in the heap ledger
	my $this_cycle = join(' OR ', map { "(client = $_ AND seq >= $start_seq[$_])" } 1 .. $nclients);
	my %hist;
	for (split /\n/, $node->safe_psql('postgres',
			"SELECT client, seq, kind, aid, tid, bid, delta FROM history WHERE $this_cycle"))
	{
		my ($c, $s, @v) = split /\|/;
		$hist{"$c:$s"} = \@v;
	}
	my %ledger;
	for (split /\n/, $node->safe_psql('postgres',
			"SELECT client, seq, delta FROM heap_ledger WHERE $this_cycle"))
	{
		my ($c, $s, $d) = split /\|/;
		$ledger{"$c:$s"} = $d;
	}

	# every acked transaction survived, in full
	my @lost;
	for my $id (sort keys %acked)
	{
		my $tx = $issued{$id};
		if (!$tx)
		{
			push @lost, "$id: acked but never issued";
		}
		elsif (!$hist{$id})
		{
			push @lost, "$id ($tx->{kind}): acked, not in history";
		}
		elsif ($tx->{kind} eq 'm' && !defined $ledger{$id})
		{
			push @lost, "$id (m): acked, in history but not in heap_ledger";
		}
	}
	ok(!@lost, "cycle $cycle: all " . scalar(keys %acked) . ' acknowledged transactions survived')
	  or diag(scalar(@lost) . " lost, e.g.:\n" . join("\n", @lost[ 0 .. ($#lost < 9 ? $#lost : 9) ]));

	# only issued, committed transactions, with their own values
	my @bogus;
	for my $id (sort keys %hist)
	{
		my $tx = $issued{$id};
		my $got = join('|', @{ $hist{$id} });
		if (!$tx)
		{
			push @bogus, "$id: in history, never issued ($got)";
			next;
		}
		push @bogus, "$id: rolled-back transaction in history" if $tx->{kind} eq 'r';
		my $want = join('|', @$tx{qw(kind aid tid bid delta)});
		push @bogus, "$id: history has $got, issued $want"
		  if $tx->{kind} ne 'r' && $got ne $want;
	}
	for my $id (sort keys %ledger)
	{
		my $tx = $issued{$id};
		push @bogus, "$id: in heap_ledger, never issued" if !$tx;
		push @bogus, "$id: rolled-back transaction in heap_ledger" if $tx && $tx->{kind} eq 'r';
		push @bogus, "$id: heap_ledger delta $ledger{$id}, issued $tx->{delta}"
		  if $tx && $tx->{kind} eq 'm' && $ledger{$id} != $tx->{delta};
	}
	ok(!@bogus, "cycle $cycle: recovered rows are issued, committed transactions with their values")
	  or diag(join("\n", @bogus[ 0 .. ($#bogus < 9 ? $#bogus : 9) ]));

	# what earlier cycles recovered is still exactly there
	if ($cycle > 1)
	{
		is(fingerprint('history', \@start_seq), $old_hist,
			"cycle $cycle: history of earlier cycles unchanged");
		is(fingerprint('heap_ledger', \@start_seq), $old_ledger,
			"cycle $cycle: heap_ledger of earlier cycles unchanged");
	}

	# no partial transaction: totals and every single balance agree with history
	is($node->safe_psql('postgres', qq{
		SELECT (SELECT count(*) FROM branches) || ' ' || (SELECT count(*) FROM tellers)
			|| ' ' || (SELECT count(*) FROM accounts) || ' '
			|| ((SELECT sum(bbalance) FROM branches) = (SELECT coalesce(sum(delta), 0) FROM history)
			AND (SELECT sum(tbalance) FROM tellers) = (SELECT coalesce(sum(delta), 0) FROM history)
			AND (SELECT sum(abalance) FROM accounts) = (SELECT coalesce(sum(delta), 0) FROM history))}),
		"$nbranches $ntellers $naccounts true",
		"cycle $cycle: all rows there; sum(bbalance) = sum(tbalance) = sum(abalance) = sum(delta)");
	is($node->safe_psql('postgres', q{
		SELECT (SELECT count(*) FROM accounts a
		          LEFT JOIN (SELECT aid, sum(delta) s FROM history GROUP BY aid) h USING (aid)
		         WHERE a.abalance <> coalesce(h.s, 0))
		     + (SELECT count(*) FROM tellers t
		          LEFT JOIN (SELECT tid, sum(delta) s FROM history GROUP BY tid) h USING (tid)
		         WHERE t.tbalance <> coalesce(h.s, 0))
		     + (SELECT count(*) FROM branches b
		          LEFT JOIN (SELECT bid, sum(delta) s FROM history GROUP BY bid) h USING (bid)
		         WHERE b.bbalance <> coalesce(h.s, 0))}),
		'0', "cycle $cycle: every balance equals the sum of its history rows");
	is($node->safe_psql('postgres', q{
		SELECT count(*) FROM (SELECT client, seq, delta FROM history WHERE kind = 'm') h
		  FULL JOIN heap_ledger l USING (client, seq)
		 WHERE h.delta IS DISTINCT FROM l.delta}),
		'0', "cycle $cycle: mixed transactions are in both history and heap_ledger or in neither");

	# the rebuilt indexes agree with the tables, and nothing is duplicated
	my $by_seq = $node->safe_psql('postgres', q{
		SET enable_indexscan = off; SET enable_bitmapscan = off; SET enable_indexonlyscan = off;
		SELECT count(*) || '/' || count(DISTINCT (client, seq)) || '/' || coalesce(sum(delta), 0)
		  FROM history WHERE client > 0});
	my $by_index = $node->safe_psql('postgres', q{
		SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_indexonlyscan = off;
		SELECT count(*) || '/' || count(DISTINCT (client, seq)) || '/' || coalesce(sum(delta), 0)
		  FROM history WHERE client > 0});
	my ($n, $distinct) = split m{/}, $by_seq;
	ok($n == $distinct && $by_index eq $by_seq,
		"cycle $cycle: history has no duplicates and its index agrees ($by_seq vs $by_index)");

	my %kinds;
	$kinds{ $issued{$_}{kind} }++ for keys %acked;
	my $present = keys %hist;
	diag(sprintf('cycle %d: %.2f s run, issued %d, acked %d (s %d, p %d, m %d), present %d '
		  . '(%d committed without ack), lost %d%s',
		$cycle, $run, scalar(keys %issued), scalar(keys %acked), $kinds{s} // 0, $kinds{p} // 0,
		$kinds{m} // 0, $present, $present - (keys(%acked) - @lost), scalar(@lost), $loss));
	ok(keys(%acked) > 0, "cycle $cycle: the clients made progress");
	my ($bad_log) = slurp_file($node->logfile, $log_offset) =~ /^(.*(?:TRAP:|terminated by signal|PANIC).*)$/m;
	ok(!defined $bad_log, "cycle $cycle: no assertion failure, crash or PANIC in the server log")
	  or diag($bad_log);

	# fresh ids next cycle; cumulative checks from here on
	$old_hist = fingerprint('history', \@next_seq);
	$old_ledger = fingerprint('heap_ledger', \@next_seq);

	# the state is wrong from here on: more cycles would only repeat it
	if (!Test::More->builder->is_passing)
	{
		$failed_cycle = $cycle;
		diag("stopping after cycle $cycle: it failed");
		last;
	}
}
diag(sprintf('%d cycles in %.0f s', $failed_cycle // $cycles, time() - $t_start));

if ($can_register && !$failed_cycle)
{
	note($node->safe_psql('postgres', 'SELECT * FROM fastckpt_procedures'));
}

ok(!$node->log_contains('TRAP:|terminated by signal 11|PANIC'),
	'no assertion failure, segfault or PANIC in the log');

$node->stop;
done_testing();
