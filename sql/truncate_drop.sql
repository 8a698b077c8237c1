--
-- truncate_drop: TRUNCATE (transactional, in the transaction that created
-- the table, with savepoints, CASCADE, RESTART IDENTITY) and DROP, with the
-- store's memory given back.
--
CREATE TABLE tr (id serial PRIMARY KEY, v text) USING fastckpt;
INSERT INTO tr (v) SELECT 'row ' || g FROM generate_series(1, 1000) g;
SELECT relfilenode AS tr_node0 FROM pg_class WHERE relname = 'tr' \gset

-- a rolled-back TRUNCATE brings the rows back
BEGIN;
TRUNCATE tr;
SELECT count(*) FROM tr;
INSERT INTO tr (v) VALUES ('inserted after truncate');
SELECT count(*) FROM tr;
ROLLBACK;
SELECT count(*), min(id), max(id) FROM tr;
SELECT relfilenode = :tr_node0 AS same_storage FROM pg_class WHERE relname = 'tr';
SELECT fc_storage_exists(:tr_node0);
SET enable_seqscan = off;
SELECT * FROM tr WHERE id = 500;
RESET enable_seqscan;

-- ... and so does rolling back to a savepoint taken before it
BEGIN;
UPDATE tr SET v = 'updated' WHERE id = 1;
SAVEPOINT s;
TRUNCATE tr;
INSERT INTO tr (v) VALUES ('lost');
ROLLBACK TO s;
SELECT count(*) FROM tr;
SELECT * FROM tr WHERE id IN (1, 2) ORDER BY id;
COMMIT;
SELECT * FROM tr WHERE id IN (1, 2) ORDER BY id;

-- a committed TRUNCATE: new empty storage, the old one is freed
BEGIN;
TRUNCATE tr;
SELECT relfilenode AS tr_node1 FROM pg_class WHERE relname = 'tr' \gset
-- until commit, both storages exist
SELECT fc_storage_exists(:tr_node0) AS old_storage, fc_storage_exists(:tr_node1) AS new_storage;
COMMIT;
SELECT fc_storage_exists(:tr_node0) AS old_storage, fc_storage_exists(:tr_node1) AS new_storage;
SELECT count(*) FROM tr;
SELECT * FROM fc_rows('tr');
-- the sequence is not reset without RESTART IDENTITY
INSERT INTO tr (v) VALUES ('after truncate') RETURNING id;
TRUNCATE tr RESTART IDENTITY;
INSERT INTO tr (v) VALUES ('after restart identity') RETURNING id;
SELECT * FROM tr;

-- TRUNCATE in the transaction that created the table
BEGIN;
CREATE TABLE tr_new (a int PRIMARY KEY, b text) USING fastckpt;
INSERT INTO tr_new SELECT g, 'b' || g FROM generate_series(1, 100) g;
SELECT relfilenode AS tr_new_node FROM pg_class WHERE relname = 'tr_new' \gset
TRUNCATE tr_new;
SELECT count(*) FROM tr_new;
INSERT INTO tr_new VALUES (1, 'kept'), (2, 'kept');
COMMIT;
SELECT * FROM tr_new ORDER BY a;
SELECT count(*) FROM tr_new WHERE a = 50;
SET enable_seqscan = off;
SELECT * FROM tr_new WHERE a = 2;
RESET enable_seqscan;
-- ... rolled back: the table and all its storage disappear
BEGIN;
CREATE TABLE tr_gone (a int) USING fastckpt;
INSERT INTO tr_gone SELECT generate_series(1, 100);
SELECT relfilenode AS tr_gone_node0 FROM pg_class WHERE relname = 'tr_gone' \gset
TRUNCATE tr_gone;
SELECT relfilenode AS tr_gone_node1 FROM pg_class WHERE relname = 'tr_gone' \gset
INSERT INTO tr_gone VALUES (1);
ROLLBACK;
SELECT to_regclass('tr_gone');
SELECT fc_storage_exists(:tr_gone_node0), fc_storage_exists(:tr_gone_node1);
-- ... and truncated in a subtransaction that is rolled back
BEGIN;
CREATE TABLE tr_sub (a int) USING fastckpt;
INSERT INTO tr_sub VALUES (1), (2), (3);
SAVEPOINT s;
TRUNCATE tr_sub;
INSERT INTO tr_sub VALUES (4);
ROLLBACK TO s;
SELECT * FROM tr_sub ORDER BY a;
COMMIT;
SELECT * FROM tr_sub ORDER BY a;
-- several TRUNCATEs of one table in one transaction
BEGIN;
INSERT INTO tr_sub VALUES (10);
TRUNCATE tr_sub;
INSERT INTO tr_sub VALUES (20);
TRUNCATE tr_sub;
INSERT INTO tr_sub VALUES (30);
COMMIT;
SELECT * FROM tr_sub;

-- TRUNCATE of several tables, and CASCADE along foreign keys
CREATE TABLE tr_parent (id int PRIMARY KEY) USING fastckpt;
CREATE TABLE tr_child (pid int REFERENCES tr_parent) USING fastckpt;
INSERT INTO tr_parent VALUES (1), (2);
INSERT INTO tr_child VALUES (1), (2), (2);
TRUNCATE tr_parent;
TRUNCATE tr_parent CASCADE;
SELECT (SELECT count(*) FROM tr_parent) AS parents, (SELECT count(*) FROM tr_child) AS children;
INSERT INTO tr_parent VALUES (1);
INSERT INTO tr_child VALUES (1);
TRUNCATE tr_child, tr_parent, tr_sub;
SELECT (SELECT count(*) FROM tr_parent) AS parents, (SELECT count(*) FROM tr_child) AS children,
	   (SELECT count(*) FROM tr_sub) AS sub;

-- TRUNCATE through a partitioned table
CREATE TABLE tr_part (k int) PARTITION BY RANGE (k);
CREATE TABLE tr_part_1 PARTITION OF tr_part FOR VALUES FROM (0) TO (10) USING fastckpt;
CREATE TABLE tr_part_2 PARTITION OF tr_part FOR VALUES FROM (10) TO (20) USING fastckpt;
INSERT INTO tr_part SELECT generate_series(0, 19);
TRUNCATE tr_part_1;
SELECT count(*) FROM tr_part;
TRUNCATE tr_part;
SELECT count(*) FROM tr_part;

-- TRUNCATE gives memory back to the arena
CREATE TABLE tr_big (id int, pad text) USING fastckpt;
INSERT INTO tr_big SELECT g, repeat('x', 100) FROM generate_series(1, 50000) g;
SELECT fc_used_bytes() AS used_before \gset
TRUNCATE tr_big;
SELECT fc_used_bytes() < :used_before AS memory_freed;

--
-- DROP TABLE: the table's storage disappears from fastckpt_stat_tables and
-- its memory goes back to the arena
--
INSERT INTO tr_big SELECT g, repeat('x', 100) FROM generate_series(1, 50000) g;
SELECT relfilenode AS tr_big_node FROM pg_class WHERE relname = 'tr_big' \gset
SELECT count(*) FROM fastckpt_stat_tables WHERE relation = 'tr_big'::regclass;
SELECT fc_used_bytes() AS used_before \gset
SELECT table_bytes AS table_bytes_before FROM fastckpt_stat_memory \gset
-- not before the transaction commits
BEGIN;
DROP TABLE tr_big;
SELECT fc_storage_exists(:tr_big_node);
ROLLBACK;
SELECT fc_storage_exists(:tr_big_node);
SELECT count(*) FROM tr_big;
DROP TABLE tr_big;
SELECT fc_storage_exists(:tr_big_node);
SELECT count(*) FROM fastckpt_stat_tables WHERE relfilenode = :tr_big_node;
SELECT used_bytes < :used_before AS used_decreased,
	   table_bytes < :table_bytes_before AS table_bytes_decreased
  FROM fastckpt_stat_memory;
-- dropping in a subtransaction that is rolled back keeps the table
CREATE TABLE tr_keep (a int) USING fastckpt;
INSERT INTO tr_keep VALUES (1);
BEGIN;
SAVEPOINT s;
DROP TABLE tr_keep;
ROLLBACK TO s;
COMMIT;
SELECT * FROM tr_keep;
SELECT fc_has_storage('tr_keep');
-- DROP ... CASCADE, DROP OWNED
CREATE TABLE tr_dep (a int PRIMARY KEY) USING fastckpt;
CREATE VIEW tr_dep_view AS SELECT * FROM tr_dep;
DROP TABLE tr_dep;
DROP TABLE tr_dep CASCADE;
CREATE ROLE regress_fc_owner;
CREATE TABLE tr_owned (a int) USING fastckpt;
ALTER TABLE tr_owned OWNER TO regress_fc_owner;
SELECT relfilenode AS tr_owned_node FROM pg_class WHERE relname = 'tr_owned' \gset
DROP OWNED BY regress_fc_owner;
SELECT fc_storage_exists(:tr_owned_node);
DROP ROLE regress_fc_owner;

-- dropping every fastckpt table of this suite leaves none of their storage
DROP TABLE tr, tr_new, tr_sub, tr_parent, tr_child, tr_part, tr_keep;
SELECT count(*) FROM fastckpt_stat_tables t
 WHERE t.database = current_database() AND t.relation IS NULL;

-- DROP DATABASE frees the storage of all the database's fastckpt tables
SELECT current_database() AS regress_db \gset
CREATE DATABASE regress_fc_dropdb;
\c regress_fc_dropdb
CREATE EXTENSION pg_fastckpt;
CREATE TABLE in_other_db (a int PRIMARY KEY, b text) USING fastckpt;
INSERT INTO in_other_db SELECT g, 'b' || g FROM generate_series(1, 1000) g;
CREATE TABLE in_other_db2 (a int) USING fastckpt;
\c :regress_db
SELECT count(*) FROM fastckpt_stat_tables WHERE database = 'regress_fc_dropdb';
SELECT fc_used_bytes() AS used_before \gset
-- (DROP DATABASE waits for every process to close its files: a timeout
-- turns a process that never answers into a failure instead of a hang)
SET statement_timeout = '10s';
DROP DATABASE regress_fc_dropdb;
RESET statement_timeout;
SELECT count(*) FROM fastckpt_stat_tables WHERE database = 'regress_fc_dropdb' OR database IS NULL;
SELECT fc_used_bytes() < :used_before AS memory_freed;
