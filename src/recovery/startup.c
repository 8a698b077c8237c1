/*-------------------------------------------------------------------------
 *
 * startup.c
 *	  Startup recovery, run by background workers at every postmaster start
 *	  and after every crash-restart cycle.
 *
 * Shared memory does not survive a restart.  The leader loads the newest
 * usable checkpoint with loader workers (ckpt/ckpt_load.c), replays the
 * logical log after it into the arena (replay.c), drops storages of
 * databases that are gone, and opens the log for new records.  Then, one
 * database at a time, pg_fastckpt.recovery_workers database-connected
 * workers reconcile the storages with the catalogs (a storage PostgreSQL
 * no longer has is discarded) and rebuild every index of every fastckpt
 * table from the recovered rows, claiming indexes one at a time, largest
 * table first -- the indexes are unlogged, so a crash left them empty and a
 * clean restart left them pointing at the previous run's slots.  Only then
 * does the access gate open.
 *
 * The leader stays alive afterwards, doing nothing: a static worker that
 * exits with code 0 is forgotten by the postmaster, and recovery must run
 * again after a crash-restart, when the postmaster restarts every static
 * worker it still knows.  Terminated (pg_terminate_backend), the leader
 * exits with code 1 and is started again (fc_static_worker_exit).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/amapi.h"
#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_database.h"
#include "commands/defrem.h"
#include "commands/vacuum.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "optimizer/optimizer.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "postmaster/postmaster.h"
#include "storage/dsm.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/timeout.h"

#include "catalog/index.h"
#include "catalog/namespace.h"
#include "catalog/storage.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "storage/smgr.h"
#include "utils/relcache.h"

#include "pg_fastckpt.h"
#include "ckpt/checkpoint.h"
#include "log/log.h"
#include "recovery/attempts.h"
#include "recovery/call_replay.h"
#include "recovery/gate.h"
#include "recovery/replay.h"
#include "recovery/timeline.h"
#include "recovery/worker_slots.h"
#include "core/file_layout.h"
#include "store/table_store.h"
#include "txn/prepared.h"

PGDLLEXPORT void fc_recovery_leader_main(Datum arg);
PGDLLEXPORT void fc_recovery_db_main(Datum arg);

void
fc_register_startup_worker(void)
{
	fc_register_static_worker(BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION,
							  "fc_recovery_leader_main", "pg_fastckpt recovery leader");
}

/* Databases that accept connections. */
static List *
fc_database_list(void)
{
	List	   *dbs = NIL;
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tup;
	MemoryContext outer = CurrentMemoryContext;

	StartTransactionCommand();
	(void) GetTransactionSnapshot();
	rel = table_open(DatabaseRelationId, AccessShareLock);
	scan = table_beginscan_catalog(rel, 0, NULL);
	while (HeapTupleIsValid(tup = heap_getnext(scan, ForwardScanDirection)))
	{
		Form_pg_database db = (Form_pg_database) GETSTRUCT(tup);
		MemoryContext old;

		/*
		 * Every database, those refusing connections too (their rows
		 * would be dropped as orphans): only one whose DROP DATABASE was
		 * interrupted is left out, and its rows go.
		 */
#ifdef DATCONNLIMIT_INVALID_DB
		if (database_is_invalid_form(db))
			continue;
#endif
		old = MemoryContextSwitchTo(outer);
		dbs = lappend_oid(dbs, db->oid);
		MemoryContextSwitchTo(old);
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	CommitTransactionCommand();
	return dbs;
}

/* What the leader shares with the workers rebuilding one database */
typedef struct FcRebuildShared
{
	Oid			dboid;
	pg_atomic_uint32 next_index;	/* next index to claim, in plan order */
	pg_atomic_uint32 reconciler;	/* the first to take it reconciles */
	pg_atomic_uint32 indexes_built;
	pg_atomic_uint32 workers_done;	/* workers that ran to the end */
	int			ntables;		/* the reconciler's count */
	bool		count_only;		/* only count the fastckpt tables */
} FcRebuildShared;

static BackgroundWorkerHandle *
fc_start_db_worker(dsm_segment *seg, int n)
{
	char		name[BGW_MAXLEN];

	snprintf(name, sizeof(name), "pg_fastckpt recovery worker %d for database %u",
			 n, ((FcRebuildShared *) dsm_segment_address(seg))->dboid);
	return fc_start_dynamic_worker(BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION,
								   "fc_recovery_db_main", "pg_fastckpt recovery worker",
								   name, UInt32GetDatum(dsm_segment_handle(seg)));
}

/* rebuilds that got fewer workers than wanted, in this recovery */
static int	fc_short_rebuilds = 0;

/*
 * Rebuild one database's indexes with pg_fastckpt.recovery_workers
 * workers, fewer if slots are short, and wait for them; or, with
 * count_only, have one worker count its fastckpt tables (into *ntables).
 * With no slot at all, retry until one frees up (worker_slots.c).  Returns
 * the workers that ran; complete says whether every one of them ran to the
 * end.
 */
static int
fc_rebuild_database(Oid dboid, bool count_only, bool *complete, int *ntables)
{
	dsm_segment *seg = dsm_create(sizeof(FcRebuildShared), 0);
	FcRebuildShared *shared = (FcRebuildShared *) dsm_segment_address(seg);
	BackgroundWorkerHandle *handles[FC_MAX_REPLAY_PARTS];
	int			wanted = count_only ? 1 :
		Min(Max(fc_recovery_workers, 1), FC_MAX_REPLAY_PARTS);
	int			started = 0;
	int			finished;
	FcSlotWait	slot_wait = {0};
	char	   *purpose = psprintf("for recovery of database %u", dboid);

	shared->dboid = dboid;
	shared->count_only = count_only;
	shared->ntables = 0;
	pg_atomic_init_u32(&shared->next_index, 0);
	pg_atomic_init_u32(&shared->reconciler, 0);
	pg_atomic_init_u32(&shared->indexes_built, 0);
	pg_atomic_init_u32(&shared->workers_done, 0);

	for (;;)
	{
		while (started < wanted && (handles[started] = fc_start_db_worker(seg, started)) != NULL)
			started++;
		if (started > 0)
			break;
		fc_worker_slot_wait(&slot_wait, purpose);
	}
	/* said once per recovery; fc_rebuild_all_indexes counts the rest */
	if (started < wanted && fc_short_rebuilds++ == 0)
		ereport(LOG,
				(errmsg("pg_fastckpt: rebuilding the indexes of database %u with %d workers instead of %d: no free background worker slot",
						dboid, started, wanted),
				 errhint("Raise max_worker_processes.")));
	for (int i = 0; i < started; i++)
		(void) WaitForBackgroundWorkerShutdown(handles[i]);
	fc_recovery_exit_if_shutdown();
	finished = (int) pg_atomic_read_u32(&shared->workers_done);
	*complete = (finished == started);
	if (ntables)
		*ntables = shared->ntables;
	if (*complete && !count_only)
		fc_recovery_stats_add(1, shared->ntables,
							  (int) pg_atomic_read_u32(&shared->indexes_built), started);
	else if (!*complete)
		ereport(WARNING,
				(errmsg("pg_fastckpt: %d of %d recovery workers for database %u stopped before they finished",
						started - finished, started, dboid),
				 errdetail("Their errors are in the server log above.")));
	dsm_detach(seg);
	return started;
}

/*
 * Rebuild the indexes of every database, each a second time if its
 * workers failed.  An index left incomplete would answer queries wrongly,
 * so if that fails too, false, with the reason in error.
 */
static bool
fc_rebuild_all_indexes(List *dbs, char *error, size_t errlen)
{
	ListCell   *lc;

	fc_short_rebuilds = 0;
	foreach(lc, dbs)
	{
		Oid			dboid = lfirst_oid(lc);
		bool		complete;

		(void) fc_rebuild_database(dboid, false, &complete, NULL);
		if (!complete)
		{
			ereport(LOG,
					(errmsg("pg_fastckpt: rebuilding the indexes of database %u again", dboid)));
			(void) fc_rebuild_database(dboid, false, &complete, NULL);
		}
		if (!complete && !list_member_oid(fc_database_list(), dboid))
		{
			/* dropped meanwhile: its workers could not connect */
			ereport(LOG,
					(errmsg("pg_fastckpt: database %u was dropped during recovery", dboid)));
			continue;
		}
		if (!complete)
		{
			snprintf(error, errlen,
					 "the indexes of the fastckpt tables of database %u could not be rebuilt (twice); the errors are in the server log",
					 dboid);
			return false;
		}
	}
	if (fc_short_rebuilds > 1)
		ereport(LOG,
				(errmsg("pg_fastckpt: %d index rebuilds of databases ran with fewer workers than pg_fastckpt.recovery_workers: no free background worker slot",
						fc_short_rebuilds),
				 errhint("Raise max_worker_processes.")));
	return true;
}

/*
 * Does no database have a fastckpt table (temporary ones aside)?  False
 * also when a database could not be looked at.
 */
static bool
fc_no_fastckpt_tables(List *dbs)
{
	ListCell   *lc;

	foreach(lc, dbs)
	{
		bool		complete;
		int			ntables = 0;

		(void) fc_rebuild_database(lfirst_oid(lc), true, &complete, &ntables);
		if (!complete || ntables > 0)
			return false;
	}
	return true;
}

/* Storages of databases that no longer exist (dropped, or never kept). */
typedef struct FcOrphanScan
{
	List	   *live_dbs;
	List	   *orphan_dbs;
} FcOrphanScan;

static void
fc_collect_orphan_db(FcTable *tbl, void *arg)
{
	FcOrphanScan *scan = (FcOrphanScan *) arg;

	if (!list_member_oid(scan->live_dbs, tbl->key.dbid) &&
		!list_member_oid(scan->orphan_dbs, tbl->key.dbid))
		scan->orphan_dbs = lappend_oid(scan->orphan_dbs, tbl->key.dbid);
}

static void
fc_drop_orphan_databases(List *dbs)
{
	FcOrphanScan scan = {dbs, NIL};
	ListCell   *lc;

	fc_table_foreach(fc_collect_orphan_db, &scan);
	foreach(lc, scan.orphan_dbs)
	{
		ereport(LOG,
				(errmsg("pg_fastckpt: discarding the log's tables of database %u, which no longer exists",
						lfirst_oid(lc))));
		fc_table_drop_database(lfirst_oid(lc));
	}
}

/*
 * Replay, database by database, the records from each one's first CALL
 * record on, in commit order (call_replay.c).  A database whose calls
 * could not all be repeated, or whose replay crashed the server too many
 * times in a row (attempts.c), keeps its tables closed; the others
 * open (one role's routine must not close every database).  False, with
 * the reason in error, if too many are closed for the gate to tell them
 * apart.
 */
static bool
fc_replay_all_serial(List *serial, uint64 end_lsn, char *error, size_t errlen)
{
	ListCell   *lc;

	foreach(lc, serial)
	{
		FcSerialDb *db = (FcSerialDb *) lfirst(lc);
		FcSerialResult result;
		char	   *attempt_path;
		bool		crashed;
		bool		ok;

		if (db->nentries == 0)
			continue;
		fc_gate_note_call_db(db->dbid);
		attempt_path = fc_call_replay_attempt_path(db->dbid);
		crashed = fc_attempt_begin(attempt_path, db->dbid, db->entries[0].lsn) > FC_REPLAY_ATTEMPTS_MAX;
		if (crashed)
		{
			snprintf(error, errlen,
					 "database %u: the server crashed %d times in a row while its logged calls were replayed",
					 db->dbid, FC_REPLAY_ATTEMPTS_MAX);
			fc_attempt_keep(attempt_path);	/* until the postmaster restarts */
			ok = false;
		}
		else
		{
			ok = fc_replay_serial_database(db, end_lsn, &result, error, errlen);
			fc_attempt_end(attempt_path);
		}
		if (!ok)
		{
			if (!list_member_oid(fc_database_list(), db->dbid))
			{
				ereport(LOG,
						(errmsg("pg_fastckpt: database %u was dropped during recovery", db->dbid)));
				continue;
			}
			/* never open tables without an acknowledged commit */
			ereport(WARNING,
					(errcode(crashed ? ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE : ERRCODE_DATA_CORRUPTED),
					 errmsg("pg_fastckpt: startup recovery failed for database %u; its fastckpt tables stay closed",
							db->dbid),
					 crashed ?
					 errdetail("%s: the server log names the process that ended each time (a call's replay, or another process).", error) :
					 errdetail("A logged call of a registered routine could not be repeated: %s", error),
					 errhint("The tables of other databases open, but no fastckpt checkpoint is taken, and the log is kept whole, "
							 "until this database's tables open or it is dropped. %s",
							 crashed ? "Fix the cause and restart the server: until then its calls are not replayed again." :
							 "Put back what the call needs (the routine as it was, its role and privileges) and restart the server.")));
			if (!fc_gate_close_database(db->dbid, error))
			{
				char	   *last = pstrdup(error);

				snprintf(error, errlen, "the tables of more databases than can be kept closed apart; the last: %s", last);
				return false;
			}
			continue;
		}
		fc_recovery_stats_add_calls(result.calls, result.calls_mismatched, result.seconds);
		if (result.calls_mismatched > 0)
		{
			/* the checkpoint writer takes it once it starts (none if a database is closed) */
			ereport(LOG,
					(errmsg("pg_fastckpt: database %u: %llu calls were not repeated exactly and were accepted (pg_fastckpt.recovery_accept_call_mismatch); a checkpoint makes that final",
							db->dbid, (unsigned long long) result.calls_mismatched)));
			fc_ckpt_request_quietly();
		}
		ereport(LOG,
				(errmsg("pg_fastckpt: database %u: %llu calls and %llu row-image records replayed in commit order in %.3f s (%llu rows, %llu index rebuilds)",
						db->dbid, (unsigned long long) result.calls,
						(unsigned long long) result.values_records, result.seconds,
						(unsigned long long) result.rows,
						(unsigned long long) result.index_rebuilds)));
	}
	return true;
}

/*
 * Last, on top of everything committed: the rows of transactions still
 * prepared (txn/prepared.c), and the indexes of the databases where they
 * inserted rows, rebuilt again to hold those.
 */
static bool
fc_restore_prepared(char *error, size_t errlen)
{
	List	   *reindex = NIL;
	int			restored;

	if (!fc_prepared_restore(&reindex, &restored, error, errlen) ||
		(reindex != NIL && !fc_rebuild_all_indexes(reindex, error, errlen)))
		return false;
	if (restored > 0)
		ereport(LOG,
				(errmsg("pg_fastckpt: the rows of %d prepared transactions were put back", restored)));
	return true;
}

/* Does any database have logged calls to replay? */
static bool
fc_serial_calls_exist(List *serial)
{
	ListCell   *lc;

	foreach(lc, serial)
		if (((FcSerialDb *) lfirst(lc))->nentries > 0)
			return true;
	return false;
}

static double
fc_seconds_since(TimestampTz start)
{
	return (double) TimestampDifferenceMilliseconds(start, GetCurrentTimestamp()) / 1000.0;
}

static void fc_recovery_idle(void) pg_attribute_noreturn();

/*
 * Startup recovery: load the checkpoint, replay the log, rebuild the
 * indexes, replay the calls, then open the gate; or fail it with the
 * reason and return.
 */
static void
fc_recover(void)
{
	List	   *dbs;
	TimestampTz start;
	TimestampTz index_start;
	FcReplayResult res;
	FcCkptLoadResult load;
	char		error[512];
	char		aside[MAXPGPATH];
	int			attempt;

	{
		start = GetCurrentTimestamp();
		fc_recovery_stats_begin();
		ereport(LOG, (errmsg("pg_fastckpt: startup recovery started")));
		attempt = fc_attempt_begin(FC_RECOVERY_ATTEMPT_PATH, InvalidOid, 0);
		fc_attempt_join(FC_RECOVERY_ATTEMPT_PATH);
		if (attempt > FC_RECOVERY_ATTEMPTS_MAX)
		{
			/* rather than crash-restart for ever, with no table usable */
			snprintf(error, sizeof(error),
					 "the server crashed %d times in a row while startup recovery ran",
					 FC_RECOVERY_ATTEMPTS_MAX);
			ereport(WARNING,
					(errmsg("pg_fastckpt: startup recovery failed; fastckpt tables stay closed"),
					 errdetail("%s.", error),
					 errhint("The server log names the process that ended each time (for one, a routine in an index expression that takes all memory when the index is rebuilt). "
							 "The checkpoint and the log are kept: fix the cause and restart the server; until then recovery is not tried again.")));
			fc_attempt_keep(FC_RECOVERY_ATTEMPT_PATH);	/* until the postmaster restarts */
			fc_gate_fail(error);
			fc_recovery_idle();
		}

		if (!fc_timeline_matches(error, sizeof(error)))
		{
			/*
			 * Never open tables older than the rest of the database; with no
			 * fastckpt table in any database, nothing can be older.
			 */
			if (!fc_no_fastckpt_tables(fc_database_list()))
			{
				ereport(WARNING,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("pg_fastckpt: startup recovery refused; fastckpt tables stay closed"),
						 errdetail("%s", error),
						 errhint("To open the tables as pg_fastckpt's files hold them, remove the file \"%s\" and restart; "
								 "to start them empty (and restore them from a dump), move pg_fastckpt/ aside and restart.",
								 FC_TIMELINE_PATH)));
				fc_gate_fail(error);
				fc_recovery_idle();
			}
			if (!fc_timeline_set_aside(aside, sizeof(aside), error, sizeof(error)))
			{
				ereport(WARNING,
						(errcode(ERRCODE_IO_ERROR),
						 errmsg("pg_fastckpt: startup recovery refused; fastckpt tables stay closed"),
						 errdetail("No database has a fastckpt table, but the stale files could not be moved aside: %s", error)));
				fc_gate_fail(error);
				fc_recovery_idle();
			}
			ereport(LOG,
					(errmsg("pg_fastckpt: no database has a fastckpt table: the stale files under pg_fastckpt/ were moved to \"%s\", and recovery starts empty",
							aside)));
		}
		if (!fc_ckpt_load(&load, error, sizeof(error)))
		{
			/* never open the tables empty or partial: stay closed */
			ereport(WARNING,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("pg_fastckpt: startup recovery failed; fastckpt tables stay closed"),
					 errdetail("%s", error),
					 errhint("The files under pg_fastckpt/ are left as they are. If the detail names an I/O error, "
							 "repair the device and restart first: the files may be whole. Otherwise restore them "
							 "from a backup, or, losing every committed row, move pg_fastckpt/ aside to start "
							 "with empty fastckpt tables.")));
			fc_gate_fail(error);
			fc_recovery_idle();
		}
		fc_recovery_stats_set_load((int64) load.seq, (int64) load.csn, load.fell_back,
								   load.workers, (int64) load.bytes, (int64) load.rows,
								   (int64) load.deltas, load.seconds);
		if (load.found)
			ereport(LOG,
					(errmsg("pg_fastckpt: checkpoint %llu loaded in %.3f s by %d workers: %llu bytes, %llu rows",
							(unsigned long long) load.seq, load.seconds, load.workers,
							(unsigned long long) load.bytes, (unsigned long long) load.rows)));
		fc_ckpt_note_loaded(&load);

		fc_replay_log(&res, load.found ? load.start_lsn : fc_log_first_lsn(),
					  load.found ? load.csn : 0);
		fc_recovery_stats_set_replay((int64) (res.end_lsn - res.start_lsn),
									 (int64) (res.records[FC_REC_VALUES] + res.records[FC_REC_CALL] +
											  res.records[FC_REC_DDL] + res.records[FC_REC_ABORT]),
									 (int64) res.records_applied,
									 (int64) res.records_skipped,
									 (int64) res.rows_applied, res.workers, res.seconds);
		ereport(LOG,
				(errmsg("pg_fastckpt: log replayed in %.3f s (processes: %d): %llu bytes, %llu records applied, %llu skipped (aborted or not committed), %llu rows",
						res.seconds, res.workers, (unsigned long long) (res.end_lsn - res.start_lsn),
						(unsigned long long) res.records_applied,
						(unsigned long long) res.records_skipped,
						(unsigned long long) res.rows_applied)));

		dbs = fc_database_list();
		fc_drop_orphan_databases(dbs);
		fc_log_start(res.end_lsn, res.next_csn);
		/* the calls replayed stay in the log until a checkpoint holds them */
		fc_ckpt_note_call(res.max_call_csn);
		/* with none, catalog changes need not wait for the rest */
		if (!fc_serial_calls_exist(res.serial))
			fc_gate_note_no_calls();

		fc_ckpt_pause_point(FC_PAUSE_REBUILD);
		index_start = GetCurrentTimestamp();
		if (!fc_rebuild_all_indexes(dbs, error, sizeof(error)))
		{
			/* never open the tables with an index that misses rows */
			ereport(WARNING,
					(errcode(ERRCODE_INDEX_CORRUPTED),
					 errmsg("pg_fastckpt: startup recovery failed; fastckpt tables stay closed"),
					 errdetail("%s", error),
					 errhint("Fix the cause shown in the server log and restart the server; the checkpoint and the log are kept.")));
			fc_gate_fail(error);
			fc_recovery_idle();
		}
		/* a crash while calls replay counts for their database alone */
		fc_attempt_rekey(FC_RECOVERY_ATTEMPT_PATH, 1);
		if (!fc_replay_all_serial(res.serial, res.end_lsn, error, sizeof(error)))
		{
			/* never open the tables without an acknowledged commit */
			ereport(WARNING,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("pg_fastckpt: startup recovery failed; fastckpt tables stay closed"),
					 errdetail("The logged calls of a registered routine could not all be replayed: %s", error),
					 errhint("The checkpoint and the log are kept. Put back what the calls need (the routines as they were, their roles and privileges) and restart the server.")));
			fc_gate_fail(error);
			fc_recovery_idle();
		}

		fc_attempt_rekey(FC_RECOVERY_ATTEMPT_PATH, 0);

		if (!fc_restore_prepared(error, sizeof(error)))
		{
			/* never open the tables without a prepared transaction's rows */
			ereport(WARNING,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("pg_fastckpt: startup recovery failed; fastckpt tables stay closed"),
					 errdetail("The rows of a prepared transaction could not be put back: %s", error),
					 errhint("The files under pg_fastckpt/ are kept as they are. Fix the cause and restart the server.")));
			fc_gate_fail(error);
			fc_recovery_idle();
		}

		/* testing only: keep the gate closed a while longer */
		while (fc_test_recovery_delay_ms > 0 &&
			   fc_seconds_since(start) * 1000.0 < fc_test_recovery_delay_ms)
		{
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 100L, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
			fc_recovery_exit_if_shutdown();
		}
		fc_recovery_stats_finish(fc_seconds_since(index_start), fc_seconds_since(start));
		{
			FcRecoveryStats rec;

			/* the calls replayed stay in the log until the next checkpoint */
			fc_recovery_stats_get(&rec);
			fc_ckpt_set_calls_base(fc_log_calls_logged() - (uint64) Max(rec.calls_replayed, 0));
		}
		fc_timeline_remember();
		fc_gate_open();
		fc_attempts_end_all();
		ereport(LOG,
				(errmsg("pg_fastckpt: startup recovery finished in %.3f s; fastckpt tables are open",
						fc_seconds_since(start))));
	}
}

void
fc_recovery_leader_main(Datum arg)
{
	FcRecoveryStats before;
	char		reason[256];

	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	fc_recovery_settings();

	fc_recovery_stats_get(&before);
	if (fc_gate_is_open() || fc_gate_failed(reason, sizeof(reason)))
		;						/* a restarted leader: recovery is over */
	else if (before.started_at != 0 && fc_recovery_was_interrupted() &&
			 !restart_after_crash)
	{
		/* a restart of every process would shut the server down instead */
		ereport(WARNING,
				(errmsg("pg_fastckpt: startup recovery was stopped by a termination request; fastckpt tables stay closed"),
				 errhint("Restart the server to recover them (restart_after_crash is off, so recovery cannot run again by itself).")));
		fc_gate_fail("startup recovery was stopped by a termination request (pg_terminate_backend); restart the server");
	}
	else if (before.started_at != 0 && fc_recovery_was_interrupted())
	{
		/*
		 * Restarted after a termination request (not a shutdown: the
		 * postmaster does not restart workers then) stopped recovery
		 * midway.  The store is half built; exit code 2 makes the
		 * postmaster restart every server process with fresh shared
		 * memory, and recovery runs again from the start.
		 */
		ereport(LOG,
				(errmsg("pg_fastckpt: restarting the server's processes to run the interrupted startup recovery again")));
		proc_exit(2);
	}
	else if (before.started_at != 0)
	{
		/*
		 * A leader before us exited during recovery, leaving the store half
		 * built: never run it again over that.
		 */
		ereport(WARNING,
				(errmsg("pg_fastckpt: startup recovery failed; fastckpt tables stay closed"),
				 errdetail("The process running startup recovery exited before it finished."),
				 errhint("The server log above says why. Fix the cause and restart the server; the checkpoint and the log are kept.")));
		fc_gate_fail("startup recovery was interrupted: the process running it exited (see the server log)");
	}
	else
	{
		MemoryContext cxt = CurrentMemoryContext;

		PG_TRY();
		{
			fc_recover();
		}
		PG_CATCH();
		{
			ErrorData  *edata;

			/* report it, keep the tables closed, and stay to answer barriers */
			MemoryContextSwitchTo(cxt);
			edata = CopyErrorData();
			FlushErrorState();
			AbortOutOfAnyTransaction();
			LWLockReleaseAll();
			ConditionVariableCancelSleep();
			ereport(WARNING,
					(errcode(edata->sqlerrcode),
					 errmsg("pg_fastckpt: startup recovery failed; fastckpt tables stay closed"),
					 errdetail("%s%s%s", edata->message, edata->detail ? ": " : "",
							   edata->detail ? edata->detail : ""),
					 errhint("%s", edata->hint ? edata->hint :
							 "Fix the cause and restart the server; the checkpoint and the log are kept.")));
			snprintf(reason, sizeof(reason), "%s%s%s", edata->message,
					 edata->detail ? ": " : "", edata->detail ? edata->detail : "");
			fc_gate_fail(reason);
		}
		PG_END_TRY();
	}
	fc_recovery_idle();
}

/*
 * The leader stays (see the file header), answering barriers and
 * reloads, until shutdown.
 */
static void
fc_recovery_idle(void)
{
	/* recovery is over (or failed): it crashed nothing */
	fc_attempts_end_all();
	for (;;)
	{
		/*
		 * Checked before sleeping: a request that arrived during recovery
		 * had its latch wakeup consumed by a wait there.
		 */
		if (ShutdownRequestPending)
			fc_static_worker_exit();
		/* absorbs ProcSignalBarriers, which DROP DATABASE waits for */
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_EXIT_ON_PM_DEATH, -1L,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}

/* One index to rebuild, and what orders the work: its table's size */
typedef struct FcIndexJob
{
	Oid			relid;
	Oid			indexid;
	uint64		nslots;
} FcIndexJob;

static int
fc_index_job_cmp(const void *a, const void *b)
{
	const FcIndexJob *x = (const FcIndexJob *) a;
	const FcIndexJob *y = (const FcIndexJob *) b;

	if (x->nslots != y->nslots)
		return x->nslots > y->nslots ? -1 : 1;
	if (x->indexid != y->indexid)
		return x->indexid < y->indexid ? -1 : 1;
	return 0;
}

/*
 * The fastckpt tables of this database, in a transaction with a snapshot.
 * Not temporary tables: their sessions are gone and PostgreSQL removed
 * their files, so their storages go as stale (building their indexes
 * failed and kept every table closed).
 */
static List *
fc_fastckpt_relids(void)
{
	Oid			amoid = get_table_am_oid(FASTCKPT_AM_NAME, true);
	List	   *relids = NIL;
	Relation	classrel;
	TableScanDesc scan;
	HeapTuple	tup;

	if (!OidIsValid(amoid))
		return NIL;
	classrel = table_open(RelationRelationId, AccessShareLock);
	scan = table_beginscan_catalog(classrel, 0, NULL);
	while (HeapTupleIsValid(tup = heap_getnext(scan, ForwardScanDirection)))
	{
		Form_pg_class cls = (Form_pg_class) GETSTRUCT(tup);

		if (cls->relam == amoid && cls->relkind == RELKIND_RELATION &&
			cls->relpersistence != RELPERSISTENCE_TEMP)
			relids = lappend_oid(relids, cls->oid);
	}
	table_endscan(scan);
	table_close(classrel, AccessShareLock);
	return relids;
}

/*
 * The fastckpt tables of this database and their indexes, largest table
 * first (every worker of the database computes the same list).  Each
 * table's storage is looked up, or created empty (fc_storage_adopt says
 * so); with reconcile, the storages are remembered in seen.
 */
static FcIndexJob *
fc_list_index_jobs(int *njobs, int *ntables, bool reconcile, List **seen)
{
	List	   *relids;
	ListCell   *lc;
	FcIndexJob *jobs = NULL;
	int			n = 0;
	int			cap = 0;

	*ntables = 0;
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	relids = fc_fastckpt_relids();
	foreach(lc, relids)
	{
		Relation	rel = try_table_open(lfirst_oid(lc), AccessShareLock);
		List	   *indexes;
		ListCell   *ilc;
		FcTable    *tbl;

		if (rel == NULL)
			continue;			/* dropped meanwhile */
		(*ntables)++;
		/* a table that had none is created empty (and reported) here */
		tbl = fc_table_for_rel(rel);
		if (reconcile)
		{
			MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

			*seen = lappend(*seen, tbl);
			MemoryContextSwitchTo(old);
		}
		indexes = RelationGetIndexList(rel);
		foreach(ilc, indexes)
		{
			if (n == cap)
			{
				cap = Max(cap * 2, 16);
				jobs = jobs ? repalloc(jobs, cap * sizeof(FcIndexJob)) :
					MemoryContextAlloc(TopMemoryContext, cap * sizeof(FcIndexJob));
			}
			jobs[n].relid = RelationGetRelid(rel);
			jobs[n].indexid = lfirst_oid(ilc);
			jobs[n].nslots = fc_table_nslots(tbl);
			n++;
		}
		list_free(indexes);
		table_close(rel, AccessShareLock);
	}
	PopActiveSnapshot();
	CommitTransactionCommand();

	if (n > 1)
		qsort(jobs, n, sizeof(FcIndexJob), fc_index_job_cmp);
	*njobs = n;
	return jobs;
}

/*
 * Rebuild one index from its table's recovered rows: empty the index file
 * and build it again, in place (no new relfilenode, so no catalog churn at
 * every start).  Nobody else can read or write the table before the gate
 * opens, but sessions may already hold locks on it while they wait there
 * (a DML statement locks its tables before the planner reaches the gate):
 * so the table is locked as a reader locks it, which conflicts with none
 * of theirs.  PostgreSQL's parallel build, whose workers take ShareLock,
 * only if ShareLock is free now: then sessions that come later wait for
 * it before they reach the gate, not the other way round.  Statements
 * that take stronger locks wait for the gate first (fc_gate_wait_quietly).
 */
typedef struct FcRebuildContext
{
	char		index[2 * NAMEDATALEN + 2];
	char		table[2 * NAMEDATALEN + 2];
} FcRebuildContext;

/*
 * Name the index in errors of its rebuild: a user function in its
 * expression may fail here, run with the database's settings rather than
 * those of the session that created the index (its search_path above all).
 */
static void
fc_rebuild_error_context(void *arg)
{
	FcRebuildContext *cx = (FcRebuildContext *) arg;

	errcontext("rebuilding index \"%s\" of fastckpt table \"%s\" at startup (search_path: %s)",
			   cx->index, cx->table, namespace_search_path);
}

static void
fc_qualified_name(Relation rel, char *buf, size_t len)
{
	char	   *nsp = get_namespace_name(RelationGetNamespace(rel));

	snprintf(buf, len, "%s.%s", nsp ? nsp : "?", RelationGetRelationName(rel));
}

/*
 * An index that is not valid (a CREATE INDEX CONCURRENTLY or REINDEX
 * CONCURRENTLY that failed or was cut short) answers no query and may not
 * hold what its constraint asks or what its expressions can compute: the
 * build failed on rows that break it, a duplicate key or a division by
 * zero.  Rebuild it whole without its checks, or, should its expressions
 * still fail, empty: either way it cannot keep the tables closed.  Whether
 * writers then insert into it (and check their rows against it) is, as on
 * heap, up to whether PostgreSQL had marked it ready; a call that writes
 * a table with a ready one is logged as row images (determinism.c).
 */
static IndexInfo *
fc_unchecked_index_info(Relation ind)
{
	IndexInfo  *info = BuildIndexInfo(ind);

	info->ii_Unique = false;
	info->ii_ExclusionOps = NULL;
	info->ii_ExclusionProcs = NULL;
	info->ii_ExclusionStrats = NULL;
	return info;
}

/*
 * index_build(), without its update of the pg_class statistics of the
 * table and the index, which stay as they were before the restart.
 * PostgreSQL updates those rows in place, which waits for any transaction
 * that changed or locked them, for ever for a prepared one (a GRANT, an
 * ALTER INDEX ... SET; h49), including one prepared while the rebuild runs
 * (h51); and it needs a ShareUpdateExclusiveLock on the table, which a
 * prepared transaction may hold.  Nor does it check exclusion constraints
 * again: the rows met them before the restart.
 */
static void
fc_build_index(Relation rel, Relation ind, IndexInfo *info, bool parallel)
{
	Oid			save_userid;
	int			save_sec;
	int			save_nestlevel;

	if (parallel && ind->rd_rel->relam == BTREE_AM_OID)
		info->ii_ParallelWorkers = plan_create_index_workers(RelationGetRelid(rel),
															 RelationGetRelid(ind));
	/* as index_build(): the owner's rights, settings local to the build */
	GetUserIdAndSecContext(&save_userid, &save_sec);
	SetUserIdAndSecContext(rel->rd_rel->relowner,
						   save_sec | SECURITY_RESTRICTED_OPERATION);
	save_nestlevel = NewGUCNestLevel();
	(void) ind->rd_indam->ambuild(rel, ind, info);
	AtEOXact_GUC(false, save_nestlevel);
	SetUserIdAndSecContext(save_userid, save_sec);
}

/*
 * Rebuild an index in a subtransaction, and if that fails (a user function
 * in its expression or predicate raises an error, or waits longer than
 * pg_fastckpt.recovery_index_timeout; a constraint no longer holds), leave
 * it empty -- a predicate no row passes: nothing evaluated -- and not
 * valid, with a warning.  One table owner's index must not keep every
 * database's tables closed (h36 B).  A valid index is so left as a failed
 * CREATE INDEX CONCURRENTLY leaves one: queries stop using it, writers go
 * on maintaining it, and REINDEX rebuilds it.
 */
static void
fc_rebuild_index_guarded(Relation rel, Relation ind, bool parallel)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	bool		valid = ind->rd_index->indisvalid;
	IndexInfo  *info;

	BeginInternalSubTransaction(NULL);
	PG_TRY();
	{
		/* the parallel workers' lock is WAL-logged under this subxact's id */
		if (parallel)
			(void) GetCurrentTransactionId();
		if (fc_recovery_index_timeout_ms > 0)
			enable_timeout_after(STATEMENT_TIMEOUT, fc_recovery_index_timeout_ms);
		fc_build_index(rel, ind, valid ? BuildIndexInfo(ind) : fc_unchecked_index_info(ind),
					   parallel);
		disable_timeout(STATEMENT_TIMEOUT, false);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		disable_timeout(STATEMENT_TIMEOUT, false);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
		if (valid)
			ereport(WARNING,
					(errmsg("pg_fastckpt: index \"%s\" of fastckpt table \"%s\" could not be rebuilt at startup; it is marked not valid and left empty",
							RelationGetRelationName(ind), RelationGetRelationName(rel)),
					 errdetail("The rebuild failed with: %s", edata->message),
					 errhint("Fix the cause and REINDEX the index.")));
		else
			ereport(WARNING,
					(errmsg("pg_fastckpt: invalid index \"%s\" could not be rebuilt at startup, and is left empty",
							RelationGetRelationName(ind)),
					 errdetail("The rebuild failed with: %s", edata->message),
					 errhint("Drop the index, as after any failed CREATE INDEX CONCURRENTLY or REINDEX CONCURRENTLY.")));
		FreeErrorData(edata);

		RelationTruncate(ind, 0);
		info = fc_unchecked_index_info(ind);
		info->ii_Predicate = list_make1(makeBoolConst(false, false));
		fc_build_index(rel, ind, info, false);
		if (valid)
		{
			index_set_state_flags(RelationGetRelid(ind), INDEX_DROP_CLEAR_VALID);
			CommandCounterIncrement();
		}
	}
	PG_END_TRY();
}

static bool
fc_rebuild_index(const FcIndexJob *job)
{
	Relation	rel;
	Relation	ind;
	bool		built = false;
	FcRebuildContext cx;
	ErrorContextCallback errcb;

	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	rel = try_table_open(job->relid, AccessShareLock);
	if (rel != NULL)
	{
		ind = try_relation_open(job->indexid, RowExclusiveLock);
		if (ind != NULL)
		{
			/*
			 * Parallel workers take ShareLock on the table (see above), and
			 * (of our lock group) lock the index exclusively: not while
			 * another holds it, as a prepared transaction that read the
			 * table through it does (h48).
			 */
			bool		parallel = ConditionalLockRelation(rel, ShareLock) &&
				ConditionalLockRelation(ind, AccessExclusiveLock);

			fc_qualified_name(rel, cx.table, sizeof(cx.table));
			fc_qualified_name(ind, cx.index, sizeof(cx.index));
			errcb.callback = fc_rebuild_error_context;
			errcb.arg = &cx;
			errcb.previous = error_context_stack;
			error_context_stack = &errcb;

			RelationTruncate(ind, 0);

			/*
			 * Parallel workers take the index's lock, which with wal_level
			 * >= replica is WAL-logged under our xid: have one before the
			 * parallel operation begins, as CREATE INDEX does.
			 */
			if (parallel)
				(void) GetCurrentTransactionId();
			fc_rebuild_index_guarded(rel, ind, parallel);
			error_context_stack = errcb.previous;
			CacheInvalidateRelcache(ind);
			index_close(ind, NoLock);
			built = true;
		}
		table_close(rel, NoLock);
	}
	PopActiveSnapshot();
	CommitTransactionCommand();
	return built;
}

bool
fc_rebuild_one_index(Oid relid, Oid indexid)
{
	FcIndexJob	job;

	job.relid = relid;
	job.indexid = indexid;
	job.nslots = 0;
	return fc_rebuild_index(&job);
}

/* Storages of this database that no fastckpt table in pg_class owns. */
typedef struct FcStaleScan
{
	List	   *seen;
	List	   *stale;
} FcStaleScan;

static void
fc_collect_stale(FcTable *tbl, void *arg)
{
	FcStaleScan *scan = (FcStaleScan *) arg;

	if (tbl->key.dbid == MyDatabaseId && !list_member_ptr(scan->seen, tbl))
	{
		RelFileNode *rnode = palloc(sizeof(RelFileNode));

		rnode->dbNode = tbl->key.dbid;
		rnode->spcNode = tbl->key.spcid;
		rnode->relNode = tbl->key.relnode;
		scan->stale = lappend(scan->stale, rnode);
	}
}

/* Discard the log's storages PostgreSQL no longer has. */
static void
fc_drop_stale_storages(List *seen)
{
	FcStaleScan stale_scan = {seen, NIL};
	ListCell   *lc;

	fc_table_foreach(fc_collect_stale, &stale_scan);
	foreach(lc, stale_scan.stale)
	{
		RelFileNode *rnode = (RelFileNode *) lfirst(lc);

		ereport(LOG,
				(errmsg("pg_fastckpt: database %u: discarding logged storage %u, which no table has any more",
						MyDatabaseId, rnode->relNode)));
		fc_table_drop(rnode);
	}
}

void
fc_recovery_db_main(Datum arg)
{
	dsm_segment *seg;
	FcRebuildShared *shared;
	FcIndexJob *jobs;
	int			njobs;
	int			ntables;
	int			nindexes = 0;
	bool		reconcile;
	List	   *seen = NIL;
	uint32		k;

	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	fc_attempt_join_recovery();
	seg = dsm_attach(DatumGetUInt32(arg));
	if (seg == NULL)
		proc_exit(1);			/* the leader gave up already */
	shared = (FcRebuildShared *) dsm_segment_address(seg);
	BackgroundWorkerInitializeConnectionByOid(shared->dboid, InvalidOid,
											  BGWORKER_BYPASS_ALLOWCONN);
	fc_gate_register_recovery_process();

	if (shared->count_only)
	{
		StartTransactionCommand();
		PushActiveSnapshot(GetTransactionSnapshot());
		shared->ntables = list_length(fc_fastckpt_relids());
		PopActiveSnapshot();
		CommitTransactionCommand();
		pg_atomic_fetch_add_u32(&shared->workers_done, 1);
		dsm_detach(seg);
		proc_exit(0);
	}

	reconcile = (pg_atomic_fetch_add_u32(&shared->reconciler, 1) == 0);
	jobs = fc_list_index_jobs(&njobs, &ntables, reconcile, &seen);
	if (reconcile)
		fc_drop_stale_storages(seen);

	while ((k = pg_atomic_fetch_add_u32(&shared->next_index, 1)) < (uint32) njobs)
	{
		fc_worker_check_interrupts();
		if (fc_rebuild_index(&jobs[k]))
			nindexes++;
	}
	pg_atomic_fetch_add_u32(&shared->indexes_built, nindexes);
	if (reconcile)
		shared->ntables = ntables;
	if (reconcile && ntables > 0)
		ereport(LOG,
				(errmsg("pg_fastckpt: database %u: %d fastckpt tables, %d indexes to rebuild",
						shared->dboid, ntables, njobs)));
	pg_atomic_fetch_add_u32(&shared->workers_done, 1);
	dsm_detach(seg);
	proc_exit(0);
}
