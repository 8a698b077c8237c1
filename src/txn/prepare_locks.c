/*-------------------------------------------------------------------------
 *
 * prepare_locks.c
 *	  Refuse PREPARE TRANSACTION while holding table locks that would keep
 *	  fastckpt tables closed after a restart.
 *
 * A prepared transaction keeps its heavyweight locks across a restart, and
 * COMMIT PREPARED waits for startup recovery.  Recovery reads every
 * fastckpt table (AccessShareLock), refills its indexes and replays logged
 * calls (RowExclusiveLock on tables and indexes).  A prepared lock that
 * conflicts with those (SHARE or stronger: LOCK TABLE, CREATE INDEX,
 * REINDEX, ALTER INDEX ... SET TABLESPACE) would stall recovery until
 * somebody rolled the prepared transaction back, undoing what it promised
 * to commit.  So would a prepared change of the pg_index row of such a
 * table's index (ALTER TABLE ... CLUSTER ON, under a weaker lock): an index
 * that recovery cannot rebuild is marked not valid there, which waits for
 * that row, as would a prepared row lock on it (SELECT ... FROM pg_index
 * FOR UPDATE).  (Its pg_class rows recovery leaves alone.)  And so would a
 * lock on a database that a connection waits for (ALTER DATABASE ...
 * RENAME): recovery's workers connect to every database.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/indexing.h"
#include "catalog/pg_database.h"
#include "catalog/pg_index.h"
#include "commands/dbcommands.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"

#include "access/fastckpt_am.h"
#include "txn/write_set.h"

/* Modes that conflict with RowExclusiveLock, the strongest recovery takes. */
static LOCKMASK
fc_recovery_blocking_modes(void)
{
	LOCKMASK	mask = 0;

	for (LOCKMODE mode = ShareLock; mode <= AccessExclusiveLock; mode++)
		mask |= LOCKBIT_ON(mode);
	return mask;
}

/* The fastckpt table a relation is or indexes, or InvalidOid. */
static Oid
fc_fastckpt_table_of(Oid relid)
{
	if (get_rel_relkind(relid) == RELKIND_INDEX)
		relid = IndexGetRelation(relid, true);
	return fc_relid_is_fastckpt(relid) ? relid : InvalidOid;
}

/* Did this transaction change the pg_index row of one of table's indexes? */
static bool
fc_changed_index_rows(Oid table)
{
	Relation	pg_index = table_open(IndexRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	bool		changed = false;

	ScanKeyInit(&key, Anum_pg_index_indrelid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(table));
	scan = systable_beginscan(pg_index, IndexIndrelidIndexId, true, NULL, 1, &key);
	while (!changed && HeapTupleIsValid(tup = systable_getnext(scan)))
		changed = TransactionIdIsCurrentTransactionId(HeapTupleHeaderGetXmin(tup->t_data));
	systable_endscan(scan);
	table_close(pg_index, AccessShareLock);
	return changed;
}

void
fc_prepare_check_table_locks(void)
{
	LOCKMASK	blocking = fc_recovery_blocking_modes();
	LockData   *data = GetLockStatusData();

	for (int i = 0; i < data->nelements; i++)
	{
		LockInstanceData *inst = &data->locks[i];
		Oid			table;

		/* connections take RowExclusiveLock on their database */
		if (inst->pid == MyProcPid &&
			inst->locktag.locktag_type == LOCKTAG_OBJECT &&
			inst->locktag.locktag_field2 == DatabaseRelationId &&
			(inst->holdMask & blocking) != 0)
		{
			char	   *dbname = get_database_name(inst->locktag.locktag_field3);

			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot PREPARE a transaction that holds a lock on database \"%s\" that connections wait for",
							dbname ? dbname : "?"),
					 errdetail("A prepared transaction keeps its locks across a restart, and startup recovery connects to every database before COMMIT PREPARED can run: the fastckpt tables would stay closed until the transaction was rolled back."),
					 errhint("Commit or roll back instead, or keep ALTER DATABASE ... RENAME out of two-phase transactions.")));
		}
		/* SELECT ... FROM pg_index FOR UPDATE/SHARE (h51 F4) */
		if (inst->pid == MyProcPid &&
			inst->locktag.locktag_type == LOCKTAG_RELATION &&
			inst->locktag.locktag_field1 == MyDatabaseId &&
			inst->locktag.locktag_field2 == IndexRelationId &&
			(inst->holdMask & LOCKBIT_ON(RowShareLock)) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot PREPARE a transaction that locked rows of pg_index"),
					 errdetail("Startup recovery rebuilds every index of the fastckpt tables and may have to mark one not valid, which would wait for a locked pg_index row: the tables would stay closed until the transaction was rolled back."),
					 errhint("Commit or roll back instead, or keep SELECT ... FOR UPDATE or FOR SHARE of pg_index out of two-phase transactions.")));
		if (inst->pid != MyProcPid ||
			inst->locktag.locktag_type != LOCKTAG_RELATION ||
			inst->locktag.locktag_field1 != MyDatabaseId ||
			(inst->holdMask & (blocking | LOCKBIT_ON(ShareUpdateExclusiveLock))) == 0)
			continue;
		table = fc_fastckpt_table_of(inst->locktag.locktag_field2);
		if (!OidIsValid(table))
			continue;
		if ((inst->holdMask & blocking) == 0)
		{
			/* the lock of ALTER TABLE ... CLUSTER ON, among others */
			if (fc_changed_index_rows(table))
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot PREPARE a transaction that changed the index definitions of fastckpt table \"%s\"",
								get_rel_name(table)),
						 errdetail("Startup recovery rebuilds every index of a fastckpt table and may have to mark one not valid, which would wait for this transaction: the tables would stay closed until it was rolled back."),
						 errhint("Commit or roll back instead, or keep ALTER TABLE ... CLUSTER ON and SET WITHOUT CLUSTER on fastckpt tables out of two-phase transactions.")));
			continue;
		}
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot PREPARE a transaction that holds a SHARE or stronger lock on fastckpt table \"%s\" or its indexes",
						get_rel_name(table)),
				 errdetail("A prepared transaction keeps its locks across a restart, and startup recovery must read and write every fastckpt table before COMMIT PREPARED can run: the tables would stay closed until the transaction was rolled back."),
				 errhint("Commit or roll back instead, or keep SHARE and stronger locks on fastckpt tables (LOCK TABLE, CREATE INDEX, REINDEX) out of two-phase transactions.")));
	}
}
