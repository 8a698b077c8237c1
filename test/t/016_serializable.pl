# SERIALIZABLE transactions on fastckpt tables that PostgreSQL's
# serializable snapshot isolation cancels at COMMIT.  That check runs after
# pg_fastckpt's pre-commit step has logged the transaction's rows (or its
# call), so each cancel must void what was logged with an ABORT record:
# after a crash, recovered from the log alone or from a checkpoint taken
# after the cancel, the cancelled change must not come back and the
# committed one must.  Plain SQL and calls of a registered function.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use FastckptTest;

my $node = fastckpt_node('serializable');
$node->safe_psql('postgres', q{
	CREATE TABLE doctors (name text PRIMARY KEY, on_call bool NOT NULL) USING fastckpt;
	CREATE FUNCTION go_off_duty(who text) RETURNS bigint LANGUAGE plpgsql AS $$
	DECLARE
		n bigint;
	BEGIN
		SELECT count(*) INTO STRICT n FROM doctors WHERE on_call;
		IF n >= 2 THEN
			UPDATE doctors SET on_call = false WHERE name = who;
		END IF;
		RETURN n;
	END $$;
	SELECT fastckpt_register_procedure('go_off_duty(text)');
});

sub log_counts
{
	return $node->safe_psql('postgres',
		'SELECT values_records, call_records, abort_records FROM fastckpt_stat_log');
}

# Two doctors go off duty at once, each after checking that two are on
# call: write skew, so the second to commit is cancelled at COMMIT.
sub write_skew
{
	my ($label, $how) = @_;
	my @s = map { $node->background_psql('postgres', on_error_stop => 0) } 1 .. 2;
	my @who = ('alice', 'bob');
	for my $i (0, 1)
	{
		$s[$i]->query_safe('BEGIN ISOLATION LEVEL SERIALIZABLE');
		if ($how eq 'sql')
		{
			$s[$i]->query_safe('SELECT count(*) FROM doctors WHERE on_call');
			$s[$i]->query_safe("UPDATE doctors SET on_call = false WHERE name = '$who[$i]'");
		}
		else
		{
			$s[$i]->query_safe("SELECT go_off_duty('$who[$i]')");
		}
	}
	$s[0]->query_safe('COMMIT');
	$s[1]->query('COMMIT');
	like($s[1]->{stderr}, qr/could not serialize access due to read\/write dependencies/,
		"$label: the second COMMIT is cancelled by serializable snapshot isolation");
	$_->quit for @s;
}

for my $from ('the log', 'a checkpoint')
{
	for my $how ('sql', 'call')
	{
		my $label = "$how, recovered from $from";
		$node->safe_psql('postgres', q{
			TRUNCATE doctors;
			INSERT INTO doctors VALUES ('alice', true), ('bob', true), ('carol', false);
		});
		my ($values0, $calls0, $aborts0) = split /\|/, log_counts();
		write_skew($label, $how);
		my ($values1, $calls1, $aborts1) = split /\|/, log_counts();

		# what was logged: both transactions' records, then one ABORT.  The
		# calls are row images too: each read a row the other was writing,
		# which a CALL record's replay in commit order could not reproduce.
		is($values1 - $values0, 2, "$label: both transactions logged their rows");
		is($calls1 - $calls0, 0, "$label: no CALL record");
		is($aborts1 - $aborts0, 1, "$label: the cancelled one was voided");

		my $want = "alice|f\nbob|t\ncarol|f";
		is($node->safe_psql('postgres', 'SELECT name, on_call FROM doctors ORDER BY name'),
			$want, "$label: before the crash, only the first change is there");
		$node->safe_psql('postgres', 'SELECT fastckpt_checkpoint()')
		  if $from eq 'a checkpoint';
		crash_postmaster($node);
		$node->start;
		wait_for_tables_open($node);
		is($node->safe_psql('postgres', 'SELECT name, on_call FROM doctors ORDER BY name'),
			$want, "$label: after a crash, the cancelled change did not come back");
	}
}

# Under load: clients withdraw 100 from one side of a pair of accounts
# after checking that the pair holds at least 100, and sometimes deposit.
# Any serial order keeps every pair's total at 0 or more; concurrent
# withdrawals from both sides of a pair are write skew, which
# SERIALIZABLE must cancel (pgbench retries them).  Then a crash: the
# recovered accounts are those of before it.
$node->safe_psql('postgres', q{
	CREATE TABLE pairs (pid int, side int, balance int NOT NULL, PRIMARY KEY (pid, side)) USING fastckpt;
	INSERT INTO pairs SELECT p, s, 100 FROM generate_series(1, 5) p, generate_series(0, 1) s;
});
my $script = $node->basedir . '/skew.sql';
PostgreSQL::Test::Utils::append_to_file($script, q{
\set p random(1, 5)
\set side random(0, 1)
\set deposit random(1, 10)
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT sum(balance) AS total FROM pairs WHERE pid = :p \gset
\if :deposit = 1
UPDATE pairs SET balance = balance + 100 WHERE pid = :p AND side = :side;
\elif :total >= 100
UPDATE pairs SET balance = balance - 100 WHERE pid = :p AND side = :side;
\endif
END;
});
my ($stdout, $stderr);
my $ok = IPC::Run::run(
	[ 'pgbench', '-n', '-c', '4', '-j', '2', '-T', '5', '--max-tries=1000', '-f', $script,
	  '-p', $node->port, '-h', $node->host, 'postgres' ],
	'>', \$stdout, '2>', \$stderr);
ok($ok, 'pgbench with withdrawals under SERIALIZABLE ran') or diag($stderr);
my ($retried) = $stdout =~ /number of transactions retried: (\d+)/;
ok(defined $retried && $retried > 0,
	'serialization failures happened and were retried') or diag($stdout);
note("withdrawals: " . ($stdout =~ /(number of transactions actually processed: \d+)/)[0]
	  . ", retried: " . ($retried // 'none'));
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM (SELECT pid FROM pairs GROUP BY pid HAVING sum(balance) < 0) s}),
	'0', 'no pair went below 0: no write skew got through');
my $before = $node->safe_psql('postgres', 'SELECT pid, side, balance FROM pairs ORDER BY 1, 2');
crash_postmaster($node);
$node->start;
wait_for_tables_open($node);
is($node->safe_psql('postgres', 'SELECT pid, side, balance FROM pairs ORDER BY 1, 2'),
	$before, 'after a crash, the accounts are those of before it');

$node->stop;
done_testing();
