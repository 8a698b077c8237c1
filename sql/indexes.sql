--
-- indexes: B-tree, hash, expression, partial, unique, GIN/GiST/SP-GiST
-- indexes on fastckpt tables; the planner's choice of index scans for key
-- lookups; bitmap scans (exact and lossy); index upkeep across updates.
--
CREATE TABLE ix (
	id int PRIMARY KEY,
	code text,
	grp int,
	active boolean,
	payload text,
	note text
) USING fastckpt;
INSERT INTO ix
	SELECT g, 'Code' || g, g % 100, g % 10 = 0, md5(g::text), 'note ' || g
	  FROM generate_series(1, 10000) g;
CREATE INDEX ix_grp ON ix (grp);
CREATE INDEX ix_code_hash ON ix USING hash (code);
CREATE INDEX ix_lower_code ON ix (lower(code));
CREATE INDEX ix_active ON ix (id) WHERE active;
CREATE UNIQUE INDEX ix_payload ON ix (payload);
ANALYZE ix;
\d ix

-- key lookups use an index scan after ANALYZE
EXPLAIN (COSTS OFF) SELECT * FROM ix WHERE id = 42;
SELECT * FROM ix WHERE id = 42;
EXPLAIN (COSTS OFF) SELECT * FROM ix WHERE code = 'Code77';
SELECT * FROM ix WHERE code = 'Code77';
EXPLAIN (COSTS OFF) SELECT * FROM ix WHERE lower(code) = 'code78';
SELECT * FROM ix WHERE lower(code) = 'code78';
EXPLAIN (COSTS OFF) SELECT * FROM ix WHERE payload = md5('79');
SELECT * FROM ix WHERE payload = md5('79');
EXPLAIN (COSTS OFF) SELECT * FROM ix WHERE active AND id = 80;
SELECT * FROM ix WHERE active AND id = 80;
EXPLAIN (COSTS OFF) SELECT id, code FROM ix ORDER BY id LIMIT 3;
SELECT id, code FROM ix ORDER BY id LIMIT 3;
EXPLAIN (COSTS OFF) SELECT id, code FROM ix ORDER BY id DESC LIMIT 3;
SELECT id, code FROM ix ORDER BY id DESC LIMIT 3;
EXPLAIN (COSTS OFF) SELECT * FROM ix WHERE id = ANY ('{5,500,5000}');
SELECT * FROM ix WHERE id = ANY ('{5,500,5000}') ORDER BY id;
-- a nested loop probing the primary key
EXPLAIN (COSTS OFF)
SELECT v.x, ix.code FROM (VALUES (1), (2), (3)) v(x) JOIN ix ON ix.id = v.x;
SELECT v.x, ix.code FROM (VALUES (1), (2), (3)) v(x) JOIN ix ON ix.id = v.x ORDER BY 1;
-- the planner knows the table's size
SELECT reltuples FROM pg_class WHERE relname = 'ix';
EXPLAIN (COSTS OFF) SELECT count(*) FROM ix WHERE grp >= 0;

-- index scans, bitmap scans and sequential scans give the same answers
CREATE FUNCTION ix_check(q text) RETURNS TABLE (scan text, result text)
LANGUAGE plpgsql AS $$
BEGIN
	SET LOCAL enable_indexscan = on;
	SET LOCAL enable_indexonlyscan = on;
	SET LOCAL enable_bitmapscan = off;
	SET LOCAL enable_seqscan = off;
	scan := 'index';
	EXECUTE q INTO result;
	RETURN NEXT;
	SET LOCAL enable_indexscan = off;
	SET LOCAL enable_indexonlyscan = off;
	SET LOCAL enable_bitmapscan = on;
	scan := 'bitmap';
	EXECUTE q INTO result;
	RETURN NEXT;
	SET LOCAL enable_bitmapscan = off;
	SET LOCAL enable_seqscan = on;
	scan := 'seq';
	EXECUTE q INTO result;
	RETURN NEXT;
END;
$$;
SELECT * FROM ix_check('SELECT count(*) || '' '' || sum(id) FROM ix WHERE grp = 7');
SELECT * FROM ix_check('SELECT count(*) || '' '' || sum(id) FROM ix WHERE id BETWEEN 100 AND 2000');
SELECT * FROM ix_check('SELECT string_agg(id::text, '','' ORDER BY id) FROM ix WHERE code = ''Code123''');
SELECT * FROM ix_check('SELECT count(*) || '' '' || sum(id) FROM ix WHERE active AND id < 5000');

-- bitmap scans: turn the other scans off
SET enable_seqscan = off;
SET enable_indexscan = off;
SET enable_indexonlyscan = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM ix WHERE grp = 5;
SELECT count(*), sum(id), min(id), max(id) FROM ix WHERE grp = 5;
EXPLAIN (COSTS OFF) SELECT id FROM ix WHERE grp = 5 OR code = 'Code77';
SELECT id FROM ix WHERE grp = 5 OR code = 'Code77' ORDER BY id LIMIT 5;
SELECT count(*) FROM ix WHERE grp = 5 OR code = 'Code77';
EXPLAIN (COSTS OFF) SELECT id FROM ix WHERE grp = 5 AND lower(code) = 'code105';
SELECT id FROM ix WHERE grp = 5 AND lower(code) = 'code105';
SELECT count(*) FROM ix WHERE id BETWEEN 100 AND 2000 AND grp < 10;
SELECT count(*) FROM ix WHERE active AND grp = 30;
RESET enable_seqscan;
RESET enable_indexscan;
RESET enable_indexonlyscan;

-- a multi-column index with a DESC column
CREATE INDEX ix_grp_id ON ix (grp, id DESC);
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT id FROM ix WHERE grp = 5 ORDER BY grp, id DESC LIMIT 3;
SELECT id FROM ix WHERE grp = 5 AND id < 300 ORDER BY grp, id DESC;
RESET enable_seqscan;
RESET enable_bitmapscan;

-- a lossy bitmap (too small work_mem) rechecks every row of its blocks
CREATE TABLE ix_lossy (id int, grp int) USING fastckpt;
INSERT INTO ix_lossy SELECT g, g % 7 FROM generate_series(1, 300000) g;
CREATE INDEX ix_lossy_grp ON ix_lossy (grp);
ANALYZE ix_lossy;
CREATE FUNCTION ix_is_lossy(q text) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
	line text;
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
		IF line LIKE '%lossy=%' THEN
			RETURN true;
		END IF;
	END LOOP;
	RETURN false;
END;
$$;
SET enable_seqscan = off;
SET enable_indexscan = off;
SET work_mem = '64kB';
SELECT ix_is_lossy('SELECT * FROM ix_lossy WHERE grp IN (1, 3)');
SELECT count(*), sum(id), min(id), max(id) FROM ix_lossy WHERE grp IN (1, 3);
SET work_mem = '64MB';
SELECT ix_is_lossy('SELECT * FROM ix_lossy WHERE grp IN (1, 3)');
SELECT count(*), sum(id), min(id), max(id) FROM ix_lossy WHERE grp IN (1, 3);
RESET work_mem;
RESET enable_seqscan;
RESET enable_indexscan;
SELECT count(*), sum(id), min(id), max(id) FROM ix_lossy WHERE grp IN (1, 3);
DROP TABLE ix_lossy;

-- unique indexes
INSERT INTO ix (id, payload) VALUES (10001, md5('1'));
INSERT INTO ix (id, payload) VALUES (1, 'fresh');
UPDATE ix SET payload = md5('2') WHERE id = 3;
SELECT id, payload = md5('3') AS unchanged FROM ix WHERE id = 3;
-- NULLs do not collide, unless NULLS NOT DISTINCT
INSERT INTO ix (id, payload) VALUES (10001, NULL), (10002, NULL);
CREATE TABLE ix_nnd (a int, b int) USING fastckpt;
CREATE UNIQUE INDEX ix_nnd_ab ON ix_nnd (a, b) NULLS NOT DISTINCT;
INSERT INTO ix_nnd VALUES (1, NULL);
INSERT INTO ix_nnd VALUES (1, NULL);
INSERT INTO ix_nnd VALUES (1, 2), (2, NULL);
SELECT * FROM ix_nnd ORDER BY a, b;
-- a key freed by DELETE (not yet vacuumed) can be used again
DELETE FROM ix WHERE id = 5;
INSERT INTO ix (id, code, payload) VALUES (5, 'again', md5('5'));
SELECT id, code FROM ix WHERE id = 5;
-- ... also within the same transaction
BEGIN;
DELETE FROM ix WHERE id = 6;
INSERT INTO ix (id, code, payload) VALUES (6, 'again', md5('6'));
COMMIT;
SELECT id, code FROM ix WHERE payload = md5('6');
-- ... but not one whose row was only updated in place
UPDATE ix SET note = 'in place' WHERE id = 7;
INSERT INTO ix (id) VALUES (7);
-- a unique index built over duplicates fails
CREATE UNIQUE INDEX ix_grp_unique ON ix (grp);

-- indexes follow updates
-- a column no index uses: updated in place, still found through every index
UPDATE ix SET note = 'updated' WHERE id BETWEEN 10 AND 19;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT id, note FROM ix WHERE id BETWEEN 10 AND 12 ORDER BY id;
SELECT id, note FROM ix WHERE code = 'Code15';
SELECT id, note FROM ix WHERE active AND id BETWEEN 10 AND 19;
-- indexed columns: the old keys no longer find the row, the new ones do
UPDATE ix SET grp = 1000 + grp, code = 'New' || id WHERE id BETWEEN 20 AND 29;
UPDATE ix SET active = NOT active WHERE id IN (20, 21);
SELECT count(*) FROM ix WHERE grp = 20;
SELECT id, grp, code FROM ix WHERE grp >= 1000 ORDER BY id;
SELECT id FROM ix WHERE code = 'Code25';
SELECT id FROM ix WHERE code = 'New25';
SELECT id FROM ix WHERE lower(code) = 'new26';
SELECT id FROM ix WHERE active AND id BETWEEN 20 AND 30 ORDER BY id;
-- a rolled-back key change leaves the old keys in place
BEGIN;
UPDATE ix SET id = id + 100000 WHERE id <= 4;
SELECT count(*) FROM ix WHERE id > 100000;
ROLLBACK;
SELECT id FROM ix WHERE id <= 4 ORDER BY id;
SELECT count(*) FROM ix WHERE id > 100000;
-- a row whose key changed twice in one transaction
BEGIN;
UPDATE ix SET id = 20001 WHERE id = 30;
UPDATE ix SET id = 20002 WHERE id = 20001;
COMMIT;
SELECT id, code FROM ix WHERE id IN (30, 20001, 20002);
RESET enable_seqscan;
RESET enable_bitmapscan;
SELECT * FROM ix_check('SELECT count(*) || '' '' || sum(id) FROM ix WHERE grp >= 1000');
SELECT * FROM ix_check('SELECT count(*) || '' '' || sum(id) FROM ix WHERE id > 10000');
SELECT * FROM ix_check('SELECT count(*) || '' '' || sum(grp) FROM ix WHERE id < 100');

-- an index created after in-place updates, and REINDEX
UPDATE ix SET note = 'N' || id WHERE id <= 100;
CREATE INDEX ix_note ON ix (note);
SELECT * FROM ix_check('SELECT string_agg(id::text, '','') FROM ix WHERE note = ''N42''');
SELECT * FROM ix_check('SELECT count(*) FROM ix WHERE note LIKE ''note%''');
REINDEX INDEX ix_grp;
REINDEX TABLE ix;
SELECT * FROM ix_check('SELECT count(*) || '' '' || sum(id) FROM ix WHERE grp = 7');
SELECT * FROM ix_check('SELECT count(*) || '' '' || sum(id) FROM ix WHERE id BETWEEN 1 AND 50');
DROP INDEX ix_note;
-- ... in the transaction that moved a row (its indexed column changed) or
-- deleted a key and inserted it again: the old versions are no duplicates
CREATE TABLE ix_moved (k int PRIMARY KEY, v text) USING fastckpt;
CREATE INDEX ix_moved_v ON ix_moved (v);
INSERT INTO ix_moved SELECT g, 'v' || g FROM generate_series(1, 10) g;
BEGIN;
UPDATE ix_moved SET v = 'moved' WHERE k = 3;
DELETE FROM ix_moved WHERE k = 4;
INSERT INTO ix_moved VALUES (4, 'again');
REINDEX TABLE ix_moved;
CREATE UNIQUE INDEX ix_moved_k ON ix_moved (k);
COMMIT;
SET enable_seqscan = off;
SELECT * FROM ix_moved WHERE k IN (3, 4) ORDER BY k;
RESET enable_seqscan;
DROP TABLE ix_moved;

-- GIN, GiST and SP-GiST indexes
CREATE TABLE ix_other (id int, tags int[], r int4range, p point, t text) USING fastckpt;
INSERT INTO ix_other
	SELECT g, ARRAY[g % 10, g % 7], int4range(g, g + 5), point(g % 50, g / 50), 'w' || (g % 20)
	  FROM generate_series(1, 2000) g;
CREATE INDEX ix_other_tags ON ix_other USING gin (tags);
CREATE INDEX ix_other_r ON ix_other USING gist (r);
CREATE INDEX ix_other_p ON ix_other USING spgist (p);
CREATE INDEX ix_other_t ON ix_other USING spgist (t);
ANALYZE ix_other;
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM ix_other WHERE tags @> '{3,4}';
SELECT count(*) FROM ix_other WHERE tags @> '{3,4}';
SELECT count(*) FROM ix_other WHERE r && int4range(100, 110);
SELECT count(*) FROM ix_other WHERE p <@ box '((0,0),(9,9))';
SELECT count(*) FROM ix_other WHERE t = 'w7';
UPDATE ix_other SET tags = '{99}' WHERE id <= 10;
SELECT count(*) FROM ix_other WHERE tags @> '{99}';
SELECT count(*) FROM ix_other WHERE tags @> '{3,4}';
SELECT id, p FROM ix_other ORDER BY p <-> point(10.1, 0) LIMIT 3;
RESET enable_seqscan;
SELECT count(*) FROM ix_other WHERE tags @> '{3,4}';
SELECT count(*) FROM ix_other WHERE r && int4range(100, 110);
SELECT count(*) FROM ix_other WHERE p <@ box '((0,0),(9,9))';

-- an exclusion constraint (GiST)
CREATE TABLE ix_booking (room int, during int4range,
	EXCLUDE USING gist (during WITH &&)) USING fastckpt;
INSERT INTO ix_booking VALUES (1, '[1,5)'), (1, '[5,10)');
INSERT INTO ix_booking VALUES (2, '[4,6)');
UPDATE ix_booking SET during = '[0,2)' WHERE during = '[1,5)';
INSERT INTO ix_booking VALUES (2, '[2,5)');
SELECT * FROM ix_booking ORDER BY during;

-- a parallel build whose expression runs a statement in every process
-- (a parallel worker read the procedure registry with a snapshot of its own)
CREATE FUNCTION ix_lookup(int) RETURNS int IMMUTABLE PARALLEL SAFE LANGUAGE plpgsql AS $$
BEGIN
	PERFORM abs($1);
	RETURN $1 % 7;
END $$;
CREATE TABLE ix_par (id int, v int) USING fastckpt WITH (parallel_workers = 2);
INSERT INTO ix_par SELECT g, g FROM generate_series(1, 20000) g;
SET max_parallel_maintenance_workers = 2;
CREATE INDEX ix_par_lookup ON ix_par (ix_lookup(v));
RESET max_parallel_maintenance_workers;
SET enable_seqscan = off;
SELECT count(*) FROM ix_par WHERE ix_lookup(v) = 3;
RESET enable_seqscan;
DROP TABLE ix_par;
DROP FUNCTION ix_lookup(int);

DROP FUNCTION ix_check(text);
DROP FUNCTION ix_is_lossy(text);
DROP TABLE ix, ix_nnd, ix_other, ix_booking;
