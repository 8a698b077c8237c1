--
-- analyze_vacuum: ANALYZE statistics and size estimates; VACUUM reclaiming
-- dead rows, old row versions and index entries; slots reused; freezing and
-- relfrozenxid.
--
CREATE TABLE av (id int PRIMARY KEY, grp int, v text) USING fastckpt
	WITH (autovacuum_enabled = off);
INSERT INTO av
	SELECT g, g % 10, CASE WHEN g % 4 = 0 THEN NULL ELSE 'v' || (g % 50) END
	  FROM generate_series(1, 5000) g;
CREATE INDEX av_grp ON av (grp);

-- estimated rows of a query's top plan node
CREATE FUNCTION av_estimate(q text) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
	plan json;
BEGIN
	EXECUTE 'EXPLAIN (FORMAT JSON) ' || q INTO plan;
	RETURN (plan -> 0 -> 'Plan' ->> 'Plan Rows')::bigint;
END;
$$;

-- ANALYZE fills pg_class and pg_statistic
SELECT reltuples FROM pg_class WHERE relname = 'av';
ANALYZE av;
SELECT reltuples, relpages > 0 AS has_pages FROM pg_class WHERE relname = 'av';
SELECT attname, null_frac, n_distinct, avg_width, correlation
  FROM pg_stats WHERE schemaname = 'public' AND tablename = 'av' ORDER BY attname;
SELECT most_common_vals FROM pg_stats WHERE tablename = 'av' AND attname = 'v';
SELECT av_estimate('SELECT * FROM av');
SELECT av_estimate('SELECT * FROM av WHERE grp = 3');
SELECT av_estimate('SELECT * FROM av WHERE v IS NULL');
SELECT av_estimate('SELECT * FROM av WHERE id < 1000') BETWEEN 900 AND 1100 AS id_range_ok;
-- ... and follows changes
DELETE FROM av WHERE id > 4000;
UPDATE av SET grp = 42 WHERE id <= 1000;
ANALYZE av;
SELECT reltuples FROM pg_class WHERE relname = 'av';
SELECT av_estimate('SELECT * FROM av WHERE grp = 42');
SELECT av_estimate('SELECT * FROM av WHERE grp = 3');
EXPLAIN (COSTS OFF) SELECT * FROM av WHERE id = 17;
-- ANALYZE of chosen columns, and inside a transaction that rolls back
ANALYZE av (grp);
BEGIN;
DELETE FROM av WHERE grp = 42;
ANALYZE av;
SELECT reltuples FROM pg_class WHERE relname = 'av';
ROLLBACK;
SELECT reltuples FROM pg_class WHERE relname = 'av';
-- a table bigger than ANALYZE's sample
CREATE TABLE av_big (id int, k int) USING fastckpt;
INSERT INTO av_big SELECT g, g % 1000 FROM generate_series(1, 100000) g;
ANALYZE av_big;
SELECT reltuples BETWEEN 95000 AND 105000 AS reltuples_ok FROM pg_class WHERE relname = 'av_big';
SELECT n_distinct FROM pg_stats WHERE tablename = 'av_big' AND attname = 'k';
SELECT av_estimate('SELECT * FROM av_big WHERE k = 7') BETWEEN 50 AND 200 AS estimate_ok;
DROP TABLE av_big;
-- ANALYZE of an empty table
CREATE TABLE av_empty (a int) USING fastckpt;
ANALYZE av_empty;
SELECT reltuples, relpages FROM pg_class WHERE relname = 'av_empty';
SELECT count(*) FROM pg_stats WHERE tablename = 'av_empty';
DROP TABLE av_empty;

--
-- VACUUM (autovacuum is off for these tables, so that the counts below
-- only change when the test says so)
--
CREATE TABLE vac (id int PRIMARY KEY, v text, n int DEFAULT 0) USING fastckpt
	WITH (autovacuum_enabled = off);
CREATE INDEX vac_v ON vac (v);
INSERT INTO vac SELECT g, 'v' || g FROM generate_series(1, 1000) g;
SELECT * FROM fc_rows('vac');
-- deleted rows are dead until VACUUM reclaims them
DELETE FROM vac WHERE id % 4 = 0;
SELECT * FROM fc_rows('vac');
SELECT count(*) FROM vac;
SELECT * FROM fc_rows('vac');
SELECT slots_used, slots_allocated AS vac_slots_allocated FROM fastckpt_stat_tables
 WHERE relation = 'vac'::regclass \gset
SELECT :slots_used AS slots_used;
VACUUM vac;
SELECT * FROM fc_rows('vac');
SELECT slots_used FROM fastckpt_stat_tables WHERE relation = 'vac'::regclass;
SELECT relpages > 0 AS has_pages, reltuples FROM pg_class WHERE relname = 'vac';
-- the index entries of reclaimed rows are gone, the others still work
SET enable_seqscan = off;
SELECT count(*) FROM vac WHERE id IN (4, 8, 400, 1000);
SELECT id, v FROM vac WHERE id IN (3, 5, 999) ORDER BY id;
SELECT id FROM vac WHERE v = 'v400';
SELECT id FROM vac WHERE v = 'v401';
RESET enable_seqscan;
-- reclaimed slots are used again: the table does not grow
INSERT INTO vac SELECT g, 'new' || g FROM generate_series(1001, 1250) g;
SELECT slots_used, slots_allocated = :vac_slots_allocated AS same_allocation
  FROM fastckpt_stat_tables WHERE relation = 'vac'::regclass;
SELECT * FROM fc_rows('vac');
-- rows in reused slots are found through the indexes, old keys are not
SET enable_seqscan = off;
SELECT id, v FROM vac WHERE id IN (4, 1004) ORDER BY id;
SELECT id FROM vac WHERE v IN ('v4', 'new1004');
SELECT count(*) FROM vac WHERE v LIKE 'new%';
RESET enable_seqscan;
-- steady insert/delete cycles keep memory bounded
INSERT INTO vac SELECT g, 'cycle' FROM generate_series(2001, 2500) g;
DELETE FROM vac WHERE v = 'cycle';
VACUUM vac;
INSERT INTO vac SELECT g, 'cycle' FROM generate_series(2001, 2500) g;
DELETE FROM vac WHERE v = 'cycle';
VACUUM vac;
SELECT slots_allocated AS vac_slots_allocated FROM fastckpt_stat_tables WHERE relation = 'vac'::regclass \gset
INSERT INTO vac SELECT g, 'cycle' FROM generate_series(2001, 2500) g;
DELETE FROM vac WHERE v = 'cycle';
VACUUM vac;
INSERT INTO vac SELECT g, 'cycle' FROM generate_series(2001, 2500) g;
DELETE FROM vac WHERE v = 'cycle';
VACUUM vac;
SELECT slots_allocated = :vac_slots_allocated AS same_allocation
  FROM fastckpt_stat_tables WHERE relation = 'vac'::regclass;
SELECT * FROM fc_rows('vac');

-- old versions left by in-place updates are reclaimed
UPDATE vac SET n = n + 1 WHERE id <= 500;
UPDATE vac SET n = n + 1 WHERE id <= 500;
SELECT undo_records > 0 AS has_undo FROM fastckpt_stat_tables WHERE relation = 'vac'::regclass;
SELECT * FROM fc_rows('vac');
VACUUM vac;
SELECT undo_records FROM fastckpt_stat_tables WHERE relation = 'vac'::regclass;
SELECT count(*), sum(n) FROM vac WHERE id <= 500;
-- rows moved by an update of an indexed column leave dead rows behind
UPDATE vac SET id = id + 10000 WHERE id <= 100;
SELECT * FROM fc_rows('vac');
VACUUM vac;
SELECT * FROM fc_rows('vac');
SELECT count(*), min(id), max(id) FROM vac;

-- rows of aborted transactions are dead and reclaimed; an aborted DELETE
-- or UPDATE leaves the rows alive
BEGIN;
INSERT INTO vac SELECT g, 'aborted' FROM generate_series(5001, 5100) g;
ROLLBACK;
SELECT * FROM fc_rows('vac');
BEGIN;
DELETE FROM vac WHERE id > 10000;
UPDATE vac SET id = -id WHERE id < 200;
ROLLBACK;
SELECT * FROM fc_rows('vac');
VACUUM vac;
SELECT * FROM fc_rows('vac');
SELECT count(*) FROM vac;
SELECT count(*) FROM vac WHERE v = 'aborted';

-- VACUUM options and variants
VACUUM (VERBOSE false, ANALYZE) vac;
VACUUM (INDEX_CLEANUP off, TRUNCATE false) vac;
VACUUM (DISABLE_PAGE_SKIPPING) vac;
VACUUM (PARALLEL 2) vac;
VACUUM (SKIP_LOCKED) vac, av;
VACUUM ANALYZE vac (v);
SELECT vacuum_count > 0 AS vacuumed, analyze_count > 0 AS analyzed
  FROM pg_stat_user_tables WHERE relname = 'vac';
SELECT count(*) FROM vac;
-- VACUUM of a table without indexes
CREATE TABLE vac_noidx (a int) USING fastckpt WITH (autovacuum_enabled = off);
INSERT INTO vac_noidx SELECT generate_series(1, 100);
DELETE FROM vac_noidx WHERE a > 10;
VACUUM vac_noidx;
SELECT * FROM fc_rows('vac_noidx');
SELECT sum(a) FROM vac_noidx;
DROP TABLE vac_noidx;

-- in-place updates: writers reclaim the old versions without VACUUM, and
-- the statistics say so, as heap's page pruning does (or autovacuum would
-- scan the table again and again for nothing)
CREATE TABLE vac_inplace (id int PRIMARY KEY, n int) USING fastckpt
	WITH (autovacuum_enabled = off);
INSERT INTO vac_inplace VALUES (1, 0);
CREATE PROCEDURE vac_inplace_bump(k int) LANGUAGE plpgsql AS $$
BEGIN
	FOR i IN 1..k LOOP
		UPDATE vac_inplace SET n = n + 1 WHERE id = 1;
		COMMIT;
	END LOOP;
END $$;
CALL vac_inplace_bump(1000);
SELECT pg_stat_force_next_flush();
SELECT n_tup_upd, n_tup_hot_upd, n_dead_tup < 200 AS old_versions_reclaimed
  FROM pg_stat_user_tables WHERE relname = 'vac_inplace';
DROP PROCEDURE vac_inplace_bump;
DROP TABLE vac_inplace;

--
-- freezing: relfrozenxid advances past the table's old xids
--
CREATE TABLE frz (id int PRIMARY KEY, v text) USING fastckpt WITH (autovacuum_enabled = off);
INSERT INTO frz VALUES (1, 'first');
INSERT INTO frz VALUES (2, 'second');
UPDATE frz SET v = 'updated' WHERE id = 1;
-- use up some transaction ids
CREATE PROCEDURE frz_burn(n int) LANGUAGE plpgsql AS $$
BEGIN
	FOR i IN 1 .. n LOOP
		PERFORM pg_current_xact_id();
		COMMIT;
	END LOOP;
END;
$$;
CALL frz_burn(200);
SELECT age(relfrozenxid) AS frz_age_before FROM pg_class WHERE relname = 'frz' \gset
SELECT :frz_age_before >= 200 AS old_enough;
VACUUM FREEZE frz;
SELECT age(relfrozenxid) < :frz_age_before AS advanced,
	   age(relfrozenxid) < 100 AS recent
  FROM pg_class WHERE relname = 'frz';
SELECT * FROM frz ORDER BY id;
-- frozen rows can still be updated, deleted and rolled back
UPDATE frz SET v = 'after freeze' WHERE id = 1;
BEGIN;
DELETE FROM frz WHERE id = 2;
ROLLBACK;
SELECT * FROM frz ORDER BY id;
-- a plain VACUUM with vacuum_freeze_min_age = 0 freezes too
CALL frz_burn(200);
SELECT age(relfrozenxid) AS frz_age_before FROM pg_class WHERE relname = 'frz' \gset
SET vacuum_freeze_min_age = 0;
VACUUM frz;
RESET vacuum_freeze_min_age;
SELECT age(relfrozenxid) < :frz_age_before AS advanced,
	   age(relfrozenxid) < 100 AS recent
  FROM pg_class WHERE relname = 'frz';
-- the database's datfrozenxid follows once every table has been vacuumed
SELECT age(datfrozenxid) AS db_age_before FROM pg_database WHERE datname = current_database() \gset
VACUUM FREEZE;
SELECT age(datfrozenxid) < :db_age_before AS db_advanced FROM pg_database WHERE datname = current_database();

DROP TABLE av, vac, frz;
DROP FUNCTION av_estimate(text);
DROP PROCEDURE frz_burn(int);
