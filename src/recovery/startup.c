/*-------------------------------------------------------------------------
 *
 * startup.c
 *	  Startup recovery, run by background workers at every postmaster start
 *	  and after every crash-restart cycle.
 *
 * Shared memory does not survive a restart, so the store starts empty while
 * the indexes of fastckpt tables may still hold entries for slots of the
 * previous run (a clean restart keeps unlogged indexes).  Before the access
 * gate opens, one worker per database empties those indexes, so that a
 * reused slot is never reached through a stale entry.  (Reloading rows from
 * checkpoints and the log plugs in here; see DESIGN.md section 8.)
 *
 * The leader stays alive afterwards, doing nothing: a static worker that
 * exits is forgotten by the postmaster, and recovery must run again after
 * a crash-restart, when the postmaster restarts every live static worker.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_database.h"
#include "commands/defrem.h"
#include "commands/vacuum.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "pg_fastckpt.h"
#include "recovery/gate.h"
#include "store/table_store.h"

PGDLLEXPORT void fc_recovery_leader_main(Datum arg);
PGDLLEXPORT void fc_recovery_db_main(Datum arg);

void
fc_register_startup_worker(void)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = 1;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "pg_fastckpt");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "fc_recovery_leader_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "pg_fastckpt recovery leader");
	snprintf(worker.bgw_type, BGW_MAXLEN, "pg_fastckpt recovery leader");
	RegisterBackgroundWorker(&worker);
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

		if (!db->datallowconn)
			continue;
		old = MemoryContextSwitchTo(outer);
		dbs = lappend_oid(dbs, db->oid);
		MemoryContextSwitchTo(old);
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	CommitTransactionCommand();
	return dbs;
}

/* Run the per-database worker and wait for it; false if none could start. */
static bool
fc_run_db_worker(Oid dboid)
{
	BackgroundWorker worker;
	BackgroundWorkerHandle *handle;
	pid_t		pid;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "pg_fastckpt");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "fc_recovery_db_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "pg_fastckpt recovery worker for database %u", dboid);
	snprintf(worker.bgw_type, BGW_MAXLEN, "pg_fastckpt recovery worker");
	worker.bgw_main_arg = ObjectIdGetDatum(dboid);
	worker.bgw_notify_pid = MyProcPid;

	if (!RegisterDynamicBackgroundWorker(&worker, &handle))
		return false;
	if (WaitForBackgroundWorkerStartup(handle, &pid) != BGWH_STARTED)
		return false;
	(void) WaitForBackgroundWorkerShutdown(handle);
	return true;
}

void
fc_recovery_leader_main(Datum arg)
{
	List	   *dbs;
	ListCell   *lc;
	TimestampTz start;

	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);

	if (!fc_gate_is_open())
	{
		start = GetCurrentTimestamp();
		fc_recovery_stats_begin();
		ereport(LOG, (errmsg("pg_fastckpt: startup recovery started")));

		dbs = fc_database_list();
		foreach(lc, dbs)
		{
			Oid			dboid = lfirst_oid(lc);

			/* no free worker slot: retry until one frees up */
			while (!fc_run_db_worker(dboid))
			{
				ereport(LOG,
						(errmsg("pg_fastckpt: no background worker slot free for recovery of database %u, retrying",
								dboid),
						 errhint("Raise max_worker_processes.")));
				(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
								 1000, PG_WAIT_EXTENSION);
				ResetLatch(MyLatch);
				CHECK_FOR_INTERRUPTS();
				if (ShutdownRequestPending)
					proc_exit(1);
			}
			fc_recovery_stats_add(1, 0, 0, 1);
		}
		fc_recovery_stats_finish((double) TimestampDifferenceMilliseconds(start, GetCurrentTimestamp()) / 1000.0);
		fc_gate_open();
		ereport(LOG,
				(errmsg("pg_fastckpt: startup recovery finished in %.3f s; fastckpt tables are open",
						(double) TimestampDifferenceMilliseconds(start, GetCurrentTimestamp()) / 1000.0)));
	}

	for (;;)
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_EXIT_ON_PM_DEATH, -1L,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		/* absorbs ProcSignalBarriers, which DROP DATABASE waits for */
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		if (ShutdownRequestPending)
			proc_exit(0);
	}
}

static bool
fc_remove_all(ItemPointer itemptr, void *state)
{
	return true;
}

/* Empty every index of one fastckpt table; returns the number of indexes. */
static int
fc_reset_table_indexes(Oid relid)
{
	Relation	rel = table_open(relid, ShareUpdateExclusiveLock);
	Relation   *indrels;
	int			nindexes;

	(void) fc_table_for_rel(rel);	/* the (empty) store of this run */
	vac_open_indexes(rel, RowExclusiveLock, &nindexes, &indrels);
	for (int i = 0; i < nindexes; i++)
	{
		IndexVacuumInfo ivinfo;
		IndexBulkDeleteResult *stats;

		memset(&ivinfo, 0, sizeof(ivinfo));
		ivinfo.index = indrels[i];
		ivinfo.message_level = DEBUG2;
		ivinfo.num_heap_tuples = 0;
		stats = index_bulk_delete(&ivinfo, NULL, fc_remove_all, NULL);
		stats = index_vacuum_cleanup(&ivinfo, stats);
		if (stats)
			pfree(stats);
	}
	vac_close_indexes(nindexes, indrels, NoLock);
	table_close(rel, NoLock);
	return nindexes;
}

void
fc_recovery_db_main(Datum arg)
{
	Oid			dboid = DatumGetObjectId(arg);
	Oid			amoid;
	List	   *relids = NIL;
	ListCell   *lc;
	int			ntables = 0;
	int			nindexes = 0;

	fc_in_recovery_worker = true;
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);

	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	amoid = get_table_am_oid(FASTCKPT_AM_NAME, true);
	if (OidIsValid(amoid))
	{
		Relation	classrel = table_open(RelationRelationId, AccessShareLock);
		TableScanDesc scan = table_beginscan_catalog(classrel, 0, NULL);
		HeapTuple	tup;

		while (HeapTupleIsValid(tup = heap_getnext(scan, ForwardScanDirection)))
		{
			Form_pg_class cls = (Form_pg_class) GETSTRUCT(tup);

			if (cls->relam == amoid && cls->relkind == RELKIND_RELATION)
			{
				MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

				relids = lappend_oid(relids, cls->oid);
				MemoryContextSwitchTo(old);
			}
		}
		table_endscan(scan);
		table_close(classrel, AccessShareLock);
	}
	PopActiveSnapshot();
	CommitTransactionCommand();

	foreach(lc, relids)
	{
		Oid			relid = lfirst_oid(lc);

		StartTransactionCommand();
		PushActiveSnapshot(GetTransactionSnapshot());
		if (SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)))
		{
			nindexes += fc_reset_table_indexes(relid);
			ntables++;
		}
		PopActiveSnapshot();
		CommitTransactionCommand();
	}
	fc_recovery_stats_add(0, ntables, nindexes, 0);
	if (ntables > 0)
		ereport(LOG,
				(errmsg("pg_fastckpt: database %u: %d fastckpt tables ready, %d indexes reset",
						dboid, ntables, nindexes)));
	proc_exit(0);
}
