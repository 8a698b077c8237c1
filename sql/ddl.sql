--
-- ddl: creating, altering and dropping fastckpt tables.
--
CREATE TABLE ddl_t1 (
	id int PRIMARY KEY,
	name text NOT NULL,
	score numeric(8,2) DEFAULT 0
) USING fastckpt;

-- PostgreSQL sees an unlogged table; the access method is fastckpt
-- (pg_regress hides the access method from \d+ unless asked)
\set HIDE_TABLEAM off
\d+ ddl_t1
\set HIDE_TABLEAM on
SELECT c.relname, c.relkind, c.relpersistence, a.amname
  FROM pg_class c LEFT JOIN pg_am a ON a.oid = c.relam
 WHERE c.relname IN ('ddl_t1', 'ddl_t1_pkey')
 ORDER BY 1;
-- its storage exists in the store right away, empty
SELECT fc_has_storage('ddl_t1');
SELECT * FROM fc_rows('ddl_t1');
SELECT count(*) FROM ddl_t1;

INSERT INTO ddl_t1 VALUES (1, 'one', 1.5), (2, 'two', DEFAULT);
SELECT * FROM ddl_t1 ORDER BY id;

-- default_table_access_method picks fastckpt for tables without USING
SET default_table_access_method = fastckpt;
CREATE TABLE ddl_t2 (a int, b text);
CREATE TABLE ddl_t3 (a int) USING heap;
RESET default_table_access_method;
CREATE TABLE ddl_t4 (a int);
SELECT c.relname, c.relpersistence, a.amname
  FROM pg_class c JOIN pg_am a ON a.oid = c.relam
 WHERE c.relname IN ('ddl_t2', 'ddl_t3', 'ddl_t4')
 ORDER BY 1;

-- an explicit UNLOGGED is accepted as well
CREATE UNLOGGED TABLE ddl_t5 (a int) USING fastckpt;
SELECT relpersistence FROM pg_class WHERE relname = 'ddl_t5';

-- temporary tables keep their persistence
CREATE TEMP TABLE ddl_tmp (a int, b text) USING fastckpt;
INSERT INTO ddl_tmp VALUES (1, 'temp');
SELECT * FROM ddl_tmp;
SELECT relpersistence FROM pg_class WHERE relname = 'ddl_tmp';
-- ... and end with their session, so nothing of them is logged: not their
-- rows, nor their storages (a lasting table's row is, for comparison)
SELECT values_records + call_records + ddl_records AS records_before
  FROM fastckpt_stat_log \gset
INSERT INTO ddl_tmp VALUES (2, 'temp');
UPDATE ddl_tmp SET b = 'changed' WHERE a = 1;
DELETE FROM ddl_tmp WHERE a = 2;
TRUNCATE ddl_tmp;
INSERT INTO ddl_tmp VALUES (3, 'after truncate');
CREATE TEMP TABLE ddl_tmp2 USING fastckpt AS SELECT * FROM ddl_tmp;
DROP TABLE ddl_tmp2;
SELECT values_records + call_records + ddl_records - :records_before AS temp_records
  FROM fastckpt_stat_log;
INSERT INTO ddl_t5 VALUES (1);
SELECT values_records + call_records + ddl_records - :records_before AS lasting_records
  FROM fastckpt_stat_log;
SELECT * FROM ddl_tmp;
DROP TABLE ddl_tmp;
-- a temporary table of the same name does not keep the new table's serial
-- sequence unlogged (it would be reset by a crash); from a cached plan the
-- statement's name stays unqualified
CREATE TEMP TABLE ddl_shadow (x int) USING heap;
DO $$ BEGIN CREATE UNLOGGED TABLE ddl_shadow (id serial, v text) USING fastckpt; END $$;
SELECT n.nspname = 'public' AS in_public, c.relpersistence
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE c.relname = 'ddl_shadow_id_seq';
DROP TABLE ddl_shadow;
DROP TABLE public.ddl_shadow;

-- IF NOT EXISTS, LIKE, schemas
CREATE TABLE IF NOT EXISTS ddl_t1 (x int) USING fastckpt;
CREATE TABLE ddl_like (LIKE ddl_t1 INCLUDING ALL) USING fastckpt;
\d ddl_like
INSERT INTO ddl_like SELECT * FROM ddl_t1;
SELECT * FROM ddl_like ORDER BY id;
CREATE SCHEMA ddl_schema;
CREATE TABLE ddl_schema.t (x int PRIMARY KEY) USING fastckpt;
INSERT INTO ddl_schema.t VALUES (1), (2);
SELECT * FROM ddl_schema.t ORDER BY x;

-- a table without columns
CREATE TABLE ddl_nocols () USING fastckpt;
INSERT INTO ddl_nocols DEFAULT VALUES;
INSERT INTO ddl_nocols DEFAULT VALUES;
SELECT count(*) FROM ddl_nocols;
ALTER TABLE ddl_nocols ADD COLUMN x int DEFAULT 7;
SELECT * FROM ddl_nocols;

-- identity, serial and generated columns
CREATE TABLE ddl_gen (
	id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	s serial,
	a int,
	b int GENERATED ALWAYS AS (a * 2) STORED
) USING fastckpt;
INSERT INTO ddl_gen (a) VALUES (1), (2), (NULL);
UPDATE ddl_gen SET a = 10 WHERE id = 1;
SELECT * FROM ddl_gen ORDER BY id;
INSERT INTO ddl_gen (id, a) VALUES (100, 1);

-- ALTER TABLE that does not rewrite: renames, defaults, constraints, comments
ALTER TABLE ddl_t1 RENAME TO ddl_renamed;
ALTER TABLE ddl_renamed RENAME COLUMN name TO title;
ALTER TABLE ddl_renamed ALTER COLUMN score SET DEFAULT 9.99;
ALTER TABLE ddl_renamed ADD CONSTRAINT ddl_score_positive CHECK (score >= 0);
COMMENT ON TABLE ddl_renamed IS 'a renamed fastckpt table';
INSERT INTO ddl_renamed (id, title) VALUES (3, 'three');
INSERT INTO ddl_renamed VALUES (4, 'four', -1);
SELECT * FROM ddl_renamed ORDER BY id;
SELECT fc_has_storage('ddl_renamed');
SELECT obj_description('ddl_renamed'::regclass, 'pg_class');
ALTER TABLE ddl_renamed ALTER COLUMN title DROP NOT NULL;
INSERT INTO ddl_renamed VALUES (5, NULL, 5);
ALTER TABLE ddl_renamed ALTER COLUMN title SET NOT NULL;
DELETE FROM ddl_renamed WHERE id = 5;
ALTER TABLE ddl_renamed ALTER COLUMN title SET NOT NULL;
ALTER TABLE ddl_renamed SET SCHEMA ddl_schema;
SELECT * FROM ddl_schema.ddl_renamed ORDER BY id;
ALTER TABLE ddl_schema.ddl_renamed SET SCHEMA public;

-- partitioned tables with fastckpt partitions
CREATE TABLE ddl_part (k int, v text) PARTITION BY RANGE (k);
CREATE TABLE ddl_part_1 PARTITION OF ddl_part FOR VALUES FROM (0) TO (100) USING fastckpt;
CREATE TABLE ddl_part_2 PARTITION OF ddl_part FOR VALUES FROM (100) TO (200) USING fastckpt;
CREATE TABLE ddl_part_3 PARTITION OF ddl_part FOR VALUES FROM (200) TO (300) USING heap;
INSERT INTO ddl_part VALUES (1, 'a'), (150, 'b'), (250, 'c'), (99, 'd');
SELECT tableoid::regclass, * FROM ddl_part ORDER BY k;
-- an UPDATE that moves a row across partitions
UPDATE ddl_part SET k = 101 WHERE k = 99;
UPDATE ddl_part SET k = 201 WHERE k = 1;
SELECT tableoid::regclass, * FROM ddl_part ORDER BY k;
SELECT c.relname, c.relpersistence, a.amname
  FROM pg_class c LEFT JOIN pg_am a ON a.oid = c.relam
 WHERE c.relname LIKE 'ddl_part%' ORDER BY 1;
ALTER TABLE ddl_part DETACH PARTITION ddl_part_2;
SELECT * FROM ddl_part_2 ORDER BY k;
ALTER TABLE ddl_part ATTACH PARTITION ddl_part_2 FOR VALUES FROM (100) TO (200);
SELECT count(*) FROM ddl_part;

-- inheritance
CREATE TABLE ddl_parent (a int) USING fastckpt;
CREATE TABLE ddl_child (b text) INHERITS (ddl_parent) USING fastckpt;
INSERT INTO ddl_parent VALUES (1);
INSERT INTO ddl_child VALUES (2, 'child');
SELECT tableoid::regclass, a FROM ddl_parent ORDER BY a;
SELECT * FROM ONLY ddl_parent;

-- views and rules over fastckpt tables
CREATE VIEW ddl_view AS SELECT id, title FROM ddl_renamed WHERE id < 4;
SELECT * FROM ddl_view ORDER BY id;
UPDATE ddl_view SET title = 'ONE' WHERE id = 1;
INSERT INTO ddl_view VALUES (0, 'zero');
SELECT * FROM ddl_renamed ORDER BY id;

-- DDL is transactional: a rolled-back CREATE leaves no storage behind
BEGIN;
CREATE TABLE ddl_rollback (a int) USING fastckpt;
INSERT INTO ddl_rollback SELECT generate_series(1, 1000);
SELECT relfilenode AS ddl_rollback_node FROM pg_class WHERE relname = 'ddl_rollback' \gset
SELECT fc_storage_exists(:ddl_rollback_node);
ROLLBACK;
SELECT to_regclass('ddl_rollback');
SELECT fc_storage_exists(:ddl_rollback_node);

-- ... and the same inside a subtransaction
BEGIN;
SAVEPOINT s;
CREATE TABLE ddl_rollback (a int) USING fastckpt;
INSERT INTO ddl_rollback VALUES (1);
SELECT relfilenode AS ddl_rollback_node FROM pg_class WHERE relname = 'ddl_rollback' \gset
ROLLBACK TO s;
SELECT fc_storage_exists(:ddl_rollback_node);
COMMIT;

-- a rolled-back DROP keeps the table and its rows
SELECT relfilenode AS ddl_t2_node FROM pg_class WHERE relname = 'ddl_t2' \gset
INSERT INTO ddl_t2 VALUES (1, 'kept'), (2, 'also kept');
BEGIN;
DROP TABLE ddl_t2;
ROLLBACK;
SELECT * FROM ddl_t2 ORDER BY a;
SELECT fc_storage_exists(:ddl_t2_node);
-- a committed DROP frees the storage
DROP TABLE ddl_t2;
SELECT fc_storage_exists(:ddl_t2_node);

-- DROP ... CASCADE through a schema
SELECT relfilenode AS ddl_schema_node FROM pg_class WHERE oid = 'ddl_schema.t'::regclass \gset
DROP SCHEMA ddl_schema CASCADE;
SELECT fc_storage_exists(:ddl_schema_node);

-- clean up
DROP VIEW ddl_view;
DROP TABLE ddl_renamed, ddl_t3, ddl_t4, ddl_t5, ddl_like, ddl_nocols, ddl_gen,
	ddl_part, ddl_parent, ddl_child;
SELECT count(*) FROM pg_class c JOIN pg_am a ON a.oid = c.relam
 WHERE a.amname = 'fastckpt' AND c.relname LIKE 'ddl%';
