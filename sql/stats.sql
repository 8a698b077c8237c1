--
-- stats: the monitoring views fastckpt_stat_memory, fastckpt_stat_tables,
-- fastckpt_stat_recovery and fastckpt_stat_log: their columns, what they
-- report, and who may read them (pg_monitor, not ordinary roles).
--
\d fastckpt_stat_memory
\d fastckpt_stat_tables
\d fastckpt_stat_recovery
\d fastckpt_stat_log
\d fastckpt_stat_checkpointer

-- the arena: one row, consistent figures
SELECT count(*) FROM fastckpt_stat_memory;
SELECT limit_bytes = pg_size_bytes(current_setting('pg_fastckpt.memory_limit')) AS limit_is_setting,
	   used_bytes + free_bytes = limit_bytes AS used_plus_free_is_limit,
	   table_bytes + undo_bytes + directory_bytes <= used_bytes AS parts_within_used,
	   used_bytes % page_bytes = 0 AS whole_pages,
	   page_bytes > 0 AS has_page_size
  FROM fastckpt_stat_memory;

CREATE TABLE st_a (id int PRIMARY KEY, v text, n int) USING fastckpt WITH (autovacuum_enabled = off);
CREATE TABLE st_b (x int) USING fastckpt WITH (autovacuum_enabled = off);
SELECT tables_in_database = (SELECT count(*) FROM pg_class c JOIN pg_am a ON a.oid = c.relam
							  WHERE a.amname = 'fastckpt') AS counts_tables,
	   tables_in_database
  FROM fastckpt_stat_memory;
SELECT fc_used_bytes() AS used_before \gset
INSERT INTO st_a SELECT g, 'v' || g, 0 FROM generate_series(1, 2000) g;
SELECT used_bytes > :used_before AS grew, table_bytes > 0 AS has_table_bytes FROM fastckpt_stat_memory;

-- one row per table storage
SELECT database = current_database() AS this_db, relation, n_rows, n_dead_rows, slots_used,
	   slots_allocated >= slots_used AS allocated_enough,
	   slot_bytes > row_image_bytes AS slot_holds_image,
	   memory_bytes >= slots_allocated * row_image_bytes AS memory_covers_slots,
	   memory_bytes_per_row IS NOT NULL AS has_per_row,
	   undo_records, dirty_rows >= 0 AS dirty_ok, last_checkpoint_bytes
  FROM fastckpt_stat_tables
 WHERE relation IN ('st_a'::regclass, 'st_b'::regclass)
 ORDER BY relation::text;
SELECT relfilenode = (SELECT relfilenode FROM pg_class WHERE relname = 'st_a') AS same_relfilenode
  FROM fastckpt_stat_tables WHERE relation = 'st_a'::regclass;
-- tables in other databases are listed without a relation name
SELECT count(*) FROM fastckpt_stat_tables WHERE database <> current_database() AND relation IS NOT NULL;

-- committed changes are counted at once
DELETE FROM st_a WHERE id <= 100;
SELECT n_rows, n_dead_rows, slots_used FROM fastckpt_stat_tables WHERE relation = 'st_a'::regclass;
UPDATE st_a SET id = id + 10000 WHERE id <= 200;
SELECT n_rows, n_dead_rows, slots_used FROM fastckpt_stat_tables WHERE relation = 'st_a'::regclass;
-- in-place updates keep old versions in undo until VACUUM
UPDATE st_a SET n = n + 1 WHERE id <= 1000;
SELECT n_rows, n_dead_rows, undo_records > 0 AS has_undo, undo_bytes > 0 AS has_undo_bytes
  FROM fastckpt_stat_tables WHERE relation = 'st_a'::regclass;
VACUUM st_a;
SELECT n_rows, n_dead_rows, slots_used, undo_records
  FROM fastckpt_stat_tables WHERE relation = 'st_a'::regclass;
-- rolled-back inserts show up as dead rows until VACUUM
BEGIN;
INSERT INTO st_b SELECT generate_series(1, 50);
ROLLBACK;
SELECT n_rows, n_dead_rows FROM fastckpt_stat_tables WHERE relation = 'st_b'::regclass;
VACUUM st_b;
SELECT n_rows, n_dead_rows FROM fastckpt_stat_tables WHERE relation = 'st_b'::regclass;

-- slot sizes follow the column types
CREATE TABLE st_fixed (a int, b bigint, c char(10), d timestamptz) USING fastckpt;
CREATE TABLE st_text (a int, t text) USING fastckpt;
SET pg_fastckpt.default_row_size = '1kB';
CREATE TABLE st_text_1k (a int, t text) USING fastckpt;
RESET pg_fastckpt.default_row_size;
SELECT relation, row_image_bytes < 256 AS exact_bound FROM fastckpt_stat_tables
 WHERE relation = 'st_fixed'::regclass;
SELECT relation, row_image_bytes FROM fastckpt_stat_tables
 WHERE relation IN ('st_text'::regclass, 'st_text_1k'::regclass) ORDER BY relation::text;
-- a rewrite keeps the sizing of a table without sizing parameters: the
-- defaults, whatever the session has set
SET pg_fastckpt.default_row_size = '512B';
VACUUM FULL st_text;
RESET pg_fastckpt.default_row_size;
SELECT relation, row_image_bytes FROM fastckpt_stat_tables WHERE relation = 'st_text'::regclass;

-- recovery at startup has finished and opened the tables
SELECT tables_open, started_at IS NOT NULL AS started, finished_at >= started_at AS finished,
	   workers >= 0 AS workers_ok, index_rebuild_seconds >= 0 AS seconds_ok
  FROM fastckpt_stat_recovery;

-- the log: one VALUES record per committing writer, a DDL record per
-- storage change, nothing for a rollback; a commit returns once durable
SELECT values_records AS v0, ddl_records AS d0, abort_records AS a0,
	   insert_lsn AS i0
  FROM fastckpt_stat_log \gset
CREATE TABLE st_log (id int) USING fastckpt;
INSERT INTO st_log VALUES (1);
BEGIN; INSERT INTO st_log VALUES (2); UPDATE st_log SET id = 3; COMMIT;
BEGIN; INSERT INTO st_log VALUES (4); ROLLBACK;
SELECT values_records - :v0 AS new_values, ddl_records - :d0 AS new_ddl,
	   abort_records - :a0 AS new_aborts,
	   insert_lsn > :i0 AS grew, flush_lsn = insert_lsn AS all_durable,
	   bytes_per_commit > 0 AS sized, failing, last_error
  FROM fastckpt_stat_log;
DROP TABLE st_log;
-- resetting zeroes the counters
SELECT fastckpt_stat_reset();
SELECT values_records, ddl_records, flushes, backend_flushes FROM fastckpt_stat_log;

-- checkpoints: asked for from SQL, counted, sized per table
SELECT checkpoints AS c0, checkpoints_requested AS r0, last_csn AS s0
  FROM fastckpt_stat_checkpointer \gset
CREATE TABLE st_ck (id int PRIMARY KEY, v text) USING fastckpt;
INSERT INTO st_ck SELECT g, repeat('x', 50) FROM generate_series(1, 1000) g;
SELECT dirty_rows FROM fastckpt_stat_tables WHERE relation = 'st_ck'::regclass;
SELECT fastckpt_checkpoint();
SELECT checkpoints - :c0 AS new_checkpoints, checkpoints_requested - :r0 AS new_requested,
	   last_csn > :s0 AS csn_advanced, failures, in_progress, last_error,
	   last_rows >= 1000 AS has_rows, last_bytes_written > 0 AS wrote,
	   last_finished_at >= last_started_at AS timed, policy, method,
	   log_bytes_since_checkpoint >= 0 AS log_ok, calls_since_checkpoint AS calls
  FROM fastckpt_stat_checkpointer;
-- the rows went into the checkpoint; the current phase holds nothing new
SELECT last_checkpoint_bytes >= 1000 * 50 AS ckpt_sized, dirty_rows
  FROM fastckpt_stat_tables WHERE relation = 'st_ck'::regclass;
UPDATE st_ck SET v = 'y' WHERE id <= 10;
SELECT dirty_rows FROM fastckpt_stat_tables WHERE relation = 'st_ck'::regclass;
-- requested checkpoints run even with nothing new; unchanged chunks are reused
SELECT fastckpt_checkpoint(true);
SELECT fastckpt_checkpoint(wait => true);
SELECT fastckpt_checkpoint(NULL);
SELECT checkpoints - :c0 AS new_checkpoints, last_bytes_reused > 0 AS reused_unchanged
  FROM fastckpt_stat_checkpointer;
DROP TABLE st_ck;

-- who may read the views: pg_monitor members, not ordinary roles
CREATE ROLE regress_fc_plain;
CREATE ROLE regress_fc_monitor IN ROLE pg_monitor;
SELECT r.rolname, v.view, has_table_privilege(r.rolname, v.view, 'SELECT') AS can_select
  FROM (VALUES ('regress_fc_plain'), ('regress_fc_monitor')) r(rolname),
	   (VALUES ('fastckpt_stat_memory'), ('fastckpt_stat_tables'), ('fastckpt_stat_recovery'),
			   ('fastckpt_stat_log'), ('fastckpt_stat_checkpointer')) v(view)
 ORDER BY 1, 2;
SELECT r.rolname, f.func, has_function_privilege(r.rolname, f.func, 'EXECUTE') AS can_execute
  FROM (VALUES ('regress_fc_plain'), ('regress_fc_monitor')) r(rolname),
	   (VALUES ('fastckpt_stat_memory_internal()'), ('fastckpt_stat_tables_internal()'),
			   ('fastckpt_stat_recovery_internal()'), ('fastckpt_stat_log_internal()'),
			   ('fastckpt_stat_checkpointer_internal()'), ('fastckpt_stat_reset()'),
			   ('fastckpt_checkpoint(boolean)')) f(func)
 ORDER BY 1, 2;
SET ROLE regress_fc_plain;
SELECT count(*) FROM fastckpt_stat_memory;
SELECT count(*) FROM fastckpt_stat_tables;
SELECT count(*) FROM fastckpt_stat_recovery;
SELECT count(*) FROM fastckpt_stat_log;
SELECT fastckpt_stat_reset();
SELECT fastckpt_checkpoint();
SELECT count(*) FROM fastckpt_stat_checkpointer;
SELECT count(*) FROM fastckpt_stat_memory_internal();
SELECT count(*) FROM fastckpt_stat_tables_internal();
RESET ROLE;
SET ROLE regress_fc_monitor;
SELECT count(*) FROM fastckpt_stat_memory;
SELECT count(*) > 0 AS sees_tables FROM fastckpt_stat_tables;
SELECT tables_open FROM fastckpt_stat_recovery;
SELECT failing FROM fastckpt_stat_log;
RESET ROLE;
-- pg_checkpoint members may ask for checkpoints
CREATE ROLE regress_fc_ckpt IN ROLE pg_checkpoint;
SET ROLE regress_fc_ckpt;
SELECT fastckpt_checkpoint();
RESET ROLE;
DROP ROLE regress_fc_plain;
DROP ROLE regress_fc_monitor;
DROP ROLE regress_fc_ckpt;

-- dropped tables leave the views
SELECT relfilenode AS st_a_node FROM pg_class WHERE relname = 'st_a' \gset
DROP TABLE st_a, st_b, st_fixed, st_text, st_text_1k;
SELECT count(*) FROM fastckpt_stat_tables WHERE relfilenode = :st_a_node;
SELECT count(*) FROM fastckpt_stat_tables WHERE database = current_database();
SELECT tables_in_database FROM fastckpt_stat_memory;
