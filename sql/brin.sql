--
-- brin: BRIN indexes summarize ranges of a fastckpt table's virtual blocks
-- (256 slots each).  A row whose indexed value changes moves to a new slot
-- and is summarized there, and a slot reused by a new row widens its
-- range's summary, so a BRIN bitmap scan finds what a sequential scan
-- finds, through updates, deletes, slot reuse and resummarizing.
--
CREATE TABLE bt (id int PRIMARY KEY, ts int, tag text, addr inet) USING fastckpt;
INSERT INTO bt
  SELECT g, g, 't' || (g % 100), ('10.0.' || (g / 256) % 256 || '.' || g % 256)::inet
  FROM generate_series(1, 20000) g;
CREATE INDEX bt_ts ON bt USING brin (ts) WITH (pages_per_range = 2);
CREATE INDEX bt_other ON bt USING brin (tag text_bloom_ops, addr inet_inclusion_ops)
  WITH (pages_per_range = 1);
CREATE INDEX bt_multi ON bt USING brin ((ts % 1000) int4_minmax_multi_ops);

-- The rows a predicate finds through a BRIN bitmap scan, against the rows
-- a sequential scan finds (count and sum of ids); says so when the plan
-- takes no BRIN index.
CREATE FUNCTION brin_check(pred text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	plan text := '';
	line text;
	via_brin text;
	via_seq text;
BEGIN
	PERFORM set_config('enable_seqscan', 'off', true);
	PERFORM set_config('enable_indexscan', 'off', true);
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) SELECT id FROM bt WHERE ' || pred LOOP
		plan := plan || line || ' ';
	END LOOP;
	EXECUTE 'SELECT count(*) || '' rows, ids summing to '' || coalesce(sum(id), 0) FROM bt WHERE '
		|| pred INTO via_brin;
	PERFORM set_config('enable_seqscan', 'on', true);
	PERFORM set_config('enable_bitmapscan', 'off', true);
	EXECUTE 'SELECT count(*) || '' rows, ids summing to '' || coalesce(sum(id), 0) FROM bt WHERE '
		|| pred INTO via_seq;
	PERFORM set_config('enable_bitmapscan', 'on', true);
	PERFORM set_config('enable_indexscan', 'on', true);
	IF plan !~ 'Bitmap Index Scan on bt_' THEN
		RETURN 'no BRIN scan: ' || plan;
	END IF;
	RETURN CASE WHEN via_brin = via_seq THEN 'agree: ' || via_seq
		ELSE 'BRIN: ' || via_brin || '; seqscan: ' || via_seq END;
END $$;

CREATE TABLE brin_preds (n int, pred text);
INSERT INTO brin_preds VALUES
  (1, 'ts BETWEEN 1000 AND 3000'), (2, 'ts = 15000'), (3, 'ts > 19990'),
  (4, 'ts < 500'), (5, 'ts > 100000'), (6, 'tag = ''t7'''), (7, 'tag = ''moved'''),
  (8, 'addr << ''10.0.5.0/24'''), (9, 'ts % 1000 = 7'), (10, 'ts < 0');
SELECT n, pred, brin_check(pred) FROM brin_preds ORDER BY n;

-- rows moved by updates of indexed columns, deleted rows, freed slots
-- taken by new rows with values far from their range's summary
UPDATE bt SET ts = ts + 100000 WHERE id % 97 = 0;
UPDATE bt SET tag = 'moved' WHERE id % 101 = 0;
DELETE FROM bt WHERE id BETWEEN 5000 AND 6000;
VACUUM bt;
INSERT INTO bt SELECT g, g % 500, 't7', '10.0.5.1' FROM generate_series(30001, 30800) g;
BEGIN;
INSERT INTO bt SELECT g, -g, 'moved', '10.0.5.2' FROM generate_series(40001, 40100) g;
ROLLBACK;
SELECT n, pred, brin_check(pred) FROM brin_preds ORDER BY n;

-- ranges left unsummarized are read whole; VACUUM summarizes new ones
SELECT brin_desummarize_range('bt_ts', 0);
SELECT brin_check('ts BETWEEN 1 AND 600');
SELECT brin_summarize_range('bt_ts', 0);
SELECT brin_check('ts BETWEEN 1 AND 600');
INSERT INTO bt SELECT g, g, 'new', '10.1.0.1' FROM generate_series(50001, 53000) g;
VACUUM bt;
SELECT brin_summarize_new_values('bt_ts') AS left_for_later;
SELECT brin_check('ts BETWEEN 50500 AND 50600');

-- a heap table with a BRIN index changed to fastckpt keeps a working index
CREATE TABLE bh (id int PRIMARY KEY, ts int) USING heap;
INSERT INTO bh SELECT g, g FROM generate_series(1, 5000) g;
CREATE INDEX bh_ts ON bh USING brin (ts);
ALTER TABLE bh SET ACCESS METHOD fastckpt;
SET enable_seqscan = off;
SET enable_indexscan = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM bh WHERE ts BETWEEN 100 AND 200;
SELECT count(*) FROM bh WHERE ts BETWEEN 100 AND 200;
RESET enable_seqscan;
RESET enable_indexscan;

DROP FUNCTION brin_check(text);
DROP TABLE bt, bh, brin_preds;
