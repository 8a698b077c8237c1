--
-- row_versions: what triggers, cursors and system columns see of the rows a
-- transaction writes.  fastckpt updates rows in place, so a TID names a row
-- rather than one version; where PostgreSQL reads a version back by TID
-- (transition tables, AFTER ROW triggers, WHERE CURRENT OF) it must still
-- get the one heap would give.  The same cases run on heap first, then on
-- fastckpt: the two halves of the output must agree.
--
CREATE TABLE rv_log (n serial, msg text) USING heap;	-- what the triggers saw
\getenv abs_srcdir PG_ABS_SRCDIR
\set cases :abs_srcdir '/sql/include/row_versions_cases.sql'
SET default_table_access_method = heap;
\i :cases
SET default_table_access_method = fastckpt;
\i :cases
RESET default_table_access_method;
DROP TABLE rv_log;
