/*-------------------------------------------------------------------------
 *
 * pg_fastckpt.c
 *	  Module entry point: settings, shared-memory request, hooks, workers.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>

#include "access/twophase.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "postmaster/bgworker_internals.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/pmsignal.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/guc.h"

#include "pg_fastckpt.h"
#include "ckpt/checkpoint.h"
#include "log/log.h"
#include "procs/procs.h"
#include "recovery/gate.h"
#include "store/slot.h"
#include "store/temp_quota.h"
#include "txn/prepared.h"

PG_MODULE_MAGIC;

int			fc_memory_limit_mb = 1024;
int			fc_default_row_size = 256;
int			fc_bytes_per_char = 0;
int			fc_max_tables = 1024;
int			fc_recovery_wait_timeout_ms = 60000;
int			fc_recovery_index_timeout_ms = 600000;
int			fc_commit_mode = FC_COMMIT_EARLY_LOCK_RELEASE;
int			fc_log_buffer_size_kb = 16 * 1024;
bool		fc_test_sync_trace = false;
bool		fc_test_commit_no_wait = false;
int			fc_test_recovery_delay_ms = 0;
int			fc_test_replay_claim_pause_ms = 0;
int			fc_test_move_pause_ms = 0;
int			fc_checkpoint_timeout_s = 60;
double		fc_checkpoint_completion_target = 0.9;
int			fc_max_log_size_mb = 1024;
int			fc_max_replay_calls = 300000;
int			fc_checkpoint_method = FC_CKPT_MERGE;
double		fc_checkpoint_delta_ratio = 0.25;
int			fc_checkpoint_policy = FC_POLICY_FIXED;
int			fc_recovery_workers = 2;
int			fc_min_parallel_replay_mb = 128;
bool		fc_recovery_accept_call_mismatch = false;
double		fc_adaptive_lower_bound_mb = 64;
double		fc_adaptive_upper_bound_mb = 1024;
double		fc_adaptive_low_watermark = 0.20;
double		fc_adaptive_high_watermark = 0.85;
double		fc_adaptive_beta = 3;
double		fc_adaptive_alpha = 0.8;
int			fc_adaptive_window_s = 5;
double		fc_adaptive_peak_rate = 0;
int			fc_test_checkpoint_pause = FC_PAUSE_NONE;
int			fc_test_checkpoint_pause_ms = 0;

static const struct config_enum_entry fc_commit_mode_options[] = {
	{"strict", FC_COMMIT_STRICT, false},
	{"early_lock_release", FC_COMMIT_EARLY_LOCK_RELEASE, false},
	{NULL, 0, false}
};

static const struct config_enum_entry fc_checkpoint_method_options[] = {
	{"merge", FC_CKPT_MERGE, false},
	{"copy", FC_CKPT_COPY, false},
	{NULL, 0, false}
};

static const struct config_enum_entry fc_checkpoint_policy_options[] = {
	{"fixed", FC_POLICY_FIXED, false},
	{"adaptive", FC_POLICY_ADAPTIVE, false},
	{NULL, 0, false}
};

static const struct config_enum_entry fc_pause_options[] = {
	{"none", FC_PAUSE_NONE, false},
	{"swap", FC_PAUSE_SWAP, false},
	{"chunk", FC_PAUSE_CHUNK, false},
	{"install", FC_PAUSE_INSTALL, false},
	{"truncate", FC_PAUSE_TRUNCATE, false},
	{"load", FC_PAUSE_LOAD, false},
	{"rebuild", FC_PAUSE_REBUILD, false},
	{"prepare", FC_PAUSE_PREPARE, false},
	{"commit_prepared", FC_PAUSE_COMMIT_PREPARED, false},
	{NULL, 0, false}
};

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

void		_PG_init(void);

/*
 * A worker whose postmaster has died leaves, as PostgreSQL's startup
 * process does: busy on, it would keep the shared memory attached, and
 * the next start refuses to run until it is gone.
 */
void
fc_exit_if_orphaned(void)
{
	if (!PostmasterIsAlive())
		proc_exit(1);
}

/* A worker's check between two units of work (a record, a call, a chunk). */
void
fc_worker_check_interrupts(void)
{
	CHECK_FOR_INTERRUPTS();
	fc_exit_if_orphaned();
}

/* Processes with a PGPROC: what per-process shared arrays are sized by. */
int
fc_total_procs(void)
{
	return MaxBackends + NUM_AUXILIARY_PROCS + max_prepared_xacts;
}

/*
 * PostgreSQL's error when shared memory cannot be had names shared_buffers
 * and max_connections; a memory_limit near or past the machine's memory is
 * the likelier cause, so say so first.
 */
static void
fc_warn_memory_limit(void)
{
	long		pages = sysconf(_SC_PHYS_PAGES);
	long		page_size = sysconf(_SC_PAGESIZE);
	double		machine_mb;

	if (pages <= 0 || page_size <= 0)
		return;
	machine_mb = (double) pages * page_size / (1024.0 * 1024.0);
	if (fc_memory_limit_mb > machine_mb / 2)
		ereport(WARNING,
				(errmsg("pg_fastckpt.memory_limit (%d MB) asks for more than half of this machine's memory (%.0f MB)",
						fc_memory_limit_mb, machine_mb),
				 errdetail("The whole limit is reserved as shared memory at startup."),
				 errhint("If the server fails to start for want of shared memory, lower pg_fastckpt.memory_limit.")));
}

static void
fc_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();

	fc_warn_memory_limit();
	RequestAddinShmemSpace(fc_arena_shmem_size());
	RequestAddinShmemSpace(fc_table_store_shmem_size());
	RequestAddinShmemSpace(fc_gate_shmem_size());
	RequestAddinShmemSpace(fc_log_shmem_size());
	RequestAddinShmemSpace(fc_log_space_shmem_size());
	RequestAddinShmemSpace(fc_temp_quota_shmem_size());
	RequestAddinShmemSpace(fc_ckpt_shmem_size());
	RequestAddinShmemSpace(fc_ckpt_load_shmem_size());
	RequestAddinShmemSpace(fc_procs_shmem_size());
	RequestAddinShmemSpace(fc_catalog_watch_shmem_size());
	RequestAddinShmemSpace(fc_prepared_shmem_size());
	RequestNamedLWLockTranche(FC_SLOT_LOCK_TRANCHE, FC_SLOT_LOCKS);
	RequestNamedLWLockTranche(FC_MISC_LOCK_TRANCHE, FC_MISC_LOCKS);
}

static void
fc_shmem_startup(void)
{
	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	fc_arena_shmem_init();
	fc_table_store_shmem_init();
	fc_gate_shmem_init();
	fc_log_shmem_init();
	fc_log_space_shmem_init();
	fc_temp_quota_shmem_init();
	fc_ckpt_shmem_init();
	fc_ckpt_load_shmem_init();
	fc_procs_shmem_init();
	fc_catalog_watch_shmem_init();
	fc_prepared_shmem_init();
	LWLockRelease(AddinShmemInitLock);
}

static void
fc_worker_init(BackgroundWorker *worker, int flags, const char *function,
			   const char *type, const char *name)
{
	memset(worker, 0, sizeof(*worker));
	worker->bgw_flags = flags;
	worker->bgw_start_time = BgWorkerStart_RecoveryFinished;
	snprintf(worker->bgw_library_name, BGW_MAXLEN, "pg_fastckpt");
	snprintf(worker->bgw_function_name, BGW_MAXLEN, "%s", function);
	snprintf(worker->bgw_type, BGW_MAXLEN, "%s", type);
	snprintf(worker->bgw_name, BGW_MAXLEN, "%s", name);
}

/*
 * A worker that runs for the server's life.  Restarted a second after it
 * exits, and by the postmaster after every crash-restart cycle.
 */
void
fc_register_static_worker(int flags, const char *function, const char *type)
{
	BackgroundWorker worker;

	fc_worker_init(&worker, flags, function, type, type);
	worker.bgw_restart_time = 1;
	RegisterBackgroundWorker(&worker);
}

/*
 * A static worker leaves on SIGTERM with exit code 1: the postmaster then
 * starts it again after bgw_restart_time, unless it is shutting down.
 * Exit code 0 would have it forget the worker for good, so a stray
 * SIGTERM (pg_terminate_backend of the recovery leader, a kill of the log
 * writer) would leave commits waiting for a log writer that never comes
 * back, or a later crash-restart without recovery.
 */
void
fc_static_worker_exit(void)
{
	proc_exit(1);
}

/* A one-off helper of the caller, which hears when it stops; NULL: no slot. */
BackgroundWorkerHandle *
fc_start_dynamic_worker(int flags, const char *function, const char *type,
						const char *name, Datum arg)
{
	BackgroundWorker worker;
	BackgroundWorkerHandle *handle;

	fc_worker_init(&worker, flags, function, type, name);
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	worker.bgw_main_arg = arg;
	worker.bgw_notify_pid = MyProcPid;
	if (!RegisterDynamicBackgroundWorker(&worker, &handle))
		return NULL;
	return handle;
}

/* Settings of checkpoints (DESIGN.md section 7) and recovery from them. */
static void
fc_define_checkpoint_settings(void)
{
	DefineCustomIntVariable("pg_fastckpt.checkpoint_timeout",
							"Time between fastckpt checkpoints; 0 turns the timer off.",
							"Checkpoints are skipped while nothing commits.",
							&fc_checkpoint_timeout_s,
							60, 0, 86400,
							PGC_SIGHUP,
							GUC_UNIT_S,
							NULL, NULL, NULL);

	DefineCustomRealVariable("pg_fastckpt.checkpoint_completion_target",
							 "Fraction of checkpoint_timeout over which a timed checkpoint is spread.",
							 "0 writes at full speed.  Requested, size-triggered and shutdown checkpoints always do.",
							 &fc_checkpoint_completion_target,
							 0.9, 0.0, 1.0,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("pg_fastckpt.max_log_size",
							"Log written since the last checkpoint that triggers the next one; 0: never.",
							"With checkpoint_policy = adaptive, the adaptive threshold replaces it.",
							&fc_max_log_size_mb,
							1024, 0, INT_MAX / 2,
							PGC_SIGHUP,
							GUC_UNIT_MB,
							NULL, NULL, NULL);

	DefineCustomIntVariable("pg_fastckpt.max_replay_calls",
							"Calls of registered procedures logged since the last checkpoint that trigger the next one; 0: never.",
							"Recovery runs logged calls again one at a time, so their number, not the log's size, "
							"bounds that part of recovery time.",
							&fc_max_replay_calls,
							300000, 0, INT_MAX,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);

	DefineCustomEnumVariable("pg_fastckpt.checkpoint_policy",
							 "How the log size that triggers a checkpoint is chosen.",
							 "fixed: pg_fastckpt.max_log_size; adaptive: between pg_fastckpt.adaptive_lower_bound "
							 "and adaptive_upper_bound, higher under higher load (SLACH).",
							 &fc_checkpoint_policy,
							 FC_POLICY_FIXED,
							 fc_checkpoint_policy_options,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);

	DefineCustomEnumVariable("pg_fastckpt.checkpoint_method",
							 "Where a checkpoint takes the rows that did not change since the last one.",
							 "merge: read back from the last checkpoint's files; "
							 "copy: from a copy the checkpoint writer keeps in its memory.",
							 &fc_checkpoint_method,
							 FC_CKPT_MERGE,
							 fc_checkpoint_method_options,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);

	DefineCustomRealVariable("pg_fastckpt.checkpoint_delta_ratio",
							 "Size a chunk's delta files may reach, as a fraction of its whole file, before a checkpoint rewrites it whole.",
							 "A checkpoint writes only the changed rows of a chunk (a delta) while its deltas stay below this; "
							 "0 rewrites every changed chunk whole.",
							 &fc_checkpoint_delta_ratio,
							 0.25, 0.0, 100.0,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("pg_fastckpt.recovery_workers",
							"Processes that load the checkpoint, replay the log and rebuild indexes in parallel at startup.",
							"Fewer run (and the server log says so) when max_worker_processes has too few free slots.",
							&fc_recovery_workers,
							2, 1, 64,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("pg_fastckpt.recovery_accept_call_mismatch",
							 "Lets startup recovery go on past a logged call that it cannot repeat exactly.",
							 "Emergency use only: the replayed call's writes stand, or the call is skipped if it fails, "
							 "with a warning for each; a checkpoint then makes the result final. Off, such a call keeps the fastckpt tables closed.",
							 &fc_recovery_accept_call_mismatch,
							 false,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("pg_fastckpt.min_parallel_replay_size",
							"Log to replay at startup below which one process applies all of it.",
							"Every replay process reads the whole log; below this size starting more costs more than it saves.",
							&fc_min_parallel_replay_mb,
							128, 0, INT_MAX / 2,
							PGC_SIGHUP,
							GUC_UNIT_MB,
							NULL, NULL, NULL);

	DefineCustomRealVariable("pg_fastckpt.adaptive_lower_bound",
							 "Adaptive policy: log size (MB) that triggers a checkpoint at low load.",
							 NULL,
							 &fc_adaptive_lower_bound_mb,
							 64, 1, 1024 * 1024,
							 PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomRealVariable("pg_fastckpt.adaptive_upper_bound",
							 "Adaptive policy: log size (MB) that triggers a checkpoint at high load.",
							 NULL,
							 &fc_adaptive_upper_bound_mb,
							 1024, 1, 1024 * 1024,
							 PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomRealVariable("pg_fastckpt.adaptive_low_watermark",
							 "Adaptive policy: load (fraction of the peak commit rate) at or below which the lower bound applies.",
							 NULL,
							 &fc_adaptive_low_watermark,
							 0.20, 0, 1,
							 PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomRealVariable("pg_fastckpt.adaptive_high_watermark",
							 "Adaptive policy: load at or above which the upper bound applies.",
							 NULL,
							 &fc_adaptive_high_watermark,
							 0.85, 0, 1,
							 PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomRealVariable("pg_fastckpt.adaptive_beta",
							 "Adaptive policy: exponent of the curve between the watermarks.",
							 NULL,
							 &fc_adaptive_beta,
							 3, 0.01, 100,
							 PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomRealVariable("pg_fastckpt.adaptive_alpha",
							 "Adaptive policy: weight of the past in the moving average of the commit rate.",
							 NULL,
							 &fc_adaptive_alpha,
							 0.8, 0, 1,
							 PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("pg_fastckpt.adaptive_window",
							"Adaptive policy: length of one commit-rate sample.",
							NULL,
							&fc_adaptive_window_s,
							5, 1, 3600,
							PGC_SIGHUP, GUC_UNIT_S, NULL, NULL, NULL);
	DefineCustomRealVariable("pg_fastckpt.adaptive_peak_rate",
							 "Adaptive policy: commits per second that count as full load; 0: the highest rate seen.",
							 NULL,
							 &fc_adaptive_peak_rate,
							 0, 0, 1e9,
							 PGC_SIGHUP, 0, NULL, NULL, NULL);

	DefineCustomEnumVariable("pg_fastckpt.test_checkpoint_pause",
							 "Testing only: a point where pg_fastckpt pauses (checkpoint writer, startup recovery, two-phase commit).",
							 NULL,
							 &fc_test_checkpoint_pause,
							 FC_PAUSE_NONE,
							 fc_pause_options,
							 PGC_SIGHUP,
							 GUC_NOT_IN_SAMPLE,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("pg_fastckpt.test_checkpoint_pause_ms",
							"Testing only: how long pg_fastckpt pauses there.",
							NULL,
							&fc_test_checkpoint_pause_ms,
							0, 0, 3600 * 1000,
							PGC_SIGHUP,
							GUC_UNIT_MS | GUC_NOT_IN_SAMPLE,
							NULL, NULL, NULL);
}

/*
 * Startup recovery needs a background worker slot beyond the workers that
 * run for the server's life (ours among them) to rebuild each database's
 * indexes and replay its calls; with none it would wait for one forever,
 * the tables closed.  Libraries loaded after us are not counted yet.
 * (More slots let recovery run in parallel.)
 */
static void
fc_check_worker_slots(void)
{
	int			lasting = 0;
	slist_iter	it;

	/* PostgreSQL's logical replication launcher registers first */
	slist_foreach(it, &BackgroundWorkerList)
		lasting++;
	if (max_worker_processes <= lasting)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_worker_processes (%d) leaves no background worker slot for pg_fastckpt's startup recovery",
						max_worker_processes),
				 errdetail("%d slots are taken by workers that run for the server's life: pg_fastckpt's log writer, checkpointer and recovery leader, the logical replication launcher, and those of libraries loaded before pg_fastckpt.",
						   lasting),
				 errhint("Set max_worker_processes to at least %d and restart the server.",
						 lasting + 1)));
}

void
_PG_init(void)
{
	/*
	 * The arena lives in the main shared-memory segment, which can only be
	 * sized at postmaster start: refuse any other way of loading us.
	 */
	if (!process_shared_preload_libraries_in_progress)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pg_fastckpt must be loaded via shared_preload_libraries"),
				 errhint("Add 'pg_fastckpt' to shared_preload_libraries in postgresql.conf "
						 "(for example: shared_preload_libraries = 'pg_fastckpt') and restart the server.")));

	DefineCustomIntVariable("pg_fastckpt.memory_limit",
							"Size of the shared-memory arena holding fastckpt rows.",
							"Rows, their undo versions and table directories all come from this arena.",
							&fc_memory_limit_mb,
							1024, 16, INT_MAX / 2,
							PGC_POSTMASTER,
							GUC_UNIT_MB,
							NULL, NULL, NULL);

	DefineCustomIntVariable("pg_fastckpt.default_row_size",
							"Row image size for fastckpt tables with columns of unbounded size.",
							"Read when a table's storage is created (CREATE TABLE, TRUNCATE, rewrites).",
							&fc_default_row_size,
							256, 32, FC_MAX_IMAGE_CAPACITY,
							PGC_USERSET,
							GUC_UNIT_BYTE,
							NULL, NULL, NULL);

	DefineCustomIntVariable("pg_fastckpt.bytes_per_char",
							"Bytes per character assumed when sizing char(n) and varchar(n) columns of fastckpt tables.",
							"0 assumes the database encoding's longest character (4 bytes in UTF8). "
							"Read when a table's storage is created (CREATE TABLE, TRUNCATE, rewrites).",
							&fc_bytes_per_char,
							0, 0, 4,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("pg_fastckpt.max_tables",
							"Maximum number of fastckpt table storages (relfilenodes) at once.",
							NULL,
							&fc_max_tables,
							1024, 16, 1024 * 1024,
							PGC_POSTMASTER,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("pg_fastckpt.temp_share",
							"Percentage of pg_fastckpt.memory_limit and of pg_fastckpt.max_tables one session's temporary fastckpt tables may use.",
							"Every session shares that memory and those table storages; 0 keeps temporary fastckpt tables empty.",
							&fc_temp_share,
							25, 0, 100,
							PGC_SUSET,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("pg_fastckpt.recovery_wait_timeout",
							"How long a statement using fastckpt tables waits for startup recovery.",
							"In all, for the statement and what it runs; after this, it fails with a \"recovery in progress\" error.",
							&fc_recovery_wait_timeout_ms,
							60000, 0, INT_MAX,
							PGC_USERSET,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("pg_fastckpt.recovery_index_timeout",
							"Longest time startup recovery spends rebuilding one index.",
							"An index whose rebuild takes longer (a function in its expression that waits) is left empty and marked not valid, as one whose rebuild fails. 0: no limit.",
							&fc_recovery_index_timeout_ms,
							600000, 0, INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomEnumVariable("pg_fastckpt.commit_mode",
							 "When a commit to fastckpt tables waits for its log record to be durable.",
							 "strict: before the transaction's row locks are released; "
							 "early_lock_release: after, so that transactions queued on the same rows share a flush. "
							 "Either way the commit is acknowledged only once durable.",
							 &fc_commit_mode,
							 FC_COMMIT_EARLY_LOCK_RELEASE,
							 fc_commit_mode_options,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("pg_fastckpt.backend_flush",
							 "Lets a committing backend write and sync the fastckpt log itself when the log writer is idle.",
							 "Saves the wake-up round trip to the log writer; a busy writer keeps flushing. "
							 "A commit is acknowledged only once durable either way.",
							 &fc_backend_flush,
							 false,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("pg_fastckpt.log_buffer_size",
							"Size of the shared buffer of the fastckpt log.",
							"Must hold at least two of the largest log records (1 MB each).",
							&fc_log_buffer_size_kb,
							16 * 1024, 4 * 1024, INT_MAX / 2,
							PGC_POSTMASTER,
							GUC_UNIT_KB,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("pg_fastckpt.test_sync_trace",
							 "Testing only: record the durable log position after every log sync.",
							 "Written to pg_fastckpt/sync_trace for crash tests that model a power loss.",
							 &fc_test_sync_trace,
							 false,
							 PGC_POSTMASTER,
							 GUC_NOT_IN_SAMPLE,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("pg_fastckpt.test_commit_no_wait",
							 "Benchmarking only: acknowledge fastckpt commits without waiting for their log records to be durable.",
							 "Measures the access method without the durability hand-off: the log writer writes such records in batches "
							 "(a quarter of the log buffer, or within 200 ms) and acknowledged commits can be lost in a crash.  Transactions that also write WAL-logged tables still wait.",
							 &fc_test_commit_no_wait,
							 false,
							 PGC_SUSET,
							 GUC_NOT_IN_SAMPLE,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("pg_fastckpt.test_recovery_delay",
							"Testing only: hold startup recovery this long before the tables open.",
							NULL,
							&fc_test_recovery_delay_ms,
							0, 0, 3600 * 1000,
							PGC_POSTMASTER,
							GUC_UNIT_MS | GUC_NOT_IN_SAMPLE,
							NULL, NULL, NULL);

	DefineCustomIntVariable("pg_fastckpt.test_replay_claim_pause",
							"Testing only: how long a recovery process pauses before it grows a table by a page for a replayed row.",
							"Widens the window in which replay processes grow the same table at once.",
							&fc_test_replay_claim_pause_ms,
							0, 0, 60 * 1000,
							PGC_POSTMASTER,
							GUC_UNIT_MS | GUC_NOT_IN_SAMPLE,
							NULL, NULL, NULL);

	DefineCustomIntVariable("pg_fastckpt.test_move_pause",
							"Testing only: how long an update that moves a row to another slot pauses after marking the old one.",
							"Widens the window in which the old row is marked moved but names no new row yet.",
							&fc_test_move_pause_ms,
							0, 0, 60 * 1000,
							PGC_SUSET,
							GUC_UNIT_MS | GUC_NOT_IN_SAMPLE,
							NULL, NULL, NULL);

	fc_define_checkpoint_settings();

	MarkGUCPrefixReserved("pg_fastckpt");

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = fc_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = fc_shmem_startup;

	fc_register_xact_callbacks();
	fc_register_utility_hook();
	fc_register_object_access_hook();
	fc_register_startup_worker();
	fc_register_log_writer();
	fc_register_checkpointer();
	fc_register_planner_gate();
	fc_register_call_hooks();
	fc_check_worker_slots();
}
