/* pg_fastckpt--1.0.sql */

\echo Use "CREATE EXTENSION pg_fastckpt" to load this file. \quit

CREATE FUNCTION fastckpt_tableam_handler(internal)
RETURNS table_am_handler
AS 'MODULE_PATHNAME'
LANGUAGE C;

CREATE ACCESS METHOD fastckpt TYPE TABLE HANDLER fastckpt_tableam_handler;
COMMENT ON ACCESS METHOD fastckpt IS
	'rows in shared memory, durable through pg_fastckpt''s own log and checkpoints';

-- Arena-wide memory.
CREATE FUNCTION fastckpt_stat_memory_internal(
	OUT limit_bytes bigint,
	OUT used_bytes bigint,
	OUT free_bytes bigint,
	OUT table_bytes bigint,
	OUT undo_bytes bigint,
	OUT directory_bytes bigint,
	OUT page_bytes bigint)
RETURNS record
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

CREATE VIEW fastckpt_stat_memory AS
	SELECT m.limit_bytes, m.used_bytes, m.free_bytes,
		   m.table_bytes, m.undo_bytes, m.directory_bytes, m.page_bytes,
		   (SELECT count(*) FROM pg_class c JOIN pg_am a ON a.oid = c.relam
			 WHERE a.amname = 'fastckpt') AS tables_in_database
	  FROM fastckpt_stat_memory_internal() m;

-- Per table storage (one per relfilenode, across all databases).
CREATE FUNCTION fastckpt_stat_tables_internal(
	OUT dbid oid,
	OUT spcid oid,
	OUT relfilenode oid,
	OUT n_rows bigint,
	OUT n_dead_rows bigint,
	OUT slots_used bigint,
	OUT slots_allocated bigint,
	OUT slot_bytes bigint,
	OUT row_image_bytes bigint,
	OUT memory_bytes bigint,
	OUT undo_records bigint,
	OUT undo_bytes bigint,
	OUT dirty_rows bigint,
	OUT checkpoint_bytes bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE;

CREATE VIEW fastckpt_stat_tables AS
	SELECT d.datname AS database,
		   CASE WHEN t.dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
				THEN pg_filenode_relation(CASE WHEN t.spcid = d.dattablespace THEN 0 ELSE t.spcid END,
										  t.relfilenode)
		   END AS relation,
		   t.relfilenode,
		   t.n_rows, t.n_dead_rows,
		   t.slots_used, t.slots_allocated,
		   t.slot_bytes, t.row_image_bytes,
		   t.memory_bytes,
		   CASE WHEN t.n_rows > 0
				THEN round(t.memory_bytes::numeric / t.n_rows, 1) END AS memory_bytes_per_row,
		   t.undo_records, t.undo_bytes,
		   t.dirty_rows,
		   t.checkpoint_bytes AS last_checkpoint_bytes
	  FROM fastckpt_stat_tables_internal() t
	  LEFT JOIN pg_database d ON d.oid = t.dbid;

CREATE FUNCTION fastckpt_stat_recovery_internal(
	OUT tables_open boolean,
	OUT started_at timestamptz,
	OUT finished_at timestamptz,
	OUT databases integer,
	OUT tables integer,
	OUT indexes integer,
	OUT workers integer,
	OUT log_bytes bigint,
	OUT log_records bigint,
	OUT records_applied bigint,
	OUT records_skipped bigint,
	OUT rows_applied bigint,
	OUT replay_workers integer,
	OUT replay_seconds double precision,
	OUT index_rebuild_seconds double precision,
	OUT total_seconds double precision,
	OUT checkpoint_seq bigint,
	OUT checkpoint_csn bigint,
	OUT checkpoint_fallback boolean,
	OUT load_workers integer,
	OUT load_bytes bigint,
	OUT load_rows bigint,
	OUT load_deltas bigint,
	OUT load_seconds double precision,
	OUT calls_replayed bigint,
	OUT call_replay_seconds double precision,
	OUT calls_mismatched bigint,
	OUT error text)
RETURNS record
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE;

CREATE VIEW fastckpt_stat_recovery AS
	SELECT * FROM fastckpt_stat_recovery_internal();

CREATE FUNCTION fastckpt_stat_log_internal(
	OUT insert_lsn bigint,
	OUT flush_lsn bigint,
	OUT bytes bigint,
	OUT values_records bigint,
	OUT call_records bigint,
	OUT ddl_records bigint,
	OUT abort_records bigint,
	OUT flushes bigint,
	OUT backend_flushes bigint,
	OUT commits_per_flush double precision,
	OUT bytes_per_commit double precision,
	OUT commit_waits bigint,
	OUT commit_wait_ms double precision,
	OUT avg_commit_wait_ms double precision,
	OUT buffer_full_waits bigint,
	OUT write_errors bigint,
	OUT failing boolean,
	OUT last_error text,
	OUT call_fallbacks jsonb)
RETURNS record
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE;

CREATE VIEW fastckpt_stat_log AS
	SELECT * FROM fastckpt_stat_log_internal();

CREATE FUNCTION fastckpt_stat_checkpointer_internal(
	OUT checkpoints bigint,
	OUT checkpoints_timed bigint,
	OUT checkpoints_size bigint,
	OUT checkpoints_requested bigint,
	OUT checkpoints_shutdown bigint,
	OUT failures bigint,
	OUT in_progress boolean,
	OUT last_seq bigint,
	OUT last_csn bigint,
	OUT last_start_lsn bigint,
	OUT last_started_at timestamptz,
	OUT last_finished_at timestamptz,
	OUT last_seconds double precision,
	OUT last_bytes_written bigint,
	OUT last_bytes_reused bigint,
	OUT last_rows bigint,
	OUT last_dirty_rows bigint,
	OUT last_deltas_written bigint,
	OUT bytes_written bigint,
	OUT deltas_written bigint,
	OUT log_segments_removed bigint,
	OUT log_bytes_since_checkpoint bigint,
	OUT calls_since_checkpoint bigint,
	OUT policy text,
	OUT method text,
	OUT threshold_bytes bigint,
	OUT load double precision,
	OUT commit_rate double precision,
	OUT last_error text,
	OUT test_pause_hits bigint[])
RETURNS record
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE;

CREATE VIEW fastckpt_stat_checkpointer AS
	SELECT * FROM fastckpt_stat_checkpointer_internal();

REVOKE ALL ON FUNCTION fastckpt_stat_checkpointer_internal() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION fastckpt_stat_checkpointer_internal() TO pg_monitor;
REVOKE ALL ON fastckpt_stat_checkpointer FROM PUBLIC;
GRANT SELECT ON fastckpt_stat_checkpointer TO pg_monitor;

-- Request a checkpoint; with wait, return once it is installed.
CREATE FUNCTION fastckpt_checkpoint(wait boolean DEFAULT true)
RETURNS void
AS 'MODULE_PATHNAME'
LANGUAGE C VOLATILE;

REVOKE ALL ON FUNCTION fastckpt_checkpoint(boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION fastckpt_checkpoint(boolean) TO pg_checkpoint;

CREATE FUNCTION fastckpt_stat_reset()
RETURNS void
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE;

REVOKE ALL ON FUNCTION fastckpt_stat_reset() FROM PUBLIC;
REVOKE ALL ON FUNCTION fastckpt_stat_log_internal() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION fastckpt_stat_log_internal() TO pg_monitor;
REVOKE ALL ON fastckpt_stat_log FROM PUBLIC;
GRANT SELECT ON fastckpt_stat_log TO pg_monitor;

REVOKE ALL ON FUNCTION fastckpt_stat_memory_internal() FROM PUBLIC;
REVOKE ALL ON FUNCTION fastckpt_stat_tables_internal() FROM PUBLIC;
REVOKE ALL ON FUNCTION fastckpt_stat_recovery_internal() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION fastckpt_stat_memory_internal() TO pg_monitor;
GRANT EXECUTE ON FUNCTION fastckpt_stat_tables_internal() TO pg_monitor;
GRANT EXECUTE ON FUNCTION fastckpt_stat_recovery_internal() TO pg_monitor;
REVOKE ALL ON fastckpt_stat_memory, fastckpt_stat_tables, fastckpt_stat_recovery FROM PUBLIC;
GRANT SELECT ON fastckpt_stat_memory, fastckpt_stat_tables, fastckpt_stat_recovery TO pg_monitor;

-- Registered procedures (call logging).  The registry is a table of the
-- extension so that registrations are transactional and survive restarts
-- and pg_dump; users change it only through the functions below.  A heap
-- table whatever default_table_access_method says.
CREATE TABLE fastckpt_procedure_registry (
	routine regprocedure PRIMARY KEY,
	definition xid NOT NULL,
	fingerprint text,
	registered_by regrole NOT NULL,
	registered_at timestamptz NOT NULL DEFAULT now()
) USING heap;
SELECT pg_catalog.pg_extension_config_dump('fastckpt_procedure_registry', '');
REVOKE ALL ON fastckpt_procedure_registry FROM PUBLIC;
GRANT SELECT ON fastckpt_procedure_registry TO PUBLIC;

-- Log calls of a routine as CALL records where replay is sure to repeat
-- them (the owner of the routine, or a superuser).
CREATE FUNCTION fastckpt_register_procedure(regprocedure)
RETURNS void
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE;

CREATE FUNCTION fastckpt_unregister_procedure(regprocedure)
RETURNS boolean
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE;

-- A digest of the routine's definition: a registration holds while the
-- routine's CREATE statement is the one registered, across pg_dump too.
CREATE FUNCTION fastckpt_routine_fingerprint(regprocedure)
RETURNS text
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT STABLE;

-- The transaction's start time and a seeded random number; a CALL record
-- carries both, so replay sees the same values.
CREATE FUNCTION fastckpt_txn_time()
RETURNS timestamptz
AS 'MODULE_PATHNAME'
LANGUAGE C STABLE;

CREATE FUNCTION fastckpt_random()
RETURNS double precision
AS 'MODULE_PATHNAME'
LANGUAGE C VOLATILE;

CREATE FUNCTION fastckpt_procedure_stats_internal(
	OUT routine oid,
	OUT calls bigint,
	OUT validated_calls bigint,
	OUT call_records bigint,
	OUT value_records bigint,
	OUT fallbacks jsonb,
	OUT last_fallback text)
RETURNS SETOF record
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE;

-- calls: committed calls that wrote fastckpt rows; validated_calls: those
-- that passed every check; fallbacks: the others by reason.
CREATE VIEW fastckpt_procedures AS
	SELECT r.routine,
		   l.lanname AS language,
		   r.registered_by,
		   r.registered_at,
		   (p.oid IS NULL OR
			CASE WHEN r.fingerprint IS NULL THEN p.xmin <> r.definition
				 ELSE r.fingerprint IS DISTINCT FROM fastckpt_routine_fingerprint(p.oid)
			END) AS redefined,
		   coalesce(s.calls, 0) AS calls,
		   coalesce(s.validated_calls, 0) AS validated_calls,
		   coalesce(s.call_records, 0) AS call_records,
		   coalesce(s.value_records, 0) AS value_records,
		   coalesce(s.fallbacks, '{}'::jsonb) AS fallbacks,
		   s.last_fallback
	  FROM fastckpt_procedure_registry r
	  LEFT JOIN pg_catalog.pg_proc p ON p.oid = r.routine::oid
	  LEFT JOIN pg_catalog.pg_language l ON l.oid = p.prolang
	  LEFT JOIN fastckpt_procedure_stats_internal() s ON s.routine = r.routine::oid;

GRANT SELECT ON fastckpt_procedures TO PUBLIC;
