-- pg_fastckpt.bytes_per_char: char(n) and varchar(n) sized for fewer bytes
-- per character than the encoding's longest, in a UTF8 database (the
-- test database's encoding depends on the machine's locale)
SELECT current_database() AS regress_db \gset
CREATE DATABASE fc_bytes_per_char ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C'
	TEMPLATE template0;
\c fc_bytes_per_char
CREATE EXTENSION pg_fastckpt;
SHOW pg_fastckpt.bytes_per_char;

CREATE TABLE wide (id int, code char(10), name varchar(20)) USING fastckpt;
SET pg_fastckpt.bytes_per_char = 1;
CREATE TABLE narrow (id int, code char(10), name varchar(20)) USING fastckpt;
-- other bounded types keep their own bound
CREATE TABLE other (id int, bits bit(64), amount numeric(10,2)) USING fastckpt;
SET pg_fastckpt.bytes_per_char = 2;
CREATE TABLE two (id int, code char(10), name varchar(20)) USING fastckpt;
RESET pg_fastckpt.bytes_per_char;
CREATE TABLE other_default (id int, bits bit(64), amount numeric(10,2)) USING fastckpt;

-- wide: 24 + 4 + (4 + 10 x 4) -> 72, + (4 + 20 x 4) -> 156 -> 160
-- narrow: 24 + 4 + 14 -> 42 -> 44 (int alignment), + 24 -> 68 -> 72
-- two: 24 + 4 + 24 -> 52, + 44 -> 96
SELECT relation, row_image_bytes, slot_bytes FROM fastckpt_stat_tables
 ORDER BY relation::text;
SELECT (SELECT row_image_bytes FROM fastckpt_stat_tables WHERE relation = 'other'::regclass) =
	   (SELECT row_image_bytes FROM fastckpt_stat_tables WHERE relation = 'other_default'::regclass)
	   AS other_types_unchanged;

-- two-byte characters, not compressible: 10 Greek and 20 Cyrillic letters
SELECT string_agg(chr(945 + i), '') AS greek FROM generate_series(0, 9) i \gset
SELECT string_agg(chr(1072 + i), '') AS cyrillic FROM generate_series(0, 19) i \gset
SELECT octet_length(:'greek') AS greek_bytes, octet_length(:'cyrillic') AS cyrillic_bytes;

-- ASCII fits every table; the two-byte row fits wide and two, not narrow
INSERT INTO narrow VALUES (1, 'abcdefghij', repeat('x', 20));
INSERT INTO wide VALUES (2, :'greek', :'cyrillic');
INSERT INTO two VALUES (2, :'greek', :'cyrillic');
INSERT INTO narrow VALUES (2, :'greek', :'cyrillic');
UPDATE narrow SET name = :'cyrillic' WHERE id = 1;
SELECT id, length(code), octet_length(name) FROM narrow ORDER BY id;

-- the table keeps its sizing as a storage parameter; the way out the
-- hint names: reset it, which grows the slots at once
SELECT reloptions FROM pg_class WHERE relname = 'narrow';
ALTER TABLE narrow RESET (fastckpt_bytes_per_char);
SELECT reloptions FROM pg_class WHERE relname = 'narrow';
SELECT row_image_bytes FROM fastckpt_stat_tables WHERE relation = 'narrow'::regclass;
INSERT INTO narrow VALUES (2, :'greek', :'cyrillic');
SELECT id, length(code), octet_length(code), length(name), octet_length(name)
  FROM narrow ORDER BY id;

-- out of range
SET pg_fastckpt.bytes_per_char = 5;

DROP TABLE wide, narrow, two, other, other_default;
\c :regress_db
DROP DATABASE fc_bytes_per_char;
