/*-------------------------------------------------------------------------
 *
 * startup.c
 *	  Startup recovery, run by background workers at every postmaster start
 *	  and after every crash-restart cycle.
 *
 * Shared memory does not survive a restart.  The leader loads the newest
 * usable checkpoint with loader workers (ckpt/ckpt_load.c), replays the
 * logical log after it into the arena (replay.c), drops storages of
 * databases that are gone, and opens the log for new records.  Then one
 * worker per database reconciles the storages with the catalogs (a
 * storage PostgreSQL no longer has is discarded) and rebuilds every index
 * of every fastckpt table from the recovered rows -- the indexes are
 * unlogged, so a crash left them empty and a clean restart left them
 * pointing at the previous run's slots.  Only then does the access gate
 * open.
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

#include "catalog/index.h"
#include "catalog/storage.h"
#include "utils/inval.h"
#include "storage/smgr.h"
#include "utils/relcache.h"

#include "pg_fastckpt.h"
#include "ckpt/checkpoint.h"
#include "log/log.h"
#include "recovery/gate.h"
#include "recovery/replay.h"
#include "store/table_store.h"

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
	BackgroundWorkerHandle *handle;
	pid_t		pid;
	char		name[BGW_MAXLEN];

	snprintf(name, sizeof(name), "pg_fastckpt recovery worker for database %u", dboid);
	handle = fc_start_dynamic_worker(BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION,
									 "fc_recovery_db_main", "pg_fastckpt recovery worker",
									 name, ObjectIdGetDatum(dboid));
	if (handle == NULL)
		return false;
	if (WaitForBackgroundWorkerStartup(handle, &pid) != BGWH_STARTED)
		return false;
	(void) WaitForBackgroundWorkerShutdown(handle);
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

static double
fc_seconds_since(TimestampTz start)
{
	return (double) TimestampDifferenceMilliseconds(start, GetCurrentTimestamp()) / 1000.0;
}

static void fc_recovery_idle(void) pg_attribute_noreturn();

void
fc_recovery_leader_main(Datum arg)
{
	List	   *dbs;
	ListCell   *lc;
	TimestampTz start;
	TimestampTz index_start;
	FcReplayResult res;
	FcCkptLoadResult load;
	char		error[512];

	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);

	if (!fc_gate_is_open())
	{
		start = GetCurrentTimestamp();
		fc_recovery_stats_begin();
		ereport(LOG, (errmsg("pg_fastckpt: startup recovery started")));

		if (!fc_ckpt_load(&load, error, sizeof(error)))
		{
			/* never open the tables empty or partial: stay closed */
			ereport(WARNING,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("pg_fastckpt: startup recovery failed; fastckpt tables stay closed"),
					 errdetail("%s", error),
					 errhint("The files under pg_fastckpt/ are left as they are. Restore them from a backup, "
							 "or move pg_fastckpt/ aside to start with empty fastckpt tables.")));
			fc_gate_fail(error);
			fc_recovery_idle();
		}
		fc_recovery_stats_set_load((int64) load.seq, (int64) load.csn, load.fell_back,
								   load.workers, (int64) load.bytes, (int64) load.rows,
								   load.seconds);
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
									 (int64) res.rows_applied, res.seconds);
		ereport(LOG,
				(errmsg("pg_fastckpt: log replayed in %.3f s: %llu bytes, %llu records applied, %llu skipped (aborted or not committed), %llu rows",
						res.seconds, (unsigned long long) (res.end_lsn - res.start_lsn),
						(unsigned long long) res.records_applied,
						(unsigned long long) res.records_skipped,
						(unsigned long long) res.rows_applied)));

		dbs = fc_database_list();
		fc_drop_orphan_databases(dbs);
		fc_log_start(res.end_lsn, res.next_csn);

		index_start = GetCurrentTimestamp();
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
		/* testing only: keep the gate closed a while longer */
		while (fc_test_recovery_delay_ms > 0 &&
			   fc_seconds_since(start) * 1000.0 < fc_test_recovery_delay_ms)
		{
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 100L, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
			if (ShutdownRequestPending)
				proc_exit(0);
		}
		fc_recovery_stats_finish(fc_seconds_since(index_start), fc_seconds_since(start));
		fc_gate_open();
		ereport(LOG,
				(errmsg("pg_fastckpt: startup recovery finished in %.3f s; fastckpt tables are open",
						fc_seconds_since(start))));
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

/*
 * Rebuild every index of one fastckpt table from its recovered rows: empty
 * the index file and build it again, in place (no new relfilenode, so no
 * catalog churn at every start).  Nobody else can use the table before
 * the gate opens.  Returns the number of indexes.
 */
static int
fc_rebuild_table_indexes(Oid relid, List **seen)
{
	Relation	rel = table_open(relid, ShareUpdateExclusiveLock);
	List	   *indexes;
	ListCell   *lc;
	int			nindexes = 0;
	FcTable    *tbl = fc_table_lookup(&rel->rd_node);
	MemoryContext old;

	if (tbl == NULL)
		ereport(WARNING,
				(errmsg("pg_fastckpt: table \"%s\" has no rows in the fastckpt log; it opens empty",
						RelationGetRelationName(rel)),
				 errdetail("Its storage was never logged: the log was removed, or the table came from a template database.")));
	tbl = fc_table_for_rel(rel);
	old = MemoryContextSwitchTo(TopMemoryContext);
	*seen = lappend(*seen, tbl);
	MemoryContextSwitchTo(old);

	indexes = RelationGetIndexList(rel);
	foreach(lc, indexes)
	{
		Relation	ind = index_open(lfirst_oid(lc), RowExclusiveLock);
		IndexInfo  *info = BuildIndexInfo(ind);

		RelationTruncate(ind, 0);
		index_build(rel, ind, info, true, false);
		CacheInvalidateRelcache(ind);
		index_close(ind, NoLock);
		nindexes++;
	}
	list_free(indexes);
	table_close(rel, NoLock);
	return nindexes;
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

void
fc_recovery_db_main(Datum arg)
{
	Oid			dboid = DatumGetObjectId(arg);
	Oid			amoid;
	List	   *relids = NIL;
	ListCell   *lc;
	int			ntables = 0;
	int			nindexes = 0;
	FcStaleScan stale_scan = {NIL, NIL};

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
			nindexes += fc_rebuild_table_indexes(relid, &stale_scan.seen);
			ntables++;
		}
		PopActiveSnapshot();
		CommitTransactionCommand();
	}

	/* the log's storages PostgreSQL no longer has (reconciliation) */
	fc_table_foreach(fc_collect_stale, &stale_scan);
	foreach(lc, stale_scan.stale)
	{
		RelFileNode *rnode = (RelFileNode *) lfirst(lc);

		ereport(LOG,
				(errmsg("pg_fastckpt: database %u: discarding logged storage %u, which no table has any more",
						dboid, rnode->relNode)));
		fc_table_drop(rnode);
	}
	fc_recovery_stats_add(0, ntables, nindexes, 0);
	if (ntables > 0)
		ereport(LOG,
				(errmsg("pg_fastckpt: database %u: %d fastckpt tables ready, %d indexes rebuilt",
						dboid, ntables, nindexes)));
	proc_exit(0);
}
