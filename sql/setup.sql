--
-- setup: install pg_fastckpt for the whole pg_regress suite.
--
-- The other suites (ddl, dml, ..., stats) run after this one, in order, in
-- the same database, and use the helper functions defined here.
--
CREATE EXTENSION pg_fastckpt;

SELECT extname, extversion FROM pg_extension WHERE extname = 'pg_fastckpt';
SELECT amname, amtype FROM pg_am WHERE amname = 'fastckpt';

-- the extension is loaded through shared_preload_libraries
SELECT current_setting('shared_preload_libraries') ~ 'pg_fastckpt' AS preloaded;
SHOW pg_fastckpt.default_row_size;

-- the SQL objects the suites rely on
SELECT to_regclass('fastckpt_stat_memory') IS NOT NULL AS stat_memory,
	   to_regclass('fastckpt_stat_tables') IS NOT NULL AS stat_tables,
	   to_regclass('fastckpt_stat_recovery') IS NOT NULL AS stat_recovery;

--
-- Helpers shared by the suites.  They print booleans and counts, never byte
-- counts or OIDs, so the expected output does not depend on the machine.
--

-- Does the current storage of this table exist in the fastckpt store?
CREATE FUNCTION fc_has_storage(rel regclass) RETURNS boolean
LANGUAGE sql AS $$
	SELECT EXISTS (SELECT 1 FROM fastckpt_stat_tables t
					WHERE t.database = current_database() AND t.relation = rel)
$$;

-- Does a storage with this relfilenode exist (e.g. after DROP, TRUNCATE)?
CREATE FUNCTION fc_storage_exists(node oid) RETURNS boolean
LANGUAGE sql AS $$
	SELECT EXISTS (SELECT 1 FROM fastckpt_stat_tables t
					WHERE t.database = current_database() AND t.relfilenode = node)
$$;

-- Live and dead row counts of a table, as the store sees them.
CREATE FUNCTION fc_rows(rel regclass, OUT n_rows bigint, OUT n_dead_rows bigint)
LANGUAGE sql AS $$
	SELECT t.n_rows, t.n_dead_rows FROM fastckpt_stat_tables t
	 WHERE t.database = current_database() AND t.relation = rel
$$;

-- Arena bytes in use right now.
CREATE FUNCTION fc_used_bytes() RETURNS bigint
LANGUAGE sql AS $$ SELECT used_bytes FROM fastckpt_stat_memory $$;

SELECT fc_has_storage('pg_class'), fc_storage_exists(0);
