# The crash-loop workload and its verification (DESIGN.md section 5),
# shared by test/t/004_crash_durability.pl and 007_checkpoint_crash.pl.
#
# Concurrent psql clients run TPC-B-like transactions -- plain SQL, a
# registered PL/pgSQL function (logged as CALL records, replayed by
# recovery, unless a check makes them fall back), and mixed ones
# that also write a heap table -- in both commit modes.  A test crashes the
# server its own way; after each restart verify() checks that:
#  - every transaction whose COMMIT returned to its client is there;
#  - every transaction is all there or not at all: balances agree with
#    history row by row, and a mixed transaction is in both history and the
#    heap ledger or in neither;
#  - only issued, never rolled-back transactions are there, with their own
#    values, and what earlier cycles recovered is unchanged.
#
# One cycle:
#   my $loop = FastckptCrashLoop->new(node => $node, ...);  # once
#   $loop->create_schema;
#   $loop->start_cycle("cycle $n");       # clients connect
#   $loop->pump($seconds, $until);         # keep them busy
#   my $how = $loop->crash_and_restart(kill_all => ..., power_loss => ...);
#   last unless $loop->verify($what, $how);
# and at the end $loop->finish.
package FastckptCrashLoop;

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use IO::Handle;
use Symbol qw(gensym);
use Time::HiRes qw(time usleep);
use FastckptTest;

# The cycle count and random seed of a crash test: FASTCKPT_CRASH_CYCLES,
# else 200 with FASTCKPT_LONG_TESTS=1, else 20; FASTCKPT_CRASH_TEST_SEED,
# else one from the clock.  Seeds rand() with it.
sub cycles_and_seed
{
	my $cycles = $ENV{FASTCKPT_CRASH_CYCLES} // ($ENV{FASTCKPT_LONG_TESTS} ? 200 : 20);
	my $seed = $ENV{FASTCKPT_CRASH_TEST_SEED} // (int(time() * 1000) ^ $$) % 1_000_000_000;
	srand($seed);
	return ($cycles, $seed);
}

# Settings a crash test's node needs, for fastckpt_node.  fsync = on (the
# test framework turns it off): with it off the log writer's fdatasync
# returns at once, leaving the power-loss model next to nothing to drop,
# and commits would group unlike on a real disk.  The power-loss model
# reads the durable position from the sync trace.
sub node_conf
{
	return q{
fsync = on
pg_fastckpt.test_sync_trace = on
pg_fastckpt.memory_limit = '1GB'
};
}

# Options: node (fastckpt_node's), am (table access method, default
# fastckpt), clients (4), branches (3), tellers (30), accounts (3000).
sub new
{
	my ($class, %opt) = @_;
	my $self = bless {
		node => $opt{node},
		am => $opt{am} // 'fastckpt',
		nclients => $opt{clients} // 4,
		nbranches => $opt{branches} // 3,
		ntellers => $opt{tellers} // 30,
		naccounts => $opt{accounts} // 3000,
		modes => [],
		can_register => 0,
		cycles => 0,
	}, $class;
	die "bad access method '$self->{am}'" unless $self->{am} =~ /^\w+$/;

	# Per client: first seq of the next cycle (clients count from 1).
	$self->{next_seq} = [ map { 1 } 0 .. $self->{nclients} ];

	# A client whose psql dies writes to a closed pipe: that must not kill us.
	$SIG{PIPE} = 'IGNORE';
	return $self;
}

# Tables, their rows, the function and the clients' role.
sub create_schema
{
	my ($self) = @_;
	my ($node, $am) = @$self{qw(node am)};
	my ($nbranches, $ntellers, $naccounts) = @$self{qw(nbranches ntellers naccounts)};

	# History has the ids and the rows each transaction touched, so that
	# every balance can be recomputed from it; only the clients' role writes.
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
	$self->{can_register} = $node->safe_psql('postgres',
		q{SELECT count(*) FROM pg_proc WHERE proname = 'fastckpt_register_procedure'});
	if ($self->{can_register})
	{
		# key lookups stay row reads on these small tables (see README)
		$node->safe_psql('postgres', q{
ALTER FUNCTION tpcb_tx(int,int,int,int,int,int) SET enable_seqscan = off;
SELECT fastckpt_register_procedure('tpcb_tx(int,int,int,int,int,int)');});
	}
	$self->{modes} = [ $node->safe_psql('postgres',
		q{SELECT current_setting('pg_fastckpt.commit_mode', true) IS NOT NULL}) eq 't'
	  ? ('strict', 'early_lock_release') : () ];
	my @modes = @{ $self->{modes} };
	diag('procedure registered: ' . ($self->{can_register} ? 'yes' : 'no (no fastckpt_register_procedure)')
		  . '; commit modes: ' . (@modes ? "@modes" : 'none (no pg_fastckpt.commit_mode)'));
	return;
}

# One transaction of client $c as psql input, and what it does.  Kinds:
# s = plain SQL, p = the function, m = mixed with the heap ledger,
# r = rolled back (must never be seen).  Plain ones sometimes roll back a
# subtransaction that changed the same account.
sub _gen_tx
{
	my ($self, $c, $seq) = @_;
	my @modes = @{ $self->{modes} };
	my $aid = 1 + int(rand($self->{naccounts}));
	my $tid = 1 + int(rand($self->{ntellers}));
	my $bid = 1 + int(rand($self->{nbranches}));
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

# The fingerprint (count, sum of deltas, sum of seqs) per client of the rows
# of $table from cycles before the seqs in @$below.
sub _fingerprint
{
	my ($self, $table, $below) = @_;
	my $where = join(' OR ', map { "(client = $_ AND seq < $below->[$_])" } 1 .. $self->{nclients});
	return $self->{node}->safe_psql('postgres', qq{
		SELECT string_agg(format('%s:%s/%s/%s', client, n, d, s), ' ' ORDER BY client)
		  FROM (SELECT client, count(*) n, sum(delta) d, sum(seq::bigint) s
		          FROM $table WHERE $where GROUP BY client) f});
}

# Start a cycle: the clients connect, each in a commit mode of its own.
# $name ("cycle 3") prefixes the names of this cycle's tests.
sub start_cycle
{
	my ($self, $name) = @_;
	my $node = $self->{node};
	my @modes = @{ $self->{modes} };
	$self->{t_start} //= time();
	my $cur = $self->{cur} = {
		name => $name,
		start_seq => [ @{ $self->{next_seq} } ],
		log_offset => -s $node->logfile,
		issued => {},
		acked => {},
		clients => [],
	};

	for my $c (1 .. $self->{nclients})
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
		push @{ $cur->{clients} }, $cl;
	}
	return;
}

# Hand a client what of its input its pipe takes, without blocking, and
# collect its output.
sub _feed
{
	my ($cl) = @_;
	my $n = syswrite($cl->{pipe}, $cl->{in});
	substr($cl->{in}, 0, $n, '') if $n;
	eval { $cl->{h}->pump_nb; };
	return;
}

# Keep the clients' input topped up for $seconds, or until $until (if
# given) returns true; it is called between rounds, so it should be quick.
# Returns whether $until became true.
sub pump
{
	my ($self, $seconds, $until) = @_;
	my $cur = $self->{cur};
	my $deadline = time() + $seconds;
	while (time() < $deadline)
	{
		return 1 if $until && $until->();
		for my $cl (@{ $cur->{clients} })
		{
			while (length($cl->{in}) < 16384)
			{
				my $seq = $self->{next_seq}[ $cl->{c} ]++;
				my $tx = $self->_gen_tx($cl->{c}, $seq);
				$cur->{issued}{"$cl->{c}:$seq"} = $tx;
				$cl->{in} .= $tx->{sql};
			}
			_feed($cl);
		}
		usleep(2_000);
	}
	return 0;
}

# Wait for the clients' psql to exit and collect the acks: an ack line
# proves COMMIT returned.
sub _collect_clients
{
	my ($self) = @_;
	my $cur = $self->{cur};
	my @client_errors;
	for my $cl (@{ $cur->{clients} })
	{
		eval { $cl->{h}->finish; 1 } or do {
			push @client_errors, "client $cl->{c}: psql did not exit: $@";
			eval { $cl->{h}->kill_kill };
		};
		while ($cl->{out} =~ /^ack $cl->{c} (\d+)$/mg)
		{
			my $id = "$cl->{c}:$1";
			$cur->{acked}{$id} = 1;
			# keep what psql printed around an ack nobody issued, for the report
			$cur->{ack_context}{$id} = substr($cl->{out}, $-[0] < 120 ? 0 : $-[0] - 120, 240)
			  unless $cur->{issued}{$id};
		}
		# errors other than the lost connection mean the workload broke
		for my $line (split /\n/, $cl->{err})
		{
			push @client_errors, "client $cl->{c}: $line"
			  if $line =~ /ERROR/ && $line !~ /postmaster|terminat|shut/i;
		}
	}
	ok(!@client_errors, "$cur->{name}: clients ran without SQL errors")
	  or diag(join("\n", @client_errors[ 0 .. ($#client_errors < 9 ? $#client_errors : 9) ]));
	return;
}

# End the cycle without a crash: the clients run what they were given and
# exit.  Their input is handed over in full first: pump cuts it anywhere,
# and psql would take the cut-off statement at EOF for a syntax error.
sub stop_clients
{
	my ($self) = @_;
	my @clients = @{ $self->{cur}{clients} };
	my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
	while (grep { length($_->{in}) > 0 } @clients)
	{
		die 'clients did not take their input' if time() > $deadline;
		_feed($_) for @clients;
		usleep(2_000);
	}
	close($_->{pipe}) for @clients;
	$self->_collect_clients;
	return;
}

# kill -9 the postmaster (with kill_all, every server process at once: see
# crash_postmaster), collect the acks, apply the power-loss model if
# power_loss is true, restart and wait for recovery to open the tables.
# Returns how the crash went, for verify's report.
sub crash_and_restart
{
	my ($self, %opt) = @_;
	my ($node, $cur) = @$self{qw(node cur)};
	my $all_gone = crash_postmaster($node, $opt{kill_all});
	close($_->{pipe}) for @{ $cur->{clients} };
	ok($all_gone, "$cur->{name}: all server processes exited after kill -9");
	$self->_collect_clients;
	$self->{cycles}++;
	$cur->{crashed} = 1;

	my $how = $opt{kill_all} ? ', all processes killed' : '';
	if ($opt{power_loss})
	{
		my $r = simulate_log_power_loss($node);
		# bytes cut include whatever zeros a segment was preallocated with
		$how .= sprintf(', power loss: durable up to %X, %d of %d segments deleted, %d truncated, %d bytes cut',
			$r->{synced}, $r->{deleted}, $r->{segments}, $r->{truncated}, $r->{bytes});
	}

	# whatever the kill interrupted, the files it left are whole: the
	# checkpoints the control file names, and a log that ends cleanly.  The
	# log is written in order, and the power-loss model cuts it at one
	# position, so no valid record lies past its end either.
	if ($self->{am} eq 'fastckpt')
	{
		my ($rc, $out, $err) = verify_files($node->data_dir);
		is($rc, 0, "$cur->{name}: pg_fastckpt_verify finds no damage in the crashed data directory")
		  or diag("pg_fastckpt_verify:\n$out$err");
		unlike($err, qr/warning: log:/, "$cur->{name}: no valid log record past the end of the log");
	}

	$node->start;
	wait_for_tables_open($node);
	return $how;
}

# Check what the cycle left against what the clients were told, report
# ("<name>: <$what>, issued ..., lost N<$how>"), and remember the state for
# the next cycle's checks.  Returns false once any test has failed: the
# state is wrong from there on and more cycles would only repeat it.
sub verify
{
	my ($self, $what, $how) = @_;
	my ($node, $cur, $nclients) = @$self{qw(node cur nclients)};
	my ($name, $issued, $acked, $start_seq) = @$cur{qw(name issued acked start_seq)};
	my ($nbranches, $ntellers, $naccounts) = @$self{qw(nbranches ntellers naccounts)};

	# what this cycle left in history and in the heap ledger
	my $this_cycle = join(' OR ', map { "(client = $_ AND seq >= $start_seq->[$_])" } 1 .. $nclients);
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
	for my $id (sort keys %$acked)
	{
		my $tx = $issued->{$id};
		if (!$tx)
		{
			push @lost, "$id: acked but never issued; psql printed around it: "
			  . ($cur->{ack_context}{$id} // '') =~ s/\n/\\n/gr;
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
	ok(!@lost, "$name: all " . scalar(keys %$acked) . ' acknowledged transactions survived')
	  or diag(scalar(@lost) . " lost, e.g.:\n" . join("\n", @lost[ 0 .. ($#lost < 9 ? $#lost : 9) ]));

	# only issued, committed transactions, with their own values
	my @bogus;
	for my $id (sort keys %hist)
	{
		my $tx = $issued->{$id};
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
		my $tx = $issued->{$id};
		push @bogus, "$id: in heap_ledger, never issued" if !$tx;
		push @bogus, "$id: rolled-back transaction in heap_ledger" if $tx && $tx->{kind} eq 'r';
		push @bogus, "$id: heap_ledger delta $ledger{$id}, issued $tx->{delta}"
		  if $tx && $tx->{kind} eq 'm' && $ledger{$id} != $tx->{delta};
	}
	ok(!@bogus, "$name: recovered rows are issued, committed transactions with their values")
	  or diag(join("\n", @bogus[ 0 .. ($#bogus < 9 ? $#bogus : 9) ]));

	# what earlier cycles recovered is still exactly there
	if (defined $self->{old_hist})
	{
		is($self->_fingerprint('history', $start_seq), $self->{old_hist},
			"$name: history of earlier cycles unchanged");
		is($self->_fingerprint('heap_ledger', $start_seq), $self->{old_ledger},
			"$name: heap_ledger of earlier cycles unchanged");
	}

	# no partial transaction: totals and every single balance agree with history
	is($node->safe_psql('postgres', qq{
		SELECT (SELECT count(*) FROM branches) || ' ' || (SELECT count(*) FROM tellers)
			|| ' ' || (SELECT count(*) FROM accounts) || ' '
			|| ((SELECT sum(bbalance) FROM branches) = (SELECT coalesce(sum(delta), 0) FROM history)
			AND (SELECT sum(tbalance) FROM tellers) = (SELECT coalesce(sum(delta), 0) FROM history)
			AND (SELECT sum(abalance) FROM accounts) = (SELECT coalesce(sum(delta), 0) FROM history))}),
		"$nbranches $ntellers $naccounts true",
		"$name: all rows there; sum(bbalance) = sum(tbalance) = sum(abalance) = sum(delta)");
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
		'0', "$name: every balance equals the sum of its history rows");
	is($node->safe_psql('postgres', q{
		SELECT count(*) FROM (SELECT client, seq, delta FROM history WHERE kind = 'm') h
		  FULL JOIN heap_ledger l USING (client, seq)
		 WHERE h.delta IS DISTINCT FROM l.delta}),
		'0', "$name: mixed transactions are in both history and heap_ledger or in neither");

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
		"$name: history has no duplicates and its index agrees ($by_seq vs $by_index)");

	# calls logged as CALL records were run again by recovery
	my $replayed = 0;
	if ($cur->{crashed} && $self->{can_register})
	{
		$replayed = $node->safe_psql('postgres', 'SELECT calls_replayed FROM fastckpt_stat_recovery');
		$self->{calls_replayed} += $replayed;
	}

	my %kinds;
	$kinds{ $issued->{$_}{kind} }++ for keys %$acked;
	my $present = keys %hist;
	diag(sprintf('%s: %s, issued %d, acked %d (s %d, p %d, m %d), present %d '
		  . '(%d committed without ack), lost %d, calls replayed %d%s',
		$name, $what, scalar(keys %$issued), scalar(keys %$acked), $kinds{s} // 0, $kinds{p} // 0,
		$kinds{m} // 0, $present, $present - (keys(%$acked) - @lost), scalar(@lost), $replayed,
		$how // ''));
	ok(keys(%$acked) > 0, "$name: the clients made progress");
	my ($bad_log) = slurp_file($node->logfile, $cur->{log_offset})
	  =~ /^(.*(?:TRAP:|terminated by signal|PANIC).*)$/m;
	ok(!defined $bad_log, "$name: no assertion failure, crash or PANIC in the server log")
	  or diag($bad_log);

	# fresh ids next cycle; cumulative checks from here on
	$self->{old_hist} = $self->_fingerprint('history', $self->{next_seq});
	$self->{old_ledger} = $self->_fingerprint('heap_ledger', $self->{next_seq});
	$self->{t_cycles} = time() - $self->{t_start} if $cur->{crashed};

	if (!Test::More->builder->is_passing)
	{
		$self->{failed} = $name;
		diag("stopping after $name: it failed");
		return 0;
	}
	return 1;
}

# The crash cycles done so far.
sub cycles
{
	my ($self) = @_;
	return $self->{cycles};
}

# The name of the cycle that failed, if one did.
sub failed
{
	my ($self) = @_;
	return $self->{failed};
}

# After the last cycle: report and check the whole server log.
sub finish
{
	my ($self) = @_;
	my $node = $self->{node};
	diag(sprintf('%d cycles in %.0f s', $self->{cycles}, $self->{t_cycles} // 0));
	if ($self->{can_register} && !$self->{failed})
	{
		note($node->safe_psql('postgres', 'SELECT * FROM fastckpt_procedures'));
		ok(($self->{calls_replayed} // 0) > 0 || $self->{am} ne 'fastckpt',
			'recovery replayed logged calls (' . ($self->{calls_replayed} // 0) . ' over all cycles)');
	}
	ok(!$node->log_contains('TRAP:|terminated by signal 11|PANIC'),
		'no assertion failure, segfault or PANIC in the log');
	return;
}

1;
