--
-- types: values of many types stored in and read back from fastckpt
-- tables, NULLs, and values bigger than a slot (compressed, or refused).
--

-- numbers
CREATE TABLE ty_num (
	id int,
	a numeric,
	b numeric(10,3),
	c numeric(5,-2),
	d double precision,
	e real,
	f bigint,
	g smallint
) USING fastckpt;
INSERT INTO ty_num VALUES
	(1, 0, 0, 0, 0, 0, 0, 0),
	(2, -1.5, 1234567.8915, 9999949, -1.5e-300, 3.25, 9223372036854775807, -32768),
	(3, 123456789012345678901234567890.123456789012345678901234567890, -9999999.999, -12345, 'Infinity', '-Infinity', -9223372036854775808, 32767),
	(4, 'NaN', NULL, NULL, 'NaN', 'NaN', NULL, NULL),
	(5, 'Infinity', 0.0005, 50, 1e308, 1e-38, 42, 42),
	(6, '-Infinity', 0.0004, 49, 0.1, 0.1, -1, -1),
	(7, 1e-1000, 1e6, -99999 * 100, 2^52, 2^23, 2^62, 2^14),
	(8, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
SELECT * FROM ty_num ORDER BY id;
SELECT sum(b), avg(b), min(a), max(a), sum(f::numeric), sum(g) FROM ty_num;
SELECT id FROM ty_num WHERE a > 1e29 ORDER BY id;
INSERT INTO ty_num (id, b) VALUES (9, 12345678.1);
INSERT INTO ty_num (id, c) VALUES (9, 99999999);
UPDATE ty_num SET a = a * 2, b = b / 3 WHERE id IN (2, 3) RETURNING id, a, b;
-- the largest values of bounded numeric columns fit their exact-size slots
CREATE TABLE ty_num_bounded (x numeric(1000, 500), y numeric(38, 0), z numeric(4, 4)) USING fastckpt;
INSERT INTO ty_num_bounded VALUES
	(('-' || repeat('9', 500) || '.' || repeat('9', 500))::numeric,
	 ('-' || repeat('9', 38))::numeric, -0.9999),
	((repeat('1', 500) || '.' || repeat('7', 500))::numeric, 1, 0.0001);
SELECT length(x::text), x = trunc(x), y, z FROM ty_num_bounded ORDER BY y;

-- character types
CREATE TABLE ty_text (
	id int,
	t text,
	vc varchar(10),
	ch char(5),
	nm name,
	bt bytea,
	"char" "char"
) USING fastckpt;
INSERT INTO ty_text VALUES
	(1, 'hello', 'world', 'ab', 'a_name', '\x00ff10', 'x'),
	(2, '', '', '', '', '', ''),
	(3, 'it''s "quoted"' || E'\n' || 'and tab:' || E'\t', 'ten chars!', 'abcde', 'n', 'bytes'::bytea, 'y'),
	(4, NULL, NULL, NULL, NULL, NULL, NULL),
	(5, repeat('long ', 20), 'short', 'a  ', 'trailing  ', decode('deadbeef', 'hex'), 'z');
SELECT id, t, vc, ch, length(ch) AS ch_len, ch = 'ab' AS ch_eq, nm, bt, "char" FROM ty_text ORDER BY id;
INSERT INTO ty_text (id, vc) VALUES (6, 'eleven char');
INSERT INTO ty_text (id, ch) VALUES (6, 'toolong');
INSERT INTO ty_text (id, vc, ch) VALUES (6, 'trimmed   ', 'abc  ');
SELECT id, vc, length(vc), ch, octet_length(ch) FROM ty_text WHERE id = 6;
UPDATE ty_text SET t = t || '!' WHERE t IS NOT NULL RETURNING id, t;
SELECT id FROM ty_text WHERE t LIKE 'long%' OR bt = '\xdeadbeef' ORDER BY id;

-- json and jsonb
CREATE TABLE ty_json (id int, j jsonb, js json) USING fastckpt;
INSERT INTO ty_json VALUES
	(1, '{"a": 1, "b": [1, 2, {"c": null}], "d": {"e": "f"}}', '{"a":  1, "a": 2}'),
	(2, '[1, "two", 3.0, true, null]', '[]'),
	(3, '"just a string"', '"x"'),
	(4, 'null', 'null'),
	(5, NULL, NULL),
	(6, '{"nested": {"deeper": {"deepest": [1, [2, [3]]]}}}', '{}');
SELECT * FROM ty_json ORDER BY id;
SELECT id, j -> 'a' AS a, j #>> '{d,e}' AS de, jsonb_typeof(j) FROM ty_json ORDER BY id;
SELECT id FROM ty_json WHERE j @> '{"a": 1}';
SELECT id, jsonb_path_query_array(j, '$.nested.**{1 to last}') FROM ty_json WHERE id = 6;
UPDATE ty_json SET j = jsonb_set(j, '{b,2,c}', '"filled"') WHERE id = 1 RETURNING j;
UPDATE ty_json SET j = j || '{"added": [true]}' WHERE jsonb_typeof(j) = 'object';
SELECT id, j FROM ty_json WHERE j ? 'added' ORDER BY id;
SELECT id, js ->> 'a' FROM ty_json WHERE id = 1;
INSERT INTO ty_json (id, j) VALUES (7, '{"bad": }');

-- arrays
CREATE TABLE ty_arr (id int, ia int[], ta text[], ma int[][], na numeric(6,2)[]) USING fastckpt;
INSERT INTO ty_arr VALUES
	(1, '{1,2,3}', '{a,b,"c d"}', '{{1,2},{3,4}}', '{1.5,2.25}'),
	(2, '{}', '{}', '{}', '{}'),
	(3, '{NULL,1,NULL}', '{NULL,"NULL",""}', '{{NULL,NULL}}', '{NULL}'),
	(4, NULL, NULL, NULL, NULL),
	(5, '[0:2]={7,8,9}', ARRAY['x'], ARRAY[[5,6],[7,8],[9,10]], ARRAY[9999.99]);
SELECT * FROM ty_arr ORDER BY id;
SELECT id, array_length(ia, 1), cardinality(ma), ia[1], ta[2], ma[2][1] FROM ty_arr ORDER BY id;
UPDATE ty_arr SET ia[2] = 20, ta = ta || 'appended'::text WHERE id = 1;
UPDATE ty_arr SET ia = array_append(ia, 4) WHERE id = 2;
SELECT id, ia, ta FROM ty_arr WHERE id IN (1, 2) ORDER BY id;
SELECT id, unnest(ia) FROM ty_arr WHERE id = 1;
SELECT id FROM ty_arr WHERE ia && '{9,20}' ORDER BY id;
INSERT INTO ty_arr (id, na) VALUES (6, '{123456.7}');

-- dates and times (pg_regress runs with PST8PDT and DateStyle Postgres, MDY)
CREATE TABLE ty_time (
	id int,
	ts timestamp,
	tstz timestamptz,
	d date,
	t time,
	ttz timetz,
	iv interval,
	ts3 timestamp(3)
) USING fastckpt;
INSERT INTO ty_time VALUES
	(1, '2024-02-29 12:34:56.789012', '2024-02-29 12:34:56.789012+00', '2024-02-29', '23:59:59.999999', '12:00+05', '1 year 2 months 3 days 04:05:06.5', '2024-02-29 12:34:56.789512'),
	(2, 'infinity', '-infinity', 'infinity', '00:00', '00:00-08', '-1 day', 'epoch'),
	(3, '4713-01-01 BC', '1999-12-31 23:59:59 PST', '0001-01-01', '24:00', '23:59:59.99+14', '178000000 years', '294276-12-31 23:59:59.999'),
	(4, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
SELECT * FROM ty_time ORDER BY id;
SELECT id, ts + iv AS later, tstz AT TIME ZONE 'UTC' AS utc, d - date '2000-01-01' AS days,
	   extract(year FROM ts) AS year
  FROM ty_time WHERE id = 1;
UPDATE ty_time SET tstz = tstz + interval '1 hour', iv = iv * 2 WHERE id = 1 RETURNING tstz, iv;
SELECT id FROM ty_time WHERE ts BETWEEN '2024-01-01' AND '2024-12-31';

-- more types: boolean, uuid, network, enum, composite, domain, range,
-- geometric, bit strings, text search, oid types, money-free numbers
CREATE TYPE ty_mood AS ENUM ('sad', 'ok', 'happy');
CREATE TYPE ty_pair AS (x int, y text);
CREATE DOMAIN ty_posint AS int CHECK (VALUE > 0);
CREATE TABLE ty_misc (
	id int,
	b boolean,
	u uuid,
	ip inet,
	net cidr,
	mac macaddr,
	mood ty_mood,
	pair ty_pair,
	pos ty_posint,
	r int4range,
	tr tstzrange,
	p point,
	bx box,
	bits bit(10),
	vbits varbit(20),
	tsv tsvector,
	rc regclass,
	o oid
) USING fastckpt;
INSERT INTO ty_misc VALUES
	(1, true, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '192.168.1.5/24', '10.0.0.0/8', '08:00:2b:01:02:03',
	 'happy', ROW(1, 'one'), 5, '[1,10)', '[2024-01-01,2024-02-01)', '(1.5,2.5)', '((0,0),(1,1))',
	 B'1010101010', B'111', 'the quick brown fox', 'pg_class', 1259),
	(2, false, '00000000-0000-0000-0000-000000000000', '::1', '2001:db8::/32', 'ff:ff:ff:ff:ff:ff',
	 'sad', ROW(NULL, NULL), 1, 'empty', '(,)', '(0,0)', '((1,2),(3,4))',
	 B'0000000000', B'', '', 'pg_am', 0),
	(3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
SELECT * FROM ty_misc ORDER BY id;
SELECT id, mood > 'ok' AS cheerful, (pair).y, r @> 4 AS has4, ip << '192.168.1.0/24'::inet AS in_net,
	   tsv @@ to_tsquery('fox') AS fox, bits & B'1111100000' AS masked
  FROM ty_misc ORDER BY id;
INSERT INTO ty_misc (id, pos) VALUES (4, 0);
INSERT INTO ty_misc (id, mood) VALUES (4, 'angry');
UPDATE ty_misc SET pair.x = 99, mood = 'ok' WHERE id = 2 RETURNING pair, mood;

-- NULLs: rows of NULLs, and a null bitmap spanning many columns
CREATE TABLE ty_nulls (
	c1 int, c2 text, c3 int, c4 text, c5 int, c6 text, c7 int, c8 text,
	c9 int, c10 text, c11 int, c12 text, c13 int, c14 text, c15 int, c16 text, c17 int
) USING fastckpt;
INSERT INTO ty_nulls VALUES
	(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
	(1, NULL, 3, NULL, 5, NULL, 7, NULL, 9, NULL, 11, NULL, 13, NULL, 15, NULL, 17),
	(NULL, 'b', NULL, 'd', NULL, 'f', NULL, 'h', NULL, 'j', NULL, 'l', NULL, 'n', NULL, 'p', NULL),
	(1, 'b', 3, 'd', 5, 'f', 7, 'h', 9, 'j', 11, 'l', 13, 'n', 15, 'p', 17);
SELECT * FROM ty_nulls ORDER BY c1 NULLS FIRST, c2 NULLS FIRST;
SELECT count(*), count(c1), count(c2), count(c17), count(*) FILTER (WHERE c9 IS NULL) FROM ty_nulls;
-- NULL to value and back, in place
UPDATE ty_nulls SET c1 = 100, c16 = 'set' WHERE c1 IS NULL AND c2 IS NULL;
UPDATE ty_nulls SET c17 = NULL WHERE c1 = 1 AND c2 = 'b';
SELECT * FROM ty_nulls ORDER BY c1 NULLS FIRST, c2 NULLS FIRST;

--
-- Values bigger than a slot.  Columns without a length limit give slots of
-- pg_fastckpt.default_row_size bytes; a bigger row is compressed, and
-- refused (with the sizes and what to do) if it still does not fit.
--
CREATE TABLE ty_big (id int, t text, b bytea) USING fastckpt;
-- compressible: stored compressed, read back exactly
INSERT INTO ty_big VALUES (1, repeat('abc', 2000), NULL);
INSERT INTO ty_big VALUES (2, NULL, convert_to(repeat('0123456789', 500), 'UTF8'));
INSERT INTO ty_big VALUES (3, repeat('x', 3000), convert_to(repeat('y', 3000), 'UTF8'));
SELECT id, length(t), md5(t), length(b), md5(b) FROM ty_big ORDER BY id;
SELECT t = repeat('abc', 2000) AS same_text FROM ty_big WHERE id = 1;
SELECT id FROM ty_big WHERE t LIKE '%cab%' ORDER BY id;
-- a highly compressible value can still be too big once compressed
INSERT INTO ty_big VALUES (5, repeat('abc', 100000), NULL);
-- incompressible and too big: refused, nothing stored
INSERT INTO ty_big
	SELECT 4, string_agg(md5(g::text), ''), NULL FROM generate_series(1, 20) g;
SELECT count(*) FROM ty_big;
-- an update that makes the row too big is refused; the row keeps its value
UPDATE ty_big SET t = (SELECT string_agg(md5(g::text), '') FROM generate_series(1, 20) g)
 WHERE id = 1;
SELECT id, length(t) FROM ty_big WHERE id = 1;
-- values stored out of line (TOAST) in a heap table are brought in
CREATE TABLE ty_heap_src (id int, t text) USING heap;
INSERT INTO ty_heap_src VALUES (1, repeat('toast me ', 500));
INSERT INTO ty_heap_src SELECT 2, string_agg(md5(g::text), '') FROM generate_series(1, 200) g;
ALTER TABLE ty_heap_src ALTER COLUMN t SET STORAGE EXTERNAL;
INSERT INTO ty_heap_src SELECT 3, repeat('external ', 1000);
INSERT INTO ty_big (id, t) SELECT 10 + id, t FROM ty_heap_src WHERE id IN (1, 3);
SELECT b.id, length(b.t), b.t = h.t AS same FROM ty_big b JOIN ty_heap_src h ON b.id = h.id + 10 ORDER BY 1;
INSERT INTO ty_big (id, t) SELECT 12, t FROM ty_heap_src WHERE id = 2;
-- columns with storage PLAIN are never compressed
CREATE TABLE ty_plain (id int, t text) USING fastckpt;
ALTER TABLE ty_plain ALTER COLUMN t SET STORAGE PLAIN;
INSERT INTO ty_plain VALUES (1, repeat('a', 1000));
INSERT INTO ty_plain VALUES (2, repeat('a', 100));
SELECT id, length(t) FROM ty_plain;
-- a column can choose its compression method
CREATE TABLE ty_compression (id int, t text COMPRESSION pglz) USING fastckpt;
INSERT INTO ty_compression VALUES (1, repeat('pglz', 1000));
SELECT id, length(t), pg_column_compression(t) FROM ty_compression;
-- a larger default_row_size, read when the table's storage is created
SET pg_fastckpt.default_row_size = '8kB';
CREATE TABLE ty_big8k (id int, t text) USING fastckpt;
RESET pg_fastckpt.default_row_size;
INSERT INTO ty_big8k SELECT 1, string_agg(md5(g::text), '') FROM generate_series(1, 200) g;
SELECT id, length(t) FROM ty_big8k;
-- following the error's hint: give the table more room (a rewrite, at
-- once); a session's setting does not resize a table that exists
SET pg_fastckpt.default_row_size = '8kB';
VACUUM FULL ty_big;
RESET pg_fastckpt.default_row_size;
SELECT row_image_bytes FROM fastckpt_stat_tables WHERE relation = 'ty_big'::regclass;
ALTER TABLE ty_big SET (fastckpt_row_size = 8192);
SELECT row_image_bytes FROM fastckpt_stat_tables WHERE relation = 'ty_big'::regclass;
-- bad values name the parameter and its range
ALTER TABLE ty_big SET (fastckpt_row_size = 'abc');
ALTER TABLE ty_big SET (fastckpt_row_size = 16);
ALTER TABLE ty_big SET (fastckpt_bytes_per_char = '1.5');
-- a row larger than any slot: the hint does not send to a larger one
INSERT INTO ty_big SELECT 20, NULL, decode(string_agg(md5(g::text), ''), 'hex') FROM generate_series(1, 2000) g;
INSERT INTO ty_big
	SELECT 4, string_agg(md5(g::text), ''), NULL FROM generate_series(1, 20) g;
SELECT id, length(t), length(b) FROM ty_big ORDER BY id;
-- bounded columns size the slot themselves: varchar(3000) needs no setting
CREATE TABLE ty_bounded (id int, v varchar(3000), c char(100)) USING fastckpt;
INSERT INTO ty_bounded SELECT 1, string_agg(md5(g::text), ''), 'c' FROM generate_series(1, 90) g;
SELECT id, length(v), length(c), octet_length(c) FROM ty_bounded;
-- the setting's range
SET pg_fastckpt.default_row_size = 16;
SET pg_fastckpt.default_row_size = '1MB';

DROP TABLE ty_num, ty_num_bounded, ty_text, ty_json, ty_arr, ty_time, ty_misc, ty_nulls,
	ty_big, ty_heap_src, ty_plain, ty_compression, ty_big8k, ty_bounded;
DROP TYPE ty_mood, ty_pair;
DROP DOMAIN ty_posint;
