--
-- errors: what fastckpt tables refuse, each with a clear error (what, why,
-- and what to do instead), and proof that the refusals change nothing.
--
CREATE TABLE er (id int PRIMARY KEY, v text, n int) USING fastckpt;
INSERT INTO er SELECT g, 'v' || g, g FROM generate_series(1, 10) g;
CREATE TABLE er_heap (id int PRIMARY KEY) USING heap;
INSERT INTO er_heap VALUES (1);

-- fastckpt tables cannot be made logged (durability is pg_fastckpt's own)
ALTER TABLE er SET LOGGED;
ALTER TABLE er ALTER COLUMN n SET DEFAULT 0, SET LOGGED;
SELECT relpersistence FROM pg_class WHERE relname = 'er';
SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef WHERE adrelid = 'er'::regclass;

-- SERIALIZABLE works (its conflicts: isolation spec serializable)
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT count(*) FROM er;
INSERT INTO er VALUES (11, 'v11', 11);
SELECT * FROM er WHERE id = 1 FOR UPDATE;
ROLLBACK;
-- ... with a parallel scan (workers share the transaction's predicate locks)
BEGIN ISOLATION LEVEL SERIALIZABLE;
SET LOCAL parallel_setup_cost = 0;
SET LOCAL parallel_tuple_cost = 0;
SET LOCAL min_parallel_table_scan_size = 0;
SET LOCAL max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF) SELECT count(*), sum(n) FROM er;
SELECT count(*), sum(n) FROM er;
COMMIT;
SET default_transaction_isolation = 'serializable';
UPDATE er SET n = 0 WHERE id = 1;
SELECT * FROM er WHERE id = 1;
RESET default_transaction_isolation;
-- REPEATABLE READ works
BEGIN ISOLATION LEVEL REPEATABLE READ;
UPDATE er SET n = n + 100 WHERE id = 1;
SELECT id, n FROM er WHERE id = 1;
COMMIT;
SELECT count(*), sum(n) FROM er;

-- indexes: CREATE INDEX, REINDEX (CONCURRENTLY: regress concurrent_index)
CREATE INDEX er_v ON er (v);
REINDEX INDEX er_v;
REINDEX TABLE er;

-- materialized views cannot use fastckpt
CREATE MATERIALIZED VIEW er_mv USING fastckpt AS SELECT * FROM er;
SET default_table_access_method = fastckpt;
CREATE MATERIALIZED VIEW er_mv AS SELECT * FROM er;
RESET default_table_access_method;
SELECT to_regclass('er_mv');
-- a heap materialized view over a fastckpt table is fine
CREATE MATERIALIZED VIEW er_mv USING heap AS SELECT id, v FROM er WHERE id <= 3;
SELECT * FROM er_mv ORDER BY id;
UPDATE er SET v = 'refreshed' WHERE id = 2;
REFRESH MATERIALIZED VIEW er_mv;
SELECT * FROM er_mv ORDER BY id;
DROP MATERIALIZED VIEW er_mv;

-- a partitioned table has no storage of its own (PostgreSQL's rule)
CREATE TABLE er_part (a int) PARTITION BY RANGE (a) USING fastckpt;

-- a row bigger than the table's slots, even compressed
CREATE TABLE er_big (id int, t text) USING fastckpt;
INSERT INTO er_big SELECT 1, string_agg(md5(g::text), '') FROM generate_series(1, 100) g;
INSERT INTO er_big VALUES (2, 'small');
UPDATE er_big SET t = (SELECT string_agg(md5(g::text), '') FROM generate_series(1, 100) g) WHERE id = 2;
COPY er_big FROM STDIN;
3	fits
4	c4ca4238a0b923820dcc509a6f75849bc81e728d9d4c2f636f067f89cc14862ceccbc87e4b5ce2fe28308fd9f2a7baf3a87ff679a2f3e71d9181a67b7542122ce4da3b7fbbce2345d7772b0674a318d51679091c5a880faf6fb5e6087eb1b2dc8f14e45fceea167a5a36dedd4bea2543c9f0f895fb98ab9159f51fd0297e236d45c48cce2e2d7fbdea1afc51c7c6ad26d3d9446802a44259755d38e6d163e8206512bd43d9caa6e02c990b0a82652dcac20ad4d76fe97759aa27a0c99bff6710c51ce410c124a10e0db5e4b97fc2af39aab3238922bcc25a6f606eb525ffdc569bf31c7ff062936a96d3c8bd1f8f2ff3c74d97b01eae257e44aa9d5bade97baf70efdf2ec9b086079795c442636b55fb6f4922f45568161a8cdf4ad2299f6d231f0e3dad99908345f7439f8ffabdffc498f13708210194c475687be6106a3b84
\.
SELECT * FROM er_big ORDER BY id;
-- its SQLSTATE is program_limit_exceeded
\set VERBOSITY sqlstate
INSERT INTO er_big SELECT 5, string_agg(md5(g::text), '') FROM generate_series(1, 100) g;
\set VERBOSITY default

-- PREPARE TRANSACTION (two_phase.sql has what it accepts) after creating a
-- fastckpt table, with no row written
BEGIN;
CREATE TABLE er_prep (id int) USING fastckpt;
PREPARE TRANSACTION 'regress_fc_prep';
SELECT to_regclass('er_prep') IS NULL AS not_created;
-- ... or holding a lock that startup recovery would wait for after a
-- restart (SHARE or stronger, on the table or one of its indexes)
BEGIN;
LOCK TABLE er IN SHARE MODE;
PREPARE TRANSACTION 'regress_fc_prep';
BEGIN;
CREATE INDEX er_n_prep ON er (n);
PREPARE TRANSACTION 'regress_fc_prep';
CREATE INDEX er_n ON er (n);
BEGIN;
REINDEX INDEX er_n;
PREPARE TRANSACTION 'regress_fc_prep';
BEGIN;
ALTER INDEX er_n SET TABLESPACE pg_default;
PREPARE TRANSACTION 'regress_fc_prep';
-- ... or holding a lock on a database that connections wait for (recovery
-- connects to every database)
CREATE DATABASE regress_fc_prep_db;
BEGIN;
ALTER DATABASE regress_fc_prep_db RENAME TO regress_fc_prep_db2;
PREPARE TRANSACTION 'regress_fc_prep';
DROP DATABASE regress_fc_prep_db;
-- ... or having changed an index's definition under a weaker lock (recovery
-- may have to mark the index not valid, which would wait for it)
BEGIN;
ALTER TABLE er CLUSTER ON er_n;
PREPARE TRANSACTION 'regress_fc_prep';
-- ... or a row lock on its pg_index row, which would hold marking it up too
BEGIN;
SELECT indisvalid FROM pg_index WHERE indexrelid = 'er_n'::regclass FOR UPDATE;
PREPARE TRANSACTION 'regress_fc_prep';
DROP INDEX er_n;
SELECT count(*) FROM pg_prepared_xacts WHERE gid = 'regress_fc_prep';
-- weaker locks do not stop it (nor row locks: two_phase.sql)
BEGIN;
LOCK TABLE er IN SHARE UPDATE EXCLUSIVE MODE;
SAVEPOINT s;
SELECT id FROM er WHERE id = 1 FOR UPDATE;
ROLLBACK TO SAVEPOINT s;
INSERT INTO er_heap VALUES (4);
PREPARE TRANSACTION 'regress_fc_prep';
ROLLBACK PREPARED 'regress_fc_prep';
-- a transaction that only read fastckpt tables can be prepared
BEGIN;
SELECT count(*) FROM er;
INSERT INTO er_heap VALUES (2);
PREPARE TRANSACTION 'regress_fc_prep';
COMMIT PREPARED 'regress_fc_prep';
SELECT * FROM er_heap ORDER BY id;

-- none of the refused statements left anything behind
SELECT count(*), sum(n) FROM er;
SELECT indexrelid::regclass FROM pg_index WHERE indrelid = 'er'::regclass ORDER BY 1;
SELECT relpersistence FROM pg_class WHERE relname = 'er';

DROP TABLE er, er_heap, er_big;
