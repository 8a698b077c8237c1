# INSERT ... ON CONFLICT whose speculative insertion loses the race: the
# row is super-deleted at once, VACUUM may free its slot and another
# transaction may take the slot before the inserter commits.  The
# inserter's commit must not log that other transaction's row: here the
# other transaction rolls back, and its row must not come back after a
# crash.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use FastckptTest;

my $node = fastckpt_node('insert_conflict');

# The unique index's key goes through gate(): the second time a statement
# of a transaction that set test.gate calls it (the speculative insertion's
# index entry, after the ON CONFLICT pre-check), it waits for advisory
# lock 42, so the test can slip a conflicting insert in between.
$node->safe_psql('postgres', q{
	CREATE FUNCTION gate(int) RETURNS int IMMUTABLE LANGUAGE plpgsql AS $$
	DECLARE
		n int := coalesce(nullif(current_setting('test.calls', true), ''), '0')::int + 1;
	BEGIN
		IF current_setting('test.gate', true) = 'on' THEN
			PERFORM set_config('test.calls', n::text, true);
			IF n = 2 THEN
				PERFORM pg_advisory_lock_shared(42);
				PERFORM pg_advisory_unlock_shared(42);
			END IF;
		END IF;
		RETURN $1;
	END $$;
});

# One race; the recovery then starts from the log alone or from a
# checkpoint taken after the inserter's commit.
for my $from ('the log', 'a checkpoint')
{
	my $t = $from eq 'the log' ? 't_log' : 't_ckpt';
	$node->safe_psql('postgres', qq{
		CREATE TABLE $t (id int, v text) USING fastckpt;
		CREATE UNIQUE INDEX ${t}_key ON $t (gate(id));
		INSERT INTO $t VALUES (0, 'seed');
	});

	my $control = $node->background_psql('postgres');
	$control->query_safe('SELECT pg_advisory_lock(42)');

	# the inserter passes the pre-check and waits inside its index insertion
	my $inserter = $node->background_psql('postgres', on_error_stop => 0);
	my $inserter_pid = $inserter->query_safe('SELECT pg_backend_pid()');
	$inserter->query_safe('BEGIN');
	$inserter->query_safe(q{SELECT set_config('test.gate', 'on', true)});
	$inserter->{stdin} .=
	  "INSERT INTO $t VALUES (1, 'loser') ON CONFLICT (gate(id)) DO NOTHING;\n\\echo inserted\n";
	$inserter->{run}->pump_nb;
	$node->poll_query_until('postgres', qq{
		SELECT wait_event = 'advisory' FROM pg_stat_activity WHERE pid = $inserter_pid})
	  or die 'the inserter never reached its index insertion';

	# the winner commits the same key; the inserter super-deletes its row
	$node->safe_psql('postgres', qq{INSERT INTO $t VALUES (1, 'winner')});
	$control->query_safe('SELECT pg_advisory_unlock(42)');
	$inserter->{run}->pump until $inserter->{stdout} =~ /inserted/;
	unlike($inserter->{stderr}, qr/ERROR/, "$from: the losing insertion did nothing");

	# VACUUM frees the super-deleted slot, and another transaction takes it
	$node->safe_psql('postgres', "VACUUM $t");
	my $other = $node->background_psql('postgres');
	$other->query_safe('BEGIN');
	$other->query_safe(qq{INSERT INTO $t VALUES (2, 'rolled back')});

	# the inserter commits; then the other transaction rolls back
	$inserter->query_safe('COMMIT');
	$other->query_safe('ROLLBACK');
	$other->quit;
	$inserter->quit;
	$control->quit;

	my $want = "0|seed\n1|winner";
	is($node->safe_psql('postgres', "SELECT id, v FROM $t ORDER BY id"),
		$want, "$from: before the crash, the rolled-back row is not there");
	$node->safe_psql('postgres', 'SELECT fastckpt_checkpoint()')
	  if $from eq 'a checkpoint';
	crash_postmaster($node);
	$node->start;
	wait_for_tables_open($node);
	is($node->safe_psql('postgres', "SELECT id, v FROM $t ORDER BY id"),
		$want, "$from: after a crash, the rolled-back row did not come back");
}

$node->stop;
done_testing();
