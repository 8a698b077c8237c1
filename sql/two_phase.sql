-- PREPARE TRANSACTION, COMMIT PREPARED and ROLLBACK PREPARED of
-- transactions that wrote fastckpt tables
CREATE TABLE tp (id int PRIMARY KEY, v text, w int) USING fastckpt;
CREATE INDEX tp_w ON tp (w);
INSERT INTO tp SELECT g, 'v' || g, g FROM generate_series(1, 10) g;
CREATE FUNCTION tp_files() RETURNS bigint LANGUAGE sql
  AS $$SELECT count(*) FROM pg_ls_dir('pg_fastckpt/prepared', true, false)$$;
-- index scans, where the result must agree with a sequential scan
CREATE FUNCTION tp_check() RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  seq text;
  byid text;
  byw text;
BEGIN
  SET LOCAL enable_indexscan = off;
  SET LOCAL enable_bitmapscan = off;
  SELECT string_agg(id || ':' || v || ':' || w, ' ' ORDER BY id) INTO seq FROM tp;
  SET LOCAL enable_seqscan = off;
  SET LOCAL enable_indexscan = on;
  SELECT string_agg(id || ':' || v || ':' || w, ' ' ORDER BY id) INTO byid
    FROM tp WHERE id BETWEEN -100000 AND 100000;
  SELECT string_agg(id || ':' || v || ':' || w, ' ' ORDER BY id) INTO byw
    FROM tp WHERE w BETWEEN -100000 AND 100000;
  IF seq IS DISTINCT FROM byid OR seq IS DISTINCT FROM byw THEN
    RETURN 'MISMATCH seq=' || seq || ' id=' || byid || ' w=' || byw;
  END IF;
  RETURN seq;
END$$;

-- every kind of write: insert, update in place, move (an indexed column
-- changes), delete, a released and a rolled-back savepoint
BEGIN;
INSERT INTO tp VALUES (11, 'new', 11);
UPDATE tp SET v = 'upd' WHERE id = 1;
UPDATE tp SET w = 200 WHERE id = 2;
DELETE FROM tp WHERE id = 3;
SAVEPOINT s;
UPDATE tp SET v = 'sub' WHERE id = 4;
INSERT INTO tp VALUES (12, 'sub-new', 12);
RELEASE SAVEPOINT s;
SAVEPOINT r;
UPDATE tp SET v = 'rolled back' WHERE id = 5;
DELETE FROM tp WHERE id = 6;
ROLLBACK TO SAVEPOINT r;
INSERT INTO tp VALUES (13, 'then deleted', 13);
DELETE FROM tp WHERE id = 13;
PREPARE TRANSACTION 'tp_1';
-- not visible until committed; the file holds the rows
SELECT tp_check();
SELECT tp_files();
-- its rows are locked: a writer waits for the prepared transaction
SET lock_timeout = '100ms';
UPDATE tp SET v = 'blocked' WHERE id = 1;
DELETE FROM tp WHERE id = 3;
SELECT id FROM tp WHERE id = 2 FOR UPDATE NOWAIT;
RESET lock_timeout;
-- rows it did not touch are free
UPDATE tp SET v = 'free' WHERE id = 7;
COMMIT PREPARED 'tp_1';
SELECT tp_check();
SELECT tp_files();

-- ROLLBACK PREPARED puts every row back as it was
BEGIN;
UPDATE tp SET v = 'x' || v;
UPDATE tp SET w = w + 1000 WHERE id = 8;
DELETE FROM tp WHERE id = 9;
INSERT INTO tp VALUES (20, 'twenty', 20);
PREPARE TRANSACTION 'tp_2';
SELECT tp_check();
ROLLBACK PREPARED 'tp_2';
SELECT tp_check();
SELECT tp_files();
-- and the rows are free again
UPDATE tp SET v = 'after rollback' WHERE id = 9;
SELECT v FROM tp WHERE id = 9;

-- a transaction that wrote many rows
BEGIN;
INSERT INTO tp SELECT g, 'bulk', -g FROM generate_series(100, 1099) g;
UPDATE tp SET v = 'bulk2' WHERE id BETWEEN 100 AND 599;
PREPARE TRANSACTION 'tp_3';
SELECT count(*) FROM tp WHERE id >= 100;
COMMIT PREPARED 'tp_3';
SELECT v, count(*) FROM tp WHERE id >= 100 GROUP BY v ORDER BY v;
SELECT left(tp_check(), 8) = 'MISMATCH' AS mismatch;
DELETE FROM tp WHERE id >= 100;

-- a PREPARE that fails after the file was written takes the file back
-- and rolls the rows back: a gid in use, temporary objects
BEGIN;
UPDATE tp SET v = 'first' WHERE id = 10;
PREPARE TRANSACTION 'tp_4';
BEGIN;
INSERT INTO tp VALUES (30, 'dup gid', 30);
PREPARE TRANSACTION 'tp_4';
SELECT tp_files();
SELECT count(*) FROM tp WHERE id = 30;
CREATE TEMP TABLE tp_temp (id int) USING fastckpt;
BEGIN;
INSERT INTO tp_temp VALUES (1);
INSERT INTO tp VALUES (31, 'with temp', 31);
PREPARE TRANSACTION 'tp_5';
SELECT tp_files();
SELECT count(*) FROM tp WHERE id = 31;
DROP TABLE tp_temp;
COMMIT PREPARED 'tp_4';
SELECT v FROM tp WHERE id = 10;

-- who may finish it: PostgreSQL's rules, checked before anything is done
CREATE ROLE regress_tp_other;
GRANT ALL ON tp TO regress_tp_other;
BEGIN;
UPDATE tp SET v = 'owned' WHERE id = 10;
PREPARE TRANSACTION 'tp_6';
SET ROLE regress_tp_other;
COMMIT PREPARED 'tp_6';
ROLLBACK PREPARED 'tp_6';
RESET ROLE;
SELECT gid FROM pg_prepared_xacts;
COMMIT PREPARED 'tp_6';
SELECT v FROM tp WHERE id = 10;
-- a prepared transaction of the role itself
SET ROLE regress_tp_other;
BEGIN;
UPDATE tp SET v = 'by other' WHERE id = 10;
PREPARE TRANSACTION 'tp_7';
COMMIT PREPARED 'tp_7';
RESET ROLE;
SELECT v FROM tp WHERE id = 10;
COMMIT PREPARED 'tp_none';
REVOKE ALL ON tp FROM regress_tp_other;
DROP ROLE regress_tp_other;
-- a heap-only two-phase transaction is untouched
CREATE TABLE tp_heap (id int) USING heap;
BEGIN;
INSERT INTO tp_heap VALUES (1);
PREPARE TRANSACTION 'tp_8';
COMMIT PREPARED 'tp_8';
SELECT * FROM tp_heap;
-- a registered call in a prepared transaction: counted as a fallback,
-- its rows logged at COMMIT PREPARED
CREATE FUNCTION tp_bump(p int) RETURNS void LANGUAGE sql
  AS $$UPDATE tp SET w = w + 1 WHERE id = p$$;
SELECT fastckpt_register_procedure('tp_bump(int)');
BEGIN;
SELECT tp_bump(10);
PREPARE TRANSACTION 'tp_call';
COMMIT PREPARED 'tp_call';
SELECT w FROM tp WHERE id = 10;
SELECT calls, call_records, value_records, fallbacks, last_fallback
  FROM fastckpt_procedures WHERE routine = 'tp_bump(int)'::regprocedure;
SELECT fastckpt_unregister_procedure('tp_bump(int)');
DROP FUNCTION tp_bump(int);
-- row locks are kept while prepared (across restarts too: TAP 024), in
-- the file: FOR SHARE with a write; FOR UPDATE followed by an update of no
-- key column, which holds the row less strongly than the lock
BEGIN;
INSERT INTO tp VALUES (40, 'x', 40);
SELECT id FROM tp WHERE id = 1 FOR SHARE;
PREPARE TRANSACTION 'tp_9';
BEGIN;
SELECT id FROM tp WHERE id = 10 FOR UPDATE;
UPDATE tp SET w = w + 1 WHERE id = 10;
PREPARE TRANSACTION 'tp_10';
SELECT tp_files(), count(*) FROM pg_prepared_xacts;
SELECT id FROM tp WHERE id = 1 FOR UPDATE NOWAIT;
SELECT id FROM tp WHERE id = 1 FOR SHARE NOWAIT;
SELECT id FROM tp WHERE id = 10 FOR KEY SHARE NOWAIT;
COMMIT PREPARED 'tp_9';
ROLLBACK PREPARED 'tp_10';
SELECT id FROM tp WHERE id IN (1, 10) ORDER BY id FOR UPDATE NOWAIT;
SELECT tp_files(), count(*) FROM pg_prepared_xacts;
-- a transaction that only locked a row (a foreign key check's KEY SHARE,
-- from an UNLOGGED heap table) has a file too, gone when it ends; the
-- lock lets updates of no key column through, in place, but a move of
-- the row (an indexed column changes) waits for the transaction: its file
-- names the row's slot
CREATE UNLOGGED TABLE tp_child (id int PRIMARY KEY, tp_id int REFERENCES tp (id)) USING heap;
BEGIN;
INSERT INTO tp_child VALUES (1, 5);
PREPARE TRANSACTION 'tp_lock_only';
SELECT tp_files();
SELECT id FROM tp WHERE id = 5 FOR UPDATE NOWAIT;
SELECT id FROM tp WHERE id = 5 FOR NO KEY UPDATE NOWAIT;
UPDATE tp SET v = 'v5b' WHERE id = 5;
SET lock_timeout = '50ms';
\set VERBOSITY terse
UPDATE tp SET w = 55 WHERE id = 5;
\set VERBOSITY default
RESET lock_timeout;
COMMIT PREPARED 'tp_lock_only';
SELECT tp_files();
UPDATE tp SET w = 55 WHERE id = 5;
DELETE FROM tp_child;
-- row locks of a rolled-back savepoint are released (their file has
-- none), those of a released one are the transaction's
BEGIN;
SAVEPOINT s;
SELECT id FROM tp WHERE id = 6 FOR UPDATE;
ROLLBACK TO SAVEPOINT s;
SAVEPOINT t;
SELECT id FROM tp WHERE id = 7 FOR UPDATE;
RELEASE SAVEPOINT t;
PREPARE TRANSACTION 'tp_sub';
SELECT id FROM tp WHERE id = 6 FOR UPDATE NOWAIT;
SELECT id FROM tp WHERE id = 7 FOR UPDATE NOWAIT;
ROLLBACK PREPARED 'tp_sub';
SELECT id FROM tp WHERE id = 7 FOR UPDATE NOWAIT;
DROP TABLE tp_child;
SELECT tp_check();
-- FOR NO KEY UPDATE followed by such an update, which holds it as strongly
BEGIN;
SELECT id FROM tp WHERE id = 10 FOR NO KEY UPDATE;
UPDATE tp SET w = w + 1 WHERE id = 10;
PREPARE TRANSACTION 'tp_11';
ROLLBACK PREPARED 'tp_11';
-- all max_prepared_transactions (2) in use: PostgreSQL's own error, as for
-- heap, and nothing of the refused transaction left
BEGIN;
INSERT INTO tp VALUES (50, 'full', 50);
PREPARE TRANSACTION 'tp_full_1';
BEGIN;
INSERT INTO tp VALUES (51, 'full', 51);
PREPARE TRANSACTION 'tp_full_2';
BEGIN;
INSERT INTO tp_heap VALUES (2);
PREPARE TRANSACTION 'tp_full_heap';
BEGIN;
INSERT INTO tp VALUES (52, 'full', 52);
PREPARE TRANSACTION 'tp_full_3';
SELECT count(*) FROM tp WHERE id >= 50;
SELECT tp_files(), count(*) FROM pg_prepared_xacts;
ROLLBACK PREPARED 'tp_full_1';
ROLLBACK PREPARED 'tp_full_2';
SELECT tp_files(), count(*) FROM pg_prepared_xacts;
SELECT tp_check();
DROP TABLE tp, tp_heap;
DROP FUNCTION tp_files(), tp_check();

-- an UPDATE whose wait for a row lock ends in an error keeps no old
-- version: once no snapshot needs them, VACUUM leaves none
CREATE TABLE tp_wait (id int PRIMARY KEY, n int) USING fastckpt;
INSERT INTO tp_wait VALUES (1, 0);
BEGIN;
UPDATE tp_wait SET n = n + 1 WHERE id = 1;
PREPARE TRANSACTION 'tp_wait';
SET lock_timeout = '20ms';
UPDATE tp_wait SET n = n + 10 WHERE id = 1;
UPDATE tp_wait SET n = n + 10 WHERE id = 1;
RESET lock_timeout;
COMMIT PREPARED 'tp_wait';
VACUUM tp_wait;
SELECT n, (SELECT undo_records FROM fastckpt_stat_tables
		   WHERE relation = 'tp_wait'::regclass) AS old_versions
FROM tp_wait;
DROP TABLE tp_wait;
