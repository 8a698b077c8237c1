--
-- dml: INSERT, UPDATE, DELETE, RETURNING, ON CONFLICT, data-modifying CTEs,
-- savepoints, cursors and system columns on fastckpt tables.
--
CREATE TABLE dml_t (
	id int PRIMARY KEY,
	grp int,
	val text,
	n int DEFAULT 0
) USING fastckpt;
CREATE INDEX dml_t_grp ON dml_t (grp);

-- INSERT, single and multi-row, with RETURNING
INSERT INTO dml_t VALUES (1, 1, 'one') RETURNING *;
INSERT INTO dml_t VALUES (2, 1, 'two'), (3, 2, 'three'), (4, 2, 'four')
RETURNING id, upper(val) AS upper_val;
INSERT INTO dml_t (id, grp, val) SELECT g, g % 5, 'row ' || g FROM generate_series(5, 100) g;
SELECT count(*), sum(id), sum(grp), min(val), max(val), sum(n) FROM dml_t;
INSERT INTO dml_t VALUES (1, 1, 'duplicate');
SELECT count(*) FROM dml_t;

-- UPDATE with RETURNING
UPDATE dml_t SET val = val || '!', n = n + 1 WHERE id <= 3 RETURNING id, val, n;
UPDATE dml_t SET n = n + 1 WHERE id = -1 RETURNING *;
-- UPDATE ... FROM
WITH u AS (
	UPDATE dml_t t SET n = s.c
	  FROM (SELECT grp, count(*) AS c FROM dml_t GROUP BY grp) s
	 WHERE t.grp = s.grp AND t.id > 96
	RETURNING t.id, t.grp, t.n
)
SELECT * FROM u ORDER BY id;
-- the same row updated several times in a transaction
BEGIN;
UPDATE dml_t SET n = n + 10 WHERE id = 5;
UPDATE dml_t SET n = n + 10 WHERE id = 5;
UPDATE dml_t SET n = n + 10, val = 'five' WHERE id = 5;
SELECT id, val, n FROM dml_t WHERE id = 5;
COMMIT;
SELECT id, val, n FROM dml_t WHERE id = 5;
-- every row at once, twice in one transaction
BEGIN;
UPDATE dml_t SET n = n + 1;
UPDATE dml_t SET n = n * 2;
SELECT count(*), sum(n) FROM dml_t;
COMMIT;
SELECT count(*), sum(n) FROM dml_t;

-- DELETE with RETURNING, DELETE ... USING
DELETE FROM dml_t WHERE id > 95 RETURNING id, grp;
DELETE FROM dml_t t USING (VALUES (10), (20), (999)) v(x) WHERE t.id = v.x RETURNING t.id, t.val;
SELECT count(*) FROM dml_t;

-- UPDATE that changes the primary key
UPDATE dml_t SET id = id + 1000 WHERE id BETWEEN 30 AND 34 RETURNING id, val;
SELECT id, val FROM dml_t WHERE id >= 30 AND id < 40 OR id > 1000 ORDER BY id;
-- both the index and a sequential scan agree
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT id, val FROM dml_t WHERE id = 30;
SELECT id, val FROM dml_t WHERE id = 1030;
SELECT id FROM dml_t WHERE id > 1000 ORDER BY id DESC;
RESET enable_seqscan;
RESET enable_bitmapscan;
SELECT count(*) FROM dml_t WHERE id > 1000;
-- changing a key to one that exists fails, and changes nothing
UPDATE dml_t SET id = CASE id WHEN 1 THEN 2 ELSE 1 END WHERE id IN (1, 2);
SELECT id, val FROM dml_t WHERE id IN (1, 2) ORDER BY id;
-- changing a key back and forth in one transaction
BEGIN;
UPDATE dml_t SET id = 31 WHERE id = 1031;
UPDATE dml_t SET id = 1031 WHERE id = 31;
UPDATE dml_t SET id = 31 WHERE id = 1031;
COMMIT;
SELECT id, val FROM dml_t WHERE id IN (31, 1031);

-- INSERT ... ON CONFLICT
INSERT INTO dml_t VALUES (1, 1, 'dup') ON CONFLICT DO NOTHING RETURNING *;
INSERT INTO dml_t VALUES (1, 1, 'dup'), (200, 0, 'two hundred')
	ON CONFLICT (id) DO NOTHING RETURNING id, val;
INSERT INTO dml_t VALUES (1, 1, 'upserted'), (201, 1, 'new')
	ON CONFLICT (id) DO UPDATE SET val = EXCLUDED.val, n = dml_t.n + 100
RETURNING id, val, n;
-- conditional DO UPDATE: only rows passing WHERE are updated
INSERT INTO dml_t VALUES (2, 0, 'x'), (3, 0, 'y')
	ON CONFLICT ON CONSTRAINT dml_t_pkey DO UPDATE SET val = EXCLUDED.val
	WHERE dml_t.id = 3
RETURNING id, val;
-- DO UPDATE changing an indexed column
INSERT INTO dml_t VALUES (4, 0, 'z') ON CONFLICT (id) DO UPDATE SET grp = 77
RETURNING id, grp, val;
SELECT id, grp FROM dml_t WHERE grp = 77;
-- the same key twice in one command
INSERT INTO dml_t VALUES (5, 0, 'a'), (5, 0, 'b') ON CONFLICT (id) DO UPDATE SET val = EXCLUDED.val;
INSERT INTO dml_t VALUES (600, 0, 'a'), (600, 0, 'b') ON CONFLICT (id) DO UPDATE SET val = EXCLUDED.val;
INSERT INTO dml_t VALUES (600, 0, 'a'), (600, 0, 'b') ON CONFLICT (id) DO NOTHING;
SELECT id, val FROM dml_t WHERE id IN (5, 600) ORDER BY id;
-- repeated upserts of one key within a transaction, then rolled back
BEGIN;
INSERT INTO dml_t VALUES (300, 0, 'first') ON CONFLICT (id) DO UPDATE SET n = dml_t.n + 1;
INSERT INTO dml_t VALUES (300, 0, 'second') ON CONFLICT (id) DO UPDATE SET n = dml_t.n + 1;
INSERT INTO dml_t VALUES (300, 0, 'third') ON CONFLICT (id) DO UPDATE SET n = dml_t.n + 1;
SELECT id, val, n FROM dml_t WHERE id = 300;
ROLLBACK;
SELECT id, val, n FROM dml_t WHERE id = 300;
-- ON CONFLICT on a unique expression index
CREATE TABLE dml_kv (k text, v int) USING fastckpt;
CREATE UNIQUE INDEX dml_kv_lower ON dml_kv (lower(k));
INSERT INTO dml_kv VALUES ('A', 1);
INSERT INTO dml_kv VALUES ('a', 2) ON CONFLICT (lower(k)) DO UPDATE SET v = dml_kv.v + EXCLUDED.v;
INSERT INTO dml_kv VALUES ('b', 5) ON CONFLICT (lower(k)) DO UPDATE SET v = dml_kv.v + EXCLUDED.v;
SELECT * FROM dml_kv ORDER BY k;

-- data-modifying statements in WITH
CREATE TABLE dml_archive (id int, grp int, val text, n int) USING fastckpt;
WITH moved AS (
	DELETE FROM dml_t WHERE grp = 4 AND id < 50 RETURNING *
)
INSERT INTO dml_archive SELECT * FROM moved RETURNING id, val;
SELECT count(*) FROM dml_t WHERE grp = 4 AND id < 50;
WITH upd AS (
	UPDATE dml_t SET n = n + 1 WHERE grp = 3 RETURNING id
), ins AS (
	INSERT INTO dml_archive SELECT id, -1, 'touched', 0 FROM upd RETURNING 1
)
SELECT (SELECT count(*) FROM upd) AS updated, (SELECT count(*) FROM ins) AS archived;
-- the main query sees the snapshot from before the CTE's changes
WITH d AS (DELETE FROM dml_t WHERE id = 6 RETURNING id)
SELECT (SELECT count(*) FROM dml_t WHERE id = 6) AS still_visible,
	   (SELECT count(*) FROM d) AS deleted;
SELECT count(*) FROM dml_t WHERE id = 6;
WITH u AS (UPDATE dml_t SET val = 'via cte' WHERE id = 7 RETURNING val)
SELECT t.val AS before, u.val AS after FROM dml_t t, u WHERE t.id = 7;

-- savepoints: rollback restores exactly the prior state
CREATE TABLE dml_sp (id int PRIMARY KEY, v text, n int) USING fastckpt;
INSERT INTO dml_sp VALUES (1, 'a', 0), (2, 'b', 0), (3, 'c', 0);
BEGIN;
UPDATE dml_sp SET n = 1 WHERE id = 1;
SAVEPOINT s1;
UPDATE dml_sp SET n = 2 WHERE id = 1;
UPDATE dml_sp SET v = 'bb' WHERE id = 2;
DELETE FROM dml_sp WHERE id = 3;
INSERT INTO dml_sp VALUES (4, 'd', 0);
UPDATE dml_sp SET id = 10 WHERE id = 1;
SELECT * FROM dml_sp ORDER BY id;
ROLLBACK TO s1;
SELECT * FROM dml_sp ORDER BY id;
-- a row updated twice, with a savepoint in between
UPDATE dml_sp SET n = n + 100 WHERE id = 2;
SAVEPOINT s2;
UPDATE dml_sp SET n = n + 100 WHERE id = 2;
SELECT * FROM dml_sp WHERE id = 2;
ROLLBACK TO s2;
SELECT * FROM dml_sp WHERE id = 2;
-- ... twice on each side of the savepoint
UPDATE dml_sp SET v = 'c1' WHERE id = 3;
UPDATE dml_sp SET v = 'c2' WHERE id = 3;
SAVEPOINT s3;
UPDATE dml_sp SET v = 'c3' WHERE id = 3;
UPDATE dml_sp SET v = 'c4', id = 30 WHERE id = 3;
UPDATE dml_sp SET v = 'c5' WHERE id = 30;
ROLLBACK TO s3;
SELECT * FROM dml_sp ORDER BY id;
-- nested savepoints, released and rolled back
SAVEPOINT s4;
INSERT INTO dml_sp VALUES (5, 'e', 0);
SAVEPOINT s5;
UPDATE dml_sp SET n = 55 WHERE id = 5;
RELEASE SAVEPOINT s5;
SAVEPOINT s6;
DELETE FROM dml_sp WHERE id = 5;
ROLLBACK TO s6;
SELECT * FROM dml_sp ORDER BY id;
ROLLBACK TO s4;
SELECT * FROM dml_sp ORDER BY id;
COMMIT;
SELECT * FROM dml_sp ORDER BY id;
-- a whole transaction rolled back
BEGIN;
UPDATE dml_sp SET n = n + 1;
DELETE FROM dml_sp WHERE id = 1;
INSERT INTO dml_sp VALUES (6, 'f', 0);
UPDATE dml_sp SET id = 20 WHERE id = 2;
ROLLBACK;
SELECT * FROM dml_sp ORDER BY id;
-- an error rolls back the failed statement only (PL/pgSQL exception block)
DO $$
BEGIN
	UPDATE dml_sp SET n = 7 WHERE id = 1;
	BEGIN
		UPDATE dml_sp SET n = 8 WHERE id = 1;
		INSERT INTO dml_sp VALUES (2, 'dup', 0);
	EXCEPTION WHEN unique_violation THEN
		RAISE NOTICE 'caught: %', SQLERRM;
	END;
END;
$$;
SELECT * FROM dml_sp ORDER BY id;
-- a statement failing half-way changes nothing
UPDATE dml_sp SET n = 100 / (id - 2);
SELECT * FROM dml_sp ORDER BY id;

-- system columns
CREATE TABLE dml_sys (id int PRIMARY KEY, k int, v text) USING fastckpt;
CREATE INDEX dml_sys_k ON dml_sys (k);
INSERT INTO dml_sys SELECT g, g, 'v' || g FROM generate_series(1, 10) g;
SELECT DISTINCT tableoid::regclass FROM dml_sys;
CREATE TEMP TABLE dml_sys_before AS SELECT id, ctid AS old_ctid, xmin AS old_xmin FROM dml_sys;
-- an update of a column no index uses keeps the row in its slot: same ctid
UPDATE dml_sys SET v = 'changed' WHERE id = 1;
SELECT s.ctid = b.old_ctid AS same_ctid, s.xmin = b.old_xmin AS same_xmin
  FROM dml_sys s JOIN dml_sys_before b USING (id) WHERE id = 1;
-- an update of an indexed column moves the row to another slot
UPDATE dml_sys SET k = 100 WHERE id = 2;
SELECT s.ctid = b.old_ctid AS same_ctid, s.xmin = b.old_xmin AS same_xmin
  FROM dml_sys s JOIN dml_sys_before b USING (id) WHERE id = 2;
-- untouched rows keep everything
SELECT count(*) FROM dml_sys s JOIN dml_sys_before b USING (id)
 WHERE s.ctid = b.old_ctid AND s.xmin = b.old_xmin;
-- xmin is the updating transaction
BEGIN;
UPDATE dml_sys SET v = 'mine' WHERE id = 3;
SELECT xmin = pg_current_xact_id()::xid AS xmin_is_mine FROM dml_sys WHERE id = 3;
SELECT count(*) FROM dml_sys WHERE xmin = pg_current_xact_id()::xid;
COMMIT;
-- lookups by ctid: TID scan and TID range scan
SELECT id, v FROM dml_sys WHERE ctid = (SELECT ctid FROM dml_sys WHERE id = 3);
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM dml_sys WHERE ctid = '(0,1)';
SELECT id FROM dml_sys WHERE ctid = '(0,1)';
EXPLAIN (COSTS OFF) SELECT count(*) FROM dml_sys WHERE ctid >= '(0,1)' AND ctid < '(100000,1)';
RESET enable_seqscan;
SELECT count(*) FROM dml_sys WHERE ctid = ANY (ARRAY(SELECT ctid FROM dml_sys));
SELECT count(*) FROM dml_sys WHERE ctid >= '(0,1)' AND ctid < '(100000,1)';
SELECT count(*) FROM dml_sys WHERE ctid = '(12345,1)';
UPDATE dml_sys SET v = 'by ctid' WHERE ctid = (SELECT ctid FROM dml_sys WHERE id = 4) RETURNING id, v;
DELETE FROM dml_sys WHERE ctid = (SELECT ctid FROM dml_sys WHERE id = 5) RETURNING id;

-- cursors
BEGIN;
DECLARE c1 CURSOR FOR SELECT id, v FROM dml_sys WHERE id BETWEEN 6 AND 9 ORDER BY id FOR UPDATE;
FETCH 1 FROM c1;
UPDATE dml_sys SET v = 'current' WHERE CURRENT OF c1;
FETCH 1 FROM c1;
DELETE FROM dml_sys WHERE CURRENT OF c1;
CLOSE c1;
SELECT id, v FROM dml_sys WHERE id BETWEEN 6 AND 9 ORDER BY id;
COMMIT;
-- a scrollable cursor over a sequential scan (rows come in slot order)
BEGIN;
DECLARE c2 SCROLL CURSOR FOR SELECT id FROM dml_sys WHERE id > 5 AND k < 100;
FETCH ALL FROM c2;
FETCH BACKWARD ALL FROM c2;
FETCH ABSOLUTE 2 FROM c2;
FETCH PRIOR FROM c2;
FETCH LAST FROM c2;
FETCH RELATIVE -2 FROM c2;
FETCH BACKWARD 1 FROM c2;
FETCH FORWARD 10 FROM c2;
MOVE ABSOLUTE 0 IN c2;
FETCH NEXT FROM c2;
COMMIT;
-- a cursor kept across the commit
BEGIN;
DECLARE c3 CURSOR WITH HOLD FOR SELECT id FROM dml_sys WHERE id <= 3 ORDER BY id;
COMMIT;
UPDATE dml_sys SET v = 'after commit' WHERE id = 1;
FETCH ALL FROM c3;
CLOSE c3;

-- SELECT ... FOR UPDATE / FOR SHARE, then writing the locked rows
BEGIN;
SELECT id FROM dml_sys WHERE id <= 3 ORDER BY id FOR UPDATE;
SELECT id FROM dml_sys WHERE id = 3 FOR SHARE;
SELECT id FROM dml_sys WHERE id = 4 FOR KEY SHARE NOWAIT;
UPDATE dml_sys SET v = 'locked' WHERE id <= 4;
DELETE FROM dml_sys WHERE id = 3;
COMMIT;
SELECT id, k, v FROM dml_sys ORDER BY id;

-- INSERT ... SELECT from the same table only sees the rows from before
INSERT INTO dml_sys SELECT id + 1000, k + 1000, v FROM dml_sys;
SELECT count(*), count(*) FILTER (WHERE id > 1000) FROM dml_sys;

-- DELETE everything
DELETE FROM dml_sys;
SELECT count(*) FROM dml_sys;
INSERT INTO dml_sys VALUES (1, 1, 'again');
SELECT * FROM dml_sys;

DROP TABLE dml_t, dml_kv, dml_archive, dml_sp, dml_sys;
