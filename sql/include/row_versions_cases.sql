-- Cases run once per access method by row_versions.sql (default_table_access_method).
SELECT current_setting('default_table_access_method') AS am;

-- an UPDATE's OLD TABLE holds the old rows, also for ON CONFLICT DO UPDATE
CREATE TABLE rv_tr (id int PRIMARY KEY, x int);
INSERT INTO rv_tr VALUES (1, 10), (2, 20);
CREATE FUNCTION rv_show_transition() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO rv_log (msg) VALUES (format('old: %s, new: %s',
		(SELECT string_agg(o::text, ',' ORDER BY o.id) FROM oldt o),
		(SELECT string_agg(n::text, ',' ORDER BY n.id) FROM newt n)));
	RETURN NULL;
END $$;
CREATE TRIGGER rv_tr_t AFTER UPDATE ON rv_tr REFERENCING OLD TABLE AS oldt NEW TABLE AS newt
	FOR EACH STATEMENT EXECUTE FUNCTION rv_show_transition();
UPDATE rv_tr SET x = x + 1;
INSERT INTO rv_tr VALUES (1, 0) ON CONFLICT (id) DO UPDATE SET x = rv_tr.x * 100;
SELECT * FROM rv_tr ORDER BY id;
SELECT msg FROM rv_log ORDER BY n;
TRUNCATE rv_log;

-- ... also a partitioned table's, filled from its partitions
CREATE TABLE rv_pt (id int, k int, x int) PARTITION BY RANGE (k);
CREATE TABLE rv_pt1 PARTITION OF rv_pt FOR VALUES FROM (0) TO (10);
CREATE TABLE rv_pt2 PARTITION OF rv_pt FOR VALUES FROM (10) TO (20);
INSERT INTO rv_pt VALUES (1, 1, 10), (2, 12, 20);
CREATE TRIGGER rv_pt_t AFTER UPDATE ON rv_pt REFERENCING OLD TABLE AS oldt NEW TABLE AS newt
	FOR EACH STATEMENT EXECUTE FUNCTION rv_show_transition();
UPDATE rv_pt SET x = x + 1;
SELECT msg FROM rv_log ORDER BY n;
TRUNCATE rv_log;
DROP TABLE rv_pt;

-- ... and an inheritance parent's, filled from its children (two levels)
CREATE TABLE rv_ih (id int, x int);
CREATE TABLE rv_ih_child () INHERITS (rv_ih);
CREATE TABLE rv_ih_grandchild () INHERITS (rv_ih_child);
INSERT INTO rv_ih VALUES (1, 10);
INSERT INTO rv_ih_child VALUES (2, 20);
INSERT INTO rv_ih_grandchild VALUES (3, 30);
UPDATE rv_ih SET x = x + 1;		-- before the trigger: in place is fine
CREATE TRIGGER rv_ih_t AFTER UPDATE ON rv_ih REFERENCING OLD TABLE AS oldt NEW TABLE AS newt
	FOR EACH STATEMENT EXECUTE FUNCTION rv_show_transition();
UPDATE rv_ih SET x = x + 1;
SELECT msg FROM rv_log ORDER BY n;
TRUNCATE rv_log;
DROP TABLE rv_ih_grandchild, rv_ih_child, rv_ih;

-- a deferred AFTER INSERT trigger sees the row as inserted, not as updated later
CREATE TABLE rv_ins (id int PRIMARY KEY, v int);
CREATE FUNCTION rv_show_new() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO rv_log (msg) VALUES (format('%s %s: %s', tg_name, tg_op, new));
	RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER rv_ins_deferred AFTER INSERT ON rv_ins DEFERRABLE INITIALLY DEFERRED
	FOR EACH ROW EXECUTE FUNCTION rv_show_new();
BEGIN;
INSERT INTO rv_ins VALUES (1, 1);
UPDATE rv_ins SET v = 2 WHERE id = 1;
UPDATE rv_ins SET v = 3 WHERE id = 1;
COMMIT;
-- ... also when a BEFORE trigger updates a row inserted earlier in the statement
CREATE FUNCTION rv_bump_first() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF new.id = 3 THEN
		UPDATE rv_ins SET v = 100 WHERE id = 2;
	END IF;
	RETURN new;
END $$;
CREATE TRIGGER rv_ins_before BEFORE INSERT ON rv_ins FOR EACH ROW EXECUTE FUNCTION rv_bump_first();
CREATE TRIGGER rv_ins_after AFTER INSERT ON rv_ins FOR EACH ROW EXECUTE FUNCTION rv_show_new();
INSERT INTO rv_ins VALUES (2, 2), (3, 3);
SELECT * FROM rv_ins ORDER BY id;
SELECT msg FROM rv_log ORDER BY n;
TRUNCATE rv_log;

-- WHERE CURRENT OF finds a row this transaction moved (its key changed)
CREATE TABLE rv_cur (id int PRIMARY KEY, v int);
INSERT INTO rv_cur VALUES (1, 1);
BEGIN;
DECLARE c CURSOR FOR SELECT * FROM rv_cur FOR UPDATE;
FETCH c;
UPDATE rv_cur SET id = 10 WHERE CURRENT OF c;
UPDATE rv_cur SET v = 100 WHERE CURRENT OF c;
COMMIT;
BEGIN;
DECLARE c CURSOR FOR SELECT * FROM rv_cur;
FETCH c;
UPDATE rv_cur SET id = 20 WHERE CURRENT OF c;
UPDATE rv_cur SET v = 200 WHERE CURRENT OF c RETURNING *;
COMMIT;
SELECT * FROM rv_cur;

-- system columns as heap shows them: "xmax = 0" tells an upsert's insert
-- from its update; RETURNING xmin is the writer's
CREATE TABLE rv_sys (id int PRIMARY KEY, v int);
INSERT INTO rv_sys VALUES (1, 1) RETURNING xmax = 0 AS inserted, xmin = pg_current_xact_id()::xid AS mine;
INSERT INTO rv_sys VALUES (1, 2), (2, 2) ON CONFLICT (id) DO UPDATE SET v = excluded.v
	RETURNING id, xmax = 0 AS inserted, xmin = pg_current_xact_id()::xid AS mine;
BEGIN;
UPDATE rv_sys SET v = 5 WHERE id = 1 RETURNING xmin = pg_current_xact_id()::xid AS mine, xmax;
SELECT id, xmax = 0 AS unlocked FROM rv_sys WHERE id = 1 FOR UPDATE;
SELECT id, xmax = pg_current_xact_id()::xid AS locked_by_me FROM rv_sys WHERE id = 1;
COMMIT;

-- a row one statement reaches twice after updating it: skipped again under
-- REPEATABLE READ with a BEFORE UPDATE trigger (which locks it first), for
-- a join and for a CTE that updated it; MERGE and ON CONFLICT refuse it;
-- ON CONFLICT also after a BEFORE INSERT trigger updated it.  (Errors are
-- caught: psql would print this file's path with them.)
CREATE FUNCTION rv_try(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	n bigint;
BEGIN
	EXECUTE q;
	GET DIAGNOSTICS n = ROW_COUNT;
	RETURN format('%s rows', n);
EXCEPTION WHEN OTHERS THEN
	RETURN format('%s: %s', SQLSTATE, SQLERRM);
END $$;
CREATE TABLE rv_twice (id int PRIMARY KEY, v int);
CREATE TABLE rv_src (k int) USING heap;
INSERT INTO rv_twice VALUES (1, 0);
INSERT INTO rv_src VALUES (1), (1);
CREATE FUNCTION rv_pass() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RETURN new;
END $$;
CREATE TRIGGER rv_twice_before BEFORE UPDATE ON rv_twice FOR EACH ROW EXECUTE FUNCTION rv_pass();
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT rv_try('UPDATE rv_twice SET v = v + 1 FROM rv_src WHERE rv_src.k = rv_twice.id');
ROLLBACK;
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT rv_try('WITH u AS (UPDATE rv_twice SET v = v + 10 WHERE id = 1 RETURNING id)
	SELECT t.id, t.v FROM u JOIN rv_twice t USING (id) FOR UPDATE OF t');
ROLLBACK;
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT rv_try('MERGE INTO rv_twice USING rv_src ON rv_src.k = rv_twice.id
	WHEN MATCHED THEN UPDATE SET v = v + 100');
ROLLBACK;
UPDATE rv_twice SET v = v + 1 FROM rv_src WHERE rv_src.k = rv_twice.id;
SELECT * FROM rv_twice;
CREATE FUNCTION rv_bump_existing() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	UPDATE rv_twice SET v = v + 1 WHERE id = new.id;
	RETURN new;
END $$;
CREATE TRIGGER rv_twice_before_insert BEFORE INSERT ON rv_twice FOR EACH ROW EXECUTE FUNCTION rv_bump_existing();
SELECT rv_try('INSERT INTO rv_twice VALUES (1, 0) ON CONFLICT (id) DO UPDATE SET v = 1000');
DROP TRIGGER rv_twice_before_insert ON rv_twice;
SELECT rv_try('INSERT INTO rv_twice VALUES (1, 0), (1, 0) ON CONFLICT (id) DO UPDATE SET v = 1000');
SELECT rv_try('INSERT INTO rv_twice VALUES (2, 0), (2, 0) ON CONFLICT (id) DO UPDATE SET v = 1000');
SELECT * FROM rv_twice;
-- the same, after other lookups of the row found it changed by the command:
-- a deferrable unique index's own check, and a trigger's ON CONFLICT DO
-- NOTHING (neither locks the row)
CREATE TABLE rv_defer (id int PRIMARY KEY, u int UNIQUE DEFERRABLE INITIALLY DEFERRED, v int);
INSERT INTO rv_defer VALUES (1, 10, 0), (2, 20, 0);
CREATE TRIGGER rv_defer_before BEFORE UPDATE ON rv_defer FOR EACH ROW EXECUTE FUNCTION rv_pass();
BEGIN ISOLATION LEVEL REPEATABLE READ;
UPDATE rv_defer SET u = s.u, v = rv_defer.v + 1
	FROM (VALUES (1, 10), (2, 10), (1, 10)) s(id, u) WHERE s.id = rv_defer.id
	RETURNING rv_defer.*;
UPDATE rv_defer SET u = 30 WHERE id = 1;
COMMIT;
CREATE FUNCTION rv_insert_nothing() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF new.id = 2 THEN
		INSERT INTO rv_twice VALUES (1, -1) ON CONFLICT DO NOTHING;
	END IF;
	RETURN new;
END $$;
INSERT INTO rv_twice VALUES (2, 0);
DROP TRIGGER rv_twice_before ON rv_twice;
CREATE TRIGGER rv_twice_before BEFORE UPDATE ON rv_twice FOR EACH ROW EXECUTE FUNCTION rv_insert_nothing();
BEGIN ISOLATION LEVEL REPEATABLE READ;
UPDATE rv_twice SET v = rv_twice.v + 1 FROM (VALUES (1), (2), (1)) s(id)
	WHERE s.id = rv_twice.id RETURNING rv_twice.*;
COMMIT;

-- the same after an ON CONFLICT DO NOTHING of the statement found the row:
-- a FOR UPDATE, a BEFORE DELETE trigger's lock
CREATE TABLE rv_probe (id int PRIMARY KEY, v int);
INSERT INTO rv_probe VALUES (1, 10), (2, 20);
BEGIN ISOLATION LEVEL REPEATABLE READ;
WITH u AS (UPDATE rv_probe SET v = v + 1 WHERE id = 1 RETURNING id),
	i AS (INSERT INTO rv_probe VALUES (1, 0) ON CONFLICT DO NOTHING RETURNING id),
	l AS MATERIALIZED (SELECT id FROM rv_probe WHERE id = 1 FOR UPDATE)
SELECT (SELECT count(*) FROM u) AS updated, (SELECT count(*) FROM i) AS inserted,
	(SELECT count(*) FROM l) AS locked;
ROLLBACK;
CREATE FUNCTION rv_pass_old() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RETURN old;
END $$;
CREATE TRIGGER rv_probe_before_delete BEFORE DELETE ON rv_probe FOR EACH ROW EXECUTE FUNCTION rv_pass_old();
BEGIN ISOLATION LEVEL REPEATABLE READ;
WITH u AS (UPDATE rv_probe SET v = v + 1 WHERE id = 1 RETURNING id),
	i AS (INSERT INTO rv_probe VALUES (1, 0) ON CONFLICT DO NOTHING RETURNING id),
	d AS (DELETE FROM rv_probe WHERE id = 1 RETURNING id)
SELECT (SELECT count(*) FROM u) AS updated, (SELECT count(*) FROM i) AS inserted,
	(SELECT count(*) FROM d) AS deleted;
ROLLBACK;
-- ... also when the probe runs after the scan found the row (a filter
-- reading the DO NOTHING's result)
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT rv_try('WITH u AS (UPDATE rv_probe SET v = v + 1 WHERE id = 1 RETURNING id),
	i AS (INSERT INTO rv_probe VALUES (1, 0) ON CONFLICT DO NOTHING RETURNING id),
	d AS (DELETE FROM rv_probe WHERE id = 1
		AND (SELECT count(*) FROM u WHERE rv_probe.v IS NOT NULL) >= 0
		AND (SELECT count(*) FROM i WHERE rv_probe.v IS NOT NULL) >= 0 RETURNING id)
	SELECT (SELECT count(*) FROM d)');
SELECT * FROM rv_probe ORDER BY id;
ROLLBACK;
-- ... also beside an upsert of another table in the same statement
CREATE TABLE rv_other (id int PRIMARY KEY, v int);
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT rv_try('WITH o AS (INSERT INTO rv_other VALUES (1, 1) ON CONFLICT (id) DO UPDATE SET v = 2 RETURNING id),
	u AS (UPDATE rv_probe SET v = v + 1 WHERE id = 1 RETURNING id),
	i AS (INSERT INTO rv_probe VALUES (1, 0) ON CONFLICT DO NOTHING RETURNING id),
	d AS (DELETE FROM rv_probe WHERE id = 1
		AND (SELECT count(*) FROM u WHERE rv_probe.v IS NOT NULL) >= 0
		AND (SELECT count(*) FROM i WHERE rv_probe.v IS NOT NULL) >= 0 RETURNING id)
	SELECT (SELECT count(*) FROM d) + (SELECT count(*) FROM o)');
SELECT * FROM rv_probe ORDER BY id;
ROLLBACK;
-- ... and after an upsert failed earlier in the session (its error caught)
DO $$
BEGIN
	INSERT INTO rv_other VALUES (2, 0) ON CONFLICT (id) DO UPDATE SET v = 1 / excluded.v;
	INSERT INTO rv_other VALUES (2, 0) ON CONFLICT (id) DO UPDATE SET v = 1 / excluded.v;
EXCEPTION WHEN division_by_zero THEN
	NULL;
END $$;
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT rv_try('WITH u AS (UPDATE rv_probe SET v = v + 1 WHERE id = 1 RETURNING id),
	i AS (INSERT INTO rv_probe VALUES (1, 0) ON CONFLICT DO NOTHING RETURNING id),
	d AS (DELETE FROM rv_probe WHERE id = 1
		AND (SELECT count(*) FROM u WHERE rv_probe.v IS NOT NULL) >= 0
		AND (SELECT count(*) FROM i WHERE rv_probe.v IS NOT NULL) >= 0 RETURNING id)
	SELECT (SELECT count(*) FROM d)');
SELECT * FROM rv_probe ORDER BY id;
ROLLBACK;
-- ... and when the statement that probed failed (its error caught)
CREATE TABLE rv_caught (id int PRIMARY KEY, v int);
INSERT INTO rv_caught VALUES (1, 10), (2, 20);
ANALYZE rv_caught;
CREATE FUNCTION rv_probe_and_fail() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF old.id = 2 THEN
		BEGIN
			INSERT INTO rv_caught VALUES (1, 0), (3, 1 / (random() * 0)::int) ON CONFLICT DO NOTHING;
		EXCEPTION WHEN division_by_zero THEN
			NULL;
		END;
	END IF;
	RETURN new;
END $$;
CREATE TRIGGER rv_caught_before BEFORE UPDATE ON rv_caught FOR EACH ROW EXECUTE FUNCTION rv_probe_and_fail();
SET enable_nestloop = off;
SET enable_mergejoin = off;
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT rv_try('UPDATE rv_caught SET v = rv_caught.v + s.o FROM (VALUES (1, 1), (2, 2), (1, 3),
	(101, 0), (102, 0), (103, 0), (104, 0), (105, 0), (106, 0), (107, 0), (108, 0)) s(id, o)
	WHERE rv_caught.id = s.id');
COMMIT;
RESET enable_nestloop;
RESET enable_mergejoin;
SELECT * FROM rv_caught ORDER BY id;
-- an upsert of a row this transaction updated before reports an update
BEGIN;
UPDATE rv_probe SET v = v + 1 WHERE id = 2;
INSERT INTO rv_probe VALUES (2, 0) ON CONFLICT (id) DO UPDATE SET v = rv_probe.v + 10
	RETURNING id, v, xmax = 0 AS inserted;
COMMIT;

DROP TABLE rv_tr, rv_ins, rv_cur, rv_sys, rv_twice, rv_src, rv_defer, rv_probe, rv_caught, rv_other;
DROP FUNCTION rv_show_transition(), rv_show_new(), rv_bump_first(), rv_pass(),
	rv_bump_existing(), rv_insert_nothing(), rv_try(text), rv_pass_old(),
	rv_probe_and_fail();
