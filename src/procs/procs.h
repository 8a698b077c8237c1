/*-------------------------------------------------------------------------
 *
 * procs.h
 *	  Registered procedures (DESIGN.md section 6): the registry, capture of
 *	  top-level calls, the checks that decide whether replaying a call in
 *	  commit order would reproduce its writes, and the helper functions.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FC_PROCS_H
#define FC_PROCS_H

#include "postgres.h"

#include "executor/execdesc.h"
#include "nodes/plannodes.h"
#include "utils/timestamp.h"

#include "core/log_format.h"

/*
 * Why a call's transaction is logged as row images instead of one CALL
 * record; FC_FALLBACK_NONE: the call passed every check.  The names are
 * what the views show.
 */
typedef enum FcFallback
{
	FC_FALLBACK_NONE = 0,
	FC_FALLBACK_WRITES_OUTSIDE_CALL,	/* fastckpt writes before or after it */
	FC_FALLBACK_NON_FASTCKPT_RELATION,	/* it touched another kind of relation */
	FC_FALLBACK_NONDETERMINISTIC,	/* something replay could not repeat */
	FC_FALLBACK_READ_CONFLICT,	/* a row or table it read changed meanwhile */
	FC_FALLBACK_REDEFINED,		/* routine changed since its registration */
	FC_FALLBACK_TRANSACTION_CONTROL,	/* COMMIT/ROLLBACK inside the call */
	FC_FALLBACK_ARGUMENTS,		/* arguments not fixed values */
	FC_FALLBACK_CATALOG_CHANGED,	/* a catalog change overlapped the call */
	FC_FALLBACK_PREPARED,		/* its transaction was PREPAREd */
	FC_FALLBACK_NREASONS
} FcFallback;

extern const char *const fc_fallback_names[FC_FALLBACK_NREASONS];

/*
 * Session settings that change what a call's queries mean or return
 * without making them volatile (call_capture.c has the list and why).
 * Replay sets each to its value here, whatever the server's configuration
 * says, unless the CALL record carries the call's own value: a carried
 * setting may have any value, the others must have these for a call to be
 * logged as CALL.
 */
typedef struct FcReplaySetting
{
	const char *name;
	const char *value;
	bool		carried;
} FcReplaySetting;

extern const FcReplaySetting fc_replay_settings[];
extern const int fc_replay_nsettings;
extern int	fc_replay_setting_index(const char *name);

/*
 * Settings a CALL record carries after its search_path (call_capture.c);
 * then, as name and value pairs, the carried fc_replay_settings whose
 * value is not replay's.
 */
#define FC_CALL_SESSION_NSETTINGS	3
extern const char *const fc_call_session_settings[FC_CALL_SESSION_NSETTINGS];

/* routine_fingerprint.c: a routine's definition, stable across pg_dump */
#define FC_FINGERPRINT_LEN	64	/* hex SHA-256 */
extern bool fc_routine_fingerprint(Oid funcid, char *fingerprint);

/* registry.c */
extern Size fc_procs_shmem_size(void);
extern void fc_procs_shmem_init(void);
extern bool fc_proc_is_registered(Oid funcid, TransactionId *definition);
extern uint64 fc_registry_version(void);
extern void fc_proc_count(Oid funcid, FcFallback verdict);
extern void fc_procs_fallback_totals(uint64 *totals);
extern Datum fc_fallbacks_jsonb(const uint64 *counts);
extern void fc_procs_stats_reset(void);
extern void fc_proc_dropped(Oid funcid);
extern void fc_procs_forget(Oid dbid, Oid funcid);
extern void fc_procs_register_callbacks(void);

/* catalog_watch.c: catalog changes that calls must not be replayed across */
extern Size fc_catalog_watch_shmem_size(void);
extern void fc_catalog_watch_shmem_init(void);
extern bool fc_catalog_watch_statement(Node *stmt);
extern void fc_catalog_watch_statement_end(Node *stmt, bool returned);
extern void fc_catalog_watch_prepared(void);
extern void fc_catalog_watch_register_callbacks(void);
extern bool fc_catalog_watch_shared_changes(void);
extern void fc_catalog_watch_enter_at_commit(void);
extern bool fc_catalog_watch_files_statement(void);
extern uint64 fc_catalog_epoch(void);
extern bool fc_catalog_changed_since(uint64 epoch);

/* call_capture.c: the call in progress in this backend */
extern bool fc_call_active;		/* a registered call is executing */
extern bool fc_call_finished;	/* one returned; its transaction goes on */
extern void fc_register_call_hooks(void);
extern void fc_call_taint(FcFallback reason);
extern bool fc_call_tainted(void);
extern bool fc_statement_nested(void);
extern bool fc_creating_routine(void);
extern bool fc_arg_type_portable(Oid type);
extern int	fc_call_verdict_at_commit(bool storage_changes);
extern bool fc_call_catalog_unchanged(void);
extern void fc_call_count(FcFallback verdict);
extern void fc_call_count_prepared(void);
extern void fc_call_at_xact_end(void);
extern void fc_call_at_subxact_abort(void);
extern void fc_call_note_slot(const void *tbl, Oid spcid, Oid relnode, uint64 slotno);
extern uint32 fc_call_record_size(void);
extern void fc_call_fill_record(fc_log_header *rec, uint64 digest, uint32 nwritten);

/* determinism.c */
extern bool fc_function_replayable(Oid funcid);
extern bool fc_expr_replayable(Node *node);
extern FcFallback fc_plan_replayable(PlannedStmt *pstmt);
extern bool fc_plan_single_row(PlannedStmt *pstmt);
extern bool fc_plan_epq_exact(PlannedStmt *pstmt);
extern bool fc_query_names_temporary(Node *node);
extern bool fc_type_is_temporary(Oid typid);

/* folded_queries.c */
extern void fc_register_folding_hooks(void);
extern void fc_folding_note_query(QueryDesc *qd);
extern bool fc_plans_hold_folded_values(void);
extern bool fc_folding_in_planner(void);
extern void fc_folding_mark(void);
extern void fc_folding_after_utility(Node *stmt);
extern bool fc_type_input_reads_clock(Oid typid);
extern bool fc_type_is_timetz(Oid typid);
extern bool fc_text_names_clock(const char *text, int len);

extern void fc_install_plpgsql_plugin(void);
extern void fc_plpgsql_call_begin(void);
extern bool fc_plpgsql_plugin_installed(void);

/* helpers.c; fc_helper_oid is in registry.c, loaded with the registry */
extern Oid	fc_helper_oid(const char *name);
extern uint64 fc_call_seed;
extern void fc_helpers_begin_call(void);
extern void fc_helpers_replay_begin(uint64 seed, TimestampTz txn_time);
extern void fc_helpers_replay_end(void);

#endif							/* FC_PROCS_H */
