-- TPC-B as one PL/pgSQL function: the same work as pgbench's built-in
-- script, in one round trip.  Used by the benchmarks and the pgbench test.
--
-- Written to the rules of registered procedures (README, "Registered
-- procedures"), so that on fastckpt tables a call can be logged as one CALL
-- record: the history row's time is fastckpt_txn_time() (the logged
-- transaction time on replay), and every statement finds its rows through
-- an index (a sequential scan reads the whole table, which any concurrent
-- writer of that table then conflicts with).  On heap tables it is an
-- ordinary function.
CREATE OR REPLACE FUNCTION tpcb(p_aid int, p_bid int, p_tid int, p_delta int)
RETURNS int
LANGUAGE plpgsql
SET enable_seqscan = off
AS $$
DECLARE
	balance int;
BEGIN
	UPDATE pgbench_accounts SET abalance = abalance + p_delta WHERE aid = p_aid;
	SELECT abalance INTO balance FROM pgbench_accounts WHERE aid = p_aid;
	UPDATE pgbench_tellers SET tbalance = tbalance + p_delta WHERE tid = p_tid;
	UPDATE pgbench_branches SET bbalance = bbalance + p_delta WHERE bid = p_bid;
	INSERT INTO pgbench_history (tid, bid, aid, delta, mtime)
		VALUES (p_tid, p_bid, p_aid, p_delta, fastckpt_txn_time() AT TIME ZONE 'UTC');
	RETURN balance;
END;
$$;
