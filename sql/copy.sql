--
-- copy: COPY FROM STDIN (text, csv, binary), COPY TO STDOUT, many-row COPY
-- (batched multi-inserts), failures half-way, triggers, FREEZE, partitions.
--
CREATE TABLE cp (
	id int PRIMARY KEY,
	name text,
	amount numeric(10,2),
	tags text[],
	created date,
	note text
) USING fastckpt WITH (autovacuum_enabled = off);

COPY cp FROM STDIN;
1	alpha	10.50	{a,b}	2024-01-01	\N
2	beta	0.00	{}	2024-01-02	tab\there
3	gamma	-3.25	\N	\N	back\\slash
\.
COPY cp (id, name, note) FROM STDIN WITH (FORMAT csv, HEADER true);
id,name,note
4,"delta, with comma",
5,"quoted ""name""",""
6,,"multi
line"
\.
SELECT * FROM cp ORDER BY id;
SELECT id, name IS NULL AS name_null, note IS NULL AS note_null, note = '' AS note_empty FROM cp WHERE id >= 4 ORDER BY id;

-- COPY TO STDOUT
COPY cp TO STDOUT;
COPY cp (id, name) TO STDOUT WITH (FORMAT csv, HEADER true, FORCE_QUOTE *);
COPY (SELECT id, amount, tags FROM cp WHERE amount IS NOT NULL ORDER BY id DESC) TO STDOUT WITH (FORMAT csv);
\copy (SELECT id, upper(name) FROM cp WHERE id < 3 ORDER BY id) TO STDOUT

-- a COPY that fails half-way leaves none of its rows behind
COPY cp (id, name) FROM STDIN;
100	ok
101	ok
1	duplicate key
\.
COPY cp (id, amount) FROM STDIN;
200	1.5
201	not a number
\.
COPY cp (id, amount) FROM STDIN;
202	123456789012
\.
SELECT count(*), max(id) FROM cp;

-- many rows, through a file: COPY FROM inserts them in batches
\getenv abs_builddir PG_ABS_BUILDDIR
\set copy_file :abs_builddir '/results/copy_fastckpt.data'
COPY (SELECT g, 'name ' || g, g / 100.0, ARRAY['t' || g % 3], date '2024-01-01' + g % 365,
			 repeat('n', g % 50)
		FROM generate_series(1000, 5999) g) TO :'copy_file';
COPY cp FROM :'copy_file';
SELECT count(*), sum(id), sum(amount), count(DISTINCT tags), min(created), max(created),
	   sum(length(note))
  FROM cp WHERE id >= 1000;
SET enable_seqscan = off;
SELECT * FROM cp WHERE id = 4321;
RESET enable_seqscan;
-- a many-row COPY failing at its very last row leaves nothing behind
COPY (SELECT g, 'late ' || g, NULL, NULL, NULL, NULL FROM generate_series(6000, 8999) g
	  UNION ALL
	  SELECT 1, 'duplicate', NULL, NULL, NULL, NULL) TO :'copy_file';
COPY cp FROM :'copy_file';
SELECT count(*) FROM cp WHERE id >= 6000;
SELECT count(*) FROM cp;
SELECT n_rows FROM fc_rows('cp');
-- ... nor when rolled back after success
BEGIN;
COPY cp (id, name) FROM STDIN;
9000	rolled back
9001	rolled back
\.
SELECT count(*) FROM cp WHERE id >= 9000;
ROLLBACK;
SELECT count(*) FROM cp WHERE id >= 9000;

-- binary round trip into a second table
CREATE TABLE cp2 (LIKE cp) USING fastckpt;
COPY cp TO :'copy_file' WITH (FORMAT binary);
COPY cp2 FROM :'copy_file' WITH (FORMAT binary);
SELECT count(*) FROM cp2;
SELECT count(*) FROM (SELECT * FROM cp EXCEPT SELECT * FROM cp2) d;
SELECT count(*) FROM (SELECT * FROM cp2 EXCEPT SELECT * FROM cp) d;

-- COPY ... WHERE, and a BEFORE ROW trigger that changes the rows
CREATE TABLE cp3 (id int, name text) USING fastckpt;
CREATE FUNCTION cp3_upper() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	NEW.name := upper(NEW.name);
	IF NEW.id = 13 THEN
		RETURN NULL;
	END IF;
	RETURN NEW;
END;
$$;
CREATE TRIGGER cp3_upper BEFORE INSERT ON cp3 FOR EACH ROW EXECUTE FUNCTION cp3_upper();
COPY cp3 FROM STDIN WHERE id > 10;
10	skipped by where
11	kept
12	kept too
13	skipped by trigger
\.
SELECT * FROM cp3 ORDER BY id;
-- an AFTER ROW trigger sees the inserted rows
CREATE TABLE cp3_log (id int, name text) USING fastckpt;
CREATE FUNCTION cp3_log() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO cp3_log SELECT id, name FROM cp3 WHERE id = NEW.id;
	RETURN NULL;
END;
$$;
CREATE TRIGGER cp3_log AFTER INSERT ON cp3 FOR EACH ROW EXECUTE FUNCTION cp3_log();
COPY cp3 FROM STDIN;
20	twenty
21	twenty-one
\.
SELECT * FROM cp3_log ORDER BY id;

-- COPY FREEZE needs the table created or truncated in the same transaction
BEGIN;
CREATE TABLE cp4 (a int, b text) USING fastckpt;
COPY cp4 FROM STDIN WITH (FREEZE);
1	frozen
2	frozen
\.
COMMIT;
SELECT * FROM cp4 ORDER BY a;
BEGIN;
TRUNCATE cp4;
COPY cp4 FROM STDIN WITH (FREEZE);
3	frozen after truncate
\.
COMMIT;
SELECT * FROM cp4 ORDER BY a;
COPY cp4 FROM STDIN WITH (FREEZE);
4	not allowed
\.

-- COPY into a partitioned table whose partitions are fastckpt tables
CREATE TABLE cp_part (k int, v text) PARTITION BY LIST (k);
CREATE TABLE cp_part_a PARTITION OF cp_part FOR VALUES IN (1, 2) USING fastckpt;
CREATE TABLE cp_part_b PARTITION OF cp_part FOR VALUES IN (3) USING fastckpt;
COPY cp_part FROM STDIN;
1	one
3	three
2	two
3	three again
\.
SELECT tableoid::regclass, * FROM cp_part ORDER BY k, v;
COPY cp_part FROM STDIN;
1	fine
4	no partition
\.
SELECT count(*) FROM cp_part;

DROP TABLE cp, cp2, cp3, cp3_log, cp4, cp_part;
DROP FUNCTION cp3_upper();
DROP FUNCTION cp3_log();
