-- The README's memory sizing formula, computed here from the catalogs and
-- compared with what fastckpt_stat_tables reports.
CREATE FUNCTION readme_row_image_bytes(rel regclass, default_row_size int) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
	natts int;
	size int;
	att record;
	maxlen int := pg_encoding_max_length(pg_char_to_encoding(getdatabaseencoding()));
	align int;
	width int;
	unbounded bool := false;
BEGIN
	SELECT max(attnum) INTO natts FROM pg_attribute WHERE attrelid = rel AND attnum > 0;
	size := ((23 + (natts + 7) / 8) + 7) / 8 * 8;
	FOR att IN SELECT a.*, t.typname FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
				WHERE a.attrelid = rel AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum
	LOOP
		align := CASE att.attalign WHEN 'c' THEN 1 WHEN 's' THEN 2 WHEN 'i' THEN 4 ELSE 8 END;
		IF att.attlen > 0 THEN
			width := att.attlen;
		ELSIF att.typname IN ('bpchar', 'varchar') AND att.atttypmod >= 0 THEN
			width := (att.atttypmod - 4) * maxlen + 4;
		ELSIF att.typname = 'numeric' AND att.atttypmod >= 0 THEN
			width := 8 + 2 * ((((att.atttypmod - 4) >> 16) + 3) / 4 + 2);
		ELSE
			unbounded := true;
			size := size + 16;
			CONTINUE;
		END IF;
		size := (size + align - 1) / align * align + width;
	END LOOP;
	size := (size + 7) / 8 * 8;
	IF unbounded THEN
		size := greatest(size, default_row_size);
	END IF;
	RETURN size;
END $$;

CREATE TABLE mf_accounts (aid int, bid int, abalance int, filler char(84)) USING fastckpt;
CREATE TABLE mf_mixed (id bigint, flag bool, code varchar(10), amount numeric(12,2),
					   ts timestamptz, small smallint) USING fastckpt;
CREATE TABLE mf_text (id int, body text, tags int[]) USING fastckpt;
SET pg_fastckpt.default_row_size = 1000;
CREATE TABLE mf_text_big (id int, body text) USING fastckpt;
RESET pg_fastckpt.default_row_size;

-- fill whole pages so that the per-row figure is exact
INSERT INTO mf_accounts SELECT g, 1, 0, 'x' FROM generate_series(1, 54 * 20) g;

WITH expected AS (
	SELECT relation, readme_row_image_bytes(relation,
			CASE WHEN relation = 'mf_text_big'::regclass THEN 1000 ELSE 256 END) AS image
	  FROM fastckpt_stat_tables
	 WHERE relation::text LIKE 'mf\_%')
SELECT t.relation,
	   t.row_image_bytes = e.image AS image_matches,
	   t.slot_bytes = 64 + 3 * e.image AS slot_matches
  FROM fastckpt_stat_tables t JOIN expected e USING (relation)
 ORDER BY t.relation::text;

-- memory per row = 65536 / floor(65536 / slot_bytes), once pages are full
-- (minus the table's directory page: slot page pointers and their
-- Ping-Pong mark summaries)
SELECT relation, n_rows,
	   (memory_bytes - undo_bytes - 65536)::numeric / n_rows
		 = 65536.0 / floor(65536.0 / slot_bytes) AS per_row_matches
  FROM fastckpt_stat_tables WHERE relation = 'mf_accounts'::regclass;

DROP TABLE mf_accounts, mf_mixed, mf_text, mf_text_big;
DROP FUNCTION readme_row_image_bytes(regclass, int);
