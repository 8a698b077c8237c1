--
-- constraints: PRIMARY KEY, UNIQUE, CHECK, NOT NULL, EXCLUDE, foreign keys
-- between fastckpt tables, and PostgreSQL's rule on foreign keys between
-- unlogged (fastckpt) and logged tables.
--
CREATE TABLE con_parent (
	id int PRIMARY KEY,
	code text NOT NULL UNIQUE,
	qty int CHECK (qty >= 0),
	lo int,
	hi int,
	CONSTRAINT con_range CHECK (lo <= hi)
) USING fastckpt;
INSERT INTO con_parent VALUES (1, 'a', 1, 0, 10), (2, 'b', 2, 5, 5), (3, 'c', 0, NULL, 1);

-- PRIMARY KEY
INSERT INTO con_parent VALUES (1, 'dup', 1, 0, 0);
INSERT INTO con_parent VALUES (NULL, 'null id', 1, 0, 0);
UPDATE con_parent SET id = 2 WHERE id = 1;
-- UNIQUE
INSERT INTO con_parent VALUES (4, 'a', 1, 0, 0);
UPDATE con_parent SET code = 'b' WHERE id = 3;
-- CHECK
INSERT INTO con_parent VALUES (4, 'd', -1, 0, 0);
INSERT INTO con_parent VALUES (4, 'd', 1, 5, 4);
UPDATE con_parent SET qty = qty - 2 WHERE id = 2;
UPDATE con_parent SET hi = -1 WHERE id = 1;
-- NOT NULL
INSERT INTO con_parent VALUES (4, NULL, 1, 0, 0);
UPDATE con_parent SET code = NULL WHERE id = 1;
-- none of the failed statements left anything behind
SELECT * FROM con_parent ORDER BY id;
-- constraints added to a table with rows are checked against them
ALTER TABLE con_parent ADD CONSTRAINT con_qty_small CHECK (qty < 2);
ALTER TABLE con_parent ADD CONSTRAINT con_qty_small CHECK (qty < 3);
ALTER TABLE con_parent ADD CONSTRAINT con_hi_unique UNIQUE (hi);
ALTER TABLE con_parent ADD CONSTRAINT con_lo_unique UNIQUE (lo);
ALTER TABLE con_parent ALTER COLUMN lo SET NOT NULL;
ALTER TABLE con_parent ADD CONSTRAINT con_notvalid CHECK (qty > 0) NOT VALID;
ALTER TABLE con_parent VALIDATE CONSTRAINT con_notvalid;
INSERT INTO con_parent VALUES (5, 'e', 0, 1, 1);
ALTER TABLE con_parent DROP CONSTRAINT con_notvalid;
\d con_parent

-- deferrable unique constraints are checked at commit
CREATE TABLE con_deferred (id int UNIQUE DEFERRABLE INITIALLY DEFERRED, v text) USING fastckpt;
INSERT INTO con_deferred VALUES (1, 'one'), (2, 'two');
BEGIN;
UPDATE con_deferred SET id = 3 - id;
SELECT * FROM con_deferred ORDER BY id;
COMMIT;
SELECT * FROM con_deferred ORDER BY id;
BEGIN;
UPDATE con_deferred SET id = 1 WHERE id = 2;
COMMIT;
SELECT * FROM con_deferred ORDER BY id;
BEGIN;
INSERT INTO con_deferred VALUES (1, 'dup');
SET CONSTRAINTS ALL IMMEDIATE;
ROLLBACK;

-- foreign keys between fastckpt tables
CREATE TABLE con_child (
	id int PRIMARY KEY,
	parent_id int REFERENCES con_parent (id),
	parent_code text REFERENCES con_parent (code) ON UPDATE CASCADE ON DELETE SET NULL,
	note text
) USING fastckpt;
INSERT INTO con_child VALUES (10, 1, 'a', 'x'), (11, 1, 'b', 'y'), (12, 2, NULL, 'z'), (13, NULL, NULL, 'w');
INSERT INTO con_child VALUES (14, 99, NULL, 'no parent');
INSERT INTO con_child VALUES (14, NULL, 'zz', 'no parent');
UPDATE con_child SET parent_id = 42 WHERE id = 10;
-- NO ACTION: a referenced row cannot go, nor change its key
DELETE FROM con_parent WHERE id = 1;
UPDATE con_parent SET id = 100 WHERE id = 2;
-- a parent row updated in place (no key change) keeps its children
UPDATE con_parent SET qty = 0 WHERE id = 1;
SELECT * FROM con_child WHERE parent_id = 1 ORDER BY id;
-- ON UPDATE CASCADE, ON DELETE SET NULL
UPDATE con_parent SET code = 'bb' WHERE code = 'b';
SELECT * FROM con_child ORDER BY id;
DELETE FROM con_child WHERE parent_id = 2;
DELETE FROM con_parent WHERE code = 'bb';
SELECT * FROM con_child ORDER BY id;
SELECT id, code FROM con_parent ORDER BY id;
-- an unreferenced parent can go
DELETE FROM con_parent WHERE id = 3 RETURNING id;
-- ON DELETE CASCADE through two levels
CREATE TABLE con_a (id int PRIMARY KEY) USING fastckpt;
CREATE TABLE con_b (id int PRIMARY KEY, a_id int REFERENCES con_a ON DELETE CASCADE) USING fastckpt;
CREATE TABLE con_c (id int PRIMARY KEY, b_id int REFERENCES con_b ON DELETE CASCADE ON UPDATE CASCADE) USING fastckpt;
INSERT INTO con_a VALUES (1), (2);
INSERT INTO con_b VALUES (10, 1), (11, 1), (20, 2);
INSERT INTO con_c VALUES (100, 10), (101, 11), (200, 20);
UPDATE con_b SET id = 12 WHERE id = 11;
SELECT * FROM con_c ORDER BY id;
DELETE FROM con_a WHERE id = 1;
SELECT * FROM con_b ORDER BY id;
SELECT * FROM con_c ORDER BY id;
-- a rolled-back cascade leaves everything as it was
BEGIN;
DELETE FROM con_a;
SELECT count(*) FROM con_c;
ROLLBACK;
SELECT count(*) FROM con_a;
SELECT count(*) FROM con_b;
SELECT count(*) FROM con_c;
-- a self-referencing table
CREATE TABLE con_tree (id int PRIMARY KEY, parent int REFERENCES con_tree ON DELETE CASCADE) USING fastckpt;
INSERT INTO con_tree VALUES (1, NULL), (2, 1), (3, 2), (4, 1);
DELETE FROM con_tree WHERE id = 2;
SELECT * FROM con_tree ORDER BY id;
-- deferred foreign key: the parent may arrive later in the transaction
CREATE TABLE con_late (id int REFERENCES con_a DEFERRABLE INITIALLY DEFERRED) USING fastckpt;
BEGIN;
INSERT INTO con_late VALUES (3);
INSERT INTO con_a VALUES (3);
COMMIT;
BEGIN;
INSERT INTO con_late VALUES (4);
COMMIT;
SELECT * FROM con_late;
-- an orphan updated after its insert, key unchanged, still fails at commit
CREATE TABLE con_late_note (pid int REFERENCES con_a DEFERRABLE INITIALLY DEFERRED,
	note text) USING fastckpt;
BEGIN;
INSERT INTO con_late_note VALUES (6, 'a');
UPDATE con_late_note SET note = 'b';
COMMIT;
SELECT count(*) FROM con_late_note;
-- adding a foreign key checks the existing rows
CREATE TABLE con_orphans (pid int) USING fastckpt;
INSERT INTO con_orphans VALUES (1), (1), (77);
ALTER TABLE con_orphans ADD FOREIGN KEY (pid) REFERENCES con_parent (id);
DELETE FROM con_orphans WHERE pid = 77;
ALTER TABLE con_orphans ADD FOREIGN KEY (pid) REFERENCES con_parent (id);

-- foreign keys and logged tables: PostgreSQL lets an unlogged table refer
-- to a permanent one, but not the other way round, and fastckpt tables are
-- unlogged to PostgreSQL
CREATE TABLE con_heap (id int PRIMARY KEY, fc_id int) USING heap;
INSERT INTO con_heap VALUES (1, 1), (2, 2);
CREATE TABLE con_heap_child (fc_id int REFERENCES con_parent (id)) USING heap;
ALTER TABLE con_heap ADD FOREIGN KEY (fc_id) REFERENCES con_parent (id);
CREATE TABLE con_fc_to_heap (heap_id int REFERENCES con_heap (id)) USING fastckpt;
INSERT INTO con_fc_to_heap VALUES (1);
INSERT INTO con_fc_to_heap VALUES (3);
DELETE FROM con_heap WHERE id = 1;
-- a heap table referenced by a logged table cannot become fastckpt
CREATE TABLE con_heap_ref (heap_id int REFERENCES con_heap (id)) USING heap;
ALTER TABLE con_heap SET ACCESS METHOD fastckpt;
DROP TABLE con_heap_ref;
DROP TABLE con_fc_to_heap;

-- temporary tables cannot refer to fastckpt tables (PostgreSQL's rule)
CREATE TEMP TABLE con_temp (pid int REFERENCES con_parent (id));

DROP TABLE con_parent, con_child, con_deferred, con_a, con_b, con_c, con_tree,
	con_late, con_late_note, con_orphans, con_heap;
