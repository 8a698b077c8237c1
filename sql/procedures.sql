--
-- procedures: registering routines for call logging, and which calls pass
-- the checks that would let them be logged as one CALL record.  Each
-- fallback reason is produced here once (read conflicts need a second
-- session: test/isolation/specs/call_read_conflict.spec).
--
SELECT fastckpt_stat_reset();

CREATE TABLE pr_accounts (aid int PRIMARY KEY, abalance int NOT NULL) USING fastckpt;
CREATE TABLE pr_history (aid int, delta int, mtime timestamptz) USING fastckpt;
CREATE TABLE pr_heap (aid int, delta int) USING heap;
INSERT INTO pr_accounts SELECT g, 0 FROM generate_series(1, 10) g;

-- a TPC-B style routine that follows the rules
CREATE FUNCTION pr_transfer(p_aid int, p_delta int) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
	bal int;
BEGIN
	UPDATE pr_accounts SET abalance = abalance + p_delta WHERE aid = p_aid;
	SELECT abalance INTO bal FROM pr_accounts WHERE aid = p_aid;
	INSERT INTO pr_history VALUES (p_aid, p_delta, fastckpt_txn_time());
	RETURN bal;
END $$;

-- what cannot be registered
SELECT fastckpt_register_procedure('fastckpt_random()');
SELECT fastckpt_register_procedure('sum(int)');
SELECT fastckpt_register_procedure('generate_series(int, int)');
CREATE FUNCTION pr_trig() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RETURN NEW; END';
SELECT fastckpt_register_procedure('pr_trig()');
DROP FUNCTION pr_trig();
CREATE FUNCTION pr_not_mine() RETURNS int LANGUAGE sql AS 'SELECT 1';
CREATE ROLE pr_other;
GRANT USAGE ON SCHEMA public TO pr_other;
SET ROLE pr_other;
SELECT fastckpt_register_procedure('pr_not_mine()');
RESET ROLE;

SELECT fastckpt_register_procedure('pr_transfer(int, int)');
SELECT fastckpt_register_procedure('pr_transfer(int, int)');	-- again: fine
SELECT routine, language, redefined, calls FROM fastckpt_procedures;

-- a clean call, as a top-level SELECT and as a prepared statement
SELECT pr_transfer(1, 10);
PREPARE pr_call(int, int) AS SELECT pr_transfer($1, $2);
EXECUTE pr_call(2, 5);	-- a call too, as through the protocol
SELECT routine, calls, validated_calls, call_records, value_records, fallbacks, last_fallback
  FROM fastckpt_procedures;

-- writes_outside_call: another statement of the transaction wrote too
BEGIN;
INSERT INTO pr_history VALUES (0, 0, NULL);
SELECT pr_transfer(3, 1);
COMMIT;
BEGIN;
SELECT pr_transfer(3, 1);
UPDATE pr_accounts SET abalance = abalance WHERE aid = 4;
COMMIT;
SELECT calls, validated_calls, fallbacks, last_fallback FROM fastckpt_procedures;

-- arguments: a value that is not fixed
SELECT pr_transfer(5, (random() * 0)::int);
SELECT fallbacks->'arguments' AS arguments FROM fastckpt_procedures;

-- redefined: changed after registration, until registered again
CREATE OR REPLACE FUNCTION pr_transfer(p_aid int, p_delta int) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
	bal int;
BEGIN
	UPDATE pr_accounts SET abalance = abalance + p_delta WHERE aid = p_aid
	RETURNING abalance INTO bal;
	INSERT INTO pr_history VALUES (p_aid, p_delta, fastckpt_txn_time());
	RETURN bal;
END $$;
SELECT redefined FROM fastckpt_procedures;
SELECT pr_transfer(6, 1);
SELECT fallbacks->'redefined' AS redefined_calls FROM fastckpt_procedures;
SELECT fastckpt_register_procedure('pr_transfer(int, int)');
SELECT redefined FROM fastckpt_procedures;
SELECT pr_transfer(6, 1);
SELECT validated_calls FROM fastckpt_procedures;

-- recreated with the same definition (as a restore of pg_dump does): still
-- registered; the fingerprint does not depend on the caller's search_path
SELECT fastckpt_routine_fingerprint('pr_transfer(int, int)') AS fp \gset
SET search_path = pg_catalog;
SELECT public.fastckpt_routine_fingerprint('public.pr_transfer(int, int)') = :'fp' AS same_fingerprint;
RESET search_path;
-- nor on its output settings, which print an argument's DEFAULT
CREATE FUNCTION pr_dated(p_day date DEFAULT '2024-03-01', p_at timestamptz DEFAULT '2024-03-01 12:00+00',
						 p_for interval DEFAULT '1 day 2 hours', p_x float8 DEFAULT 0.1) RETURNS int
LANGUAGE sql AS $$ SELECT 1 $$;
SELECT fastckpt_routine_fingerprint('pr_dated(date, timestamptz, interval, float8)') AS fp_dated \gset
BEGIN;
SET LOCAL DateStyle = 'German, DMY';
SET LOCAL TimeZone = 'Asia/Kolkata';
SET LOCAL IntervalStyle = 'sql_standard';
SET LOCAL extra_float_digits = 0;
SELECT fastckpt_routine_fingerprint('pr_dated(date, timestamptz, interval, float8)') = :'fp_dated' AS same_fingerprint;
COMMIT;
DROP FUNCTION pr_dated;
SELECT xmin AS version FROM pg_proc WHERE oid = 'pr_transfer(int, int)'::regprocedure \gset
CREATE OR REPLACE FUNCTION pr_transfer(p_aid int, p_delta int) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
	bal int;
BEGIN
	UPDATE pr_accounts SET abalance = abalance + p_delta WHERE aid = p_aid
	RETURNING abalance INTO bal;
	INSERT INTO pr_history VALUES (p_aid, p_delta, fastckpt_txn_time());
	RETURN bal;
END $$;
SELECT xmin <> :'version' AS new_version FROM pg_proc WHERE oid = 'pr_transfer(int, int)'::regprocedure;
SELECT redefined FROM fastckpt_procedures;
SELECT pr_transfer(6, 1);
SELECT validated_calls, fallbacks->'redefined' AS redefined_calls FROM fastckpt_procedures;
-- a changed setting is a changed definition
ALTER FUNCTION pr_transfer(int, int) SET work_mem = '8MB';
SELECT redefined FROM fastckpt_procedures;
SELECT pr_transfer(6, 1);
SELECT validated_calls, fallbacks->'redefined' AS redefined_calls FROM fastckpt_procedures;
ALTER FUNCTION pr_transfer(int, int) RESET work_mem;
SELECT redefined FROM fastckpt_procedures;

-- non_fastckpt_relation: a heap table inside the call
CREATE FUNCTION pr_with_heap(p_aid int) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	UPDATE pr_accounts SET abalance = abalance + 1 WHERE aid = p_aid;
	INSERT INTO pr_heap VALUES (p_aid, 1);
END $$;
SELECT fastckpt_register_procedure('pr_with_heap(int)');
SELECT pr_with_heap(7);
-- ... and a temporary fastckpt table: it is gone when replay would read it
CREATE TEMP TABLE pr_temp_rates (aid int, rate int) USING fastckpt;
INSERT INTO pr_temp_rates VALUES (8, 3);
CREATE FUNCTION pr_with_temp(p_aid int) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	UPDATE pr_accounts
	   SET abalance = abalance + (SELECT rate FROM pr_temp_rates WHERE aid = p_aid)
	 WHERE aid = p_aid;
END $$;
SELECT fastckpt_register_procedure('pr_with_temp(int)');
SELECT pr_with_temp(8);
SELECT calls, validated_calls, call_records, value_records, last_fallback
  FROM fastckpt_procedures WHERE routine = 'pr_with_temp(int)'::regprocedure;
SELECT abalance FROM pr_accounts WHERE aid = 8;
-- a call that writes only a temporary table is counted too
CREATE FUNCTION pr_temp_only(p_aid int) RETURNS void
LANGUAGE sql AS $$ UPDATE pr_temp_rates SET rate = rate + 1 WHERE aid = p_aid $$;
SELECT fastckpt_register_procedure('pr_temp_only(int)');
SELECT pr_temp_only(8);
SELECT calls, validated_calls, call_records, value_records, last_fallback
  FROM fastckpt_procedures WHERE routine = 'pr_temp_only(int)'::regprocedure;

-- nondeterministic: the clock in a query, random() in a PL/pgSQL
-- expression, a sequence, a user trigger, an unregistered routine
CREATE FUNCTION pr_clock(p_aid int) RETURNS void
LANGUAGE sql AS $$
	INSERT INTO pr_history VALUES (p_aid, 0, now());
$$;
CREATE FUNCTION pr_dice(p_aid int) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	d int;
BEGIN
	d := (random() * 0)::int;
	UPDATE pr_accounts SET abalance = abalance + d WHERE aid = p_aid;
END $$;
CREATE SEQUENCE pr_seq;
CREATE FUNCTION pr_numbered(p_aid int) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO pr_history VALUES (p_aid, nextval('pr_seq')::int, NULL);
END $$;
CREATE FUNCTION pr_helper(p_aid int) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	UPDATE pr_accounts SET abalance = abalance + 1 WHERE aid = p_aid;
END $$;
CREATE FUNCTION pr_outer(p_aid int) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pr_helper(p_aid);
END $$;
SELECT fastckpt_register_procedure('pr_clock(int)');
SELECT fastckpt_register_procedure('pr_dice(int)');
SELECT fastckpt_register_procedure('pr_numbered(int)');
SELECT fastckpt_register_procedure('pr_outer(int)');
SELECT pr_clock(1);
SELECT pr_dice(1);
SELECT pr_numbered(1);
SELECT pr_outer(1);
-- registering the helper too makes the outer routine clean
SELECT fastckpt_register_procedure('pr_helper(int)');
SELECT pr_outer(1);

CREATE TABLE pr_audited (aid int, n int) USING fastckpt;
CREATE FUNCTION pr_audit_trigger() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	NEW.n := 1;
	RETURN NEW;
END $$;
CREATE TRIGGER pr_audit BEFORE INSERT ON pr_audited
	FOR EACH ROW EXECUTE FUNCTION pr_audit_trigger();
CREATE FUNCTION pr_insert_audited(p_aid int) RETURNS void
LANGUAGE sql AS 'INSERT INTO pr_audited VALUES (p_aid, 0)';
SELECT fastckpt_register_procedure('pr_insert_audited(int)');
SELECT pr_insert_audited(1);

-- settings that immutable output functions read (float8out, byteaout), or
-- that change how a routine's queries parse: a CALL record carries most
-- (test 009 replays them); standard_conforming_strings changes how
-- PL/pgSQL scans a routine, which it keeps: a call made with it falls back
SET extra_float_digits = 3;	-- the same text as the default
SELECT pr_outer(1);
SET extra_float_digits = 0;
SELECT pr_outer(1);
RESET extra_float_digits;
SET bytea_output = escape;
SELECT pr_outer(1);
RESET bytea_output;
SET standard_conforming_strings = off;
SELECT pr_outer(1);
RESET standard_conforming_strings;
SELECT calls, validated_calls, fallbacks->'nondeterministic' AS nondeterministic
  FROM fastckpt_procedures WHERE routine = 'pr_outer(int)'::regprocedure;

-- rows taken in the plan's order: which ones depends on the plan, and
-- replay may plan otherwise (other statistics, other settings), so a LIMIT,
-- or a SELECT ... INTO without STRICT (also EXECUTE ... INTO) that may
-- find several rows, falls back; an INTO by a whole unique key (index or
-- sequential scan, FOR UPDATE or not) does not
CREATE FUNCTION pr_pick_limit(p_lo int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	v int;
BEGIN
	SELECT aid INTO v FROM pr_accounts WHERE abalance >= p_lo LIMIT 1;
	UPDATE pr_accounts SET abalance = abalance + 1 WHERE aid = v;
	RETURN v;
END $$;
CREATE FUNCTION pr_pick_first(p_lo int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	v int;
BEGIN
	SELECT aid INTO v FROM pr_accounts WHERE abalance >= p_lo;
	UPDATE pr_accounts SET abalance = abalance + 1 WHERE aid = v;
	RETURN v;
END $$;
CREATE FUNCTION pr_pick_key(p_aid int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	v int;
BEGIN
	SELECT abalance INTO v FROM pr_accounts WHERE aid = p_aid FOR UPDATE;
	UPDATE pr_accounts SET abalance = v + 1 WHERE aid = p_aid;
	RETURN v;
END $$;
CREATE FUNCTION pr_pick_dynamic(p_lo int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	v int;
BEGIN
	EXECUTE 'SELECT aid FROM pr_accounts WHERE abalance >= $1' INTO v USING p_lo;
	UPDATE pr_accounts SET abalance = abalance + 1 WHERE aid = v;
	RETURN v;
END $$;
SELECT fastckpt_register_procedure(f) FROM unnest(ARRAY['pr_pick_limit(int)', 'pr_pick_first(int)',
	'pr_pick_key(int)', 'pr_pick_dynamic(int)']::regprocedure[]) f;
SELECT pr_pick_limit(-1000);
SELECT pr_pick_first(-1000);
SELECT pr_pick_key(9);
SELECT pr_pick_dynamic(-1000);
SELECT routine, calls, validated_calls, fallbacks FROM fastckpt_procedures
 WHERE routine::text LIKE 'pr_pick%' ORDER BY routine::text;

-- but the first value of an index's column, its earlier columns pinned
-- (min(), max(), ORDER BY it LIMIT 1), is the same whichever of several
-- equal rows comes first, unless equal values may look different
-- (numeric: 1 = 1.0): no fallback for it.  Another column of the first row
-- by a column with ties does fall back.
CREATE TABLE pr_orders (w int, d int, o int, note text, amount numeric,
	PRIMARY KEY (w, d, o)) USING fastckpt;
INSERT INTO pr_orders SELECT w, d, o, 'n' || (o % 7), (o % 5)::numeric
  FROM generate_series(1, 3) w, generate_series(1, 10) d, generate_series(1, 300) o;
CREATE INDEX pr_orders_amount ON pr_orders (amount);
ANALYZE pr_orders;
EXPLAIN (COSTS OFF) SELECT min(o) FROM pr_orders WHERE w = 1 AND d = 2;
EXPLAIN (COSTS OFF) SELECT o FROM pr_orders WHERE w = 1 AND d = 2 ORDER BY o DESC LIMIT 1;
EXPLAIN (COSTS OFF) SELECT max(amount) FROM pr_orders;
EXPLAIN (COSTS OFF) SELECT note FROM pr_orders WHERE w = 1 ORDER BY d LIMIT 1;
CREATE FUNCTION pr_deliver(p_w int, p_d int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	first_o int;
	last_o int;
	top_w int;
BEGIN
	SELECT min(o) INTO first_o FROM pr_orders WHERE w = p_w AND d = p_d;
	SELECT o INTO last_o FROM pr_orders WHERE w = p_w AND d = p_d ORDER BY o DESC LIMIT 1;
	SELECT max(w) INTO top_w FROM pr_orders;
	DELETE FROM pr_orders WHERE w = p_w AND d = p_d AND o = first_o;
	RETURN last_o - first_o + top_w;
END $$;
CREATE FUNCTION pr_top_amount(p_w int) RETURNS numeric LANGUAGE plpgsql AS $$
DECLARE
	a numeric;
BEGIN
	SELECT max(amount) INTO a FROM pr_orders;
	UPDATE pr_orders SET amount = a WHERE w = p_w AND d = 1 AND o = 1;
	RETURN a;
END $$;
CREATE FUNCTION pr_first_note(p_w int) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	n text;
BEGIN
	SELECT note INTO n FROM pr_orders WHERE w = p_w ORDER BY d LIMIT 1;
	UPDATE pr_orders SET note = n WHERE w = p_w AND d = 1 AND o = 2;
	RETURN n;
END $$;
SELECT fastckpt_register_procedure(f) FROM unnest(ARRAY['pr_deliver(int,int)',
	'pr_top_amount(int)', 'pr_first_note(int)']::regprocedure[]) f;
SELECT pr_deliver(1, 2);
SELECT pr_deliver(1, 2);
SELECT pr_top_amount(1);
SELECT pr_first_note(1);
-- EXECUTE is a call only with constant parameters: a computed one could
-- run queries before the call begins
PREPARE pr_deliver_stmt(int) AS SELECT pr_deliver(1, $1);
EXECUTE pr_deliver_stmt(3);
EXECUTE pr_deliver_stmt(2 + 1);
DEALLOCATE pr_deliver_stmt;
SELECT routine, calls, validated_calls, fallbacks FROM fastckpt_procedures
 WHERE routine IN ('pr_deliver(int,int)'::regprocedure, 'pr_top_amount(int)'::regprocedure,
	'pr_first_note(int)'::regprocedure) ORDER BY routine::text;

-- aggregates, groups and windows whose result depends on the order rows
-- come in (ties, floating-point rounding, which of several equal values is
-- kept) fall back too: replay may feed the rows in another order
CREATE FUNCTION pr_order_free(p_aid int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	c bigint;
	s bigint;
	m int;
	a numeric;
	b bool;
	g bigint;
BEGIN
	SELECT count(*), sum(abalance), min(aid), avg(abalance), bool_or(abalance > 0)
	  INTO STRICT c, s, m, a, b FROM pr_accounts;
	SELECT count(*) INTO STRICT g FROM (SELECT abalance FROM pr_accounts GROUP BY abalance) q;
	UPDATE pr_accounts SET abalance = abalance + (c - c) + (g - g) WHERE aid = p_aid;
	RETURN 0;
END $$;
CREATE FUNCTION pr_order_text(p_aid int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	t text;
BEGIN
	SELECT string_agg(aid::text, ',') INTO STRICT t FROM pr_accounts;
	UPDATE pr_accounts SET abalance = abalance + length(t) - length(t) WHERE aid = p_aid;
	RETURN 0;
END $$;
CREATE FUNCTION pr_order_float(p_aid int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	f float8;
BEGIN
	SELECT sum(abalance * 0.1::float8) INTO STRICT f FROM pr_accounts;
	UPDATE pr_accounts SET abalance = abalance + (f * 0)::int WHERE aid = p_aid;
	RETURN 0;
END $$;
CREATE FUNCTION pr_order_numeric(p_aid int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	n numeric;
BEGIN
	SELECT min(abalance::numeric) INTO STRICT n FROM pr_accounts;
	UPDATE pr_accounts SET abalance = abalance + (n * 0)::int WHERE aid = p_aid;
	RETURN 0;
END $$;
CREATE FUNCTION pr_order_distinct_on(p_aid int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	s bigint;
BEGIN
	SELECT sum(aid) INTO STRICT s
	  FROM (SELECT DISTINCT ON (abalance) aid FROM pr_accounts ORDER BY abalance) d;
	UPDATE pr_accounts SET abalance = abalance + (s - s) WHERE aid = p_aid;
	RETURN 0;
END $$;
CREATE FUNCTION pr_order_window(p_aid int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	s bigint;
BEGIN
	SELECT sum(aid * rn) INTO STRICT s
	  FROM (SELECT aid, row_number() OVER (ORDER BY abalance) rn FROM pr_accounts) w;
	UPDATE pr_accounts SET abalance = abalance + (s - s) WHERE aid = p_aid;
	RETURN 0;
END $$;
-- UPDATE ... FROM: a row that joins several source rows takes the first
CREATE TABLE pr_bonus (aid int, amount int) USING fastckpt;
INSERT INTO pr_bonus VALUES (6, 1), (6, 2);
CREATE TABLE pr_bonus_key (aid int PRIMARY KEY, amount int) USING fastckpt;
INSERT INTO pr_bonus_key VALUES (6, 1);
CREATE FUNCTION pr_order_update_from(p_aid int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
	UPDATE pr_accounts a SET abalance = a.abalance + b.amount - b.amount
	  FROM pr_bonus b WHERE b.aid = a.aid AND a.aid = p_aid;
	RETURN 0;
END $$;
CREATE FUNCTION pr_order_update_key(p_aid int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
	UPDATE pr_accounts a SET abalance = a.abalance + b.amount - b.amount
	  FROM pr_bonus_key b WHERE b.aid = a.aid AND a.aid = p_aid;
	RETURN 0;
END $$;
SELECT fastckpt_register_procedure('pr_order_update_from(int)');
SELECT fastckpt_register_procedure('pr_order_update_key(int)');
SELECT pr_order_update_from(6);
SELECT pr_order_update_key(6);
CREATE FUNCTION pr_order_array(p_aid int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	ids int[];
BEGIN
	ids := ARRAY(SELECT aid FROM pr_accounts WHERE abalance >= 0);
	UPDATE pr_accounts SET abalance = abalance + ids[1] - ids[1] WHERE aid = p_aid;
	RETURN 0;
END $$;
SELECT fastckpt_register_procedure('pr_order_array(int)');
SELECT pr_order_array(6);
-- ... and other things replay cannot repeat: system columns holding
-- transaction ids, SKIP LOCKED (other sessions' locks), DISTINCT
-- aggregates and grouping sets over numeric, DELETE ... USING ... RETURNING
-- a joined column, ON CONFLICT DO NOTHING over several source rows (a
-- single row is fine)
CREATE FUNCTION pr_order_xmin(p_aid int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	x text;
BEGIN
	SELECT xmin::text INTO STRICT x FROM pr_accounts WHERE aid = p_aid;
	UPDATE pr_accounts SET abalance = abalance + length(x) - length(x) WHERE aid = p_aid;
	RETURN 0;
END $$;
CREATE FUNCTION pr_order_skip(p_aid int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
	UPDATE pr_accounts SET abalance = abalance WHERE aid IN
		(SELECT aid FROM pr_accounts WHERE aid = p_aid FOR UPDATE SKIP LOCKED);
	RETURN 0;
END $$;
CREATE FUNCTION pr_order_sum_distinct(p_aid int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	n numeric;
BEGIN
	SELECT sum(DISTINCT abalance::numeric) INTO STRICT n FROM pr_accounts;
	UPDATE pr_accounts SET abalance = abalance + (n * 0)::int WHERE aid = p_aid;
	RETURN 0;
END $$;
CREATE FUNCTION pr_order_grouping_sets(p_aid int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	n bigint;
BEGIN
	SELECT count(*) INTO STRICT n FROM (SELECT aid, abalance::numeric AS b, count(*)
		FROM pr_accounts GROUP BY GROUPING SETS ((aid), (b))) g;
	UPDATE pr_accounts SET abalance = abalance + (n - n) WHERE aid = p_aid;
	RETURN 0;
END $$;
CREATE TABLE pr_gone (aid int, amount int) USING fastckpt;
INSERT INTO pr_gone VALUES (6, 0);
CREATE FUNCTION pr_order_delete_using(p_aid int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	a int;
BEGIN
	DELETE FROM pr_gone g USING pr_bonus b WHERE b.aid = g.aid AND g.aid = p_aid
		RETURNING b.amount INTO a;
	RETURN 0;
END $$;
CREATE TABLE pr_keyed (k int PRIMARY KEY, v text) USING fastckpt;
CREATE FUNCTION pr_order_conflict_many(p_k int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO pr_keyed SELECT p_k, 'v' || aid FROM pr_accounts WHERE aid <= 2
		ON CONFLICT (k) DO NOTHING;
	RETURN 0;
END $$;
CREATE FUNCTION pr_order_conflict_one(p_k int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO pr_keyed VALUES (p_k, 'one') ON CONFLICT (k) DO NOTHING;
	RETURN 0;
END $$;
SELECT fastckpt_register_procedure(f) FROM unnest(ARRAY['pr_order_xmin(int)',
	'pr_order_skip(int)', 'pr_order_sum_distinct(int)', 'pr_order_grouping_sets(int)',
	'pr_order_delete_using(int)', 'pr_order_conflict_many(int)',
	'pr_order_conflict_one(int)']::regprocedure[]) f;
SELECT pr_order_xmin(5);
SELECT pr_order_skip(5);
SELECT pr_order_sum_distinct(5);
SELECT pr_order_grouping_sets(5);
SELECT pr_order_delete_using(6);
SELECT pr_order_conflict_many(1);
SELECT pr_order_conflict_one(2);
SELECT fastckpt_register_procedure(f) FROM unnest(ARRAY['pr_order_free(int)',
	'pr_order_text(int)', 'pr_order_float(int)', 'pr_order_numeric(int)',
	'pr_order_distinct_on(int)', 'pr_order_window(int)']::regprocedure[]) f;
SELECT pr_order_free(7);
SELECT pr_order_text(7);
SELECT pr_order_float(7);
SELECT pr_order_numeric(7);
SELECT pr_order_distinct_on(7);
SELECT pr_order_window(7);
SELECT routine, calls, validated_calls, fallbacks FROM fastckpt_procedures
 WHERE routine::text LIKE 'pr_order%' ORDER BY routine::text;

-- transaction_control: a procedure that commits inside
CREATE PROCEDURE pr_batch(p_aid int)
LANGUAGE plpgsql AS $$
BEGIN
	UPDATE pr_accounts SET abalance = abalance + 1 WHERE aid = p_aid;
	COMMIT;
	UPDATE pr_accounts SET abalance = abalance + 1 WHERE aid = p_aid;
END $$;
SELECT fastckpt_register_procedure('pr_batch(int)');
CALL pr_batch(8);

-- a procedure called with CALL, cleanly; and an exception caught inside
CREATE PROCEDURE pr_deposit(p_aid int, p_delta int)
LANGUAGE plpgsql AS $$
BEGIN
	UPDATE pr_accounts SET abalance = abalance + p_delta WHERE aid = p_aid;
END $$;
CREATE PROCEDURE pr_careful(p_aid int)
LANGUAGE plpgsql AS $$
BEGIN
	UPDATE pr_accounts SET abalance = abalance + 1 WHERE aid = p_aid;
	BEGIN
		PERFORM 1 / 0;
	EXCEPTION WHEN division_by_zero THEN
		NULL;
	END;
END $$;
SELECT fastckpt_register_procedure('pr_deposit(int, int)');
SELECT fastckpt_register_procedure('pr_careful(int)');
CALL pr_deposit(9, 3);
CALL pr_careful(9);

-- verdicts on a routine's queries are kept with their cached plans: made
-- again when the registry changes (pr_outer and its helper, above), or
-- when a function they call changes (which replans the query)
SET plan_cache_mode = force_generic_plan;
CREATE FUNCTION pr_cached_double(x int) RETURNS int
LANGUAGE plpgsql AS 'BEGIN RETURN x * 2; END';
CREATE FUNCTION pr_cached_doubling(p_aid int) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	UPDATE pr_accounts SET abalance = abalance + pr_cached_double(1) - 2 WHERE aid = p_aid;
END $$;
SELECT fastckpt_register_procedure('pr_cached_doubling(int)');
SELECT fastckpt_unregister_procedure('pr_helper(int)');
CREATE TEMP VIEW pr_cached_calls AS
SELECT routine, calls, validated_calls, fallbacks->'nondeterministic' AS nondeterministic
  FROM fastckpt_procedures
 WHERE routine::text LIKE 'pr_cached%' OR routine::text LIKE 'pr_outer%'
 ORDER BY routine::text;
SELECT * FROM pr_cached_calls;
SELECT pr_outer(2);
SELECT pr_outer(2);
SELECT pr_cached_doubling(2);
SELECT pr_cached_doubling(2);
SELECT * FROM pr_cached_calls;
SELECT fastckpt_register_procedure('pr_helper(int)');
ALTER FUNCTION pr_cached_double(int) IMMUTABLE;
SELECT pr_outer(2);
SELECT pr_cached_doubling(2);
SELECT * FROM pr_cached_calls;
SELECT fastckpt_unregister_procedure('pr_helper(int)');
ALTER FUNCTION pr_cached_double(int) VOLATILE;
SELECT pr_outer(2);
SELECT pr_cached_doubling(2);
SELECT * FROM pr_cached_calls;
SELECT fastckpt_register_procedure('pr_helper(int)');
SELECT fastckpt_unregister_procedure('pr_cached_doubling(int)');
DROP VIEW pr_cached_calls;
DROP FUNCTION pr_cached_doubling, pr_cached_double;
RESET plan_cache_mode;

-- a call that fails counts nothing; one that writes nothing neither
SELECT pr_transfer(1, NULL);
CREATE FUNCTION pr_reader(p_aid int) RETURNS int
LANGUAGE sql AS 'SELECT abalance FROM pr_accounts WHERE aid = p_aid';
SELECT fastckpt_register_procedure('pr_reader(int)');
SELECT pr_reader(1);

SELECT routine, calls, validated_calls, fallbacks, last_fallback
  FROM fastckpt_procedures ORDER BY routine::text;
SELECT call_fallbacks FROM fastckpt_stat_log;

-- the helpers: the transaction's start time, and numbers in [0, 1)
BEGIN;
SELECT fastckpt_txn_time() = now() AS txn_time_is_start;
SELECT count(*) FILTER (WHERE r >= 0 AND r < 1) AS in_range,
	   count(DISTINCT r) > 90 AS varied
  FROM (SELECT fastckpt_random() AS r FROM generate_series(1, 100)) s;
COMMIT;

-- unregistering
SELECT fastckpt_unregister_procedure('pr_reader(int)');
SELECT fastckpt_unregister_procedure('pr_reader(int)');
SET ROLE pr_other;
SELECT fastckpt_unregister_procedure('pr_transfer(int, int)');
INSERT INTO fastckpt_procedure_registry VALUES ('pr_not_mine()', '0', 'pr_other');
RESET ROLE;
SELECT count(*) AS registered FROM fastckpt_procedures;

-- the balances are what the calls did, whichever way they were logged
SELECT sum(abalance) AS total FROM pr_accounts;

DROP TABLE pr_accounts, pr_history, pr_heap, pr_audited, pr_temp_rates;
DROP FUNCTION pr_transfer, pr_with_heap, pr_with_temp, pr_temp_only, pr_pick_limit, pr_pick_first, pr_pick_key, pr_pick_dynamic, pr_clock, pr_dice, pr_numbered,
	pr_helper, pr_outer, pr_audit_trigger, pr_insert_audited, pr_reader,
	pr_not_mine;
DROP PROCEDURE pr_batch, pr_deposit, pr_careful;
DROP SEQUENCE pr_seq;
SELECT count(*) AS left_registered FROM fastckpt_procedures WHERE routine IS NOT NULL;
DELETE FROM fastckpt_procedure_registry;
REVOKE USAGE ON SCHEMA public FROM pr_other;
DROP ROLE pr_other;

-- a function labelled IMMUTABLE that reads a table: planning folds its
-- result into the plan, and a cached plan keeps it while the table
-- changes, where replay plans afresh.  Once planning in a session has run
-- such a query, that session's calls fall back, until DISCARD PLANS.
\c
CREATE TABLE pr_cfg (k int PRIMARY KEY, v int) USING fastckpt;
CREATE TABLE pr_counts (k int PRIMARY KEY, n int) USING fastckpt;
INSERT INTO pr_cfg VALUES (1, 1);
INSERT INTO pr_counts VALUES (1, 0), (2, 0);
CREATE FUNCTION pr_cfg_get() RETURNS int
LANGUAGE sql IMMUTABLE AS 'SELECT v FROM pr_cfg WHERE k = 1';
CREATE FUNCTION pr_use_cfg() RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	UPDATE pr_counts SET n = n + pr_cfg_get() WHERE k = 1;
END $$;
CREATE FUNCTION pr_count() RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	UPDATE pr_counts SET n = n + 1 WHERE k = 2;
END $$;
SELECT fastckpt_register_procedure('pr_use_cfg()');
SELECT fastckpt_register_procedure('pr_count()');
SELECT pr_count();
SELECT pr_use_cfg();
SELECT pr_use_cfg();
SELECT pr_use_cfg();
SELECT pr_use_cfg();
SELECT pr_use_cfg();
SELECT pr_use_cfg();
SELECT routine, calls, call_records, value_records, last_fallback
  FROM fastckpt_procedures ORDER BY routine::text;
-- any call of the session: the plan it runs may be one of those
SELECT pr_count();
SELECT routine, calls, call_records, value_records, last_fallback
  FROM fastckpt_procedures WHERE routine = 'pr_count()'::regprocedure;
DISCARD PLANS;
SELECT pr_count();
SELECT routine, calls, call_records, value_records, last_fallback
  FROM fastckpt_procedures WHERE routine = 'pr_count()'::regprocedure;
SELECT * FROM pr_counts ORDER BY k;

-- a volatile registered routine called once per row: what it returns (and
-- writes) depends on the rows before, which come in the plan's order
CREATE TABLE pr_rows (k int PRIMARY KEY, n int) USING fastckpt;
INSERT INTO pr_rows SELECT g, 0 FROM generate_series(1, 3) g;
CREATE FUNCTION pr_next() RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
	r int;
BEGIN
	UPDATE pr_counts SET n = n + 1 WHERE k = 2 RETURNING n INTO r;
	RETURN r;
END $$;
CREATE FUNCTION pr_number_from(p_k int) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	UPDATE pr_rows SET n = pr_next() WHERE k >= p_k;
END $$;
CREATE FUNCTION pr_number_one(p_k int) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	UPDATE pr_rows SET n = pr_next() WHERE k = p_k;
END $$;
SELECT fastckpt_register_procedure('pr_next()');
SELECT fastckpt_register_procedure('pr_number_from(int)');
SELECT fastckpt_register_procedure('pr_number_one(int)');
SELECT pr_number_from(1);
SELECT pr_number_one(2);
SELECT routine, calls, call_records, value_records, last_fallback
  FROM fastckpt_procedures WHERE routine::text LIKE 'pr_number%' ORDER BY routine::text;
SELECT * FROM pr_rows ORDER BY k;

-- arguments: an anonymous record (ROW(...) as record or anyelement) has a
-- row type only this session knows, which replay could not read; a value
-- of a named row type is fine
CREATE FUNCTION pr_take_record(r record) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	UPDATE pr_rows SET n = n + 1 WHERE k = 1;
END $$;
CREATE FUNCTION pr_take_any(r anyelement) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	UPDATE pr_rows SET n = n + 1 WHERE k = 1;
END $$;
CREATE FUNCTION pr_take_typed(r pr_rows) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	UPDATE pr_rows SET n = n + r.n WHERE k = r.k;
END $$;
SELECT fastckpt_register_procedure('pr_take_record(record)');
SELECT fastckpt_register_procedure('pr_take_any(anyelement)');
SELECT fastckpt_register_procedure('pr_take_typed(pr_rows)');
SELECT pr_take_record(ROW(1, 'x'::text));
SELECT pr_take_any(ROW(1, 'x'::text));
SELECT pr_take_any(7);
SELECT pr_take_typed(ROW(1, 1)::pr_rows);
SELECT routine, calls, call_records, value_records, last_fallback
  FROM fastckpt_procedures WHERE routine::text LIKE 'pr_take%' ORDER BY routine::text;

-- a cursor the client opened before the call was planned, and maybe read
-- from, outside it, and does not exist at replay; one the call opens is fine
CREATE FUNCTION pr_fetch(c refcursor) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	v int;
BEGIN
	FETCH c INTO v;
	UPDATE pr_rows SET n = v WHERE k = 3;
END $$;
CREATE FUNCTION pr_fetch_own() RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	c refcursor;
	v int;
BEGIN
	OPEN c FOR SELECT n FROM pr_rows WHERE k = 1;
	FETCH c INTO v;
	CLOSE c;
	UPDATE pr_rows SET n = v WHERE k = 3;
END $$;
SELECT fastckpt_register_procedure('pr_fetch(refcursor)');
SELECT fastckpt_register_procedure('pr_fetch_own()');
BEGIN;
DECLARE pr_cur CURSOR FOR SELECT n FROM pr_rows WHERE k = 2;
SELECT pr_fetch('pr_cur');
COMMIT;
SELECT pr_fetch_own();

-- a domain's CHECK that reads the clock runs where a value is cast to the
-- domain, or stored into a variable of it, not only into a table
CREATE DOMAIN pr_recent AS timestamptz CHECK (VALUE > now() - interval '1 day');
CREATE FUNCTION pr_cast_recent(t timestamptz) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM t::pr_recent;
	UPDATE pr_rows SET n = n + 1 WHERE k = 1;
END $$;
CREATE FUNCTION pr_store_recent(t timestamptz) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	x pr_recent;
BEGIN
	x := t;
	UPDATE pr_rows SET n = n + 1 WHERE k = 1;
END $$;
-- also where the domain is a field of a composite under another domain
CREATE TYPE pr_recent_pair AS (at pr_recent, n int);
CREATE DOMAIN pr_recent_pair_d AS pr_recent_pair;
CREATE FUNCTION pr_store_recent_pair(t timestamptz) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	x pr_recent_pair_d;
BEGIN
	SELECT t, 1 INTO x;
	UPDATE pr_rows SET n = n + 1 WHERE k = 1;
END $$;
SELECT fastckpt_register_procedure('pr_cast_recent(timestamptz)');
SELECT fastckpt_register_procedure('pr_store_recent(timestamptz)');
SELECT fastckpt_register_procedure('pr_store_recent_pair(timestamptz)');
SELECT pr_cast_recent('2100-01-01');
SELECT pr_store_recent('2100-01-01');
SELECT pr_store_recent_pair('2100-01-01');

-- a date or time input function reads the clock for 'now', 'today' ...:
-- storing such text into a variable falls back, a fixed date does not
CREATE FUNCTION pr_store_now() RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	x timestamptz := 'now';
BEGIN
	UPDATE pr_rows SET n = n + (x > '2000-01-01')::int WHERE k = 1;
END $$;
CREATE FUNCTION pr_store_fixed() RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	x timestamptz := '2020-01-01';
BEGIN
	UPDATE pr_rows SET n = n + (x > '2000-01-01')::int WHERE k = 1;
END $$;
SELECT fastckpt_register_procedure('pr_store_now()');
SELECT fastckpt_register_procedure('pr_store_fixed()');
SELECT pr_store_now();
SELECT pr_store_fixed();
SELECT routine, calls, call_records, value_records, last_fallback
  FROM fastckpt_procedures
 WHERE routine::text ~ '^pr_(fetch|cast|store)' ORDER BY routine::text;

-- and a literal of a routine's query is read once, as the query is
-- parsed, and then kept in its plan: the session's calls fall back until
-- DISCARD PLANS
CREATE FUNCTION pr_literal_now() RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	UPDATE pr_rows SET n = n + 1 WHERE k = 1 AND 'now'::timestamptz > '2000-01-01';
END $$;
SELECT fastckpt_register_procedure('pr_literal_now()');
SELECT pr_literal_now();
SELECT pr_count();
DISCARD PLANS;
SELECT pr_count();
SELECT routine, calls, call_records, value_records, last_fallback
  FROM fastckpt_procedures
 WHERE routine::text ~ '^pr_(literal_now|count)' ORDER BY routine::text;
DROP FUNCTION pr_cfg_get, pr_use_cfg, pr_count, pr_next, pr_number_from, pr_number_one,
	pr_take_record, pr_take_any, pr_take_typed, pr_fetch, pr_fetch_own, pr_cast_recent,
	pr_store_recent, pr_store_recent_pair, pr_store_now, pr_store_fixed, pr_literal_now;
DROP DOMAIN pr_recent_pair_d;
DROP TYPE pr_recent_pair;
DROP DOMAIN pr_recent;
DROP TABLE pr_cfg, pr_counts, pr_rows;
DELETE FROM fastckpt_procedure_registry;
