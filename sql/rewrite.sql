--
-- rewrite: statements that give a fastckpt table new storage or create one
-- from a query: ALTER COLUMN TYPE, ADD/DROP COLUMN, SET ACCESS METHOD (both
-- ways), CREATE TABLE AS, SELECT INTO, VACUUM FULL, CLUSTER, SET TABLESPACE.
--
CREATE TABLE rw (id int PRIMARY KEY, a int, b text, c numeric(6,2)) USING fastckpt;
CREATE INDEX rw_a ON rw (a);
INSERT INTO rw SELECT g, g * 10, 'b' || g, g / 4.0 FROM generate_series(1, 20) g;
-- some history: in-place updates, moved rows, deleted rows
UPDATE rw SET b = b || '!' WHERE id % 3 = 0;
UPDATE rw SET a = -a WHERE id % 5 = 0;
DELETE FROM rw WHERE id % 7 = 0;

-- helper: read the table through a sequential scan and through its primary
-- key, and fingerprint what each returns
CREATE FUNCTION rw_show(rel regclass) RETURNS TABLE (seq_rows bigint, idx_rows bigint,
													 same boolean, fingerprint text)
LANGUAGE plpgsql AS $$
DECLARE
	seq_md5 text;
	idx_md5 text;
BEGIN
	SET LOCAL enable_indexscan = off;
	SET LOCAL enable_bitmapscan = off;
	EXECUTE format('SELECT count(*), md5(string_agg(t::text, '','' ORDER BY t::text)) FROM %s t', rel)
		INTO seq_rows, seq_md5;
	SET LOCAL enable_indexscan = on;
	SET LOCAL enable_seqscan = off;
	EXECUTE format('SELECT count(*), md5(string_agg(t::text, '','' ORDER BY t::text)) FROM %s t WHERE id > -1000000', rel)
		INTO idx_rows, idx_md5;
	same := seq_md5 IS NOT DISTINCT FROM idx_md5;
	fingerprint := left(seq_md5, 8);
	RETURN NEXT;
END;
$$;

SELECT relfilenode AS rw_node FROM pg_class WHERE relname = 'rw' \gset
SELECT * FROM rw ORDER BY id;

-- ALTER COLUMN TYPE rewrites the table into new storage
ALTER TABLE rw ALTER COLUMN a TYPE bigint;
SELECT relfilenode <> :rw_node AS new_storage FROM pg_class WHERE relname = 'rw';
SELECT fc_storage_exists(:rw_node) AS old_storage_exists, fc_has_storage('rw') AS has_storage;
SELECT pg_typeof(a), count(*), sum(a) FROM rw GROUP BY 1;
ALTER TABLE rw ALTER COLUMN c TYPE text USING 'c=' || c;
ALTER TABLE rw ALTER COLUMN b TYPE varchar(20);
SELECT * FROM rw ORDER BY id;
-- the indexes were rebuilt with the new storage
SELECT * FROM rw_show('rw');
SET enable_seqscan = off;
SELECT id, a FROM rw WHERE a = -50;
SELECT id, a FROM rw WHERE id = 20;
RESET enable_seqscan;
-- a rewrite that is rolled back keeps the old storage and rows
SELECT relfilenode AS rw_node FROM pg_class WHERE relname = 'rw' \gset
BEGIN;
ALTER TABLE rw ALTER COLUMN a TYPE numeric;
SELECT relfilenode AS rw_node_rolled_back FROM pg_class WHERE relname = 'rw' \gset
UPDATE rw SET a = a + 0.5;
ROLLBACK;
SELECT relfilenode = :rw_node AS same_storage FROM pg_class WHERE relname = 'rw';
SELECT fc_storage_exists(:rw_node_rolled_back);
SELECT pg_typeof(a), sum(a) FROM rw GROUP BY 1;
-- a type change whose USING expression fails leaves everything as it was
ALTER TABLE rw ALTER COLUMN c TYPE int USING c::int;
SELECT count(*) FROM rw;

-- ADD COLUMN: without default, with a constant default (no rewrite), with a
-- volatile default (rewrite)
SELECT relfilenode AS rw_node FROM pg_class WHERE relname = 'rw' \gset
ALTER TABLE rw ADD COLUMN d int;
ALTER TABLE rw ADD COLUMN e text DEFAULT 'default e';
ALTER TABLE rw ADD COLUMN f timestamptz DEFAULT '2024-06-01 12:00+00';
SELECT relfilenode = :rw_node AS same_storage FROM pg_class WHERE relname = 'rw';
SELECT id, d, e, f FROM rw WHERE id <= 3 ORDER BY id;
-- old rows (stored without the new columns) and new rows side by side
INSERT INTO rw (id, a, b, c, d) VALUES (100, 1, 'new', 'c', 4);
UPDATE rw SET d = id * 2 WHERE id IN (1, 2);
UPDATE rw SET e = 'changed e' WHERE id = 3;
SELECT id, d, e FROM rw WHERE id <= 3 OR id = 100 ORDER BY id;
CREATE SEQUENCE rw_seq;
ALTER TABLE rw ADD COLUMN g int DEFAULT nextval('rw_seq');
SELECT relfilenode <> :rw_node AS new_storage FROM pg_class WHERE relname = 'rw';
SELECT fc_storage_exists(:rw_node);
SELECT count(DISTINCT g), min(g), max(g) FROM rw;
-- (which row got which number depends on the scan order: make it stable)
UPDATE rw SET g = id;
SELECT * FROM rw_show('rw');

-- DROP COLUMN
ALTER TABLE rw DROP COLUMN b;
ALTER TABLE rw DROP COLUMN d;
SELECT * FROM rw WHERE id <= 3 ORDER BY id;
INSERT INTO rw (id, a, c) VALUES (101, 2, 'after drop');
UPDATE rw SET c = 'updated after drop' WHERE id IN (1, 101);
SELECT id, a, c, e, g FROM rw WHERE id IN (1, 101) ORDER BY id;
-- a column added after a DROP COLUMN, then a rewrite
ALTER TABLE rw ADD COLUMN b2 text DEFAULT 'b2';
ALTER TABLE rw ALTER COLUMN a TYPE int;
SELECT id, a, c, e, b2 FROM rw WHERE id IN (1, 101) ORDER BY id;
SELECT * FROM rw_show('rw');

-- ALTER TABLE heap_table SET ACCESS METHOD fastckpt, and back to heap
CREATE TABLE rw_am (id int PRIMARY KEY, v text, n int) USING heap;
CREATE INDEX rw_am_n ON rw_am (n);
INSERT INTO rw_am SELECT g, 'v' || g, g % 10 FROM generate_series(1, 500) g;
DELETE FROM rw_am WHERE id > 490;
SELECT count(*), sum(n) FROM rw_am;
ALTER TABLE rw_am SET ACCESS METHOD fastckpt;
-- now an unlogged fastckpt table, with the same rows and working indexes
SELECT c.relpersistence, a.amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE c.relname = 'rw_am';
SELECT relpersistence FROM pg_class WHERE relname IN ('rw_am_pkey', 'rw_am_n');
SELECT fc_has_storage('rw_am');
SELECT count(*), sum(n) FROM rw_am;
SELECT * FROM rw_show('rw_am');
SET enable_seqscan = off;
SELECT * FROM rw_am WHERE id = 250;
SELECT count(*) FROM rw_am WHERE n = 3;
RESET enable_seqscan;
UPDATE rw_am SET v = 'in fastckpt' WHERE id = 1;
-- together with other subcommands
ALTER TABLE rw_am SET ACCESS METHOD heap, ALTER COLUMN n TYPE bigint;
SELECT relfilenode AS rw_am_node FROM pg_class WHERE relname = 'rw_am' \gset
-- back in heap: the table stays unlogged until SET LOGGED
SELECT c.relpersistence, a.amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE c.relname = 'rw_am';
SELECT fc_has_storage('rw_am');
SELECT * FROM rw_am WHERE id = 1;
SELECT * FROM rw_show('rw_am');
ALTER TABLE rw_am SET LOGGED;
SELECT relpersistence FROM pg_class WHERE relname = 'rw_am';
-- a rolled-back SET ACCESS METHOD changes nothing
BEGIN;
ALTER TABLE rw_am SET ACCESS METHOD fastckpt;
SELECT relfilenode AS rw_am_node FROM pg_class WHERE relname = 'rw_am' \gset
ROLLBACK;
SELECT c.relpersistence, a.amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE c.relname = 'rw_am';
SELECT fc_storage_exists(:rw_am_node);
-- an unlogged heap table becomes fastckpt too
CREATE UNLOGGED TABLE rw_am2 (x int) USING heap;
INSERT INTO rw_am2 VALUES (1), (2);
ALTER TABLE rw_am2 SET ACCESS METHOD fastckpt;
SELECT c.relpersistence, a.amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE c.relname = 'rw_am2';
SELECT * FROM rw_am2 ORDER BY x;

-- CREATE TABLE ... USING fastckpt AS SELECT
CREATE TABLE rw_ctas USING fastckpt AS
	SELECT g AS id, 'name ' || g AS name, g % 3 AS grp FROM generate_series(1, 100) g;
SELECT c.relpersistence, a.amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE c.relname = 'rw_ctas';
SELECT count(*), sum(id), count(DISTINCT grp) FROM rw_ctas;
CREATE TABLE rw_ctas_empty USING fastckpt AS SELECT * FROM rw_ctas WITH NO DATA;
SELECT count(*) FROM rw_ctas_empty;
INSERT INTO rw_ctas_empty SELECT * FROM rw_ctas WHERE grp = 0;
SELECT count(*) FROM rw_ctas_empty;
PREPARE rw_q (int) AS SELECT * FROM rw_ctas WHERE grp = $1;
CREATE TABLE rw_ctas_exec USING fastckpt AS EXECUTE rw_q (1);
SELECT count(*) FROM rw_ctas_exec;
DEALLOCATE rw_q;
-- SELECT INTO and CREATE TABLE AS with default_table_access_method
SET default_table_access_method = fastckpt;
SELECT id, name INTO rw_into FROM rw_ctas WHERE id <= 10;
CREATE TABLE rw_ctas_default AS SELECT id FROM rw_ctas WHERE grp = 2;
RESET default_table_access_method;
SELECT c.relname, c.relpersistence, a.amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam
 WHERE c.relname IN ('rw_into', 'rw_ctas_default') ORDER BY 1;
SELECT count(*), sum(id) FROM rw_into;
SELECT count(*), sum(id) FROM rw_ctas_default;
-- EXPLAIN ANALYZE of CREATE TABLE AS and SELECT INTO creates the table too
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
	CREATE TABLE rw_ctas_explain USING fastckpt AS SELECT id FROM rw_ctas WHERE grp = 1;
SET default_table_access_method = fastckpt;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
	SELECT id INTO rw_into_explain FROM rw_ctas WHERE grp = 0;
RESET default_table_access_method;
SELECT c.relname, c.relpersistence, a.amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam
 WHERE c.relname IN ('rw_ctas_explain', 'rw_into_explain') ORDER BY 1;
SELECT count(*), sum(id) FROM rw_ctas_explain;
SELECT count(*), sum(id) FROM rw_into_explain;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
	CREATE MATERIALIZED VIEW rw_mv_explain USING fastckpt AS SELECT 1;
-- CREATE TEMP TABLE AS keeps its persistence
CREATE TEMP TABLE rw_ctas_temp USING fastckpt AS SELECT 1 AS x;
SELECT relpersistence FROM pg_class WHERE relname = 'rw_ctas_temp';

-- VACUUM FULL: new storage, same rows, dead rows gone, indexes rebuilt
CREATE TABLE rw_vf (id int PRIMARY KEY, v text) USING fastckpt WITH (autovacuum_enabled = off);
INSERT INTO rw_vf SELECT g, 'v' || g FROM generate_series(1, 1000) g;
DELETE FROM rw_vf WHERE id % 2 = 0;
UPDATE rw_vf SET v = 'updated' WHERE id % 3 = 0;
UPDATE rw_vf SET id = id + 10000 WHERE id % 5 = 0;
SELECT relfilenode AS rw_vf_node FROM pg_class WHERE relname = 'rw_vf' \gset
SELECT * FROM rw_show('rw_vf');
VACUUM FULL rw_vf;
SELECT relfilenode <> :rw_vf_node AS new_storage FROM pg_class WHERE relname = 'rw_vf';
SELECT fc_storage_exists(:rw_vf_node) AS old_storage_exists;
SELECT * FROM fc_rows('rw_vf');
SELECT * FROM rw_show('rw_vf');
SET enable_seqscan = off;
SELECT * FROM rw_vf WHERE id IN (3, 5, 10005) ORDER BY id;
RESET enable_seqscan;
-- the copied rows can be updated, in place and moved
UPDATE rw_vf SET v = 'after vacuum full' WHERE id = 3;
UPDATE rw_vf SET id = 5 WHERE id = 10005;
SELECT * FROM rw_show('rw_vf');
SELECT * FROM rw_vf WHERE id IN (3, 5, 10005) ORDER BY id;
VACUUM (FULL, ANALYZE) rw_vf;
SELECT reltuples FROM pg_class WHERE relname = 'rw_vf';

-- CLUSTER: rows come back in index order
CREATE TABLE rw_cl (id int, v text) USING fastckpt;
INSERT INTO rw_cl SELECT g, 'v' || g FROM generate_series(10, 1, -1) g;
CREATE INDEX rw_cl_id ON rw_cl (id);
SELECT relfilenode AS rw_cl_node FROM pg_class WHERE relname = 'rw_cl' \gset
CLUSTER rw_cl USING rw_cl_id;
SELECT relfilenode <> :rw_cl_node AS new_storage FROM pg_class WHERE relname = 'rw_cl';
SELECT fc_storage_exists(:rw_cl_node) AS old_storage_exists;
SELECT * FROM rw_cl;
INSERT INTO rw_cl VALUES (0, 'v0');
UPDATE rw_cl SET v = 'updated' WHERE id = 5;
CLUSTER rw_cl;
SELECT * FROM rw_cl;
SET enable_seqscan = off;
SELECT * FROM rw_cl WHERE id = 5;
RESET enable_seqscan;
SELECT indisclustered FROM pg_index WHERE indexrelid = 'rw_cl_id'::regclass;
-- CLUSTER in the transaction that deleted rows and moved one (its
-- indexed column changed): neither the deleted rows nor the moved row's
-- old version come back
BEGIN;
DELETE FROM rw_cl WHERE id <= 2;
UPDATE rw_cl SET id = id + 100 WHERE id = 3;
CLUSTER rw_cl;
SELECT * FROM rw_cl;
COMMIT;
SELECT * FROM rw_cl;
SET enable_seqscan = off;
SELECT * FROM rw_cl WHERE id IN (1, 3, 103);
RESET enable_seqscan;

-- ALTER TABLE ... SET TABLESPACE copies the rows to new storage
SET allow_in_place_tablespaces = on;
CREATE TABLESPACE regress_fc_tblspc LOCATION '';
CREATE TABLE rw_ts (id int PRIMARY KEY, v text) USING fastckpt;
INSERT INTO rw_ts SELECT g, 'v' || g FROM generate_series(1, 20) g;
UPDATE rw_ts SET v = 'updated' WHERE id <= 5;
-- leave free slots in the table
DELETE FROM rw_ts WHERE id IN (1, 2, 10);
VACUUM rw_ts;
SELECT relfilenode AS rw_ts_node FROM pg_class WHERE relname = 'rw_ts' \gset
ALTER TABLE rw_ts SET TABLESPACE regress_fc_tblspc;
SELECT fc_storage_exists(:rw_ts_node) AS old_storage_exists, fc_has_storage('rw_ts') AS has_storage;
SELECT * FROM rw_show('rw_ts');
SET enable_seqscan = off;
SELECT * FROM rw_ts WHERE id IN (3, 4, 11, 20) ORDER BY id;
RESET enable_seqscan;
INSERT INTO rw_ts VALUES (21, 'after move');
UPDATE rw_ts SET v = 'updated after move' WHERE id = 3;
SELECT * FROM rw_show('rw_ts');
-- and back
ALTER TABLE rw_ts SET TABLESPACE pg_default;
SELECT * FROM rw_show('rw_ts');
SELECT * FROM rw_ts WHERE id <= 5 ORDER BY id;
DROP TABLE rw_ts;
SET statement_timeout = '10s';
DROP TABLESPACE regress_fc_tblspc;
RESET statement_timeout;

-- ALTER COLUMN ... TYPE and ADD COLUMN that PostgreSQL does without a
-- rewrite: slots grow by what the new columns need, so rows they allow fit
-- (varchar(10) to varchar(100); a new bounded column; a domain's bound),
-- inside a transaction block too, and a rollback keeps the old table
CREATE TABLE rw_wide (id int PRIMARY KEY, s varchar(10)) USING fastckpt;
INSERT INTO rw_wide VALUES (1, 'short');
SELECT row_image_bytes AS wide_before FROM fastckpt_stat_tables
 WHERE relation = 'rw_wide'::regclass \gset
ALTER TABLE rw_wide ALTER COLUMN s TYPE varchar(100);
INSERT INTO rw_wide VALUES (2, repeat('ab', 40));
SELECT row_image_bytes > :wide_before AS grew FROM fastckpt_stat_tables
 WHERE relation = 'rw_wide'::regclass;
CREATE DOMAIN rw_code AS varchar(300);
BEGIN;
ALTER TABLE rw_wide ADD COLUMN c rw_code;
INSERT INTO rw_wide VALUES (3, 'x', repeat('c', 288));
ROLLBACK;
SELECT id, length(s) FROM rw_wide ORDER BY id;
ALTER TABLE rw_wide ADD COLUMN c rw_code;
INSERT INTO rw_wide VALUES (3, 'x', repeat('c', 288));
UPDATE rw_wide SET c = repeat('d', 300) WHERE id = 1;
SET enable_seqscan = off;
SELECT id, length(s), length(c) FROM rw_wide WHERE id IN (1, 2, 3) ORDER BY id;
RESET enable_seqscan;
-- a change that needs no more room does not rewrite
SELECT relfilenode AS rw_wide_node FROM pg_class WHERE relname = 'rw_wide' \gset
ALTER TABLE rw_wide ALTER COLUMN s TYPE varchar(100);
ALTER TABLE rw_wide ADD CONSTRAINT rw_wide_id CHECK (id > 0);
SELECT relfilenode = :rw_wide_node AS same_storage FROM pg_class WHERE relname = 'rw_wide';
DROP TABLE rw_wide;
DROP DOMAIN rw_code;

-- a table made under a larger default_row_size keeps it as a storage
-- parameter, and its slots through ALTER TABLE's own rewrites in a session
-- with the default; without the parameter, VACUUM FULL sizes them afresh
-- but keeps room for the longest row it copies, and TRUNCATE keeps the
-- slots, so the same rows load again
SET pg_fastckpt.default_row_size = 4096;
CREATE TABLE rw_big (id int PRIMARY KEY, v text) USING fastckpt;
INSERT INTO rw_big SELECT g, string_agg(md5(g::text || x::text), '')
  FROM generate_series(1, 20) g, generate_series(1, 60) x GROUP BY g;
RESET pg_fastckpt.default_row_size;
SELECT row_image_bytes AS big_before FROM fastckpt_stat_tables
 WHERE relation = 'rw_big'::regclass \gset
ALTER TABLE rw_big ALTER COLUMN id TYPE bigint;
ALTER TABLE rw_big ADD COLUMN r float8 DEFAULT random();
SELECT count(*), sum(length(v)), count(r) FROM rw_big;
SELECT row_image_bytes >= :big_before AS kept FROM fastckpt_stat_tables
 WHERE relation = 'rw_big'::regclass;
SELECT reloptions FROM pg_class WHERE relname = 'rw_big';
ALTER TABLE rw_big RESET (fastckpt_row_size);
VACUUM FULL rw_big;
SELECT count(*), sum(length(v)) FROM rw_big;
SELECT row_image_bytes < :big_before AS shrunk, row_image_bytes AS after_vacuum_full
  FROM fastckpt_stat_tables WHERE relation = 'rw_big'::regclass \gset
SELECT :'shrunk' AS shrunk;
CREATE TEMP TABLE rw_big_copy AS SELECT * FROM rw_big;
TRUNCATE rw_big;
SELECT row_image_bytes = :after_vacuum_full AS kept FROM fastckpt_stat_tables
 WHERE relation = 'rw_big'::regclass;
INSERT INTO rw_big SELECT * FROM rw_big_copy;
SELECT count(*), sum(length(v)) FROM rw_big;
DROP TABLE rw_big, rw_big_copy;
-- a table made with the default sizing keeps it through VACUUM FULL and
-- CLUSTER in a session with other settings (h49: they took the session's)
CREATE TABLE rw_dflt (id int PRIMARY KEY, t text, c varchar(50)) USING fastckpt;
INSERT INTO rw_dflt VALUES (1, 'short', 'abc');
SELECT row_image_bytes AS dflt_before FROM fastckpt_stat_tables
 WHERE relation = 'rw_dflt'::regclass \gset
SET pg_fastckpt.default_row_size = 64;
SET pg_fastckpt.bytes_per_char = 1;
VACUUM FULL rw_dflt;
SELECT row_image_bytes = :dflt_before AS kept_vacuum_full FROM fastckpt_stat_tables
 WHERE relation = 'rw_dflt'::regclass;
CLUSTER rw_dflt USING rw_dflt_pkey;
SELECT row_image_bytes = :dflt_before AS kept_cluster FROM fastckpt_stat_tables
 WHERE relation = 'rw_dflt'::regclass;
RESET pg_fastckpt.default_row_size;
RESET pg_fastckpt.bytes_per_char;
INSERT INTO rw_dflt VALUES (2, repeat('y', 100), repeat('é', 41));
SELECT id, length(t), length(c) FROM rw_dflt ORDER BY id;
DROP TABLE rw_dflt;
-- a heap table turned into a fastckpt one gets its first storage then:
-- sized by the session, as by CREATE TABLE, and that sizing kept
SET pg_fastckpt.default_row_size = 1024;
CREATE TABLE rw_conv (id int, t text) USING heap;
ALTER TABLE rw_conv SET ACCESS METHOD fastckpt;
RESET pg_fastckpt.default_row_size;
SELECT row_image_bytes FROM fastckpt_stat_tables WHERE relation = 'rw_conv'::regclass;
SELECT reloptions FROM pg_class WHERE relname = 'rw_conv';
VACUUM FULL rw_conv;
SELECT row_image_bytes FROM fastckpt_stat_tables WHERE relation = 'rw_conv'::regclass;
DROP TABLE rw_conv;
-- a heap table whose rows do not fit the new slots: the error names it
CREATE TABLE rw_heap_big (id int, v text) USING heap;
INSERT INTO rw_heap_big SELECT 1, string_agg(md5(x::text), '') FROM generate_series(1, 100) x;
ALTER TABLE rw_heap_big SET ACCESS METHOD fastckpt;
DROP TABLE rw_heap_big;
-- a typed table's slots grow with its type (ALTER TYPE ... CASCADE)
CREATE TYPE rw_row AS (id int, s varchar(10));
CREATE TABLE rw_typed OF rw_row USING fastckpt;
SELECT row_image_bytes AS typed_before FROM fastckpt_stat_tables
 WHERE relation = 'rw_typed'::regclass \gset
ALTER TYPE rw_row ALTER ATTRIBUTE s TYPE varchar(400) CASCADE;
SELECT row_image_bytes > :typed_before AS grown FROM fastckpt_stat_tables
 WHERE relation = 'rw_typed'::regclass;
INSERT INTO rw_typed SELECT 1, string_agg(chr(1000 + (g * 7919) % 900), '') FROM generate_series(1, 400) g;
ALTER TYPE rw_row ADD ATTRIBUTE t varchar(300) CASCADE;
INSERT INTO rw_typed SELECT 2, 'x', string_agg(chr(1000 + (g * 7919) % 900), '') FROM generate_series(1, 300) g;
SELECT id, length(s), length(t) FROM rw_typed ORDER BY id;
DROP TABLE rw_typed;
DROP TYPE rw_row;
-- a bounded column added beside an unbounded one: rows that filled their
-- slots still take an UPDATE, which stores them with the new column (h37)
CREATE TABLE rw_full (id int, t text) USING fastckpt;
INSERT INTO rw_full SELECT 1, string_agg(md5(g::text), '') FROM generate_series(1, 7) g;
ALTER TABLE rw_full ADD COLUMN x bigint DEFAULT 1;
UPDATE rw_full SET x = 2;
UPDATE rw_full SET id = id;
SELECT id, length(t), x FROM rw_full;
DROP TABLE rw_full;
-- a column type change that PostgreSQL rewrites sizes the slots for the
-- new columns, as a table created with them (no second rewrite)
CREATE TABLE rw_retype (id int, k int, v varchar(20)) USING fastckpt;
INSERT INTO rw_retype SELECT g, g, 'v' FROM generate_series(1, 100) g;
ALTER TABLE rw_retype ALTER COLUMN k TYPE bigint;
CREATE TABLE rw_retyped (id int, k bigint, v varchar(20)) USING fastckpt;
SELECT a.row_image_bytes = b.row_image_bytes AS sized_as_created
  FROM fastckpt_stat_tables a, fastckpt_stat_tables b
 WHERE a.relation = 'rw_retype'::regclass AND b.relation = 'rw_retyped'::regclass;
SELECT count(*), sum(k) FROM rw_retype;
DROP TABLE rw_retype, rw_retyped;
-- ... also the partitions of a partitioned typed table
CREATE TYPE rw_prow AS (id int, s varchar(10));
CREATE TABLE rw_typed_part OF rw_prow (PRIMARY KEY (id)) PARTITION BY RANGE (id);
CREATE TABLE rw_typed_part1 PARTITION OF rw_typed_part FOR VALUES FROM (0) TO (100) USING fastckpt;
ALTER TYPE rw_prow ADD ATTRIBUTE u varchar(200) CASCADE;
INSERT INTO rw_typed_part SELECT 5, 'x', string_agg(chr(1000 + (g * 7919) % 900), '') FROM generate_series(1, 200) g;
ALTER TYPE rw_prow ALTER ATTRIBUTE s TYPE varchar(300) CASCADE;
UPDATE rw_typed_part SET s = (SELECT string_agg(chr(1000 + (g * 7919) % 900), '') FROM generate_series(1, 300) g);
SELECT id, length(s), length(u) FROM rw_typed_part ORDER BY id;
DROP TABLE rw_typed_part;
DROP TYPE rw_prow;
-- a type change that grows a row by alignment alone: after the text, a
-- 1-byte "char" packs at any offset, a smallint is padded to an even one
-- (the longest row fits its 64-byte slot exactly, and needs 66 after)
SET pg_fastckpt.default_row_size = 64;
CREATE TABLE rw_pad (id int, t text, a "char") USING fastckpt;
RESET pg_fastckpt.default_row_size;
INSERT INTO rw_pad VALUES (1, repeat('x', 34), 'a');
ALTER TABLE rw_pad ALTER COLUMN a TYPE smallint USING ascii(a::text);
SELECT row_image_bytes > 64 AS grown FROM fastckpt_stat_tables WHERE relation = 'rw_pad'::regclass;
UPDATE rw_pad SET a = a + 1;
SELECT id, length(t), a FROM rw_pad;
DROP TABLE rw_pad;

DROP TABLE rw, rw_am, rw_am2, rw_ctas, rw_ctas_empty, rw_ctas_exec, rw_into,
	rw_ctas_explain, rw_into_explain,
	rw_ctas_default, rw_vf, rw_cl;
DROP SEQUENCE rw_seq;
DROP FUNCTION rw_show(regclass);
