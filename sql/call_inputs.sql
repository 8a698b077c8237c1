--
-- call_inputs: what a registered call reads besides its rows and
-- arguments, which replay would not reproduce.  Each case falls back to
-- row images (nondeterministic, or non_fastckpt_relation), and a close
-- variant that replay does reproduce stays a CALL record.
--
SELECT fastckpt_stat_reset();

CREATE TABLE ci_rows (id int PRIMARY KEY, grp int NOT NULL, v int NOT NULL) USING fastckpt;
CREATE INDEX ci_rows_grp ON ci_rows (grp);
CREATE TABLE ci_log (id int, note text) USING fastckpt;
INSERT INTO ci_rows SELECT g, g % 2, 0 FROM generate_series(1, 20) g;
ANALYZE ci_rows;

-- DECLARE defaults run before the block's first statement
CREATE FUNCTION ci_declare_clock(p int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	t timestamptz := clock_timestamp();
BEGIN
	INSERT INTO ci_log VALUES (p, (t > '2000-01-01')::text);
	RETURN 0;
END $$;
CREATE FUNCTION ci_declare_inner(p int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
	DECLARE
		r float8 := random();
	BEGIN
		INSERT INTO ci_log VALUES (p, (r >= 0)::text);
	END;
	RETURN 0;
END $$;
CREATE FUNCTION ci_declare_fixed(p int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	n int := p * 2;
	t timestamptz := fastckpt_txn_time();
BEGIN
	INSERT INTO ci_log VALUES (n, (t > '2000-01-01')::text);
	RETURN 0;
END $$;

-- rows of UPDATE ... RETURNING read in turn come in the plan's order
CREATE FUNCTION ci_returning_loop(p int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	r record;
	s text := '';
BEGIN
	FOR r IN UPDATE ci_rows SET v = v + 1 WHERE grp = 1 RETURNING id LOOP
		s := s || r.id || ',';
	END LOOP;
	INSERT INTO ci_log VALUES (p, s);
	RETURN 0;
END $$;
CREATE FUNCTION ci_returning_cursor(p int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	c refcursor;
	x int;
BEGIN
	OPEN c FOR UPDATE ci_rows SET v = v + 1 WHERE grp = 1 RETURNING id;
	FETCH c INTO x;
	CLOSE c;
	INSERT INTO ci_log VALUES (p, x::text);
	RETURN 0;
END $$;
CREATE FUNCTION ci_returning_with(p int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	r record;
	s text := '';
BEGIN
	FOR r IN WITH u AS (UPDATE ci_rows SET v = v + 1 WHERE grp = 1 RETURNING id) SELECT id FROM u LOOP
		s := s || r.id || ',';
	END LOOP;
	INSERT INTO ci_log VALUES (p, s);
	RETURN 0;
END $$;
-- (an order-free aggregate over them is fine)
CREATE FUNCTION ci_returning_with_sum(p int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	n bigint;
BEGIN
	WITH u AS (UPDATE ci_rows SET v = v + 1 WHERE grp = 1 RETURNING id)
		SELECT sum(id) INTO STRICT n FROM u;
	INSERT INTO ci_log VALUES (p, n::text);
	RETURN 0;
END $$;
CREATE FUNCTION ci_bump(g int) RETURNS int LANGUAGE sql AS
	'UPDATE ci_rows SET v = v + 1 WHERE grp = g RETURNING id';
CREATE FUNCTION ci_returning_sql(p int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO ci_log VALUES (p, ci_bump(1)::text);
	RETURN 0;
END $$;
-- ... one row, by its key, is the only order there is
CREATE FUNCTION ci_returning_one(p int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	r record;
BEGIN
	FOR r IN UPDATE ci_rows SET v = v + 1 WHERE id = p RETURNING id, v LOOP
		INSERT INTO ci_log VALUES (r.id, r.v::text);
	END LOOP;
	RETURN 0;
END $$;

-- fastckpt_random() hands its numbers to rows in the plan's order
CREATE FUNCTION ci_random_rows(p int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
	UPDATE ci_rows SET v = (fastckpt_random() * 1000)::int WHERE grp = p;
	RETURN 0;
END $$;
CREATE FUNCTION ci_random_one(p int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
	UPDATE ci_rows SET v = (fastckpt_random() * 1000)::int WHERE id = p;
	INSERT INTO ci_log VALUES (p, (fastckpt_random() < 1)::text);
	RETURN 0;
END $$;

-- date and time output, casts and arithmetic in the session's time zone
-- read only the settings a CALL record carries: no fallback
CREATE FUNCTION ci_stamps(p int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	t timestamptz := fastckpt_txn_time();
BEGIN
	INSERT INTO ci_log VALUES (p, t::date || ' ' || t::timestamp || ' ' || (t + interval '1 month')
		|| ' ' || date_trunc('day', t) || ' ' || extract(hour FROM t) || ' ' || t::time
		|| ' ' || (t - interval '1 day')::text || ' ' || age(t, t - interval '1 day'));
	RETURN 0;
END $$;
-- ... but not the input functions: 'now' reads the clock
CREATE FUNCTION ci_stamp_text(p int, s text) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO ci_log VALUES (p, s::timestamptz::text);
	RETURN 0;
END $$;

SELECT fastckpt_register_procedure(f) FROM unnest(ARRAY['ci_stamps(int)', 'ci_stamp_text(int,text)',
	'ci_returning_with(int)', 'ci_returning_with_sum(int)', 'ci_declare_clock(int)',
	'ci_declare_inner(int)', 'ci_declare_fixed(int)', 'ci_returning_loop(int)',
	'ci_returning_cursor(int)', 'ci_bump(int)', 'ci_returning_sql(int)',
	'ci_returning_one(int)', 'ci_random_rows(int)', 'ci_random_one(int)']::regprocedure[]) f;
SELECT ci_declare_clock(1);
SELECT ci_declare_inner(2);
SELECT ci_declare_fixed(3);
SELECT ci_returning_loop(4);
SELECT ci_returning_cursor(5);
SELECT ci_returning_sql(6);
SELECT ci_returning_with(11);
SELECT ci_returning_with_sum(12);
SELECT ci_returning_one(7);
SELECT ci_random_rows(1);
SELECT ci_random_one(8);
SELECT ci_stamps(9);
SELECT ci_stamp_text(10, 'now');
SELECT routine, calls, validated_calls, fallbacks FROM fastckpt_procedures
 WHERE calls > 0 ORDER BY routine::text;
SELECT fastckpt_stat_reset();

-- CHECK constraints and domain checks run outside the plan
CREATE DOMAIN ci_future AS timestamptz CHECK (VALUE > now() - interval '1 day');
CREATE DOMAIN ci_positive AS int CHECK (VALUE > 0);
CREATE TABLE ci_appts (id int PRIMARY KEY, at ci_future) USING fastckpt;
CREATE TABLE ci_checked (id int PRIMARY KEY, at timestamptz CHECK (at > now() - interval '1 day'))
	USING fastckpt;
CREATE TABLE ci_counts (id int PRIMARY KEY, n ci_positive) USING fastckpt;
CREATE TABLE ci_parts (id int, at timestamptz) PARTITION BY RANGE (id);
CREATE TABLE ci_parts_1 PARTITION OF ci_parts FOR VALUES FROM (0) TO (100) USING fastckpt;
ALTER TABLE ci_parts_1 ADD CHECK (at > now() - interval '1 day');
CREATE FUNCTION ci_book(p int, t timestamptz) RETURNS int LANGUAGE sql AS
	'INSERT INTO ci_appts VALUES (p, t) RETURNING id';
CREATE FUNCTION ci_check(p int, t timestamptz) RETURNS int LANGUAGE sql AS
	'INSERT INTO ci_checked VALUES (p, t) RETURNING id';
CREATE FUNCTION ci_part(p int, t timestamptz) RETURNS int LANGUAGE sql AS
	'INSERT INTO ci_parts VALUES (p, t) RETURNING id';
CREATE FUNCTION ci_count(p int) RETURNS int LANGUAGE sql AS
	'INSERT INTO ci_counts VALUES (p, p) RETURNING id';
SELECT fastckpt_register_procedure(f) FROM unnest(ARRAY['ci_book(int,timestamptz)',
	'ci_check(int,timestamptz)', 'ci_part(int,timestamptz)', 'ci_count(int)']::regprocedure[]) f;
SELECT now() + interval '1 hour' AS soon \gset
SELECT ci_book(1, :'soon');
SELECT ci_check(1, :'soon');
SELECT ci_part(1, :'soon');
SELECT ci_count(1);
SELECT routine, calls, validated_calls, fallbacks FROM fastckpt_procedures
 WHERE calls > 0 ORDER BY routine::text;
SELECT fastckpt_stat_reset();

-- a temporary view may hide a table of the same name; replay has none
CREATE TABLE ci_rates (id int PRIMARY KEY, rate int) USING fastckpt;
INSERT INTO ci_rates VALUES (1, 10);
CREATE FUNCTION ci_rated(p int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	r int;
BEGIN
	SELECT rate INTO STRICT r FROM ci_rates WHERE id = 1;
	INSERT INTO ci_log VALUES (p, r::text);
	RETURN r;
END $$;
SELECT fastckpt_register_procedure('ci_rated(int)');
SELECT ci_rated(1);
CREATE TEMP VIEW ci_rates AS SELECT 1 AS id, 999 AS rate;
SELECT ci_rated(2);
DROP VIEW ci_rates;
SELECT ci_rated(3);
SELECT calls, validated_calls, fallbacks FROM fastckpt_procedures
 WHERE routine = 'ci_rated(int)'::regprocedure;
SELECT fastckpt_stat_reset();

-- session settings that change what a call writes: a CALL record carries
-- most of them (replay sets the caller's values, test 009 runs it); the
-- others make the call fall back while they are set
CREATE TABLE ci_arrays (id int, a text[]) USING fastckpt;
CREATE FUNCTION ci_literals(p int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO ci_arrays VALUES (p, '{a,NULL}');
	RETURN 0;
END $$;
SELECT fastckpt_register_procedure('ci_literals(int)');
SELECT ci_literals(1);
SET array_nulls = off;
SELECT ci_literals(2);
RESET array_nulls;
SET timezone_abbreviations = 'India';
SELECT ci_literals(3);
RESET timezone_abbreviations;
SET xmlbinary = hex;
SELECT ci_literals(4);
RESET xmlbinary;
SET gin_fuzzy_search_limit = 5;
SELECT ci_literals(5);
RESET gin_fuzzy_search_limit;
SET row_security = off;
SELECT ci_literals(6);
RESET row_security;
SET plpgsql.extra_warnings = 'too_many_rows';
SELECT ci_literals(7);
RESET plpgsql.extra_warnings;
SET plpgsql.check_asserts = off;
SELECT ci_literals(8);
RESET plpgsql.check_asserts;
SET standard_conforming_strings = off;
SELECT ci_literals(9);
RESET standard_conforming_strings;
SET plpgsql.variable_conflict = use_column;
SELECT ci_literals(10);
RESET plpgsql.variable_conflict;
SELECT ci_literals(11);
SELECT calls, validated_calls, fallbacks FROM fastckpt_procedures
 WHERE routine = 'ci_literals(int)'::regprocedure;
SELECT id, a, a[2] IS NULL AS null_element FROM ci_arrays ORDER BY id;

DROP FUNCTION ci_stamps, ci_stamp_text, ci_returning_with, ci_returning_with_sum, ci_declare_clock, ci_declare_inner, ci_declare_fixed, ci_returning_loop,
	ci_returning_cursor, ci_returning_sql, ci_bump, ci_returning_one, ci_random_rows,
	ci_random_one, ci_book, ci_check, ci_part, ci_count, ci_rated, ci_literals;
DROP TABLE ci_rows, ci_log, ci_appts, ci_checked, ci_counts, ci_parts, ci_rates, ci_arrays;
DROP DOMAIN ci_future, ci_positive;
