--
-- call_hidden_reads: what a registered call's writes depend on that
-- neither its plan nor its arguments show, which replay would not repeat:
-- values the parser or the planner fixed in a cached plan, the session's
-- temporary objects, a cursor the client opened, PL/pgSQL's own casts of
-- text to a date or time.  Each falls back to row images; a close variant
-- that replay repeats stays a CALL record.  The session's cached plans
-- may keep such a value: its calls fall back until DISCARD PLANS, which
-- each case ends with.
--
CREATE TABLE ch_rows (id int PRIMARY KEY, n int NOT NULL, ts timestamptz) USING fastckpt;
INSERT INTO ch_rows SELECT g, 0, NULL FROM generate_series(1, 40) g;

-- a clock literal written as a dollar-quoted string, or continued over a
-- line break; a fixed date written so is fine
CREATE FUNCTION ch_dollar_now(p int) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
	UPDATE ch_rows SET ts = $q$now$q$::timestamptz WHERE id = p;
END $f$;
CREATE FUNCTION ch_continued_now(p int) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
	UPDATE ch_rows SET ts = 'no'
'w'::timestamptz WHERE id = p;
END $f$;
CREATE FUNCTION ch_dollar_fixed(p int) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
	UPDATE ch_rows SET ts = $q$2020-01-01$q$::timestamptz WHERE id = p;
END $f$;
-- ... or inside a composite literal
CREATE TYPE ch_stamp AS (at timestamptz);
CREATE FUNCTION ch_composite_now(p int) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
	UPDATE ch_rows SET ts = ('(now)'::ch_stamp).at WHERE id = p;
END $f$;
SELECT fastckpt_register_procedure(f) FROM unnest(ARRAY['ch_dollar_now(int)',
	'ch_continued_now(int)', 'ch_dollar_fixed(int)', 'ch_composite_now(int)']::regprocedure[]) f;
SELECT ch_dollar_fixed(1);
SELECT ch_dollar_now(1);
DISCARD PLANS;
SELECT ch_continued_now(2);
DISCARD PLANS;
SELECT ch_composite_now(3);
DISCARD PLANS;

-- a function labelled IMMUTABLE that the planner folds into a cached plan,
-- whose volatile part PL/pgSQL evaluates without the executor
CREATE FUNCTION ch_mislabelled() RETURNS int IMMUTABLE LANGUAGE plpgsql AS $f$
BEGIN
	RETURN (random() * 1000)::int;
END $f$;
CREATE FUNCTION ch_folded(p int) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
	UPDATE ch_rows SET n = ch_mislabelled() WHERE id = 4;
END $f$;
SELECT fastckpt_register_procedure('ch_folded(int)');
SELECT ch_folded(4);
SELECT ch_folded(4);
SELECT ch_folded(4);
DISCARD PLANS;

-- ... and DISCARD PLANS between such a call and its commit does not undo
-- that the call ran one
CREATE TABLE ch_cfg (id int PRIMARY KEY, v int NOT NULL) USING fastckpt;
INSERT INTO ch_cfg VALUES (1, 10);
CREATE FUNCTION ch_cfg_value() RETURNS int IMMUTABLE LANGUAGE sql AS $f$
	SELECT v FROM ch_cfg WHERE id = 1
$f$;
CREATE FUNCTION ch_reads_cfg(p int) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
	UPDATE ch_rows SET n = ch_cfg_value() WHERE id = 5;
END $f$;
SELECT fastckpt_register_procedure('ch_reads_cfg(int)');
SELECT ch_reads_cfg(5);
BEGIN;
SELECT ch_reads_cfg(5);
DISCARD PLANS;
COMMIT;

-- the session's temporary objects end with it: a value of a temporary row
-- type passed in, a variable or a cast of such a type, a function of the
-- temporary schema, a regclass literal that found a temporary table
CREATE TEMP TABLE ch_pair (a int, b int);
CREATE FUNCTION ch_takes_record(p int, r record) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
	UPDATE ch_rows SET n = n + 1 WHERE id = p;
END $f$;
CREATE FUNCTION ch_temp_variable(p int) RETURNS void LANGUAGE plpgsql AS $f$
DECLARE
	x ch_pair;
BEGIN
	x.a := p;
	UPDATE ch_rows SET n = x.a WHERE id = p;
END $f$;
CREATE FUNCTION ch_temp_cast(p int) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
	UPDATE ch_rows SET n = (ROW(p, 1)::pg_temp.ch_pair).a WHERE id = p;
END $f$;
CREATE FUNCTION pg_temp.ch_double(x int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT 2 * x';
CREATE FUNCTION ch_temp_function(p int) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
	EXECUTE 'UPDATE ch_rows SET n = pg_temp.ch_double($1) WHERE id = $1' USING p;
END $f$;
CREATE FUNCTION ch_temp_regclass(p int) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
	UPDATE ch_rows SET n = ('ch_pair'::regclass::oid > 0)::int WHERE id = p;
END $f$;
SELECT fastckpt_register_procedure(f) FROM unnest(ARRAY['ch_takes_record(int,record)',
	'ch_temp_variable(int)', 'ch_temp_cast(int)', 'ch_temp_function(int)',
	'ch_temp_regclass(int)']::regprocedure[]) f;
SELECT ch_takes_record(6, ROW(1, 2)::ch_pair);
SELECT ch_temp_variable(7);
SELECT ch_temp_cast(8);
DISCARD PLANS;
SELECT ch_temp_function(9);
SELECT ch_temp_regclass(10);
DISCARD PLANS;
DROP TABLE ch_pair;

-- UPDATE ... WHERE CURRENT OF a cursor the client declared
CREATE FUNCTION ch_current_of(c refcursor) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
	UPDATE ch_rows SET n = n + 1 WHERE CURRENT OF c;
END $f$;
SELECT fastckpt_register_procedure('ch_current_of(refcursor)');
BEGIN;
DECLARE ch_cursor CURSOR FOR SELECT * FROM ch_rows WHERE id = 11;
FETCH ch_cursor;
SELECT ch_current_of('ch_cursor');
COMMIT;

-- text stored into a date or time variable by SELECT ... INTO, EXECUTE
-- ... INTO, or returned as a timestamptz result, runs the input function,
-- which reads the clock for 'now'; a timestamptz argument does not
CREATE FUNCTION ch_into(p int, s text) RETURNS void LANGUAGE plpgsql AS $f$
DECLARE
	x timestamptz;
BEGIN
	SELECT s INTO x;
	UPDATE ch_rows SET ts = x WHERE id = p;
END $f$;
CREATE FUNCTION ch_execute_into(p int, s text) RETURNS void LANGUAGE plpgsql AS $f$
DECLARE
	x timestamptz;
BEGIN
	EXECUTE 'SELECT $1' INTO STRICT x USING s;
	UPDATE ch_rows SET ts = x WHERE id = p;
END $f$;
CREATE FUNCTION ch_as_time(s text) RETURNS timestamptz LANGUAGE plpgsql AS $f$
BEGIN
	RETURN s;
END $f$;
CREATE FUNCTION ch_returned(p int, s text) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
	UPDATE ch_rows SET ts = ch_as_time(s) WHERE id = p;
END $f$;
CREATE FUNCTION ch_into_typed(p int, t timestamptz) RETURNS void LANGUAGE plpgsql AS $f$
DECLARE
	x timestamptz;
BEGIN
	SELECT t INTO x;
	UPDATE ch_rows SET ts = x WHERE id = p;
END $f$;
SELECT fastckpt_register_procedure(f) FROM unnest(ARRAY['ch_into(int,text)',
	'ch_execute_into(int,text)', 'ch_as_time(text)', 'ch_returned(int,text)',
	'ch_into_typed(int,timestamptz)']::regprocedure[]) f;
SELECT ch_into(12, 'now');
SELECT ch_execute_into(13, 'now');
SELECT ch_returned(14, 'now');
SELECT ch_into_typed(15, '2020-01-01');

-- fastckpt_random() in a filter runs for each row the scan reads, which
-- depends on the plan, even where one row is written; in what that row is
-- set to, it runs once
CREATE FUNCTION ch_random_filter(p int) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
	UPDATE ch_rows SET n = n + 1 WHERE fastckpt_random() >= 0 AND id = p;
END $f$;
CREATE FUNCTION ch_random_set(p int) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
	UPDATE ch_rows SET n = n + (fastckpt_random() >= 0)::int WHERE id = p;
END $f$;
SELECT fastckpt_register_procedure(f) FROM unnest(ARRAY['ch_random_filter(int)',
	'ch_random_set(int)']::regprocedure[]) f;
SELECT ch_random_filter(16);
SELECT ch_random_set(17);

-- PL/pgSQL's other run-time casts into a date or time: a FOREACH loop
-- variable, RETURN NEXT, a bound cursor's arguments (OPEN, FOR)
CREATE FUNCTION ch_foreach(p int) RETURNS void LANGUAGE plpgsql AS $f$
DECLARE
	t timestamptz;
	a text[] := ARRAY['no' || 'w'];
BEGIN
	FOREACH t IN ARRAY a LOOP
	END LOOP;
	UPDATE ch_rows SET ts = t WHERE id = p;
END $f$;
CREATE FUNCTION ch_foreach_typed(p int) RETURNS void LANGUAGE plpgsql AS $f$
DECLARE
	t timestamptz;
	a timestamp[] := ARRAY['2020-01-01'::timestamp];
BEGIN
	FOREACH t IN ARRAY a LOOP
	END LOOP;
	UPDATE ch_rows SET ts = t WHERE id = p;
END $f$;
CREATE FUNCTION ch_times() RETURNS SETOF timestamptz LANGUAGE plpgsql IMMUTABLE AS $f$
DECLARE
	s text := 'no' || 'w';
BEGIN
	RETURN NEXT s;
END $f$;
CREATE FUNCTION ch_return_next(p int) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
	INSERT INTO ch_rows SELECT p, 0, x FROM ch_times() x;
END $f$;
CREATE FUNCTION ch_open_argument(p int) RETURNS void LANGUAGE plpgsql AS $f$
DECLARE
	c CURSOR (a timestamptz) FOR SELECT a;
	t timestamptz;
	s text := 'no' || 'w';
BEGIN
	OPEN c(s);
	FETCH c INTO t;
	CLOSE c;
	UPDATE ch_rows SET ts = t WHERE id = p;
END $f$;
CREATE FUNCTION ch_for_argument(p int) RETURNS void LANGUAGE plpgsql AS $f$
DECLARE
	c CURSOR (a timestamptz) FOR SELECT a AS v;
	s text := 'no' || 'w';
BEGIN
	FOR r IN c(s) LOOP
		UPDATE ch_rows SET ts = r.v WHERE id = p;
	END LOOP;
END $f$;
SELECT fastckpt_register_procedure(f) FROM unnest(ARRAY['ch_foreach(int)',
	'ch_foreach_typed(int)', 'ch_return_next(int)',
	'ch_open_argument(int)', 'ch_for_argument(int)']::regprocedure[]) f;
SELECT ch_foreach(18);
SELECT ch_foreach_typed(19);
SELECT ch_return_next(41);
SELECT ch_open_argument(21);
SELECT ch_for_argument(22);

-- text reaches a date or time through other types' text too: an array of
-- text, an enum (INTO, DECLARE defaults, RETURN)
CREATE TYPE ch_word AS ENUM ('now', 'later');
CREATE FUNCTION ch_into_array(p int) RETURNS void LANGUAGE plpgsql AS $f$
DECLARE
	t timestamptz[];
BEGIN
	SELECT ARRAY['no' || 'w'] INTO STRICT t;
	UPDATE ch_rows SET ts = t[1] WHERE id = p;
END $f$;
CREATE FUNCTION ch_into_enum(p int) RETURNS void LANGUAGE plpgsql AS $f$
DECLARE
	t timestamptz;
BEGIN
	SELECT 'now'::ch_word INTO STRICT t;
	UPDATE ch_rows SET ts = t WHERE id = p;
END $f$;
CREATE FUNCTION ch_default_enum(p int) RETURNS void LANGUAGE plpgsql AS $f$
DECLARE
	t timestamptz := 'now'::ch_word;
BEGIN
	UPDATE ch_rows SET ts = t WHERE id = p;
END $f$;
CREATE FUNCTION ch_stamps(s text) RETURNS timestamptz[] LANGUAGE plpgsql AS $f$
BEGIN
	RETURN ARRAY[s];
END $f$;
CREATE FUNCTION ch_return_array(p int) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
	UPDATE ch_rows SET ts = (ch_stamps('now'))[1] WHERE id = p;
END $f$;
SELECT fastckpt_register_procedure(f) FROM unnest(ARRAY['ch_into_array(int)',
	'ch_into_enum(int)', 'ch_default_enum(int)',
	'ch_stamps(text)', 'ch_return_array(int)']::regprocedure[]) f;
SELECT ch_into_array(23);
SELECT ch_into_enum(24);
SELECT ch_default_enum(26);
SELECT ch_return_array(27);

-- a temporary domain hiding a permanent one of the same name: the cast
-- names the session's domain, which replay would not find
CREATE DOMAIN ch_positive AS int CHECK (VALUE > 0);
CREATE FUNCTION ch_domain_cast(p int) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
	UPDATE ch_rows SET n = (p - 100)::ch_positive WHERE id = p;
END $f$;
SELECT fastckpt_register_procedure('ch_domain_cast(int)');
CREATE DOMAIN pg_temp.ch_positive AS int;
SELECT ch_domain_cast(28);
DROP DOMAIN pg_temp.ch_positive;
DISCARD PLANS;

-- the planner inlines a LANGUAGE sql function, parsing its body as it
-- plans: a clock literal there is fixed in the plan, whatever the
-- function's volatility; one without is fine
CREATE FUNCTION ch_sql_now() RETURNS timestamptz LANGUAGE sql AS $$ SELECT 'now'::timestamptz $$;
CREATE FUNCTION ch_sql_fixed() RETURNS timestamptz LANGUAGE sql AS $$ SELECT '2020-01-01'::timestamptz $$;
CREATE FUNCTION ch_inlined_now(p int) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
	UPDATE ch_rows SET ts = ch_sql_now() WHERE id = p;
END $f$;
CREATE FUNCTION ch_inlined_fixed(p int) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
	UPDATE ch_rows SET ts = ch_sql_fixed() WHERE id = p;
END $f$;
SELECT fastckpt_register_procedure(f) FROM unnest(ARRAY['ch_inlined_now(int)',
	'ch_inlined_fixed(int)']::regprocedure[]) f;
-- (validating ch_sql_now's body as it was created parsed the literal, and
-- kept no plan: the next call is still a CALL record)
SELECT ch_inlined_fixed(29);
SELECT ch_inlined_now(30);
DISCARD PLANS;
-- inlining goes on into the bodies it inlined, and behind operators
CREATE FUNCTION ch_sql_outer_now() RETURNS timestamptz LANGUAGE sql AS $$ SELECT ch_sql_now() $$;
CREATE FUNCTION ch_sql_outer_fixed() RETURNS timestamptz LANGUAGE sql AS $$ SELECT ch_sql_fixed() $$;
CREATE FUNCTION ch_sql_shift(int) RETURNS timestamptz LANGUAGE sql AS $$ SELECT 'now'::timestamptz + $1 * interval '1 s' $$;
CREATE OPERATOR @@> (RIGHTARG = int, FUNCTION = ch_sql_shift);
CREATE FUNCTION ch_nested_now(p int) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
	UPDATE ch_rows SET ts = ch_sql_outer_now() WHERE id = p;
END $f$;
CREATE FUNCTION ch_nested_fixed(p int) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
	UPDATE ch_rows SET ts = ch_sql_outer_fixed() WHERE id = p;
END $f$;
CREATE FUNCTION ch_operator_now(p int) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
	UPDATE ch_rows SET ts = @@> 0 WHERE id = p;
END $f$;
SELECT fastckpt_register_procedure(f) FROM unnest(ARRAY['ch_nested_now(int)',
	'ch_nested_fixed(int)', 'ch_operator_now(int)']::regprocedure[]) f;
INSERT INTO ch_rows VALUES (51, 0, NULL), (52, 0, NULL), (53, 0, NULL);
SELECT ch_nested_fixed(51);
SELECT ch_nested_now(52);
DISCARD PLANS;
SELECT ch_operator_now(53);
DISCARD PLANS;

-- CURRENT_SCHEMA with pg_temp first in the path names the session's own
-- temporary schema; with public first it is fine
CREATE FUNCTION ch_schema_temp(p int) RETURNS void LANGUAGE plpgsql
SET search_path = pg_temp, public AS $f$
BEGIN
	UPDATE ch_rows SET n = length(CURRENT_SCHEMA) WHERE id = p;
END $f$;
CREATE FUNCTION ch_schema_public(p int) RETURNS void LANGUAGE plpgsql
SET search_path = public, pg_temp AS $f$
BEGIN
	UPDATE ch_rows SET n = length(CURRENT_SCHEMA) WHERE id = p;
END $f$;
SELECT fastckpt_register_procedure(f) FROM unnest(ARRAY['ch_schema_temp(int)',
	'ch_schema_public(int)']::regprocedure[]) f;
CREATE TEMP TABLE ch_make_temp_schema (a int);
SELECT ch_schema_temp(31);
SELECT ch_schema_public(32);

-- a time with time zone but no date takes the zone's offset on the
-- current date (daylight saving time): a time stored INTO a timetz
-- variable, and a timetz literal (which the session's cached plans keep);
-- one made from a timestamptz is fine
CREATE FUNCTION ch_timetz_from_time(p int, s time) RETURNS void LANGUAGE plpgsql AS $f$
DECLARE
	t timetz;
BEGIN
	SELECT s INTO t;
	UPDATE ch_rows SET n = extract(timezone_hour FROM t) WHERE id = p;
END $f$;
CREATE FUNCTION ch_timetz_from_stamp(p int, s timestamptz) RETURNS void LANGUAGE plpgsql AS $f$
DECLARE
	t timetz;
BEGIN
	SELECT s INTO t;
	UPDATE ch_rows SET n = extract(timezone_hour FROM t) WHERE id = p;
END $f$;
CREATE FUNCTION ch_timetz_literal(p int) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
	UPDATE ch_rows SET n = extract(timezone_hour FROM '12:00'::timetz) WHERE id = p;
END $f$;
SELECT fastckpt_register_procedure(f) FROM unnest(ARRAY['ch_timetz_from_time(int,time)',
	'ch_timetz_from_stamp(int,timestamptz)', 'ch_timetz_literal(int)']::regprocedure[]) f;
SELECT ch_timetz_from_time(33, '12:00');
SELECT ch_timetz_from_stamp(34, '2020-06-01 12:00+00');
SELECT ch_timetz_literal(35);
DISCARD PLANS;
-- ... also in the body of a LANGUAGE sql function the planner inlines
CREATE FUNCTION ch_sql_noon() RETURNS timetz LANGUAGE sql AS $$ SELECT '12:00'::timetz $$;
CREATE FUNCTION ch_inlined_timetz(p int) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
	UPDATE ch_rows SET n = extract(timezone_hour FROM ch_sql_noon()) WHERE id = p;
END $f$;
SELECT fastckpt_register_procedure('ch_inlined_timetz(int)');
INSERT INTO ch_rows VALUES (54, 0, NULL);
SELECT ch_inlined_timetz(54);
DISCARD PLANS;
-- ... or through a domain over timetz (schema-qualified), in a body that
-- returns text
CREATE DOMAIN ch_clock AS timetz;
CREATE FUNCTION ch_sql_noon_text() RETURNS text LANGUAGE sql
	AS $$ SELECT '12:00'::public.ch_clock::text $$;
CREATE FUNCTION ch_inlined_domain_timetz(p int) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
	UPDATE ch_rows SET n = length(ch_sql_noon_text()) WHERE id = p;
END $f$;
SELECT fastckpt_register_procedure('ch_inlined_domain_timetz(int)');
INSERT INTO ch_rows VALUES (58, 0, NULL);
SELECT ch_inlined_domain_timetz(58);
DISCARD PLANS;

-- a row of another type stored into a composite variable converts each
-- field, text 'now' into a timestamptz field through its input function
-- (:=, a DECLARE default); a row of the same type is fine
CREATE TYPE ch_moment AS (at timestamptz);
CREATE FUNCTION ch_row_assign(p int, s text) RETURNS void LANGUAGE plpgsql AS $f$
DECLARE
	v ch_moment;
BEGIN
	v := ROW(s);
	UPDATE ch_rows SET ts = v.at WHERE id = p;
END $f$;
CREATE FUNCTION ch_row_default(p int, s text) RETURNS void LANGUAGE plpgsql AS $f$
DECLARE
	v ch_moment := ROW(s);
BEGIN
	UPDATE ch_rows SET ts = v.at WHERE id = p;
END $f$;
CREATE FUNCTION ch_row_same(p int, m ch_moment) RETURNS void LANGUAGE plpgsql AS $f$
DECLARE
	v ch_moment;
BEGIN
	v := m;
	UPDATE ch_rows SET ts = v.at WHERE id = p;
END $f$;
SELECT fastckpt_register_procedure(f) FROM unnest(ARRAY['ch_row_assign(int,text)',
	'ch_row_default(int,text)', 'ch_row_same(int,ch_moment)']::regprocedure[]) f;
SELECT ch_row_assign(36, 'now');
SELECT ch_row_default(37, 'now');
SELECT ch_row_same(38, ROW('2020-01-01 00:00+00'));
-- ... and each element of an array of rows of another type, by FOREACH,
-- though that type has a timestamptz field of its own
CREATE TYPE ch_noted AS (note text, at timestamptz);
CREATE TYPE ch_moments AS (note timestamptz, at timestamptz);
CREATE FUNCTION ch_foreach_rows(p int, s text) RETURNS void LANGUAGE plpgsql AS $f$
DECLARE
	a ch_noted[] := ARRAY[ROW(s, '2020-01-01 00:00+00')::ch_noted];
	v ch_moments;
BEGIN
	FOREACH v IN ARRAY a LOOP
		UPDATE ch_rows SET ts = v.note WHERE id = p;
	END LOOP;
END $f$;
SELECT fastckpt_register_procedure('ch_foreach_rows(int,text)');
INSERT INTO ch_rows VALUES (55, 0, NULL);
SELECT ch_foreach_rows(55, 'now');

-- GET DIAGNOSTICS ... PG_CONTEXT: the call stack as text, in the session's
-- lc_messages (replay's stack differs too); ROW_COUNT is fine
CREATE FUNCTION ch_context(p int) RETURNS void LANGUAGE plpgsql AS $f$
DECLARE
	c text;
BEGIN
	GET DIAGNOSTICS c = PG_CONTEXT;
	UPDATE ch_rows SET n = length(c) WHERE id = p;
END $f$;
CREATE FUNCTION ch_row_count(p int) RETURNS void LANGUAGE plpgsql AS $f$
DECLARE
	c bigint;
BEGIN
	UPDATE ch_rows SET n = n + 1 WHERE id = p;
	GET DIAGNOSTICS c = ROW_COUNT;
	UPDATE ch_rows SET n = n + c WHERE id = p;
END $f$;
SELECT fastckpt_register_procedure(f) FROM unnest(ARRAY['ch_context(int)',
	'ch_row_count(int)']::regprocedure[]) f;
SELECT ch_context(39);
SELECT ch_row_count(40);

-- (last: what follows makes the session's calls fall back for good)
-- a domain's checks are planned once a session (the type cache keeps
-- them), inlining a LANGUAGE sql function they call: here first by a
-- statement of the client's, before any call (each case in a new session)
\c -
CREATE FUNCTION ch_cutoff() RETURNS timestamptz LANGUAGE sql STABLE AS $$ SELECT 'now'::timestamptz - interval '1 day' $$;
CREATE DOMAIN ch_recent AS timestamptz CHECK (VALUE > ch_cutoff());
CREATE FUNCTION ch_domain_recent(p int, t timestamptz) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
	UPDATE ch_rows SET ts = t::ch_recent WHERE id = p;
END $f$;
SELECT fastckpt_register_procedure('ch_domain_recent(int,timestamptz)');
SELECT '2100-01-01 00:00+00'::timestamptz::ch_recent;
INSERT INTO ch_rows VALUES (56, 0, NULL);
SELECT ch_domain_recent(56, '2100-01-01 00:00+00');
-- ... also when the check names a BEGIN ATOMIC function calling that one
\c -
CREATE FUNCTION ch_cutoff_atomic() RETURNS timestamptz LANGUAGE sql STABLE
BEGIN ATOMIC SELECT ch_cutoff(); END;
CREATE DOMAIN ch_recent_atomic AS timestamptz CHECK (VALUE > ch_cutoff_atomic());
CREATE FUNCTION ch_domain_atomic(p int, t timestamptz) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
	UPDATE ch_rows SET ts = t::ch_recent_atomic WHERE id = p;
END $f$;
SELECT fastckpt_register_procedure('ch_domain_atomic(int,timestamptz)');
SELECT '2100-01-01 00:00+00'::timestamptz::ch_recent_atomic;
INSERT INTO ch_rows VALUES (57, 0, NULL);
SELECT ch_domain_atomic(57, '2100-01-01 00:00+00');
-- ... and a partition key over such a function (mislabelled IMMUTABLE),
-- which the relation cache keeps: the session's calls fall back from then on
\c -
CREATE FUNCTION ch_cut() RETURNS timestamptz LANGUAGE sql IMMUTABLE AS $$ SELECT 'now'::timestamptz - interval '1 day' $$;
CREATE TABLE ch_parts (k int, ts timestamptz) PARTITION BY LIST ((ts > ch_cut()));
CREATE TABLE ch_parts_recent PARTITION OF ch_parts FOR VALUES IN (true) USING fastckpt;
CREATE TABLE ch_parts_old PARTITION OF ch_parts FOR VALUES IN (false) USING fastckpt;
CREATE FUNCTION ch_partitioned(p int, t timestamptz) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
	INSERT INTO ch_parts VALUES (p, t);
END $f$;
SELECT fastckpt_register_procedure('ch_partitioned(int,timestamptz)');
SELECT count(*) FROM ch_parts;
SELECT ch_partitioned(1, '2100-01-01 00:00+00');

SELECT routine, calls, call_records, value_records, last_fallback
  FROM fastckpt_procedures WHERE routine::text LIKE 'ch\_%' ORDER BY routine::text;

DROP FUNCTION ch_dollar_now, ch_continued_now, ch_dollar_fixed, ch_composite_now,
	ch_mislabelled, ch_folded, ch_cfg_value, ch_reads_cfg, ch_takes_record,
	ch_temp_variable, ch_temp_cast, ch_temp_function, ch_temp_regclass, ch_current_of,
	ch_into, ch_execute_into, ch_as_time, ch_returned, ch_into_typed, ch_random_filter,
	ch_random_set, ch_foreach, ch_foreach_typed, ch_times, ch_return_next,
	ch_open_argument, ch_for_argument, ch_into_array, ch_into_enum,
	ch_default_enum, ch_stamps, ch_return_array, ch_domain_cast, ch_sql_now,
	ch_sql_fixed, ch_inlined_now, ch_inlined_fixed, ch_schema_temp, ch_schema_public,
	ch_timetz_from_time, ch_timetz_from_stamp, ch_timetz_literal, ch_row_assign,
	ch_row_default, ch_row_same, ch_context, ch_row_count, ch_nested_now,
	ch_nested_fixed, ch_operator_now, ch_sql_outer_now, ch_sql_outer_fixed,
	ch_sql_noon, ch_inlined_timetz, ch_sql_noon_text, ch_inlined_domain_timetz,
	ch_foreach_rows, ch_domain_recent, ch_domain_atomic, ch_partitioned;
DROP OPERATOR @@> (NONE, int);
DROP FUNCTION ch_sql_shift;
DROP TYPE ch_stamp, ch_word, ch_moment, ch_noted, ch_moments;
DROP DOMAIN ch_recent, ch_recent_atomic, ch_clock;
DROP FUNCTION ch_cutoff_atomic, ch_cutoff;
DROP TABLE ch_parts;
DROP FUNCTION ch_cut;
DROP DOMAIN ch_positive;
DROP TABLE ch_rows, ch_cfg;
DELETE FROM fastckpt_procedure_registry;
