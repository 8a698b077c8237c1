--
-- tablesample: TABLESAMPLE samples fastckpt tables as it samples heap
-- tables.  The sampling methods' pages are the table's virtual blocks of
-- 256 slots (a row's ctid names its block), so SYSTEM takes whole blocks.
--
CREATE TABLE ts (id int PRIMARY KEY, v int) USING fastckpt;
INSERT INTO ts SELECT g, g % 7 FROM generate_series(1, 10000) g;
CREATE TABLE ts_heap (id int PRIMARY KEY, v int) USING heap;
INSERT INTO ts_heap SELECT * FROM ts;

-- all of it, and none of it, as on heap
SELECT count(*), sum(id), sum(v) FROM ts TABLESAMPLE SYSTEM (100);
SELECT count(*), sum(id), sum(v) FROM ts_heap TABLESAMPLE SYSTEM (100);
SELECT count(*), sum(id), sum(v) FROM ts TABLESAMPLE BERNOULLI (100);
SELECT count(*) FROM ts TABLESAMPLE SYSTEM (0);
SELECT count(*) FROM ts TABLESAMPLE BERNOULLI (0);
EXPLAIN (COSTS OFF) SELECT * FROM ts TABLESAMPLE BERNOULLI (10);

-- BERNOULLI keeps each row with the given chance (10% of 10,000 rows:
-- 1,000 give or take 30)
SELECT count(*) BETWEEN 850 AND 1150 AS about_a_tenth
  FROM ts TABLESAMPLE BERNOULLI (10);

-- SYSTEM keeps whole blocks: every block it picks comes with all its rows
CREATE TEMP TABLE ts_blocks AS
  SELECT (ctid::text::point)[0]::int AS blk, count(*) AS n
  FROM ts GROUP BY 1;
SELECT count(*) AS blocks, min(n), max(n) FROM ts_blocks;
WITH s AS (
  SELECT (ctid::text::point)[0]::int AS blk, count(*) AS n
  FROM ts TABLESAMPLE SYSTEM (40) REPEATABLE (7) GROUP BY 1)
SELECT count(*) > 0 AND count(*) < 40 AS some_blocks,
       bool_and(s.n = b.n) AS whole_blocks
  FROM s JOIN ts_blocks b USING (blk);

-- REPEATABLE picks the same rows again while the table is unchanged, and
-- another seed picks others
SELECT (SELECT array_agg(id ORDER BY id) FROM ts TABLESAMPLE BERNOULLI (5) REPEATABLE (42)) =
       (SELECT array_agg(id ORDER BY id) FROM ts TABLESAMPLE BERNOULLI (5) REPEATABLE (42))
       AS same_seed_same_rows,
       (SELECT array_agg(id ORDER BY id) FROM ts TABLESAMPLE BERNOULLI (5) REPEATABLE (42)) <>
       (SELECT array_agg(id ORDER BY id) FROM ts TABLESAMPLE BERNOULLI (5) REPEATABLE (43))
       AS other_seed_other_rows;

-- the sample is of the rows the snapshot sees: deleted rows are gone,
-- updated rows show their new values, new rows are in
BEGIN;
DELETE FROM ts WHERE id <= 5000;
UPDATE ts SET v = -1 WHERE id > 9000;
INSERT INTO ts SELECT g, 100 FROM generate_series(10001, 10300) g;
SELECT count(*), min(id), max(id), count(*) FILTER (WHERE v = -1) AS updated,
       count(*) FILTER (WHERE v = 100) AS inserted
  FROM ts TABLESAMPLE BERNOULLI (100);
SELECT count(*), min(id) FROM ts TABLESAMPLE SYSTEM (100);
ROLLBACK;
SELECT count(*), sum(v) FROM ts TABLESAMPLE BERNOULLI (100);
-- a cursor samples with the snapshot it was declared with (older versions)
BEGIN;
DECLARE c CURSOR FOR SELECT count(*), sum(v) FROM ts TABLESAMPLE BERNOULLI (100);
UPDATE ts SET v = v + 1;
FETCH c;
SELECT count(*), sum(v) FROM ts TABLESAMPLE SYSTEM (100);
ROLLBACK;

-- a sample scan run again for each outer row (LATERAL) starts afresh
SELECT g, s.n
  FROM generate_series(0, 2) g,
       LATERAL (SELECT count(*) AS n FROM ts TABLESAMPLE BERNOULLI (100) WHERE v = g) s
  ORDER BY g;

-- an empty table
CREATE TABLE ts_empty (id int) USING fastckpt;
SELECT count(*) FROM ts_empty TABLESAMPLE SYSTEM (100);
SELECT count(*) FROM ts_empty TABLESAMPLE BERNOULLI (100);

-- a registered routine that samples: which rows it would read at replay is
-- not certain, so its calls are logged as row images (reason
-- nondeterministic) and it still writes what it read
CREATE TABLE ts_log (n int) USING fastckpt;
CREATE FUNCTION ts_count_sample() RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
	c int;
BEGIN
	SELECT count(*) INTO STRICT c FROM ts TABLESAMPLE BERNOULLI (100) REPEATABLE (1);
	INSERT INTO ts_log VALUES (c);
	RETURN c;
END $$;
SELECT fastckpt_register_procedure('ts_count_sample()');
SELECT ts_count_sample();
SELECT * FROM ts_log;
SELECT calls, validated_calls, call_records, value_records, last_fallback
  FROM fastckpt_procedures WHERE routine = 'ts_count_sample()'::regprocedure;
SELECT fastckpt_unregister_procedure('ts_count_sample()');

DROP FUNCTION ts_count_sample();
DROP TABLE ts, ts_heap, ts_empty, ts_log;
